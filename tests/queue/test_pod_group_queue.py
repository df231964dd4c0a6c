"""Upstream's queue tables for pod-group members (``pkg/scheduler/backend/queue/
scheduling_queue_test.go``: TestAddPodGroupMember, TestUpdatePodGroupMember,
TestDeletePodGroupMember, TestActivatePodGroupMember,
TestMoveAllToActiveOrBackoffQueuePodGroupMember,
TestFlushUnschedulableEntitiesLeftoverPodGroupMember, TestAddPodGroup,
TestAddAttemptedPodGroupIfNeeded; backoff_queue_test.go's TestBackoffQueue_calculateBackoffDuration
for entities), ported to what this queue is.

Upstream queues a Workload-API group as one entity (QueuedPodGroupInfo); here each member
is kept on its own, with the group's counts and timestamp, in the group's one queue; the
members move together, and the first popped takes its siblings with it
(``SchedulingQueue.take``).
What upstream's cases say a user sees is kept, with the case names: one member with
scheduling gates, or held by a PreEnqueue plugin, holds the whole group, so no member is
tried and no FailedScheduling is written until it passes; then the group goes in one
cycle. Cases about the entity's own bookkeeping (pendingPodGroupPods, group sizes,
CompositePodGroups) have no counterpart here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from scheduler.cache.pod_groups import POD_GROUPS
from scheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from scheduler.framework.interface import SUCCESS, PermitDecision, Status
from scheduler.framework.ports import BindOutcome
from scheduler.intake import ADDED, DELETED
from scheduler.queue.queued_pod import QueuedPodInfo
from scheduler.queue.scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    PENDING,
    POD_GROUP_ENTITY,
    UNSCHEDULABLE,
)
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
    pop_group,
    pop_now,
    registered,
    where,
)
from tests.test_cycle import Harness
from tests.test_gang import WITH_GANGS, drain_active, member, pod_group

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


def test_update_pod_group_member_removal_of_gate_moves_the_whole_group_at_once() -> None:
    """TestUpdatePodGroupMember "gated pod update (removal of gate), ungates and moves pod
    group to activeQ": the members held with it go to activeQ as it comes, with its group's
    timestamp, so the group waits in one queue (one entity) until popped."""
    h = gang(3, member("a"), member("b"), gated_member("c"))
    h.drain()
    assert (h.where("a"), h.where("b")) == (UNSCHEDULABLE, UNSCHEDULABLE)
    h.clock.advance(5)
    ungate(h, "c")
    assert [h.where(n) for n in "abc"] == [ACTIVE] * 3
    assert h.s.queue.queued_entities()[(ACTIVE, POD_GROUP_ENTITY)] == 1
    queued = [h.s.queue.get(h.uid(n)) for n in "abc"]
    assert len({q.timestamp for q in queued if q is not None}) == 1
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


@pytest.mark.parametrize("queued_for", ["a", "b"])
def test_move_all_event_of_interest_moves_ungated_pod_group_from_unschedulable_to_activeq(
    queued_for: str,
) -> None:
    """TestMoveAllToActiveOrBackoffQueuePodGroupMember "event of interest moves ungated pod
    group from unschedulableEntities to activeQ", with its hint answering Queue for one
    member only (its "otherPlugin" Queues pod1 and Skips the others): upstream's
    isEntityWorthRequeuing takes the best strategy of any member, and the entity moves
    whole."""
    clock = FakeClock()
    node_add = registered(Resource.NODE, Action.ADD,
                          lambda p, old, new: QueueingHint.QUEUE if p.name == queued_for
                          else QueueingHint.SKIP)
    queue = make_queue(clock, {NODE_RESOURCES_FIT: [node_add]}, group_of=_Gates.group_of)
    a, b = grouped("a"), grouped("b")
    _queue_member_in(queue, a, UNSCHEDULABLE)
    queue.add(b)  # joins a in the pool, with its rejectors
    assert (where(queue, a), where(queue, b)) == (UNSCHEDULABLE, UNSCHEDULABLE)
    clock.advance(2)  # past the backoff
    queue.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, Action.ADD))
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)
    entities = queue.queued_entities()
    assert (entities[(ACTIVE, POD_GROUP_ENTITY)],
            entities[(UNSCHEDULABLE, POD_GROUP_ENTITY)]) == (1, 0)


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
    drain_active(h)
    assert bound(h) == ["single", "small-0", "small-1", "small-2"]
    assert all(h.where(f"big-{i}") == BACKOFF for i in range(8))


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


@pytest.mark.parametrize("held", [
    pytest.param(False, id="a later member added to the group in activeQ"),
    pytest.param(True, id="a later member held by PreEnqueue with its group in the pool"),
])
def test_add_attempted_unschedulable_pods_present_but_group_scheduled_preserve_timestamp(
    held: bool,
) -> None:
    """TestAddAttemptedPodGroupIfNeeded "Unschedulable pods are present but pod group
    scheduling was successful, requeue to active queue directly and preserve timestamp",
    with members added at different times: upstream's entity has one timestamp, its first
    member's (newQueuedPodGroupInfoFromRootLookup), which a member added later
    (addToPodGroupIfExists) does not change; the leftovers all go back with it."""
    clock = FakeClock()
    gates = _Gates()
    queue = make_queue(clock, pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of)
    a, b, c = grouped("a"), grouped("b"), grouped("c")
    queue.add(a)
    queue.add(b)
    clock.advance(5)
    if held:
        gates.gated.add("c")
    queue.add(c)
    if held:
        assert queue.pop(timeout=0) is None
        gates.gated.clear()
        queue.activate([c.uid])
    members = pop_group(queue, [a, b, c])
    clock.advance(1)
    assert queue.add_placed_group_leftovers(
        [q for q in members if q.pod.name != "a"]) == 2
    for p in (b, c):
        left = queue.get(p.uid)
        assert where(queue, p) == ACTIVE and left is not None
        assert left.timestamp == START


def test_add_attempted_new_pods_only_group_scheduled_requeue_to_active_queue_new_timestamp(
) -> None:
    """TestAddAttemptedPodGroupIfNeeded "New pods only are present and pod group scheduling
    was successful, requeue to active queue directly with new timestamp": a member that
    arrives while its group's cycle runs waits for the cycle's end (upstream's
    pendingPodGroupPods, scheduler_pending_pods{queue="pending"}), then goes to activeQ with
    the time of the requeue."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a = grouped("a")
    queue.add(a)
    pop_now(queue)
    clock.advance(1)
    b = grouped("b")
    queue.add(b)
    assert where(queue, b) == PENDING
    assert queue.pending_counts()[PENDING] == 1
    clock.advance(1)
    assert queue.add_placed_group_leftovers([]) == 0
    assert where(queue, b) == ACTIVE
    assert queue.pending_counts()[PENDING] == 0
    got_b = queue.get(b.uid)
    assert got_b is not None and got_b.timestamp == START + 2


