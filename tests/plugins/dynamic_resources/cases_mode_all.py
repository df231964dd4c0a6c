"""Upstream allocator cases for ``All`` inside prioritized lists and the claim size limit,
names kept (``expectNumAllocateOneInvocations`` is not checked)."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
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
    NODE2,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    Expect,
    claim,
    counter_consumption,
    counter_set,
    device,
    device_class,
    local_node_selector,
    multiple_device_allocation_results,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_multiple_devices,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)
R0S1, R1S1 = f"{REQ0}/{SUB_REQ1}", f"{REQ1}/{SUB_REQ1}"
MAX = 32


def generation(value: str) -> str:
    return f'device.attributes["{DRIVER_A}"].generation == "{value}"'


def all_sub(name: str, *selectors: str) -> dict[str, Any]:
    return sub_request(name, CLASS_A, 0, *selectors, allocationMode="All")


V6_OR_V5 = claim(CLAIM0, request_with_prioritized_list(
    REQ0, all_sub(SUB_REQ0, generation("v6")), all_sub(SUB_REQ1, generation("v5"))))


def gen_device(name: str, value: str, **attributes: Any) -> dict[str, Any]:
    return device(name, None, {"generation": {"string": value}, **attributes})


def partition(name: str, special: bool, cpu: str) -> dict[str, Any]:
    return device(name, None, {"special": {"bool": special}}, consumesCounters=[
        counter_consumption(COUNTER_SET1, {cpu: "1"}),
        counter_consumption(COUNTER_SET2, {"mem": "10Gi"})])


CASES: dict[str, Case] = {
    "prioritized-list-allocation-mode-all": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, all_sub(SUB_REQ0), sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=A, allocated=[(DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        claims=[V6_OR_V5], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5"))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        claims=[V6_OR_V5], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5")),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, gen_device(DEVICE1, "v5"))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1),
                                dar(R0S1, DRIVER_A, POOL2, DEVICE1)])],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        claims=[V6_OR_V5], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5")),
                slice_with_devices(SLICE2, NODE2, POOL2, DRIVER_A, gen_device(DEVICE1, "v5"),
                                   gen_device(DEVICE2, "v6"))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        claims=[V6_OR_V5],
        classes=[{"metadata": {"name": CLASS_A}, "spec": {"selectors": [{"cel": {
            "expression": f'device.driver == "{DRIVER_A}" && '
                          f'device.attributes["{DRIVER_A}"].selected'}}]}}],
        slices=[slice_with_devices(
            SLICE1, NODE1, POOL1, DRIVER_A,
            gen_device(DEVICE1, "v6", selected={"bool": False}),
            gen_device(DEVICE2, "v5", selected={"bool": False}),
            gen_device(DEVICE3, "v5", selected={"bool": True}))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE3)])],
    ),
    "max-number-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX))], classes=A,
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX)],
        expect=[Expect(LOCAL1, multiple_device_allocation_results(REQ0, DRIVER_A, POOL1, MAX, 0))],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      request(REQ1, CLASS_A, 1, f'device.attributes["{DRIVER_A}"].special'))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                   partition(DEVICE1, True, "cpu1"),
                                   partition(DEVICE2, False, "cpu2"),
                                   partition(DEVICE3, False, "cpu3")),
                slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                        counter_set(COUNTER_SET1, {"cpu1": "1", "cpu2": "1",
                                                                   "cpu3": "1"}),
                                        counter_set(COUNTER_SET2, {"mem": "30Gi"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE3),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        claims=[claim(CLAIM0, *(request_with_prioritized_list(
            r, sub_request(SUB_REQ0, CLASS_A, MAX), sub_request(SUB_REQ1, CLASS_A, MAX // 2))
            for r in (REQ0, REQ1)))],
        classes=A, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX * 2)],
        expect=[Expect(LOCAL1, [
            *multiple_device_allocation_results(R0S1, DRIVER_A, POOL1, MAX // 2, 0),
            *multiple_device_allocation_results(R1S1, DRIVER_A, POOL1, MAX // 2, MAX // 2)])],
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, all_sub(SUB_REQ0), sub_request(SUB_REQ1, CLASS_A, 2)),
            request(REQ1, CLASS_B, 2))],
        classes=AB,
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX - 1),
                slice_with_multiple_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2)],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, "device-0"),
                                dar(R0S1, DRIVER_A, POOL1, "device-1"),
                                dar(REQ1, DRIVER_B, POOL2, "device-0"),
                                dar(REQ1, DRIVER_B, POOL2, "device-1")])],
    ),
}
