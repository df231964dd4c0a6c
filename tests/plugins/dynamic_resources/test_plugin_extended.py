"""DRA-backed extended resources: upstream's TestPlugin cases ``extended-resource-*``
(``dynamicresources_test.go``), names kept, and NodeResourcesFit leaving such a resource to
DynamicResources on nodes that do not offer it (``shouldDelegateResourceToDRA``)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Code
from scheduler.framework.ports import WriteResult
from scheduler.model.dra import DeviceClass
from scheduler.model.pod import PodInfo
from scheduler.plugins.node_resources_fit.fit import _after_device_class_change
from scheduler.testing import (
    container,
    full_view,
    node,
    pod,
    run_cycles,
    scheduler_of,
    set_storage_object,
)
from tests.plugins.dynamic_resources.plugin_fixtures import (
    CLASS_NAME,
    DEVICE_CLASS,
    NODE_NAME,
    POD_NAME,
    POD_UID,
    WORKER_NODE_SLICE,
    Run,
    device_class,
    resource_slice,
)

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
GPU = "example.com/gpu"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS_NAME}"
CLASS_WITH_NAME = device_class(extendedResourceName=GPU)
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def _pod(*containers: dict[str, str]) -> dict[str, Any]:
    return pod(POD_NAME, uid=POD_UID, containers=[
        container(f"c{i}", extra=requests) for i, requests in enumerate(containers)])


def _through_reserve(run: Run) -> None:
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (Code.SUCCESS, "")}
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()


def test_extended_resource_name_with_node_resource() -> None:
    """The node's device plugin offers the resource: nothing for DRA to do."""
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME],
              nodes=[node(NODE_NAME, extra={GPU: "1"})])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert run.ports.created == [] and run.ports.written == []


def test_non_dra_extended_resource_name_with_zero_allocatable() -> None:
    run = Run(_pod({GPU: "1"}), classes=[DEVICE_CLASS], objs=[WORKER_NODE_SLICE],
              nodes=[node(NODE_NAME, extra={GPU: "0"})])
    assert run.pre_filter().is_skip()
    assert run.plugin.pre_bind_pre_flight(run.state, run.pod, NODE_NAME).is_skip()


def test_extended_resource_name_no_resource() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    assert run.post_filter().code is Code.UNSCHEDULABLE


def _check_created(run: Run, requests: list[dict[str, Any]]) -> dict[str, Any]:
    (path, created), = run.ports.created
    assert path == "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    meta = created["metadata"]
    assert meta["generateName"] == "my-pod-extended-resources-"
    assert meta["annotations"] == {ANNOTATION: "true"}
    assert meta["ownerReferences"][0]["uid"] == POD_UID
    assert created["spec"]["devices"]["requests"] == requests
    return dict(created)


