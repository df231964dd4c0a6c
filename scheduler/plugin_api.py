"""The public plugin API: everything a plugin may use, in one module.

A plugin, in-tree or installed with pip, imports from here and from nothing else of the
scheduler (``scheduler.testing`` for its tests). The built-in plugins do the same, and
import-linter enforces it, so this surface is exactly what the built-ins need and cannot rot.

Versioning (:data:`API_VERSION`, ``major.minor``): removing or renaming a name, or changing a
signature or a protocol incompatibly, is a new major version; adding names is a minor one.
1.2 added ``Handle.avoided_nodes``; 1.3 an optional ``sort_key`` of QueueSort plugins; 1.4
``NodeTableView.row_generation`` and ``NodeView.as_in_table``, for plugins that keep what they
computed of a node between cycles; 1.5 ``NodeTableView.change_mark`` and
``rows_changed_since``, which rows changed since a plugin last looked. 2.0 removed
``Handle.framework_of`` (another profile's runtime; ``Handle.has_profile`` and
``Handle.supersede`` answer what it was read for) and the node table's other change
signals (``row_generation``, ``labels_generation``, ``taints_generation``,
``membership_generation``): the change log is the one. It added a protocol per extension
point and per optional hook (``ScorePlugin``, ``SortKeyHook``...), ``Plugin``,
``PermitDecision``, ``Handle.wall_clock``, ``Action.UPDATE_NODE_ANNOTATION`` and
``NodeSummary.annotations``, and the Dynamic Resource Allocation objects (``ResourceClaim``,
``ResourceSlice``...) with the DRA CEL environment (``SelectorCache``). 2.1 added
``Handle.dra`` (a :class:`DraManager`: the DRA objects and the claims allocated in flight),
``AllocatedDevices`` and ``DeviceID``. 2.2 added node declared features:
``NodeSummary.declared_features``, ``NodeTableView.declared_features``,
``Action.UPDATE_NODE_DECLARED_FEATURE`` and the feature registry (``DEFAULT_FEATURES``,
``FeatureRegistry``, ``Version``). 2.3 added pod groups: ``Handle.pod_groups`` (a
:class:`PodGroupsView` of :class:`PodGroupStateView`), :class:`PodGroup` with its sources
``WORKLOAD_API`` and ``COSCHEDULING``, ``PodInfo.pod_group``, ``Resource.POD_GROUP``,
``WaitingPodsView.allow``, ``PermitDecision.waiting`` and the optional
:class:`PlacementFeasibleHook` of the pod-group cycle.
2.4 added ``Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM``,
``ObjectWriter.get``, ``patch``, ``create`` and ``delete_object``, ``WriteResult.conflict`` and
``obj``, ``Reporter.note``, ``parse_duration`` (a Go duration string in plugin arguments),
``DEVICE_CLASS_RESOURCE_PREFIX`` and ``is_dra_extended_resource_name``.
2.5 added pod-group preemption: the optional :class:`PodGroupPostFilterHook` of PostFilter
plugins, the :class:`PodGroupSimulation` it runs the group's algorithm on,
:class:`ProposedAssignment` and :class:`PodGroupPostFilterResult`.
2.6 added :class:`HintIndex` and ``ClusterEventWithHint.index``: a hint that runs only for the
pending pods under an event's keys.
2.7 added ``NodeView.removed_elsewhere`` and ``NodeView.delta_rows_across_nodes``: pods a
preemption dry run removes on other nodes than a row's (a pod group's), for plugins that count
pods over several nodes.
2.8 added the optional :class:`IdleWhenPreFilterSkipsHook` of PreFilter plugins: the points a
plugin has nothing to do at for a pod its PreFilter skipped, which the runtime leaves it out of.
``tests/test_plugin_api.py`` records the names, so such a change cannot go unnoticed.

What is here, by topic:

* **Extension points**: one protocol per point with the exact signature the runtime calls
  (:class:`PreEnqueuePlugin`, :class:`QueueSortPlugin`, :class:`PreFilterPlugin`,
  :class:`FilterPlugin`, :class:`PostFilterPlugin`, :class:`PreScorePlugin`,
  :class:`ScorePlugin`, :class:`ReservePlugin`, :class:`PermitPlugin`,
  :class:`PreBindPlugin`, :class:`BindPlugin`, :class:`PostBindPlugin`), and the optional
  hooks (:class:`SortKeyHook`, :class:`FilterPodListsHook`, :class:`PreBindPreFlightHook`,
  :class:`EnqueueExtensions`, :class:`WaitForActuationsHook`). A plugin implements the
  methods named in :data:`POINT_METHODS` for the points its spec lists; registration
  checks it.
* **Their answers**: :class:`Status` and :class:`Code` (with :data:`SUCCESS` and
  :data:`SKIP`), :class:`CycleState`, :class:`FilterResult`, :class:`PreFilterResult`,
  :class:`PostFilterResult`, :class:`PermitDecision`, :class:`Diagnosis`,
  :data:`MAX_NODE_SCORE`, and the array types.
* **Registration**: :class:`PluginSpec` (name, factory, default arguments, validator or typed
  ``args`` schema), :class:`ConfigError`, :class:`Registry`.
* **What a plugin sees**: the :class:`Handle` its factory receives, the
  :class:`ClusterSnapshot` and :class:`NodeTableView` it reads, the :class:`NodeView` batch
  that Filter and Score answer for, and :class:`PodInfo`.
* **Requeueing**: :class:`ClusterEvent`, :class:`ClusterEventWithHint` (with its
  :class:`HintIndex`), :class:`Resource`,
  :class:`Action`, :class:`QueueingHint`.
* **Model helpers** the built-ins use: selectors, taints, resources, validation.
"""

