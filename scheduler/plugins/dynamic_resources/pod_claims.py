"""Which ResourceClaims a pod uses, found as upstream finds them.

Upstream: ``foreachPodResourceClaim`` in ``pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources.go`` and ``k8s.io/dynamic-resource-allocation/resourceclaim``
(``Name``, ``IsForPod``, ``IsReservedForPod``). A pod names a claim directly
(``resourceClaimName``) or through a template, whose claim the resourceclaim controller creates
and records in the pod's ``status.resourceClaimStatuses``; such a claim must be owned by the
pod. Every failure is a message of upstream's, word for word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import DraManager, PodInfo, ResourceClaim

# resourceclaim.ErrClaimNotFound, resourceclaim.ErrAPIUnsupported
ERR_CLAIM_NOT_CREATED = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "none of the supported fields are set"


class ClaimLookupError(Exception):
    """The pod cannot be scheduled until its claims exist as it needs them."""


def pod_claim_entries(pod: PodInfo) -> Sequence[Mapping[str, Any]]:
    """``pod.spec.resourceClaims``; empty for nearly every pod, cheaply."""
    spec = pod.raw.get("spec")
    # dict, not the Mapping ABC: an ABC's isinstance costs more than the rest (the API's
    # objects are dicts).
    entries = spec.get("resourceClaims") if isinstance(spec, dict) else None
    return entries if isinstance(entries, list) else ()


def claim_name(pod: PodInfo, entry: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (None: the controller decided none is
    needed), and whether the claim must be owned by the pod (it came from a template)."""
    direct = entry.get("resourceClaimName")
    if direct is not None:
        return str(direct), False
    if entry.get("resourceClaimTemplateName") is not None:
        status = pod.raw.get("status")
        statuses = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
        for recorded in statuses or ():
            if isinstance(recorded, Mapping) and recorded.get("name") == entry.get("name"):
                name = recorded.get("resourceClaimName")
                return (None if name is None else str(name)), True
        raise ClaimLookupError(f'pod "{pod.namespace}/{pod.name}": {ERR_CLAIM_NOT_CREATED}')
    raise ClaimLookupError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.get("name", "")}": '
        f"{ERR_API_UNSUPPORTED}"
    )


def pod_claims(pod: PodInfo, dra: DraManager) -> list[ResourceClaim]:
    """``podResourceClaims`` (``foreachPodResourceClaim``): the pod's claims in spec order,
    as the DRA manager has them (assumed versions included); ClaimLookupError when one is
    not created yet, missing, being deleted, or not the pod's own."""
    claims = []
    for entry in pod_claim_entries(pod):
        name, must_check_owner = claim_name(pod, entry)
        if name is None:
            continue
        claim = dra.claim(pod.namespace, name)
        if claim is None:
            # The assume cache's NotFoundError.
            raise ClaimLookupError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
        if claim.deleting:
            raise ClaimLookupError(f'resourceclaim "{claim.name}" is being deleted')
        if must_check_owner and pod.uid not in claim.owner_uids:
            raise ClaimLookupError(
                f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod "
                f"{pod.namespace}/{pod.name} (Pod is not owner)"
            )
        claims.append(claim)
    return claims


def is_reserved_for(pod: PodInfo, claim: ResourceClaim) -> bool:
    """``resourceclaim.IsReservedForPod`` (PodGroup reservations are off in v1.37)."""
    return any(ref.uid == pod.uid for ref in claim.reserved_for)
