"""The placed pods a selector matches in some namespaces, with their node rows, computed once
per cycle and shared through the CycleState by InterPodAffinity and PodTopologySpread."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from scheduler.plugin_api import ClusterSnapshot, CycleState, IntArray, LabelSelector, PodInfo

MATCHED_PODS_STATE_KEY = "MatchedPods"


@dataclass
class MatchedPods:
    """Accounted pods in some namespaces matching a selector, with their node rows.

    Computed once per cycle and selector and shared through the CycleState: a pod's spread
    constraint and its anti-affinity usually select the same pods, and asking the cache's
    label index is the dominant cost of both plugins when a selector matches thousands.
    """

    pods: list[PodInfo]
    rows: IntArray  # per pod: its node's row, -1 when the table does not hold the node
    _not_terminating: IntArray | None = None

    def counted_rows_not_terminating(self) -> IntArray:
        """Rows of the pods that are not terminating and sit on a node the table holds."""
        if self._not_terminating is None:
            live = np.fromiter(
                (not p.is_terminating for p in self.pods), dtype=np.bool_, count=len(self.pods)
            )
            rows = self.rows[live]
            self._not_terminating = rows[rows >= 0]
        return self._not_terminating


def matched_pods(
    state: CycleState | None,
    snapshot: ClusterSnapshot,
    namespaces: Iterable[str],
    selector: LabelSelector,
) -> MatchedPods:
    key = (tuple(sorted(namespaces)), selector)
    memo: dict[Hashable, MatchedPods] | None = None
    if state is not None:
        memo = state.get(MATCHED_PODS_STATE_KEY)
        if memo is None:
            memo = {}
            state.write(MATCHED_PODS_STATE_KEY, memo)
        try:
            found = memo.get(key)
        except TypeError:  # an unhashable selector: no sharing
            memo, found = None, None
        if found is not None:
            return found
    pods = snapshot.matching_pods(key[0], selector)
    out = MatchedPods(pods=pods, rows=rows_of(snapshot, pods))
    if memo is not None:
        memo[key] = out
    return out


def rows_of(snapshot: ClusterSnapshot, pods: Iterable[PodInfo]) -> IntArray:
    get = snapshot.nodes.index.get
    return np.asarray([get(p.node_name, -1) for p in pods], dtype=np.int64)
