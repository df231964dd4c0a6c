"""Backoff: durations from the failure counters, 1 s windows, and the two backoff queues."""

from __future__ import annotations

import pytest

from scheduler.framework.events import ASSIGNED_POD_DELETE, UNSCHEDULABLE_TIMEOUT
from scheduler.queue import QueuedPodInfo
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF
from tests.queue.fakes import (
    NODE_RESOURCES_FIT,
    QPI,
    START,
    FakeClock,
    fail,
    make_pod,
    make_queue,
    pop_now,
    where,
)


def qpi_with(unschedulable: int = 0, errors: int = 0, timestamp: float = START) -> QPI:
    return QueuedPodInfo(
        pod=make_pod("p"),
        timestamp=timestamp,
        unschedulable_count=unschedulable,
        consecutive_errors=errors,
    )


@pytest.mark.parametrize(
    ("unschedulable", "errors", "expected"),
    [
        pytest.param(0, 0, 0.0, id="no backoff before the first failure"),
        pytest.param(1, 0, 1.0, id="first unschedulable attempt backs off the initial 1 s"),
        pytest.param(2, 0, 2.0, id="second doubles it"),
        pytest.param(3, 0, 4.0, id="third doubles again"),
        pytest.param(4, 0, 8.0, id="fourth reaches 8 s"),
        pytest.param(5, 0, 10.0, id="fifth is capped at the 10 s maximum"),
        pytest.param(6, 0, 10.0, id="and it stays at the maximum"),
        pytest.param(500, 0, 10.0, id="a huge count neither overflows nor exceeds the maximum"),
        pytest.param(0, 3, 4.0, id="errors back off by the same sequence"),
        pytest.param(
            7,
            1,
            1.0,
            id="a recent error counts by consecutive errors, not by a long unschedulable history",
        ),
    ],
)
def test_backoff_duration(unschedulable: int, errors: int, expected: float) -> None:
    queue = make_queue()
    assert queue.backoff_duration(qpi_with(unschedulable, errors)) == expected


def test_zero_max_backoff_disables_backoff() -> None:
    queue = make_queue(max_backoff=0.0)
    qpi = qpi_with(unschedulable=3)
    assert queue.backoff_duration(qpi) == 0.0
    assert queue.backoff_expiry(qpi) is None
    assert not queue.is_backing_off(qpi)


@pytest.mark.parametrize(
    ("timestamp", "now", "backing_off"),
    [
        pytest.param(1000.0, 1000.5, True, id="during the backoff"),
        pytest.param(1000.0, 1001.5, True, id="the expiry window (1001) is still the current one"),
        pytest.param(1000.0, 1002.0, False, id="over once the next window starts"),
        pytest.param(1000.9, 1001.95, True, id="expiry 1001.9 truncates to window 1001"),
        pytest.param(1000.9, 1002.0, False, id="so it is over at 1002 like the others of 1001"),
    ],
)
def test_backoff_expiry_is_aligned_to_one_second_windows(
    timestamp: float, now: float, backing_off: bool
) -> None:
    queue = make_queue()
    qpi = qpi_with(unschedulable=1, timestamp=timestamp)
    assert queue.backoff_expiry(qpi) == 1001.0
    assert queue.is_backing_off(qpi, now) is backing_off


def test_unschedulable_sequence_through_the_queue_is_1_2_4_8_10_10() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("p"))
    durations = []
    for _ in range(6):
        qpi = pop_now(queue)
        # An event during the attempt sends it to backoffQ rather than the pool.
        queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
        fail(queue, qpi, [NODE_RESOURCES_FIT])
        assert where(queue, qpi.pod) == BACKOFF
        durations.append(queue.backoff_duration(qpi))
        clock.advance(0.5)
    assert durations == [1, 2, 4, 8, 10, 10]
    assert qpi.attempts == 6 and qpi.unschedulable_count == 6 and qpi.consecutive_errors == 0


