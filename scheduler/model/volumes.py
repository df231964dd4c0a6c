"""PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and CSIDrivers: the
fields the volume plugins read, parsed once from the API objects (upstream v1.37 semantics:
``pkg/scheduler/framework/plugins/volumebinding`` and
``k8s.io/component-helpers/storage/volume``). The raw object is kept where the scheduler
writes it back (PVs and PVCs, in VolumeBinding's PreBind).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.quantity import parse_quantity
from scheduler.model.selectors import (
    LabelSelector,
    NodeSelector,
    parse_node_selector,
)
from scheduler.model.validation import is_mapping

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
FILESYSTEM = "Filesystem"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
# PV labels VolumeZone reads, and the GA key a beta node label falls back to.
ZONE_KEYS = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone": None,
    "topology.kubernetes.io/region": None,
}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if is_mapping(meta) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if is_mapping(spec) else {}


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _storage(resources: Any) -> int:
    """The ``storage`` quantity in bytes (0 when absent or malformed)."""
    if not is_mapping(resources):
        return 0
    raw = resources.get("storage")
    if raw is None:
        return 0
    try:
        return math.ceil(parse_quantity(str(raw), "storage"))
    except ValueError:
        return 0


def class_of(obj: Mapping[str, Any]) -> str:
    """The beta annotation if present, else ``spec.storageClassName`` (upstream's
    GetPersistentVolume(Claim)Class)."""
    annotations = _meta(obj).get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return str(annotations[ANN_BETA_STORAGE_CLASS])
    return str(_spec(obj).get("storageClassName") or "")


@dataclass(frozen=True)
class ClaimInfo:
    namespace: str
    name: str
    uid: str
    resource_version: str
    volume_name: str
    storage_class: str
    access_modes: tuple[str, ...]
    request: int
    # Whether resources.requests.storage is set at all (a capacity check needs one).
    has_request: bool
    volume_mode: str
    attributes_class: str
    selector: LabelSelector | None
    phase: str
    annotations: Mapping[str, str]
    deleting: bool
    owner_uid: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """``spec.volumeName`` set and the bind-completed annotation present."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> ClaimInfo:
        meta, spec = _meta(obj), _spec(obj)
        selector: LabelSelector | None = None
        if is_mapping(spec.get("selector")):
            try:
                selector = LabelSelector.parse(spec["selector"], "spec.selector")
            except ValueError:
                selector = None
        owner = next((r for r in meta.get("ownerReferences") or ()
                      if is_mapping(r) and r.get("controller") is True), {})
        return cls(
            namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            volume_name=str(spec.get("volumeName") or ""), storage_class=class_of(obj),
            access_modes=_strs(spec.get("accessModes")),
            request=_storage((spec.get("resources") or {}).get("requests")),
            has_request="storage" in ((spec.get("resources") or {}).get("requests") or {}),
            volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
            attributes_class=str(spec.get("volumeAttributesClassName") or ""),
            selector=selector, phase=str((obj.get("status") or {}).get("phase") or ""),
            annotations=dict(meta.get("annotations") or {}),
            deleting=meta.get("deletionTimestamp") is not None,
            owner_uid=str(owner.get("uid") or ""), raw=dict(obj),
        )


