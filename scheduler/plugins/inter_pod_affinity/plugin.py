"""InterPodAffinity, the plugin: its filtering and scoring halves, arguments and queueing
hints (upstream ``plugin.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.plugin_api import (
    Action,
    AffinityTerm,
    ClusterEvent,
    ClusterEventWithHint,
    Handle,
    NodeSummary,
    PluginSpec,
    PodInfo,
    QueueingHint,
    Resource,
)
from scheduler.plugins.inter_pod_affinity.args import NAME, InterPodAffinityArgs
from scheduler.plugins.inter_pod_affinity.filtering import Filtering
from scheduler.plugins.inter_pod_affinity.scoring import Scoring
from scheduler.plugins.inter_pod_affinity.terms import PodGroups, anti_affinity_key, scoring_key


class InterPodAffinity(Filtering, Scoring):

    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (see interface.NodeView).
    filter_reads_pod_lists = True

    def __init__(self, args: InterPodAffinityArgs) -> None:
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self._anti_groups = PodGroups(anti_affinity_key)
        self._scoring_groups = PodGroups(scoring_key)


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




def new(args: InterPodAffinityArgs, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args)


SPEC = PluginSpec(name=NAME, factory=new, args=InterPodAffinityArgs)