from __future__ import annotations

from scheduler.framework.config_fields import parse_duration
from scheduler.framework.dra import AllocatedDevices, DraManager
from scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from scheduler.framework.extender import ExtenderError, Victims
from scheduler.framework.fit_error import fit_error_message
from scheduler.framework.handle import Handle, PodGroupStateView, PodGroupsView
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    BindPlugin,
    BoolArray,
    Code,
    CycleState,
    Diagnosis,
    EnqueueExtensions,
    FilterPlugin,
    FilterPodListsHook,
    FilterResult,
    IdleWhenPreFilterSkipsHook,
    IntArray,
    NodeView,
    PermitDecision,
    PermitPlugin,
    PlacementFeasibleHook,
    Plugin,
    PodGroupPostFilterHook,
    PodGroupPostFilterResult,
    PodGroupSimulation,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreBindPreFlightHook,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ProposedAssignment,
    QueuedPodLike,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SortKeyHook,
    Status,
    WaitForActuationsHook,
)
from scheduler.framework.ports import BindOutcome, EvictionOutcome, Evictor
from scheduler.framework.registry import POINT_METHODS, ConfigError, PluginSpec, Registry
from scheduler.framework.snapshot import ClusterSnapshot, NodeTableView
from scheduler.metrics import Metrics
from scheduler.model.declared_features import DEFAULT_FEATURES, FeatureRegistry, Version
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.dra import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    DEVICE_CLASS_RESOURCE_PREFIX,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    AllocationConfiguration,
    AllocationResult,
    CapacityRequestPolicy,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceConstraint,
    DeviceID,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    is_dra_extended_resource_name,
)
from scheduler.model.dra_cel import CELError, DeviceInput, SelectorCache, enhance_runtime_error
from scheduler.model.errors import InvalidSpecError
from scheduler.model.node import NodeSummary
from scheduler.model.pod import (
    AffinityTerm,
    HostPort,
    PodInfo,
    SpreadConstraint,
    normalized_image_name,
    ports_conflict,
)
from scheduler.model.pod_group import COSCHEDULING, WORKLOAD_API, PodGroup
from scheduler.model.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended_resource_name,
    is_scalar_resource,
)
from scheduler.model.selectors import (
    IN,
    NODE_NAME_FIELD,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
    parse_node_selector,
    parse_node_selector_term,
    parse_preferred_terms,
)
from scheduler.model.taints import Taint, Toleration
from scheduler.model.validation import label_key_error
from scheduler.model.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    READ_WRITE_ONCE_POD,
    ZONE_KEYS,
    ClaimInfo,
    CSIDriverInfo,
    CSINodeInfo,
    StorageCapacityInfo,
    StorageClassInfo,
    VolumeInfo,
)