def test_add_attempted_a_member_arriving_during_a_placed_cycle_joins_the_leftovers() -> None:
    """TestAddAttemptedPodGroupIfNeeded "Unschedulable pods are present but pod group
    scheduling was successful, requeue to active queue directly and preserve timestamp",
    with a new pod among the pending ones: it joins the leftover in activeQ with the
    group's preserved timestamp and counts."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a = grouped("a")
    queue.add(a)
    popped = pop_now(queue)
    popped.unschedulable_count = 2
    clock.advance(1)
    b = grouped("b")
    queue.add(b)
    popped.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    assert queue.add_placed_group_leftovers([popped]) == 1
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)
    got_b = queue.get(b.uid)
    assert got_b is not None
    assert (got_b.timestamp, got_b.unschedulable_count) == (START, 0)


def test_a_member_arriving_during_a_failed_cycle_is_requeued_with_the_group() -> None:
    """TestAddAttemptedPodGroupIfNeeded's failed cycles with a pending pod: it goes to the
    group's backoffQ with the group's counts, timestamp and expiry, not to activeQ alone
    (where its pop would take its siblings out of their backoff)."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a = grouped("a")
    queue.add(a)
    popped = pop_now(queue)
    popped.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    b = grouped("b")
    queue.add(b)
    assert where(queue, b) == PENDING
    assert queue.add_failed_group([popped], error=False) == 1
    assert (where(queue, a), where(queue, b)) == (BACKOFF, BACKOFF)
    got_b = queue.get(b.uid)
    assert got_b is not None
    assert (got_b.unschedulable_count, got_b.timestamp, got_b.backoff_expiration) == (
        popped.unschedulable_count, popped.timestamp, popped.backoff_expiration)
    assert got_b.unschedulable_plugins == {NODE_RESOURCES_FIT}
    # The group's backoff counts both (10 s x sqrt(2) cap; 1 s at the first failure).
    assert popped.backoff_expiration == START + 1
    assert queue.pop(timeout=0) is not None  # PopFromBackoffQ takes the group


