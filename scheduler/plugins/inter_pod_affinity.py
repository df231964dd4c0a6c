"""InterPodAffinity: required pod (anti-)affinity as a filter, preferred terms as a score (v1.37).

PreFilter resolves the incoming pod's required terms (``namespaceSelector`` unrolled into a
namespace set, as upstream's ``mergeAffinityTermNamespacesIfNotEmpty``) and counts, per term and
topology domain, the existing pods that match: one numpy array per term indexed by the
snapshot's domain id of the term's key. It also counts, per topology key, the existing pods
whose required anti-affinity terms match the incoming pod (symmetry). Filter then answers a
batch of nodes with fancy indexing, checking in upstream's order (the first failure decides):

1. affinity: the node has every term's key and each term's domain holds a pod matching *all*
   terms, unless no such pod exists anywhere and the pod matches its own terms (the first pod
   of a self-affine group) — ``UnschedulableAndUnresolvable``;
2. the incoming pod's anti-affinity — ``Unschedulable``;
3. existing pods' anti-affinity — ``Unschedulable``.

This is the classic algorithm (``InterPodAffinityHostnameFastPath`` is alpha and off in v1.37):
hostname terms are counted per hostname label value like any other key.

Scoring sums, per topology domain, the weights of the incoming pod's preferred terms matched by
existing pods (anti-affinity negative), existing pods' required affinity terms matching the
incoming pod (``hardPodAffinityWeight``) and existing pods' preferred terms matching it;
a node's raw score is the sum over keys of its domains' values, normalised min-max to 0..100.

Hypothetical pods on a view row are applied to a copy of the counts for that node only, as
upstream's AddPod/RemovePod do with a cloned state.

Cost: the pods matching a selector are fetched from the cache's label index once per cycle and
shared with PodTopologySpread through the CycleState (:class:`MatchedPods`); existing pods with
terms are kept grouped by equal terms across cycles (:class:`PodGroups`), so symmetry and
scoring match each distinct term once instead of once per pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Action,
    AffinityTerm,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    ConfigError,
    CycleState,
    FilterResult,
    Handle,
    IntArray,
    LabelSelector,
    NodeSummary,
    NodeTableView,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.plugins.helper.matched_pods import MatchedPods, matched_pods, rows_of
from scheduler.plugins.helper.row_memo import TableFacts

# Collections, the concrete types the cache hands out first: isinstance stops at the first
# match, and the ABC's own check costs ten times as much.
_COLLECTIONS: tuple[type, ...] = (list, tuple, type({}.values()), Collection)

NAME = "InterPodAffinity"

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

DEFAULT_ARGS: Mapping[str, Any] = {
    "hardPodAffinityWeight": 1,
    "ignorePreferredTermsOfExistingPods": False,
}

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def validate_args(args: Mapping[str, Any], path: str) -> None:
    """ValidateInterPodAffinityArgs; raises :class:`ConfigError` naming the bad field."""
    errors: list[str] = []
    for key in sorted(set(args) - set(DEFAULT_ARGS)):
        errors.append(f"{path}.{key}: Invalid value: unknown field")
    merged = {**DEFAULT_ARGS, **args}
    weight = merged["hardPodAffinityWeight"]
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int)
        or not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT
    ):
        errors.append(
            f"{path}.hardPodAffinityWeight: Invalid value: {weight!r}: not in valid range "
            f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
        )
    ignore = merged["ignorePreferredTermsOfExistingPods"]
    if not isinstance(ignore, bool):
        errors.append(
            f"{path}.ignorePreferredTermsOfExistingPods: Invalid value: {ignore!r}: "
            "must be a boolean"
        )
    if errors:
        raise ConfigError("; ".join(errors))


# -- matching pods, shared per cycle ----------------------------------------------------------
# -- terms ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Term:
    """An incoming pod's term with its namespaces resolved (namespaceSelector unrolled)."""

    selector: LabelSelector
    namespaces: frozenset[str]
    all_namespaces: bool  # an empty namespaceSelector ({}) selects every namespace
    topology_key: str
    weight: int

    def matches(self, pod: PodInfo) -> bool:
        return (
            self.all_namespaces or pod.namespace in self.namespaces
        ) and self.selector.matches(pod.labels)

    def pods(self, state: CycleState | None, snapshot: ClusterSnapshot) -> MatchedPods:
        return matched_pods(state, snapshot, self.namespaces, self.selector)