@dataclass(frozen=True)
class VolumeInfo:
    name: str
    resource_version: str
    labels: Mapping[str, str]
    capacity: int
    access_modes: tuple[str, ...]
    storage_class: str
    volume_mode: str
    attributes_class: str
    node_affinity: NodeSelector | None
    node_affinity_error: bool
    claim_namespace: str
    claim_name: str
    claim_uid: str
    phase: str
    deleting: bool
    csi_driver: str
    csi_handle: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def has_claim_ref(self) -> bool:
        return bool(self.claim_name)

    def affinity_matches(self, labels: Mapping[str, str]) -> bool:
        """upstream's CheckNodeAffinity: no affinity matches; only node labels are read."""
        if self.node_affinity_error:
            return False
        if self.node_affinity is None:
            return True
        return self.node_affinity.matches(labels, "")

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> VolumeInfo:
        meta, spec = _meta(obj), _spec(obj)
        affinity: NodeSelector | None = None
        affinity_error = False
        node_affinity = spec.get("nodeAffinity")
        if is_mapping(node_affinity) and node_affinity.get("required") is not None:
            try:
                affinity = parse_node_selector(node_affinity["required"],
                                               "spec.nodeAffinity.required")
            except ValueError:
                affinity_error = True
        claim: Mapping[str, Any] = spec.get("claimRef") or {}
        csi: Mapping[str, Any] = spec.get("csi") or {}
        claim = claim if is_mapping(claim) else {}
        csi = csi if is_mapping(csi) else {}
        return cls(
            name=str(meta.get("name") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            labels=dict(meta.get("labels") or {}), capacity=_storage(spec.get("capacity")),
            access_modes=_strs(spec.get("accessModes")), storage_class=class_of(obj),
            volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
            attributes_class=str(spec.get("volumeAttributesClassName") or ""),
            node_affinity=affinity, node_affinity_error=affinity_error,
            claim_namespace=str(claim.get("namespace") or ""),
            claim_name=str(claim.get("name") or ""), claim_uid=str(claim.get("uid") or ""),
            phase=str((obj.get("status") or {}).get("phase") or ""),
            deleting=meta.get("deletionTimestamp") is not None,
            csi_driver=str(csi.get("driver") or ""), csi_handle=str(csi.get("volumeHandle") or ""),
            raw=dict(obj),
        )


@dataclass(frozen=True)
class StorageClassInfo:
    name: str
    provisioner: str
    binding_mode: str
    # allowedTopologies as a node selector (terms ORed); None when absent or empty.
    allowed_topologies: NodeSelector | None

    @property
    def wait_for_first_consumer(self) -> bool:
        return self.binding_mode == WAIT_FOR_FIRST_CONSUMER

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> StorageClassInfo:
        topologies = obj.get("allowedTopologies")
        selector: NodeSelector | None = None
        if isinstance(topologies, list) and topologies:
            terms = [{"matchExpressions": [
                {"key": e.get("key"), "operator": "In", "values": e.get("values") or []}
                for e in (t.get("matchLabelExpressions") or ()) if is_mapping(e)]}
                for t in topologies if is_mapping(t)]
            try:
                selector = parse_node_selector({"nodeSelectorTerms": terms}, "allowedTopologies")
            except ValueError:
                selector = None
        return cls(name=str(_meta(obj).get("name") or ""),
                   provisioner=str(obj.get("provisioner") or ""),
                   binding_mode=str(obj.get("volumeBindingMode") or "Immediate"),
                   allowed_topologies=selector)


@dataclass(frozen=True)
class CSINodeInfo:
    name: str
    # driver name -> allocatable.count (None when the driver sets no count)
    drivers: Mapping[str, int | None]

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> CSINodeInfo:
        drivers: dict[str, int | None] = {}
        for driver in _spec(obj).get("drivers") or ():
            if not is_mapping(driver):
                continue
            count = (driver.get("allocatable") or {}).get("count")
            drivers[str(driver.get("name") or "")] = int(count) if count is not None else None
        return cls(name=str(_meta(obj).get("name") or ""), drivers=drivers)


@dataclass(frozen=True)
class CSIDriverInfo:
    name: str
    prevent_scheduling_if_missing: bool
    # spec.storageCapacity: the driver publishes CSIStorageCapacity objects to check.
    storage_capacity: bool

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> CSIDriverInfo:
        spec = _spec(obj)
        return cls(name=str(_meta(obj).get("name") or ""),
                   prevent_scheduling_if_missing=spec.get("preventPodSchedulingIfMissing") is True,
                   storage_capacity=spec.get("storageCapacity") is True)


@dataclass(frozen=True)
class StorageCapacityInfo:
    """A CSIStorageCapacity: what a class can still provision on the nodes it selects."""

    key: str
    storage_class: str
    capacity: int | None
    maximum_volume_size: int | None
    node_topology: LabelSelector | None

    @property
    def limit(self) -> int | None:
        """The largest volume it can take: maximumVolumeSize if set, else capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity

    def reaches(self, labels: Mapping[str, str]) -> bool:
        return self.node_topology is not None and self.node_topology.matches(labels)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> StorageCapacityInfo:
        meta = _meta(obj)
        topology: LabelSelector | None = None
        if is_mapping(obj.get("nodeTopology")):
            try:
                topology = LabelSelector.parse(obj["nodeTopology"], "nodeTopology")
            except ValueError:
                topology = None

        def size(key: str) -> int | None:
            return _storage({"storage": obj[key]}) if obj.get(key) is not None else None

        return cls(key=f"{meta.get('namespace')}/{meta.get('name')}",
                   storage_class=str(obj.get("storageClassName") or ""),
                   capacity=size("capacity"), maximum_volume_size=size("maximumVolumeSize"),
                   node_topology=topology)
