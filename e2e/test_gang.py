"""Gang scheduling: a pod group is placed all or nothing (issue 35).

Each case runs twice: with the Workload API's PodGroup (``scheduling.k8s.io/v1beta1``, pods
point to it with ``spec.schedulingGroup``; kube-scheduler v1.37 with GenericWorkload on does
the same, ``E2E_SCHEDULER=kube-scheduler`` checks it) and with scheduler-plugins' Coscheduling
PodGroup (``scheduling.x-k8s.io/v1alpha1``, the ``scheduling.x-k8s.io/pod-group`` label; not
in kube-scheduler, so skipped against it). The local control plane runs with GenericWorkload
on and the Coscheduling CRD installed (``e2e/cluster/cluster.py``).

Room is counted in whole CPUs: pods ask for 1 or 2 CPUs on nodes with 2, so "room for 6" is
three nodes. "No room held" is shown by plain pods that need all of it and get it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pytest

from e2e.conftest import Env
from e2e.kube import condition, node_of, ns_path, wait_until

WORKLOAD = "workload"
COSCHEDULING = "coscheduling"
WORKLOAD_GROUP = "scheduling.k8s.io/v1beta1"
COSCHEDULING_GROUP = "scheduling.x-k8s.io/v1alpha1"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
UPSTREAM = os.environ.get("E2E_SCHEDULER") == "kube-scheduler"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(params=[WORKLOAD, COSCHEDULING])
def api(request: pytest.FixtureRequest) -> str:
    flavour = str(request.param)
    if flavour == COSCHEDULING and UPSTREAM:
        pytest.skip("kube-scheduler does not implement scheduler-plugins' Coscheduling")
    return flavour


# ----------------------------------------------------------------------------- objects
class Gangs:
    """Pod groups and their members in one test's namespace, in either API."""

    def __init__(self, env: Env, api: str) -> None:
        self.env = env
        self.api = api

    def group(self, name: str, min_count: int, *, priority_class: str | None = None,
              disruption_all: bool = False, timeout_seconds: int | None = None) -> None:
        if self.api == WORKLOAD:
            self._workload_group(name, min_count, priority_class, disruption_all)
        else:
            spec: dict[str, Any] = {"minMember": min_count}
            if timeout_seconds is not None:
                spec["scheduleTimeoutSeconds"] = timeout_seconds
            self.env.kube.create(ns_path(self.env.ns, "podgroups", group=COSCHEDULING_GROUP), {
                "apiVersion": COSCHEDULING_GROUP, "kind": "PodGroup",
                "metadata": {"name": name}, "spec": spec})

    def _workload_group(self, name: str, min_count: int, priority_class: str | None,
                        disruption_all: bool) -> None:
        """A Workload with one gang template and the PodGroup made from it, as a job
        controller would create them."""
        policy = {"gang": {"minCount": min_count}}
        template: dict[str, Any] = {"name": "workers", "schedulingPolicy": policy}
        self.env.kube.create(ns_path(self.env.ns, "workloads", group=WORKLOAD_GROUP), {
            "apiVersion": WORKLOAD_GROUP, "kind": "Workload", "metadata": {"name": name},
            "spec": {"podGroupTemplates": [template]}})
        spec: dict[str, Any] = {"workloadRef": {"workloadName": name, "templateName": "workers"},
                                "schedulingPolicy": policy}
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        if disruption_all:
            spec["disruptionMode"] = {"all": {}}
        self.env.kube.create(ns_path(self.env.ns, "podgroups", group=WORKLOAD_GROUP), {
            "apiVersion": WORKLOAD_GROUP, "kind": "PodGroup", "metadata": {"name": name},
            "spec": spec})

    def members(self, group: str, count: int, *, cpu: str = "1",
                priority_class: str | None = None) -> list[str]:
        names = [f"{group}-{i}" for i in range(count)]
        for name in names:
            self.member(group, name, cpu=cpu, priority_class=priority_class)
        return names

    def member(self, group: str, name: str, *, cpu: str,
               priority_class: str | None = None, node: str | None = None,
               labels: dict[str, str] | None = None) -> None:
        """One member, on this test's nodes (``node``: that one)."""
        from e2e.kube import pod_manifest, pods_path

        labels = dict(labels or {})
        if self.api == COSCHEDULING:
            labels[COSCHEDULING_LABEL] = group
        selector = {HOSTNAME: node} if node is not None else self.env.selector()
        pod = pod_manifest(name, cpu=cpu, priority_class=priority_class, labels=labels,
                           node_selector=selector)
        if self.api == WORKLOAD:
            pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        self.env.kube.create(pods_path(self.env.ns), pod)

    def pod_group(self, name: str) -> dict[str, Any] | None:
        group = WORKLOAD_GROUP if self.api == WORKLOAD else COSCHEDULING_GROUP
        return self.env.kube.get(ns_path(self.env.ns, "podgroups", name, group=group))


def bound(env: Env, names: Iterable[str]) -> list[str]:
    placed = {p["metadata"]["name"]: node_of(p) for p in env.pods()}
    return [n for n in names if placed.get(n)]


