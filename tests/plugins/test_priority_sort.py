"""PrioritySort table, ported from upstream's priority_sort_test.go."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from scheduler.plugins import priority_sort
from scheduler.plugins.priority_sort import PrioritySort


@dataclass(frozen=True)
class Queued:
    priority: int
    timestamp: float


LOW, HIGH = 1, 100
EARLY, LATE = 1_000.0, 1_001.0

CASES = [
    pytest.param(Queued(LOW, EARLY), Queued(HIGH, LATE), False,
                 id="p2's priority is greater than p1's"),
    pytest.param(Queued(HIGH, LATE), Queued(LOW, EARLY), True,
                 id="p1's priority is greater than p2's, whatever the timestamps"),
    pytest.param(Queued(HIGH, EARLY), Queued(HIGH, LATE), True,
                 id="equal priority, p1 was added to the queue before p2"),
    pytest.param(Queued(HIGH, LATE), Queued(HIGH, EARLY), False,
                 id="equal priority, p2 was added to the queue before p1"),
    pytest.param(Queued(HIGH, EARLY), Queued(HIGH, EARLY), False,
                 id="equal priority and timestamp: neither is less"),
    pytest.param(Queued(-5, EARLY), Queued(0, LATE), False,
                 id="a negative priority sorts after the default priority 0"),
]


@pytest.mark.parametrize(("a", "b", "want"), CASES)
def test_less(a: Queued, b: Queued, want: bool) -> None:
    assert PrioritySort().less(a, b) is want


def test_spec_is_a_queue_sort_plugin() -> None:
    assert priority_sort.SPEC.name == "PrioritySort"
    plugin = priority_sort.SPEC.factory({}, None)  # type: ignore[arg-type]
    assert plugin.name == "PrioritySort"
    assert callable(getattr(plugin, "less", None))
