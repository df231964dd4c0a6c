"""NodeDeclaredFeatures tables, ported from upstream's nodedeclaredfeatures_test.go (v1.37.2),
and the scheduling inference of k8s.io/component-helpers/nodedeclaredfeatures (v0.37.2):
features/*/..._test.go, framework_test.go TestInferForPodScheduling and featureset_test.go
TestFeatureMapper.

Not ported: the "plugin disabled" cases (the gate is GA and locked on in v1.37), "Infer
returns error" (a nil target version, which cannot happen here), and
TestNodeDeclaredFeatures_DeferredResizeSkipped (InPlacePodVerticalScalingSchedulerPreemption is
alpha and off)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from scheduler.framework.events import Action, QueueingHint, Resource
from scheduler.framework.interface import SKIP, SUCCESS, Code, CycleState
from scheduler.model.declared_features import (
    ALL_FEATURES,
    DEFAULT_FEATURES,
    DeclaredFeature,
    FeatureRegistry,
    PodSpec,
    Version,
    needs_restart_all_containers,
    needs_user_namespaces_host_network,
    needs_volume_bind_mount_options,
)
from scheduler.model.pod import PodInfo
from scheduler.plugins import node_declared_features
from scheduler.plugins.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
    NodeDeclaredFeatures,
)
from scheduler.testing import (
    container,
    full_view,
    node,
    pod,
    pod_info,
    rejected_reasons,
    run_cycles,
    scheduler_of,
    set_node,
    snapshot_of,
    summary,
)

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def declaring(obj: dict[str, Any], *features: str) -> dict[str, Any]:
    """The node with ``status.declaredFeatures`` as the kubelet publishes it (sorted)."""
    obj["status"]["declaredFeatures"] = sorted(features)
    return obj


def feature(name: str, infer: bool | Callable[[PodSpec], bool], max_version: str = "",
            ) -> DeclaredFeature:
    """Upstream's createMockFeature: a feature whose inference answers ``infer``."""
    test = infer if callable(infer) else (lambda spec: infer)
    return DeclaredFeature(name, test, Version.parse(max_version) if max_version else None)


# -- TestPreFilter ------------------------------------------------------------------------------
PRE_FILTER = [
    pytest.param([feature("TestFeature1", True), feature("TestFeature2", False)], "1.35.0",
                 SUCCESS, ["TestFeature1"], id="Pod with feature requirements"),
    pytest.param([feature("TestFeature1", True, "1.38.0"),
                  feature("TestFeature2", True, "1.38.0")], "1.35.0",
                 SUCCESS, ["TestFeature1", "TestFeature2"],
                 id="Pod with multiple feature requirements"),
    pytest.param([feature("TestFeature1", False), feature("TestFeature2", False)], "1.35.0",
                 SKIP, None, id="Pod with no requirements"),
    pytest.param([feature("TestFeature1", True, "1.33.0"), feature("TestFeature2", False)],
                 "1.34.0", SKIP, None, id="Feature not required, version > MaxVersion"),
]


@pytest.mark.parametrize(("features", "version", "status", "state"), PRE_FILTER)
def test_pre_filter(
    features: list[DeclaredFeature], version: str, status: Any, state: list[str] | None
) -> None:
    registry = FeatureRegistry(features)
    plugin = NodeDeclaredFeatures(registry, Version.parse(version))
    cycle = CycleState()
    result, got = plugin.pre_filter(cycle, pod_info("test-pod"), snapshot_of())
    assert result is None
    assert got == status
    written = cycle.get(PRE_FILTER_STATE_KEY)
    assert (None if written is None else registry.unmap(written)) == state


