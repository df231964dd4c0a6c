"""A binary heap with lookup, in-place update and deletion by key.

The activeQ and the two backoff heaps need what upstream's ``backend/heap`` offers: pop the
head, but also find, update and remove an arbitrary pod by its key in O(log n). Items that the
``less`` function cannot tell apart keep their insertion order, so the queue is FIFO among exact
ties (equal priority and equal timestamp happen with a coarse or fake clock).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "key", "seq")

    def __init__(self, item: T, key: str, seq: int) -> None:
        self.item = item
        self.key = key
        self.seq = seq


class IndexedHeap(Generic[T]):
    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
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
            self._entries.append(_Entry(item, key, next(self._counter)))
            self._index[key] = len(self._entries) - 1
            self._up(len(self._entries) - 1)
        else:
            self._entries[i].item = item
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

        def cmp(a: _Entry[T], b: _Entry[T]) -> int:
            return -1 if self._lt(a, b) else (1 if self._lt(b, a) else 0)

        return [e.item for e in sorted(self._entries, key=functools.cmp_to_key(cmp))]

    # -- internals --------------------------------------------------------------------------
    def _lt(self, a: _Entry[T], b: _Entry[T]) -> bool:
        if self._less(a.item, b.item):
            return True
        if self._less(b.item, a.item):
            return False
        return a.seq < b.seq

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

    def _place(self, i: int, entry: _Entry[T]) -> None:
        self._entries[i] = entry
        self._index[entry.key] = i

    def _up(self, i: int) -> bool:
        entries = self._entries
        entry = entries[i]
        start = i
        while i > 0:
            parent = (i - 1) // 2
            if not self._lt(entry, entries[parent]):
                break
            self._place(i, entries[parent])
            i = parent
        if i == start:
            return False
        self._place(i, entry)
        return True

    def _down(self, i: int) -> None:
        entries = self._entries
        n = len(entries)
        entry = entries[i]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            right = child + 1
            if right < n and self._lt(entries[right], entries[child]):
                child = right
            if not self._lt(entries[child], entry):
                break
            self._place(i, entries[child])
            i = child
        self._place(i, entry)

    def _sift_head(self) -> None:
        """The head replaced by the last leaf: move the hole down to a leaf along the lesser
        children, then the leaf's entry up from there (as Python's heapq): about half the
        comparisons of a sift down, since a last leaf mostly belongs near the bottom."""
        entries = self._entries
        n = len(entries)
        entry = entries[0]
        i = 0
        while (child := 2 * i + 1) < n:
            right = child + 1
            if right < n and self._lt(entries[right], entries[child]):
                child = right
            self._place(i, entries[child])
            i = child
        self._place(i, entry)
        self._up(i)