def test_extended_resource_name_with_resources() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    created = _check_created(run, [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": CLASS_NAME, "allocationMode": "ExactCount", "count": 1}}])
    name = created["metadata"]["name"]
    status = next(obj for path, obj in run.ports.written if path.endswith("/status"))["status"]
    assert [r["device"] for r in status["allocation"]["devices"]["results"]] == ["instance-1"]
    assert status["allocation"]["devices"]["results"][0]["request"] == "container-0-request-0"
    assert status["reservedFor"][0]["uid"] == POD_UID
    assert run.ports.patched == [("/api/v1/namespaces/default/pods/my-pod/status", {
        "status": {"extendedResourceClaimStatus": {
            "requestMappings": [{"containerName": "c0", "resourceName": GPU,
                                 "requestName": "container-0-request-0"}],
            "resourceClaimName": name}}})]
    assumed = run.claim(name)
    assert assumed is not None and assumed.allocation is not None
    # extendeddynamicresources.go: ResourceClaimCreatesTotal, not admin access, a Pod's.
    creates = run.s.metrics.resource_claim_creates
    assert (creates.labels("success", "false", "", "Pod").value,
            creates.labels("failure", "false", "", "Pod").value) == (1, 0)


def test_a_failed_creation_of_the_extended_claim_is_counted() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    run.ports.create = lambda path, obj: WriteResult(False, message="forbidden")  # type: ignore[method-assign]
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).code is Code.ERROR
    creates = run.s.metrics.resource_claim_creates
    assert (creates.labels("success", "false", "", "Pod").value,
            creates.labels("failure", "false", "", "Pod").value) == (0, 1)


def test_implicit_extended_resource_name_with_resources() -> None:
    run = Run(_pod({IMPLICIT: "1", GPU: "2"}), classes=[CLASS_WITH_NAME],
              objs=[resource_slice(NODE_NAME, *(f"instance-{i}" for i in range(1, 5)))])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()

    def exactly(name: str, count: int) -> dict[str, Any]:
        return {"name": name, "exactly": {"deviceClassName": CLASS_NAME,
                                          "allocationMode": "ExactCount", "count": count}}

    _check_created(run, [exactly("container-0-request-0", 1),
                         exactly("container-0-request-1", 2)])
    status = next(obj for path, obj in run.ports.written if path.endswith("/status"))["status"]
    assert [(r["request"], r["device"]) for r in status["allocation"]["devices"]["results"]] == [
        ("container-0-request-0", "instance-1"), ("container-0-request-1", "instance-2"),
        ("container-0-request-1", "instance-3")]


def test_extended_resource_name_with_resources_has_claim() -> None:
    """A claim PreBind created before (and then failed): Filter refuses, PostFilter
    deletes it, the next attempt starts afresh."""
    existing = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
        "name": "my-pod-extended-resources-abc", "namespace": "default", "uid": "uid-ext",
        "resourceVersion": "3", "annotations": {ANNOTATION: "true"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": POD_NAME,
                             "uid": POD_UID, "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": CLASS_NAME, "count": 1}}]}}}
    run = Run(_pod({GPU: "1"}), claims=[existing], classes=[CLASS_WITH_NAME],
              objs=[WORKER_NODE_SLICE])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot schedule extended resource claim")}
    status = run.post_filter()
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
    assert run.ports.deleted == [
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
        "my-pod-extended-resources-abc"]


def test_a_pod_asking_for_a_dra_backed_extended_resource_is_scheduled_by_the_profile() -> None:
    """NodeResourcesFit leaves the resource to DynamicResources on nodes without it, and
    DynamicResources finds the device: the pod lands where the device is."""
    nodes = [node("a"), node(NODE_NAME)]
    s, ports = scheduler_of(nodes=nodes, pods=[_pod({GPU: "1"})],
                            storage=[CLASS_WITH_NAME, WORKER_NODE_SLICE])
    try:
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert ports.bound == [("default/my-pod", NODE_NAME)]


def test_a_pod_waiting_for_a_class_serving_its_resource_is_retried_when_it_comes() -> None:
    """NodeResourcesFit's isSchedulableAfterDeviceClassEvent: before the class exists the
    pod is Insufficient example.com/gpu; the class's creation sends it back to be tried."""
    s, ports = scheduler_of(nodes=[node(NODE_NAME)], pods=[_pod({GPU: "1"})],
                            storage=[WORKER_NODE_SLICE])
    try:
        run_cycles(s)
        assert ports.bound == []
        assert next(m for _, _, m in ports.failures).startswith(
            "0/1 nodes are available: 1 Insufficient example.com/gpu.")
        set_storage_object(s, CLASS_WITH_NAME)
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert ports.bound == [("default/my-pod", NODE_NAME)]


def test_the_device_class_hint_of_node_resources_fit() -> None:
    incoming = PodInfo.from_pod(_pod({GPU: "1", IMPLICIT: "1"}))
    other = DeviceClass.parse(device_class("other", extendedResourceName="example.com/x"))
    named = DeviceClass.parse(CLASS_WITH_NAME)
    plain = DeviceClass.parse(DEVICE_CLASS)
    assert _after_device_class_change(incoming, None, plain) is QueueingHint.QUEUE
    assert _after_device_class_change(incoming, None, named) is QueueingHint.QUEUE
    assert _after_device_class_change(incoming, None, other) is QueueingHint.SKIP
    assert _after_device_class_change(incoming, plain, plain) is QueueingHint.SKIP
    assert _after_device_class_change(incoming, other, DeviceClass.parse(
        device_class("other", extendedResourceName=GPU))) is QueueingHint.QUEUE