def _is_everything(selector: LabelSelector | None) -> bool:
    return selector is not None and not selector.matches_nothing and not selector.requirements


def _resolve(snapshot: ClusterSnapshot, pod: PodInfo, term: AffinityTerm) -> _Term:
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(snapshot.namespaces_of(term))
    return _Term(
        selector=term.selector,
        namespaces=namespaces,
        all_namespaces=_is_everything(term.namespace_selector),
        topology_key=term.topology_key,
        weight=int(term.weight),
    )


def _domain_counts(
    snapshot: ClusterSnapshot, key: str, rows: IntArray
) -> tuple[IntArray, IntArray]:
    """(domain ids per node row, matching pods per domain) for pods on node ``rows``."""
    ids, values = snapshot.domains(key)
    rows = rows[rows >= 0]
    domains = ids.take(rows)
    domains = domains[domains >= 0]
    counts = np.bincount(domains, minlength=max(len(values), 1)).astype(np.int64)
    return ids, counts


# -- filter state ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _FilterState:
    pod: PodInfo
    namespace_labels: Mapping[str, str]
    affinity_terms: tuple[_Term, ...]
    affinity_ids: tuple[IntArray, ...]  # per term: per node row, domain id of the key
    affinity_counts: tuple[IntArray, ...]  # per term: pods matching *all* terms, per domain
    affinity_total: int  # 0 means upstream's affinity map is empty
    self_match: bool  # the pod matches all of its own affinity terms
    anti_terms: tuple[_Term, ...]
    anti_ids: tuple[IntArray, ...]
    anti_counts: tuple[IntArray, ...]  # per term: pods matching the term, per domain
    anti_total: int
    existing_ids: Mapping[str, IntArray]  # topology key -> per node row domain id
    existing_counts: Mapping[str, IntArray]  # topology key -> per domain: existing pods whose
    # required anti-affinity term with that key matches the incoming pod

    def with_pods(
        self,
        snapshot: ClusterSnapshot,
        row: int,
        added: Sequence[PodInfo],
        removed: Sequence[PodInfo],
    ) -> _FilterState:
        """The state as if ``added`` were on node ``row`` and ``removed`` were not."""
        aff = list(self.affinity_counts)
        anti = list(self.anti_counts)
        ex_ids = dict(self.existing_ids)
        ex_counts = dict(self.existing_counts)
        copied: set[tuple[str, int | str]] = set()
        aff_total, anti_total = self.affinity_total, self.anti_total

        def bump(arrays: list[IntArray], i: int, domain: int, delta: int, tag: str) -> None:
            if (tag, i) not in copied:
                arrays[i] = arrays[i].copy()
                copied.add((tag, i))
            arrays[i][domain] += delta

        changes = [(p, 1) for p in added] + [(p, -1) for p in removed]
        for other, delta in changes:
            for term in other.required_anti_affinity:
                if not term.matches_pod(self.pod.namespace, self.pod.labels,
                                        self.namespace_labels):
                    continue
                key = term.topology_key
                if key not in ex_ids:
                    ids, values = snapshot.domains(key)
                    ex_ids[key] = ids
                    ex_counts[key] = np.zeros(max(len(values), 1), dtype=np.int64)
                    copied.add(("existing", key))
                domain = int(ex_ids[key][row])
                if domain < 0:
                    continue
                if ("existing", key) not in copied:
                    ex_counts[key] = ex_counts[key].copy()
                    copied.add(("existing", key))
                ex_counts[key][domain] += delta
            if self.affinity_terms and all(t.matches(other) for t in self.affinity_terms):
                for i in range(len(self.affinity_terms)):
                    domain = int(self.affinity_ids[i][row])
                    if domain >= 0:
                        bump(aff, i, domain, delta, "affinity")
                        aff_total += delta
            for i, t in enumerate(self.anti_terms):
                if t.matches(other):
                    domain = int(self.anti_ids[i][row])
                    if domain >= 0:
                        bump(anti, i, domain, delta, "anti")
                        anti_total += delta
        return dataclasses.replace(
            self,
            affinity_counts=tuple(aff),
            affinity_total=aff_total,
            anti_counts=tuple(anti),
            anti_total=anti_total,
            existing_ids=ex_ids,
            existing_counts=ex_counts,
        )