def ever_bound(env: Env, names: Iterable[str]) -> list[str]:
    return [n for n in names if env.rec.bound_at(n) is not None]


def wait_all_rejected(env: Env, names: list[str], timeout: float = 60) -> None:
    """Every member tried and found unschedulable (PodScheduled=False), none bound."""
    def rejected() -> bool:
        pods = {p["metadata"]["name"]: p for p in env.pods()}
        return all((c := condition(pods.get(n), "PodScheduled")) is not None
                   and c.get("status") == "False" and not node_of(pods[n]) for n in names)

    wait_until(rejected, timeout, f"{names} all unschedulable", diagnose=env.diagnose)


def assert_room_free(env: Env, nodes: int, cpu: str = "2") -> None:
    """Plain pods, one filling each node, all bind: no member holds any of the room."""
    fillers = [f"filler-{i}" for i in range(nodes)]
    for name in fillers:
        env.create_pod(name, cpu=cpu)
    env.wait_all_bound(fillers, timeout=60)
    for name in fillers:
        env.delete_pod(name, grace=0)
    for name in fillers:
        env.wait_gone(name)


def gang_of_8_on_room_for_6(env: Env, api: str) -> list[str]:
    """3 nodes of 2 CPUs and a gang of 8 (minCount 8): its members, once all are rejected."""
    env.nodes("n", 3, cpu="2")
    gangs = Gangs(env, api)
    gangs.group("gang", 8)
    members = gangs.members("gang", 8)
    wait_all_rejected(env, members)
    return members


# ----------------------------------------------------------------------------- cases
def test_gang_larger_than_the_room_binds_none_and_holds_nothing(env: Env, api: str) -> None:
    """8 members, minCount 8, room for 6: none is bound, and all 6 CPUs stay free."""
    members = gang_of_8_on_room_for_6(env, api)
    assert_room_free(env, 3)
    assert ever_bound(env, members) == []


def test_gang_binds_whole_once_room_is_freed(env: Env, api: str) -> None:
    """The same gang, then a fourth node: all 8 members bound."""
    members = gang_of_8_on_room_for_6(env, api)
    assert ever_bound(env, members) == []
    env.nodes("n", 1, cpu="2", prefix="late")
    placed = env.wait_all_bound(members, timeout=90)
    assert len(set(placed[n] for n in members)) == 4


def test_competing_gangs_one_placed_whole_the_other_waits_whole(env: Env, api: str) -> None:
    """Two gangs of 6 on room for 8, members created alternately: one is bound whole, the
    other has no member bound though 2 CPUs are free; once the first is gone, it is bound
    whole."""
    env.nodes("n", 4, cpu="2")
    gangs = Gangs(env, api)
    gangs.group("a", 6)
    gangs.group("b", 6)
    a, b = [f"a-{i}" for i in range(6)], [f"b-{i}" for i in range(6)]
    for name_a, name_b in zip(a, b, strict=True):
        gangs.member("a", name_a, cpu="1")
        gangs.member("b", name_b, cpu="1")

    def one_whole() -> tuple[list[str], list[str]] | None:
        if len(bound(env, a)) == 6:
            return a, b
        if len(bound(env, b)) == 6:
            return b, a
        return None

    winner, loser = wait_until(one_whole, 90, "one gang bound whole", diagnose=env.diagnose)
    wait_all_rejected(env, loser)
    assert ever_bound(env, loser) == []
    for name in winner:
        env.delete_pod(name, grace=0)
    env.wait_all_bound(loser, timeout=90)


def test_schedule_timeout_releases_every_member(env: Env, api: str) -> None:
    """Coscheduling's scheduleTimeoutSeconds: 4 members on room for 3 wait at most 5 s, then
    every one is released; nothing stays reserved, nothing is bound. (The Workload API's
    Permit wait is a fixed 5 minutes that its pod-group cycle never reaches when the group
    does not fit: that is the first case.)"""
    if api == WORKLOAD:
        pytest.skip("the Workload API has no per-group timeout; its case is the first one")
    env.nodes("n", 3, cpu="1")
    gangs = Gangs(env, api)
    gangs.group("gang", 4, timeout_seconds=5)
    members = gangs.members("gang", 4)
    wait_all_rejected(env, members)
    assert_room_free(env, 3, cpu="1")
    assert ever_bound(env, members) == []


@pytest.mark.parametrize("disruption_all", [False, True], ids=["single", "all"])
def test_higher_priority_gang_preempts_a_lower_one(env: Env, api: str,
                                                   disruption_all: bool) -> None:
    """A gang of 4 at low priority fills 4 nodes; a gang of 2 at high priority needs 2 of
    them: it is bound whole after preemption. With disruptionMode single, 2 low members are
    evicted (minimal victims); with all, the low gang is evicted whole
    (pkg/scheduler/framework/preemption/podgrouppreemption.go)."""
    gangs, lows, high = _low_gang_on_four_full_nodes(env, api, disruption_all)
    gangs.group("high", 2, priority_class=high)
    highs = gangs.members("high", 2, cpu="2", priority_class=high)
    env.wait_all_bound(highs, timeout=120)
    evicted = [n for n in lows if env.rec.deleted_at(n) is not None or env.pod(n) is None]
    assert len(evicted) == (4 if disruption_all else 2), evicted


