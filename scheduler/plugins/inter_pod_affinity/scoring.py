"""InterPodAffinity's PreScore, Score and NormalizeScore (upstream ``scoring.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    ClusterSnapshot,
    CycleState,
    IntArray,
    NodeView,
    PodInfo,
    Status,
)
from scheduler.plugins.inter_pod_affinity.args import NAME
from scheduler.plugins.inter_pod_affinity.terms import PodGroups, resolve

PRE_SCORE_STATE_KEY = "PreScore" + NAME

# -- score state ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _ScoreState:
    ids: Mapping[str, IntArray]  # topology key -> per node row domain id
    scores: Mapping[str, IntArray]  # topology key -> per domain score


class _ScoreAccumulator:
    """topologyScore of upstream: per topology key, a score per domain id."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.ids: dict[str, IntArray] = {}
        self.scores: dict[str, IntArray] = {}

    def add_rows(self, key: str, rows: IntArray, weight: int) -> None:
        """``weight`` for each pod on node ``rows`` whose node has ``key``."""
        ids, values = self._ids(key)
        rows = rows[rows >= 0]
        domains = ids.take(rows)
        domains = domains[domains >= 0]
        if domains.size == 0:
            return
        self._score(key, len(values))[:] += np.bincount(domains, minlength=len(values)) * weight

    def _score(self, key: str, size: int) -> IntArray:
        score = self.scores.get(key)
        if score is None:
            score = self.scores[key] = np.zeros(size, dtype=np.int64)
        return score

    def _ids(self, key: str) -> tuple[IntArray, list[str]]:
        ids, values = self.snapshot.domains(key)
        self.ids[key] = ids
        return ids, values


class Scoring:
    """PreScore, Score and NormalizeScore of :class:`~.plugin.InterPodAffinity`."""

    hard_pod_affinity_weight: int
    ignore_preferred_terms_of_existing_pods: bool
    _scoring_groups: PodGroups


    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        snapshot = nodes.snapshot
        has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        acc = _ScoreAccumulator(snapshot)
        for term in pod.preferred_affinity:
            t = resolve(snapshot, pod, term)
            acc.add_rows(t.topology_key, t.pods(state, snapshot).rows, t.weight)
        for term in pod.preferred_anti_affinity:
            t = resolve(snapshot, pod, term)
            acc.add_rows(t.topology_key, t.pods(state, snapshot).rows, -t.weight)

        ns, labels = pod.namespace, pod.labels
        ns_labels = snapshot.namespace_labels(ns)
        hard = self.hard_pod_affinity_weight
        groups = self._scoring_groups
        groups.refresh(snapshot.source, snapshot.pods_with_affinity_terms())
        for group_key, members in groups.members.items():
            first = next(iter(members.values()))
            weights: list[tuple[str, int]] = []
            if hard > 0:
                weights += [
                    (t.topology_key, hard)
                    for t in first.required_affinity
                    if t.matches_pod(ns, labels, ns_labels)
                ]
            weights += [
                (t.topology_key, int(t.weight))
                for t in first.preferred_affinity
                if t.matches_pod(ns, labels, ns_labels)
            ]
            weights += [
                (t.topology_key, -int(t.weight))
                for t in first.preferred_anti_affinity
                if t.matches_pod(ns, labels, ns_labels)
            ]
            if not weights:
                continue
            rows = groups.rows(group_key, snapshot)
            for key, weight in weights:
                acc.add_rows(key, rows, weight)

        if not acc.scores:
            return SKIP
        state.write(
            PRE_SCORE_STATE_KEY,
            _ScoreState(ids={k: acc.ids[k] for k in acc.scores}, scores=dict(acc.scores)),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        rows = nodes.idx
        out = np.zeros(rows.shape[0], dtype=np.int64)
        if s is None:
            return out
        for key, per_domain in s.scores.items():
            domains = s.ids[key].take(rows)
            has = domains >= 0
            out += np.where(has, per_domain[np.where(has, domains, 0)], 0)
        return out

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None or not s.scores or scores.shape[0] == 0:
            return scores
        lo = int(scores.min())
        diff = int(scores.max()) - lo
        if diff <= 0:
            return np.zeros(scores.shape[0], dtype=np.int64)
        fractions = (scores - lo).astype(np.float64) / float(diff)
        normalized: IntArray = (float(MAX_NODE_SCORE) * fractions).astype(np.int64)
        return normalized
