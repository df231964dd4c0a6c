"""The incoming pod's terms resolved, domain counts, and existing pods grouped by their
terms across cycles: what InterPodAffinity's filtering and scoring share."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np

from scheduler.plugin_api import (
    AffinityTerm,
    ClusterSnapshot,
    CycleState,
    IntArray,
    LabelSelector,
    NodeTableView,
    PodInfo,
)
from scheduler.plugins.helper.matched_pods import MatchedPods, matched_pods, rows_of
from scheduler.plugins.helper.row_memo import TableFacts

# Collections, the concrete types the cache hands out first: isinstance stops at the first
# match, and the ABC's own check costs ten times as much.
_COLLECTIONS: tuple[type, ...] = (list, tuple, type({}.values()), Collection)

# -- terms ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Term:
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


def resolve(snapshot: ClusterSnapshot, pod: PodInfo, term: AffinityTerm) -> Term:
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(snapshot.namespaces_of(term))
    return Term(
        selector=term.selector,
        namespaces=namespaces,
        all_namespaces=_is_everything(term.namespace_selector),
        topology_key=term.topology_key,
        weight=int(term.weight),
    )


def domain_counts(
    snapshot: ClusterSnapshot, key: str, rows: IntArray
) -> tuple[IntArray, IntArray]:
    """(domain ids per node row, matching pods per domain) for pods on node ``rows``."""
    ids, values = snapshot.domains(key)
    rows = rows[rows >= 0]
    domains = ids.take(rows)
    domains = domains[domains >= 0]
    counts = np.bincount(domains, minlength=max(len(values), 1)).astype(np.int64)
    return ids, counts


# -- existing pods grouped by their terms ------------------------------------------------------
def anti_affinity_key(pod: PodInfo) -> Hashable:
    return pod.required_anti_affinity


def scoring_key(pod: PodInfo) -> Hashable:
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