@pytest.mark.parametrize("disruption_all", [False, True], ids=["single", "all"])
def test_plain_higher_priority_pod_preempts_a_gang(env: Env, api: str,
                                                  disruption_all: bool) -> None:
    """A gang of 4 at low priority fills 4 nodes; one plain pod at high priority needs one
    node's room. With disruptionMode all the gang is one victim and goes whole (upstream's
    GetVictimsOnNode, pkg/scheduler/framework/preemption/preemption.go); with single, one
    member goes."""
    _, lows, high = _low_gang_on_four_full_nodes(env, api, disruption_all)
    env.create_pod("plain", cpu="2", priority_class=high)
    env.wait_all_bound(["plain"], timeout=120)
    evicted = [n for n in lows if env.rec.deleted_at(n) is not None or env.pod(n) is None]
    assert len(evicted) == (4 if disruption_all else 1), evicted


def test_plain_pod_preempts_a_gang_whose_other_node_blocks_it(env: Env, api: str) -> None:
    """Two nodes in one zone run a low-priority gang (disruptionMode all), a member on each,
    both labelled app=blocker. A high-priority pod that must go to node a and has zone
    anti-affinity to app=blocker fits there only once the member on node b is gone too: the
    gang is evicted whole and the pod bound to node a (upstream's SelectVictimsOnNode runs
    the PreFilter extensions' RemovePod for a group victim's pods on other nodes,
    pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go). Both members
    carry the label so that whichever is deleted last requeues the pod through
    InterPodAffinity's hint: kube-scheduler drops the events that arrive while the pod waits
    for its preemption to finish (its DefaultPreemption hint is always Skip)."""
    if api == COSCHEDULING:
        pytest.skip("Coscheduling's PodGroup has no disruption mode")
    node_a, node_b = env.nodes("z", 2, cpu="2", zone=f"{env.id}-zone")
    low = env.priority_class("low", 100)
    high = env.priority_class("high", 1000)
    gangs = Gangs(env, api)
    gangs.group("low", 2, priority_class=low, disruption_all=True)
    for name, node in (("low-a", node_a), ("low-b", node_b)):
        gangs.member("low", name, cpu="1", priority_class=low, node=node,
                     labels={"app": "blocker"})
    env.wait_all_bound(["low-a", "low-b"], timeout=60)
    blocker = {"labelSelector": {"matchLabels": {"app": "blocker"}}, "topologyKey": ZONE}
    env.create_pod("plain", cpu="1", priority_class=high, node_selector={HOSTNAME: node_a},
                   affinity={"podAntiAffinity": {
                       "requiredDuringSchedulingIgnoredDuringExecution": [blocker]}})
    assert env.wait_bound("plain", timeout=120) == node_a
    evicted = [n for n in ("low-a", "low-b")
               if env.rec.deleted_at(n) is not None or env.pod(n) is None]
    assert evicted == ["low-a", "low-b"]


def _low_gang_on_four_full_nodes(
    env: Env, api: str, disruption_all: bool
) -> tuple[Gangs, list[str], str]:
    """4 nodes of 2 cpu filled by a bound low-priority gang of 4; the gangs, the low
    members and the high priority class."""
    if disruption_all and api == COSCHEDULING:
        pytest.skip("Coscheduling's PodGroup has no disruption mode")
    env.nodes("n", 4, cpu="2")
    low = env.priority_class("low", 100)
    high = env.priority_class("high", 1000)
    gangs = Gangs(env, api)
    gangs.group("low", 4, priority_class=low, disruption_all=disruption_all)
    lows = gangs.members("low", 4, cpu="2", priority_class=low)
    env.wait_all_bound(lows, timeout=60)
    return gangs, lows, high


def test_pod_group_status_once_placed(env: Env, api: str) -> None:
    """What the group's users read once it is placed: the Workload API's
    PodGroupInitiallyScheduled condition (True, reason Scheduled, written by kube-scheduler,
    pkg/scheduler/schedule_one_podgroup.go); Coscheduling's phase Running and running 3 (its
    PodGroup controller's, pkg/controllers/podgroup_controller.go)."""
    env.nodes("n", 2, cpu="2")
    gangs = Gangs(env, api)
    gangs.group("gang", 3)
    members = gangs.members("gang", 3)
    env.wait_all_bound(members)
    env.wait_running(members)

    def placed() -> dict[str, Any] | None:
        group = gangs.pod_group("gang") or {}
        status = group.get("status") or {}
        if api == WORKLOAD:
            c = condition(group, "PodGroupInitiallyScheduled")
            return c if c and c.get("status") == "True" and c.get("reason") == "Scheduled" \
                else None
        return status if status.get("phase") == "Running" and status.get("running") == 3 \
            else None

    wait_until(placed, 60, f"the {api} PodGroup's status once placed", diagnose=lambda: (
        f"{gangs.pod_group('gang')}\n{env.diagnose()}"))
