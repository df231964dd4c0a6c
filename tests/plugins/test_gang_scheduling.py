"""GangScheduling, ported from upstream's ``gangscheduling_test.go`` (CompositePodGroup off:
the "(CPG=false)" cases, names kept): TestGangSchedulingFlow, TestPlacementFeasible and the
queueing hints; then the Coscheduling PodGroups it also serves."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS, POD_GROUPS, PodGroups
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Code, CycleState, Status
from scheduler.framework.waiting import WaitingPods
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import BASIC, COSCHEDULING, PodGroup
from scheduler.plugins import gang_scheduling as gs
from scheduler.testing import pod


def member(name: str, group: str | None, namespace: str = "ns1") -> PodInfo:
    spec = {"schedulingGroup": {"podGroupName": group}} if group else {}
    return PodInfo.from_pod(pod(name, uid=name, namespace=namespace, spec=spec))


def gang(name: str, min_count: int, namespace: str = "ns1") -> PodGroup:
    return PodGroup(namespace, name, min_count=min_count, workload_name="gang-wl")


def basic(name: str, namespace: str = "ns1") -> PodGroup:
    return PodGroup(namespace, name, policy=BASIC, workload_name="basic-wl")


@dataclass
class FakeHandle:
    pod_groups: PodGroups = field(default_factory=PodGroups)
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    activated: list[str] = field(default_factory=list)

    def activate(self, uids: Iterable[str]) -> None:
        self.activated.extend(uids)


def plugin_with(groups: Iterable[PodGroup], pods: Iterable[PodInfo],
                waiting: Iterable[PodInfo] = ()) -> tuple[gs.GangScheduling, FakeHandle]:
    handle = FakeHandle()
    for group in groups:
        kind = POD_GROUPS if group.source != COSCHEDULING else COSCHEDULING_POD_GROUPS
        handle.pod_groups.upsert(kind, group.key, group)
    for p in pods:
        handle.pod_groups.pod_changed(None, p)
    for p in waiting:
        handle.pod_groups.assume(p)
        handle.waiting_pods.add(p, [(gs.NAME, 300.0)])
    return gs.GangScheduling(handle), handle  # type: ignore[arg-type]


PG1, PG2, PG3 = gang("pg1", 3), gang("pg2", 4), basic("pg3")
P1, P2, P3 = member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")
P4, P5 = member("p4", "pg2"), member("p5", "pg2")
BASIC_POD, NON_GANG = member("basic-pod", "pg3"), member("non-gang", None)
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
# The suffix of upstream's TestPlacementFeasible case names this port keeps.
OFF = " (isCPG=false, cpgFeatureGate=false)"


@pytest.mark.parametrize(
    ("pod_", "initial_pods", "groups", "waiting", "want_pre_enqueue", "want_permit",
     "want_activated", "want_allowed"),
    [
        pytest.param(NON_GANG, [], [PG1, PG2, PG3], [], None, None, [], [],
                     id="non-gang pod succeeds immediately (CPG=false)"),
        pytest.param(BASIC_POD, [], [PG1, PG2, PG3], [], None, None, [], [],
                     id="basic policy pod succeeds immediately (CPG=false)"),
        pytest.param(P1, [P2, P3, P4, P5], [], [],
                     Status(UU, ('waiting for pods\'s pod group "pg1" to appear in scheduling '
                                 "queue",)), "skip", [], [],
                     id="gang pod fails PreEnqueue when pod group is not yet created (CPG=false)"),
        pytest.param(P1, [P2, P4, P5], [PG1, PG2], [],
                     Status(UU, ("waiting for minCount pods from a gang to appear in scheduling "
                                 "queue",)), "skip", [], [],
                     id="gang pod fails PreEnqueue when quorum is not met (CPG=false)"),
        pytest.param(P1, [P2, P3, P4, P5], [PG1, PG2], [P2, P4, P5], None,
                     Status(Code.WAIT, ("waiting for minCount pods from a gang to be scheduled",),
                            gs.NAME), ["p3"], [],
                     id="gang pod passes PreEnqueue, but waits at Permit (CPG=false)"),
        pytest.param(P1, [P2, P3, P4, P5], [PG1, PG2], [P2, P3, P4, P5], None, None, [],
                     ["p2", "p3"],
                     id="final gang pod arrives at Permit and allows all waiting pods from a gang "
                        "(CPG=false)"),
    ],
)
def test_gang_scheduling_flow(pod_: PodInfo, initial_pods: list[PodInfo], groups: list[PodGroup],
                              waiting: list[PodInfo], want_pre_enqueue: Status | None,
                              want_permit: Any, want_activated: list[str],
                              want_allowed: list[str]) -> None:
    """Upstream's TestGangSchedulingFlow: PreEnqueue, then (when it passes) Permit of the
    assumed pod."""
    plugin, handle = plugin_with(groups, [pod_, *initial_pods], waiting)
    status = plugin.pre_enqueue(pod_)
    assert status == (want_pre_enqueue or Status(Code.SUCCESS))
    if want_permit == "skip":
        return
    handle.pod_groups.assume(pod_)
    decision = plugin.permit(CycleState(), pod_, "node")
    assert decision.status == (want_permit or Status(Code.SUCCESS))
    if decision.status.code is Code.WAIT:
        assert decision.timeout_seconds == 300.0
    assert handle.activated == want_activated
    for p in waiting:  # what was not allowed is rejected now, so that nothing blocks
        handle.waiting_pods.reject(p.uid, "end of test")
    allowed = [p.uid for p in waiting if handle.waiting_pods.wait(p.uid).is_success()]
    assert allowed == want_allowed


def test_a_member_left_waiting_times_out_with_upstreams_message() -> None:
    waiting = WaitingPods()
    waiting.add(P2, [(gs.NAME, 0.0)])
    status = waiting.wait(P2.uid)
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE, "rejected due to timeout after waiting 0s at plugin GangScheduling",
        gs.NAME)
    waiting.add(P2, [(gs.NAME, 300.0)])
    waiting.reject(P2.uid, "x")
    assert waiting.wait(P2.uid).message == "x"


@pytest.mark.parametrize(
    ("min_count", "children", "statuses", "expected", "initially_scheduled"),
    [
        pytest.param(2, 2, [Code.SUCCESS, Code.SUCCESS], [Code.WAIT, Code.SUCCESS], 0,
                     id="All pods succeed, minCount met at end" + OFF),
        pytest.param(3, 3, [Code.UNSCHEDULABLE], [Code.UNSCHEDULABLE], 0,
                     id="First pod fails, minCount not satisfiable" + OFF),
        pytest.param(2, 2, [Code.SUCCESS, Code.UNSCHEDULABLE], [Code.WAIT, Code.UNSCHEDULABLE], 0,
                     id="Second pod fails, minCount not satisfiable" + OFF),
        pytest.param(0, 1, [Code.UNSCHEDULABLE], [Code.UNSCHEDULABLE], 0,
                     id="Non-gang pod group with 0 scheduled pods fails" + OFF),
        pytest.param(0, 1, [Code.SUCCESS], [Code.SUCCESS], 0,
                     id="Non-gang pod group with succeeds once 1 pod is scheduled" + OFF),
        pytest.param(0, 1, [Code.UNSCHEDULABLE], [Code.SUCCESS], 1,
                     id="Non-gang pod group with 1 initially scheduled pod succeeds" + OFF),
        pytest.param(2, 3, [Code.SUCCESS] * 3, [Code.WAIT, Code.SUCCESS, Code.SUCCESS], 0,
                     id="More than minCount pods, all succeed" + OFF),
        pytest.param(2, 3, [Code.UNSCHEDULABLE, Code.SUCCESS, Code.SUCCESS],
                     [Code.WAIT, Code.WAIT, Code.SUCCESS], 0,
                     id="More than minCount pods, first fails" + OFF),
        pytest.param(2, 3, [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE],
                     [Code.WAIT, Code.UNSCHEDULABLE], 0,
                     id="More than minCount pods, minCount not satisfiable" + OFF),
        pytest.param(3, 2, [Code.SUCCESS, Code.SUCCESS], [Code.WAIT, Code.SUCCESS], 1,
                     id="1 pod scheduled, 2 unscheduled pods succeed, minCount 3 met" + OFF),
        pytest.param(2, 1, [Code.UNSCHEDULABLE], [Code.SUCCESS], 2,
                     id="minCount already met by scheduled pods" + OFF),
        pytest.param(3, 2, [Code.UNSCHEDULABLE], [Code.UNSCHEDULABLE], 1,
                     id="1 pod scheduled, minCount 3, first unscheduled fails, not"
                        " enough remaining" + OFF),
        pytest.param(4, 2, [Code.SUCCESS], [Code.UNSCHEDULABLE], 1,
                     id="1 pod scheduled, minCount 4, first unscheduled succeeds,"
                        " not enough remaining" + OFF),
    ],
)
def test_placement_feasible(min_count: int, children: int, statuses: list[Code],
                            expected: list[Code], initially_scheduled: int) -> None:
    """Upstream's TestPlacementFeasible: minCount 0 means a Basic group."""
    group = gang("test-pg", min_count) if min_count else basic("test-pg")
    scheduled = initially_scheduled
    for i, code in enumerate(statuses):
        if code is Code.SUCCESS:
            scheduled += 1
        got = gs.placement_feasible(group, scheduled, children - (i + 1))
        assert got.code is expected[i], f"step {i}"


