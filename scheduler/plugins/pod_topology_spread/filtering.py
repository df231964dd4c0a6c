"""PodTopologySpread's PreFilter and Filter (upstream ``filtering.go``), and what explains
them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    BoolArray,
    ClusterSnapshot,
    Code,
    CycleState,
    FilterResult,
    IntArray,
    NodeView,
    PodInfo,
    PreFilterResult,
    Status,
)
from scheduler.plugins.helper.explain_text import nodes_phrase
from scheduler.plugins.pod_topology_spread.args import DO_NOT_SCHEDULE, NAME
from scheduler.plugins.pod_topology_spread.common import (
    NO_DOMAIN_MIN,
    Constraint,
    CountedPods,
    node_affinity_mask,
    node_taints_mask,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

# -- filter state ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _FilterState:
    """PreFilter's counts; one entry per DoNotSchedule constraint, in the pod's order."""

    namespace: str
    constraints: tuple[Constraint, ...]
    domain_ids: tuple[IntArray, ...]  # per node row: domain id of the constraint's key, -1 none
    eligible: tuple[BoolArray, ...]  # per node row: the node's pods count for the constraint
    counts: tuple[IntArray, ...]  # per domain id: matching pods on eligible nodes
    present: tuple[BoolArray, ...]  # per domain id: some eligible node is in the domain
    min_match: tuple[int, ...]  # global minimum, minDomains applied
    self_match: tuple[bool, ...]

    def with_pods(
        self, snapshot: ClusterSnapshot, row: int, added: Sequence[PodInfo],
        removed: Sequence[PodInfo], elsewhere: Sequence[PodInfo] = (),
    ) -> _FilterState:
        """The state as if ``added`` were on node ``row`` and ``removed`` were not, nor
        ``elsewhere`` on their own nodes (upstream's AddPod/RemovePod, each with the pod's
        node: it counts where that node is eligible, in that node's domain)."""
        counts = list(self.counts)
        mins = list(self.min_match)
        for i, c in enumerate(self.constraints):
            deltas: dict[int, int] = {}
            if self.eligible[i][row]:
                deltas[row] = sum(1 for p in added if c.counts(p, self.namespace)) - sum(
                    1 for p in removed if c.counts(p, self.namespace))
            for p in elsewhere:
                at = snapshot.row_of(p.node_name)
                if at is not None and self.eligible[i][at] and c.counts(p, self.namespace):
                    deltas[at] = deltas.get(at, 0) - 1
            changed = False
            for at, delta in deltas.items():
                if delta:
                    if not changed:
                        counts[i] = counts[i].copy()
                        changed = True
                    counts[i][int(self.domain_ids[i][at])] += delta
            if changed:
                mins[i] = _global_min(counts[i], self.present[i], c.min_domains)
        return dataclasses.replace(self, counts=tuple(counts), min_match=tuple(mins))


def _global_min(counts: IntArray, present: BoolArray, min_domains: int) -> int:
    num_domains = int(np.count_nonzero(present))
    if num_domains < min_domains:
        return 0
    if num_domains == 0:
        return NO_DOMAIN_MIN
    return int(counts[present].min())


_REASON_NONE, _REASON_LABEL, _REASON_SKEW = 0, 1, 2


def _filter_rows(state: _FilterState, rows: IntArray) -> IntArray:
    """Per row, the reason it fails (``_REASON_*``); the first failing constraint decides."""
    reason = np.zeros(rows.shape[0], dtype=np.int64)
    for i, c in enumerate(state.constraints):
        missing, skew = _skew(state, i, rows)
        open_ = reason == _REASON_NONE
        reason[open_ & missing] = _REASON_LABEL
        reason[open_ & ~missing & (skew > c.max_skew)] = _REASON_SKEW
    return reason


def _skew(state: _FilterState, i: int, rows: IntArray) -> tuple[BoolArray, IntArray]:
    """Per row: whether the node lacks constraint ``i``'s key, and the skew placing the pod
    there would make (meaningless where the key is missing)."""
    ids = state.domain_ids[i].take(rows)
    missing = ids < 0
    counts = (
        state.counts[i][np.where(missing, 0, ids)]
        if state.counts[i].size
        else np.zeros(rows.shape[0], dtype=np.int64)
    )
    return missing, counts + int(state.self_match[i]) - state.min_match[i]


@dataclass(frozen=True)
class ConstraintSkew:
    """One DoNotSchedule constraint seen from some node rows, for explanations."""

    topology_key: str
    max_skew: int
    min_match: int
    domains: list[str | None]  # per row: the node's value of the key (None: no such label)
    skews: IntArray  # per row: the skew the pod would make there (-1 where the key is missing)


def filter_skews(
    state: CycleState, snapshot: ClusterSnapshot, rows: IntArray
) -> list[ConstraintSkew]:
    """What PreFilter computed, per constraint, for ``rows``; empty when it did not run."""
    s: _FilterState | None = state.get(PRE_FILTER_STATE_KEY)
    if s is None:
        return []
    out: list[ConstraintSkew] = []
    for i, c in enumerate(s.constraints):
        missing, skew = _skew(s, i, rows)
        _, values = snapshot.domains(c.topology_key)
        ids = s.domain_ids[i][rows]
        domains = [None if m else values[int(d)] for m, d in zip(missing, ids, strict=True)]
        out.append(ConstraintSkew(c.topology_key, c.max_skew, s.min_match[i], domains,
                                  np.where(missing, -1, skew).astype(np.int64)))
    return out


class Filtering:
    """PreFilter, Filter and their explanation, of :class:`~.plugin.PodTopologySpread`."""

    constraints: Callable[[PodInfo, str], tuple[Constraint, ...]]


    # -- PreFilter / Filter -----------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, self._filter_state(state, snapshot, pod, constraints))
        return None, SUCCESS

    def _filter_state(
        self,
        state: CycleState,
        snapshot: ClusterSnapshot,
        pod: PodInfo,
        constraints: tuple[Constraint, ...],
    ) -> _FilterState:
        nodes = snapshot.nodes
        domain_ids: list[IntArray] = []
        num_domains: list[int] = []
        all_keys = nodes.alive.copy()
        for c in constraints:
            ids, values = snapshot.domains(c.topology_key)
            domain_ids.append(ids)
            num_domains.append(len(values))
            all_keys &= ids >= 0
        affinity = taints = None
        pods = CountedPods(state, snapshot, pod.namespace)
        eligible: list[BoolArray] = []
        counts: list[IntArray] = []
        present: list[BoolArray] = []
        mins: list[int] = []
        for i, c in enumerate(constraints):
            ok = all_keys
            if c.honor_node_affinity:
                if affinity is None:
                    affinity = node_affinity_mask(snapshot, pod)
                ok = ok & affinity
            if c.honor_node_taints:
                if taints is None:
                    taints = node_taints_mask(snapshot, pod)
                ok = ok & taints
            ids = domain_ids[i]
            here = np.zeros(num_domains[i], dtype=np.bool_)
            here[ids[ok]] = True
            rows = pods.rows(c)
            rows = rows[ok[rows]]
            count = np.bincount(ids[rows], minlength=num_domains[i]).astype(np.int64)
            eligible.append(ok)
            counts.append(count)
            present.append(here)
            mins.append(_global_min(count, here, c.min_domains))
        return _FilterState(
            namespace=pod.namespace,
            constraints=constraints,
            domain_ids=tuple(domain_ids),
            eligible=tuple(eligible),
            counts=tuple(counts),
            present=tuple(present),
            min_match=tuple(mins),
            self_match=tuple(c.matches(pod) for c in constraints),
        )

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        s: _FilterState | None = state.get(PRE_FILTER_STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        if s is None:
            result.reject(
                np.ones(len(nodes), dtype=np.bool_),
                Code.ERROR,
                f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
            )
            return result
        if not s.constraints:
            return result
        reason = _filter_rows(s, nodes.idx)
        for pos, row, added, removed, elsewhere in nodes.delta_rows_across_nodes():
            adjusted = s.with_pods(nodes.snapshot, row, added, removed, elsewhere)
            reason[pos] = _filter_rows(adjusted, nodes.idx[pos : pos + 1])[0]
        result.reject(
            reason == _REASON_LABEL, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_NODE_LABEL_NOT_MATCH,
        )
        result.reject(reason == _REASON_SKEW, Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return result


    # -- explain --------------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """Per constraint: the node lacks its key, or the skew the pod would make there."""
        skews = filter_skews(state, nodes.snapshot, nodes.idx)
        out = []
        for pos in range(len(nodes)):
            lines = []
            for c in skews:
                domain, skew = c.domains[pos], int(c.skews[pos])
                if domain is None:
                    lines.append(f"no label {c.topology_key}")
                elif skew > c.max_skew:
                    lines.append(f"{c.topology_key}={domain}: skew {skew} > maxSkew "
                                 f"{c.max_skew} (global minimum {c.min_match})")
            out.append(lines)
        return out

    def explain_hints(
        self, state: CycleState, pod: PodInfo, nodes: NodeView, rejected: BoolArray,
        others_pass: BoolArray,
    ) -> list[str]:
        """Per constraint the pod breaks somewhere: the domains within its skew, and how many
        of their nodes pass the other filters."""
        if not rejected.any():
            return []
        hints = []
        for c in filter_skews(state, nodes.snapshot, nodes.idx):
            within = [i for i, d in enumerate(c.domains)
                      if d is not None and int(c.skews[i]) <= c.max_skew]
            domains = sorted({str(c.domains[i]) for i in within})
            if not domains:
                continue
            passing = sum(1 for i in within if others_pass[i])
            hints.append(
                f"{nodes_phrase(passing)} in {', '.join(domains)} satisfy the spread constraint "
                f"{c.topology_key} (maxSkew {c.max_skew}) and the other filters"
            )
        return hints
