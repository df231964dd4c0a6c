"""Upstream's queue tables for pod-group members (``pkg/scheduler/backend/queue/
scheduling_queue_test.go``: TestAddPodGroupMember, TestUpdatePodGroupMember,
TestDeletePodGroupMember, TestActivatePodGroupMember,
TestMoveAllToActiveOrBackoffQueuePodGroupMember,
TestFlushUnschedulableEntitiesLeftoverPodGroupMember, TestAddPodGroup, and the successful
cycles of TestAddAttemptedPodGroupIfNeeded), ported to what this queue is.

Upstream queues a Workload-API group as one entity (QueuedPodGroupInfo); here each member
waits on its own and the first popped takes its siblings with it (``SchedulingQueue.take``).
What upstream's cases say a user sees is kept, with the case names: one member with
scheduling gates, or held by a PreEnqueue plugin, holds the whole group, so no member is
tried and no FailedScheduling is written until it passes; then the group goes in one
cycle. Cases about the entity's own bookkeeping (pendingPodGroupPods, group sizes,
CompositePodGroups) have no counterpart here.
"""

from __future__ import annotations

from typing import Any

from scheduler.cache.pod_groups import POD_GROUPS
from scheduler.framework.interface import SUCCESS, PermitDecision, Status
from scheduler.intake import ADDED, DELETED
from scheduler.queue.scheduling_queue import ACTIVE, UNSCHEDULABLE
from scheduler.testing import node, pod
from tests.plugins.test_default_preemption import FakeEvictor
from tests.queue.fakes import (
    DYNAMIC_RESOURCES,
    NODE_RESOURCES_FIT,
    START,
    FakeClock,
    FakePod,
    Queue,
    make_pod,
    make_queue,
    pop_now,
    where,
)
from tests.test_cycle import Harness
from tests.test_gang import WITH_GANGS, member, pod_group

GATE = "example.com/wait"


def gated_member(name: str, group: str = "pg") -> dict[str, Any]:
    made = member(name, group)
    made["spec"]["schedulingGates"] = [{"name": GATE}]
    return made


def ungate(h: Harness, name: str) -> None:
    h.update(name, lambda o: o["spec"].update(schedulingGates=[]))


def gang(min_count: int, *members: dict[str, Any], cpu: str = "8") -> Harness:
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu=cpu))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", min_count))
    h.add(*members)
    return h


def bound(h: Harness) -> list[str]:
    h.run_bindings()
    return sorted(key.split("/")[1] for key, _ in h.ports.binds)


def tried(h: Harness, *names: str) -> list[str]:
    """The members that got a FailedScheduling (so were tried by a cycle)."""
    return [n for n in names if h.ports.failures_of(n)]


def test_add_pod_group_member_first_member_added_gated_creates_pod_group_unschedulable(
) -> None:
    """TestAddPodGroupMember "first member added (gated), creates new pod group directly in
    unschedulableEntities": the ungated members that follow are held with it, not tried
    (no FailedScheduling)."""
    h = gang(3, gated_member("c"), member("b"), member("a"))
    assert h.drain() == 0
    assert tried(h, "a", "b", "c") == []
    # c itself never reaches the queue: the intake keeps pods with scheduling gates out.
    assert (h.where("a"), h.where("b"), h.where("c")) == (UNSCHEDULABLE, UNSCHEDULABLE, None)
    assert bound(h) == []


def test_add_pod_group_member_existing_pod_group_in_activeq_gated_addition_becomes_gated(
) -> None:
    """TestAddPodGroupMember "existing pod group in activeQ (gated addition), becomes gated
    and moves to unschedulableEntities": a complete gang in activeQ is not placed while a
    new member is gated."""
    h = gang(2, member("a"), member("b"))
    assert h.where("a") == ACTIVE
    h.add(gated_member("c"))
    assert h.drain() == 0
    assert tried(h, "a", "b") == [] and bound(h) == []
    assert (h.where("a"), h.where("b")) == (UNSCHEDULABLE, UNSCHEDULABLE)
    ungate(h, "c")
    h.drain()
    assert bound(h) == ["a", "b", "c"]


def test_update_pod_group_member_removal_of_gate_ungates_and_moves_pod_group_to_activeq(
) -> None:
    """TestUpdatePodGroupMember "gated pod update (removal of gate), ungates and moves pod
    group to activeQ": the whole group goes in one cycle."""
    h = gang(3, member("a"), member("b"), gated_member("c"))
    h.drain()
    ungate(h, "c")
    assert h.drain() == 1
    assert bound(h) == ["a", "b", "c"]


