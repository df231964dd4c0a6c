"""Deltas for the cache, handed from watch threads to the scheduling thread.

Watch handlers run on kopf's event loop (or a lean watch thread); the cache belongs to the
scheduling thread. Handlers append a closure here and return at once; the scheduling thread
applies everything pending at the start of its next cycle, in arrival order.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

Delta = Callable[[], None]


class Inbox:
    def __init__(self) -> None:
        self._items: deque[Delta] = deque()
        self._lock = threading.Lock()

    def put(self, delta: Delta) -> None:
        with self._lock:
            self._items.append(delta)

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