def test_pre_filter_with_the_registry_as_it_is() -> None:
    """With upstream's registry every test is a flag of one walk of the spec
    (``flags_alone``): a pod with none is skipped, one with a bind mount option needs
    VolumeBindMountOptions; a registry with another test has no such shortcut."""
    assert NodeDeclaredFeatures()._flags_alone is not None
    assert FeatureRegistry([feature("TestFeature1", True)]).inference_for(
        Version.parse("1.37.2")).flags_alone is None
    plain = pod("plain")
    mounting = pod("mounting")
    mounting["spec"]["containers"][0].update(_mounting(["rbind"]))
    for obj, status, state in ((plain, SKIP, None), (mounting, SUCCESS, [BIND_MOUNT_OPTIONS])):
        cycle = CycleState()
        _, got = NodeDeclaredFeatures().pre_filter(cycle, PodInfo.from_pod(obj), snapshot_of())
        written = cycle.get(PRE_FILTER_STATE_KEY)
        assert got == status
        assert (None if written is None else DEFAULT_FEATURES.unmap(written)) == state


# -- TestFilter (the registry's own names stand in for FeatureA/B/C: a node table maps what a
# node declares over the registry, as upstream's NodeInfo maps over DefaultFramework) -------
A, B, C = RESTART_ALL, USERNS_HOST_NETWORK, BIND_MOUNT_OPTIONS
UNRESOLVABLE = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSATISFIED_REQUIREMENTS])
FILTER = [
    pytest.param([A, B], [A], (Code.SUCCESS, []), id="Node matches requirements"),
    pytest.param([B], [A], UNRESOLVABLE, id="Node does not match requirements"),
    pytest.param([A, B, C], [A, C], (Code.SUCCESS, []),
                 id="Node with multiple features, pod requires subset"),
    pytest.param([], [A], UNRESOLVABLE, id="Node has no declared features"),
    pytest.param([A], [A, B], UNRESOLVABLE, id="Node with some but not all required features"),
    pytest.param(["SomeFutureFeature", A], [A], (Code.SUCCESS, []),
                 id="names the registry does not know are ignored (TryMap)"),
    pytest.param(None, [A], UNRESOLVABLE,
                 id="a node without status.declaredFeatures declares nothing"),
]


@pytest.mark.parametrize(("declared", "required", "want"), FILTER)
def test_filter(
    declared: list[str] | None, required: list[str], want: tuple[Code, list[str]]
) -> None:
    n1 = node("node-1") if declared is None else declaring(node("node-1"), *declared)
    view = full_view(snapshot_of([n1, declaring(node("node-2"), A, B, C)]))
    cycle = CycleState()
    cycle.write(PRE_FILTER_STATE_KEY, DEFAULT_FEATURES.try_map(required))
    result = NodeDeclaredFeatures().filter(cycle, pod_info("test-pod"), view)
    code, reasons = want
    assert [Code(int(c)) for c in result.codes] == [code, Code.SUCCESS]
    assert rejected_reasons(result, view.names()) == {"node-1": reasons, "node-2": []}


def test_filter_error_getting_pre_filter_state() -> None:
    """Upstream's "Error getting pre-filter state": Filter without PreFilter's state is an
    error, with upstream's message."""
    view = full_view(snapshot_of([node("node-1")]))
    result = NodeDeclaredFeatures().filter(CycleState(), pod_info("test-pod"), view)
    assert [Code(int(c)) for c in result.codes] == [Code.ERROR]
    assert rejected_reasons(result, view.names()) == {"node-1": [
        'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found']}


# -- TestEnqueueExtensionsNodeUpdate -----------------------------------------------------------
NODE_HINTS = [
    pytest.param(None, declaring(node("node-1"), "FeatureA"), QueueingHint.QUEUE,
                 id="Node Add with feature"),
    pytest.param(node("node-1"), declaring(node("node-1"), "FeatureA"), QueueingHint.QUEUE,
                 id="Node Update (Features Added)"),
    pytest.param(declaring(node("node-1"), "FeatureA"), declaring(node("node-1"), "FeatureA"),
                 QueueingHint.SKIP, id="Node Update (Features Unchanged)"),
]


def _hint(resource: Resource) -> Callable[..., QueueingHint]:
    events = NodeDeclaredFeatures().events_to_register()
    hint = next(e.hint for e in events if e.event.resource is resource)
    assert hint is not None
    return hint


@pytest.mark.parametrize(("old", "new", "want"), NODE_HINTS)
def test_node_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    hint = _hint(Resource.NODE)
    assert hint(pod_info("test-pod"), summary(old), summary(new)) is want


