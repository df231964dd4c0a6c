"""A binary heap with lookup, in-place update and deletion by key.

The activeQ and the two backoff heaps need what upstream's ``backend/heap`` offers: pop the
head, but also find, update and remove an arbitrary pod by its key. Items are ordered by
``order(item)``, a value compared with ``<``, computed once when the item is added or
updated. Items whose orders are equal keep their insertion order, so the queue is FIFO among
exact ties (equal priority and equal timestamp happen with a coarse or fake clock).

The heap is Python's ``heapq`` over ``[order, insertion, push, key, item]`` lists: a pop is a
sift in C (a Python sift of a thousand pods was a tenth of a scheduling cycle). Deleting or
updating an item leaves its old entry in the heap, marked, for a pop to throw away; the heap
is rebuilt when such entries outnumber the live ones.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Entry fields. ``push`` is unique per entry: a comparison never goes past it to the key or
# the item (an updated item's old and new entries share order and insertion number).
_ORDER, _INSERTION, _PUSH, _KEY, _ITEM = range(5)
_REMOVED: Any = object()


def order_of_less(less: Callable[[T, T], bool]) -> Callable[[T], Any]:
    """An ``order`` for a heap from a ``less`` function (a QueueSort plugin without
    ``sort_key``): each comparison then calls ``less`` once or twice."""

    def compare(a: T, b: T) -> int:
        return -1 if less(a, b) else (1 if less(b, a) else 0)

    return functools.cmp_to_key(compare)


class IndexedHeap(Generic[T]):
    def __init__(self, key: Callable[[T], str], order: Callable[[T], Any]) -> None:
        self._key = key
        self._order = order
        self._heap: list[list[Any]] = []
        self._live: dict[str, list[Any]] = {}
        self._insertions = itertools.count()
        self._pushes = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: str) -> bool:
        return key in self._live

    def get(self, key: str) -> T | None:
        entry = self._live.get(key)
        if entry is None:
            return None
        item: T = entry[_ITEM]
        return item

    def peek(self) -> T | None:
        heap = self._heap
        while heap and heap[0][_ITEM] is _REMOVED:
            heapq.heappop(heap)
        return heap[0][_ITEM] if heap else None

    def add_or_update(self, item: T) -> None:
        """Insert ``item``, or replace the item with the same key (keeping its place among
        items of equal order)."""
        key = self._key(item)
        old = self._live.get(key)
        insertion = next(self._insertions) if old is None else old[_INSERTION]
        if old is not None:
            old[_ITEM] = _REMOVED
        entry = [self._order(item), insertion, next(self._pushes), key, item]
        self._live[key] = entry
        heapq.heappush(self._heap, entry)
        self._compact()

    def pop(self) -> T:
        """Remove and return the head; raises ``IndexError`` when empty."""
        heap = self._heap
        while True:
            entry = heapq.heappop(heap)  # IndexError when empty, as documented
            item: T = entry[_ITEM]
            if item is not _REMOVED:
                del self._live[entry[_KEY]]
                return item

    def delete(self, key: str) -> T | None:
        entry = self._live.pop(key, None)
        if entry is None:
            return None
        item: T = entry[_ITEM]
        entry[_ITEM] = _REMOVED
        self._compact()
        return item

    def values(self) -> list[T]:
        """All items, in no particular order."""
        return [entry[_ITEM] for entry in self._live.values()]

    def ordered(self) -> list[T]:
        """All items in pop order (a sorted copy; for debugging and tests)."""
        return [entry[_ITEM] for entry in sorted(self._live.values())]

    def _compact(self) -> None:
        """Drop the removed entries once they are more than the live ones."""
        if len(self._heap) > 2 * len(self._live) + 16:
            self._heap = list(self._live.values())
            heapq.heapify(self._heap)
