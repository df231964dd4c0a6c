"""NodeResourcesFit: the node must have room for the pod's requests; score by allocation.

Upstream ``noderesources/fit.go`` and its scorers (v1.37).

Filter, per node (all shortages are reported, in this order):

- ``Too many pods`` when ``pods + 1 > allocatable pods`` (even for a pod that requests
  nothing); always Unschedulable.
- ``Insufficient cpu``, ``Insufficient memory``, ``Insufficient ephemeral-storage``, then
  ``Insufficient <name>`` for each requested scalar resource (extended, hugepages,
  ``kubernetes.io/*``) in the order the pod declares them, when
  ``request > allocatable - requested``. Extended resources named in ``ignoredResources``
  or whose prefix (before ``/``) is in ``ignoredResourceGroups`` are not checked. A shortage
  where the request exceeds the node's whole allocatable makes the node
  UnschedulableAndUnresolvable, so preemption never targets it.

Score, with ``scoringStrategy`` (default ``LeastAllocated`` over cpu and memory, weight 1):
requested = node's requests + pod's, with cpu and memory taken with upstream's non-zero
defaults (100m / 200Mi per container that requests nothing). A resource the node has none of
is left out (of the weights too); a scalar resource the pod does not request is left out.

- ``LeastAllocated``: ``Σ w·((alloc - req)·100 / alloc) / Σ w`` (0 for an over-full resource).
- ``MostAllocated``: ``Σ w·(min(req, alloc)·100 / alloc) / Σ w``.
- ``RequestedToCapacityRatio``: the broken-linear ``shape`` (scores ×10) of
  ``req·100 / alloc`` (100 when over-full); only resources scoring > 0 count; rounded.

All divisions are Go's integer divisions. Everything is computed for the whole batch of rows
with numpy; rows carrying hypothetical pods already have them in ``NodeView.requested``, and
their non-zero cpu/memory is adjusted here.

Extended resources backed by DRA device classes (``DRAExtendedResource``, GA in v1.37): on
a node that does not offer such a resource in ``status.allocatable``, Filter leaves it to
DynamicResources (``shouldDelegateResourceToDRA``), and Score, when the strategy lists it,
counts the node's devices the class selects as its allocatable and those in use as its
requested (``calculateDRAResourceTotals``), read again each cycle.
"""

from scheduler.plugins.node_resources_fit.args import NodeResourcesFitArgs
from scheduler.plugins.node_resources_fit.fit import (
    NAME,
    SPEC,
    NodeResourcesFit,
    compute_pod_resource_request,
    fits_empty_node,
    insufficient_reason,
    new,
)

__all__ = [
    "NAME",
    "SPEC",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "compute_pod_resource_request",
    "fits_empty_node",
    "insufficient_reason",
    "new",
]
