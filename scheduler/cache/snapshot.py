"""What one scheduling cycle reads: the cache plus data derived from it, computed lazily.

Derived data (zone-interleaved node order, topology domain ids per label key, node masks per
selector or toleration set) is cached and recomputed only when the part of the cache it
depends on changed, so a steady cluster pays for it once, not once per pod.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from scheduler.cache.node_table import NodeTable, ResourceIndex, zone_key
from scheduler.model.arrays import BoolArray, IntArray
from scheduler.model.selectors import LabelSelector

if TYPE_CHECKING:
    from scheduler.cache.cache import Cache
    from scheduler.model.disruption import DisruptionBudget
    from scheduler.model.pod import AffinityTerm, PodInfo
    from scheduler.model.volumes import (
        ClaimInfo,
        CSIDriverInfo,
        CSINodeInfo,
        StorageCapacityInfo,
        StorageClassInfo,
        VolumeInfo,
    )


class Snapshot:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.nodes: NodeTable = cache.nodes
        self._order: IntArray | None = None
        self._order_key: tuple[int, int] = (-1, -1)
        self._domains: dict[str, tuple[IntArray, list[str]]] = {}
        self._domains_gen = (-1, -1)
        self._masks: dict[Hashable, BoolArray] = {}
        self._masks_gen = (-1, -1, -1, -1)

    @property
    def source(self) -> object:
        return self.cache

    # -- nodes ----------------------------------------------------------------------------
    @property
    def resources(self) -> ResourceIndex:
        return self.nodes.resources

    @property
    def num_nodes(self) -> int:
        return len(self.nodes.index)

    def order(self) -> IntArray:
        """Alive node rows, zones interleaved round-robin as upstream's node tree lists them."""
        key = (self.nodes.membership_generation, self.nodes.labels_generation)
        if self._order is None or key != self._order_key:
            by_zone: dict[str, list[int]] = {}
            for row in self.nodes.index.values():
                by_zone.setdefault(zone_key(self.nodes.labels[row]), []).append(row)
            zones = [sorted(rows) for rows in by_zone.values()]
            out: list[int] = []
            depth = max((len(z) for z in zones), default=0)
            for i in range(depth):
                for rows in zones:
                    if i < len(rows):
                        out.append(rows[i])
            self._order = np.asarray(out, dtype=np.int64)
            # Filter windows are slices of it, handed to plugins: read-only, so none can
            # write through one into the next cycles' order.
            self._order.flags.writeable = False
            self._order_key = key
        return self._order

    def row_of(self, node_name: str) -> int | None:
        return self.nodes.index.get(node_name)

    def domains(self, key: str) -> tuple[IntArray, list[str]]:
        """Per node row, an id for the node's value of label ``key`` (-1: no such label)."""
        gen = (self.nodes.labels_generation, self.nodes.capacity)
        if gen != self._domains_gen:
            self._domains.clear()
            self._domains_gen = gen
        cached = self._domains.get(key)
        if cached is None:
            ids = np.full(self.nodes.capacity, -1, dtype=np.int64)
            values: list[str] = []
            seen: dict[str, int] = {}
            for row in self.nodes.index.values():
                value = self.nodes.labels[row].get(key)
                if value is None:
                    continue
                vid = seen.get(value)
                if vid is None:
                    vid = seen[value] = len(values)
                    values.append(value)
                ids[row] = vid
            cached = (ids, values)
            self._domains[key] = cached
        return cached

    def node_mask(self, key: Hashable, compute: Callable[[], BoolArray]) -> BoolArray:
        """A boolean per node row that depends only on node labels, taints and the node set,
        cached until one of those changes (computed every time for an unhashable key)."""
        gen = (
            self.nodes.labels_generation,
            self.nodes.taints_generation,
            self.nodes.membership_generation,
            self.nodes.capacity,
        )
        if gen != self._masks_gen:
            self._masks.clear()
            self._masks_gen = gen
        try:
            mask = self._masks.get(key)  # the key hashed once, not tested first and again
        except TypeError:
            return compute()
        if mask is None:
            mask = compute()
            self._masks[key] = mask
        return mask

    # -- pods and namespaces --------------------------------------------------------------
    def pods_on(self, row: int) -> Iterable[PodInfo]:
        return self.nodes.pods[row].values()

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.cache.namespaces.get(namespace, {})

    def namespaces_of(self, term: AffinityTerm) -> set[str]:
        """The namespaces an affinity term selects: its list plus its namespace selector."""
        namespaces = set(term.namespaces)
        if term.namespace_selector is not None:
            selector = term.namespace_selector
            known = set(self.cache.namespaces) | set(self.cache.pods.namespaces())
            namespaces |= {ns for ns in known if selector.matches(self.namespace_labels(ns))}
        return namespaces

    def matching_pods(self, namespaces: Iterable[str], selector: LabelSelector) -> list[PodInfo]:
        return self.cache.pods.matching(namespaces, selector)

    def pods_with_required_anti_affinity(self) -> Iterable[PodInfo]:
        return self.cache.pods.with_required_anti_affinity.values()

    def pods_with_affinity_terms(self) -> Iterable[PodInfo]:
        return self.cache.pods.with_affinity_terms.values()

    def pods_of_owner(self, namespace: str, kind: str, name: str) -> Mapping[str, PodInfo]:
        return self.cache.pods.by_owner.get((namespace, kind, name), {})

    def owner_rows(self, namespace: str, kind: str, name: str) -> IntArray:
        return self.nodes.owner_row_array((namespace, kind, name))

    def get_pod(self, uid: str) -> PodInfo | None:
        return self.cache.get_pod(uid)

    # -- cluster objects ------------------------------------------------------------------
    def pdbs(self) -> Iterable[DisruptionBudget]:
        return self.cache.pdbs.values()

    def claim(self, namespace: str, name: str) -> ClaimInfo | None:
        return self.cache.volumes.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> VolumeInfo | None:
        return self.cache.volumes.volumes.get(name)

    def volumes_of_class(self, storage_class: str) -> Iterable[VolumeInfo]:
        return self.cache.volumes.volumes_by_class.get(storage_class, {}).values()

    def storage_class(self, name: str) -> StorageClassInfo | None:
        return self.cache.volumes.storage_classes.get(name)

    def csi_node(self, name: str) -> CSINodeInfo | None:
        return self.cache.volumes.csi_nodes.get(name)

    def csi_driver(self, name: str) -> CSIDriverInfo | None:
        return self.cache.volumes.csi_drivers.get(name)

    def storage_capacities(self) -> Iterable[StorageCapacityInfo]:
        return self.cache.volumes.capacities.values()

    def claim_users(self, namespace: str, name: str) -> int:
        return self.cache.pods.claim_refs.get(f"{namespace}/{name}", 0)
