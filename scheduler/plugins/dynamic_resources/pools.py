"""Resource pools as the allocator sees them for one node.

Upstream: ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/
pools_incubating.go`` (``GatherPools``, ``NodeMatches``), the variant kube-scheduler v1.37
selects with its default feature gates. A pool is (driver, pool name); only its highest
generation counts; it is complete when as many slices as ``resourceSliceCount`` are known.
Pools are ordered by driver, then name, and pools with binding conditions come last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.plugin_api import CounterSet, ResourceSlice
from scheduler.plugins.helper.dra_nodes import node_matches


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)
    other_slices: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def _slice_is_relevant(s: ResourceSlice, node_name: str, labels: Mapping[str, str]) -> bool:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device_node_selection:
        return any(
            node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector)
            for d in s.devices
        )
    return False


def _add_slice(pools: dict[tuple[str, str], list[ResourceSlice]], s: ResourceSlice) -> None:
    key = (s.driver, s.pool)
    known = pools.get(key)
    if known is None or s.generation > known[0].generation:
        pools[key] = [s]
    elif s.generation == known[0].generation:
        known.append(s)


def _slices_of_pool(
    all_slices: Sequence[ResourceSlice], key: tuple[str, str], generation: int
) -> list[ResourceSlice] | None:
    """``checkSlicesInPool``: the pool's slices of ``generation``; None if a newer one exists."""
    found = []
    for s in all_slices:
        if (s.driver, s.pool) != key:
            continue
        if s.generation > generation:
            return None
        if s.generation == generation:
            found.append(s)
    return found


def _validate(pool: Pool, counter_slices: list[ResourceSlice]) -> str | None:
    names: set[str] = set()
    for s in pool.slices:
        for d in s.devices:
            if d.name in names:
                return f"duplicate device name {d.name}"
            names.add(d.name)
    for s in counter_slices:
        for cs in s.shared_counters:
            if cs.name in pool.counter_sets:
                return f"duplicate counter set name {cs.name}"
            pool.counter_sets[cs.name] = cs
    for s in (*pool.slices, *pool.other_slices):
        for d in s.devices:
            for consumption in d.consumes_counters:
                counter_set = pool.counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return None


def _build_pool(
    key: tuple[str, str], slices: list[ResourceSlice], all_of_pool: list[ResourceSlice] | None
) -> Pool:
    """``buildPool``: device slices for this node, the pool's others, and its counter sets."""
    pool = Pool(key[0], key[1])
    counter_slices: list[ResourceSlice] = []
    for s in sorted(slices, key=lambda s: s.name):
        (counter_slices if s.shared_counters else pool.slices).append(s)
    if all_of_pool is not None and len(slices) < len(all_of_pool):
        mine = {s.name for s in slices}
        for s in all_of_pool:
            if s.name not in mine:
                (counter_slices if s.shared_counters else pool.other_slices).append(s)
    problem = _validate(pool, counter_slices)
    if problem is not None:
        return Pool(key[0], key[1], invalid=True, invalid_reason=problem)
    return pool


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices for d in s.devices)


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node_name: str,
    labels: Mapping[str, str],
    all_slices: Sequence[ResourceSlice],
) -> list[Pool]:
    """``GatherPools``: the pools with devices for this node, in allocation order."""
    by_key: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices_for_node:
        if _slice_is_relevant(s, node_name, labels):
            _add_slice(by_key, s)
    plain: list[Pool] = []
    binding: list[Pool] = []
    for key, slices in by_key.items():
        first = slices[0]
        all_of_pool = None
        if len(slices) != first.resource_slice_count:
            all_of_pool = _slices_of_pool(all_slices, key, first.generation)
            if all_of_pool is None:
                continue
            if len(all_of_pool) != first.resource_slice_count:
                plain.append(Pool(key[0], key[1], incomplete=True))
                continue
        pool = _build_pool(key, slices, all_of_pool)
        (binding if _has_binding_conditions(pool) else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.name))
    binding.sort(key=lambda p: (p.driver, p.name))
    return plain + binding
