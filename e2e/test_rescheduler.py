"""The rescheduler on the local control plane: Deployments, their ReplicaSets and a
PodDisruptionBudget run by the real kube-controller-manager, evictions through the real
Eviction API.

Each test starts a scheduler of its own (profile ``e2e-rescheduler``, the rescheduler on, a
pass every second). Upstream kube-scheduler has no rescheduler: with
``E2E_SCHEDULER=kube-scheduler`` it runs the same profile and every test must fail (a strict
xfail), which shows that each one checks that something moved, not only that nothing broke.
"""

from __future__ import annotations

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
                    lease: tuple[str, str] | None = None) -> LocalScheduler:
    return start_own_scheduler(
        kubeconfig, tmp_path / f"rescheduler-scheduler{name}.log", PROFILE,
        ours=f"rescheduler: {{enabled: true, interval: 1s, {rescheduler}}}\n", lease=lease)


@pytest.fixture
def start(kubeconfig: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[LocalScheduler] = []

    def run(rescheduler: str = "") -> LocalScheduler:
        started.append(start_scheduler(kubeconfig, tmp_path, rescheduler))
        return started[-1]

    yield run
    for scheduler in started:
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
