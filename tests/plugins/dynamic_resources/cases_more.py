"""Upstream allocator cases, continued (see cases_core): constraints, configs, bad input,
claim size limits.

Left out: ``unknown-allocation-mode`` (the model rejects an unknown ``allocationMode`` when it
parses the claim, an ``InvalidSpecError``, before the allocator sees it)."""

from __future__ import annotations

from typing import Any

from scheduler.model.dra import AllocationConfiguration
from tests.plugins.dynamic_resources.builders import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    INT_ATTRIBUTE,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    VERSION_ATTRIBUTE,
    Case,
    Expect,
    claim,
    claim_with_request,
    counter_consumption,
    counter_set,
    device,
    device_class,
    device_configuration,
    local_node_selector,
    match_attribute,
    multiple_device_allocation_results,
    request,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_one_device,
)
from tests.plugins.dynamic_resources.builders import (
    device_allocation_result as dar,
)

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)
MAX = 32
HUGE = 2**62  # math.MaxInt/2+1 on 64-bit


def _two(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                              device(DEVICE1, None, a), device(DEVICE2, None, b))


def _mode_all(c: dict[str, Any]) -> dict[str, Any]:
    c["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="All", count=0)
    return c


def _selectors(c: dict[str, Any], *selectors: dict[str, Any]) -> dict[str, Any]:
    c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = list(selectors)
    return c


def _config(source: str, requests: tuple[str, ...] | None, driver: str, attribute: str
            ) -> AllocationConfiguration:
    return AllocationConfiguration(source, requests, device_configuration(driver, attribute)[
        "opaque"])


def _class_cel(expression: str) -> dict[str, Any]:
    c = device_class(CLASS_A, DRIVER_A)
    c["spec"]["selectors"][0]["cel"]["expression"] = expression
    return c


NUMA_1_2 = _two({"numa": {"int": 1}}, {"numa": {"int": 2}})

CASES: dict[str, Case] = {
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[_mode_all(claim(CLAIM0, request(REQ0, CLASS_A, 1),
                                constraints=[match_attribute(INT_ATTRIBUTE)]))],
        classes=AB, slices=[NUMA_1_2],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because "
              "a claim constraint would not be satisfied",
    ),
    "partitionable-all-mode-constraint-must-error-with-reserved-counter": Case(
        claims=[_mode_all(claim(CLAIM0, request(REQ0, CLASS_A, 1),
                                constraints=[match_attribute(INT_ATTRIBUTE)]))],
        classes=A,
        slices=[
            slice_with_devices(
                SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                device(DEVICE1, None, {"numa": {"int": 1}}),
                device(DEVICE2, None, {"numa": {"int": 2}},
                       consumesCounters=[counter_consumption(COUNTER_SET1, {"c": "1"})])),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                    counter_set(COUNTER_SET1, {"c": "1"})),
        ],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because "
              "a claim constraint would not be satisfied",
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(STRING_ATTRIBUTE)])],
        classes=AB,
        slices=[_two({"stringAttribute": {"string": "stringAttributeValue"}},
                     {"stringAttribute": {"string": "stringAttributeValue2"}})],
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(BOOL_ATTRIBUTE)])],
        classes=AB,
        slices=[_two({"boolAttribute": {"bool": True}}, {"boolAttribute": {"bool": False}})],
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(VERSION_ATTRIBUTE)])],
        classes=AB,
        slices=[_two({"driverVersion": {"version": "1.0.0"}},
                     {"driverVersion": {"version": "2.0.0"}})],
    ),
    "with-constraint-for-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match_attribute(VERSION_ATTRIBUTE, REQ0)])],
        classes=AB,
        slices=[_two({"driverVersion": {"version": "1.0.0"}},
                     {"driverVersion": {"version": "2.0.0"}})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "with-constraint-for-request-retry": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match_attribute(VERSION_ATTRIBUTE, REQ0),
                                   match_attribute(STRING_ATTRIBUTE)])],
        classes=AB,
        slices=[slice_with_devices(
            SLICE1, NODE1, POOL1, DRIVER_A,
            device(DEVICE1, None, {"driverVersion": {"version": "1.0.0"},
                                   "stringAttribute": {"string": "a"}}),
            device(DEVICE2, None, {"driverVersion": {"version": "2.0.0"},
                                   "stringAttribute": {"string": "b"}}),
            device(DEVICE3, None, {"driverVersion": {"version": "3.0.0"},
                                   "stringAttribute": {"string": "b"}}),
        )],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE3)])],
    ),
    "with-class-device-config": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)],
                       [_config("FromClass", None, DRIVER_A, "classAttribute")])],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      request(REQ2, CLASS_B, 1))],
        classes=[device_class(CLASS_A, DRIVER_A, "classAttribute-A"),
                 device_class(CLASS_B, DRIVER_B, "classAttribute-B")],
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
                slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE0),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ2, DRIVER_B, POOL1, DEVICE1)],
                       [_config("FromClass", (REQ0, REQ1), DRIVER_A, "classAttribute-A"),
                        _config("FromClass", (REQ2,), DRIVER_B, "classAttribute-B")])],
    ),
    "with-claim-config-for-two-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      request(REQ2, CLASS_A, 1),
                      config=[{"requests": [REQ0, REQ1],
                               **device_configuration(DRIVER_A, "deviceAttribute")}])],
        classes=A, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE0),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ2, DRIVER_A, POOL1, DEVICE2)],
                       [_config("FromClaim", (REQ0, REQ1), DRIVER_A, "deviceAttribute")])],
    ),
    "claim-with-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      config=[device_configuration(DRIVER_A, "deviceAttribute")])],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)],
                       [_config("FromClaim", None, DRIVER_A, "deviceAttribute")])],
    ),
    "unknown-selector": Case(
        claims=[_selectors(claim_with_request(CLAIM0, REQ0, CLASS_A), {})], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-constraint": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A, {})], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=[_selectors(claim_with_request(CLAIM0, REQ0, CLASS_A),
                           {"cel": {"expression": "noSuchVar"}})],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=[_class_cel("noSuchVar")],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=[_mode_all(_selectors(claim_with_request(CLAIM0, REQ0, CLASS_A),
                                     {"cel": {"expression": "noSuchVar"}}))],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=A,
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX))], classes=A),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX), request(REQ1, CLASS_A, 1))],
        classes=A, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX + 1)],
        error="exceeds the claim limit",
    ),
    "exact-count-total-overflows-claim-limit": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, HUGE), request(REQ1, CLASS_A, HUGE))],
        classes=A, error="exceeds the claim limit",
    ),
    "exact-count-total-would-wrap-to-zero": Case(
        claims=[claim(CLAIM0, *(request(f"req-{i}", CLASS_A, HUGE) for i in range(4)))],
        classes=A, error="exceeds the claim limit",
    ),
    "exact-count-sum-exceeds-claim-limit": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 20), request(REQ1, CLASS_A, 20))],
        classes=A, error="request req-1: adding 20 devices exceeds the claim limit",
    ),
    "exact-count-sum-exactly-fills-claim-limit": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX // 2), request(REQ1, CLASS_A, MAX // 2))],
        classes=A, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX)],
        expect=[Expect(LOCAL1, [
            *multiple_device_allocation_results(REQ0, DRIVER_A, POOL1, MAX // 2, 0),
            *multiple_device_allocation_results(REQ1, DRIVER_A, POOL1, MAX // 2, MAX // 2)])],
    ),
    "all-devices-invalid-CEL": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=A,
        error="exceeds the claim limit",
    ),
}