def test_a_pending_member_deleted_or_updated_during_the_cycle() -> None:
    queue = make_queue(group_of=_Gates.group_of)
    a, b, c = grouped("a"), grouped("b"), grouped("c")
    queue.add(a)
    popped = pop_now(queue)
    queue.add(b)
    queue.add(c)
    queue.add(c)  # a duplicate add is ignored
    newer = dataclasses.replace(c, resource_version="2")
    queue.update(c, newer)
    queue.delete(b.uid)
    assert len(queue) == 1
    assert queue.add_placed_group_leftovers([popped]) == 1
    assert (where(queue, b), where(queue, c)) == (None, ACTIVE)
    got_c = queue.get(c.uid)
    assert got_c is not None and got_c.pod is newer


def test_pending_members_are_released_by_the_next_pop_when_the_cycle_requeued_nothing(
) -> None:
    """A group gone since its pop is tried as a pod alone and requeued by the pod's path:
    the members that came meanwhile are not left waiting; the next pop releases them, to
    where their group waits."""
    queue = make_queue(group_of=_Gates.group_of)
    a, b = grouped("a"), grouped("b")
    queue.add(a)
    popped = pop_now(queue)
    queue.add(b)
    popped.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    queue.add_unschedulable_if_not_present(popped)
    assert where(queue, b) == PENDING
    assert queue.pop(timeout=0) is None
    assert (where(queue, a), where(queue, b)) == (UNSCHEDULABLE, UNSCHEDULABLE)


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
    assert queue.add_placed_group_leftovers([popped])
    assert where(queue, a) == UNSCHEDULABLE
    held = queue.get(a.uid)
    assert held is not None and held.gated and held.gating_plugin == DYNAMIC_RESOURCES


def test_a_leftover_member_deleted_during_the_cycle_is_not_requeued() -> None:
    queue = make_queue()
    a = make_pod("a")
    queue.add(a)
    popped = pop_now(queue)
    queue.delete(a.uid)
    assert not queue.add_placed_group_leftovers([popped])
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


def test_a_member_a_permit_plugin_rejects_in_a_placed_group_is_requeued_to_activeq_at_once(
) -> None:
    """upstream's prepareForBindingCycle hands a member a Permit plugin rejects to the
    FailureHandler, which adds it to its group's pending pods, and
    AddAttemptedPodGroupIfNeeded with Success requeues it to activeQ at once, counts reset
    and timestamp preserved, as a member that did not fit. As upstream, a plugin that
    keeps rejecting it has it retried without pause, one cycle after another."""
    config = {**WITH_GANGS, "profiles": [{
        "schedulerName": "secondary-scheduler", "plugins": {"multiPoint": {"enabled": [
            {"name": "GangScheduling"}, {"name": _RejectAtPermit.name}]}}}]}
    h = Harness(config=config, plugins=[_RejectAtPermit("c")], binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 2))
    h.add(member("a"), member("b"), member("c"))
    queued_at = h.s.queue.get(h.uid("c"))
    assert queued_at is not None
    h.clock.advance(5)
    assert h.cycle()
    assert bound(h) == ["a", "b"]
    assert h.ports.failures_of("c") != []
    assert h.where("c") == ACTIVE
    left = h.s.queue.get(h.uid("c"))
    assert left is not None
    assert (left.timestamp, left.unschedulable_count, left.consecutive_errors) == (
        queued_at.timestamp, 0, 0)
    for _ in range(3):  # the loop upstream has too
        assert h.cycle()
        assert h.where("c") == ACTIVE


