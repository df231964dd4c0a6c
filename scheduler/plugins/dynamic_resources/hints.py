"""The cluster events that may make a pod DynamicResources rejected schedulable, with
upstream's queueing hints (``EventsToRegister``, ``isSchedulableAfterClaimChange``,
``isSchedulableAfterTargetPodUpdate`` in ``dynamicresources.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    DraManager,
    PodInfo,
    QueueingHint,
    Resource,
    ResourceClaim,
)
from scheduler.plugins.dynamic_resources.pod_claims import (
    ClaimLookupError,
    pod_claim_entries,
    pod_claims,
)


def register_events(dra: DraManager) -> Sequence[ClusterEventWithHint]:
    def after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        return schedulable_after_claim_change(dra, pod, old, new)

    def after_pod_update(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        return schedulable_after_pod_update(dra, pod, old, new)

    return [
        ClusterEventWithHint(ClusterEvent(
            Resource.NODE,
            Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_ALLOCATABLE)),
        ClusterEventWithHint(ClusterEvent(
            Resource.RESOURCE_CLAIM, Action.ADD | Action.UPDATE | Action.DELETE),
            after_claim_change),
        ClusterEventWithHint(ClusterEvent(
            Resource.UNSCHEDULED_POD, Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            after_pod_update),
        ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE)),
        ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, Action.ADD | Action.UPDATE)),
    ]


def schedulable_after_claim_change(
    dra: DraManager, pod: PodInfo, old: ResourceClaim | None, new: ResourceClaim | None
) -> QueueingHint:
    """``isSchedulableAfterClaimChange``: a claim of the pod was created or its status
    changed, or any claim lost its allocation (its devices are free again)."""
    if new is None:
        return QueueingHint.QUEUE if old is not None and old.allocation is not None \
            else QueueingHint.SKIP
    deallocated = old is not None and old.allocation is not None and new.allocation is None
    if not deallocated and not _may_name(pod, new):
        # What the lookups below would answer, without them: a claim change runs this for
        # every pending pod, and a pod's lookups take the DRA manager's lock per claim.
        return QueueingHint.SKIP
    try:
        uses_claim = any(c.uid == new.uid for c in pod_claims(pod, dra))
    except ClaimLookupError:
        return QueueingHint.SKIP
    if deallocated:
        return QueueingHint.QUEUE
    if not uses_claim:
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    if old.raw.get("status") == new.raw.get("status"):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _may_name(pod: PodInfo, claim: ResourceClaim) -> bool:
    """Whether ``claim`` can be one of the pod's: its name is one the pod's spec names, or
    one the resourceclaim controller recorded in the pod's status."""
    if claim.namespace != pod.namespace:
        return False
    if any(e.get("resourceClaimName") == claim.name for e in pod_claim_entries(pod)):
        return True
    status = pod.raw.get("status")
    recorded = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
    return any(isinstance(r, Mapping) and r.get("resourceClaimName") == claim.name
               for r in recorded or ())


def schedulable_after_pod_update(
    dra: DraManager, pod: PodInfo, old: Any, new: Any
) -> QueueingHint:
    """``isSchedulableAfterTargetPodUpdate``: the resourceclaim controller recorded a
    generated claim in the pod's status; queue once every claim can be found."""
    updated = new if isinstance(new, PodInfo) else pod
    try:
        pod_claims(updated, dra)
    except ClaimLookupError:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE
