"""Parsing of the ``resource.k8s.io/v1`` objects (``k8s.io/api/resource/v1/types.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.dra import (
    ALL,
    EXACT_COUNT,
    DeviceAttribute,
    DeviceClass,
    DeviceTaint,
    DeviceTaintRule,
    DeviceToleration,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from scheduler.model.errors import InvalidSpecError

GI = 2**30 * 10**9


def slice_obj(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
        "nodeName": "node-1",
    }
    base.update(spec)
    return {"metadata": {"name": "node-1-gpus"}, "spec": base}


def test_resource_slice_parses_devices_with_typed_attributes_capacity_and_counters() -> None:
    s = ResourceSlice.parse(slice_obj(
        devices=[{
            "name": "gpu-0",
            "attributes": {"model": {"string": "a100"}, "numa": {"int": 1},
                           "driverVersion": {"version": "1.2.3"}, "mig": {"bool": False}},
            "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
                "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"mem": {"value": "4Gi"}}}],
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            "bindingConditions": ["ready"],
            "allowMultipleAllocations": True,
        }],
        sharedCounters=[{"name": "gpu-0", "counters": {"mem": {"value": "40Gi"}}}],
    ))
    assert (s.name, s.driver, s.pool, s.generation, s.resource_slice_count, s.node_name) == (
        "node-1-gpus", "gpu.example.com", "node-1", 3, 2, "node-1")
    device = s.devices[0]
    assert device.attributes == {
        "model": DeviceAttribute("string", "a100"), "numa": DeviceAttribute("int", 1),
        "driverVersion": DeviceAttribute("version", "1.2.3"),
        "mig": DeviceAttribute("bool", False),
    }
    assert device.capacity["memory"].value == 40 * GI
    policy = device.capacity["memory"].request_policy
    assert policy is not None and (policy.default, policy.valid_range_min,
                                   policy.valid_range_step) == (GI, GI, GI)
    assert device.consumes_counters[0].counters == {"mem": 4 * GI}
    assert device.taints == (DeviceTaint("k", "v", "NoSchedule"),)
    assert device.binding_conditions == ("ready",)
    assert device.allow_multiple_allocations is True
    assert s.shared_counters[0].counters == {"mem": 40 * GI}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"driver": None}, "spec.driver"),
        ({"devices": [{"name": "a", "attributes": {"x": {"int": 1, "bool": True}}}]},
         "spec.devices[0].attributes.x"),
        ({"devices": [{"name": "a", "attributes": {"x": {"int": "1"}}}]},
         "spec.devices[0].attributes.x.int"),
        ({"devices": [{"name": "a", "capacity": {"m": {"value": "1Gib"}}}]},
         "spec.devices[0].capacity.m.value"),
        ({"devices": "gpu"}, "spec.devices"),
        ({"devices": [{}]}, "spec.devices[0].name"),
    ],
)
def test_a_malformed_slice_is_an_invalid_spec_error_naming_the_field(
    spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidSpecError) as err:
        ResourceSlice.parse(slice_obj(**spec))
    assert err.value.field == field


def claim_obj(requests: list[Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "c", "uid": "u1",
                     "ownerReferences": [{"uid": "pod-uid", "controller": True}]},
        "spec": {"devices": {"requests": requests,
                             "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}},
        "status": status,
    }


def test_resource_claim_parses_exactly_and_first_available_with_api_defaults() -> None:
    claim = ResourceClaim.parse(claim_obj(
        [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                        "selectors": [{"cel": {"expression": "true"}}],
                                        "tolerations": [{"key": "k", "operator": "Exists"}]}},
            {"name": "any", "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu", "count": 2},
                {"name": "all", "deviceClassName": "gpu", "allocationMode": "All"},
            ]},
        ],
        allocation={"devices": {"results": [
            {"request": "gpu", "driver": "d", "pool": "p", "device": "x"}]},
            "allocationTimestamp": "2026-01-01T00:00:00Z"},
        reservedFor=[{"resource": "pods", "name": "p", "uid": "pod-uid"}],
    ))
    gpu, anything = claim.spec.requests
    assert gpu.exactly is not None
    assert (gpu.exactly.allocation_mode, gpu.exactly.count, gpu.exactly.selectors) == (
        EXACT_COUNT, 1, ("true",))
    assert gpu.exactly.tolerations == (DeviceToleration(key="k", operator="Exists"),)
    assert [(s.name, s.allocation_mode, s.count) for s in anything.first_available] == [
        ("big", EXACT_COUNT, 2), ("all", ALL, 0)]
    assert claim.spec.constraints[0].match_attribute == "gpu.example.com/numa"
    assert claim.allocation is not None and claim.allocation.results[0].device == "x"
    assert claim.reserved_for[0].uid == "pod-uid"
    assert claim.owner_uids == ("pod-uid",)
    assert claim.key == "ns/c"


@pytest.mark.parametrize(
    ("request_obj", "field"),
    [
        ({"name": "r"}, "spec.devices.requests[0]"),
        ({"name": "r", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{}]},
         "spec.devices.requests[0]"),
        ({"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}},
         "spec.devices.requests[0].exactly.allocationMode"),
        ({"name": "r", "exactly": {"deviceClassName": "c", "count": 0}},
         "spec.devices.requests[0].exactly.count"),
        ({"name": "r", "firstAvailable": [{"deviceClassName": "c"}]},
         "spec.devices.requests[0].firstAvailable[0].name"),
    ],
)
def test_a_malformed_claim_is_an_invalid_spec_error(request_obj: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as err:
        ResourceClaim.parse(claim_obj([request_obj]))
    assert err.value.field == field


def test_template_class_and_taint_rule() -> None:
    template = ResourceClaimTemplate.parse({
        "metadata": {"namespace": "ns", "name": "t"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "r", "exactly": {"deviceClassName": "c"}}]}}},
    })
    assert template.spec.requests[0].name == "r"
    device_class = DeviceClass.parse({
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d"'}}],
                 "extendedResourceName": "example.com/gpu"},
    })
    assert device_class.selectors == ('device.driver == "d"',)
    assert device_class.extended_resource_name == "example.com/gpu"
    rule = DeviceTaintRule.parse({
        "metadata": {"name": "r"},
        "spec": {"deviceSelector": {"driver": "d", "pool": "p"},
                 "taint": {"key": "k", "effect": "NoExecute"}},
    })
    assert rule.selects("d", "p", "any") and not rule.selects("d", "q", "any")
    no_selector = DeviceTaintRule.parse({"metadata": {"name": "r"},
                                         "spec": {"taint": {"key": "k", "effect": "None"}}})
    assert not no_selector.selects("d", "p", "x")
