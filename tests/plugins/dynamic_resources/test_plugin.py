"""DynamicResources, point by point: cases of upstream's ``TestPlugin``
(``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go``, v1.37.2),
names kept, on a scheduler fed the same objects as API dicts."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.framework.interface import Code
from scheduler.plugins.dynamic_resources.claim_writes import FINALIZER, claim_path
from scheduler.testing import pod, set_storage_object
from tests.plugins.dynamic_resources.plugin_fixtures import (
    ALLOCATED_CLAIM,
    CLAIM_NAME,
    DEVICE_CLASS,
    DRIVER,
    NAMESPACE,
    NODE2_NAME,
    NODE_NAME,
    OTHER_ALLOCATED_CLAIM,
    OTHER_CLAIM,
    PENDING_CLAIM,
    POD_NAME,
    POD_UID,
    WORKER,
    WORKER2,
    WORKER_NODE_SLICE,
    Run,
    TickingClock,
    allocated,
    allocation,
    deleting,
    pod_with_claim_name,
    pod_with_claim_template,
    request,
    reserved,
    resource_claim,
    resource_slice,
)

OK = (Code.SUCCESS, "")
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
STATUS_PATH = claim_path(NAMESPACE, CLAIM_NAME, status=True)
CLAIM_PATH = claim_path(NAMESPACE, CLAIM_NAME)
RESERVED_FOR_POD = [{"resource": "pods", "name": POD_NAME, "uid": POD_UID}]


def _status_write(run: Run) -> dict[str, Any]:
    writes = [obj for path, obj in run.ports.written if path == STATUS_PATH]
    assert len(writes) == 1, run.ports.written
    return dict(writes[0])


def _through_reserve(run: Run) -> None:
    assert run.pre_enqueue().is_success()
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: OK}
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()


# -- no claims, missing claims ---------------------------------------------------------------
def test_empty() -> None:
    run = Run(pod("foo"))
    assert run.pre_enqueue().is_success()
    assert run.pre_filter().is_skip()
    assert run.post_filter().code is Code.UNSCHEDULABLE
    assert run.post_filter().reasons == ()
    assert run.plugin.pre_bind_pre_flight(run.state, run.pod, NODE_NAME).is_skip()


def test_missing_claim() -> None:
    run = Run(pod_with_claim_template(in_status=False), claims=[ALLOCATED_CLAIM, OTHER_CLAIM])
    status = run.pre_enqueue()
    assert status.code is UU
    assert status.message == 'pod "default/my-pod": ResourceClaim not created yet'


def test_deleted_claim() -> None:
    run = Run(pod_with_claim_template(in_status=True), claims=[deleting(ALLOCATED_CLAIM)])
    status = run.pre_enqueue()
    assert (status.code, status.message) == (
        UU, 'resourceclaim "my-pod-my-resource" is being deleted')


def test_wrong_claim() -> None:
    claim = copy.deepcopy(ALLOCATED_CLAIM)
    claim["metadata"]["ownerReferences"][0]["uid"] += "123"
    run = Run(pod_with_claim_template(in_status=True), claims=[claim])
    status = run.pre_enqueue()
    assert (status.code, status.message) == (
        UU, "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod "
            "(Pod is not owner)")


def test_a_claim_named_directly_that_does_not_exist_waits_in_pre_enqueue() -> None:
    """The assume cache's NotFoundError, as foreachPodResourceClaim returns it."""
    run = Run(pod_with_claim_name("nope"))
    status = run.pre_enqueue()
    assert (status.code, status.message) == (UU, 'could not find ResourceClaim "default/nope"')


# -- allocated claims --------------------------------------------------------------------------
def test_claim_reference() -> None:
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM, OTHER_CLAIM])
    _through_reserve(run)
    assert run.plugin.pre_bind_pre_flight(run.state, run.pod, NODE_NAME).is_success()
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    written = _status_write(run)
    assert written["status"]["reservedFor"] == RESERVED_FOR_POD
    assert written["status"]["allocation"]["allocationTimestamp"] == "2026-01-01T00:00:00Z"
    # Only the status is written: the claim had its finalizer.
    assert [path for path, _ in run.ports.written] == [STATUS_PATH]
    assumed = run.claim()
    assert assumed is not None and [r.uid for r in assumed.reserved_for] == [POD_UID]


def test_claim_template() -> None:
    run = Run(pod_with_claim_template(in_status=True), claims=[ALLOCATED_CLAIM, OTHER_CLAIM])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _status_write(run)["status"]["reservedFor"] == RESERVED_FOR_POD


def test_reserved_okay() -> None:
    """A claim reserved for the pod already: PreBind writes nothing."""
    in_use = reserved(ALLOCATED_CLAIM, (POD_UID, POD_NAME))
    run = Run(pod_with_claim_name(), claims=[in_use])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert run.ports.written == []


