"""Upstream allocator cases for consumable capacity, continued (see cases_sharing), names
kept."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    Expect,
    all_request,
    claim,
    counter_consumption,
    counter_set,
    device,
    device_class,
    local_node_selector,
    match_attribute,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar
from tests.plugins.dynamic_resources.cases_sharing import (
    CAP0,
    FIXED,
    N,
    cap_request,
    multi_class,
    plain,
    ranged,
    share,
    shareable,
    valid_values,
)

A = [device_class(CLASS_A, DRIVER_A)]
LOCAL1 = local_node_selector(NODE1)
HUGE = "18446744073709551616"
NOT_REPRESENTABLE = "cannot be represented"


def one_slice(*devices: dict[str, Any]) -> list[dict[str, Any]]:
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


def all_cap(name: str, amount: str) -> dict[str, Any]:
    return all_request(name, CLASS_A, capacity={"requests": {CAP0: amount}})


def sub_cap(name: str, amount: str | None) -> dict[str, Any]:
    if amount is None:
        return sub_request(name, CLASS_A, 1)
    return sub_request(name, CLASS_A, 1, capacity={"requests": {CAP0: amount}})


CASES: dict[str, Case] = {
    "consumable-capacity-range-policy-request-above-int64-rejected": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, HUGE))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("4")})), error=NOT_REPRESENTABLE,
    ),
    "consumable-capacity-range-policy-rounded-value-overflow-rejected": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "9223372036854775807"))],
        classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("4")})), error=NOT_REPRESENTABLE,
    ),
    "consumable-capacity-range-policy-overflow-aborts-not-skip": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, HUGE))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("4")}),
                         shareable(DEVICE2, **{CAP0: plain("36893488147419103232")})),
        error=NOT_REPRESENTABLE,
    ),
    "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts": Case(
        claims=[claim(CLAIM0, all_cap(REQ0, HUGE))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("4")})), error=NOT_REPRESENTABLE,
    ),
    "consumable-capacity-negative-request-aborts": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "-5"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("10")})), error="negative",
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: valid_values("4", "1", "2")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: valid_values("3", "1", "3")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 3 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1")),
                claim(CLAIM1, cap_request(REQ0, CLASS_A, "2"))],
        classes=multi_class(), slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("2")})),
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "6"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("10")})),
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"))], classes=multi_class(),
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: 2 * N}},
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("4")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"))], classes=multi_class(),
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: 2 * N}},
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("2")}),
                         shareable(DEVICE2, **{CAP0: ranged("2")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE2, 2 * N)])],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"), cap_request(REQ1, CLASS_A, "2"),
                      constraints=[match_attribute(STRING_ATTRIBUTE)]),
                claim(CLAIM1, cap_request(REQ0, CLASS_A, "2"))],
        classes=A,
        slices=one_slice(
            shareable(DEVICE2, {"stringAttribute": {"string": "stringAttributeValue1"}},
                      **{CAP0: ranged("2")}),
            shareable(DEVICE1, {"stringAttribute": {"string": "stringAttributeValue2"}},
                      **{CAP0: ranged("4")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N), share(REQ1, DEVICE1, 2 * N)]),
                Expect(LOCAL1, [share(REQ0, DEVICE2, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_cap(SUB_REQ0, "4"), sub_cap(SUB_REQ1, "2"), sub_cap(SUB_REQ1, None)))],
        classes=multi_class(), slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("2")})),
        expect=[Expect(LOCAL1, [share(f"{REQ0}/{SUB_REQ1}", DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"))], classes=multi_class(),
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: 2 * N}},
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("2")})),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity":
    Case(
        claims=[claim(CLAIM0, all_cap(REQ0, "2"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("2")}), shareable(DEVICE2)),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-"
    "capacity": Case(
        claims=[claim(CLAIM0, all_cap(REQ0, "2"))], classes=multi_class(),
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("2")}),
                         shareable(DEVICE2, **{CAP0: plain("1")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N)])],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient":
    Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"), all_cap(REQ1, "1"))], classes=A,
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("2")}),
                         shareable(DEVICE2, **{CAP0: plain("1")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, N), share(REQ1, DEVICE1, N),
                                share(REQ1, DEVICE2, N)])],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        claims=[claim(CLAIM0, all_cap(REQ0, "1"))], classes=A,
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: N}},
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("2")}),
                         shareable(DEVICE2, **{CAP0: plain("1")})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, N), share(REQ0, DEVICE2, N)])],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient":
    Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"), all_cap(REQ1, "1"))], classes=A,
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("1")}),
                         shareable(DEVICE2, **{CAP0: plain("1")})),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        claims=[claim(CLAIM0, all_cap(REQ0, "1"))], classes=A,
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: N}},
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("1")}),
                         shareable(DEVICE2, **{CAP0: plain("1")})),
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=multi_class(False),
        slices=one_slice(device(DEVICE1, {CAP0: "1"})),
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1")),
                claim(CLAIM1, cap_request(REQ0, CLASS_A, "1"))],
        classes=multi_class(False),
        slices=one_slice(dict(device(DEVICE1), capacity={CAP0: ranged("2")})),
    ),
    "consumable-capacity-requests-are-not-modified": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "2"),
                      cap_request(REQ1, CLASS_A, "1000000000000000000000"))],
        classes=A,
        slices=one_slice(shareable(DEVICE1, **{CAP0: {
            "value": "1000000000000000000002",
            "requestPolicy": {"default": "1000000000000000000000", "validRange": {"min": "2"}},
        }})),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, 2 * N),
                                share(REQ1, DEVICE1, 10**21 * N)])],
    ),
}


def from_counters(name: str, *consumptions: tuple[str, dict[str, str]],
                  attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    """``device(name, fromCounters, attrs).withDeviceCounterConsumption(...)
    .withAllowMultipleAllocations()``: capacities copied from the counters consumed."""
    d = shareable(name, attributes)
    d["consumesCounters"] = [counter_consumption(s, c) for s, c in consumptions]
    d["capacity"] = {k: plain(v) for _, c in consumptions for k, v in c.items()}
    return d


def counter_pool(*devices: dict[str, Any], sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, *devices),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, *sets)]


def memory_at_least(size: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0'


def cap0_at_least(size: str) -> str:
    return f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("{size}")) >= 0'


CAP1 = "capacity-1"
GI = 2**30 * N
MULTI_POOL_DEVICE = {CAP1: ranged("4")}

CASES.update({
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=multi_class(False),
        slices=one_slice(shareable(DEVICE1, **{CAP0: plain("1")})),
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated":
    Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=multi_class(),
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=one_slice(shareable(DEVICE1, **{CAP0: ranged("2")})),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-"
    "allocatable": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"))], classes=multi_class(),
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: N}},
        slices=one_slice(dict(device(DEVICE1), capacity={CAP0: ranged("2")})),
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request_with_prioritized_list(
            REQ1, sub_request(SUB_REQ0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB_REQ1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=multi_class(),
        slices=counter_pool(from_counters(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})),
                            from_counters(DEVICE2, (COUNTER_SET1, {"memory": "6Gi"})),
                            from_counters(DEVICE3, (COUNTER_SET1, {"memory": "4Gi"})),
                            sets=[counter_set(COUNTER_SET1, {"memory": "8Gi"})]),
        expect=[Expect(LOCAL1, [
            dar(REQ0, DRIVER_A, POOL1, DEVICE1, share_id=FIXED, consumed_capacity={
                "memory": 4 * GI}),
            dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE3, share_id=FIXED,
                consumed_capacity={"memory": 4 * GI})])],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"].mode'
                                                        ' == "b"',
                                      capacity={"requests": {CAP0: "1"}}))],
        classes=multi_class(),
        shared=[(DRIVER_A, POOL1, DEVICE1)],
        aggregated={(DRIVER_A, POOL1, DEVICE1): {CAP0: N}},
        slices=counter_pool(
            from_counters(DEVICE1, (COUNTER_SET1, {CAP0: "1"}),
                          attributes={"mode": {"string": "a"}}),
            from_counters(DEVICE2, (COUNTER_SET1, {CAP0: "1"}),
                          attributes={"mode": {"string": "b"}}),
            sets=[counter_set(COUNTER_SET1, {CAP0: "1"})]),
    ),
    "partitionable-consumable-capacity-shared-device-counter-not-recharged": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        shared=[(DRIVER_A, POOL1, DEVICE1)],
        slices=counter_pool(dict(shareable(DEVICE1), consumesCounters=[
            counter_consumption(COUNTER_SET1, {"c": "1"})]),
            sets=[counter_set(COUNTER_SET1, {"c": "1"})]),
        expect=[Expect(LOCAL1, [share(REQ0, DEVICE1)])],
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "1"), cap_request(REQ2, CLASS_A, "2"),
                      request_with_prioritized_list(
                          REQ1,
                          sub_request(SUB_REQ0, CLASS_A, 1, cap0_at_least("4"),
                                      capacity={"requests": {CAP0: "1"}}),
                          sub_request(SUB_REQ1, CLASS_A, 1, cap0_at_least("2"),
                                      capacity={"requests": {CAP0: "1"}})))],
        classes=A,
        slices=counter_pool(*(
            dict(d, capacity={**d["capacity"], **MULTI_POOL_DEVICE}) for d in (
                from_counters(DEVICE1, (COUNTER_SET1, {CAP0: "2"}), (COUNTER_SET2, {CAP1: "4"})),
                from_counters(DEVICE2, (COUNTER_SET1, {CAP0: "4"}), (COUNTER_SET2, {CAP1: "4"})),
                from_counters("device-3", (COUNTER_SET1, {CAP0: "2"}),
                              (COUNTER_SET2, {CAP1: "4"})))),
            sets=[counter_set(COUNTER_SET1, {CAP0: "4"}), counter_set(COUNTER_SET2, {CAP1: "8"})]),
        expect=[Expect(LOCAL1, [
            dar(REQ0, DRIVER_A, POOL1, DEVICE1, share_id=FIXED,
                consumed_capacity={CAP0: N, CAP1: 2 * N}),
            dar(REQ2, DRIVER_A, POOL1, "device-3", share_id=FIXED,
                consumed_capacity={CAP0: 2 * N, CAP1: 2 * N}),
            dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE1, share_id=FIXED,
                consumed_capacity={CAP0: N, CAP1: 2 * N})])],
    ),
})

CASES["consumable-capacity-fractional-range-gate-disabled"] = Case(
    claims=[claim(CLAIM0, cap_request(REQ0, CLASS_A, "200m"))], classes=multi_class(),
    slices=one_slice(shareable(DEVICE1, **{CAP0: {"value": "1", "requestPolicy": {
        "default": "200m", "validRange": {"min": "200m", "step": "100m", "max": "1"}}}})),
    expect=[Expect(LOCAL1, [share(REQ0, DEVICE1, N)])],
)