def _created_requests(run: Run) -> list[tuple[str, str, int]]:
    (_, created), = run.ports.created
    return [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
            for r in created["spec"]["devices"]["requests"]]


def test_empty_with_extended_resources_enabled() -> None:
    run = Run(pod("foo"), classes=[CLASS_WITH_NAME])
    assert run.pre_filter().is_skip()
    assert run.post_filter().code is Code.UNSCHEDULABLE


def test_extended_resource_name_with_zero_allocatable() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE],
              nodes=[node(NODE_NAME, extra={GPU: "0"})])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _created_requests(run) == [("container-0-request-0", CLASS_NAME, 1)]


def test_extended_resource_one_device_plugin_one_dra() -> None:
    second = device_class(f"{CLASS_NAME}2", extendedResourceName=f"{GPU}2")
    run = Run(_pod({GPU: "1", f"{GPU}2": "1"}), classes=[CLASS_WITH_NAME, second],
              objs=[WORKER_NODE_SLICE], nodes=[node(NODE_NAME, extra={GPU: "1"})])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _created_requests(run) == [("container-0-request-1", f"{CLASS_NAME}2", 1)]


def test_implicit_extended_resource_name_two_containers_with_resources() -> None:
    run = Run(_pod({IMPLICIT: "1"}, {GPU: "2"}), classes=[CLASS_WITH_NAME],
              objs=[resource_slice(NODE_NAME, *(f"instance-{i}" for i in range(1, 5)))])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _created_requests(run) == [("container-0-request-0", CLASS_NAME, 1),
                                      ("container-1-request-0", CLASS_NAME, 2)]
    (_, patch), = run.ports.patched
    assert patch["status"]["extendedResourceClaimStatus"]["requestMappings"] == [
        {"containerName": "c0", "resourceName": IMPLICIT,
         "requestName": "container-0-request-0"},
        {"containerName": "c1", "resourceName": GPU, "requestName": "container-1-request-0"}]


def test_extended_resource_name_skip_bind() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    uid = run.state.read("DynamicResources").extended_uid
    assert run.s.dra.pending_allocation(uid) is not None
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert run.s.dra.pending_allocation(uid) is None
    assert run.ports.created == [] and run.ports.deleted == []


CLAIMS_PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def test_extended_resource_name_with_resources_fail_patch() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    run.ports.refused["/api/v1/namespaces/default/pods/my-pod/status"] = "patch error"
    _through_reserve(run)
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert (status.code, status.message) == (
        Code.ERROR, "update pod default/my-pod ExtendedResourceClaimStatus: patch error")
    # Unreserve deletes the claim PreBind created.
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    (_, created), = run.ports.created
    assert run.ports.deleted == [f"{CLAIMS_PATH}/{created['metadata']['name']}"]


def test_extended_resource_name_claim_creation_failure() -> None:
    run = Run(_pod({GPU: "1"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    run.ports.refused[CLAIMS_PATH] = "create error"
    _through_reserve(run)
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert status.message == "create claim for extended resources default/: create error"
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert run.ports.deleted == []


def test_the_explanation_counts_the_devices_of_the_extended_resource_claim() -> None:
    run = Run(_pod({GPU: "2"}), classes=[CLASS_WITH_NAME], objs=[WORKER_NODE_SLICE])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    lines = run.plugin.explain_nodes(run.state, run.pod, full_view(run.s.snapshot))
    assert lines == [[
        "claim default/<extended-resources>, request container-0-request-0 (class "
        "my-resource-class): wants 2; 1 device(s) on the node, 1 of the class, 1 match the "
        "request's selectors, 1 without an untolerated taint, 1 free"]]
