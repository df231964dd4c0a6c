"""The cluster events that may make a pod DynamicResources rejected schedulable, with
upstream's queueing hints (``EventsToRegister``, ``isSchedulableAfterClaimChange``,
``isSchedulableAfterTargetPodUpdate`` in ``dynamicresources.go``), and the claim index that
runs the claim hint only for the pending pods that can name the changed claim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    DraManager,
    HintIndex,
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
            after_claim_change, CLAIM_INDEX),
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
        # What the lookups below would answer, without them (the queue's CLAIM_INDEX
        # spares most such pods the call; a direct call still answers right).
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
    """Whether ``claim`` can be one of the pod's (:func:`claim_keys`)."""
    return claim.key in claim_keys(pod)


def claim_keys(pod: PodInfo) -> set[str]:
    """``namespace/name`` of every claim the pod can use: the names its spec gives, and the
    names of the claims made from its templates, which the resourceclaim controller records
    in the pod's status."""
    names = {e.get("resourceClaimName") for e in pod_claim_entries(pod)}
    status = pod.raw.get("status")
    recorded = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
    names.update(r.get("resourceClaimName") for r in recorded or () if isinstance(r, Mapping))
    return {f"{pod.namespace}/{name}" for name in names if isinstance(name, str) and name}


def _claim_event_keys(old: ResourceClaim | None, new: ResourceClaim | None
                      ) -> tuple[str, ...] | None:
    """The pods a claim event's hint can queue: every pod when the claim's devices were
    freed (deallocated, or deleted while allocated), else the pods that can name it."""
    if old is not None and old.allocation is not None and (
            new is None or new.allocation is None):
        return None
    changed = new if new is not None else old
    return () if changed is None else (changed.key,)


# The pending pods by the claims they can name: a claim's change runs the claim hint only
# for its own pods (and for all of them when it frees devices).
CLAIM_INDEX = HintIndex(claim_keys, _claim_event_keys)


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
