"""Devices with binding conditions (DRADeviceBindingConditions): upstream's TestPlugin cases
``bind-claim-with-binding-conditions``, ``bound-claim-with-succeeded-binding-conditions``,
``bound-claim-with-failed-binding`` and ``bound-claim-with-timed-out-binding``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.framework.interface import Code
from scheduler.model.dra import ResourceClaim
from scheduler.plugins.dynamic_resources.binding_conditions import wait_status
from scheduler.testing import pod
from tests.plugins.dynamic_resources.plugin_fixtures import (
    ALLOCATED_CLAIM,
    DEVICE_CLASS,
    DRIVER,
    NODE_NAME,
    OTHER_CLAIM,
    PENDING_CLAIM,
    Run,
    allocated,
    pod_with_claim_name,
    pod_with_claim_template,
    resource_slice,
)

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FIELD_SELECTOR = {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": [NODE_NAME]}]}]}


def _fabric_slice() -> dict[str, Any]:
    out = resource_slice(NODE_NAME, {
        "name": "instance-1", "bindsToNode": True, "bindingConditions": ["condition"],
        "bindingFailureConditions": ["failed"]})
    del out["spec"]["nodeName"]
    out["spec"]["nodeSelector"] = FIELD_SELECTOR
    return out


def _bound(condition: str, failed: str, timestamp: str = "2026-01-01T00:00:00Z"
           ) -> dict[str, Any]:
    claim = allocated(PENDING_CLAIM, {
        "allocationTimestamp": timestamp,
        "devices": {"results": [{
            "request": "req-1", "driver": DRIVER, "pool": NODE_NAME, "device": "instance-1",
            "bindingConditions": ["condition"], "bindingFailureConditions": ["failed"]}]},
        "nodeSelector": FIELD_SELECTOR})
    claim["status"]["devices"] = [{"driver": DRIVER, "pool": NODE_NAME, "device": "instance-1",
                                   "conditions": [{"type": "condition", "status": condition},
                                                  {"type": "failed", "status": failed}]}]
    return claim


def test_bind_claim_with_binding_conditions() -> None:
    """Nobody reports the condition within the binding timeout (1 s)."""
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[_fabric_slice()], args={"bindingTimeout": "1s"})
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (Code.SUCCESS, "")
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert (status.code, status.message) == (
        Code.ERROR, "device binding timeout: context deadline exceeded")
    assert run.ports.notes == [("default/my-pod", "BindingConditionsPending",
                                "waiting for binding conditions for device on node worker")]
    (_, written), = [w for w in run.ports.written if w[0].endswith("/status")]
    result = written["status"]["allocation"]["devices"]["results"][0]
    assert result["bindingConditions"] == ["condition"]
    # Still in flight: Unreserve drops it.
    assert run.in_flight(PENDING_CLAIM)


def test_bound_claim_with_succeeded_binding_conditions() -> None:
    run = Run(pod_with_claim_name(), claims=[_bound("True", "False")])
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (Code.SUCCESS, "")
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()


def test_bound_claim_with_failed_binding() -> None:
    run = Run(pod_with_claim_name(), claims=[_bound("False", "True")],
              objs=[resource_slice(NODE_NAME, "instance-1")])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "resourceclaim not available on the node")}
    status = run.post_filter()
    assert status.message == "deallocation of ResourceClaim completed"
    (_, written), = run.ports.written
    assert "devices" not in written["status"] and "allocation" not in written["status"]


def test_bound_claim_with_timed_out_binding() -> None:
    claim = _bound("False", "False", timestamp="2025-12-31T23:49:59Z")
    del claim["status"]["devices"][0]["conditions"]
    run = Run(pod_with_claim_name(), claims=[copy.deepcopy(claim)])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "resourceclaim not available on the node")}
    assert run.post_filter().message == "deallocation of ResourceClaim completed"


def _bound2(condition: str, failed: str) -> dict[str, Any]:
    """``boundClaim2`` / ``failedBindingClaim2``: driver 2's instance-2, request req-2."""
    claim = _bound(condition, failed)
    claim["metadata"].update(name="my-pod-my-resource-2", uid="uid-my-pod-my-resource-2")
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result.update(driver="some-driver-2", device="instance-2", request="req-2")
    claim["status"]["devices"][0].update(driver="some-driver-2", device="instance-2")
    return claim


def _pod_with_two_claim_names() -> dict[str, Any]:
    return pod("my-pod", uid="1234", spec={"resourceClaims": [
        {"name": "my-resource", "resourceClaimName": "my-pod-my-resource"},
        {"name": "my-resource-2", "resourceClaimName": "my-pod-my-resource-2"}]})


