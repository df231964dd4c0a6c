"""Cluster events: which pooled pods they move, and the replay of events that raced a cycle."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from tests.queue.fakes import (
    DYNAMIC_RESOURCES,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_RESOURCES_FIT,
    FakeClock,
    FakePod,
    always,
    default_hints,
    fail,
    make_pod,
    make_queue,
    park,
    pop_now,
    registered,
    revised,
    where,
)

NODE_LABEL_CHANGE = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL, "NodeLabelChange")
NODE_ALLOCATABLE_CHANGE = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_ALLOCATABLE)
PDB_CHANGE = ClusterEvent(Resource.PDB, Action.ALL)


def _raise(pod: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("broken hint")


def _nrf(hint: Callable[[Any, Any, Any], QueueingHint]) -> dict[str, list[ClusterEventWithHint]]:
    hints = default_hints()
    hints[NODE_RESOURCES_FIT] = [
        registered(Resource.POD, Action.DELETE, hint),
        registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE, hint),
    ]
    return hints


@pytest.mark.parametrize(
    ("rejectors", "pending", "event", "hints", "expected"),
    [
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            ASSIGNED_POD_DELETE,
            None,
            BACKOFF,
            id="a NodeResourcesFit rejection moves on AssignedPodDelete (still backing off)",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            NODE_LABEL_CHANGE,
            None,
            UNSCHEDULABLE,
            id="but not on a node label change",
        ),
        pytest.param(
            [NODE_AFFINITY],
            [],
            NODE_LABEL_CHANGE,
            None,
            BACKOFF,
            id="a node label change moves a NodeAffinity rejection",
        ),
        pytest.param(
            [NODE_AFFINITY],
            [],
            ASSIGNED_POD_DELETE,
            None,
            UNSCHEDULABLE,
            id="an event registered only by a plugin that did not reject the pod moves nothing",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            NODE_ALLOCATABLE_CHANGE,
            _nrf(always(QueueingHint.SKIP)),
            UNSCHEDULABLE,
            id="a hint answering Skip keeps the pod pooled",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            NODE_ALLOCATABLE_CHANGE,
            _nrf(_raise),
            BACKOFF,
            id="a hint that raises counts as Queue",
        ),
        pytest.param(
            [NODE_AFFINITY, NODE_RESOURCES_FIT],
            [],
            NODE_ADD,
            _nrf(always(QueueingHint.SKIP)),
            BACKOFF,
            id="one rejecting plugin answering Queue is enough",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            UNSCHEDULABLE_TIMEOUT,
            None,
            BACKOFF,
            id="a wildcard event moves any pod",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [DYNAMIC_RESOURCES],
            NODE_ADD,
            None,
            ACTIVE,
            id="Queue from a Pending plugin skips the backoff",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [DYNAMIC_RESOURCES],
            ASSIGNED_POD_DELETE,
            None,
            BACKOFF,
            id="Queue from only the Unschedulable plugin still backs off",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            PDB_CHANGE,
            None,
            UNSCHEDULABLE,
            id="an event no plugin registered is ignored",
        ),
    ],
)
def test_move_all_respects_registrations_and_hints(
    rejectors: list[str],
    pending: list[str],
    event: ClusterEvent,
    hints: dict[str, list[ClusterEventWithHint]] | None,
    expected: str,
) -> None:
    queue = make_queue(hints=hints)
    qpi = park(queue, make_pod("a"), rejectors, pending=pending)
    assert where(queue, qpi.pod) == UNSCHEDULABLE
    queue.move_all_to_active_or_backoff(event)
    assert where(queue, qpi.pod) == expected


def test_a_moved_pod_whose_backoff_is_over_goes_straight_to_active() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    qpi = park(queue, make_pod("a"), [NODE_RESOURCES_FIT])
    clock.advance(2.0)
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    assert where(queue, qpi.pod) == ACTIVE


def test_hints_receive_the_pod_and_the_event_objects() -> None:
    seen: list[tuple[str, object, object]] = []

    def hint(pod: FakePod, old: object, new: object) -> QueueingHint:
        seen.append((pod.name, old, new))
        return QueueingHint.SKIP

    queue = make_queue(hints={NODE_AFFINITY: [registered(Resource.NODE, Action.ADD, hint)]})
    park(queue, make_pod("a"), [NODE_AFFINITY])
    park(queue, make_pod("b"), [NODE_RESOURCES_FIT])
    queue.move_all_to_active_or_backoff(NODE_ADD, None, {"kind": "Node"})
    assert seen == [("a", None, {"kind": "Node"})]


def test_pre_check_narrows_the_candidates() -> None:
    queue = make_queue()
    low = park(queue, make_pod("low", priority=1), [NODE_RESOURCES_FIT])
    high = park(queue, make_pod("high", priority=9), [NODE_RESOURCES_FIT])
    queue.move_all_to_active_or_backoff(
        ASSIGNED_POD_DELETE, pre_check=lambda pod: pod.priority <= 5
    )
    assert (where(queue, low.pod), where(queue, high.pod)) == (BACKOFF, UNSCHEDULABLE)


@pytest.mark.parametrize(
    ("event", "interesting"),
    [
        pytest.param(ASSIGNED_POD_DELETE, True, id="a bound pod deleted: Pod Delete registrations"),
        pytest.param(ASSIGNED_POD_ADD, True, id="a bound pod added: InterPodAffinity"),
        pytest.param(NODE_LABEL_CHANGE, True, id="a node label change: NodeAffinity"),
        pytest.param(PDB_CHANGE, False, id="a PDB change: nobody registered it"),
        pytest.param(UNSCHEDULABLE_TIMEOUT, True, id="wildcard events always are"),
    ],
)
def test_is_event_of_interest(event: ClusterEvent, interesting: bool) -> None:
    assert make_queue().is_event_of_interest(event) is interesting


def test_hints_run_without_the_queue_lock() -> None:
    calls: list[dict[str, list[str]]] = []
    queue_box: list[Any] = []

    def reentrant(pod: FakePod, old: object, new: object) -> QueueingHint:
        calls.append(queue_box[0].pending_pods())  # would deadlock if the lock were held
        return QueueingHint.QUEUE

    queue = make_queue(hints={NODE_AFFINITY: [registered(Resource.NODE, Action.ADD, reentrant)]})
    queue_box.append(queue)
    park(queue, make_pod("a"), [NODE_AFFINITY])
    queue.add(make_pod("b"))
    b = pop_now(queue)

    def events_then_failure() -> None:
        queue.move_all_to_active_or_backoff(NODE_ADD)
        fail(queue, b, [NODE_AFFINITY])

    worker = threading.Thread(target=events_then_failure, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "a hint was called with the queue lock held"
    assert len(calls) == 2  # once for the pooled pod, once replaying for the in-flight one
    assert where(queue, b.pod) == BACKOFF


# -- in-flight replay ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rejectors", "pending", "event", "expected"),
    [
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            ASSIGNED_POD_DELETE,
            BACKOFF,
            id="an event during the cycle keeps the pod out of the pool",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [],
            NODE_LABEL_CHANGE,
            UNSCHEDULABLE,
            id="an event the rejector did not register parks it",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            [DYNAMIC_RESOURCES],
            NODE_ADD,
            ACTIVE,
            id="an event for the Pending plugin sends it to activeQ at once",
        ),
        pytest.param(
            [],
            [],
            NODE_LABEL_CHANGE,
            BACKOFF,
            id="an error needs no event: it always backs off",
        ),
    ],
)
def test_events_during_the_cycle_are_replayed(
    rejectors: list[str], pending: list[str], event: ClusterEvent, expected: str
) -> None:
    queue = make_queue()
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    queue.move_all_to_active_or_backoff(event)
    fail(queue, qpi, rejectors, pending=pending)
    assert where(queue, qpi.pod) == expected


def test_only_events_after_the_pod_was_popped_are_replayed() -> None:
    queue = make_queue()
    queue.add(make_pod("first"))
    first = pop_now(queue)
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)  # during first's cycle only
    queue.add(make_pod("second"))
    second = pop_now(queue)
    queue.move_all_to_active_or_backoff(NODE_LABEL_CHANGE)  # during both
    fail(queue, second, [NODE_RESOURCES_FIT])
    fail(queue, first, [NODE_RESOURCES_FIT])
    assert (where(queue, first.pod), where(queue, second.pod)) == (BACKOFF, UNSCHEDULABLE)
    assert queue.in_flight() == []
    assert len(queue._events) == 0  # the log is pruned once nobody is in flight


def test_an_update_of_the_pod_itself_during_its_cycle_is_replayed() -> None:
    queue = make_queue()
    old = make_pod("a", labels={"app": "x"})
    queue.add(old)
    qpi = pop_now(queue)

    def relabel(raw: dict[str, Any]) -> None:
        raw["metadata"]["labels"]["app"] = "y"

    new = revised(old, relabel)
    queue.update(old, new)
    assert where(queue, old) is None  # not queued twice while in flight
    fail(queue, qpi, [INTER_POD_AFFINITY])
    assert where(queue, new) == BACKOFF
    assert qpi.pod is new  # the newest version is what gets requeued


def test_a_late_event_during_the_replay_is_considered() -> None:
    queue_box: list[Any] = []

    def skip_and_trigger(pod: FakePod, old: object, new: object) -> QueueingHint:
        if old is None:  # the first event: raise the decisive one while we evaluate
            queue_box[0].move_all_to_active_or_backoff(NODE_LABEL_CHANGE, "late", "late")
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    hints = {
        NODE_AFFINITY: [
            registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL, skip_and_trigger)
        ]
    }
    queue = make_queue(hints=hints)
    queue_box.append(queue)
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD)
    fail(queue, qpi, [NODE_AFFINITY])
    assert where(queue, qpi.pod) == BACKOFF
