"""Values per node row kept between cycles, invalidated by the node table's change log
(``change_mark`` / ``rows_changed_since``): the one change signal plugins use."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np

from scheduler.plugin_api import BoolArray, IntArray, NodeTableView, NodeView

_K = TypeVar("_K", bound=Hashable)


class _Kept:
    """One key's values per table row, which rows hold a current value, and the rows whose
    value went stale since the memo last looked at the table's change log."""

    __slots__ = ("current", "dirty", "mark", "values")

    def __init__(self, capacity: int, mark: int) -> None:
        self.current: BoolArray = np.zeros(capacity, dtype=np.bool_)
        self.values: IntArray = np.zeros(capacity, dtype=np.int64)
        self.dirty: set[int] = set()
        self.mark = mark


class RowMemo(Generic[_K]):
    """Values per node row (a score, whether the pod fits) for each recent key (a pod's
    requests), kept until the row changes: pods of one ReplicaSet ask the same, and between
    two of them only the rows that took a pod change. A view with hypothetical pods is
    computed afresh.

    ``compute(view, key)`` must read nothing but the view's rows and ``key``."""

    def __init__(
        self, compute: Callable[[NodeView, _K], IntArray], keys: int = 16
    ) -> None:
        self._compute = compute
        self._keys = keys
        # Per key, least recently used first. A dict, not a cachetools cache: this runs
        # thrice a cycle.
        self._kept: dict[_K, _Kept] = {}
        self._table: object = None

    def values(self, nodes: NodeView, key: _K) -> IntArray:
        if not nodes.as_in_table:
            return self._compute(nodes, key)
        table = nodes.snapshot.nodes
        if table is not self._table:
            self._kept.clear()
            self._table = table
        kept = self._kept.pop(key, None)
        if kept is None:
            kept = _Kept(table.capacity, table.change_mark)
            if len(self._kept) >= self._keys:
                del self._kept[next(iter(self._kept))]
        self._kept[key] = kept
        changed = table.rows_changed_since(kept.mark)
        if changed is None:  # every row changed (the table may have grown)
            kept = self._kept[key] = _Kept(table.capacity, table.change_mark)
        elif changed:
            kept.mark += len(changed)
            current = kept.current
            for row in changed:  # a row or two a cycle: item by item beats a fancy index
                current[row] = False
            kept.dirty.update(changed)
        rows = nodes.idx
        current = kept.current.take(rows)
        if np.count_nonzero(current) != rows.shape[0]:
            fresh = self._fresh(nodes, current, kept)
            kept.values[fresh.idx] = self._compute(fresh, key)
            kept.current[fresh.idx] = True
        return kept.values.take(rows)

    @staticmethod
    def _fresh(nodes: NodeView, current: BoolArray, kept: _Kept) -> NodeView:
        """The rows to compute: the view's stale rows and every other changed row of the
        table when they are no more than the view's (a computation costs about the same for
        1 row as for 500, and the next views need not ask again), else the view's alone."""
        stale = nodes.idx[~current]
        if len(kept.dirty) + stale.shape[0] > nodes.idx.shape[0]:
            kept.dirty.difference_update(stale.tolist())
            return NodeView.of(nodes.snapshot, stale)
        dirty = kept.dirty
        dirty.update(stale.tolist())
        rows = np.fromiter(dirty, dtype=np.int64, count=len(dirty))
        dirty.clear()
        # A row that changed may since have lost its node (the view's rows all have one).
        return NodeView.of(nodes.snapshot, rows[nodes.snapshot.nodes.alive.take(rows)])


class ChangeLog:
    """The rows of a node table that changed since the last time this asked: a memo over
    the table reads them again and keeps the rest."""

    __slots__ = ("_mark", "_table")

    def __init__(self) -> None:
        self._table: object = None
        self._mark = 0

    def rows_changed(self, table: NodeTableView) -> Sequence[int] | None:
        """The rows changed since the last call; None when every row is to be read again
        (a table not the one last seen, or whose log no longer reaches back)."""
        changed = table.rows_changed_since(self._mark) if table is self._table else None
        self._table = table
        self._mark = table.change_mark
        return changed


class TableFacts:
    """Whether what a memo over the whole table depends on changed since it last asked.

    ``fact(table, row)`` is what the memo reads of a row (its taints, its labels, whether it
    holds a node); only the rows the change log names are read again, so asking costs about
    nothing when, as between two cycles, a row or two took a pod. A table that is not the
    one last seen, or whose log no longer reaches back, counts as changed."""

    def __init__(self, fact: Callable[[NodeTableView, int], object]) -> None:
        self._fact = fact
        self._log = ChangeLog()
        self._facts: dict[int, object] = {}

    def changed(self, table: NodeTableView) -> bool:
        changed = self._log.rows_changed(table)
        fact = self._fact
        if changed is None:
            # Every row made so far (rows beyond them are made, and logged, later).
            self._facts = {row: fact(table, row) for row in range(len(table.names))}
            return True
        facts = self._facts
        stale = False
        for row in changed:
            now = fact(table, row)
            if row not in facts or now != facts[row]:
                facts[row] = now
                stale = True
        return stale