def test_error_backoff_sequence_and_reset_by_an_unschedulable_attempt() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("p"))
    durations = []
    for _ in range(4):
        qpi = pop_now(queue)
        assert fail(queue, qpi, [NODE_RESOURCES_FIT], error=True)  # error: rejectors dropped
        assert qpi.unschedulable_plugins == set()
        durations.append(queue.backoff_duration(qpi))
        # The error backoffQ is never popped directly: wait it out and flush.
        assert queue.pop(timeout=0) is None
        clock.advance(queue.backoff_duration(qpi) + 1)
        queue.flush_backoff_completed()
        assert where(queue, qpi.pod) == ACTIVE
    assert durations == [1, 2, 4, 8]
    assert qpi.consecutive_errors == 4 and qpi.unschedulable_count == 0

    qpi = pop_now(queue)
    fail(queue, qpi, [NODE_RESOURCES_FIT])
    assert (qpi.consecutive_errors, qpi.unschedulable_count) == (0, 1)
    assert queue.backoff_duration(qpi) == 1.0


def test_a_failure_without_rejector_plugins_counts_as_an_error() -> None:
    queue = make_queue()
    queue.add(make_pod("p"))
    qpi = pop_now(queue)
    fail(queue, qpi)
    assert (qpi.consecutive_errors, qpi.unschedulable_count) == (1, 0)
    assert where(queue, qpi.pod) == BACKOFF  # the error backoffQ, listed under backoff
    assert queue.pop(timeout=0) is None


def test_pop_falls_back_to_the_backoff_head_when_active_is_empty() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in (("low", 1), ("high", 5)):
        queue.add(make_pod(name, priority=priority))
    first, second = pop_now(queue), pop_now(queue)
    assert (first.key, second.key) == ("default/high", "default/low")
    # Both fail in the same 1 s window after an event; "low" fails first but "high" has the
    # higher priority, and within a window the backoffQ is ordered like activeQ.
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    fail(queue, second, [NODE_RESOURCES_FIT])
    clock.advance(0.3)
    fail(queue, first, [NODE_RESOURCES_FIT])
    assert queue.pending_pods()[BACKOFF] == ["default/high", "default/low"]
    assert queue.is_backing_off(first)
    popped = pop_now(queue)
    assert popped is first and popped.attempts == 2


def test_backoff_windows_order_before_priority() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("low", priority=1))
    low = pop_now(queue)
    queue.move_all_to_active_or_backoff(UNSCHEDULABLE_TIMEOUT)
    fail(queue, low, [NODE_RESOURCES_FIT])  # window 1001
    clock.advance(1.0)
    queue.add(make_pod("high", priority=5))
    high = pop_now(queue)
    queue.move_all_to_active_or_backoff(UNSCHEDULABLE_TIMEOUT)
    fail(queue, high, [NODE_RESOURCES_FIT])  # window 1002
    assert queue.pending_pods()[BACKOFF] == ["default/low", "default/high"]


def test_flush_moves_only_pods_whose_backoff_is_over() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name in ("early", "late"):
        queue.add(make_pod(name))
    early, late = pop_now(queue), pop_now(queue)
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    fail(queue, early, [NODE_RESOURCES_FIT])  # expiry window 1001
    late.consecutive_errors = 2
    fail(queue, late, error=True)  # third error in a row: 4 s, error backoffQ, window 1004
    clock.now = 1001.99
    queue.flush_backoff_completed()
    assert queue.pending_pods()[ACTIVE] == []
    clock.now = 1002.0
    queue.flush_backoff_completed()
    assert queue.pending_pods() == {
        ACTIVE: ["default/early"],
        BACKOFF: ["default/late"],
        "unschedulable": [],
    }
    clock.now = 1005.0
    queue.flush_backoff_completed()
    assert queue.pending_pods()[ACTIVE] == ["default/early", "default/late"]