def test_wrong_topology() -> None:
    """PostFilter tries to get the pod schedulable by deallocating the claim."""
    wrong = allocated(PENDING_CLAIM, {"devices": {"results": []}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}]}]}})
    run = Run(pod_with_claim_name(), claims=[wrong])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "resourceclaim not available on the node")}
    status = run.post_filter()
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    (path, written), = run.ports.written
    assert path == STATUS_PATH
    assert "allocation" not in written["status"] and "reservedFor" not in written["status"]


def test_good_topology() -> None:
    good = allocated(PENDING_CLAIM, {"devices": {"results": []}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME]}]}]}})
    run = Run(pod_with_claim_name(), claims=[good])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _status_write(run)["status"]["reservedFor"] == RESERVED_FOR_POD


def test_bind_failure() -> None:
    """Unreserve after a failed bind takes the pod out of reservedFor again."""
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert run.ports.patched == [(STATUS_PATH, {
        "metadata": {"uid": f"uid-{CLAIM_NAME}"},
        "status": {"reservedFor": [{"$patch": "delete", "uid": POD_UID}]}})]


# -- claims to allocate ----------------------------------------------------------------------
def test_no_resources() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    assert run.post_filter().code is Code.UNSCHEDULABLE
    assert run.post_filter().reasons == ()


def test_with_resources() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.in_flight(PENDING_CLAIM)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    # The finalizer first (Update), then allocation and reservation (UpdateStatus).
    (path1, first), (path2, second) = run.ports.written
    assert (path1, path2) == (CLAIM_PATH, STATUS_PATH)
    assert first["metadata"]["finalizers"] == [FINALIZER]
    assert second["metadata"]["finalizers"] == [FINALIZER]
    assert second["status"]["reservedFor"] == RESERVED_FOR_POD
    expected = allocation()
    expected["allocationTimestamp"] = "2026-01-01T00:00:00Z"
    assert second["status"]["allocation"] == expected
    # PostBind: nothing in flight, the claim assumed with its allocation.
    assert not run.in_flight(PENDING_CLAIM)
    assumed = run.claim()
    assert assumed is not None and assumed.allocation is not None
    assert [r.device for r in assumed.allocation.results] == ["instance-1"]


def test_with_resources_has_finalizer() -> None:
    claim = copy.deepcopy(PENDING_CLAIM)
    claim["metadata"]["finalizers"] = [FINALIZER]
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert [path for path, _ in run.ports.written] == [STATUS_PATH]


def test_skip_bind() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.in_flight(PENDING_CLAIM)
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert not run.in_flight(PENDING_CLAIM)
    assert run.ports.written == [] and run.ports.patched == []


def test_exhausted_resources_in_informer_cache() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM, OTHER_ALLOCATED_CLAIM],
              classes=[DEVICE_CLASS], objs=[WORKER_NODE_SLICE])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    assert run.post_filter().code is Code.UNSCHEDULABLE


def test_exhausted_resources_in_flight_claim() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM, OTHER_CLAIM],
              classes=[DEVICE_CLASS], objs=[WORKER_NODE_SLICE],
              in_flight=[OTHER_ALLOCATED_CLAIM])
    assert run.pre_enqueue().is_success()
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    assert run.post_filter().code is Code.UNSCHEDULABLE
    assert run.in_flight(OTHER_CLAIM)


def test_other_resources_in_flight_claim() -> None:
    other_device = allocated(OTHER_CLAIM, allocation("instance-2"))
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM, OTHER_CLAIM],
              classes=[DEVICE_CLASS], objs=[resource_slice(NODE_NAME, "instance-1")],
              in_flight=[other_device])
    _through_reserve(run)
    assert run.in_flight(PENDING_CLAIM) and run.in_flight(OTHER_CLAIM)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert not run.in_flight(PENDING_CLAIM) and run.in_flight(OTHER_CLAIM)


def test_missing_class() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM])
    status = run.pre_filter()
    assert (status.code, status.message) == (
        UU, "request req-1: device class my-resource-class does not exist")
    assert run.post_filter().code is Code.UNSCHEDULABLE


def test_claim_with_request_with_unknown_device_class() -> None:
    claim = resource_claim(CLAIM_NAME, request(1, "does-not-exist"))
    run = Run(pod_with_claim_name(), claims=[claim])
    assert run.pre_filter().message == "request req-1: device class does-not-exist does not exist"


def test_claim_with_prioritized_list_unknown_device_class() -> None:
    claim = resource_claim(CLAIM_NAME, {"name": "req-1", "firstAvailable": [
        {"name": "subreq-1", "deviceClassName": "does-not-exist", "count": 1}]})
    run = Run(pod_with_claim_name(), claims=[claim])
    assert run.pre_filter().message == (
        "request req-1/subreq-1: device class does-not-exist does not exist")