def test_placement_feasible_messages() -> None:
    assert gs.placement_feasible(gang("pg", 3), 2, 0).message == (
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    assert gs.placement_feasible(gang("pg", 3), 1, 2).message == (
        "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining")


# -- queueing hints (Test_isSchedulableAfterPodAdded, ...PodGroupAdded, ...PodGroupUpdated) --
PG_MEMBER = member("p", "pg")


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(member("p2", "pg"), QueueingHint.QUEUE,
                     id="add a newPod which matches the pod's scheduling group (CPG=false)"),
        pytest.param(PodInfo.from_pod(pod("p2", uid="p2", namespace="ns1", node_name="n",
                                          spec={"schedulingGroup": {"podGroupName": "pg"}})),
                     QueueingHint.QUEUE,
                     id="add a newPod with NodeName set which matches the pod's scheduling group "
                        "(CPG=false)"),
        pytest.param(member("p2", "pg", namespace="ns2"), QueueingHint.SKIP,
                     id="add a newPod which doesn't match the pod's namespace (CPG=false)"),
        pytest.param(member("p2", "pg2"), QueueingHint.SKIP,
                     id="add a newPod which doesn't match the pod's pod group name (CPG=false)"),
    ],
)
def test_is_schedulable_after_pod_added(new: PodInfo, expected: QueueingHint) -> None:
    assert gs._after_pod_added(PG_MEMBER, None, new) is expected


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        pytest.param(gang("pg", 2), QueueingHint.QUEUE,
                     id="add a pod group which matches the pod's pod group name (CPG=false)"),
        pytest.param(gang("pg2", 2), QueueingHint.SKIP,
                     id="add a pod group which doesn't match the pod's scheduling group name "
                        "(CPG=false)"),
        pytest.param(gang("pg", 2, namespace="ns2"), QueueingHint.SKIP,
                     id="add a pod group which doesn't match the pod's scheduling group namespace "
                        "(CPG=false)"),
        pytest.param(PodGroup("ns1", "pg", source=COSCHEDULING), QueueingHint.SKIP,
                     id="a Coscheduling PodGroup of the same name is another group"),
    ],
)
def test_is_schedulable_after_pod_group_added(added: PodGroup, expected: QueueingHint) -> None:
    assert gs._after_pod_group_added(PG_MEMBER, None, added) is expected


