"""Upstream allocator cases for pools: generations and completeness across nodes, invalid
pools, counter-set validation, and the combination search, names kept.

The ``expectNumAllocateOneInvocations`` counts of the ``check-combinations-*`` cases are not
checked (we keep no search statistics); their results are."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLASS_A,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    Expect,
    all_request,
    claim,
    claim_with_request,
    counter_consumption,
    counter_set,
    device,
    device_class,
    local_node_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
LOCAL1 = local_node_selector(NODE1)
SLICE4, DEVICE4 = "slice-4", "device-4"
INVALID = "invalid resource pools were encountered"
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'
TYPE_Y = f'device.attributes["{DRIVER_A}"].type == "Y"'


def gen(name: str, node_name: str, generation: int, dev: str) -> dict[str, Any]:
    return slice_with_devices(name, node_name, resource_pool(POOL1, 2, generation), DRIVER_A,
                              device(dev))


def typed(name: str, kind: str, **fields: Any) -> dict[str, Any]:
    return device(name, None, {"type": {"string": kind}}, **fields)


def four_devices(*slices: tuple[str, Any, tuple[str, ...]]) -> list[dict[str, Any]]:
    return [slice_with_devices(name, NODE1, pool, DRIVER_A, *(device(d) for d in devices))
            for name, pool, devices in slices]


CASES: dict[str, Case] = {
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE2, NODE2, 1, DEVICE2)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE2, NODE2, 2, DEVICE2)],
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE1, NODE1, 1, DEVICE2),
                gen(SLICE2, NODE2, 2, DEVICE1), gen(SLICE2, NODE2, 2, DEVICE2)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[gen(SLICE1, NODE2, 1, DEVICE1), gen(SLICE1, NODE2, 1, DEVICE2),
                gen(SLICE2, NODE1, 2, DEVICE1), gen(SLICE2, NODE1, 2, DEVICE2)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE1, NODE1, 1, DEVICE2),
                gen(SLICE2, NODE2, 2, DEVICE1)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[gen(SLICE1, NODE2, 1, DEVICE1), gen(SLICE1, NODE2, 1, DEVICE2),
                gen(SLICE2, NODE1, 2, DEVICE1)],
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE1)),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 4), DRIVER_A,
                                    counter_set(COUNTER_SET1, {})),
            slice_with_devices(SLICE3, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE2)),
            slice_with_counter_sets(SLICE4, NODE1, resource_pool(POOL1, 4), DRIVER_A,
                                    counter_set(COUNTER_SET1, {})),
        ],
        error=INVALID,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(
                DEVICE1, consumesCounters=[counter_consumption(COUNTER_SET2, {})])),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                    counter_set(COUNTER_SET1, {})),
        ],
        error=INVALID,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(
                DEVICE1, consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": "8Gi"})])),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                    counter_set(COUNTER_SET1, {"other-memory": "8Gi"})),
        ],
        error=INVALID,
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(
                DEVICE1, consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": "8Gi"})])),
            slice_with_counter_sets(SLICE2, NODE1, POOL2, DRIVER_A,
                                    counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        ],
        error=INVALID,
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[
            slice_with_counter_sets(SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A,
                                    counter_set(COUNTER_SET1, {"memory": "8Gi"})),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A, device(
                DEVICE1, {"memory": "6Gi"},
                consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": "6Gi"})])),
            slice_with_devices(SLICE3, NODE2, resource_pool(POOL1, 3), DRIVER_A, device(
                DEVICE3, consumesCounters=[counter_consumption(COUNTER_SET2, {"memory": "6Gi"})])),
        ],
        error=INVALID,
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[gen(SLICE1, NODE2, 1, DEVICE1), gen(SLICE2, NODE1, 1, DEVICE2)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE2, NODE1, 1, DEVICE1),
                slice_with_devices(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A,
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL2, DEVICE2)])],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        allocated=[(DRIVER_A, POOL2, DEVICE2)],
        slices=[gen(SLICE1, NODE1, 1, DEVICE1), gen(SLICE2, NODE1, 1, DEVICE1),
                slice_with_devices(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A,
                                   device(DEVICE2))],
        error=INVALID,
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[gen(SLICE1, NODE1, 1, DEVICE1)],
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=four_devices((SLICE1, POOL1, (DEVICE1, DEVICE2, DEVICE3, DEVICE4))),
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=four_devices((SLICE1, resource_pool(POOL1, 2), (DEVICE1, DEVICE2)),
                            (SLICE2, resource_pool(POOL1, 2), (DEVICE3, DEVICE4))),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=four_devices((SLICE1, resource_pool(POOL1, 2), (DEVICE1,)),
                            (SLICE2, resource_pool(POOL1, 2), (DEVICE2,)),
                            (SLICE3, POOL2, (DEVICE3, DEVICE4))),
    ),
    "check-combinations-within-single-request-many-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=four_devices((SLICE1, POOL1, (DEVICE1,)), (SLICE2, POOL2, (DEVICE2,)),
                            (SLICE3, POOL3, (DEVICE3,)), (SLICE4, POOL4, (DEVICE4,))),
    ),
    "check-combinations-with-backtracking": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, TYPE_X))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, typed(DEVICE1, "X"),
                                   typed(DEVICE2, "Y"), typed(DEVICE3, "Y"))],
        expect=[Expect(LOCAL1, [dar(REQ1, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE3),
                                dar(REQ2, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, TYPE_X))],
        classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                               typed(DEVICE1, "X")),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                               typed(DEVICE2, "Y")),
            slice_with_devices(SLICE3, NODE1, POOL2, DRIVER_A,
                               typed(DEVICE3, "Y", bindingConditions=["IsPrepare"])),
        ],
        expect=[Expect(LOCAL1, [dar(REQ1, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL2, DEVICE3,
                                    binding_conditions=("IsPrepare",)),
                                dar(REQ2, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "check-combinations-with-prioritized-list": Case(
        claims=[claim(CLAIM0,
                      request_with_prioritized_list(REQ1, sub_request(SUB_REQ0, CLASS_A, 3, TYPE_Y),
                                                    sub_request(SUB_REQ1, CLASS_A, 2)),
                      request_with_prioritized_list(REQ2, sub_request(SUB_REQ0, CLASS_A, 2),
                                                    sub_request(SUB_REQ1, CLASS_A, 1, TYPE_X)))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, typed(DEVICE1, "X"),
                                   typed(DEVICE2, "Y"), typed(DEVICE3, "Y"))],
        expect=[Expect(LOCAL1, [dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE2),
                                dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE3),
                                dar(f"{REQ2}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE1)])],
    ),
}