_REASON_NONE, _REASON_AFFINITY, _REASON_ANTI, _REASON_EXISTING = 0, 1, 2, 3


def _positive_in_domain(ids: IntArray, counts: IntArray, rows: IntArray) -> BoolArray:
    """Per row: the node has the key and its domain's count is > 0."""
    domains = ids.take(rows)
    has = domains >= 0
    result: BoolArray = has & (counts[np.where(has, domains, 0)] > 0)
    return result


def _filter_rows(s: _FilterState, rows: IntArray) -> IntArray:
    """Per row, the first failing check as a ``_REASON_*`` value."""
    reason = np.zeros(rows.shape[0], dtype=np.int64)
    if s.affinity_terms:
        has_all = np.ones(rows.shape[0], dtype=np.bool_)
        exists = np.ones(rows.shape[0], dtype=np.bool_)
        for ids, counts in zip(s.affinity_ids, s.affinity_counts, strict=True):
            has_all &= ids.take(rows) >= 0
            exists &= _positive_in_domain(ids, counts, rows)
        first_of_group = s.affinity_total <= 0 and s.self_match
        reason[~(has_all & (exists | first_of_group))] = _REASON_AFFINITY
    if s.anti_total > 0:
        bad = np.zeros(rows.shape[0], dtype=np.bool_)
        for ids, counts in zip(s.anti_ids, s.anti_counts, strict=True):
            bad |= _positive_in_domain(ids, counts, rows)
        reason[bad & (reason == _REASON_NONE)] = _REASON_ANTI
    if s.existing_counts:
        bad = np.zeros(rows.shape[0], dtype=np.bool_)
        for key, counts in s.existing_counts.items():
            bad |= _positive_in_domain(s.existing_ids[key], counts, rows)
        reason[bad & (reason == _REASON_NONE)] = _REASON_EXISTING
    return reason


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


# -- existing pods grouped by their terms ------------------------------------------------------
def _anti_affinity_key(pod: PodInfo) -> Hashable:
    return pod.required_anti_affinity


def _scoring_key(pod: PodInfo) -> Hashable:
    return (pod.required_affinity, pod.preferred_affinity, pod.preferred_anti_affinity)


def _row_node(nodes: NodeTableView, row: int) -> object:
    """What a group's rows read of a row: the name of its node ("" for none)."""
    return nodes.names[row]


class PodGroups:
    """Accounted pods grouped by a key (equal terms, same owner), kept across cycles.

    Replicas of one workload carry equal terms: 10,000 pods with anti-affinity are typically a
    few dozen groups, so each distinct term is matched once per cycle instead of once per pod.
    The grouping follows the cache incrementally: pods are compared by identity with the
    previous cycle's (the cache replaces a PodInfo when the pod changes), so a cycle pays a
    dictionary lookup per pod. ``source`` identifies the cache; a new one resets the groups.
    """

    def __init__(self, key_of: Callable[[PodInfo], Hashable]) -> None:
        self._key_of = key_of
        self._source: object = None
        self._pods: dict[str, PodInfo] = {}
        self._key: dict[str, Hashable] = {}
        self.members: dict[Hashable, dict[str, PodInfo]] = {}
        # Node rows of each group's pods, valid while the group and the node set are unchanged.
        self._rows: dict[Hashable, IntArray] = {}
        self._node_set = TableFacts(_row_node)

    def rows(self, key: Hashable, snapshot: ClusterSnapshot) -> IntArray:
        """Node rows of the group's pods (-1 for a node the table does not hold)."""
        if self._node_set.changed(snapshot.nodes):
            self._rows.clear()
        cached = self._rows.get(key)
        if cached is None:
            cached = self._rows[key] = rows_of(snapshot, self.members[key].values())
        return cached

    def refresh(self, source: object, current: Iterable[PodInfo]) -> None:
        if source is not self._source:
            self._source = source
            self._pods.clear()
            self._key.clear()
            self.members.clear()
            self._rows.clear()
        pods = cast(Collection[PodInfo], current) if isinstance(current, _COLLECTIONS) \
            else list(current)
        known = self._pods
        for p in pods:
            if known.get(p.uid) is not p:
                self._discard(p.uid)
                self._add(p)
        if len(known) != len(pods):
            live = {p.uid for p in pods}
            for uid in [u for u in known if u not in live]:
                self._discard(uid)

    def _add(self, pod: PodInfo) -> None:
        key = self._key_of(pod)
        try:
            group = self.members.setdefault(key, {})
        except TypeError:  # unhashable terms: a group of its own
            key = ("uid", pod.uid)
            group = self.members.setdefault(key, {})
        group[pod.uid] = pod
        self._pods[pod.uid] = pod
        self._key[pod.uid] = key
        self._rows.pop(key, None)

    def _discard(self, uid: str) -> None:
        if self._pods.pop(uid, None) is None:
            return
        key = self._key.pop(uid)
        group = self.members[key]
        del group[uid]
        self._rows.pop(key, None)
        if not group:
            del self.members[key]


