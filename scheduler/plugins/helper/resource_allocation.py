"""A pod's requests against the nodes' allocatable, for every node of a view at once
(upstream ``noderesources/resource_allocation.go``), and the defaults of the ``resources``
lists with weights of the NodeResources plugins' arguments.

A DRA-backed extended resource (one a DeviceClass serves, DRAExtendedResource) that a node
does not offer in its allocatable is counted from the node's devices instead: allocatable
is the number of its devices the class selects, allocated those of them in use
(``calculateDRAResourceTotals``), when :class:`DraScoring` is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from scheduler.plugin_api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    AllocatedDevices,
    BoolArray,
    CELError,
    Device,
    DeviceClass,
    DraManager,
    IntArray,
    NodeView,
    PodInfo,
    ResourceSlice,
    SelectorCache,
    is_dra_extended_resource_name,
    is_scalar_resource,
)
from scheduler.plugins.helper.dra_nodes import node_matches

log = structlog.get_logger("scheduler.plugins.resource_allocation")

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


def requests_reader(
    resources: Sequence[ResourceSpec], *, use_requested: bool
) -> Callable[[PodInfo], tuple[int, ...]]:
    """The pod's :func:`pod_request` of each of ``resources``, read as one plugin reads it,
    chosen once per plugin: the default cpu and memory without a loop or a call per
    resource (every pod scored pays for it, twice)."""
    names = tuple(r.name for r in resources)
    if names == (CPU, MEMORY):
        if use_requested:
            return lambda pod: (int(pod.requests.get(CPU, 0)), int(pod.requests.get(MEMORY, 0)))
        return lambda pod: (int(pod.non_zero_cpu), int(pod.non_zero_memory))
    return lambda pod: tuple(pod_request(pod, name, use_requested) for name in names)


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
    dra: DraScoring | None = None,
) -> AllocationInputs:
    """Upstream ``calculateNodeAllocatableRequest`` for every resource and node at once; cpu
    and memory count non-zero requests unless ``use_requested``; with ``dra``, a requested
    DRA-backed extended resource is counted from the devices of the nodes that have none of
    it in their allocatable."""
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
    if dra is not None:
        _fill_dra_backed(nodes, resources, pod_requests, dra, allocatable, used)
    pod = np.asarray(pod_requests, dtype=np.int64)[:, None]
    present = allocatable != 0
    if present.all():
        return AllocationInputs(used + pod, used, allocatable, None, allocatable)
    return AllocationInputs(
        np.where(present, used + pod, 0), np.where(present, used, 0), allocatable, present,
        np.where(present, allocatable, 1),
    )



# -- DRA-backed extended resources ----------------------------------------------------------
def may_be_dra_backed(resources: Sequence[ResourceSpec]) -> tuple[ResourceSpec, ...]:
    """The resources a DeviceClass may serve, by their names (none of the default cpu and
    memory): all that :meth:`DraScoring.of` needs to be asked about."""
    return tuple(r for r in resources if is_dra_extended_resource_name(r.name))


@dataclass(frozen=True)
class DraScoring:
    """What scoring reads of DRA for one pod (upstream's ``draPreScoreState``, with the DRA
    manager and the CEL cache of the scorer): the devices in use and the slices."""

    manager: DraManager
    allocated: AllocatedDevices
    slices: Sequence[ResourceSlice]
    cel_cache: SelectorCache

    @classmethod
    def of(cls, manager: DraManager | None, resources: Sequence[ResourceSpec],
           cel_cache: SelectorCache) -> DraScoring | None:
        """``getDRAPreScoredParams``: None when no resource of ``resources`` is served by a
        DeviceClass (nothing to count then). The name check goes first: for the default
        cpu and memory the manager is never asked. Every pod scored asks: a scorer passes
        its :func:`may_be_dra_backed` resources, found once."""
        if manager is None:
            return None
        for r in resources:
            if (is_dra_extended_resource_name(r.name)
                    and manager.class_for_extended_resource(r.name) is not None):
                return cls(manager, manager.allocated(), manager.slices(), cel_cache)
        return None

    def totals(self, resource_name: str, node_name: str,
               labels: Mapping[str, str]) -> tuple[int, int]:
        """``calculateDRAExtendedResourceAllocatableRequest``: (devices of the node the class
        of ``resource_name`` selects, those of them in use); (0, 0) when no class serves it
        or a selector fails, as upstream, which logs the error."""
        device_class = self.manager.class_for_extended_resource(resource_name)
        if device_class is None:
            return 0, 0
        capacity = allocated = 0
        try:
            for s in self.slices:
                for device in _devices_on_node(s, node_name, labels):
                    if self._class_selects(device_class, s.driver, device):
                        capacity += 1
                        allocated += self.allocated.is_allocated((s.driver, s.pool, device.name))
        except CELError as err:
            log.error("Failed to calculate DRA resource capacity and allocated", node=node_name,
                      resource=resource_name, device_class=device_class.name, error=str(err))
            return 0, 0
        return capacity, allocated

    def _class_selects(self, device_class: DeviceClass, driver: str, device: Device) -> bool:
        """``deviceMatchesClass``: every CEL selector of the class; a compile or runtime
        error raises :class:`CELError`."""
        for expression in device_class.selectors:
            if expression is None:
                continue
            compiled = self.cel_cache.get_or_compile(expression)
            if compiled.error is not None:
                raise CELError(compiled.error)
            if not compiled.matches(device.cel_input(driver)):
                return False
        return True


def _devices_on_node(s: ResourceSlice, node_name: str,
                     labels: Mapping[str, str]) -> Sequence[Device]:
    """The devices of a slice that are on the node, as ``calculateDRAResourceTotals`` picks
    them: per device with per-device node selection, else the whole slice (a slice without
    a node name, ``allNodes`` or a selector counts everywhere, as upstream's)."""
    if s.per_device_node_selection:
        return [d for d in s.devices
                if d.all_nodes or (d.node_name and d.node_name == node_name)
                or (d.node_selector is not None
                    and node_matches(node_name, labels, d.node_name, d.all_nodes,
                                     d.node_selector))]
    if not s.all_nodes and s.node_name != node_name and s.node_selector is not None:
        if not node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector):
            return ()
    elif not s.all_nodes and s.node_name and s.node_name != node_name:
        return ()
    return s.devices


def _fill_dra_backed(
    nodes: NodeView, resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
    dra: DraScoring, allocatable: IntArray, used: IntArray,
) -> None:
    """``calculateResourceAllocatableRequest``'s DRA branch: for each scalar resource the pod
    requests, on each node without it in its allocatable, the counts of the node's devices
    (written into the resource-major ``allocatable`` and ``used``)."""
    table = nodes.snapshot.nodes
    for j, (spec, request) in enumerate(zip(resources, pod_requests, strict=True)):
        if not request or spec.name in _NATIVE or not is_scalar_resource(spec.name):
            continue
        for pos in np.flatnonzero(allocatable[j] == 0).tolist():
            row = int(nodes.idx[pos])
            capacity, allocated = dra.totals(spec.name, table.names[row], table.labels[row])
            if capacity > 0:
                allocatable[j, pos] = capacity
                used[j, pos] = allocated
