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
    __slots__ = ("item", "seq")

    def __init__(self, item: T, seq: int) -> None:
        self.item = item
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
            self._entries.append(_Entry(item, next(self._counter)))
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
        del self._index[self._key(removed.item)]
        if i < len(entries):
            entries[i] = last
            self._index[self._key(last.item)] = i
            self._fix(i)
        return removed.item

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _swap(self, i: int, j: int) -> None:
        entries = self._entries
        entries[i], entries[j] = entries[j], entries[i]
        self._index[self._key(entries[i].item)] = i
        self._index[self._key(entries[j].item)] = j

    def _up(self, i: int) -> bool:
        moved = False
        while i > 0:
            parent = (i - 1) // 2
            if not self._lt(self._entries[i], self._entries[parent]):
                break
            self._swap(i, parent)
            i = parent
            moved = True
        return moved

    def _down(self, i: int) -> None:
        n = len(self._entries)
        while True:
            left = 2 * i + 1
            if left >= n:
                return
            child = left
            right = left + 1
            if right < n and self._lt(self._entries[right], self._entries[left]):
                child = right
            if not self._lt(self._entries[child], self._entries[i]):
                return
            self._swap(i, child)
            i = child