# -- the plugin -----------------------------------------------------------------------------
class InterPodAffinity:
    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (see interface.NodeView).
    filter_reads_pod_lists = True

    def __init__(self, args: Mapping[str, Any]) -> None:
        merged = {**DEFAULT_ARGS, **args}
        self.hard_pod_affinity_weight = int(merged["hardPodAffinityWeight"])
        self.ignore_preferred_terms_of_existing_pods = bool(
            merged["ignorePreferredTermsOfExistingPods"]
        )
        self._anti_groups = PodGroups(_anti_affinity_key)
        self._scoring_groups = PodGroups(_scoring_key)

    # -- PreFilter / Filter -----------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        ns_labels = snapshot.namespace_labels(pod.namespace)
        affinity = tuple(_resolve(snapshot, pod, t) for t in pod.required_affinity)
        anti = tuple(_resolve(snapshot, pod, t) for t in pod.required_anti_affinity)

        # Existing pods' required anti-affinity terms that the incoming pod matches.
        rows_by_key: dict[str, list[IntArray]] = {}
        groups = self._anti_groups
        groups.refresh(snapshot.source, snapshot.pods_with_required_anti_affinity())
        for group_key, members in groups.members.items():
            terms = next(iter(members.values())).required_anti_affinity
            keys = [
                t.topology_key
                for t in terms
                if t.matches_pod(pod.namespace, pod.labels, ns_labels)
            ]
            if not keys:
                continue
            rows = groups.rows(group_key, snapshot)
            for key in keys:
                rows_by_key.setdefault(key, []).append(rows)
        existing_ids: dict[str, IntArray] = {}
        existing_counts: dict[str, IntArray] = {}
        for key, parts in rows_by_key.items():
            ids, counts = _domain_counts(snapshot, key, np.concatenate(parts))
            if counts.any():
                existing_ids[key] = ids
                existing_counts[key] = counts

        # Existing pods matching all of the incoming pod's affinity terms.
        affinity_ids: list[IntArray] = []
        affinity_counts: list[IntArray] = []
        if affinity:
            first, rest = affinity[0], affinity[1:]
            candidates = first.pods(state, snapshot)
            if rest:
                keep = [i for i, p in enumerate(candidates.pods) if all(t.matches(p) for t in rest)]
                rows_all = candidates.rows[np.asarray(keep, dtype=np.int64)]
            else:
                rows_all = candidates.rows
            for t in affinity:
                ids, counts = _domain_counts(snapshot, t.topology_key, rows_all)
                affinity_ids.append(ids)
                affinity_counts.append(counts)
        # Existing pods matching any of the incoming pod's anti-affinity terms.
        anti_ids: list[IntArray] = []
        anti_counts: list[IntArray] = []
        for t in anti:
            ids, counts = _domain_counts(
                snapshot, t.topology_key, t.pods(state, snapshot).rows
            )
            anti_ids.append(ids)
            anti_counts.append(counts)

        if not existing_counts and not affinity and not anti:
            return None, SKIP
        state.write(
            PRE_FILTER_STATE_KEY,
            _FilterState(
                pod=pod,
                namespace_labels=ns_labels,
                affinity_terms=affinity,
                affinity_ids=tuple(affinity_ids),
                affinity_counts=tuple(affinity_counts),
                affinity_total=int(sum(int(c.sum()) for c in affinity_counts)),
                self_match=bool(affinity) and all(t.matches(pod) for t in affinity),
                anti_terms=anti,
                anti_ids=tuple(anti_ids),
                anti_counts=tuple(anti_counts),
                anti_total=int(sum(int(c.sum()) for c in anti_counts)),
                existing_ids=existing_ids,
                existing_counts=existing_counts,
            ),
        )
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        s: _FilterState | None = state.get(PRE_FILTER_STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        if s is None:
            result.reject(
                np.ones(len(nodes), dtype=np.bool_),
                Code.ERROR,
                f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
            )
            return result
        reason = _filter_rows(s, nodes.idx)
        for pos, row, added, removed in nodes.delta_rows():
            adjusted = s.with_pods(nodes.snapshot, row, added, removed)
            reason[pos] = _filter_rows(adjusted, nodes.idx[pos : pos + 1])[0]
        result.reject(
            reason == _REASON_AFFINITY,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_AFFINITY_RULES_NOT_MATCH,
        )
        result.reject(
            reason == _REASON_ANTI, Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
        )
        result.reject(
            reason == _REASON_EXISTING,
            Code.UNSCHEDULABLE,
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
        )
        return result

    # -- PreScore / Score / NormalizeScore --------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        snapshot = nodes.snapshot
        has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        acc = _ScoreAccumulator(snapshot)
        for term in pod.preferred_affinity:
            t = _resolve(snapshot, pod, term)
            acc.add_rows(t.topology_key, t.pods(state, snapshot).rows, t.weight)
        for term in pod.preferred_anti_affinity:
            t = _resolve(snapshot, pod, term)
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

    # -- events -----------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD,
                    Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE,
                ),
                self._after_assigned_pod_change,
            ),
            # The pod's own labels changed: some existing anti-affinity may no longer apply.
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
                self._after_node_change,
            ),
        ]

    def _after_assigned_pod_change(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        for other in (old, new):
            if other is not None and not other.node_name and not other.nominated_node_name:
                return QueueingHint.SKIP
        affinity = pod.required_affinity
        anti = pod.required_anti_affinity
        if old is not None and new is not None:
            if not _matches_all(affinity, pod, old) and _matches_all(affinity, pod, new):
                return QueueingHint.QUEUE
            if _matches_any(anti, pod, old) and not _matches_any(anti, pod, new):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if _matches_all(affinity, pod, new) else QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if _matches_any(anti, pod, old):
            return QueueingHint.QUEUE
        if _matches_any(old.required_anti_affinity, old, pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def _after_node_change(
        self, pod: Any, old: NodeSummary | None, new: NodeSummary
    ) -> QueueingHint:
        try:
            old_labels = None if old is None else old.labels
            new_labels = new.labels
            affinity = pod.required_affinity
            anti = pod.required_anti_affinity
        except (AttributeError, TypeError, KeyError):
            return QueueingHint.QUEUE
        for term in affinity:
            key = term.topology_key
            if old_labels is None:
                if key in new_labels:
                    return QueueingHint.QUEUE
                continue
            if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.QUEUE
        for term in anti:
            key = term.topology_key
            if old_labels is None:
                return QueueingHint.QUEUE
            if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _matches_all(terms: Sequence[AffinityTerm], owner: Any, target: Any) -> bool:
    """podMatchesAllAffinityTerms: non-empty and every term of ``owner`` matches ``target``.

    Namespace selectors are not resolved here (hints have no snapshot); a term with one is
    treated as matching every namespace, which can only queue more, never fewer, pods.
    """
    if not terms:
        return False
    return all(_term_matches(t, owner, target) for t in terms)


def _matches_any(terms: Sequence[AffinityTerm], owner: Any, target: Any) -> bool:
    return any(_term_matches(t, owner, target) for t in terms)


def _term_matches(term: AffinityTerm, owner: Any, target: Any) -> bool:
    if term.namespace_selector is not None:
        namespace_ok = True
    elif term.namespaces:
        namespace_ok = target.namespace in term.namespaces
    else:
        namespace_ok = target.namespace == owner.namespace
    return namespace_ok and term.selector.matches(target.labels)




def new(args: Mapping[str, Any], handle: Handle) -> InterPodAffinity:
    validate_args(args, f"{NAME}Args")
    return InterPodAffinity(args)


SPEC = PluginSpec(name=NAME, factory=new, default_args=DEFAULT_ARGS, validate=validate_args)