# -- AddAttemptedPodGroupIfNeeded after a cycle that did not place the group -----------------
@pytest.mark.parametrize(
    ("error", "no_backoff", "held", "expected_where", "expected_counts"),
    [
        pytest.param(True, True, False, ACTIVE, (0, 1), id=(
            "Pods present, pod group scheduling had an error, and pod group not backing off")),
        pytest.param(False, True, False, ACTIVE, (1, 0), id=(
            "Pods present, pod group scheduling result is unschedulable, and pod group not "
            "backing off")),
        pytest.param(False, True, True, UNSCHEDULABLE, (1, 0), id=(
            "Pods present, pod group scheduling result is unschedulable, and pod group not "
            "backing off, but blocked on PreEnqueue")),
        pytest.param(True, False, False, BACKOFF, (0, 1), id=(
            "Pods present, pod group scheduling result is Error, and pod group backing off")),
        pytest.param(False, False, False, BACKOFF, (1, 0), id=(
            "Pods present, pod group scheduling result is Unschedulable, and pod group backing "
            "off")),
        pytest.param(True, False, True, UNSCHEDULABLE, (0, 1), id=(
            "Pods present, pod group scheduling result is Error, and pod group backing off, "
            "but blocked on PreEnqueue")),
    ],
)
def test_add_attempted_pod_group_if_needed_after_a_failed_cycle(
    error: bool, no_backoff: bool, held: bool, expected_where: str,
    expected_counts: tuple[int, int],
) -> None:
    """TestAddAttemptedPodGroupIfNeeded's failed cycles: the members go back together,
    whatever events came, with the group's counts (an unschedulable result resets the
    errors) and the time of the requeue; to activeQ with backoff off, to the pool while a
    PreEnqueue plugin holds them."""
    clock = FakeClock()
    gates = _Gates()
    backoff = {"initial_backoff": 0.0, "max_backoff": 0.0} if no_backoff else {}
    queue = make_queue(clock, pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of,
                       **backoff)
    a, b = grouped("a"), grouped("b")
    queue.add(a)
    queue.add(b)
    first = pop_now(queue)
    members = [first, *queue.take([b.uid])]
    first.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    if not error:
        first.consecutive_errors = 5  # reset by an unschedulable result
    if held:
        gates.gated.update({"a", "b"})
    clock.advance(1)
    assert queue.add_failed_group(members, error=error) == 2
    assert [where(queue, p) for p in (a, b)] == [expected_where] * 2
    for qpi in members:
        assert (qpi.unschedulable_count, qpi.consecutive_errors) == expected_counts
        assert qpi.timestamp == START + 1
    assert queue.in_flight() == []


@pytest.mark.parametrize("during_cycle", [
    pytest.param(False, id="a member added while its group waits in activeQ"),
    pytest.param(True, id="a member added during the group's cycle"),
])
def test_a_failed_cycle_raises_the_groups_own_count(during_cycle: bool) -> None:
    """AddAttemptedPodGroupIfNeeded raises the popped entity's UnschedulableCount, which a
    member added to the entity (addToPodGroupIfExists, or pendingPodGroupPods during the
    cycle) does not lower: the group's count holds when the members that failed before
    are deleted."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a, b, c = grouped("a"), grouped("b"), grouped("c")
    queue.add(a)
    queue.add(b)
    assert queue.add_failed_group(pop_group(queue, [a, b], NODE_RESOURCES_FIT),
                                  error=False) == 2
    clock.advance(2)
    queue.flush_backoff_completed()
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)
    if during_cycle:
        members = pop_group(queue, [a, b], NODE_RESOURCES_FIT)
        queue.add(c)
    else:
        queue.add(c)
        assert where(queue, c) == ACTIVE
    queue.delete(a.uid)
    queue.delete(b.uid)
    if not during_cycle:
        members = pop_group(queue, [c], NODE_RESOURCES_FIT)
    queue.add_failed_group(members, error=False)
    requeued = queue.get(c.uid)
    assert requeued is not None and where(queue, c) == BACKOFF
    assert requeued.unschedulable_count == 2
    assert queue.backoff_expiry(requeued) == clock() + 2


@pytest.mark.parametrize("placed", [True, False])
def test_a_group_requeued_with_one_member_held_waits_whole_in_the_pool(placed: bool) -> None:
    """TestAddAttemptedPodGroupIfNeeded "... but blocked on PreEnqueue", one member held: the
    entity is gated whole. Whatever the order the members come in, none waits in activeQ
    or backoffQ while its sibling is held."""
    gates = _Gates()
    queue = queue_with(gates)
    pods = [grouped(n) for n in "abc"]
    for p in pods:
        queue.add(p)
    members = pop_group(queue, pods, NODE_RESOURCES_FIT)
    gates.gated.add(members[-1].pod.name)
    if placed:
        assert queue.add_placed_group_leftovers(members) == 3
    else:
        assert queue.add_failed_group(members, error=False) == 3
    assert [where(queue, p) for p in pods] == [UNSCHEDULABLE] * 3
    assert queue.pop(timeout=0) is None


@pytest.mark.parametrize(
    ("count", "size", "expected"),
    [
        pytest.param(16, 1, 32.0, id="hitting max backoff duration"),
        pytest.param(7, 10, 64.0, id="larger entity size"),
        # Upstream truncates to whole nanoseconds (101 ns in its units); the expiry is
        # truncated to whole seconds anyway.
        pytest.param(16, 10, 32 * math.sqrt(10),
                     id="hitting max backoff duration with larger entity size"),
    ],
)
def test_backoff_queue_calculate_backoff_duration_of_an_entity(
    count: int, size: int, expected: float
) -> None:
    """TestBackoffQueue_calculateBackoffDuration (initial 1, max 32): a group's cap is the
    maximum times the square root of its size."""
    queue = make_queue(initial_backoff=1.0, max_backoff=32.0)
    qpi = QueuedPodInfo(pod=make_pod("p"), timestamp=START, unschedulable_count=count)
    assert queue.backoff_duration(qpi, size) == pytest.approx(expected)


def test_a_groups_backoff_doubles_per_failed_cycle_up_to_the_max_times_sqrt_of_its_size(
) -> None:
    """backoff_queue.go getBackoffTime with the entity's UnschedulableCount, which
    AddAttemptedPodGroupIfNeeded raises once per failed cycle of the group: 1 s doubling,
    capped at 10 s x sqrt(4) = 20 s for 4 members (a pod alone stops at 10 s)."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    pods = [grouped(n) for n in "abcd"]
    for p in pods:
        queue.add(p)
    waited = []
    for _ in range(6):
        members = pop_group(queue, pods, NODE_RESOURCES_FIT)
        assert queue.add_failed_group(members, error=False) == 4
        assert [where(queue, p) for p in pods] == [BACKOFF] * 4
        assert {queue.backoff_expiry(qpi) for qpi in members} == {members[0].backoff_expiration}
        waited.append((members[0].backoff_expiration or 0) - clock())
        clock.advance(100)
        queue.flush_backoff_completed()
    assert waited == [1, 2, 4, 8, 16, 20]