# -- TestIsSchedulableAfterTargetPodUpdate ------------------------------------------------------
def _answers(*values: bool) -> Callable[[PodSpec], bool]:
    """Upstream's mock inference answering in turn (old pod first, then new)."""
    it: Iterator[bool] = iter(values)
    return lambda spec: next(it)


POD_HINTS = [
    pytest.param(_answers(False, True), QueueingHint.QUEUE, id="Pod Update adds requirement"),
    pytest.param(_answers(True, False), QueueingHint.QUEUE, id="Pod Update removes requirement"),
    pytest.param(lambda spec: False, QueueingHint.SKIP,
                 id="Pod Update with no change in requirements"),
]


@pytest.mark.parametrize(("infer", "want"), POD_HINTS)
def test_target_pod_update_hint(infer: Callable[[PodSpec], bool], want: QueueingHint) -> None:
    plugin = NodeDeclaredFeatures(FeatureRegistry([feature("TestFeature", infer)]),
                                  Version.parse("1.35.0"))
    old, new = pod_info("test-pod"), pod_info("test-pod", labels={"foo": "bar"})
    assert plugin._after_target_pod_update(old, old, new) is want


def test_target_pod_update_hint_reads_the_real_registry() -> None:
    hint = _hint(Resource.UNSCHEDULED_POD)
    plain = pod_info("p")
    host_network = pod_info("p", spec={"hostNetwork": True})
    userns = pod_info("p", spec={"hostNetwork": True, "hostUsers": False})
    assert hint(plain, plain, host_network) is QueueingHint.SKIP
    assert hint(plain, host_network, userns) is QueueingHint.QUEUE


# -- TestEventsToRegister -----------------------------------------------------------------------
def test_events_to_register_plugin_enabled() -> None:
    events = NodeDeclaredFeatures().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE),
        (Resource.UNSCHEDULED_POD, Action.UPDATE),
    ]


# -- explain ------------------------------------------------------------------------------------
def test_explain_names_the_features_the_node_lacks() -> None:
    snapshot = snapshot_of([declaring(node("n1"), A), node("n2")])
    p = pod_info("p", spec={"hostNetwork": True, "hostUsers": False,
                            "containers": [_restart_all_container()]})
    lines = NodeDeclaredFeatures().explain_nodes(CycleState(), p, full_view(snapshot))
    assert lines == [
        [f"the node does not declare {B}, which the pod needs"],
        [f"the node does not declare {A}, which the pod needs",
         f"the node does not declare {B}, which the pod needs"],
    ]


# -- the default profile, end to end in process ------------------------------------------------
def test_a_pod_waits_for_a_node_that_declares_what_it_needs() -> None:
    """PreFilter, Filter, the FailedScheduling message and the node event: a node declaring the
    feature later moves the pod, which then binds there."""
    needs = pod("p", spec={"hostNetwork": True, "hostUsers": False})
    s, ports = scheduler_of(nodes=[node("n1"), declaring(node("n2"), A)], pods=[needs])
    try:
        run_cycles(s)
        assert ports.bound == []
        assert [m for _, _, m in ports.failures] == [
            "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."]
        set_node(s, declaring(node("n1"), B))
        run_cycles(s)
        assert ports.bound == [("default/p", "n1")]
    finally:
        s.stop(timeout=5)


def test_the_default_profile_runs_it_last_among_the_filters() -> None:
    """applyFeatureGates appends it after DefaultBinder (default_plugins.go)."""
    s, _ = scheduler_of()
    try:
        filters = [p.name for p in s.profiles["secondary-scheduler"].plugins.filter]
        assert filters[-1] == "NodeDeclaredFeatures"
    finally:
        s.stop(timeout=5)


# -- component-helpers: each feature's InferForScheduling --------------------------------------
def _restart_all_container() -> dict[str, Any]:
    """Upstream's containerWithRestartAllContainersAction."""
    return {**container("container", image="image"), "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "RestartAllContainers",
                                    "exitCodes": {"operator": "In", "values": [1]}}]}


