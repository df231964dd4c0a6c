"""Resilience: a crash in the middle of a burst, a node deleted under pending pods, and the
operator framework leaving no trace on the objects it watches."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from e2e.conftest import Env
from e2e.kube import (
    INSUFFICIENT_CPU,
    NAMESPACES,
    PRIORITY_CLASSES,
    REPORTING_CONTROLLER,
    node_of,
    overcommitted,
    pod_manifest,
    pods_path,
    wait_until,
)

BURST = 200
BURST_NODES = 10  # x 20 cpu: exactly room for 200 one-cpu pods
KILL_AFTER_BOUND = 50


@pytest.mark.timeout(300)
def test_sigkill_in_the_middle_of_a_burst_then_restart(env: Env) -> None:
    # A taint keeps other workloads (kube-scheduler's, in a shared cluster) off these nodes;
    # with the Deployment, a replacement scheduler pod must not land on them.
    taint = {"key": f"e2e-burst-{env.id}", "value": "x", "effect": "NoSchedule"}
    toleration = {"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"}
    nodes = env.nodes("burst", BURST_NODES, cpu="20", memory="64Gi", pods=110, taints=[taint])
    names = [f"burst-{i:03d}" for i in range(BURST)]

    def bound_count() -> int:
        return sum(1 for n in env.rec.names() if env.rec.bound_at(n) is not None)

    killed: dict[str, Any] = {}

    def killer() -> None:
        try:
            wait_until(lambda: bound_count() >= KILL_AFTER_BOUND, 120,
                       f"{KILL_AFTER_BOUND} pods bound before the kill", interval=0.05)
            env.scheduler.kill()
            killed["bound"] = bound_count()
            killed["at"] = time.monotonic()
        except Exception as exc:
            killed["error"] = exc

    kill_thread = threading.Thread(target=killer, daemon=True)
    kill_thread.start()
    body = pod_manifest("x", cpu="1", memory="100Mi", tolerations=[toleration],
                        node_selector=env.selector())

    def create(name: str) -> None:
        obj = {**body, "metadata": {"name": name, "labels": {"burst": env.id}}}
        env.kube.create(pods_path(env.ns), obj)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, names))
    created_at = time.monotonic()
    kill_thread.join(150)
    assert "error" not in killed, killed.get("error")
    assert killed.get("bound", BURST) < BURST, "the scheduler finished before it was killed"
    # Let the killed process's in-flight requests die with it, then start a new one.
    time.sleep(1.0)
    env.scheduler.restart()
    restarted_at = time.monotonic()

    placed = env.wait_all_bound(names, timeout=180)
    done_at = time.monotonic()
    print(f"bound at kill: {killed['bound']}/{BURST}; created {created_at - killed['at']:+.1f}s "
          f"after the kill; all bound {done_at - restarted_at:.1f}s after the restart")

    # Every pod bound exactly once: one nodeName ever, never changed.
    for name in names:
        seen = env.rec.nodes_seen(name)
        assert seen == [placed[name]], (name, seen)
    # No node over its allocatable: 200 one-cpu pods on 10 x 20 cpu means exactly full.
    test_nodes = [n for n in env.all_nodes() if n["metadata"]["name"] in nodes]
    pods = env.pods()
    assert overcommitted(test_nodes, pods) == []
    assert Counter(placed.values()) == dict.fromkeys(nodes, BURST // BURST_NODES)
    # At most one Scheduled event per pod (a SIGKILL may lose an event, never duplicate one).
    scheduled = Counter(e["regarding"]["name"] for e in env.rec.events()
                        if e.get("reason") == "Scheduled"
                        and e.get("reportingController") == REPORTING_CONTROLLER)
    assert [n for n, c in scheduled.items() if c > 1] == []


def test_node_deleted_while_pods_are_pending(env: Env) -> None:
    first, second = env.nodes("n", 2, cpu="2")
    names = [f"p-{i}" for i in range(6)]
    for name in names:
        env.create_pod(name, cpu="1")

    def four_bound() -> dict[str, str] | None:
        placed = {p["metadata"]["name"]: node_of(p) for p in env.pods()}
        return placed if sum(1 for n in placed.values() if n) == 4 else None

    placed = wait_until(four_bound, 30, "four of six pods bound", diagnose=env.diagnose)
    pending = sorted(p for p, n in placed.items() if not n)
    assert len(pending) == 2
    for name in pending:
        env.wait_unschedulable(name)
        assert INSUFFICIENT_CPU in (env.scheduled_condition(name) or {}).get("message", "")

    # The node goes away under the pending pods (its pods are orphaned, not rescheduled).
    env.delete_node(first)
    wait_until(lambda: env.kube.get(f"/api/v1/nodes/{first}") is None, 20, "node deleted")
    deleted_at = time.monotonic()

    # A new pending pod must not go to the deleted node either.
    env.create_pod("late", cpu="1")
    env.wait_unschedulable("late")
    (third,) = env.nodes("n", 1, cpu="4", prefix="n-new")
    final = env.wait_all_bound([*pending, "late"], timeout=40)
    for name in (*pending, "late"):
        assert final[name] == third, final
    for name in names:
        bound = env.rec.bound_at(name)
        assert not (env.rec.nodes_seen(name) == [first] and bound and bound > deleted_at), name
    test_nodes = [n for n in env.all_nodes() if n["metadata"]["name"] in (second, third)]
    assert overcommitted(test_nodes, env.pods()) == []


KOPF_MARKERS = ("kopf.zalando.org", "kopf.dev")


def _kopf_traces(obj: dict[str, Any]) -> list[str]:
    meta = obj.get("metadata") or {}
    keys = [*(meta.get("annotations") or {}), *(meta.get("finalizers") or [])]
    return [k for k in keys if any(m in k for m in KOPF_MARKERS)]


def test_kopf_leaves_no_annotation_or_finalizer(env: Env) -> None:
    env.nodes("n", 2)
    pc = env.priority_class("hygiene", 5)
    env.pdb("hygiene", {"app": "hygiene"}, min_available=1)
    names = [f"h-{i}" for i in range(3)]
    for name in names:
        env.create_pod(name, cpu="100m", labels={"app": "hygiene"}, priority_class=pc)
    env.create_pod("pending", cpu="100", labels={"app": "hygiene"})
    env.wait_all_bound(names)
    env.wait_unschedulable("pending")

    for name in [*names, "pending"]:
        meta = env.pod(name)["metadata"]
        assert not meta.get("finalizers"), meta
        assert _kopf_traces(env.pod(name)) == []
    offenders = []
    lists = {
        "pods": "/api/v1/pods",
        "namespaces": NAMESPACES,
        "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
        "priorityclasses": PRIORITY_CLASSES,
        "nodes": "/api/v1/nodes",
    }
    for kind, path in lists.items():
        for obj in env.kube.list(path):
            traces = _kopf_traces(obj)
            if traces:
                meta = obj["metadata"]
                offenders.append(f"{kind} {meta.get('namespace', '')}/{meta['name']}: {traces}")
    assert offenders == []
