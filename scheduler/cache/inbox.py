"""Deltas for the cache, handed from watch threads to the scheduling thread.

Watch handlers run on kopf's event loop (or a lean watch thread); the cache belongs to the
scheduling thread. Handlers append a closure here and return at once; the scheduling thread
applies everything pending at the start of its next cycle, in arrival order. The first delta
put into an empty inbox calls ``wake``: an idle scheduling thread, waiting for a pod to pop,
applies it at once instead of at the end of its wait (a rescheduler step or a live explain
would otherwise wait for it).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

Delta = Callable[[], None]


def _no_wake() -> None:
    return None


class Inbox:
    def __init__(self, wake: Callable[[], None] = _no_wake) -> None:
        self._items: deque[Delta] = deque()
        self._lock = threading.Lock()
        self._wake = wake

    def put(self, delta: Delta) -> None:
        with self._lock:
            first = not self._items
            self._items.append(delta)
        # Only the first: the deltas behind it are drained with it, and a wake takes the
        # queue's lock, which a watch delivering a burst should not take per delta.
        if first:
            self._wake()

    def __len__(self) -> int:
        return len(self._items)

    def drain(self) -> int:
        """Apply every pending delta; returns how many were applied."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
        for delta in items:
            try:
                delta()
            except Exception:
                # One bad object must not stop the deltas behind it from being applied.
                log.exception("Failed to apply a cache delta")
        return len(items)
