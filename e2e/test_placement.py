"""Placement: resources, selectors, affinity, taints, spreading, and which pods are ours."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from e2e.conftest import Env
from e2e.kube import (
    ANTI_AFFINITY_MISMATCH,
    INSUFFICIENT_CPU,
    NO_VICTIMS,
    NODE_SELECTOR_MISMATCH,
    REPORTING_CONTROLLER,
    SPREAD_MISMATCH,
    UNTOLERATED_TAINT,
    condition,
    node_of,
    overcommitted,
    wait_until,
)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def assert_scheduled_event(env: Env, pod: str, node: str) -> None:
    """The Scheduled Event kube-scheduler writes, written by us."""
    events = wait_until(lambda: env.rec.events_for(pod, "Scheduled"), 20,
                        f"a Scheduled event for {pod}", diagnose=env.diagnose)
    assert len(events) == 1, events
    e = events[0]
    assert e["type"] == "Normal"
    assert e["note"] == f"Successfully assigned {env.ns}/{pod} to {node}"
    assert e["reportingController"] == REPORTING_CONTROLLER
    assert e.get("reportingInstance")
    assert e["regarding"]["kind"] == "Pod" and e["regarding"]["namespace"] == env.ns


def test_resources_fit_and_pods_spread_over_nodes(env: Env) -> None:
    nodes = env.nodes("n", 3, cpu="4", memory="8Gi")
    names = [f"web-{i}" for i in range(6)]
    for name in names:
        env.create_pod(name, cpu="1", memory="1Gi")
    placed = env.wait_all_bound(names)

    # LeastAllocated + BalancedAllocation on equal nodes: two pods each.
    assert Counter(placed.values()) == {n: 2 for n in nodes}, placed
    test_nodes = [n for n in env.all_nodes() if n["metadata"]["name"] in nodes]
    assert overcommitted(test_nodes, env.pods()) == []
    env.wait_running(names)
    for name in names:
        assert_scheduled_event(env, name, placed[name])
        # kwok's "kubelet" reports PodScheduled=True; we never wrote a False one.
        assert not env.rec.events_for(name, "FailedScheduling")


def test_node_selector_node_affinity_taints_and_tolerations(env: Env) -> None:
    (ssd,) = env.nodes("ssd", labels={"disk": "ssd"})
    (hdd,) = env.nodes("hdd", labels={"disk": "hdd"})
    gpu_taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    (gpu,) = env.nodes("gpu", labels={"disk": "ssd"}, taints=[gpu_taint])

    env.create_pod("by-selector", cpu="100m", node_selector={**env.selector(), "disk": "ssd"})
    env.create_pod("by-affinity", cpu="100m", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}]}}})
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    env.create_pod("tolerates", cpu="100m", group="gpu", tolerations=[toleration])
    env.create_pod("tolerates-anywhere", cpu="100m", tolerations=[toleration], affinity={
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [gpu]}]}]}}})
    placed = env.wait_all_bound(["by-selector", "by-affinity", "tolerates", "tolerates-anywhere"])
    assert placed == {"by-selector": ssd, "by-affinity": hdd, "tolerates": gpu,
                      "tolerates-anywhere": gpu}

    # Preferred affinity: both ssd (untainted) and hdd fit; the preference decides.
    env.create_pod("prefers-hdd", cpu="100m", affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}}]}})
    assert env.wait_bound("prefers-hdd") == hdd

    # No toleration: the only selected node is tainted.
    env.create_pod("intolerant", cpu="100m", group="gpu")
    expected = env.expected_message(
        {gpu: UNTOLERATED_TAINT, ssd: NODE_SELECTOR_MISMATCH, hdd: NODE_SELECTOR_MISMATCH},
        preemption={})
    env.wait_unschedulable("intolerant", expected)
    assert not node_of(env.pod("intolerant"))


def _anti_affinity(app: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}]}}


def test_required_pod_anti_affinity(env: Env) -> None:
    nodes = env.nodes("n", 3)
    app = f"anti-{env.id}"
    names = [f"anti-{i}" for i in range(4)]
    for name in names:
        env.create_pod(name, cpu="100m", labels={"app": app}, affinity=_anti_affinity(app))

    def three_bound() -> dict[str, str] | None:
        placed = {p["metadata"]["name"]: node_of(p) for p in env.pods()}
        return placed if sum(1 for n in placed.values() if n) == 3 else None

    placed = wait_until(three_bound, 30, "three of four pods bound", diagnose=env.diagnose)
    bound = [n for n in placed.values() if n]
    assert sorted(bound) == sorted(nodes), placed  # one per node
    (pending,) = [p for p, n in placed.items() if not n]
    expected = env.expected_message(
        dict.fromkeys(nodes, ANTI_AFFINITY_MISMATCH),
        preemption=dict.fromkeys(nodes, NO_VICTIMS))
    env.wait_unschedulable(pending, expected)
    assert not node_of(env.pod(pending))


def test_zone_topology_spread(env: Env) -> None:
    zone_a, zone_b = f"{env.id}-zone-a", f"{env.id}-zone-b"
    a_nodes = env.nodes("a", 2, cpu="4", zone=zone_a)
    (b_node,) = env.nodes("b", 1, cpu="2", zone=zone_b)
    app = f"spread-{env.id}"
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": app}}}]
    names = [f"spread-{i}" for i in range(6)]
    for name in names:
        env.create_pod(name, cpu="1", labels={"app": app}, spread=spread)

    # Zone b holds two pods; zone a may then take one more (skew 1), and no more.
    def five_bound() -> dict[str, str] | None:
        placed = {p["metadata"]["name"]: node_of(p) for p in env.pods()}
        return placed if sum(1 for n in placed.values() if n) == 5 else None

    placed = wait_until(five_bound, 30, "five of six pods bound", diagnose=env.diagnose)
    per_zone = Counter(zone_a if n in a_nodes else zone_b for n in placed.values() if n)
    assert per_zone == {zone_a: 3, zone_b: 2}, placed
    (pending,) = [p for p, n in placed.items() if not n]
    expected = env.expected_message(
        {a_nodes[0]: SPREAD_MISMATCH, a_nodes[1]: SPREAD_MISMATCH, b_node: INSUFFICIENT_CPU},
        preemption=dict.fromkeys([*a_nodes, b_node], NO_VICTIMS))
    env.wait_unschedulable(pending, expected)


def test_pods_for_other_schedulers_are_left_alone(env: Env) -> None:
    env.nodes("n", 1)
    env.create_pod("for-default", cpu="100m", scheduler="default-scheduler")
    env.create_pod("for-nobody", cpu="100m", scheduler=f"nobody-{env.id}")
    # A barrier: same priority, created last, so once it is bound the scheduler has already
    # seen (and, were it wrong, tried) the two pods above.
    env.create_pod("ours", cpu="100m")
    node = env.wait_bound("ours")
    assert_scheduled_event(env, "ours", node)

    nobody = env.pod("for-nobody")
    assert not node_of(nobody)
    assert condition(nobody, "PodScheduled") is None, nobody["status"]
    assert not nobody["status"].get("nominatedNodeName")
    for name in ("for-default", "for-nobody"):
        mine = [e for e in env.rec.events_for(name)
                if e.get("reportingController") == REPORTING_CONTROLLER]
        assert mine == [], mine

    default = env.pod("for-default")
    if node_of(default):
        # A cluster with kube-scheduler (kind): it placed the pod, not us.
        events = wait_until(lambda: env.rec.events_for("for-default", "Scheduled"), 20,
                            "default-scheduler's Scheduled event")
        assert {e.get("reportingController") for e in events} == {"default-scheduler"}
    elif not os.environ.get("E2E_KUBECONFIG"):
        # The local control plane runs no kube-scheduler: nobody may have touched it.
        assert condition(default, "PodScheduled") is None, default["status"]

