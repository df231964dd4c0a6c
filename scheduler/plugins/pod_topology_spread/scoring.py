"""PodTopologySpread's PreScore, Score and NormalizeScore (upstream ``scoring.go``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    BoolArray,
    ClusterSnapshot,
    CycleState,
    IntArray,
    NodeView,
    PodInfo,
    Status,
)
from scheduler.plugins.helper.row_memo import TableFacts
from scheduler.plugins.pod_topology_spread.args import LABEL_HOSTNAME, NAME, SCHEDULE_ANYWAY
from scheduler.plugins.pod_topology_spread.common import (
    Constraint,
    CountedPods,
    Topology,
    node_affinity_mask,
    node_taints_mask,
    topology_of,
)

PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Raw score of a node missing a topology key; NormalizeScore turns it into 0.
INVALID_SCORE = -1

# -- score state ----------------------------------------------------------------------------
class _ScoreState(NamedTuple):  # a NamedTuple: made every cycle, at a third of the cost
    constraints: tuple[Constraint, ...]
    ignored: BoolArray | None  # per node row; None: no node is
    has_key: tuple[BoolArray | None, ...]  # per node row; None: every node has the key
    domain_ids: tuple[IntArray, ...]  # per node row; hostname: unused
    # Per domain id; hostname: the node rows of the counted pods, counted per row in Score.
    # (A per-row count is a table-sized array, and the binding cycle keeps this state: a
    # batch of 64 pods would hold 64 of them, fresh memory for every cycle.)
    counts: tuple[IntArray, ...]
    weights: tuple[float, ...]


def _round_half_away(x: npt.NDArray[np.floating[Any]]) -> IntArray:
    """Go's math.Round for non-negative values, exact (x - trunc(x) is exact in binary64)."""
    whole = np.trunc(x)
    out: IntArray = (whole + ((x - whole) >= 0.5)).astype(np.int64)
    return out