def test_update_pod_group_member_ungate_one_pod_but_another_remains_gated_keeps_group_gated(
) -> None:
    """TestUpdatePodGroupMember "ungate one pod but another remains gated, keeps pod group in
    unschedulableEntities as gated"."""
    h = gang(3, member("a"), gated_member("b"), gated_member("c"))
    h.drain()
    ungate(h, "b")
    assert h.drain() == 0
    assert tried(h, "a", "b", "c") == [] and bound(h) == []
    ungate(h, "c")
    h.drain()
    assert bound(h) == ["a", "b", "c"]


def test_activate_pod_group_member_gated_keeps_pod_group_gated() -> None:
    """TestActivatePodGroupMember "activate pod group in unschedulableEntities (gated), keeps
    pod group in unschedulableEntities as gated"."""
    h = gang(2, member("a"), gated_member("b"))
    h.drain()
    h.s.queue.activate([h.uid("a")])
    assert h.where("a") == UNSCHEDULABLE
    assert h.drain() == 0 and tried(h, "a", "b") == []


def test_flush_unschedulable_leftover_for_gated_pod_group_keeps_it_gated() -> None:
    """TestFlushUnschedulableEntitiesLeftoverPodGroupMember "flushing unschedulable leftover
    for gated pod group after max duration keeps it in unschedulableEntities as gated"."""
    h = gang(2, member("a"), gated_member("b"))
    h.drain()
    h.clock.advance(301)
    h.s.queue.flush_unschedulable_leftover()
    assert h.where("a") == UNSCHEDULABLE
    assert h.drain() == 0 and tried(h, "a", "b") == []


def test_move_all_gated_pod_group_matching_event_for_ungated_pod_stays_gated() -> None:
    """TestMoveAllToActiveOrBackoffQueuePodGroupMember "gated pod group matching event for
    ungated pod stays in unschedulableEntities as gated": a node that would make room does
    not free the group while a member is gated."""
    h = gang(2, member("a"), gated_member("b"), cpu="1")
    h.drain()
    h.nodes(node("n2", cpu="8"))
    assert h.drain() == 0 and tried(h, "a", "b") == []
    ungate(h, "b")
    h.drain()
    assert bound(h) == ["a", "b"]


def test_delete_the_only_gated_pod_from_a_group_ungates_the_pod_group() -> None:
    """TestDeletePodGroupMember "delete the only gated pod from a group, ungates the pod
    group": what remains is a group like any other (here a gang of 2 that is complete)."""
    h = gang(2, member("a"), member("b"), gated_member("c"))
    h.drain()
    h.delete("c")
    h.clock.advance(301)
    h.s.queue.flush_unschedulable_leftover()
    h.drain()
    assert bound(h) == ["a", "b"]


def test_add_pod_group_moves_pods_from_incomplete_pod_group_pods_to_activeq() -> None:
    """TestAddPodGroup "add pod group moves pods from incompletePodGroupPods to activeQ":
    members that arrived before their PodGroup are held silently, then go together."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.add(member("a"), member("b"))
    assert h.drain() == 0 and tried(h, "a", "b") == []
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 2))
    assert h.drain() == 1
    assert bound(h) == ["a", "b"]


def test_add_pod_group_moves_gated_pods_from_incomplete_to_unschedulable_entities() -> None:
    """TestAddPodGroup "add pod group moves gated pods from incompletePodGroupPods to
    unschedulableEntities"."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.add(member("a"), gated_member("b"))
    h.drain()
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 2))
    assert h.drain() == 0 and tried(h, "a", "b") == []
    assert h.where("a") == UNSCHEDULABLE


