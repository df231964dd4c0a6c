from __future__ import annotations

import pytest

from scheduler.plugins.priority_sort import PrioritySort
from scheduler.queue import QueuedPodInfo
from tests.queue.fakes import FakePod, make_pod


def test_properties_come_from_the_pod() -> None:
    qpi = QueuedPodInfo(pod=make_pod("a", priority=7), timestamp=1.0)
    assert (qpi.priority, qpi.uid, qpi.key) == (7, "uid-a", "default/a")
    assert (qpi.attempts, qpi.unschedulable_count, qpi.consecutive_errors) == (0, 0, 0)
    assert qpi.unschedulable_plugins == set() and qpi.pending_plugins == set()
    assert qpi.initial_attempt_timestamp is None and not qpi.gated


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param((10, 5.0), (1, 1.0), True, id="higher priority goes first"),
        pytest.param((1, 1.0), (10, 5.0), False, id="lower priority goes later"),
        pytest.param((3, 1.0), (3, 2.0), True, id="equal priority: the older timestamp first"),
        pytest.param((3, 2.0), (3, 2.0), False, id="equal priority and timestamp: not less"),
    ],
)
def test_priority_sort_orders_queued_pods(
    a: tuple[int, float], b: tuple[int, float], expected: bool
) -> None:
    qa = QueuedPodInfo(pod=FakePod("a", priority=a[0]), timestamp=a[1])
    qb = QueuedPodInfo(pod=FakePod("b", priority=b[0]), timestamp=b[1])
    assert PrioritySort().less(qa, qb) is expected
    # The key the queue's heap compares orders them the same way.
    assert (PrioritySort().sort_key(qa) < PrioritySort().sort_key(qb)) is expected
