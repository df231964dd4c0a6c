"""What the queue reports for ``scheduler_pending_pods``, ``scheduler_queued_entities``,
``scheduler_unschedulable_pods``, ``scheduler_queue_incoming_pods_total`` and
``scheduler_queue_incoming_entities_total`` (upstream's queue/event/type labels)."""

from __future__ import annotations

import pytest

from scheduler.framework.events import (
    NODE_ADD,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from scheduler.queue.scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    INCOMPLETE,
    PENDING,
    POD_ENTITY,
    POD_GROUP_ENTITY,
    UNSCHEDULABLE,
)
from tests.queue.fakes import (
    DYNAMIC_RESOURCES,
    NODE_RESOURCES_FIT,
    SCHEDULING_GATES,
    FakeClock,
    FakePod,
    Queue,
    default_hints,
    fail,
    make_pod,
    make_queue,
    park,
    pop_group,
    pop_now,
    registered,
)


def _gates(pod: FakePod) -> str | None:
    return SCHEDULING_GATES if pod.raw["spec"]["schedulingGates"] else None


def test_every_entry_is_reported_with_its_queue_and_event() -> None:
    """Every pod entering a queue, and, as upstream's recordIncomingEntitiesMetrics, as an
    entity when it is new to the queues (no previous strategy) or goes elsewhere than its
    queueing hint's queue: a pod parked by its failure or sent to backoffQ by a Queue hint
    is no new entity there."""
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(clock, pre_enqueue=_gates,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    queue.add(make_pod("gated", gates=["example.com/wait"]))
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.add(make_pod("new"))
    errored = pop_now(queue)
    fail(queue, errored, error=True)
    queue.move_all_to_active_or_backoff(NODE_ADD)
    clock.advance(30)
    queue.flush_backoff_completed()
    assert seen == [
        (UNSCHEDULABLE, "UnscheduledPodAdd", POD_ENTITY),  # gated
        (ACTIVE, "UnscheduledPodAdd", POD_ENTITY),
        (UNSCHEDULABLE, "ScheduleAttemptFailure", ""),
        (ACTIVE, "UnscheduledPodAdd", POD_ENTITY),
        (BACKOFF, "ScheduleAttemptFailure", ""),  # an error waits out its backoff
        (BACKOFF, "NodeAdd", ""),  # NodeResourcesFit's pod, still backing off
        (ACTIVE, "BackoffComplete", POD_ENTITY),
        (ACTIVE, "BackoffComplete", POD_ENTITY),
    ]
    queue.activate(["uid-gated"])  # gated: stays in the pool, nothing enters a queue
    assert len(seen) == 8


def test_a_pod_popped_from_backoff_enters_active_as_pop_from_backoffq() -> None:
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(clock,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.move_all_to_active_or_backoff(NODE_ADD)
    assert pop_now(queue).pod.name == "big"  # activeQ is empty: taken from backoffQ
    assert seen[-2:] == [(BACKOFF, "NodeAdd", ""), (ACTIVE, "PopFromBackoffQ", POD_ENTITY)]


def test_pending_counts_and_rejections_per_plugin() -> None:
    clock = FakeClock()
    queue = make_queue(clock, pre_enqueue=_gates)
    queue.add(make_pod("gated", gates=["example.com/wait"]))
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    park(queue, make_pod("bigger"), [NODE_RESOURCES_FIT, "NodeAffinity"])
    queue.add(make_pod("new"))
    assert queue.pending_counts() == {ACTIVE: 1, BACKOFF: 0, UNSCHEDULABLE: 2, GATED: 1}
    assert queue.rejections(lambda pod: "p") == {
        (NODE_RESOURCES_FIT, "p"): 2, ("NodeAffinity", "p"): 1, (SCHEDULING_GATES, "p"): 1,
    }
    # A popped pod no longer counts against its last rejectors (upstream decrements on Pop).
    queue.activate(["uid-big"])
    pop_now(queue)
    pop_now(queue)
    assert queue.rejections(lambda pod: "p") == {
        (NODE_RESOURCES_FIT, "p"): 1, ("NodeAffinity", "p"): 1, (SCHEDULING_GATES, "p"): 1,
    }


def _group(pod: FakePod) -> str | None:
    return pod.raw["metadata"]["labels"].get("group")


def test_pod_group_members_count_as_one_entity_and_incomplete_ones_apart() -> None:
    """scheduler_pending_pods' 'incomplete' (upstream's incompletePodGroupPods: members whose
    PodGroup is not observed, in no queue) and scheduler_queued_entities, where a group's
    members waiting in one queue are one 'podgroup' entity."""
    unobserved = {"x"}
    held = {"x", "h"}

    def gate(pod: FakePod) -> str | None:
        return "GangScheduling" if _group(pod) in held else None

    def incomplete(pod: FakePod) -> bool:
        return _group(pod) in unobserved

    queue = make_queue(pre_enqueue=gate, group_of=_group, incomplete=incomplete)
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.add(make_pod("single"))
    for name, group in (("g1", "g"), ("g2", "g"), ("h1", "h"), ("x1", "x"), ("x2", "x")):
        queue.add(make_pod(name, labels={"group": group}))

    assert queue.pending_counts() == {
        ACTIVE: 3, BACKOFF: 0, UNSCHEDULABLE: 1, GATED: 1, INCOMPLETE: 2, PENDING: 0}
    assert queue.queued_entities() == {
        (ACTIVE, POD_ENTITY): 1, (ACTIVE, POD_GROUP_ENTITY): 1,
        (BACKOFF, POD_ENTITY): 0, (BACKOFF, POD_GROUP_ENTITY): 0,
        (UNSCHEDULABLE, POD_ENTITY): 1, (UNSCHEDULABLE, POD_GROUP_ENTITY): 0,
        (GATED, POD_ENTITY): 0, (GATED, POD_GROUP_ENTITY): 1,
    }
    # Its PodGroup observed, group x's members are gated (by its quorum, say).
    unobserved.clear()
    assert queue.pending_counts()[GATED] == 3
    assert queue.queued_entities()[(GATED, POD_GROUP_ENTITY)] == 2


def test_incoming_entities_metrics_members_of_an_unobserved_pod_group_enter_no_queue() -> None:
    """upstream's addPodGroupMember keeps a member whose PodGroup is not observed in
    incompletePodGroupPods, no queue: scheduler_queue_incoming_pods_total and
    _entities_total count nothing for it; AddPodGroup then adds the members
    (addPodGroupMember: UnscheduledPodAdd), the group one entity entering activeQ: the
    first makes it (one pod), the second joins it (addToPodGroupIfExists), counted with the
    entity's Size() (two pods)."""
    unobserved = {"g"}
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(
        pre_enqueue=lambda p: "GangScheduling" if _group(p) in unobserved else None,
        group_of=_group, incomplete=lambda p: _group(p) in unobserved,
        on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    pods = [make_pod(name, labels={"group": "g"}) for name in ("a", "b")]
    for p in pods:
        queue.add(p)
    assert seen == [] and queue.pending_counts()[INCOMPLETE] == 2
    unobserved.clear()  # the PodGroup comes: its event moves the members
    queue.move_all_to_active_or_backoff(ClusterEvent(Resource.WILDCARD, Action.ALL))
    assert seen == [(ACTIVE, "UnscheduledPodAdd", POD_GROUP_ENTITY),
                    (ACTIVE, "UnscheduledPodAdd", ""), (ACTIVE, "UnscheduledPodAdd", "")]


def _entities(seen: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """scheduler_queue_incoming_entities_total{queue,event,type} from the entries heard."""
    counts: dict[tuple[str, str, str], int] = {}
    for queue, event, entity in seen:
        if entity:
            counts[(queue, event, entity)] = counts.get((queue, event, entity), 0) + 1
    return counts


def _heard() -> tuple[list[tuple[str, str, str]], Queue]:
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(group_of=_group,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    return seen, queue


def test_incoming_entities_metrics_add_all_pods_to_active_queue() -> None:
    """TestIncomingEntitiesMetrics "add all pods to active queue": a pod and a group of
    three are two entities; each member joining the group's entity in activeQ counts its
    Size() (recordIncomingEntitiesMetrics): 1 + 2 + 3 incoming pods for the group."""
    seen, queue = _heard()
    queue.add(make_pod("pod1"))
    for name in ("pod2", "pod3", "pod4"):
        queue.add(make_pod(name, labels={"group": "pg-1"}))
    assert _entities(seen) == {
        (ACTIVE, "UnscheduledPodAdd", POD_ENTITY): 1,
        (ACTIVE, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1,
    }
    assert len(seen) == 1 + 6


def test_incoming_entities_metrics_podgroup_failure_requeued_to_backoff() -> None:
    """TestIncomingEntitiesMetrics "add pods of a podgroup to active queue, simulate
    scheduling failure attempt, and requeue podgroup to backoff queue"."""
    seen, queue = _heard()
    pods = [make_pod(name, labels={"group": "pg-1"}) for name in ("pod2", "pod3", "pod4")]
    for p in pods:
        queue.add(p)
    members = pop_group(queue, pods, NODE_RESOURCES_FIT)
    assert queue.add_failed_group(members, error=False) == 3
    assert _entities(seen) == {
        (ACTIVE, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1,
        (BACKOFF, "ScheduleAttemptFailure", POD_GROUP_ENTITY): 1,
    }
    assert seen.count((BACKOFF, "ScheduleAttemptFailure", "")) == 2  # the pods, counted


def test_incoming_entities_metrics_add_individual_pod_to_active_queue() -> None:
    """TestIncomingEntitiesMetrics "add individual pod to active queue": its failure parks
    it in the pool (Skip), which is no new entity there."""
    seen, queue = _heard()
    park(queue, make_pod("pod1"), ["unschedulable_plugin"])
    assert _entities(seen) == {(ACTIVE, "UnscheduledPodAdd", POD_ENTITY): 1}


def test_incoming_entities_a_group_moved_or_flushed_together_is_one_entity() -> None:
    """A group's members moved by one call (an event, the backoff flush, an activation) are
    one entity entering the queue, as upstream's entity moves whole."""
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(clock, group_of=_group,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    pods = [make_pod(name, labels={"group": "g"}) for name in ("a", "b")]
    for p in pods:
        queue.add(p)
    members = pop_group(queue, pods)
    queue.add_failed_group(members, error=True)
    seen.clear()
    clock.advance(30)
    queue.flush_backoff_completed()
    assert _entities(seen) == {(ACTIVE, "BackoffComplete", POD_GROUP_ENTITY): 1}
    assert len(seen) == 2


def test_a_group_popped_from_backoffq_enters_activeq_with_all_its_members() -> None:
    """upstream's activeQueue pop from backoffQ records the entity's size as incoming pods
    (PopFromBackoffQ) and the entity once: here the members taken along count too."""
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(clock, group_of=_group,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    pods = [make_pod(name, labels={"group": "g"}) for name in ("a", "b", "c")]
    for p in pods:
        queue.add(p)
    members = pop_group(queue, pods, NODE_RESOURCES_FIT)
    queue.add_failed_group(members, error=False)
    seen.clear()
    first = pop_now(queue)  # activeQ is empty: the group comes from backoffQ
    assert len(queue.take(p.uid for p in pods if p.uid != first.uid)) == 2
    assert seen == [(ACTIVE, "PopFromBackoffQ", POD_GROUP_ENTITY),
                    (ACTIVE, "PopFromBackoffQ", ""), (ACTIVE, "PopFromBackoffQ", "")]


_POD_GROUP_ADD = ClusterEvent(Resource.POD_GROUP, Action.ADD, "PodGroupAdd")


def _gang_hints() -> dict[str, list[ClusterEventWithHint]]:
    """The default registrations and GangScheduling's PodGroup/Add (hint Queue)."""
    return {**default_hints(), "GangScheduling": [registered(Resource.POD_GROUP, Action.ADD)]}


def _incoming_pods(seen: list[tuple[str, str, str]]) -> dict[tuple[str, str], int]:
    """scheduler_queue_incoming_pods_total{queue,event} from the entries heard."""
    counts: dict[tuple[str, str], int] = {}
    for queue, event, _ in seen:
        counts[(queue, event)] = counts.get((queue, event), 0) + 1
    return counts


def test_add_pod_group_counts_members_another_plugin_holds_as_they_enter_the_pool() -> None:
    """upstream's AddPodGroup adds the members of incompletePodGroupPods through
    addPodGroupMember whatever holds them: members DynamicResources' PreEnqueue holds (no
    claim yet; its registrations ignore PodGroups) enter unschedulableEntities then, an
    UnscheduledPodAdd, the group one entity there; the second joins the entity the first
    made (addToPodGroupIfExists), which recordIncomingEntitiesMetrics counts whole
    (entity.Size()): 1 + 2 incoming pods."""
    unobserved = {"g", "h"}
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(
        hints=_gang_hints(), pre_enqueue=lambda p: DYNAMIC_RESOURCES,
        group_of=_group, incomplete=lambda p: _group(p) in unobserved,
        on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    for name in ("a", "b"):
        queue.add(make_pod(name, labels={"group": "g"}))
    queue.add(make_pod("other", labels={"group": "h"}))  # another unobserved group's member
    assert seen == []
    unobserved.discard("g")  # g's PodGroup comes: its event moves nothing
    queue.move_all_to_active_or_backoff(_POD_GROUP_ADD)
    assert _entities(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1}
    assert _incoming_pods(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd"): 3}
    assert queue.pending_counts()[INCOMPLETE] == 1
    seen.clear()
    queue.move_all_to_active_or_backoff(_POD_GROUP_ADD)
    assert seen == []  # counted once


def test_add_pod_group_counts_members_it_leaves_held_and_the_event_that_moves_them_back(
) -> None:
    """upstream's addPodGroup handler: AddPodGroup adds the members (UnscheduledPodAdd, to
    unschedulableEntities while GangScheduling's PreEnqueue still holds them: 1 + 2 pods,
    one entity), then MoveAllToActiveOrBackoffQueue(PodGroupAdd) takes the entity out
    (GangScheduling's hint: Queue) and PreEnqueue puts it back: its Size() and one entity
    more, as that event."""
    unobserved = {"g"}
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(
        hints=_gang_hints(), pre_enqueue=lambda p: "GangScheduling",
        group_of=_group, incomplete=lambda p: _group(p) in unobserved,
        on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    for name in ("a", "b"):
        queue.add(make_pod(name, labels={"group": "g"}))
    unobserved.clear()
    queue.move_all_to_active_or_backoff(_POD_GROUP_ADD)
    assert _entities(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1,
                               (UNSCHEDULABLE, "PodGroupAdd", POD_GROUP_ENTITY): 1}
    assert _incoming_pods(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd"): 3,
                                    (UNSCHEDULABLE, "PodGroupAdd"): 2}


def _queue_group_in(queue: Queue, pods: list[FakePod], place: str) -> None:
    """Add ``pods`` (one group) and, for backoffQ or the pool, fail their cycle there."""
    for p in pods:
        queue.add(p)
    if place == ACTIVE:
        return
    members = pop_group(queue, pods, NODE_RESOURCES_FIT)
    if place == UNSCHEDULABLE:
        for qpi in members:
            queue.add_unschedulable_if_not_present(qpi)
        assert queue.pop(timeout=0) is None  # the cycle is over
    else:
        queue.add_failed_group(members, error=False)


@pytest.mark.parametrize(
    ("place", "gated", "after_backoff", "expected", "new_entity"),
    [
        pytest.param(ACTIVE, False, False, ACTIVE, False, id=(
            "existing pod group in activeQ (ungated addition), stays in activeQ")),
        pytest.param(ACTIVE, True, False, UNSCHEDULABLE, True, id=(
            "existing pod group in activeQ (gated addition), becomes gated and moves to "
            "unschedulableEntities")),
        pytest.param(BACKOFF, False, False, BACKOFF, False, id=(
            "existing pod group in backoffQ (ungated addition), stays in backoffQ")),
        pytest.param(BACKOFF, True, False, UNSCHEDULABLE, True, id=(
            "existing pod group in backoffQ (gated addition), becomes gated and moves to "
            "unschedulableEntities")),
        pytest.param(BACKOFF, False, True, ACTIVE, True, id=(
            "existing pod group in backoffQ past its backoff, moves to activeQ")),
        pytest.param(UNSCHEDULABLE, False, False, UNSCHEDULABLE, False, id=(
            "existing pod group in unschedulableEntities (ungated addition), stays in "
            "unschedulableEntities as ungated")),
    ],
)
def test_add_pod_group_member_counts_the_whole_group_as_incoming(
    place: str, gated: bool, after_backoff: bool, expected: str, new_entity: bool
) -> None:
    """TestAddPodGroupMember's cases, counted: upstream's addToPodGroupIfExists requeues
    the group entity with the member added (requeueEntityWithQueueingStrategy), and
    recordIncomingEntitiesMetrics counts its Size() as incoming pods (UnscheduledPodAdd),
    and an entity only where it goes to another queue than the one it was in."""
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    queue = make_queue(
        clock, pre_enqueue=lambda p: DYNAMIC_RESOURCES if p.name == "c" and gated else None,
        group_of=_group, on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    _queue_group_in(queue, [make_pod(n, labels={"group": "g"}) for n in ("a", "b")], place)
    clock.advance(2 if after_backoff else 0.5)
    seen.clear()
    queue.add(make_pod("c", labels={"group": "g"}))
    assert _incoming_pods(seen) == {(expected, "UnscheduledPodAdd"): 3}
    assert _entities(seen) == (
        {(expected, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1} if new_entity else {})


def test_a_member_completing_its_held_group_counts_it_in_the_pool_then_in_activeq() -> None:
    """upstream's addPodToSchedulingQueue: Add joins the newcomer to its group's gated
    entity in unschedulableEntities (addToPodGroupIfExists, queueSkip: no PreEnqueue, the
    entity's Size() counted there), then MoveAllToActiveOrBackoffQueue(UnscheduledPodAdd)
    moves the entity, its quorum complete, to activeQ: its Size() and one entity there."""
    added: list[str] = []

    def quorum(p: FakePod) -> str | None:
        return "GangScheduling" if len(added) < 3 else None

    seen: list[tuple[str, str, str]] = []
    queue = make_queue(pre_enqueue=quorum, group_of=_group,
                       on_incoming=lambda q, event, entity: seen.append((q, event, entity)))
    for name in ("a", "b"):
        added.append(name)
        queue.add(make_pod(name, labels={"group": "g"}))
    assert _incoming_pods(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd"): 1 + 2}
    seen.clear()
    added.append("c")
    queue.add(make_pod("c", labels={"group": "g"}))
    assert _incoming_pods(seen) == {(UNSCHEDULABLE, "UnscheduledPodAdd"): 3,
                                    (ACTIVE, "UnscheduledPodAdd"): 3}
    assert _entities(seen) == {(ACTIVE, "UnscheduledPodAdd", POD_GROUP_ENTITY): 1}
