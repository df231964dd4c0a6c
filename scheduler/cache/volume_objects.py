"""The volume-related objects the volume plugins read, as the watches last delivered them:
claims by "namespace/name", volumes, StorageClasses, CSINodes and CSIDrivers by name, and the
volumes of each StorageClass (upstream's PV assume cache is indexed the same way)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.model.volumes import (
    ClaimInfo,
    CSIDriverInfo,
    CSINodeInfo,
    StorageCapacityInfo,
    StorageClassInfo,
    VolumeInfo,
)

CLAIMS, VOLUMES, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS, CAPACITIES = (
    "persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes", "csidrivers",
    "csistoragecapacities")
KINDS = (CLAIMS, VOLUMES, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS, CAPACITIES)

Parsed = (ClaimInfo | VolumeInfo | StorageClassInfo | CSINodeInfo | CSIDriverInfo
          | StorageCapacityInfo)
PARSERS: Mapping[str, Callable[[Mapping[str, Any]], Parsed]] = {
    CLAIMS: ClaimInfo.parse, VOLUMES: VolumeInfo.parse, STORAGE_CLASSES: StorageClassInfo.parse,
    CSI_NODES: CSINodeInfo.parse, CSI_DRIVERS: CSIDriverInfo.parse,
    CAPACITIES: StorageCapacityInfo.parse,
}


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class VolumeObjects:
    def __init__(self) -> None:
        self.claims: dict[str, ClaimInfo] = {}
        self.volumes: dict[str, VolumeInfo] = {}
        self.storage_classes: dict[str, StorageClassInfo] = {}
        self.csi_nodes: dict[str, CSINodeInfo] = {}
        self.csi_drivers: dict[str, CSIDriverInfo] = {}
        self.capacities: dict[str, StorageCapacityInfo] = {}
        self.volumes_by_class: dict[str, dict[str, VolumeInfo]] = {}
        self._stores: dict[str, dict[str, Any]] = {
            CLAIMS: self.claims, VOLUMES: self.volumes, STORAGE_CLASSES: self.storage_classes,
            CSI_NODES: self.csi_nodes, CSI_DRIVERS: self.csi_drivers,
            CAPACITIES: self.capacities,
        }

    def upsert(self, kind: str, key: str, parsed: Parsed) -> None:
        if isinstance(parsed, VolumeInfo):
            self._unindex(key)
            self.volumes_by_class.setdefault(parsed.storage_class, {})[key] = parsed
        self._stores[kind][key] = parsed

    def remove(self, kind: str, key: str) -> None:
        if kind == VOLUMES:
            self._unindex(key)
        self._stores[kind].pop(key, None)

    def keys(self, kind: str) -> Iterable[str]:
        return list(self._stores[kind])

    def _unindex(self, key: str) -> None:
        old = self.volumes.get(key)
        if old is not None:
            same_class = self.volumes_by_class.get(old.storage_class, {})
            same_class.pop(key, None)
            if not same_class:
                self.volumes_by_class.pop(old.storage_class, None)
