"""Cluster events that may make an unschedulable pod schedulable, and queueing hints.

Mirrors upstream's ``ClusterEvent{Resource, ActionType}``: plugins register the events that can
resolve their own rejections, and the queue moves a pod out of the unschedulable pool only
when such an event arrives for one of the plugins that rejected it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


class Resource(enum.Enum):
    POD = "Pod"
    # A bound pod (what upstream calls AssignedPod): its add/delete changes node usage.
    ASSIGNED_POD = "AssignedPod"
    # A pending pod of this scheduler (label or toleration changes of the pod itself).
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    PDB = "PodDisruptionBudget"
    PRIORITY_CLASS = "PriorityClass"
    # A ConfigMap a plugin watches (Handle.watch_config_map).
    CONFIG_MAP = "ConfigMap"
    PVC = "PersistentVolumeClaim"
    PV = "PersistentVolume"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    # A PodGroup of either API (scheduling.k8s.io's, or scheduler-plugins' Coscheduling one).
    POD_GROUP = "PodGroup"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    WILDCARD = "*"


class Action(enum.Flag):
    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    # API 1.6, upstream's UpdateNodeAnnotation: a node update that changes its annotations.
    UPDATE_NODE_ANNOTATION = enum.auto()
    # API 2.2, upstream's UpdateNodeDeclaredFeature: its status.declaredFeatures changed.
    UPDATE_NODE_DECLARED_FEATURE = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_POD_TOLERATION = enum.auto()
    UPDATE_POD_SPEC = enum.auto()
    UPDATE_LABEL = enum.auto()
    # API 2.2, upstream's UpdatePodGeneratedResourceClaim: the resourceclaim controller wrote
    # a pending pod's status.resourceClaimStatuses (or extendedResourceClaimStatus).
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = enum.auto()
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SPEC
        | UPDATE_LABEL
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True)
class ClusterEvent:
    resource: Resource
    action: Action
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """True when this (incoming) event is covered by ``registered``."""
        if registered.resource is Resource.WILDCARD:
            return bool(self.action & registered.action)
        resource_ok = self.resource is registered.resource or (
            # A bound pod is a pod: a plugin registered for Pod events hears AssignedPod ones.
            registered.resource is Resource.POD and self.resource is Resource.ASSIGNED_POD
        )
        return resource_ok and bool(self.action & registered.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource.value}{self.action.name}"


class QueueingHint(enum.Enum):
    SKIP = 0
    QUEUE = 1


# hint(pod, old_object, new_object) -> QueueingHint; None in a registration means "always queue".
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, eq=False)
class HintIndex:
    """What a hint can answer Queue for, as keys (API 2.6): the queue indexes its pending
    pods by ``pod_keys(pod)`` and runs the hint only for the pods indexed under a key of
    ``event_keys(old, new)``; None from ``event_keys`` runs it for every pod. Both are
    cheap functions of their arguments alone; ``pod_keys`` runs under the queue's lock.
    The hint's answers must not change: a pod outside the keys is one it answers Skip."""

    pod_keys: Callable[[Any], Iterable[str]]
    event_keys: Callable[[Any, Any], Iterable[str] | None]


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None
    index: HintIndex | None = None


# Events the scheduler itself raises.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, Action.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, Action.ALL, "ForceActivate")
NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(Resource.NODE, Action.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, Action.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete")
PDB_CHANGE = ClusterEvent(Resource.PDB, Action.ALL, "PodDisruptionBudgetChange")
CONFIG_MAP_ADD = ClusterEvent(Resource.CONFIG_MAP, Action.ADD, "ConfigMapAdd")
CONFIG_MAP_UPDATE = ClusterEvent(Resource.CONFIG_MAP, Action.UPDATE, "ConfigMapUpdate")
CONFIG_MAP_DELETE = ClusterEvent(Resource.CONFIG_MAP, Action.DELETE, "ConfigMapDelete")
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD, "UnscheduledPodAdd")
NAMESPACE_LABEL_CHANGE = ClusterEvent(
    Resource.NAMESPACE, Action.UPDATE_LABEL, "NamespaceLabelChange"
)