@pytest.mark.parametrize(
    ("pod_", "old", "new", "expected"),
    [
        pytest.param(PG_MEMBER, gang("pg", 4), gang("pg", 3), QueueingHint.QUEUE,
                     id="minCount decreased matches target pod (CPG=false)"),
        pytest.param(PG_MEMBER, basic("pg"), basic("pg"), QueueingHint.SKIP,
                     id="update Basic policy (CPG=false)"),
        pytest.param(PG_MEMBER, gang("pg", 3), gang("pg", 4), QueueingHint.SKIP,
                     id="minCount increased matches target pod (CPG=false)"),
        pytest.param(PG_MEMBER, gang("pg", 3), gang("pg", 3), QueueingHint.SKIP,
                     id="minCount unchanged matches target pod (CPG=false)"),
        pytest.param(PG_MEMBER, gang("pg2", 4), gang("pg2", 3), QueueingHint.SKIP,
                     id="minCount decreased but pod group name doesn't match target pod "
                        "(CPG=false)"),
        pytest.param(PG_MEMBER, gang("pg", 4, "ns2"), gang("pg", 3, "ns2"), QueueingHint.SKIP,
                     id="minCount decreased but pod group namespace doesn't match target pod "
                        "(CPG=false)"),
        pytest.param(NON_GANG, gang("pg", 4), gang("pg", 3), QueueingHint.SKIP,
                     id="pod without a scheduling group is skipped (CPG=false)"),
    ],
)
def test_is_schedulable_after_pod_group_updated(pod_: PodInfo, old: PodGroup, new: PodGroup,
                                                expected: QueueingHint) -> None:
    assert gs._after_pod_group_updated(pod_, old, new) is expected


# -- Coscheduling PodGroups on the same plugin ---------------------------------------------
def cos_member(name: str) -> PodInfo:
    return PodInfo.from_pod(pod(name, uid=name, namespace="ns1",
                                labels={"scheduling.x-k8s.io/pod-group": "cg"}))


def test_a_coscheduling_pod_without_its_podgroup_is_scheduled_alone() -> None:
    plugin, _ = plugin_with([], [cos_member("a")])
    assert plugin.pre_enqueue(cos_member("a")).is_success()
    assert plugin.permit(CycleState(), cos_member("a"), "n").status.is_success()


def test_a_coscheduling_gang_waits_for_min_member_with_its_own_timeout() -> None:
    group = PodGroup("ns1", "cg", source=COSCHEDULING, min_count=2, schedule_timeout_seconds=10)
    a, b = cos_member("a"), cos_member("b")
    plugin, handle = plugin_with([group], [a])
    assert plugin.pre_enqueue(a).code is UU
    handle.pod_groups.pod_changed(None, b)
    assert plugin.pre_enqueue(a).is_success()
    handle.pod_groups.assume(a)
    decision = plugin.permit(CycleState(), a, "n")
    assert (decision.status.code, decision.timeout_seconds) == (Code.WAIT, 10.0)
    unset = PodGroup("ns1", "cg", source=COSCHEDULING, min_count=2)
    assert gs.permit_timeout(unset) == 60.0
