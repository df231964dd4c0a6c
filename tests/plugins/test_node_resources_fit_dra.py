"""NodeResourcesFit's scoring of DRA-backed extended resources (DRAExtendedResource, GA in
v1.37): upstream's ``TestFitScore`` cases with ``draObjects`` (fit_test.go) and
``TestCalculateResourceAllocatableRequest`` (resource_allocation_test.go), names kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.dra import ResourceClaim
from scheduler.model.pod import PodInfo
from scheduler.plugin_api import SelectorCache
from scheduler.plugins.helper.resource_allocation import (
    DraScoring,
    ResourceSpec,
    allocation_inputs,
)
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.testing import container, full_view, node, pod, scheduler_of
from tests.plugins.dynamic_resources.plugin_fixtures import allocated, resource_claim

EXTENDED = "extended.resource.dra.io/something"
CLASS_NAME = "device-class-name"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS_NAME}"
NODE_NAME, DRIVER = "resource-node", "test-driver"


def _class(extended: str | None = EXTENDED, *selectors: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if extended is not None:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": CLASS_NAME, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec}


def _slice(node_name: str, *devices: str | Mapping[str, Any], name: str = "",
           pool: str = "", **spec: Any) -> dict[str, Any]:
    """``MakeResourceSlice(node, driver).Devices(...)``: the node's pool of that name."""
    where: dict[str, Any] = spec or {"nodeName": node_name}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node_name}-{DRIVER}"},
            "spec": {"driver": DRIVER, **where,
                     "pool": {"name": pool or node_name, "generation": 0,
                              "resourceSliceCount": 1},
                     "devices": [{"name": d} if isinstance(d, str) else dict(d)
                                 for d in devices]}}


def _claim(name: str, device: str, pool: str = NODE_NAME,
           share_id: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"request": "req-1", "driver": DRIVER, "pool": pool,
                              "device": device}
    if share_id is not None:
        result["shareID"] = share_id
    claim = resource_claim(name, {"name": "req-1", "exactly": {"deviceClassName": CLASS_NAME}},
                           owner=False)
    return allocated(claim, {"devices": {"results": [result]}})


def _gpu(name: str, model: str, memory: str, **where: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}},
            "capacity": {"memory": {"value": memory}}, **where}


_PER_DEVICE_SLICE = _slice(
    NODE_NAME,
    _gpu("device-1", "SOME-XYZ", "16Gi", nodeName=NODE_NAME),
    _gpu("device-2", "SOME-ZYX", "12Gi", nodeName="other-node"),
    _gpu("device-3", "SOME-XZY", "24Gi", nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["us-east-1a"]}]}]}),
    name="per-device-slice", pool="per-device-pool", perDeviceNodeSelection=True)
_GPU_SELECTOR = ('device.driver == "test-driver" && device.capacity["test-driver"].memory'
                 '.compareTo(quantity("8Gi")) >= 0 && '
                 'device.attributes["test-driver"].model.startsWith("SOME-")')

# name, node allocatable of the resource, resource, DRA objects, allocatable, allocated
ALLOCATABLE_REQUEST: list[tuple[str, str | None, str, Sequence[Mapping[str, Any]], int, int]] = [
    ("device-plugin-resource-feature-enabled", "4", EXTENDED, [], 4, 0),
    ("DRA-backed-resource-explicit", None, EXTENDED,
     [_class(), _slice(NODE_NAME, "device-1")], 1, 0),
    ("DRA-backed-resource-implicit", None, IMPLICIT,
     [_class(None), _slice(NODE_NAME, "device-1")], 1, 0),
    ("DRA-backed-resource-no-slices", None, EXTENDED, [_class()], 0, 0),
    ("DRA-backed-resource-with-allocated-device", None, EXTENDED,
     [_class(), _slice(NODE_NAME, "device-1", "device-2"), _claim("test-claim", "device-1")],
     2, 1),
    ("DRA-backed-resource-with-shared-device-allocation", None, EXTENDED,
     [_class(), _slice(NODE_NAME, "device-1", "device-2"),
      _claim("test-claim", "device-1", share_id="share-123")], 2, 1),
    ("DRA-backed-resource-multiple-devices-mixed-allocation", None, EXTENDED,
     [_class(), _slice(NODE_NAME, "device-1", "device-2", "device-3"),
      _claim("test-claim-1", "device-1"),
      _claim("test-claim-2", "device-2", share_id="share-456")], 3, 2),
    ("DRA-backed-resource-with-per-device-node-selection", None, EXTENDED,
     [_class(EXTENDED, _GPU_SELECTOR), _PER_DEVICE_SLICE,
      _claim("test-claim", "device-1", pool="per-device-pool")], 2, 1),
]