def test_bound_claim_with_mixed_binding_conditions() -> None:
    claim = _bound("True", "False", timestamp="2025-12-31T23:49:59Z")
    claim["status"]["devices"][0]["conditions"] = [
        {"type": "condition1", "status": "True"}, {"type": "condition2", "status": "False"}]
    run = Run(pod_with_claim_name(), claims=[claim])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "resourceclaim not available on the node")}
    assert run.post_filter().message == "deallocation of ResourceClaim completed"


def test_bound_claim_without_binding_conditions() -> None:
    run = Run(pod_with_claim_template(in_status=True), claims=[ALLOCATED_CLAIM, OTHER_CLAIM])
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (Code.SUCCESS, "")
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()


def test_multi_claims_binding_conditions_all_success() -> None:
    run = Run(_pod_with_two_claim_names(), claims=[_bound("True", "False"),
                                                    _bound2("True", "False")],
              classes=[DEVICE_CLASS])
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (Code.SUCCESS, "")
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert len(run.ports.written) == 2


def test_multi_claims_binding_conditions_one_fail() -> None:
    run = Run(_pod_with_two_claim_names(), claims=[_bound("True", "False"),
                                                    _bound2("False", "True")],
              classes=[DEVICE_CLASS])
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (UU, "resourceclaim not available on the node")}
    assert run.post_filter().message == "deallocation of ResourceClaim completed"
    (path, _), = run.ports.written
    assert path.endswith("/my-pod-my-resource-2/status")


def test_prebind_fail_with_binding_timeout() -> None:
    """Allocated 590 s before a 600 s binding timeout, never ready: PreBind polls every
    5 s until the claim times out."""
    claim = _bound("False", "False", timestamp="2025-12-31T23:50:10Z")
    del claim["status"]["devices"][0]["conditions"]
    run = Run(pod_with_claim_name(), claims=[claim], args={"bindingTimeout": "600s"})
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME] == (Code.SUCCESS, "")
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert (status.code, status.message) == (
        Code.ERROR, "device binding timeout: claim=my-pod-my-resource")


def _ready_then(change: str) -> Run:
    """A claim allocated with its binding condition not yet met, through Reserve; then
    ``change`` before PreBind waits: ``met`` or ``failed`` (its failure condition True)."""
    claim = _bound("False", "False", timestamp="2025-12-31T23:50:10Z")
    run = Run(pod_with_claim_name(), claims=[claim], args={"bindingTimeout": "600s"})
    assert run.pre_filter().is_success()
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    key = "default/my-pod-my-resource"
    if change in ("met", "failed"):
        now = _bound("True", "False") if change == "met" else _bound("False", "True")
        now["metadata"]["resourceVersion"] = "2"
        run.s.dra.upsert("resourceclaims", key, ResourceClaim.parse(now))
    return run


# upstream's BindingConditionsStatus labels of the wait's metrics, per way the wait ends.
WAIT_ENDS = [("met", "success"), ("failed", "failure"), ("never", "timeout")]


@pytest.mark.parametrize(("change", "status"), WAIT_ENDS)
def test_binding_conditions_metrics(change: str, status: str) -> None:
    """PreBind's wait recorded as upstream's (dynamicresources.go, PreBind):
    ``scheduler_dra_bindingconditions_wait_duration_seconds`` once per allocated device
    with the wait's duration, ``scheduler_dra_bindingconditions_allocations_total`` per
    device with binding conditions, by profile, driver and status."""
    run = _ready_then(change)
    run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    metrics = run.s.metrics
    labels = ("secondary-scheduler", DRIVER, status)
    assert metrics.dra_binding_conditions_allocations.labels(*labels).value == 1
    counts, total = metrics.dra_binding_conditions_wait.labels(*labels).read()
    assert sum(counts) == 1
    # Never met: polled every 5 s until more than the claim's 600 s since its allocation
    # (10 s before the clock's start) were over, at 15 s.
    assert total == (15.0 if change == "never" else 0.0)
    others = [s for _, s in WAIT_ENDS if s != status]
    assert all(metrics.dra_binding_conditions_allocations.labels(
        "secondary-scheduler", DRIVER, s).value == 0 for s in others)


def test_a_wait_ended_by_another_error_has_status_error() -> None:
    """A claim gone while PreBind waits is neither ErrDeviceBindingTimeout nor
    ErrDeviceBindingFailed."""
    assert wait_status('could not find ResourceClaim "default/c"') == "error"
    assert wait_status(None) == "success"


def test_no_binding_conditions_metrics_without_binding_conditions() -> None:
    run = Run(pod_with_claim_template(in_status=True), claims=[ALLOCATED_CLAIM, OTHER_CLAIM])
    assert run.pre_filter().is_success()
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    assert b"scheduler_dra_bindingconditions_wait_duration_seconds_count" not in \
        run.s.metrics.exposition()