PLAIN = {"name": "name", "image": "image"}


@pytest.mark.parametrize(("spec", "want"), [
    pytest.param({"initContainers": [_restart_all_container()], "containers": [PLAIN]}, True,
                 id="init container with rules"),
    pytest.param({"initContainers": [PLAIN], "containers": [_restart_all_container()]}, True,
                 id="regular container with rules"),
    pytest.param({"initContainers": [PLAIN], "containers": [{**PLAIN, "name": "name2"}]}, False,
                 id="no rules"),
])
def test_restart_all_containers_infer_for_scheduling(spec: PodSpec, want: bool) -> None:
    assert needs_restart_all_containers(spec) is want


@pytest.mark.parametrize(("host_network", "host_users", "want"), [
    pytest.param(True, False, True, id="HostNetwork true, HostUsers false"),
    pytest.param(True, None, False, id="HostNetwork true, HostUsers nil"),
    pytest.param(True, True, False, id="HostNetwork true, HostUsers true"),
    pytest.param(False, False, False, id="HostNetwork false, HostUsers false"),
])
def test_user_namespaces_host_network_infer_for_scheduling(
    host_network: bool, host_users: bool | None, want: bool
) -> None:
    spec: dict[str, Any] = {"hostNetwork": host_network}
    if host_users is not None:
        spec["hostUsers"] = host_users
    assert needs_user_namespaces_host_network(spec) is want


def _mounting(options: Sequence[str] = ()) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": "v", "mountPath": "/v"}
    if options:
        mount["bindMountOptions"] = list(options)
    return {**PLAIN, "volumeMounts": [mount]}


# volumebindmountoptions has no test upstream; these follow its feature.go.
@pytest.mark.parametrize(("spec", "want"), [
    pytest.param({"containers": [_mounting(["nosuid"])]}, True, id="container mount"),
    pytest.param({"containers": [_mounting()], "initContainers": [_mounting(["nosuid"])]}, True,
                 id="init container mount"),
    pytest.param({"containers": [_mounting()], "ephemeralContainers": [_mounting(["nosuid"])]},
                 True, id="ephemeral container mount"),
    pytest.param({"containers": [_mounting()], "initContainers": [_mounting()]}, False,
                 id="mounts without options"),
    pytest.param({"containers": [_mounting([])]}, False, id="an empty options list"),
])
def test_volume_bind_mount_options_infer_for_scheduling(spec: PodSpec, want: bool) -> None:
    assert needs_volume_bind_mount_options(spec) is want


UPDATE_ONLY = ["InPlacePodLevelResourcesVerticalScaling", "ExtendWebSocketsToKubelet",
               "InPlacePodVerticalScalingInitContainers",
               "InPlacePodVerticalScalingMemoryBackedVolumes", "DRANodeAllocatableResources",
               "DRAOptionalNodeOperations"]


