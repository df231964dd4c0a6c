"""The rescheduler on the local control plane: Deployments, their ReplicaSets and a
PodDisruptionBudget run by the real kube-controller-manager, evictions through the real
Eviction API.

Each test starts a scheduler of its own (profile ``e2e-rescheduler``, the rescheduler on, a
pass every second). Upstream kube-scheduler has no rescheduler: with
``E2E_SCHEDULER=kube-scheduler`` it runs the same profile and every test must fail (a strict
xfail), which shows that each one checks that something moved, not only that nothing broke.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Env, LocalScheduler, start_own_scheduler
from e2e.kube import NODES, condition, node_of, ns_path, pod_manifest, terminating, wait_until

BACKEND = os.environ.get("E2E_SCHEDULER", "")
PROFILE = "e2e-rescheduler"
TIER = "e2e.secondary-scheduler.io/tier"

pytestmark = [
    pytest.mark.skipif(BACKEND == "deployed", reason="starts its own scheduler next to the test"),
    pytest.mark.xfail(BACKEND == "kube-scheduler", strict=True,
                      reason="kube-scheduler has no rescheduler: nothing moves"),
    pytest.mark.timeout(240),
]


def start_scheduler(kubeconfig: Path, tmp_path: Path, rescheduler: str, *, name: str = "",
                    lease: tuple[str, str] | None = None,
                    interval: str = "1s") -> LocalScheduler:
    return start_own_scheduler(
        kubeconfig, tmp_path / f"rescheduler-scheduler{name}.log", PROFILE,
        ours=f"rescheduler: {{enabled: true, interval: {interval}, {rescheduler}}}\n",
        lease=lease)


@pytest.fixture
def start(kubeconfig: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[LocalScheduler] = []

    def run(rescheduler: str = "", interval: str = "1s") -> LocalScheduler:
        started.append(start_scheduler(kubeconfig, tmp_path, rescheduler, interval=interval,
                                       name=f"-{len(started)}"))
        return started[-1]

    yield run
    for scheduler in started:
        scheduler.stop()


@pytest.fixture
def placing(kubeconfig: Path, tmp_path: Path) -> Iterator[LocalScheduler]:
    """Ours with the rescheduler off, to lay out a test's pods before the rescheduler looks;
    the test stops it before it starts the one that reschedules."""
    scheduler = start_own_scheduler(kubeconfig, tmp_path / "placing-scheduler.log", PROFILE)
    yield scheduler
    scheduler.stop()


def deployment(env: Env, name: str, replicas: int, cpu: str,
               affinity: dict[str, Any] | None = None) -> None:
    template = pod_manifest(name, cpu=cpu, scheduler=PROFILE, node_selector=env.selector(),
                            labels={"app": name}, affinity=affinity)
    env.kube.create(ns_path(env.ns, "deployments", group="apps/v1"), {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]}},
    })


def live_pods(env: Env, app: str) -> list[dict[str, Any]]:
    return [p for p in env.pods()
            if (p["metadata"].get("labels") or {}).get("app") == app and not terminating(p)]


def placed(env: Env, app: str, replicas: int) -> dict[str, str] | None:
    """Pod name -> node when exactly ``replicas`` live pods of ``app`` run, else None."""
    pods = live_pods(env, app)
    running = [p for p in pods
               if node_of(p) and (p.get("status") or {}).get("phase") == "Running"]
    if len(pods) != replicas or len(running) != replicas:
        return None
    return {p["metadata"]["name"]: node_of(p) for p in running}


def wait_placed(env: Env, app: str, replicas: int, timeout: float = 60) -> dict[str, str]:
    return dict(wait_until(lambda: placed(env, app, replicas), timeout,
                           f"{replicas} pods of {app} running", diagnose=env.diagnose))


def per_node(placement: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in placement.values():
        counts[node] = counts.get(node, 0) + 1
    return counts


def events(env: Env, reason: str) -> list[dict[str, Any]]:
    return [e for e in env.rec.events() if e.get("reason") == reason]


class Availability:
    """Samples how many pods of an app are Ready and not terminating, in the background."""

    def __init__(self, env: Env, app: str) -> None:
        self.env, self.app = env, app
        self.lowest: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        kube = self.env.kube.clone()
        while not self._stop.wait(0.1):
            pods = kube.list(ns_path(self.env.ns, "pods"))
            ready = sum(1 for p in pods
                        if (p["metadata"].get("labels") or {}).get("app") == self.app
                        and not terminating(p)
                        and (condition(p, "Ready") or {}).get("status") == "True")
            self.lowest = ready if self.lowest is None else min(self.lowest, ready)

    def stop(self) -> int | None:
        self._stop.set()
        self._thread.join(5)
        return self.lowest


def test_packed_pods_spread_onto_new_nodes_within_the_budget_and_never_back(
        env: Env, start: Any) -> None:
    old = env.nodes("old", 2)
    start("minScoreGain: 10")
    env.pdb("web", {"app": "web"}, max_unavailable=1)
    deployment(env, "web", 6, cpu="1")
    before = wait_placed(env, "web", 6)
    assert per_node(before) == {old[0]: 3, old[1]: 3}, before
    availability = Availability(env, "web")
    new = env.nodes("new", 2)

    def spread() -> dict[str, str] | None:
        now = placed(env, "web", 6)
        counts = per_node(now or {})
        return now if now and all(counts.get(n, 0) >= 1 for n in new) and max(
            counts.values()) <= 2 else None

    after = dict(wait_until(spread, 90, "web spread over the new nodes", diagnose=env.diagnose))
    lowest = availability.stop()
    # The budget (maxUnavailable 1) held: never fewer than 5 of 6 Ready.
    assert lowest is not None and lowest >= 5, lowest
    # Every replacement landed on a new node: none went back to the node its pod left.
    replacements = {name: node for name, node in after.items() if name not in before}
    assert replacements and set(replacements.values()) <= set(new), (before, after)
    moved = events(env, "Rescheduled")
    assert len(moved) == len(replacements), moved
    for event in moved:
        assert (event["regarding"]["name"] in before and "from node "
                + before[event["regarding"]["name"]] in event["note"]), event
    assert events(env, "WouldReschedule") == []


def test_a_pod_moves_to_a_new_node_it_prefers(env: Env, start: Any) -> None:
    env.nodes("plain", 2)
    start()
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": TIER, "operator": "In", "values": ["fast"]}]}}]}}
    deployment(env, "api", 1, cpu="100m", affinity=affinity)
    (first,) = wait_placed(env, "api", 1)
    (fast,) = env.nodes("fast", labels={TIER: "fast"})

    def on_fast() -> bool:
        return list((placed(env, "api", 1) or {}).values()) == [fast]

    wait_until(on_fast, 60, "the api pod on the fast node", diagnose=env.diagnose)
    (event,) = events(env, "Rescheduled")
    assert event["regarding"]["name"] == first
    assert f"to node {fast} (PreferredTerms" in event["note"]
    assert "NodeAffinity +200" in event["note"]


def test_a_cordoned_node_is_never_a_target(env: Env, start: Any) -> None:
    (cordoned,) = env.nodes("cordoned", wait=False)
    env.kube.patch(f"{NODES}/{cordoned}", {"spec": {"unschedulable": True}})
    env.wait_nodes_ready([cordoned])
    (old,) = env.nodes("old")
    start()
    deployment(env, "web", 3, cpu="1")
    before = wait_placed(env, "web", 3)
    assert set(before.values()) == {old}
    (open_,) = env.nodes("open")

    def moved() -> bool:
        return open_ in (placed(env, "web", 3) or {}).values()

    wait_until(moved, 60, "a web pod moved to the open node", diagnose=env.diagnose)
    time.sleep(3)  # three more passes
    after = wait_placed(env, "web", 3)
    assert per_node(after) == {old: 2, open_: 1}, after
    assert all(cordoned not in env.rec.nodes_seen(name) for name in env.rec.names())
    assert all(cordoned not in e["note"] for e in events(env, "Rescheduled"))


def test_dry_run_changes_nothing_and_says_what_it_would_do(env: Env, start: Any) -> None:
    old = env.nodes("old", 2)
    start("dryRun: true")
    deployment(env, "web", 6, cpu="1")
    before = wait_placed(env, "web", 6)
    new = env.nodes("new", 2)
    wait_until(lambda: events(env, "WouldReschedule"), 30, "a WouldReschedule event",
               diagnose=env.diagnose)
    time.sleep(3)  # three more passes
    assert wait_placed(env, "web", 6) == before
    assert all(env.rec.deleted_at(name) is None for name in before)
    assert events(env, "Rescheduled") == []
    for event in events(env, "WouldReschedule"):
        assert event["note"].startswith("Dry run: would move from node ")
        assert any(f"from node {n}" in event["note"] for n in old)
        assert any(f"to node {n}" in event["note"] for n in new)


def test_no_eviction_when_no_better_node_fits(env: Env, start: Any) -> None:
    (old,) = env.nodes("old")
    start()
    deployment(env, "big", 1, cpu="3")
    (big,) = wait_placed(env, "big", 1)
    deployment(env, "small", 2, cpu="400m")
    wait_placed(env, "small", 2)
    # The new node can take a small pod, never the big one.
    (small_node,) = env.nodes("small", cpu="2")

    def small_moved() -> bool:
        return small_node in (placed(env, "small", 2) or {}).values()

    wait_until(small_moved, 60, "a small pod moved to the small node", diagnose=env.diagnose)
    time.sleep(3)  # three more passes
    assert wait_placed(env, "big", 1) == {big: old}
    assert env.rec.deleted_at(big) is None
    assert all(e["regarding"]["name"] != big for e in events(env, "Rescheduled"))


def test_only_the_leader_moves_pods(env: Env, kubeconfig: Path, tmp_path: Path) -> None:
    (old,) = env.nodes("old")
    lease = (env.ns, f"{PROFILE}-{env.id}")
    replicas = [start_scheduler(kubeconfig, tmp_path, "", name=f"-{i}", lease=lease)
                for i in range(2)]
    try:
        deployment(env, "web", 3, cpu="1")
        assert set(wait_placed(env, "web", 3).values()) == {old}
        (new,) = env.nodes("new")
        wait_until(lambda: new in (placed(env, "web", 3) or {}).values(), 60,
                   "a web pod moved to the new node", diagnose=env.diagnose)
        # Read while both run: once the leader stops, the other may take over.
        logs = [r.log_path.read_text(errors="replace") for r in replicas]
    finally:
        for replica in replicas:
            replica.stop()
    passes = ['"event": "Rescheduler pass"' in text for text in logs]
    moves = ['"event": "Moved pod"' in text for text in logs]
    # One replica leads and moves pods; the standby never runs a pass.
    assert sorted(passes) == [False, True] and moves == passes, (passes, moves)


# -- convergence (issue 37) -----------------------------------------------------------------
# A pass every 2 s: time for an evicted pod's replacement to be created, scheduled and Ready
# before the next pass looks, as with the default interval of a minute.
SHORT_INTERVAL = "2s"


def passes(scheduler: LocalScheduler) -> list[dict[str, Any]]:
    """The rescheduler's passes, from the scheduler's log: one ``Rescheduler pass`` each."""
    found = []
    for line in scheduler.log_path.read_text(errors="replace").splitlines():
        if '"Rescheduler pass"' in line:
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def balanced(env: Env, app: str, replicas: int, nodes: list[str]) -> dict[str, str] | None:
    """The placement when all ``replicas`` run and no node has more than one pod (one CPU)
    above another."""
    now = placed(env, app, replicas)
    counts = per_node(now or {})
    every = [counts.get(n, 0) for n in nodes]
    return now if now and max(every) - min(every) <= 1 else None


def settled(scheduler: LocalScheduler) -> list[dict[str, Any]] | None:
    """The passes once the last two moved nothing and nothing is in flight."""
    done = passes(scheduler)
    tail = done[-2:]
    return done if len(tail) == 2 and all(
        p["moves"] == 0 and p["in_flight"] == 0 for p in tail) else None


def converge(env: Env, scheduler: LocalScheduler, app: str, replicas: int,
             nodes: list[str]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    wait_until(lambda: balanced(env, app, replicas, nodes), 120,
               f"{app} within one pod of balanced", diagnose=env.diagnose)
    done = wait_until(lambda: settled(scheduler), 30, "two passes that move nothing",
                      diagnose=env.diagnose)
    return wait_placed(env, app, replicas), done


def moving_passes(done: list[dict[str, Any]]) -> int:
    """How many passes it took: up to the last that moved a pod."""
    return max((i + 1 for i, p in enumerate(done) if p["moves"]), default=0)


def check_moves(env: Env, scheduler: LocalScheduler, before: dict[str, str],
                after: dict[str, str]) -> list[dict[str, Any]]:
    """Every move said, none back, no replacement ever Pending as unschedulable."""
    moved = events(env, "Rescheduled")
    sources = {before[e["regarding"]["name"]] for e in moved}
    replacements = {name: node for name, node in after.items() if name not in before}
    assert len(moved) == len(replacements), (moved, replacements)
    # 0 bounce-backs: no replacement on a node its controller's moves left.
    assert not set(replacements.values()) & sources, (before, after)
    assert '"landed": "source"' not in scheduler.log_path.read_text(errors="replace")
    # No pod Pending longer than its replacement's scheduling: each was bound at its first
    # attempt, never found unschedulable.
    for name in replacements:
        assert not env.rec.ever(name, lambda p: (condition(p, "PodScheduled") or {}).get(
            "status") == "False"), name
    return moved


def test_pack_then_grow_ends_within_one_pod_of_balanced_in_few_passes(
        env: Env, start: Any, placing: LocalScheduler) -> None:
    old = env.nodes("old", 3)
    env.pdb("web", {"app": "web"}, max_unavailable=2)
    deployment(env, "web", 9, cpu="1")
    before = wait_placed(env, "web", 9)
    placing.stop()
    assert sorted(per_node(before).values()) == [3, 3, 3], before
    new = env.nodes("new", 3)
    availability = Availability(env, "web")
    ours = start(interval=SHORT_INTERVAL)
    after, done = converge(env, ours, "web", 9, old + new)
    lowest = availability.stop()
    assert lowest is not None and lowest >= 7, lowest  # the budget: at most 2 unavailable
    moved = check_moves(env, ours, before, after)
    # Three moves are the fewest that balance 3,3,3,0,0,0 (descheduler: three in one pass).
    assert len(moved) == 3, moved
    assert moving_passes(done) <= 5, done


def test_a_crowded_cluster_ends_within_one_pod_of_balanced_in_few_passes(
        env: Env, start: Any, placing: LocalScheduler) -> None:
    full = env.nodes("full", 2)
    env.pdb("web", {"app": "web"}, max_unavailable=2)
    deployment(env, "web", 9, cpu="1")
    wait_until(lambda: len([p for p in live_pods(env, "web") if node_of(p)]) == 8, 60,
               "8 of 9 web pods bound", diagnose=env.diagnose)
    one = env.nodes("one")
    before = wait_placed(env, "web", 9)
    placing.stop()
    assert per_node(before) == {full[0]: 4, full[1]: 4, one[0]: 1}, before
    empty = env.nodes("empty")
    availability = Availability(env, "web")
    ours = start(interval=SHORT_INTERVAL)
    after, done = converge(env, ours, "web", 9, full + one + empty)
    lowest = availability.stop()
    assert lowest is not None and lowest >= 7, lowest
    moved = check_moves(env, ours, before, after)
    assert len(moved) == 3, moved  # 4,4,1,0 to 3,2,2,2 (descheduler: two, ending 3,3,2,1)
    assert moving_passes(done) <= 5, done


DISK = "e2e.secondary-scheduler.io/disk"
PREFERS_SSD = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": DISK, "operator": "In", "values": ["ssd"]}]}}]}}


def test_a_cluster_balanced_within_the_default_spread_gets_no_eviction(
        env: Env, start: Any, placing: LocalScheduler) -> None:
    # The plain pods first, then the ssd node and the pods that prefer it: the scheduler puts
    # those on it (all three would not go there with the plain pods still to place: the
    # default spreading would send the plain ones to the ssd node).
    plain = env.nodes("plain", 3)
    deployment(env, "plain", 9, cpu="1")
    before = wait_placed(env, "plain", 9)
    (ssd,) = env.nodes("ssd", labels={DISK: "ssd"})
    deployment(env, "fast", 3, cpu="1", affinity=PREFERS_SSD)
    fast = wait_placed(env, "fast", 3)
    placing.stop()
    assert set(fast.values()) == {ssd}, fast
    assert per_node(before) == dict.fromkeys(plain, 3), before
    ours = start()
    wait_until(lambda: len([p for p in passes(ours) if p["candidates"]]) >= 5, 60,
               "five passes", diagnose=env.diagnose)
    assert all(p["moves"] == 0 for p in passes(ours)), passes(ours)
    assert events(env, "Rescheduled") == []
    assert wait_placed(env, "plain", 9) == before and wait_placed(env, "fast", 3) == fast


def test_a_new_node_with_the_preferred_label_draws_every_pod_that_fits_and_no_other(
        env: Env, start: Any, placing: LocalScheduler) -> None:
    plain = env.nodes("plain", 3)
    deployment(env, "api", 6, cpu="1", affinity=PREFERS_SSD)
    before = wait_placed(env, "api", 6)
    placing.stop()
    assert per_node(before) == dict.fromkeys(plain, 2), before
    (ssd,) = env.nodes("ssd", labels={DISK: "ssd"})
    ours = start(interval=SHORT_INTERVAL)

    def four_on_ssd() -> dict[str, str] | None:
        now = placed(env, "api", 6)
        return now if now and per_node(now).get(ssd) == 4 else None

    wait_until(four_on_ssd, 120, "four api pods on the ssd node", diagnose=env.diagnose)
    done = wait_until(lambda: settled(ours), 30, "two passes that move nothing",
                      diagnose=env.diagnose)
    after = wait_placed(env, "api", 6)
    moved = check_moves(env, ours, before, after)
    # Four fit on the new node, and they moved; the other two stayed where they were.
    assert len(moved) == 4 and all(f"to node {ssd} (PreferredTerms +200" in e["note"]
                                   for e in moved), moved
    assert len([n for n in before if n in after]) == 2
    assert moving_passes(done) <= 5, done
