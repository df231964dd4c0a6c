"""Upstream allocator cases for partitionable devices (shared counters), names kept."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    ALL_NODES,
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
    NODE2,
    PER_DEVICE,
    POOL1,
    REGION1,
    REGION_KEY,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    STRING_ATTRIBUTE,
    SUB_REQ0,
    SUB_REQ1,
    TAINT_NO_SCHEDULE,
    Case,
    Expect,
    claim,
    counter_consumption,
    counter_set,
    device,
    device_class,
    label_selector,
    local_node_selector,
    match_attribute,
    node,
    node_label_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    sub_request,
    with_tolerations,
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


FIXED = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
CAP0 = "capacity-0"
N = 10**9


def kind(value: str) -> str:
    return f'device.attributes["{DRIVER_A}"].kind == "{value}"'


def attrs(**values: str) -> dict[str, Any]:
    return {k: {"string": v} for k, v in values.items()}


def memory_device(name: str, size: str) -> dict[str, Any]:
    """``device(name, fromCounters, nil).withDeviceCounterConsumption(memory)``."""
    return consuming(name, COUNTER_SET1, {"memory": size}, capacity={"memory": size})


def memory_at_least(size: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0'


MEMORY_POOL = [pool2(SLICE1, DRIVER_A, memory_device(DEVICE1, "4Gi"),
                     memory_device(DEVICE2, "6Gi"), memory_device(DEVICE3, "4Gi")),
               counters(SLICE2, DRIVER_A, COUNTER_SET1, {"memory": "8Gi"})]

CASES.update({
    "partitionable-consumable-capacity-backtrack-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, kind("shared")),
                      request(REQ1, CLASS_A, 1, kind("counteronly")))],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A,
                      consuming(DEVICE1, COUNTER_SET1, {"c": "1"}, attributes=attrs(kind="shared"),
                                allowMultipleAllocations=True),
                      device(DEVICE2, None, attrs(kind="shared")),
                      consuming(DEVICE3, COUNTER_SET1, {"c": "1"},
                                attributes=attrs(kind="counteronly"))),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "1"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE3)])],
    ),
    "consumable-capacity-rejection-rolls-back-constraints": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"]'
                                  '.stringAttribute == "cap"', capacity={"requests": {CAP0: "2"}})),
            claim(CLAIM1, request_with_prioritized_list(
                REQ0,
                sub_request(SUB_REQ0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"]'
                            '.stringAttribute == "cap"', allocationMode="All",
                            capacity={"requests": {CAP0: "2"}}),
                sub_request(SUB_REQ1, CLASS_A, 1, f'device.attributes["{DRIVER_A}"]'
                            '.stringAttribute == "fb"')),
                constraints=[match_attribute(STRING_ATTRIBUTE)]),
        ],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, {CAP0: "2"}, attrs(stringAttribute="cap"),
                                          allowMultipleAllocations=True),
                                   device(DEVICE2, None, attrs(stringAttribute="fb")))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, share_id=FIXED,
                                    consumed_capacity={CAP0: 2 * N})]),
                Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE2)])],
    ),
    "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, kind("shared"))),
            claim(CLAIM1, request(REQ1, CLASS_A, 1, f"{kind('shared')} || {kind('fallback')}"),
                  request(REQ2, CLASS_A, 1, kind("gate")),
                  request("req-3", CLASS_A, 1, kind("shared")),
                  constraints=[match_attribute(STRING_ATTRIBUTE, REQ1, REQ2)]),
        ],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A,
                      consuming(DEVICE1, COUNTER_SET1, {"c": "1"},
                                attributes=attrs(kind="shared", stringAttribute="red"),
                                allowMultipleAllocations=True),
                      device(DEVICE2, None, attrs(kind="fallback", stringAttribute="blue")),
                      device(DEVICE3, None, attrs(kind="gate", stringAttribute="blue"))),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"c": "1"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, share_id=FIXED)]),
                Expect(LOCAL1, [dar(REQ1, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ2, DRIVER_A, POOL1, DEVICE3),
                                dar("req-3", DRIVER_A, POOL1, DEVICE1, share_id=FIXED)])],
    ),
    "partitionable-devices-prioritized-list": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request_with_prioritized_list(
            REQ1, sub_request(SUB_REQ0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB_REQ1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=A, slices=MEMORY_POOL,
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE3)])],
    ),
    "partitionable-devices-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=A, slices=MEMORY_POOL,
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE3)])],
    ),
})


def multi(name: str, *consumptions: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """``device(name, fromCounters, nil).withDeviceCounterConsumption(...)``."""
    return device(name, {k: v for _, c in consumptions for k, v in c.items()}, None,
                  consumesCounters=[counter_consumption(s, c) for s, c in consumptions])


def counter_sets(name: str, pool: Any, *sets: tuple[str, dict[str, str]]) -> dict[str, Any]:
    return slice_with_counter_sets(name, NODE1, pool, DRIVER_A,
                                   *(counter_set(s, c) for s, c in sets))


CASES.update({
    "partitionable-devices-multiple-capacity-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request_with_prioritized_list(
            REQ1, sub_request(SUB_REQ0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB_REQ1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A, *(
                    multi(name, (COUNTER_SET1, {"memory": mem}), (COUNTER_SET2, {"cpus": cpus}))
                    for name, mem, cpus in [(DEVICE1, "4Gi", "4"), (DEVICE2, "6Gi", "6"),
                                            (DEVICE3, "4Gi", "4")])),
                counter_sets(SLICE2, resource_pool(POOL1, 2), (COUNTER_SET1, {"memory": "18Gi"}),
                             (COUNTER_SET2, {"cpus": "8"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(f"{REQ1}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE3)])],
    ),
    "partitionable-devices-multiple-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A, *(
                    multi(name, (COUNTER_SET1, {"memory": m1, "cpus": c1}),
                          (COUNTER_SET2, {"cpus": c2, "memory": m2}))
                    for name, m1, c1, c2, m2 in [(DEVICE1, "4Gi", "6", "4", "2Gi"),
                                                 (DEVICE2, "6Gi", "4", "6", "6Gi"),
                                                 (DEVICE3, "4Gi", "4", "4", "4Gi")])),
                counter_sets(SLICE2, resource_pool(POOL1, 2),
                             (COUNTER_SET1, {"cpus": "8", "memory": "18Gi"}),
                             (COUNTER_SET2, {"cpus": "12", "memory": "18Gi"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE3)])],
    ),
    "partitionable-devices-multiple-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE2), (DRIVER_A, POOL1, DEVICE3),
                   (DRIVER_A, "pool-2", DEVICE1)],
        slices=[
            pool2(SLICE1, DRIVER_A, *(
                multi(name, (COUNTER_SET1, {"cpus": cpus, "memory": mem}))
                for name, cpus, mem in [(DEVICE1, "6", "4Gi"), (DEVICE2, "4", "6Gi"),
                                        (DEVICE3, "4", "4Gi")])),
            counter_sets(SLICE2, resource_pool(POOL1, 2),
                         (COUNTER_SET1, {"cpus": "8", "memory": "18Gi"})),
            slice_with_devices(SLICE3, NODE1, resource_pool("pool-2", 2), DRIVER_A, *(
                multi(name, (COUNTER_SET1, {"cpus": cpus, "memory": mem}))
                for name, cpus, mem in [(DEVICE1, "6", "4Gi"), (DEVICE2, "1", "7Gi"),
                                        (DEVICE3, "1", "7Gi")])),
            counter_sets(SLICE4, resource_pool("pool-2", 2),
                         (COUNTER_SET1, {"cpus": "8", "memory": "18Gi"})),
        ],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, "pool-2", DEVICE2),
                                dar(REQ1, DRIVER_A, "pool-2", DEVICE3)])],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A, consuming(DEVICE1, COUNTER_SET1, {"memory": "5Gi"}),
                      consuming(DEVICE2, COUNTER_SET1, {"memory": "4Gi"}),
                      consuming(DEVICE3, COUNTER_SET1, {"memory": "4Gi"})),
                counters(SLICE2, DRIVER_A, COUNTER_SET1, {"memory": "8Gi", "unused": "1Gi"})],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE3)])],
    ),
    "partitionable-devices-no-capacity-available": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   multi(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})),
                                   multi(DEVICE2, (COUNTER_SET1, {"memory": "16Gi"}))),
                counter_sets(SLICE2, POOL1, (COUNTER_SET1, {"memory": "18Gi"}))],
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   multi(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})),
                                   multi(DEVICE2, (COUNTER_SET1, {"memory": "20Gi"}))),
                counter_sets(SLICE2, POOL1, (COUNTER_SET1, {"memory": "18Gi"}))],
    ),
})


def on_node(d: dict[str, Any], selection: Any) -> dict[str, Any]:
    """``withNodeSelection``: a node name, ``nodeSelectionAll`` or a node selector."""
    if isinstance(selection, dict):
        return dict(d, nodeSelector=selection)
    if selection == ALL_NODES:
        return dict(d, allNodes=True)
    return dict(d, nodeName=selection)


def per_device(name: str, pool: Any, *devices: dict[str, Any]) -> dict[str, Any]:
    return slice_with_devices(name, PER_DEVICE, pool, DRIVER_A, *devices)


PER_DEVICE_COUNTERS = slice_with_counter_sets(SLICE2, PER_DEVICE, resource_pool(POOL1, 2),
                                              DRIVER_A, counter_set(COUNTER_SET1,
                                                                    {"memory": "18Gi"}))
REGION1_SELECTOR = node_label_selector(REGION_KEY, REGION1)

CASES.update({
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB_REQ1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=A,
        slices=[per_device(SLICE1, resource_pool(POOL1, 2),
                           on_node(multi(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})), NODE1),
                           on_node(multi(DEVICE2, (COUNTER_SET1, {"memory": "6Gi"})), NODE2)),
                PER_DEVICE_COUNTERS],
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE1)])],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[per_device(SLICE1, resource_pool(POOL1, 2), on_node(
                    multi(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})), REGION1_SELECTOR)),
                PER_DEVICE_COUNTERS],
        expect=[Expect(label_selector((REGION_KEY, REGION1)),
                       [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        classes=AB,
        slices=[
            per_device(SLICE1, resource_pool(POOL1, 2),
                       on_node(multi(DEVICE1, (COUNTER_SET1, {"memory": "4Gi"})),
                               REGION1_SELECTOR),
                       on_node(multi(DEVICE2, (COUNTER_SET1, {"memory": "4Gi"})), NODE1),
                       on_node(multi(DEVICE3, (COUNTER_SET1, {"memory": "4Gi"})), ALL_NODES)),
            PER_DEVICE_COUNTERS,
            slice_with_devices(SLICE3, NODE1, resource_pool("pool-2", 2), DRIVER_B, *(
                multi(name, (COUNTER_SET2, {"memory": "4Gi"}))
                for name in (DEVICE1, DEVICE2, DEVICE3))),
            slice_with_counter_sets(SLICE4, NODE1, resource_pool("pool-2", 2), DRIVER_B,
                                    counter_set(COUNTER_SET2, {"memory": "12Gi"})),
        ],
        expect=[Expect(local_node_selector(NODE1), [
            dar(REQ0, DRIVER_A, POOL1, DEVICE1), dar(REQ0, DRIVER_A, POOL1, DEVICE2),
            dar(REQ0, DRIVER_A, POOL1, DEVICE3), dar(REQ1, DRIVER_B, "pool-2", DEVICE1),
            dar(REQ1, DRIVER_B, "pool-2", DEVICE2), dar(REQ1, DRIVER_B, "pool-2", DEVICE3)])],
    ),
})


def pool3(name: str, node_name: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return slice_with_devices(name, node_name, resource_pool(POOL1, 3), DRIVER_A, *devices)


COUNTERS_ON_NODE1 = slice_with_counter_sets(SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A,
                                            counter_set(COUNTER_SET1, {"memory": "8Gi"}))

CASES.update({
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB_REQ1, CLASS_A, 1, memory_at_least("2Gi"))))],
        classes=A, allocated=[(DRIVER_A, POOL1, DEVICE3)],
        slices=[COUNTERS_ON_NODE1,
                pool3(SLICE2, NODE1, multi(DEVICE1, (COUNTER_SET1, {"memory": "6Gi"})),
                      multi(DEVICE2, (COUNTER_SET1, {"memory": "2Gi"}))),
                pool3(SLICE3, NODE2, consuming(DEVICE3, COUNTER_SET1, {"memory": "6Gi"}))],
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE2)])],
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1)], node=node(NODE2, REGION1),
        slices=[COUNTERS_ON_NODE1,
                pool3(SLICE2, NODE1, multi(DEVICE1, (COUNTER_SET1, {"memory": "6Gi"}))),
                pool3(SLICE3, NODE2, multi(DEVICE2, (COUNTER_SET1, {"memory": "6Gi"})),
                      multi(DEVICE3, (COUNTER_SET1, {"memory": "2Gi"})))],
        expect=[Expect(local_node_selector(NODE2), [dar(REQ0, DRIVER_A, POOL1, DEVICE3)])],
    ),
})


def bound(d: dict[str, Any], conditions: list[str], failures: list[str]) -> dict[str, Any]:
    return dict(d, bindingConditions=conditions, bindingFailureConditions=failures)


def bc(dev: str, conditions: tuple[str, ...] = (), failures: tuple[str, ...] = (),
       *tolerations: dict[str, Any]) -> Any:
    return dar(REQ0, DRIVER_A, POOL1, dev, False, *tolerations, binding_conditions=conditions,
               binding_failure_conditions=failures)


KEY1_TAINT = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
KEY1_TOLERATION = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}
MEM8 = counters(SLICE2, DRIVER_A, COUNTER_SET1, {"memory": "8Gi"})


def mem(name: str, size: str, set_name: str = COUNTER_SET1) -> dict[str, Any]:
    return multi(name, (set_name, {"memory": size}))


TAINTED_BOUND = [bound(dict(mem(DEVICE1, "4Gi"), taints=[KEY1_TAINT]), ["IsPrepare"],
                       ["BindingFailed"]), mem(DEVICE2, "4Gi")]

CASES.update({
    "partitionable-devices-with-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A, bound(mem(DEVICE1, "4Gi"), ["IsPrepare"],
                                              ["BindingFailed"])), MEM8],
        expect=[Expect(LOCAL1, [bc(DEVICE1, ("IsPrepare",), ("BindingFailed",))])],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A,
                      bound(mem(DEVICE1, "4Gi"), ["IsPrepare"], ["BindingFailed"]),
                      bound(mem(DEVICE2, "4Gi"), ["IsPrepare2"], ["BindingFailed2"])), MEM8],
        expect=[Expect(LOCAL1, [bc(DEVICE1, ("IsPrepare",), ("BindingFailed",)),
                                bc(DEVICE2, ("IsPrepare2",), ("BindingFailed2",))])],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3))], classes=A,
        slices=[pool2(SLICE1, DRIVER_A,
                      bound(mem(DEVICE1, "2Gi"), ["IsPrepare"], ["BindingFailed"]),
                      mem(DEVICE2, "2Gi"),
                      bound(mem(DEVICE3, "4Gi"), ["IsReady"], ["BindingTimeout"])), MEM8],
        expect=[Expect(LOCAL1, [bc(DEVICE1, ("IsPrepare",), ("BindingFailed",)), bc(DEVICE2),
                                bc(DEVICE3, ("IsReady",), ("BindingTimeout",))])],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[
            slice_with_devices(SLICE4, NODE1, resource_pool(POOL1, 4), DRIVER_A,
                               bound(mem(DEVICE1, "4Gi"), ["IsPrepare"], ["BindingFailed"])),
            counter_sets(SLICE3, resource_pool(POOL1, 4), (COUNTER_SET1, {"memory": "8Gi"})),
            slice_with_devices(SLICE2, NODE1, resource_pool(POOL1, 4), DRIVER_A,
                               mem(DEVICE2, "4Gi", COUNTER_SET2)),
            counter_sets(SLICE1, resource_pool(POOL1, 4), (COUNTER_SET2, {"memory": "8Gi"})),
        ],
        expect=[Expect(LOCAL1, [bc(DEVICE2), bc(DEVICE1, ("IsPrepare",), ("BindingFailed",))])],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *TAINTED_BOUND),
                counter_sets(SLICE2, POOL1, (COUNTER_SET1, {"memory": "8Gi"}))],
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        claims=[with_tolerations(claim(CLAIM0, request(REQ0, CLASS_A, 2)), KEY1_TOLERATION)],
        classes=A,
        slices=[pool2(SLICE1, DRIVER_A, *TAINTED_BOUND), MEM8],
        expect=[Expect(LOCAL1, [
            bc(DEVICE1, ("IsPrepare",), ("BindingFailed",), KEY1_TOLERATION),
            bc(DEVICE2, (), (), KEY1_TOLERATION)])],
    ),
})
