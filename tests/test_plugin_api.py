"""The public plugin API is versioned: its names are recorded here, so removing or renaming
one (a major version) fails this test until API_VERSION and this record change together.
The examples, like the built-ins (import-linter), import nothing else of the scheduler."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler import plugin_api

REPO = Path(__file__).resolve().parents[1]

# API 2.x. Add new names here with a minor version; remove one only with a major version.
API_2 = {
    "API_VERSION", "CPU", "EPHEMERAL_STORAGE", "IN", "MAX_NODE_SCORE", "MEMORY",
    "NODE_NAME_FIELD", "PODS", "POINT_METHODS", "SKIP", "SUCCESS", "Action", "AffinityTerm",
    "BindOutcome", "BoolArray", "ClusterEvent", "ClusterEventWithHint", "ClusterSnapshot",
    "Code", "ConfigError", "CycleState", "Diagnosis", "DisruptionBudget", "EvictionOutcome",
    "Evictor", "ExtenderError", "FilterResult", "Handle", "HostPort", "IntArray",
    "InvalidSpecError", "LabelSelector", "Metrics", "NodeSelector", "NodeSelectorTerm",
    "NodeSummary", "NodeTableView", "NodeView", "PluginSpec", "PodInfo", "PostFilterResult",
    "PreFilterResult", "PreferredSchedulingTerm", "QueuedPodLike", "QueueingHint",
    "Registry", "Resource", "SpreadConstraint", "Status", "Taint", "Toleration", "Victims",
    "fit_error_message", "is_extended_resource_name", "is_scalar_resource",
    "label_key_error", "normalized_image_name", "parse_node_selector",
    "parse_node_selector_term", "parse_preferred_terms", "ports_conflict",
}
# The volume objects the volume plugins read (API 1.1).
API_2_VOLUMES = {
    "ANN_BIND_COMPLETED", "ANN_BOUND_BY_CONTROLLER", "ANN_SELECTED_NODE", "NO_PROVISIONER",
    "READ_WRITE_ONCE_POD", "ZONE_KEYS", "CSIDriverInfo", "CSINodeInfo", "ClaimInfo",
    "StorageCapacityInfo", "StorageClassInfo", "VolumeInfo",
}
# A protocol per extension point and per optional hook.
API_2_PROTOCOLS = {
    "BindPlugin", "EnqueueExtensions", "FilterPlugin", "FilterPodListsHook", "PermitDecision",
    "PermitPlugin", "Plugin", "PostBindPlugin", "PostFilterPlugin", "PreBindPlugin",
    "PreBindPreFlightHook", "PreEnqueuePlugin", "PreFilterPlugin", "PreScorePlugin",
    "QueueSortPlugin", "ReservePlugin", "ScorePlugin", "SortKeyHook", "WaitForActuationsHook",
}
# The Dynamic Resource Allocation objects and the DRA CEL environment.
API_2_DRA = {
    "ALL", "ALLOCATION_RESULTS_MAX_SIZE", "TAINT_NO_EXECUTE", "TAINT_NO_SCHEDULE",
    "AllocationConfiguration", "AllocationResult", "CapacityRequestPolicy", "CounterSet",
    "Device", "DeviceAttribute", "DeviceCapacity", "DeviceClass", "DeviceConstraint",
    "DeviceRequest", "DeviceRequestAllocationResult", "DeviceSubRequest", "DeviceTaintRule",
    "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "CELError", "DeviceInput",
    "SelectorCache", "enhance_runtime_error", "Requirement",
}
# 2.1: the DRA manager a plugin reads through Handle.dra.
API_2_1 = {"AllocatedDevices", "DeviceID", "DraManager"}
# 2.2: node declared features and their registry (NodeDeclaredFeatures).
API_2_2 = {"DEFAULT_FEATURES", "FeatureRegistry", "Version"}
# 2.3: pod groups, read through Handle.pod_groups.
API_2_3 = {"COSCHEDULING", "WORKLOAD_API", "PodGroup", "PodGroupStateView", "PodGroupsView",
           "PlacementFeasibleHook"}
# 2.4: Go durations in plugin arguments (DynamicResources' filterTimeout, bindingTimeout)
# and the names of DRA-backed extended resources.
API_2_4 = {"parse_duration", "DEVICE_CLASS_RESOURCE_PREFIX", "is_dra_extended_resource_name"}
# 2.5: pod-group preemption (DefaultPreemption's PodGroupPostFilter).
API_2_5 = {"PodGroupPostFilterHook", "PodGroupPostFilterResult", "PodGroupSimulation",
           "ProposedAssignment"}
# 2.6: a queueing hint's index of pending pods (DynamicResources' claim names).
API_2_6 = {"HintIndex"}
# 2.8: DynamicResources left out of the later points of a pod without claims.
API_2_8 = {"IdleWhenPreFilterSkipsHook"}


def test_the_api_keeps_every_name_of_its_major_version() -> None:
    assert plugin_api.API_VERSION.split(".")[0] == "2"
    exported = set(plugin_api.__all__)
    recorded = (API_2 | API_2_VOLUMES | API_2_PROTOCOLS | API_2_DRA | API_2_1 | API_2_2
                | API_2_3 | API_2_4 | API_2_5 | API_2_6 | API_2_8)
    assert recorded - exported == set(), "names removed: a new major version"
    assert exported - recorded == set(), "names added: record them (a minor version)"
    assert plugin_api.API_VERSION == "2.8"
    assert all(hasattr(plugin_api, name) for name in exported)


# What a plugin may call on its Handle. API 2.0 replaced framework_of (another profile's
# runtime) by has_profile and supersede, what DefaultPreemption asked of it, and added
# wall_clock.
HANDLE_2 = {
    "profile_name", "snapshot", "framework", "has_profile", "supersede", "nominator",
    "waiting_pods", "get_pod", "rng", "now", "wall_clock", "sleep", "parallelism", "binder",
    "evictor", "reporter", "writer", "get_claim", "get_volume", "extenders", "metrics",
    "watch_config_map", "activate", "move_all_to_active_or_backoff", "avoided_nodes",
    "dra",  # 2.1
    "pod_groups",  # 2.3
}


def test_the_handle_keeps_every_member_of_its_major_version() -> None:
    members = {name for name in vars(plugin_api.Handle) if not name.startswith("_")}
    assert HANDLE_2 - members == set(), "members removed: a new major version"
    assert members - HANDLE_2 == set(), "members added: record them (a minor version)"


# What a plugin reads of the node table and of a NodeView. API 2.0 left one change signal,
# the log of changed rows (it removed row_generation and the labels, taints and membership
# generations); NodeView.as_in_table came with API 1.4.
NODE_TABLE_2 = {
    "alive", "allocatable", "allowed_pods", "capacity", "image_nodes", "images", "index",
    "labels", "names", "non_zero_requested", "pod_count", "pods", "raw", "requested",
    "resources", "taints", "unschedulable", "used_ports", "change_mark", "rows_changed_since",
}
# API 2.2: each node's declared features, as a set over the feature registry.
NODE_TABLE_2_2 = {"declared_features"}
NODE_VIEW_1 = {"snapshot", "idx", "requested", "pod_count", "added", "removed", "has_deltas"}
NODE_VIEW_1_4 = {"as_in_table"}
# API 2.7: pods a preemption dry run removes on other nodes than the row's (a pod group's).
NODE_VIEW_2_7 = {"removed_elsewhere"}


def _attributes(cls: type) -> set[str]:
    """The public attributes of instances: slots, and properties."""
    return {n for n in getattr(cls, "__slots__", ()) if not n.startswith("_")} | {
        n for n, v in vars(cls).items() if isinstance(v, property) and not n.startswith("_")}


@pytest.mark.parametrize(("members", "major", "minor"), [
    pytest.param(lambda: {n for n in vars(plugin_api.NodeTableView) if not n.startswith("_")},
                 NODE_TABLE_2, NODE_TABLE_2_2, id="NodeTableView"),
    pytest.param(lambda: _attributes(plugin_api.NodeView), NODE_VIEW_1,
                 NODE_VIEW_1_4 | NODE_VIEW_2_7, id="NodeView"),
])
def test_what_plugins_read_keeps_every_member_of_its_major_version(
    members: Callable[[], set[str]], major: set[str], minor: set[str]
) -> None:
    got = members()
    assert major - got == set(), "members removed: a new major version"
    assert got - major - minor == set(), "members added: record them (a minor version)"


def test_example_plugins_import_only_the_plugin_api_and_the_testing_kit() -> None:
    allowed = {"scheduler.plugin_api", "scheduler.testing"}
    for path in sorted((REPO / "examples" / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scheduler"):
                assert node.module in allowed, f"{path}: imports {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("scheduler"), f"{path}: {alias.name}"