class Scoring:
    """PreScore, Score and NormalizeScore of :class:`~.plugin.PodTopologySpread`."""

    constraints: Callable[[PodInfo, str], tuple[Constraint, ...]]
    system_defaulted: bool
    _topologies: dict[str, Topology]
    _with_keys: dict[tuple[str, ...], tuple[BoolArray, BoolArray]]
    _node_facts: TableFacts


    # -- PreScore / Score / NormalizeScore --------------------------------------------------
    def _forget_stale_facts(self, snapshot: ClusterSnapshot) -> None:
        """Forget the node facts when node labels or the node set changed."""
        if self._node_facts.changed(snapshot.nodes):
            self._topologies.clear()
            self._with_keys.clear()

    def _topology(self, snapshot: ClusterSnapshot, key: str) -> Topology:
        kept = self._topologies.get(key)
        if kept is None:
            kept = self._topologies[key] = topology_of(snapshot, key)
        return kept

    def _keys_mask(self, snapshot: ClusterSnapshot, keys: tuple[str, ...]
                   ) -> tuple[BoolArray, BoolArray]:
        """Per node row: the node has every key; the node lacks one."""
        kept = self._with_keys.get(keys)
        if kept is None:
            every = snapshot.nodes.alive.copy()
            for key in keys:
                every &= self._topology(snapshot, key).has
            kept = self._with_keys[keys] = (every, ~every)
        return kept

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        snapshot = nodes.snapshot
        if snapshot.num_nodes == 0:
            return SKIP
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return SKIP
        # Only non-default constraints need every key: zone-less nodes still spread by hostname.
        require_all = bool(pod.spread_constraints) or not self.system_defaulted
        table = snapshot.nodes
        rows = nodes.idx
        self._forget_stale_facts(snapshot)
        ignored: BoolArray | None = None
        scored = rows
        ok_keys = table.alive
        if require_all:
            ok_keys, ignored = self._keys_mask(snapshot, tuple(c.topology_key for c in constraints))
            scored = rows[~ignored.take(rows)]
        masks: dict[str, BoolArray] = {}
        pods = CountedPods(state, snapshot, pod.namespace)
        has_key: list[BoolArray | None] = []
        domain_ids: list[IntArray] = []
        counts: list[IntArray] = []
        weights: list[float] = []
        for c in constraints:
            topology = self._topology(snapshot, c.topology_key)
            has_key.append(None if topology.everywhere else topology.has)
            pod_rows = pods.rows(c)
            if c.topology_key == LABEL_HOSTNAME:
                # Upstream counts the node's own pods in Score, without inclusion policies.
                domain_ids.append(topology.ids)
                counts.append(pod_rows)
                weights.append(math.log(scored.shape[0] + 2))
                continue
            eff = topology.folded
            ndom = len(topology.values) + 1
            wanted = np.zeros(ndom, dtype=np.bool_)
            wanted[eff.take(scored)] = True
            ok = _counting_nodes(c, snapshot, pod, ok_keys, masks)
            if ok is not table.alive:  # the counted pods are all on nodes of the table
                pod_rows = pod_rows[ok[pod_rows]]
            count = np.bincount(eff.take(pod_rows), minlength=ndom)
            count *= wanted
            domain_ids.append(eff)
            counts.append(count)
            weights.append(math.log(int(np.count_nonzero(wanted)) + 2))
        state.write(
            PRE_SCORE_STATE_KEY,
            _ScoreState(
                constraints=constraints,
                ignored=ignored,
                has_key=tuple(has_key),
                domain_ids=tuple(domain_ids),
                counts=tuple(counts),
                weights=tuple(weights),
            ),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        rows = nodes.idx
        if s is None:
            return np.zeros(rows.shape[0], dtype=np.int64)
        # Upstream adds each constraint's term to a float64 starting at 0, in order: the same
        # sums, so the same roundings (an int64 count times a float is that count as float64).
        total: npt.NDArray[np.floating[Any]] | None = None
        capacity = nodes.snapshot.nodes.capacity
        for i, c in enumerate(s.constraints):
            if c.topology_key == LABEL_HOSTNAME:
                cnt = np.bincount(s.counts[i], minlength=capacity).take(rows)
            else:
                cnt = s.counts[i].take(s.domain_ids[i].take(rows))
            term = cnt * s.weights[i] + float(c.max_skew - 1)
            has = s.has_key[i]
            if has is not None:
                term = np.where(has.take(rows), term, 0.0)
            if total is None:
                total = term
            else:
                total += term
        assert total is not None, "PreScore writes its state only for some constraint"
        out = _round_half_away(total)
        if s.ignored is not None:
            out[s.ignored.take(rows)] = INVALID_SCORE
        return out

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return scores
        valid = None if s.ignored is None else scores != INVALID_SCORE
        if valid is None or valid.all():  # no node lacks a key: the same, without masks
            # Indexing at argmin/argmax: a fifth of the cost of min()/max()'s reductions.
            lo = int(scores[scores.argmin()])
            hi = max(int(scores[scores.argmax()]), 0)
            if hi == 0:
                return np.full(scores.shape[0], MAX_NODE_SCORE, dtype=np.int64)
            return np.asarray(MAX_NODE_SCORE * (hi + lo - scores) // hi, dtype=np.int64)
        out = np.zeros(scores.shape[0], dtype=np.int64)
        if not valid.any():
            return out
        lo = int(scores[valid].min())
        hi = max(int(scores[valid].max()), 0)
        if hi == 0:
            out[valid] = MAX_NODE_SCORE
        else:
            out[valid] = MAX_NODE_SCORE * (hi + lo - scores[valid]) // hi
        return out


def _counting_nodes(
    c: Constraint, snapshot: ClusterSnapshot, pod: PodInfo, ok_keys: BoolArray,
    masks: dict[str, BoolArray],
) -> BoolArray:
    """Per node row: its pods count for ``c`` (``ok_keys`` and the constraint's node
    inclusion policies). ``masks`` keeps the pod's node-affinity and taint masks for the
    pod's other constraints."""
    alive = snapshot.nodes.alive
    ok = ok_keys
    if c.honor_node_affinity:
        affinity = masks.get("affinity")
        if affinity is None:
            affinity = masks["affinity"] = node_affinity_mask(snapshot, pod)
        if affinity is not alive:
            ok = ok & affinity
    if c.honor_node_taints:
        taints = masks.get("taints")
        if taints is None:
            taints = masks["taints"] = node_taints_mask(snapshot, pod)
        ok = ok & taints
    return ok
