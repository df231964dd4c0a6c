"""PrioritySort: the queue order of pending pods (upstream ``queuesort/priority_sort.go``).

Higher ``spec.priority`` first; at equal priority the pod that entered (or re-entered) the
queue earlier goes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugin_api import (
    Handle,
    PluginSpec,
    QueuedPodLike,
)

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def less(self, a: QueuedPodLike, b: QueuedPodLike) -> bool:
        """True when ``a`` should be popped before ``b``."""
        p1, p2 = a.priority, b.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, pod: QueuedPodLike) -> tuple[int, float]:
        """``less`` as a key: ``less(a, b)`` exactly when ``sort_key(a) < sort_key(b)``."""
        return -pod.priority, pod.timestamp


def new(args: Mapping[str, Any], handle: Handle) -> PrioritySort:
    return PrioritySort()


SPEC = PluginSpec(name=NAME, factory=new)