def test_claim_with_prioritized_list() -> None:
    claim = resource_claim(CLAIM_NAME, {"name": "req-1", "firstAvailable": [
        {"name": "subreq-1", "deviceClassName": "my-resource-class", "count": 1}]})
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    results = _status_write(run)["status"]["allocation"]["devices"]["results"]
    assert results == [{"request": "req-1/subreq-1", "driver": DRIVER, "pool": NODE_NAME,
                        "device": "instance-1"}]


def test_claim_parameters_cel_runtime_error() -> None:
    claim = resource_claim(CLAIM_NAME, request(1, selectors=[{"cel": {
        "expression": f'device.attributes["{DRIVER}"].healthy'}}]))
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    assert run.pre_filter().is_success()
    code, reason = run.filter()[NODE_NAME]
    assert code is Code.ERROR
    assert reason == (
        "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: "
        "CEL runtime error: no such key: healthy. consider using CEL optional chaining (.? "
        "followed by orValue()) or guarding the check with has() for optional fields")


def test_class_parameters_cel_runtime_error() -> None:
    broken = {**DEVICE_CLASS, "spec": {"selectors": [{"cel": {
        "expression": f'device.attributes["{DRIVER}"].healthy'}}]}}
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[broken],
              objs=[WORKER_NODE_SLICE])
    assert run.pre_filter().is_success()
    code, reason = run.filter()[NODE_NAME]
    assert code is Code.ERROR
    assert reason.startswith("class my-resource-class: selector #0 on device "
                             "some-driver/worker/instance-1: CEL runtime error: no such key")


# -- PostFilter without PreFilter ------------------------------------------------------------
def test_post_filter_without_pre_filter_state_is_an_error_not_found() -> None:
    """CycleState.Read's fwk.ErrNotFound: an earlier PreFilter rejected the pod, this one
    never ran (issue 38, item 1)."""
    run = Run(pod_with_claim_name())
    status = run.post_filter()
    assert (status.code, status.message) == (Code.ERROR, "not found")


# -- more of TestPlugin ----------------------------------------------------------------------
def _admin_access(claim: dict[str, Any]) -> dict[str, Any]:
    """``adminAccess``: the request asks for it, the allocation's results have it."""
    out = copy.deepcopy(claim)
    for r in out["spec"]["devices"]["requests"]:
        r["exactly"]["adminAccess"] = True
    for r in (out.get("status", {}).get("allocation") or {}).get("devices", {}).get(
            "results", []):
        r["adminAccess"] = True
    return out


def test_tainted_device_enabled() -> None:
    tainted = resource_slice(NODE_NAME, {"name": "instance-1", "taints": [
        {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]})
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[tainted])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "cannot allocate all claims")}
    assert run.post_filter().code is Code.UNSCHEDULABLE


TAINT_RULE = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule",
              "metadata": {"name": "no-instance-1"},
              "spec": {"deviceSelector": {"driver": DRIVER, "pool": NODE_NAME,
                                          "device": "instance-1"},
                       "taint": {"key": "taint-key", "effect": "NoSchedule"}}}


def test_device_taint_rules_and_slices_changed_between_cycles_are_seen() -> None:
    """The allocator's views are kept between cycles only while no slice or DeviceTaintRule
    changes: a rule added, then removed, then a slice replaced, each shows in the next
    PreFilter (the slice tracker's patched slices, upstream's ``DeviceTaintRule`` handling)."""
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE], nodes=(WORKER, WORKER2))
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == OK
    set_storage_object(run.s, TAINT_RULE)
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (UU, "cannot allocate all claims")
    set_storage_object(run.s, TAINT_RULE, deleted=True)
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == OK
    set_storage_object(run.s, resource_slice(NODE_NAME, "instance-2"))
    set_storage_object(run.s, resource_slice(NODE2_NAME, "instance-1"))
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: OK, NODE2_NAME: OK}
    set_storage_object(run.s, {**TAINT_RULE, "spec": {**TAINT_RULE["spec"], "deviceSelector": {
        "driver": DRIVER, "pool": NODE2_NAME, "device": "instance-1"}}})
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: OK, NODE2_NAME: (UU, "cannot allocate all claims")}