def test_a_group_whose_cycle_fails_is_retried_whole_after_its_backoff_whatever_the_events(
) -> None:
    """Upstream requeues the failed group's entity to backoffQ, not to the unschedulable
    pool: an event that would help (room added) does not move it, its members are all
    retried in one cycle once the group's backoff (1 s after the first failure) is over."""
    h = gang(3, member("a"), member("b"), member("c"), cpu="2")
    assert drain_active(h) == 1
    names = ("a", "b", "c")
    assert [h.where(n) for n in names] == [BACKOFF] * 3
    assert all(h.ports.failures_of(n) for n in names)
    members = [h.s.queue.get(h.uid(n)) for n in names]
    assert {None if q is None else h.s.queue.backoff_expiry(q) for q in members} == {
        math.floor(h.clock() + 1)}
    h.nodes(node("n2", cpu="1"))
    assert [h.where(n) for n in names] == [BACKOFF] * 3
    h.clock.advance(1)  # in the expiry's window: still backing off
    h.s.queue.flush_backoff_completed()
    assert [h.where(n) for n in names] == [BACKOFF] * 3
    h.clock.advance(1)
    h.s.queue.flush_backoff_completed()
    assert [h.where(n) for n in names] == [ACTIVE] * 3
    assert h.drain() == 1
    assert bound(h) == ["a", "b", "c"]


def test_a_failed_groups_member_deleted_during_the_cycle_is_not_requeued() -> None:
    queue = make_queue(group_of=_Gates.group_of)
    a, b = grouped("a"), grouped("b")
    queue.add(a)
    queue.add(b)
    first = pop_now(queue)
    members = [first, *queue.take([b.uid if first.uid == a.uid else a.uid])]
    queue.delete(b.uid)
    assert queue.add_failed_group(members, error=True) == 1
    assert (where(queue, a), where(queue, b)) == (BACKOFF, None)
    assert queue.in_flight() == []


# -- AddUnschedulableIfNotPresent for a member: its binding cycle failed ----------------------
def _sibling_in(queue: Queue, gates: _Gates, place: str) -> FakePod:
    """A sibling of the member in flight, waiting in ``place``."""
    b = grouped("b")
    if place == "gated":
        gates.gated.add("b")
    _queue_member_in(queue, b, place)
    return b