API_VERSION = "2.8"

__all__ = [
    "ALL",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "API_VERSION",
    "COSCHEDULING",
    "CPU",
    "DEFAULT_FEATURES",
    "DEVICE_CLASS_RESOURCE_PREFIX",
    "EPHEMERAL_STORAGE",
    "IN",
    "MAX_NODE_SCORE",
    "MEMORY",
    "NODE_NAME_FIELD",
    "NO_PROVISIONER",
    "PODS",
    "POINT_METHODS",
    "READ_WRITE_ONCE_POD",
    "SKIP",
    "SUCCESS",
    "TAINT_NO_EXECUTE",
    "TAINT_NO_SCHEDULE",
    "WORKLOAD_API",
    "ZONE_KEYS",
    "Action",
    "AffinityTerm",
    "AllocatedDevices",
    "AllocationConfiguration",
    "AllocationResult",
    "BindOutcome",
    "BindPlugin",
    "BoolArray",
    "CELError",
    "CSIDriverInfo",
    "CSINodeInfo",
    "CapacityRequestPolicy",
    "ClaimInfo",
    "ClusterEvent",
    "ClusterEventWithHint",
    "ClusterSnapshot",
    "Code",
    "ConfigError",
    "CounterSet",
    "CycleState",
    "Device",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceID",
    "DeviceInput",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSubRequest",
    "DeviceTaintRule",
    "Diagnosis",
    "DisruptionBudget",
    "DraManager",
    "EnqueueExtensions",
    "EvictionOutcome",
    "Evictor",
    "ExtenderError",
    "FeatureRegistry",
    "FilterPlugin",
    "FilterPodListsHook",
    "FilterResult",
    "Handle",
    "HintIndex",
    "HostPort",
    "IdleWhenPreFilterSkipsHook",
    "IntArray",
    "InvalidSpecError",
    "LabelSelector",
    "Metrics",
    "NodeSelector",
    "NodeSelectorTerm",
    "NodeSummary",
    "NodeTableView",
    "NodeView",
    "PermitDecision",
    "PermitPlugin",
    "PlacementFeasibleHook",
    "Plugin",
    "PluginSpec",
    "PodGroup",
    "PodGroupPostFilterHook",
    "PodGroupPostFilterResult",
    "PodGroupSimulation",
    "PodGroupStateView",
    "PodGroupsView",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreBindPreFlightHook",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "PreferredSchedulingTerm",
    "ProposedAssignment",
    "QueueSortPlugin",
    "QueuedPodLike",
    "QueueingHint",
    "Registry",
    "Requirement",
    "ReservePlugin",
    "Resource",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "ScorePlugin",
    "SelectorCache",
    "SortKeyHook",
    "SpreadConstraint",
    "Status",
    "StorageCapacityInfo",
    "StorageClassInfo",
    "Taint",
    "Toleration",
    "Version",
    "Victims",
    "VolumeInfo",
    "WaitForActuationsHook",
    "enhance_runtime_error",
    "fit_error_message",
    "is_dra_extended_resource_name",
    "is_extended_resource_name",
    "is_scalar_resource",
    "label_key_error",
    "normalized_image_name",
    "parse_duration",
    "parse_node_selector",
    "parse_node_selector_term",
    "parse_preferred_terms",
    "ports_conflict",
]