@pytest.mark.parametrize(("name", "on_node", "resource", "objects", "allocatable", "used"),
                         ALLOCATABLE_REQUEST, ids=[c[0] for c in ALLOCATABLE_REQUEST])
def test_calculate_resource_allocatable_request(
    name: str, on_node: str | None, resource: str, objects: Sequence[Mapping[str, Any]],
    allocatable: int, used: int,
) -> None:
    """TestCalculateResourceAllocatableRequest (its gate-off case is left out: the gate is
    locked on in v1.37): a node's own allocatable first, else its devices the class selects."""
    extra = {resource: on_node} if on_node is not None else None
    s, _ = scheduler_of(nodes=[node(NODE_NAME, labels={"zone": "us-east-1a"}, extra=extra)],
                        storage=objects)
    specs = (ResourceSpec(resource, 1),)
    dra = DraScoring.of(s.dra, specs, SelectorCache())
    inputs = allocation_inputs(full_view(s.snapshot), specs, (1,), use_requested=False, dra=dra)
    assert (int(inputs.allocatable[0, 0]), int(inputs.allocated[0, 0])) == (allocatable, used)


def test_no_dra_state_without_a_class_for_the_scoring_resources() -> None:
    """getDRAPreScoredParams: nothing read of DRA when no class serves a listed resource."""
    s, _ = scheduler_of(nodes=[node(NODE_NAME)], storage=[_class("example.com/other")])
    assert DraScoring.of(s.dra, (ResourceSpec(EXTENDED, 1),), SelectorCache()) is None


def test_a_selector_error_counts_nothing() -> None:
    """calculateDRAResourceTotals fails on a CEL error: the resource is left out, (0, 0)."""
    s, _ = scheduler_of(nodes=[node(NODE_NAME)], storage=[
        _class(EXTENDED, 'device.attributes["test-driver"].nope == 1'),
        _slice(NODE_NAME, "device-1")])
    dra = DraScoring.of(s.dra, (ResourceSpec(EXTENDED, 1),), SelectorCache())
    assert dra is not None and dra.totals(EXTENDED, NODE_NAME, {}) == (0, 0)


def _fit_of(objects: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]) -> Any:
    config = {"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "LeastAllocated",
                            "resources": [{"name": EXTENDED, "weight": 1}]}}}]}]}
    s, _ = scheduler_of(config, nodes=nodes, storage=objects)
    plugin = s.profiles["secondary-scheduler"].instances["NodeResourcesFit"]
    assert isinstance(plugin, NodeResourcesFit)
    return s, plugin


_FIT_OBJECTS = [_class(), _slice("node1", "device-1", "device-2", "device-3"),
                _slice("node2", "device-1", "device-2")]


@pytest.mark.parametrize("run_pre_score", [True, False], ids=[
    "test case for ScoringStrategy LeastAllocated with Extended resources",
    "test case for ScoringStrategy LeastAllocated with Extended resources if PreScore is "
    "not called"])
def test_fit_score(run_pre_score: bool) -> None:
    """TestFitScore's DRA cases: 1 of 3 devices leaves 66, 1 of 2 leaves 50."""
    s, plugin = _fit_of(_FIT_OBJECTS, [node("node1"), node("node2")])
    incoming = PodInfo.from_pod(pod("p", containers=[container(extra={EXTENDED: "1"})]))
    view, state = full_view(s.snapshot), CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, incoming, view).is_success()
    assert plugin.score(state, incoming, view).tolist() == [66, 50]


def test_fit_score_follows_allocations() -> None:
    """The device counts are read again each cycle, never kept with the node rows."""
    s, plugin = _fit_of(_FIT_OBJECTS, [node("node1"), node("node2")])
    incoming = PodInfo.from_pod(pod("p", containers=[container(extra={EXTENDED: "1"})]))
    assert plugin.score(CycleState(), incoming, full_view(s.snapshot)).tolist() == [66, 50]
    s.dra.assume_after_api_call(ResourceClaim.parse(_claim("c", "device-1", pool="node1")))
    assert plugin.score(CycleState(), incoming, full_view(s.snapshot)).tolist() == [33, 50]
