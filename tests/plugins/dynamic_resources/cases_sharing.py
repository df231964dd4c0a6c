"""Upstream allocator cases for binding conditions, distinctAttribute constraints and
consumable capacity (shareable devices), names kept.

Left out: ``binding-conditions-without-feature-gate`` and ``consumable-capacity-disabled-*``
(gates on in v1.37); ``with-distinct-constraints-unknown-type-attribute`` (an attribute with
no value is rejected when the slice is parsed)."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    EARTH,
    INT_ATTRIBUTE,
    NODE1,
    PLANET_KEY,
    POOL1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    STRING_ATTRIBUTE,
    SUB_REQ0,
    SUB_REQ1,
    VERSION_ATTRIBUTE,
    Case,
    Expect,
    all_request,
    claim,
    claim_with_request,
    device,
    device_class,
    distinct_attribute,
    local_node_selector,
    node_label_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_devices,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
LOCAL1 = local_node_selector(NODE1)
FIXED = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
CAP0, CAP1 = "capacity-0", "capacity-1"
N = 10**9  # one unit in nanos
DEVICE4 = "device-4"


def multi_class(multi: bool = True) -> list[dict[str, Any]]:
    """``classWithAllowMultipleAllocations``."""
    c = device_class(CLASS_A, DRIVER_A)
    c["spec"]["selectors"][0]["cel"]["expression"] = (
        f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == '
        f'{"true" if multi else "false"}')
    return [c]


def shareable(name: str, attributes: dict[str, Any] | None = None, **capacity: Any
              ) -> dict[str, Any]:
    d = device(name, None, attributes, allowMultipleAllocations=True)
    if capacity:
        d["capacity"] = capacity
    return d


def plain(value: str) -> dict[str, Any]:
    return {"value": value}


def ranged(value: str) -> dict[str, Any]:
    """``withCapacityRequestPolicyRange``: default 2, min 2, step 2, max 4."""
    return {"value": value, "requestPolicy": {"default": "2", "validRange": {
        "min": "2", "step": "2", "max": "4"}}}


def valid_values(value: str, default: str, *more: str) -> dict[str, Any]:
    return {"value": value, "requestPolicy": {"default": default,
                                              "validValues": [default, *more]}}


def cap_request(name: str, cls: str, amount: str, count: int = 1) -> dict[str, Any]:
    return request(name, cls, count, capacity={"requests": {CAP0: amount}})


def share(req: str, dev: str, consumed: int | None = None) -> Any:
    return dar(req, DRIVER_A, POOL1, dev, share_id=FIXED,
               consumed_capacity=None if consumed is None else {CAP0: consumed})


def bound(req: str, dev: str, conditions: list[str], failures: list[str]) -> Any:
    return dar(req, DRIVER_A, POOL1, dev, binding_conditions=tuple(conditions),
               binding_failure_conditions=tuple(failures))


def with_binding(name: str, conditions: list[str], failures: list[str]) -> dict[str, Any]:
    return device(name, bindingConditions=conditions, bindingFailureConditions=failures)


def strings(*values: str) -> list[dict[str, Any]]:
    return [{"stringAttribute": {"string": v}} for v in values]


def ints(*values: int) -> list[dict[str, Any]]:
    return [{"numa": {"int": v}} for v in values]


def attr_devices(*attributes: dict[str, Any]) -> dict[str, Any]:
    return slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *(
        device(f"device-{i + 1}", None, a) for i, a in enumerate(attributes)))


BOOL_SUBS = (sub_request(SUB_REQ0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"].boolAttribute'),
             sub_request(SUB_REQ1, CLASS_A, 1))

CASES: dict[str, Case] = {
    "device-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   with_binding(DEVICE1, ["IsPrepare"], ["BindingFailed"]))],
        expect=[Expect(LOCAL1, [bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"])])],
    ),
    "binding-conditions-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1))], classes=A,
        slices=[slice_with_devices(
            SLICE1, NODE1, POOL1, DRIVER_A,
            with_binding(DEVICE1, ["IsPrepare"], ["BindingFailed"]),
            with_binding(DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
            with_binding(DEVICE3, ["IsPrepare3"], ["BindingFailed3"]))],
        expect=[Expect(LOCAL1, [bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                                bound(REQ0, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
                                bound(REQ1, DEVICE3, ["IsPrepare3"], ["BindingFailed3"])])],
    ),
    "binding-conditions-with-and-without": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   with_binding(DEVICE2, ["IsPrepare"], ["BindingFailed"]))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                bound(REQ1, DEVICE2, ["IsPrepare"], ["BindingFailed"])])],
    ),
    "node-restriction": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_devices(SLICE1, node_label_selector(PLANET_KEY, EARTH), POOL1,
                                   DRIVER_A, device(DEVICE1, bindsToNode=True))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "with-distinct-constraints": Case(
        claims=[claim(CLAIM0, *(request(f"req-{i}", CLASS_A, 1) for i in range(4)), constraints=[
            distinct_attribute(BOOL_ATTRIBUTE, REQ0, REQ1),
            distinct_attribute(VERSION_ATTRIBUTE, REQ0, REQ1, REQ2),
            distinct_attribute(INT_ATTRIBUTE, REQ0, REQ1, REQ2, "req-3")])],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *(
            shareable(name, {"driverVersion": {"version": version}, "numa": {"int": numa},
                             "boolAttribute": {"bool": flag}})
            for name, version, numa, flag in [(DEVICE1, "1.0.0", 0, True),
                                              (DEVICE2, "1.0.1", 1, False),
                                              (DEVICE3, "1.0.2", 2, True),
                                              (DEVICE4, "1.0.0", 3, True)]))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1), share(REQ1, DEVICE2), share(REQ2, DEVICE3),
                                share("req-3", DEVICE4)])],
    ),
    "distinct-constraint-single-request-count-3-not-distinct": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3),
                      constraints=[distinct_attribute(STRING_ATTRIBUTE)])],
        classes=A, slices=[attr_devices(*strings("value1", "value2", "value1"))],
    ),
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3),
                      constraints=[distinct_attribute(STRING_ATTRIBUTE)])],
        classes=A, slices=[attr_devices(*strings("value1", "value2", "value3"))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, d) for d in (DEVICE1, DEVICE2,
                                                                        DEVICE3)])],
    ),
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1),
                      constraints=[distinct_attribute(STRING_ATTRIBUTE, REQ0, REQ1)])],
        classes=A, slices=[attr_devices(*strings("value1", "value2", "value1"))],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      constraints=[distinct_attribute(BOOL_ATTRIBUTE, REQ0)])],
        classes=A, slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, shareable(DEVICE1))],
    ),
    "with-distinct-constraints-with-subrequests": Case(
        claims=[claim(CLAIM0, *(request_with_prioritized_list(r, *BOOL_SUBS)
                                for r in (REQ0, REQ1, REQ2)),
                      constraints=[distinct_attribute(BOOL_ATTRIBUTE, REQ0, REQ1)])],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, {"boolAttribute": {"bool": True}}),
                                   shareable(DEVICE2, {"boolAttribute": {"bool": False}}))],
        expect=[Expect(LOCAL1, [share(f"{REQ0}/{SUB_REQ0}", DEVICE1),
                                share(f"{REQ1}/{SUB_REQ1}", DEVICE2),
                                share(f"{REQ2}/{SUB_REQ0}", DEVICE1)])],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-not-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3),
                      constraints=[distinct_attribute(INT_ATTRIBUTE)])],
        classes=A, slices=[attr_devices({}, {}, {})],
    ),
    "distinct-constraint-single-request-not-enough-distinct-values": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3),
                      constraints=[distinct_attribute(INT_ATTRIBUTE)])],
        classes=A, slices=[attr_devices(*ints(1, 2, 2, 2))],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3),
                      constraints=[distinct_attribute(INT_ATTRIBUTE)])],
        classes=A, slices=[attr_devices(*ints(1, 2, 1, 3))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, d) for d in (DEVICE1, DEVICE2,
                                                                        DEVICE4)])],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"), cap_request(REQ1, CLASS_A, "1"),
                      constraints=[distinct_attribute(STRING_ATTRIBUTE)])],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, shareable(
            DEVICE1, {"stringAttribute": {"string": "stringAttributeValue"}},
            **{CAP0: ranged("2")}))],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"), cap_request(REQ1, CLASS_A, "2"),
                      constraints=[distinct_attribute(STRING_ATTRIBUTE)])],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, shareable(
                    DEVICE1, {"stringAttribute": {"string": "stringAttributeValue1"}},
                    **{CAP0: ranged("4")})),
                slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, shareable(
                    DEVICE2, {"stringAttribute": {"string": "stringAttributeValue2"}},
                    **{CAP0: ranged("4")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N), share(REQ1, DEVICE2, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP1: plain("1")}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-"
    "request": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity={"requests": {CAP0: "1"}}))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP1: plain("1")}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, shareable(DEVICE1))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1)]), Expect(LOCAL1, [share(REQ0, DEVICE1)])],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: plain("1")}),
                                   shareable(DEVICE2, **{CAP0: plain("1")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, N)]),
                Expect(LOCAL1, [share(REQ0, DEVICE2, N)])],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: plain("2")}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1")),
                claim(CLAIM1, cap_request(REQ0, CLASS_A, "1"))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: plain("2")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, N)]),
                Expect(LOCAL1, [share(REQ0, DEVICE1, N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: ranged("4")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)]),
                Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: valid_values("1", "0")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 0)]),
                Expect(LOCAL1, [share(REQ0, DEVICE1, 0)])],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: valid_values("1", "0")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1")),
                claim(CLAIM1, cap_request(REQ0, CLASS_A, "1"))],
        classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: ranged("4")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)]),
                Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "3"))], classes=multi_class(),
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   shareable(DEVICE1, **{CAP0: ranged("4")}))],
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 4 * N)])],
    ),
}