def _queue_member_in(queue: Queue, member: FakePod, place: str) -> None:
    """Add ``member`` and, for backoffQ or the pool, fail it there alone: as its group's
    failed cycle (backoffQ) or its own (the pool)."""
    queue.add(member)
    if place in (BACKOFF, UNSCHEDULABLE):
        popped = pop_now(queue)
        popped.unschedulable_plugins.add(NODE_RESOURCES_FIT)
        if place == BACKOFF:
            queue.add_failed_group([popped], error=False)
        else:
            queue.add_unschedulable_if_not_present(popped)
            assert queue.pop(timeout=0) is None  # the cycle is over


@pytest.mark.parametrize(
    ("place", "expected"),
    [
        pytest.param(None, ACTIVE, id=(
            "pod group is not last popped entity and no group exists, a new group is created "
            "and added to activeQ")),
        pytest.param(UNSCHEDULABLE, UNSCHEDULABLE, id=(
            "pod group exists in unschedulableEntities, pod is added and group remains in "
            "unschedulableEntities")),
        pytest.param(ACTIVE, ACTIVE, id=(
            "pod group exists in activeQ, pod is added and group remains in activeQ")),
        pytest.param(BACKOFF, BACKOFF, id=(
            "pod group exists in backoffQ, pod is added and group remains in backoffQ")),
        pytest.param("gated", UNSCHEDULABLE, id=(
            "pod group exists in unschedulableEntities (gated), ungated pod is added and "
            "group remains gated in unschedulableEntities")),
    ],
)
def test_add_unschedulable_pod_if_not_present_pod_group_member(
    place: str | None, expected: str
) -> None:
    """TestAddUnschedulablePodIfNotPresentPodGroupMember: a member whose binding cycle
    failed joins its group where a sibling waits, with the group's counts and times, else
    goes to activeQ at once; never to a backoff or the pool of its own."""
    clock = FakeClock()
    gates = _Gates()
    queue = make_queue(clock, pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of)
    a = grouped("a")
    queue.add(a)
    failed = pop_now(queue)
    queue.add_placed_group_leftovers([])  # the group was placed: a's binding runs
    failed.unschedulable_count, failed.consecutive_errors = 3, 0
    clock.advance(1)
    b = _sibling_in(queue, gates, place) if place is not None else None
    clock.advance(1)
    assert queue.add_unschedulable_group_member(failed, error=True)
    assert where(queue, a) == expected
    assert queue.in_flight() == []
    sibling = None if b is None else queue.get(b.uid)
    if sibling is None:
        assert (failed.unschedulable_count, failed.consecutive_errors) == (0, 0)
    else:
        assert where(queue, b) == expected
        assert (failed.unschedulable_count, failed.timestamp, failed.backoff_expiration) == (
            sibling.unschedulable_count, sibling.timestamp, sibling.backoff_expiration)
    if place == "gated":
        assert queue.pop(timeout=0) is None


@pytest.mark.parametrize(
    ("failing", "error"),
    [
        pytest.param(["a"], False, id=(
            "single pod group member added with plugin to pending when group is in flight")),
        pytest.param(["a"], True, id=(
            "single pod group member added with no plugins (consecutive error) to pending")),
        pytest.param(["a", "b", "c"], False, id=(
            "multiple pod group members, including gated added with plugins sequentially to "
            "pending when group is in flight")),
    ],
)
def test_add_unschedulable_pod_if_not_present_pod_group_member_in_flight(
    failing: list[str], error: bool
) -> None:
    """TestAddUnschedulablePodIfNotPresentPodGroupMember, the group in flight (last
    popped): a member whose binding cycle fails while its group's cycle runs waits for the
    cycle's end (pendingPodGroupPods), gated or not, and is then requeued with the group:
    here the cycle fails and they all go to the group's backoff together."""
    clock = FakeClock()
    gates = _Gates()
    queue = make_queue(clock, pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of)
    pods = {n: grouped(n) for n in ("a", "b", "c", "d")}
    for n in ("a", "b", "c"):
        queue.add(pods[n])
    first = pop_now(queue)
    binding = [first, *queue.take(pods[n].uid for n in ("b", "c"))]
    queue.add_placed_group_leftovers([])  # placed: their binding cycles run
    queue.add(pods["d"])
    cycle = pop_now(queue)  # d's cycle: the group is in flight again
    assert cycle.pod.name == "d"
    gates.gated.add("c")
    for qpi in binding:
        if qpi.pod.name in failing:
            qpi.unschedulable_plugins.add(NODE_RESOURCES_FIT)
            assert queue.add_unschedulable_group_member(qpi, error=error)
    assert [where(queue, pods[n]) for n in failing] == [PENDING] * len(failing)
    assert queue.pending_counts()[PENDING] == len(failing)
    assert sorted(queue.in_flight()) == sorted(
        pods[n].uid for n in ("a", "b", "c", "d") if n not in failing)
    cycle.unschedulable_plugins.add(NODE_RESOURCES_FIT)
    assert queue.add_failed_group([cycle], error=False) == 1
    # c's PreEnqueue holds the group: all wait in the pool, gated.
    expected = UNSCHEDULABLE if "c" in failing else BACKOFF
    assert where(queue, pods["d"]) == expected
    for n in failing:
        got = queue.get(pods[n].uid)
        assert got is not None
        assert (got.unschedulable_count, got.timestamp) == (1, cycle.timestamp)
        assert where(queue, pods[n]) == expected
    assert queue.pending_counts()[PENDING] == 0


