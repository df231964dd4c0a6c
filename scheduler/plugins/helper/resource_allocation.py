"""A pod's requests against the nodes' allocatable, for every node of a view at once
(upstream ``noderesources/resource_allocation.go``), and the defaults of the ``resources``
lists with weights of the NodeResources plugins' arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    BoolArray,
    IntArray,
    NodeView,
    PodInfo,
    is_scalar_resource,
)

DEFAULT_RESOURCES: tuple[Mapping[str, Any], ...] = (
    {"name": CPU, "weight": 1},
    {"name": MEMORY, "weight": 1},
)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int


def parse_resources(raw: Sequence[Mapping[str, Any]]) -> tuple[ResourceSpec, ...]:
    return tuple(ResourceSpec(str(r["name"]), int(r["weight"])) for r in raw)


def _nonzero_index(name: str) -> int:
    return 0 if name == CPU else 1


def pod_request(pod: PodInfo, name: str, use_requested: bool) -> int:
    """The pod's request of ``name``; cpu/memory with non-zero defaults unless ``use_requested``."""
    if not use_requested and name == CPU:
        return int(pod.non_zero_cpu)
    if not use_requested and name == MEMORY:
        return int(pod.non_zero_memory)
    return int(pod.requests.get(name, 0))


def _nonzero_deltas(nodes: NodeView) -> IntArray | None:
    """Per row: non-zero cpu/memory of the hypothetical pods added minus those removed."""
    if not nodes.has_deltas:
        return None
    out = np.zeros((len(nodes), 2), dtype=np.int64)
    for pos in range(len(nodes)):
        for p in nodes.added[pos] if nodes.added is not None else ():
            out[pos, 0] += p.non_zero_cpu
            out[pos, 1] += p.non_zero_memory
        for p in nodes.removed[pos] if nodes.removed is not None else ():
            out[pos, 0] -= p.non_zero_cpu
            out[pos, 1] -= p.non_zero_memory
    return out



_NATIVE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})


def _allocation_columns(
    nodes: NodeView, resources: Sequence[ResourceSpec], pod_requests: Sequence[int]
) -> list[int | None]:
    """The table column a score reads for each resource; None for a resource it skips: a
    scalar one the pod does not ask for, one it does not know, or one no node has."""
    column = nodes.snapshot.resources.column
    width = nodes.requested.shape[1]
    cols: list[int | None] = []
    for spec, request in zip(resources, pod_requests, strict=True):
        name = spec.name
        col = (column.get(name) if name in _NATIVE or (request and is_scalar_resource(name))
               else None)
        cols.append(col if col is not None and col < width else None)
    return cols


@dataclass(frozen=True)
class AllocationInputs:
    """One row per configured resource, one column per node of the view: requested (with the
    pod), allocated, allocatable. A skipped resource reads 0 allocatable (and 0 the others).
    ``present`` says which (resource, node) pairs have allocatable (None: all of them, the
    usual case); ``divisor`` is allocatable with 1 where there is none."""

    requested: IntArray
    allocated: IntArray
    allocatable: IntArray
    present: BoolArray | None
    divisor: IntArray


def allocation_inputs(
    nodes: NodeView,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
) -> AllocationInputs:
    """Upstream ``calculateNodeAllocatableRequest`` for every resource and node at once; cpu
    and memory count non-zero requests unless ``use_requested``."""
    table = nodes.snapshot.nodes
    cols = _allocation_columns(nodes, resources, pod_requests)
    taken = [0 if c is None else c for c in cols]
    # Resource-major: each resource's values are contiguous, and sums run across rows.
    allocatable = np.take(table.allocatable, nodes.idx, axis=0).T[taken]
    used = nodes.requested.T[taken]
    non_zero = [(j, _nonzero_index(spec.name)) for j, spec in enumerate(resources)
                if spec.name in (CPU, MEMORY) and cols[j] is not None]
    if non_zero and not use_requested:
        counted = np.take(table.non_zero_requested, nodes.idx, axis=0)
        deltas = _nonzero_deltas(nodes)
        if deltas is not None:
            counted = counted + deltas
        for j, k in non_zero:
            used[j] = counted[:, k]
    skipped = [j for j, c in enumerate(cols) if c is None]
    if skipped:
        allocatable[skipped] = 0
    pod = np.asarray(pod_requests, dtype=np.int64)[:, None]
    present = allocatable != 0
    if present.all():
        return AllocationInputs(used + pod, used, allocatable, None, allocatable)
    return AllocationInputs(
        np.where(present, used + pod, 0), np.where(present, used, 0), allocatable, present,
        np.where(present, allocatable, 1),
    )

