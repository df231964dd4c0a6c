"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Upstream ``tainttoleration/taint_toleration.go`` (v1.37):

- Filter: a node fails with UnschedulableAndUnresolvable ``node(s) had untolerated taint(s)``
  when one of its NoSchedule/NoExecute taints is tolerated by none of the pod's tolerations.
- Score: the number of the node's PreferNoSchedule taints not tolerated by the pod's
  tolerations whose effect is PreferNoSchedule or empty; normalised in reverse (fewest
  intolerable taints gets 100).

Nodes rarely carry taints and many share the same ones, so rows are grouped by their taint
tuple (rebuilt only when a node's taints or the node set change) and each group is judged
once per toleration set; the per-row answers are cached in the snapshot's node masks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    SUCCESS,
    Action,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    FilterResult,
    Handle,
    IntArray,
    NodeSummary,
    NodeTableView,
    NodeView,
    PluginSpec,
    PodInfo,
    QueueingHint,
    Resource,
    Status,
    Taint,
    Toleration,
)
from scheduler.plugins.helper.explain_text import nodes_phrase, taint_text
from scheduler.plugins.helper.normalize_score import default_normalize_score
from scheduler.plugins.helper.row_memo import TableFacts

NAME = "TaintToleration"

PRE_SCORE_STATE_KEY = "PreScore" + NAME
# Upstream keeps this constant, but Filter has reported ERR_REASON_UNTOLERATED since v1.35.
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
DO_NOT_SCHEDULE_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)


def tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def has_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Some NoSchedule/NoExecute taint is tolerated by no toleration.

    Upstream ``v1helper.FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``.
    """
    return any(
        t.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerated(t, tolerations) for t in taints
    )


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations that can tolerate a PreferNoSchedule taint (that effect, or any)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Taint], tolerations: Sequence[Toleration]
) -> int:
    return sum(
        1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerated(t, tolerations)
    )


def _untolerated(nodes: NodeView, row: int, pod: PodInfo) -> list[Taint]:
    return [t for t in nodes.snapshot.nodes.taints[row]
            if t.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerated(t, pod.tolerations)]


def _row_taints(nodes: NodeTableView, row: int) -> object:
    """What the taint groups read of a row: whether it holds a node, and its taints."""
    return nodes.names[row], nodes.taints[row]


@dataclass
class _TaintGroups:
    """Alive rows grouped by taint tuple, while the rows' taints stay as they were."""

    groups: list[tuple[tuple[Taint, ...], IntArray]]
    counts: dict[Hashable, IntArray] = field(default_factory=dict)


class TaintToleration:
    name = NAME
    # Filter needs only the NodeView's numbers, not its hypothetical pod lists.
    filter_reads_pod_lists = False

    def __init__(self) -> None:
        self._groups: _TaintGroups | None = None
        self._taints_seen = TableFacts(_row_taints)
        # The last untolerated mask Filter read, and whether any node is in it: in most
        # clusters the pods tolerate every node, and Filter then has nothing to look up.
        self._last_mask: tuple[BoolArray | None, bool] = (None, True)

    # -- shared per-row data --------------------------------------------------------------
    def _taint_groups(self, nodes: NodeTableView) -> _TaintGroups:
        cached = self._groups
        if self._taints_seen.changed(nodes) or cached is None:
            by_taints: dict[tuple[Taint, ...], list[int]] = {}
            for row in nodes.index.values():
                taints = nodes.taints[row]
                if taints:
                    by_taints.setdefault(tuple(taints), []).append(row)
            groups = [(t, np.asarray(rows, dtype=np.int64)) for t, rows in by_taints.items()]
            cached = self._groups = _TaintGroups(groups)
        return cached

    def untolerated_mask(
        self, snapshot: ClusterSnapshot, tolerations: tuple[Toleration, ...]
    ) -> BoolArray:
        """Per node row: some NoSchedule/NoExecute taint is not tolerated."""
        nodes = snapshot.nodes

        def compute() -> BoolArray:
            out = np.zeros(nodes.capacity, dtype=np.bool_)
            for taints, rows in self._taint_groups(nodes).groups:
                if has_untolerated(taints, tolerations):
                    out[rows] = True
            return out

        # node_mask keeps it until the taints or the node set change, and computes it every
        # time for unhashable tolerations.
        return snapshot.node_mask((NAME, "untolerated", tolerations), compute)

    def intolerable_counts(
        self, snapshot: ClusterSnapshot, tolerations: tuple[Toleration, ...]
    ) -> IntArray:
        """Per node row: PreferNoSchedule taints not tolerated by ``tolerations``."""
        groups = self._taint_groups(snapshot.nodes)
        cached = groups.counts.get(tolerations)
        if cached is None:
            cached = np.zeros(snapshot.nodes.capacity, dtype=np.int64)
            for taints, rows in groups.groups:
                cached[rows] = count_intolerable_prefer_no_schedule(taints, tolerations)
            if len(groups.counts) > 1024:
                groups.counts.clear()
            groups.counts[tolerations] = cached
        return cached

    # -- Filter ---------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        mask = self.untolerated_mask(nodes.snapshot, tuple(pod.tolerations))
        last, any_untolerated = self._last_mask
        if mask is not last:
            any_untolerated = bool(np.count_nonzero(mask))
            self._last_mask = (mask, any_untolerated)
        if any_untolerated:
            result.reject(
                mask.take(nodes.idx), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED
            )
        return result

    # -- Score ----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        state.write(PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        return self.intolerable_counts(nodes.snapshot, tolerations).take(nodes.idx)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score(scores, reverse=True)

    # -- events ---------------------------------------------------------------------------
    # -- explain --------------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """The taints the pod does not tolerate."""
        return [[f"untolerated taint {taint_text(t)}" for t in _untolerated(nodes, row, pod)]
                for row in nodes.idx.tolist()]

    def explain_hints(
        self, state: CycleState, pod: PodInfo, nodes: NodeView, rejected: BoolArray,
        others_pass: BoolArray,
    ) -> list[str]:
        """The toleration that would let a node in, where one taint alone keeps it out."""
        by_taint: Counter[str] = Counter()
        for row in nodes.idx[rejected & others_pass].tolist():
            taints = _untolerated(nodes, row, pod)
            if len(taints) == 1:
                by_taint[taint_text(taints[0])] += 1
        return [f"tolerate {taint}: {nodes_phrase(n)} would then pass every filter"
                for taint, n in sorted(by_taint.items())]

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
                _after_node_change,
            ),
            # The pending pod's own tolerations changed: always worth a retry.
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATION)
            ),
        ]


def _after_node_change(
    pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
) -> QueueingHint:
    """Queue when the change turns the node from untolerated to tolerated for the pod."""
    if new is None:
        return QueueingHint.SKIP
    tolerations = tuple(pod.tolerations)
    was_untolerated = old is None or has_untolerated(old.taints, tolerations)
    is_untolerated = has_untolerated(new.taints, tolerations)
    if was_untolerated and not is_untolerated:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> TaintToleration:
    return TaintToleration()


SPEC = PluginSpec(name=NAME, factory=new)
