"""Upstream allocator cases for partitionable devices (shared counters), names kept."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SLICE3,
    STRING_ATTRIBUTE,
    TAINT_NO_SCHEDULE,
    Case,
    Expect,
    claim,
    counter_consumption,
    counter_set,
    device,
    device_class,
    local_node_selector,
    match_attribute,
    request,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)
SLICE4 = "slice-4"


def consuming(name: str, counter_set_name: str, counters: dict[str, str], **fields: Any
              ) -> dict[str, Any]:
    return device(name, consumesCounters=[counter_consumption(counter_set_name, counters)],
                  **fields)


def pool2(name: str, driver: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return slice_with_devices(name, NODE1, resource_pool(POOL1, 2), driver, *devices)


def counters(name: str, driver: str, set_name: str, values: dict[str, str]) -> dict[str, Any]:
    return slice_with_counter_sets(name, NODE1, resource_pool(POOL1, 2), driver,
                                   counter_set(set_name, values))


CASES: dict[str, Case] = {
    "partitionable-devices-single-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A, consuming(DEVICE1, COUNTER_SET1, {"memory": "4Gi"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"memory": "8Gi"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "partitionable-devices-counter-quantities-are-not-modified": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[pool2(SLICE1, DRIVER_A,
                      consuming(DEVICE1, COUNTER_SET1, {"c": "9000000000000000000"}),
                      consuming(DEVICE2, COUNTER_SET1, {"c": "1"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "10000000000000000000"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "partitionable-devices-counter-cache-scoped-by-pool-ID": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        classes=AB,
        slices=[pool2(SLICE1, DRIVER_A, consuming(DEVICE1, COUNTER_SET1, {"c": "1"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "1"}),
                pool2(SLICE3, DRIVER_B, consuming(DEVICE2, COUNTER_SET1, {"c": "2"})),
                counters(SLICE4, DRIVER_B, COUNTER_SET1, {"c": "2"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ1, DRIVER_B, POOL1, DEVICE2)])],
    ),
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        classes=AB,
        slices=[pool2(SLICE1, DRIVER_A, consuming(DEVICE1, COUNTER_SET1, {"c": "1"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "1"}),
                pool2(SLICE3, DRIVER_B, consuming(DEVICE2, COUNTER_SET2, {"d": "2"})),
                counters(SLICE4, DRIVER_B, COUNTER_SET2, {"d": "1"})],
    ),
    "partitionable-devices-taint-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A,
                      consuming(DEVICE1, COUNTER_SET1, {"c": "1"}, taints=[TAINT_NO_SCHEDULE]),
                      consuming(DEVICE2, COUNTER_SET1, {"c": "1"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "1"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "partitionable-devices-constraint-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(STRING_ATTRIBUTE)])],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A, *(
                    consuming(name, COUNTER_SET1, {"c": "1"},
                              attributes={"stringAttribute": {"string": color}})
                    for name, color in [(DEVICE1, "red"), (DEVICE2, "blue"), (DEVICE3, "blue")])),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "2"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE3)])],
    ),
}
