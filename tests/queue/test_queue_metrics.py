"""What the queue reports for ``scheduler_pending_pods``, ``scheduler_queued_entities``,
``scheduler_unschedulable_pods`` and ``scheduler_queue_incoming_pods_total`` (upstream's
queue/event/type labels)."""

from __future__ import annotations

from scheduler.framework.events import NODE_ADD
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
    NODE_RESOURCES_FIT,
    SCHEDULING_GATES,
    FakeClock,
    FakePod,
    fail,
    make_pod,
    make_queue,
    park,
    pop_now,
)


def _gates(pod: FakePod) -> str | None:
    return SCHEDULING_GATES if pod.raw["spec"]["schedulingGates"] else None


def test_every_entry_is_reported_with_its_queue_and_event() -> None:
    clock = FakeClock()
    seen: list[tuple[str, str]] = []
    queue = make_queue(clock, pre_enqueue=_gates,
                       on_incoming=lambda q, event: seen.append((q, event)))
    queue.add(make_pod("gated", gates=["example.com/wait"]))
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.add(make_pod("new"))
    errored = pop_now(queue)
    fail(queue, errored, error=True)
    queue.move_all_to_active_or_backoff(NODE_ADD)
    clock.advance(30)
    queue.flush_backoff_completed()
    assert seen == [
        (UNSCHEDULABLE, "UnscheduledPodAdd"),  # gated
        (ACTIVE, "UnscheduledPodAdd"),
        (UNSCHEDULABLE, "ScheduleAttemptFailure"),
        (ACTIVE, "UnscheduledPodAdd"),
        (BACKOFF, "ScheduleAttemptFailure"),  # an error waits out its backoff
        (BACKOFF, "NodeAdd"),  # NodeResourcesFit's pod, still backing off
        (ACTIVE, "BackoffComplete"),
        (ACTIVE, "BackoffComplete"),
    ]
    queue.activate(["uid-gated"])  # gated: stays in the pool, nothing enters a queue
    assert len(seen) == 8


def test_a_pod_popped_from_backoff_enters_active_as_pop_from_backoffq() -> None:
    clock = FakeClock()
    seen: list[tuple[str, str]] = []
    queue = make_queue(clock, on_incoming=lambda q, event: seen.append((q, event)))
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.move_all_to_active_or_backoff(NODE_ADD)
    assert pop_now(queue).pod.name == "big"  # activeQ is empty: taken from backoffQ
    assert seen[-2:] == [(BACKOFF, "NodeAdd"), (ACTIVE, "PopFromBackoffQ")]


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

    queue = make_queue(pre_enqueue=gate, group_of=_group)
    park(queue, make_pod("big"), [NODE_RESOURCES_FIT])
    queue.add(make_pod("single"))
    for name, group in (("g1", "g"), ("g2", "g"), ("h1", "h"), ("x1", "x"), ("x2", "x")):
        queue.add(make_pod(name, labels={"group": group}))

    def incomplete(pod: FakePod) -> bool:
        return _group(pod) in unobserved

    assert queue.pending_counts(incomplete) == {
        ACTIVE: 3, BACKOFF: 0, UNSCHEDULABLE: 1, GATED: 1, INCOMPLETE: 2, PENDING: 0}
    assert queue.queued_entities(incomplete) == {
        (ACTIVE, POD_ENTITY): 1, (ACTIVE, POD_GROUP_ENTITY): 1,
        (BACKOFF, POD_ENTITY): 0, (BACKOFF, POD_GROUP_ENTITY): 0,
        (UNSCHEDULABLE, POD_ENTITY): 1, (UNSCHEDULABLE, POD_GROUP_ENTITY): 0,
        (GATED, POD_ENTITY): 0, (GATED, POD_GROUP_ENTITY): 1,
    }
    # Without the question, the held members are all gated, each group one entity.
    assert queue.pending_counts()[GATED] == 3
    assert queue.queued_entities()[(GATED, POD_GROUP_ENTITY)] == 2
