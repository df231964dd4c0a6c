"""Upstream allocator cases: basics, pools, mode All, admin access, node selection,
constraints (``allocator_testing.go``, in its order, names kept).

Left out here: ``optional-node-operations*`` and ``compatibility-groups-*`` (alpha gates, off
in v1.37), ``admin-access-disabled`` (the gate is locked on)."""

from __future__ import annotations

from tests.plugins.dynamic_resources.builders import (
    ALL_NODES,
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    EARTH,
    INT_ATTRIBUTE,
    NODE1,
    NODE2,
    NON_EXISTENT_ATTRIBUTE,
    PLANET_KEY,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REGION_KEY,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    SUB_REQ0,
    SUB_REQ1,
    VERSION_ATTRIBUTE,
    Case,
    Expect,
    all_request,
    claim,
    claim_with_request,
    counter_consumption,
    counter_set,
    device,
    device_class,
    label_selector,
    local_node_selector,
    local_node_selector_raw,
    match_attribute,
    node,
    node_label_selector,
    request,
    request_with_prioritized_list,
    resource_pool,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_one_device,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import (
    device_allocation_result as dar,
)

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)
MEM_1GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0'
MEM_2GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'


def _admin(c: dict, index: int = 0, **fields: object) -> dict:  # type: ignore[type-arg]
    c["spec"]["devices"]["requests"][index]["exactly"].update(adminAccess=True, **fields)
    return c


def _all_first_sub(c: dict) -> dict:  # type: ignore[type-arg]
    sub = c["spec"]["devices"]["requests"][0]["firstAvailable"][0]
    sub.update(allocationMode="All", count=0)
    return c


def _two_devices_attrs(a: dict, b: dict) -> dict:  # type: ignore[type-arg]
    return slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                              device(DEVICE1, None, a), device(DEVICE2, None, b))


FULL_ATTRS = {"driverVersion": {"version": "1.0.0"}, "numa": {"int": 1},
              "stringAttribute": {"string": "stringAttributeValue"},
              "boolAttribute": {"bool": True}}

CASES: dict[str, Case] = {
    "empty": Case(claims=[]),
    "simple": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "other-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        expect=[Expect(local_node_selector(NODE2), [dar(REQ0, DRIVER_A, POOL2, DEVICE1)])],
    ),
    "small-and-large": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI),
                      request(REQ1, CLASS_A, 1, MEM_2GI))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, {"memory": "1Gi"}),
                                   device(DEVICE2, {"memory": "2Gi"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI),
                      request(REQ1, CLASS_A, 1, MEM_2GI))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE2, {"memory": "2Gi"}),
                                   device(DEVICE1, {"memory": "1Gi"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI)),
                claim(CLAIM1, request(REQ1, CLASS_A, 1, MEM_2GI))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE2, {"memory": "2Gi"}),
                                   device(DEVICE1, {"memory": "1Gi"}))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ0, DRIVER_A, POOL2, DEVICE1)])],
    ),
    "obsolete-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_devices("slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1)),
                slice_with_devices("slice-1-obsolete", NODE1, resource_pool(POOL1, 2, 2),
                                   DRIVER_A, device(DEVICE2))],
    ),
    "duplicate-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1)),
                slice_with_devices(SLICE1 + "-2", NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1))],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A),
    "not-enough-suitable-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ1, CLASS_A)],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "no-classes": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "unknown-class")], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "")], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request "
              "type?)",
    ),
    "no-claims-to-allocate": Case(
        claims=[], classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "all-devices-with-consumed-counters": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[
            slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(
                DEVICE1, consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": "4Gi"})])),
            slice_with_counter_sets(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                    counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        ],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ0, DRIVER_A, POOL2, DEVICE1)])],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, count=1))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1))],
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
              "driver-a/pool-1 is currently being updated",
    ),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=AB,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_B, POOL1, DEVICE1)])],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=AB,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_B, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "all-devices-many-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=AB,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE2)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_B, POOL1, DEVICE1)])],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=AB,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_B, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-no-slices": Case(claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
    ),
    "all-devices-some-allocated-admin-access": Case(
        claims=[_admin(claim_with_request(CLAIM0, REQ0, CLASS_A), allocationMode="All")],
        classes=A, allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE2, True)])],
    ),
    "all-devices-some-allocating-admin-access": Case(
        claims=[_admin(_admin(claim(CLAIM0, request(REQ0, CLASS_A, 1),
                                    request(REQ1, CLASS_A, 1))), 1, allocationMode="All")],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=[_admin(claim_with_request(CLAIM0, REQ0, CLASS_A), count=2)],
        classes=A, allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                                dar(REQ0, DRIVER_A, POOL1, DEVICE2, True)])],
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=[_admin(claim_with_request(CLAIM0, REQ0, CLASS_A)),
                _admin(claim_with_request(CLAIM1, REQ0, CLASS_A))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True)])],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                _admin(claim_with_request(CLAIM1, REQ0, CLASS_A))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True)])],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[_all_first_sub(claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1))))],
        classes=AB,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_B, POOL2, DEVICE1)])],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[_all_first_sub(claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1))))],
        classes=AB, slices=[slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_B, POOL2, DEVICE1)])],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[_all_first_sub(claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1), sub_request(SUB_REQ1, CLASS_B, 1))))],
        classes=AB, allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_B, POOL2, DEVICE1)])],
    ),
    "network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A)],
        expect=[Expect(label_selector((REGION_KEY, REGION1)),
                       [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A)],
        node=node(NODE2, REGION2),
    ),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))], classes=A,
        slices=[
            slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                  DRIVER_A),
            slice_with_one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
            slice_with_one_device(SLICE1, node_label_selector(PLANET_KEY, EARTH), POOL3,
                                  DRIVER_A),
            slice_with_one_device(SLICE1, local_node_selector_raw(NODE1), POOL4, DRIVER_A),
        ],
        expect=[Expect(label_selector((REGION_KEY, REGION1), (PLANET_KEY, EARTH),
                                      fields=(NODE1,)),
                       [dar(REQ0, DRIVER_A, POOL1, DEVICE1), dar(REQ0, DRIVER_A, POOL2, DEVICE1),
                        dar(REQ0, DRIVER_A, POOL3, DEVICE1), dar(REQ0, DRIVER_A, POOL4, DEVICE1)])],
    ),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ0, DRIVER_A, POOL2, DEVICE1)])],
    ),
    "several-different-drivers": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ0, CLASS_B)],
        classes=AB,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                Expect(LOCAL1, [dar(REQ0, DRIVER_B, POOL1, DEVICE1)])],
    ),
    "already-allocated-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "admin-access-enabled": Case(
        claims=[_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, True)])],
    ),
    "with-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match_attribute(INT_ATTRIBUTE),
                                   match_attribute(VERSION_ATTRIBUTE),
                                   match_attribute(STRING_ATTRIBUTE),
                                   match_attribute(BOOL_ATTRIBUTE)])],
        classes=A, slices=[_two_devices_attrs(FULL_ATTRS, FULL_ATTRS)],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A,
                                   match_attribute(NON_EXISTENT_ATTRIBUTE))],
        classes=A, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(INT_ATTRIBUTE)])],
        classes=AB,
        slices=[_two_devices_attrs({"numa": {"int": 1}}, {"numa": {"int": 2}})],
    ),
}