def test_features_that_never_matter_to_scheduling() -> None:
    """Their TestInferForScheduling*: false whatever the pod; a pod needing every feature
    scheduling can need needs just the three."""
    spec = {"hostNetwork": True, "hostUsers": False, "resources": {"requests": {"cpu": "1"}},
            "containers": [_restart_all_container(), _mounting(["nosuid"])],
            "volumes": [{"name": "v", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]}
    required = DEFAULT_FEATURES.infer_for_pod_scheduling(spec, Version.parse("1.37.2"))
    assert DEFAULT_FEATURES.unmap(required) == sorted([A, B, C])
    assert all(f.infer_for_scheduling is None for f in ALL_FEATURES if f.name in UPDATE_ONLY)


def test_the_registry_is_upstreams() -> None:
    """features/registry.go AllFeatures, v0.37.2, none with a MaxVersion."""
    assert sorted(f.name for f in ALL_FEATURES) == sorted([
        RESTART_ALL, USERNS_HOST_NETWORK, BIND_MOUNT_OPTIONS, *UPDATE_ONLY])
    assert all(f.max_version is None for f in ALL_FEATURES)


# -- component-helpers framework_test.go TestInferForPodScheduling ----------------------------
def _pod_level_resources(spec: PodSpec) -> bool:
    return spec.get("resources") is not None


WITH_RESOURCES: PodSpec = {"resources": {"requests": {"cpu": "500m"}}}


@pytest.mark.parametrize(("max_version", "spec", "target", "want"), [
    pytest.param("", WITH_RESOURCES, "1.30.0", ["PodLevelResources"],
                 id="pod with feature, inferred during scheduling"),
    pytest.param("", {}, "1.30.0", [], id="pod without feature"),
    pytest.param("1.30.0", WITH_RESOURCES, "1.31.0", [],
                 id="feature universally available, not inferred during create"),
    pytest.param("1.30.0", WITH_RESOURCES, "0.0.0-alpha.2.39+049eafd34dfbd2",
                 ["PodLevelResources"], id="pre-release target version"),
    pytest.param("1.30.0", WITH_RESOURCES, "1.40.0", [], id="exceeds max version"),
])
def test_infer_for_pod_scheduling(
    max_version: str, spec: PodSpec, target: str, want: list[str]
) -> None:
    registry = FeatureRegistry([feature("PodLevelResources", _pod_level_resources, max_version)])
    assert registry.unmap(registry.infer_for_pod_scheduling(spec, Version.parse(target))) == want


@pytest.mark.parametrize(("smaller", "larger"), [
    ("1.30.0", "1.31.0"), ("1.30.0-alpha.1", "1.30.0"), ("1.30.0-alpha.1", "1.30.0-alpha.2"),
    ("1.30.0-alpha.2", "1.30.0-alpha.10"), ("1.30.0-1", "1.30.0-alpha"), ("v1.9.9", "1.10.0"),
])
def test_versions_compare_as_semver(smaller: str, larger: str) -> None:
    assert Version.parse(smaller) < Version.parse(larger)
    assert not Version.parse(larger) < Version.parse(smaller)
    assert Version.parse("1.30.0+build") == Version.parse("1.30.0")


# -- component-helpers featureset_test.go TestFeatureMapper (TryMap and Unmap) ----------------
@pytest.mark.parametrize(("names", "want"), [
    pytest.param([], [], id="Empty input"),
    pytest.param(["a"], ["a"], id="Single valid feature"),
    pytest.param(["a", "c"], ["a", "c"], id="Multiple valid features"),
    pytest.param(["a", "b", "c", "d"], ["a", "b", "c", "d"], id="All features"),
    pytest.param(["0", "a"], ["a"], id="Unknown feature (start)"),
    pytest.param(["a", "ab", "b"], ["a", "b"], id="Unknown feature (middle)"),
    pytest.param(["d", "e"], ["d"], id="Unknown feature (end)"),
])
def test_feature_mapper(names: list[str], want: list[str]) -> None:
    registry = FeatureRegistry([feature(n, False) for n in ["d", "b", "c", "a"]])
    assert registry.unmap(registry.try_map(names)) == want


# -- the model: what the node table and the queue hints read -----------------------------------
def test_a_node_table_row_holds_its_declared_features_and_forgets_them_with_the_node() -> None:
    snapshot = snapshot_of([declaring(node("n1"), A, C, "Unknown")])
    table = snapshot.nodes
    row = table.index["n1"]
    assert DEFAULT_FEATURES.unmap(int(table.declared_features[row])) == sorted([A, C])
    table.upsert_node(node("n1"))
    assert int(table.declared_features[row]) == 0
    table.upsert_node(declaring(node("n1"), B))
    table.remove_node("n1")
    assert int(table.declared_features[row]) == 0


def test_a_node_summary_keeps_the_declared_list_as_the_api_has_it() -> None:
    n = summary(declaring(node("n"), B, A, "Unknown"))
    assert n is not None
    assert n.declared_features == tuple(sorted([A, B, "Unknown"]))
    assert summary(node("n")).declared_features == ()  # type: ignore[union-attr]


def test_the_spec() -> None:
    assert node_declared_features.SPEC.name == "NodeDeclaredFeatures"