@pytest.mark.parametrize("gated", [
    pytest.param(False, id=(
        "matching pod group is currently in flight (last popped), pod (ungated) goes to "
        "pendingPodGroupPods")),
    pytest.param(True, id=(
        "matching pod group is currently in flight (last popped), pod (gated) goes to "
        "pendingPodGroupPods")),
])
def test_add_pod_group_member_while_its_group_is_in_flight(gated: bool) -> None:
    """TestAddPodGroupMember: a new member of the group being scheduled waits for the
    cycle's end; a pod of another group does not."""
    gates = _Gates("b") if gated else _Gates()
    queue = queue_with(gates)
    a, b, other = grouped("a"), grouped("b"), grouped("x", "other")
    queue.add(a)
    pop_now(queue)
    queue.add(b)
    queue.add(other)
    assert (where(queue, b), where(queue, other)) == (PENDING, ACTIVE)
    assert queue.queued_entities()[(ACTIVE, POD_GROUP_ENTITY)] == 1


@pytest.mark.parametrize(
    ("place", "gated", "expected"),
    [
        pytest.param(BACKOFF, False, BACKOFF, id=(
            "existing pod group in backoffQ (ungated addition), stays in backoffQ")),
        pytest.param(BACKOFF, True, UNSCHEDULABLE, id=(
            "existing pod group in backoffQ (gated addition), becomes gated and moves to "
            "unschedulableEntities")),
        pytest.param(UNSCHEDULABLE, False, UNSCHEDULABLE, id=(
            "existing pod group in unschedulableEntities (ungated addition), stays in "
            "unschedulableEntities as ungated")),
        pytest.param(ACTIVE, False, ACTIVE, id=(
            "existing pod group in activeQ (ungated addition), stays in activeQ")),
    ],
)
def test_add_pod_group_member_to_its_queued_group(
    place: str, gated: bool, expected: str
) -> None:
    """TestAddPodGroupMember: a new member joins its group where it waits, with its counts
    and times; it is not queued in activeQ alone, where its pop would take the others out
    of their backoff or the pool before anything helped them. One held by PreEnqueue holds
    the group: nothing is popped (PopFromBackoffQ still takes a group in backoffQ when
    activeQ is empty)."""
    clock = FakeClock()
    gates = _Gates()
    queue = make_queue(clock, pre_enqueue=gates.pre_enqueue, group_of=_Gates.group_of)
    a = grouped("a")
    _queue_member_in(queue, a, place)
    assert where(queue, a) == place
    clock.advance(0.5)
    b = grouped("b")
    if gated:
        gates.gated.add("b")
    queue.add(b)
    assert where(queue, b) == expected
    joined, sibling = queue.get(b.uid), queue.get(a.uid)
    assert joined is not None and sibling is not None
    if place != ACTIVE and not gated:
        assert (joined.unschedulable_count, joined.timestamp, joined.unschedulable_plugins) == (
            sibling.unschedulable_count, sibling.timestamp, {NODE_RESOURCES_FIT})
    if expected == UNSCHEDULABLE:
        assert queue.pop(timeout=0) is None