def test_request_admin_access_with_dra_admin_access_featuregate() -> None:
    """Admin access takes a device another claim holds."""
    run = Run(pod_with_claim_name(), claims=[_admin_access(PENDING_CLAIM), OTHER_ALLOCATED_CLAIM],
              classes=[DEVICE_CLASS], objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    result, = _status_write(run)["status"]["allocation"]["devices"]["results"]
    assert (result["device"], result["adminAccess"]) == ("instance-1", True)


def test_structured_ignore_allocated_admin_access() -> None:
    """A device held with admin access is free for others."""
    run = Run(pod_with_claim_name(),
              claims=[PENDING_CLAIM, _admin_access(OTHER_ALLOCATED_CLAIM)],
              classes=[DEVICE_CLASS], objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _status_write(run)["status"]["reservedFor"] == RESERVED_FOR_POD


def test_cel_runtime_error_for_one_of_two_nodes() -> None:
    """A CEL runtime error on one node fails the attempt: the pod stays pending rather than
    going where the broken selector happened to pass."""
    claim = resource_claim(CLAIM_NAME, request(1, selectors=[{"cel": {
        "expression": f'device.attributes["{DRIVER}"].healthy'}}]))
    healthy = resource_slice("worker-2", {"name": "instance-1",
                                          "attributes": {"healthy": {"bool": True}}})
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE, healthy], nodes=[WORKER, WORKER2])
    assert run.pre_filter().is_success()
    verdicts = run.filter()
    assert verdicts[NODE_NAME][0] is Code.ERROR
    assert verdicts[NODE_NAME][1].startswith(
        "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1")


def test_with_resources_finalizer_gets_removed() -> None:
    """The finalizer was set, then removed before PreBind: the status write conflicts, the
    claim is read again and gets the finalizer back first."""
    claim = copy.deepcopy(PENDING_CLAIM)
    claim["metadata"]["finalizers"] = [FINALIZER]
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    fresh = copy.deepcopy(PENDING_CLAIM)
    fresh["metadata"]["resourceVersion"] = "2"
    run.ports.objects[CLAIM_PATH] = fresh
    run.ports.conflicts.add(STATUS_PATH)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    (path1, first), (path2, second) = run.ports.written
    assert (path1, path2) == (CLAIM_PATH, STATUS_PATH)
    assert first["metadata"]["finalizers"] == [FINALIZER]
    assert second["status"]["reservedFor"] == RESERVED_FOR_POD


def test_with_resources_finalizer_gets_added() -> None:
    """No finalizer at PreFilter, one added meanwhile: the finalizer write conflicts, the
    fresh claim has it, only the status is written then."""
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    _through_reserve(run)
    fresh = copy.deepcopy(PENDING_CLAIM)
    fresh["metadata"].update(finalizers=[FINALIZER], resourceVersion="2")
    run.ports.objects[CLAIM_PATH] = fresh
    run.ports.conflicts.add(CLAIM_PATH)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert [path for path, _ in run.ports.written] == [STATUS_PATH]


def test_add_allocation_timestamp() -> None:
    """DRADeviceBindingConditions on: an allocated claim without a timestamp gets one."""
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM])
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert _status_write(run)["status"]["allocation"]["allocationTimestamp"] == (
        "2026-01-01T00:00:00Z")


def _large() -> tuple[dict[str, Any], dict[str, Any]]:
    """``largeClaim`` (five requests) and ``largeWorkerNodeSlice`` (four devices)."""
    claim = resource_claim(CLAIM_NAME, *(request(i) for i in range(1, 6)))
    return claim, resource_slice(NODE_NAME, *(f"instance-{i}" for i in range(1, 5)))


def test_timeout() -> None:
    """filterTimeout 1ns: on a clock that moves on as the search runs, the deadline has
    passed at the search's first step, which stops it."""
    claim, large_slice = _large()
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              objs=[large_slice], args={"filterTimeout": "1ns"}, clock=TickingClock())
    assert run.pre_filter().is_success()
    assert run.filter() == {
        NODE_NAME: (Code.ERROR, "node worker: timed out trying to allocate devices")}


def test_timeout_zero() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE], args={"filterTimeout": "0s"})
    _through_reserve(run)
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()


def test_bind_failure_preserves_inflight_until_unreserve() -> None:
    """The API refuses the write: the allocation stays in flight (no other pod gets the
    device) until Unreserve."""
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[WORKER_NODE_SLICE])
    run.ports.refused[CLAIM_PATH] = "claim bind error"
    _through_reserve(run)
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert (status.code, status.message) == (
        Code.ERROR, "add finalizer to claim default/my-pod-my-resource: claim bind error")
    assert run.in_flight(PENDING_CLAIM)
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert not run.in_flight(PENDING_CLAIM)


def test_add_allocation_timestamp_failure() -> None:
    """The claim was deallocated before PreBind: the write conflicts, the fresh claim has no
    allocation to stamp."""
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM])
    _through_reserve(run)
    fresh = copy.deepcopy(PENDING_CLAIM)
    fresh["metadata"].update(finalizers=[FINALIZER], resourceVersion="2")
    run.ports.objects[CLAIM_PATH] = fresh
    run.ports.conflicts.add(STATUS_PATH)
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert status.message == (
        "claim default/my-pod-my-resource got deallocated elsewhere in the meantime")
