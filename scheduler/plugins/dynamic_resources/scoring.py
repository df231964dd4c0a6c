"""Score with DRAPrioritizedList (upstream's ``computeScore`` in ``dynamicresources.go``):
each ``firstAvailable`` subrequest the node's allocation used adds
``FirstAvailableDeviceRequestMaxSize - index``, so earlier choices score higher."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.plugin_api import AllocationResult, ResourceClaim

# resourceapi.FirstAvailableDeviceRequestMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8


def prioritized_list_score(
    claims: Sequence[ResourceClaim], node_allocations: Sequence[AllocationResult] | None
) -> int:
    """The node's raw score: claims allocated before count with their allocation, the
    others with the node's allocations, in order. 0 for a node without allocations."""
    if node_allocations is None:
        return 0
    score = 0
    unallocated = iter(node_allocations)
    for claim in claims:
        allocation = claim.allocation if claim.allocation is not None else next(unallocated)
        used = {r.request for r in allocation.results if r.request.count("/") == 1}
        for request in claim.spec.requests:
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in used:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