@pytest.mark.parametrize("binding_failed", [
    pytest.param(True, id="a member whose binding cycle failed"),
    pytest.param(False, id="a new member"),
])
def test_a_member_joining_its_group_in_backoffq_after_its_backoff_takes_it_to_activeq(
    binding_failed: bool,
) -> None:
    """upstream's addToPodGroupIfExists: the entity taken out of backoffQ is requeued with
    queueAfterBackoff (requeueEntityWithQueueingStrategy), so once its backoff is over,
    flushed or not, it goes to activeQ with the member, not back to backoffQ."""
    clock = FakeClock()
    queue = make_queue(clock, group_of=_Gates.group_of)
    a, b = grouped("a"), grouped("b")
    failed = None
    if binding_failed:
        queue.add(a)
        failed = pop_now(queue)
        queue.add_placed_group_leftovers([])  # the group was placed: a's binding runs
    _queue_member_in(queue, b, BACKOFF)  # the group's failed cycle: 1 s of backoff
    clock.advance(2)  # over, not flushed yet
    if failed is None:
        queue.add(a)
    else:
        assert queue.add_unschedulable_group_member(failed, error=True)
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)
    assert queue.queued_entities()[(ACTIVE, POD_GROUP_ENTITY)] == 1


@pytest.mark.parametrize("place", [
    pytest.param(ACTIVE, id="existing pod group in activeQ (gated addition), becomes gated "
                 "and moves to unschedulableEntities"),
    pytest.param(BACKOFF, id="existing pod group in backoffQ (gated addition), becomes gated "
                 "and moves to unschedulableEntities"),
])
@pytest.mark.parametrize("binding_failed", [False, True])
def test_a_held_member_joining_its_group_moves_the_group_to_the_pool(
    place: str, binding_failed: bool,
) -> None:
    """TestAddPodGroupMember (and addPodGroupMember for a member whose binding cycle
    failed): runPreEnqueuePlugins gates the entity whole when the member it adds is held,
    so the group waits in one queue, gated, and is one entity there."""
    gates = _Gates()
    queue = queue_with(gates)
    a, c = grouped("a"), grouped("c")
    failed = None
    if binding_failed:
        queue.add(c)
        failed = pop_now(queue)
        queue.add_placed_group_leftovers([])  # the group was placed: c's binding runs
    _queue_member_in(queue, a, place)
    gates.gated.add("c")
    if failed is None:
        queue.add(c)
    else:
        assert queue.add_unschedulable_group_member(failed, error=True)
    assert (where(queue, a), where(queue, c)) == (UNSCHEDULABLE, UNSCHEDULABLE)
    held = queue.get(a.uid)
    assert held is not None and held.gated and held.gating_plugin == DYNAMIC_RESOURCES
    entities = queue.queued_entities()
    assert {q: n for (q, kind), n in entities.items() if kind == POD_GROUP_ENTITY and n} == {
        GATED: 1}


@pytest.mark.parametrize("place", [
    pytest.param(UNSCHEDULABLE, id=(
        "activate pod group in unschedulableEntities (ungated), moves pod group to activeQ")),
    pytest.param(BACKOFF, id="activate pod group in backoffQ, moves pod group to activeQ"),
])
def test_activate_pod_group_member_moves_the_whole_group(place: str) -> None:
    """TestActivatePodGroupMember: Activate looks the pod's root group up and activates the
    entity, every member of it, whichever member is named."""
    queue = make_queue(group_of=_Gates.group_of)
    a, b = grouped("a"), grouped("b")
    _queue_member_in(queue, a, place)
    queue.add(b)  # joins a
    assert (where(queue, a), where(queue, b)) == (place, place)
    queue.activate([b.uid])
    assert (where(queue, a), where(queue, b)) == (ACTIVE, ACTIVE)


def test_a_pod_of_no_group_whose_binding_failed_takes_the_pods_failure_path() -> None:
    queue = make_queue(group_of=_Gates.group_of)
    p = make_pod("p")
    queue.add(p)
    failed = pop_now(queue)
    assert queue.add_unschedulable_group_member(failed, error=True)
    assert where(queue, p) == BACKOFF and failed.consecutive_errors == 1


def test_a_member_whose_binding_failed_after_its_group_was_bound_is_retried_at_once() -> None:
    """upstream's addPodGroupMember: no entity of its group is queued, so a new one goes
    straight to activeQ; here the member is retried by the next cycle, not after a
    backoff."""
    h = gang(3, member("a"), member("b"), member("c"))
    h.ports.outcomes["c"] = [BindOutcome.FAILED]
    assert h.cycle()
    assert bound(h) == ["a", "b", "c"]
    assert h.ports.failures_of("c") != []
    assert h.where("c") == ACTIVE
    assert h.cycle()
    h.run_bindings()
    assert [key for key, _ in h.ports.binds].count("default/c") == 2
    assert h.where("c") is None
