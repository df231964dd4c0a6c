"""InterPodAffinity's PreFilter and Filter (upstream ``filtering.go``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
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
from scheduler.plugins.inter_pod_affinity.args import NAME
from scheduler.plugins.inter_pod_affinity.terms import PodGroups, Term, domain_counts, resolve

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

# -- filter state ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _FilterState:
    pod: PodInfo
    namespace_labels: Mapping[str, str]
    affinity_terms: tuple[Term, ...]
    affinity_ids: tuple[IntArray, ...]  # per term: per node row, domain id of the key
    affinity_counts: tuple[IntArray, ...]  # per term: pods matching *all* terms, per domain
    affinity_total: int  # 0 means upstream's affinity map is empty
    self_match: bool  # the pod matches all of its own affinity terms
    anti_terms: tuple[Term, ...]
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
        elsewhere: Sequence[PodInfo] = (),
    ) -> _FilterState:
        """The state as if ``added`` were on node ``row`` and ``removed`` were not, nor
        ``elsewhere`` on their own nodes (upstream's AddPod/RemovePod, each with the pod's
        node)."""
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

        changes = _changes_by_node(snapshot, row, added, removed, elsewhere)
        for other, at, delta in changes:
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
                domain = int(ex_ids[key][at])
                if domain < 0:
                    continue
                if ("existing", key) not in copied:
                    ex_counts[key] = ex_counts[key].copy()
                    copied.add(("existing", key))
                ex_counts[key][domain] += delta
            if self.affinity_terms and all(t.matches(other) for t in self.affinity_terms):
                for i in range(len(self.affinity_terms)):
                    domain = int(self.affinity_ids[i][at])
                    if domain >= 0:
                        bump(aff, i, domain, delta, "affinity")
                        aff_total += delta
            for i, t in enumerate(self.anti_terms):
                if t.matches(other):
                    domain = int(self.anti_ids[i][at])
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


def _changes_by_node(
    snapshot: ClusterSnapshot,
    row: int,
    added: Sequence[PodInfo],
    removed: Sequence[PodInfo],
    elsewhere: Sequence[PodInfo],
) -> list[tuple[PodInfo, int, int]]:
    """(pod, its node's row, +1 or -1): ``added`` and ``removed`` on ``row``, ``elsewhere``
    removed from their own nodes (a node gone from the snapshot has no domain to change)."""
    changes = [(p, row, 1) for p in added] + [(p, row, -1) for p in removed]
    for p in elsewhere:
        at = snapshot.row_of(p.node_name)
        if at is not None:
            changes.append((p, at, -1))
    return changes


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


class Filtering:
    """PreFilter and Filter of :class:`~.plugin.InterPodAffinity`."""

    _anti_groups: PodGroups


    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        ns_labels = snapshot.namespace_labels(pod.namespace)
        affinity = tuple(resolve(snapshot, pod, t) for t in pod.required_affinity)
        anti = tuple(resolve(snapshot, pod, t) for t in pod.required_anti_affinity)

        existing_ids, existing_counts = self._existing_anti_affinity(pod, snapshot, ns_labels)
        affinity_ids, affinity_counts = _affinity_counts(state, snapshot, affinity)
        # Existing pods matching any of the incoming pod's anti-affinity terms.
        anti_ids: list[IntArray] = []
        anti_counts: list[IntArray] = []
        for t in anti:
            ids, counts = domain_counts(
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

    def _existing_anti_affinity(
        self, pod: PodInfo, snapshot: ClusterSnapshot, ns_labels: Mapping[str, str]
    ) -> tuple[dict[str, IntArray], dict[str, IntArray]]:
        """Per topology key, domain ids and counts of the existing pods whose required
        anti-affinity terms the incoming pod matches (keys with no such pod left out)."""
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
            ids, counts = domain_counts(snapshot, key, np.concatenate(parts))
            if counts.any():
                existing_ids[key] = ids
                existing_counts[key] = counts
        return existing_ids, existing_counts

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
        for pos, row, added, removed, elsewhere in nodes.delta_rows_across_nodes():
            adjusted = s.with_pods(nodes.snapshot, row, added, removed, elsewhere)
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


def _affinity_counts(
    state: CycleState, snapshot: ClusterSnapshot, affinity: tuple[Term, ...]
) -> tuple[list[IntArray], list[IntArray]]:
    """Per affinity term, domain ids and counts of the existing pods matching all terms."""
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
            ids, counts = domain_counts(snapshot, t.topology_key, rows_all)
            affinity_ids.append(ids)
            affinity_counts.append(counts)
    return affinity_ids, affinity_counts
