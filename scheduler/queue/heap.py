"""A binary heap with lookup, in-place update and deletion by key.

The activeQ and the two backoff heaps need what upstream's ``backend/heap`` offers: pop the
head, but also find, update and remove an arbitrary pod by its key in O(log n). Items are
ordered by ``order(item)``, a value compared with ``<``, computed once when the item is added
or updated: a pop then compares tuples in C instead of calling a Python ``less`` a dozen
times. Items whose orders are equal keep their insertion order, so the queue is FIFO among
exact ties (equal priority and equal timestamp happen with a coarse or fake clock).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "key", "rank")

    def __init__(self, item: T, key: str, rank: tuple[Any, int]) -> None:
        self.item = item
        self.key = key
        # (order, insertion number): the heap's whole comparison.
        self.rank = rank


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
        self._entries: list[_Entry[T]] = []
        self._index: dict[str, int] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._entries[i].item

    def peek(self) -> T | None:
        return self._entries[0].item if self._entries else None

    def add_or_update(self, item: T) -> None:
        """Insert ``item``, or replace the item with the same key and restore the order."""
        key = self._key(item)
        i = self._index.get(key)
        if i is None:
            self._entries.append(_Entry(item, key, (self._order(item), next(self._counter))))
            self._index[key] = len(self._entries) - 1
            self._up(len(self._entries) - 1)
        else:
            entry = self._entries[i]
            entry.item = item
            entry.rank = (self._order(item), entry.rank[1])
            self._fix(i)

    def pop(self) -> T:
        """Remove and return the head; raises ``IndexError`` when empty."""
        if not self._entries:
            raise IndexError("pop from an empty heap")
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._remove_at(i)

    def values(self) -> list[T]:
        """All items, in no particular order."""
        return [e.item for e in self._entries]

    def ordered(self) -> list[T]:
        """All items in pop order (a sorted copy; for debugging and tests)."""
        return [e.item for e in sorted(self._entries, key=lambda e: e.rank)]

    # -- internals --------------------------------------------------------------------------
    def _remove_at(self, i: int) -> T:
        entries = self._entries
        removed = entries[i]
        last = entries.pop()
        del self._index[removed.key]
        if i < len(entries):
            entries[i] = last
            self._index[last.key] = i
            if i == 0:
                self._sift_head()
            else:
                self._fix(i)
        return removed.item

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _up(self, i: int) -> bool:
        entries, index = self._entries, self._index
        entry = entries[i]
        rank = entry.rank
        start = i
        while i > 0:
            parent = (i - 1) >> 1
            above = entries[parent]
            if not rank < above.rank:
                break
            entries[i] = above
            index[above.key] = i
            i = parent
        if i == start:
            return False
        entries[i] = entry
        index[entry.key] = i
        return True

    def _down(self, i: int) -> None:
        entries, index = self._entries, self._index
        n = len(entries)
        entry = entries[i]
        while (child := 2 * i + 1) < n:
            right = child + 1
            if right < n and entries[right].rank < entries[child].rank:
                child = right
            below = entries[child]
            if not below.rank < entry.rank:
                break
            entries[i] = below
            index[below.key] = i
            i = child
        entries[i] = entry
        index[entry.key] = i

    def _sift_head(self) -> None:
        """The head replaced by the last leaf: move the hole down to a leaf along the lesser
        children, then the leaf's entry up from there (as Python's heapq): about half the
        comparisons of a sift down, since a last leaf mostly belongs near the bottom."""
        entries, index = self._entries, self._index
        n = len(entries)
        entry = entries[0]
        i = 0
        while (child := 2 * i + 1) < n:
            right = child + 1
            if right < n and entries[right].rank < entries[child].rank:
                child = right
            below = entries[child]
            entries[i] = below
            index[below.key] = i
            i = child
        entries[i] = entry
        index[entry.key] = i
        self._up(i)