def test_a_gated_member_holds_only_its_own_group() -> None:
    """The group gate is per group: another gang's pods and single pods go on."""
    h = gang(2, member("a"), gated_member("b"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("other", 2))
    h.add(member("x", "other"), member("y", "other"), pod("single", uid="single", cpu="1"))
    h.drain()
    assert bound(h) == ["single", "x", "y"]
    h.intake.on_pod_group_object(POD_GROUPS, DELETED, pod_group("other", 2))


def test_a_waiting_gang_never_starves_others() -> None:
    """The issue's queue rule: a gang that cannot be placed holds no room and no place in
    the queue; a smaller gang and a single pod behind it are placed."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="6"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("big", 8))
    h.add(*(member(f"big-{i}", "big") for i in range(8)))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("small", 3))
    h.add(*(member(f"small-{i}", "small") for i in range(3)), pod("single", uid="single"))
    h.drain()
    assert bound(h) == ["single", "small-0", "small-1", "small-2"]
    assert all(h.where(f"big-{i}") == UNSCHEDULABLE for i in range(8))


# -- the same rule for a member a PreEnqueue plugin holds (a DRA claim not yet created) -------
class _Gates:
    """PreEnqueue by pod name, and the pods' group from a label, for the queue alone."""

    def __init__(self, *gated: str) -> None:
        self.gated = set(gated)

    def pre_enqueue(self, p: FakePod) -> str | None:
        return DYNAMIC_RESOURCES if p.name in self.gated else None

    @staticmethod
    def group_of(p: FakePod) -> str | None:
        return p.raw["metadata"]["labels"].get("group")


def queue_with(gates: _Gates) -> Queue:
    return make_queue(pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of)


def grouped(name: str, group: str = "g") -> FakePod:
    return make_pod(name, labels={"group": group})


def test_add_pod_group_member_plugin_gated_addition_holds_the_queued_members() -> None:
    """TestAddPodGroupMember "existing pod group in activeQ (gated addition), becomes gated
    and moves to unschedulableEntities", with DynamicResources' PreEnqueue holding the new
    member: nothing is popped, and the others wait gated by that plugin."""
    gates = _Gates("c")
    queue = queue_with(gates)
    a, b, c = grouped("a"), grouped("b"), grouped("c")
    queue.add(a)
    queue.add(b)
    queue.add(c)
    assert queue.pop(timeout=0) is None
    assert [where(queue, p) for p in (a, b, c)] == [UNSCHEDULABLE] * 3
    held = queue.get(a.uid)
    assert held is not None and held.gated and held.gating_plugin == DYNAMIC_RESOURCES
    # Once c passes, popping it takes the group whole.
    gates.gated.clear()
    queue.activate([c.uid])
    first = pop_now(queue)
    assert first.pod.name == "c"
    assert sorted(q.pod.name for q in queue.take([a.uid, b.uid])) == ["a", "b"]


def test_members_held_by_one_shared_check_go_together_once_it_passes() -> None:
    """TestAddPodGroup "add pod group moves pods from incompletePodGroupPods to activeQ": the
    members a shared check held (the group not yet seen) are popped together, whichever of
    them is re-checked first."""
    gates = _Gates("a", "b")
    queue = queue_with(gates)
    a, b = grouped("a"), grouped("b")
    queue.add(a)
    queue.add(b)
    gates.gated.clear()
    queue.activate([a.uid, b.uid])
    first = pop_now(queue)
    rest = queue.take([p.uid for p in (a, b) if p.uid != first.uid])
    assert sorted([first.pod.name] + [q.pod.name for q in rest]) == ["a", "b"]


def test_delete_the_only_plugin_gated_member_frees_the_others() -> None:
    """TestDeletePodGroupMember "delete the only gated pod from a group, ungates the pod
    group": the held members pass their next check."""
    queue = queue_with(_Gates("c"))
    a, c = grouped("a"), grouped("c")
    queue.add(c)
    queue.add(a)
    queue.delete(c.uid)
    queue.activate([a.uid])
    assert pop_now(queue).pod.name == "a"


def test_a_plugin_gated_member_holds_only_its_own_group() -> None:
    queue = queue_with(_Gates("c"))
    queue.add(grouped("c"))
    queue.add(grouped("x", "other"))
    queue.add(make_pod("single"))
    assert sorted(pop_now(queue).pod.name for _ in range(2)) == ["single", "x"]


# -- AddAttemptedPodGroupIfNeeded after a cycle that placed the group ------------------------
def test_add_attempted_no_pending_pods_pod_group_is_not_enqueued() -> None:
    """TestAddAttemptedPodGroupIfNeeded "No pending pods, pod group is not enqueued": every
    member placed, nothing is requeued."""
    h = gang(2, member("a"), member("b"), cpu="2")
    assert h.drain() == 1
    assert bound(h) == ["a", "b"]
    assert len(h.s.queue) == 0 and h.s.queue.in_flight() == []


def test_add_attempted_unschedulable_pods_present_but_group_scheduled_requeue_to_active_queue(
) -> None:
    """TestAddAttemptedPodGroupIfNeeded "Unschedulable pods are present but pod group
    scheduling was successful, requeue to active queue directly and preserve timestamp": the
    member that did not fit goes to activeQ at once, with the timestamp it was queued with
    and its counts reset, not to the unschedulable pool."""
    h = gang(2, member("a"), member("b"), member("c"), cpu="2")
    queued_at = h.s.queue.get(h.uid("c"))
    assert queued_at is not None
    h.clock.advance(5)
    assert h.cycle()
    assert h.ports.failures_of("c") != []
    assert h.where("c") == ACTIVE
    left = h.s.queue.get(h.uid("c"))
    assert left is not None
    assert left.timestamp == queued_at.timestamp
    assert (left.unschedulable_count, left.consecutive_errors) == (0, 0)
    assert not h.s.queue.is_backing_off(left)


def test_add_attempted_new_pods_only_group_scheduled_requeue_to_active_queue_new_timestamp(
) -> None:
    """TestAddAttemptedPodGroupIfNeeded "New pods only are present and pod group scheduling
    was successful, requeue to active queue directly with new timestamp": a member that
    arrives while its group's cycle runs is queued on its own, in activeQ, with the time it
    came."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a = grouped("a")
    queue.add(a)
    popped = pop_now(queue)
    clock.advance(1)
    b = grouped("b")
    queue.add(b)
    popped.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    assert queue.add_leftover_of_placed_group(popped)
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)
    got_a, got_b = queue.get(a.uid), queue.get(b.uid)
    assert got_a is not None and got_b is not None
    assert (got_a.timestamp, got_b.timestamp) == (START, START + 1)


def test_a_leftover_member_held_by_pre_enqueue_waits_gated() -> None:
    """upstream's moveToActiveQ runs PreEnqueue: a leftover member a plugin holds (waiting for
    its preemption, say) waits in the pool, gated, as upstream's entity waits in
    unschedulableEntities."""
    gates = _Gates()
    queue = queue_with(gates)
    a = grouped("a")
    queue.add(a)
    popped = pop_now(queue)
    gates.gated.add("a")
    assert queue.add_leftover_of_placed_group(popped)
    assert where(queue, a) == UNSCHEDULABLE
    held = queue.get(a.uid)
    assert held is not None and held.gated and held.gating_plugin == DYNAMIC_RESOURCES


def test_a_leftover_member_deleted_during_the_cycle_is_not_requeued() -> None:
    queue = make_queue()
    a = make_pod("a")
    queue.add(a)
    popped = pop_now(queue)
    queue.delete(a.uid)
    assert not queue.add_leftover_of_placed_group(popped)
    assert where(queue, a) is None and queue.in_flight() == []


def test_a_leftover_member_runs_its_groups_preemption_in_the_next_cycle() -> None:
    """Why upstream preserves the timestamp: "to trigger preemption immediately after the
    current cycle". The member left over when its gang was placed is tried next, and its
    group's preemption evicts the lower-priority pod that takes its room; no event is
    needed."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    evictor = FakeEvictor()
    h.s.evictor = evictor  # type: ignore[assignment]
    h.nodes(node("n1", cpu="3"))
    h.add(pod("low", uid="low", cpu="1", priority=0, node_name="n1"))
    group = pod_group("pg", 2)
    group["spec"]["priority"] = 100
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, group)
    h.add(*(pod(n, uid=n, cpu="1", priority=100, spec={"schedulingGroup": {
        "podGroupName": "pg"}}) for n in ("a", "b", "c")))
    assert h.cycle()
    assert bound(h) == ["a", "b"]
    assert h.cycle(), "the leftover member is tried at once"
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert [c[1] for c in evictor.calls if c[0] == "evict"] == ["low"]
    assert h.s.queue.nominator.node_of(h.uid("c")) == "n1"


class _RejectAtPermit:
    """Rejects one pod at Permit, every time."""

    name = "RejectAtPermit"

    def __init__(self, pod_name: str) -> None:
        self.pod_name = pod_name

    def permit(self, state: Any, pod: Any, node: str) -> PermitDecision:
        return PermitDecision(Status.unschedulable("no") if pod.name == self.pod_name
                              else SUCCESS)


def test_a_member_a_permit_plugin_rejects_in_a_placed_group_is_not_retried_without_pause(
) -> None:
    """Beyond upstream, which requeues it at once as a member that did not fit: a Permit
    plugin that keeps rejecting it would have it retried in a loop. It goes through the
    failure path, as any pod a Permit plugin rejects."""
    config = {**WITH_GANGS, "profiles": [{
        "schedulerName": "secondary-scheduler", "plugins": {"multiPoint": {"enabled": [
            {"name": "GangScheduling"}, {"name": _RejectAtPermit.name}]}}}]}
    h = Harness(config=config, plugins=[_RejectAtPermit("c")], binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 2))
    h.add(member("a"), member("b"), member("c"))
    assert h.cycle()
    assert bound(h) == ["a", "b"]
    assert h.where("c") == UNSCHEDULABLE
    assert not h.cycle()
