"""Upstream allocator cases for device taints and tolerations, names kept.

Left out: the ``tainted-*-disabled`` cases (DRADeviceTaints is on in v1.37 and we have no
switch for it)."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    REQ0,
    SLICE1,
    SUB_REQ0,
    SUB_REQ1,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_NONE,
    TOLERATION_NO_EXECUTE,
    TOLERATION_NO_SCHEDULE,
    Case,
    Expect,
    all_request,
    claim,
    claim_with_request,
    device,
    device_class,
    local_node_selector,
    request_with_prioritized_list,
    slice_with_devices,
    sub_request,
    with_tolerations,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)


def tainted(name: str, *taints: dict[str, Any]) -> dict[str, Any]:
    return device(name, taints=list(taints))


TWO_TAINTED = [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                  tainted(DEVICE1, TAINT_NO_SCHEDULE),
                                  tainted(DEVICE2, TAINT_NO_EXECUTE))]
ONE_TWO_TAINTS = [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                     tainted(DEVICE1, TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE))]
ONE_NO_SCHEDULE = [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                      tainted(DEVICE1, TAINT_NO_SCHEDULE))]


def _admin(c: dict[str, Any]) -> dict[str, Any]:
    c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return c


CASES: dict[str, Case] = {
    "tainted-two-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A, slices=TWO_TAINTED,
    ),
    "tainted-one-device-two-taints": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A, slices=ONE_TWO_TAINTS,
    ),
    "tainted-two-devices-tolerated": Case(
        claims=[with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A),
                                 TOLERATION_NO_EXECUTE)],
        classes=A, slices=TWO_TAINTED,
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE2, False,
                                    TOLERATION_NO_EXECUTE)])],
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_A, 1),
            sub_request(SUB_REQ1, CLASS_A, 1, tolerations=[TOLERATION_NO_EXECUTE])))],
        classes=A, slices=TWO_TAINTED,
        expect=[Expect(LOCAL1, [dar(f"{REQ0}/{SUB_REQ1}", DRIVER_A, POOL1, DEVICE2, False,
                                    TOLERATION_NO_EXECUTE)])],
    ),
    "tainted-no-effect": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, tainted(DEVICE1, TAINT_NONE))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[with_tolerations(claim_with_request(CLAIM0, REQ0, CLASS_A),
                                 TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE)],
        classes=A, slices=ONE_TWO_TAINTS,
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1, False,
                                    TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE)])],
    ),
    "tainted-prioritized-list": Case(
        claims=[claim(CLAIM0, request_with_prioritized_list(
            REQ0, sub_request(SUB_REQ0, CLASS_B, 1), sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=AB, slices=ONE_NO_SCHEDULE,
    ),
    "tainted-admin-access": Case(
        claims=[_admin(claim_with_request(CLAIM0, REQ0, CLASS_A))], classes=A,
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        slices=ONE_NO_SCHEDULE,
    ),
    "tainted-all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A, slices=ONE_NO_SCHEDULE,
    ),
}
