"""Upstream allocator cases for prioritized lists (``firstAvailable``), names kept.

Left out: ``prioritized-list-disabled`` (DRAPrioritizedList is locked on) and the
``expectNumAllocateOneInvocations`` counter of the last case (we keep no search statistics)."""

from __future__ import annotations

from typing import Any

from scheduler.model.dra import AllocationConfiguration
from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB_REQ0,
    SUB_REQ1,
    VERSION_ATTRIBUTE,
    Case,
    Expect,
    claim,
    device,
    device_class,
    device_configuration,
    local_node_selector,
    match_attribute,
    request,
    request_with_prioritized_list,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_one_device,
    sub_request,
)
from tests.plugins.dynamic_resources.builders import device_allocation_result as dar

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
LOCAL1 = local_node_selector(NODE1)
R0S0, R0S1 = f"{REQ0}/{SUB_REQ0}", f"{REQ0}/{SUB_REQ1}"
R1S0, R1S1 = f"{REQ1}/{SUB_REQ0}", f"{REQ1}/{SUB_REQ1}"


def mem(size: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0'


def prio(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return request_with_prioritized_list(name, *subs)


def mem_device(name: str, size: str, version: str | None = None) -> dict[str, Any]:
    attrs = {"driverVersion": {"version": version}} if version else None
    return device(name, {"memory": size}, attrs)


def config(source: str, requests: tuple[str, ...] | None, driver: str, attribute: str
           ) -> AllocationConfiguration:
    return AllocationConfiguration(source, requests,
                                   device_configuration(driver, attribute)["opaque"])


def claim_config(requests: list[str], driver: str, attribute: str) -> dict[str, Any]:
    return {"requests": requests, **device_configuration(driver, attribute)}


def all_first(c: dict[str, Any]) -> dict[str, Any]:
    c["spec"]["devices"]["requests"][0]["firstAvailable"][0].update(allocationMode="All", count=0)
    return c


VERSIONED = [
    slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi", "1.0.0")),
    slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "2Gi", "2.0.0"),
                       mem_device(DEVICE3, "1Gi", "1.0.0")),
]
EIGHT_AND_FOUR = [
    slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi")),
    slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "4Gi")),
]

CASES: dict[str, Case] = {
    "prioritized-list-first-unavailable": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_B, 1),
                                   sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=AB, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-non-available": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_B, 2),
                                   sub_request(SUB_REQ1, CLASS_A, 2)))],
        classes=AB,
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
    ),
    "prioritized-list-device-config": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1),
                                   sub_request(SUB_REQ1, CLASS_B, 2)),
                      config=[claim_config([R0S0], DRIVER_A, "foo"),
                              claim_config([R0S1], DRIVER_B, "bar")])],
        classes=AB,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_B, POOL1, DEVICE1),
                                dar(R0S1, DRIVER_B, POOL1, DEVICE2)],
                       [config("FromClaim", None, DRIVER_B, "bar")])],
    ),
    "prioritized-list-class-config": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 2),
                                   sub_request(SUB_REQ1, CLASS_B, 2)))],
        classes=[device_class(CLASS_A, DRIVER_A, "foo"), device_class(CLASS_B, DRIVER_B, "bar")],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_B, POOL1, DEVICE1),
                                dar(R0S1, DRIVER_B, POOL1, DEVICE2)],
                       [config("FromClass", None, DRIVER_B, "bar")])],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1),
                                   sub_request(SUB_REQ1, CLASS_B, 1)),
                      request(REQ1, CLASS_A, 1),
                      config=[claim_config([R0S0, R0S1], DRIVER_A, "scoped")])],
        classes=AB, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
        expect=[Expect(LOCAL1, [dar(R0S0, DRIVER_A, POOL1, DEVICE0),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1)],
                       [config("FromClaim", (R0S0, R0S1), DRIVER_A, "scoped")])],
    ),
    "claim-config-covering-all-requests-is-cleared": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1),
                                   sub_request(SUB_REQ1, CLASS_B, 1)),
                      request(REQ1, CLASS_A, 1),
                      config=[claim_config([R0S0, REQ1], DRIVER_A, "all")])],
        classes=AB, slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
        expect=[Expect(LOCAL1, [dar(R0S0, DRIVER_A, POOL1, DEVICE0),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1)],
                       [config("FromClaim", None, DRIVER_A, "all")])],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mem("1Gi")),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 1, mem("4Gi")),
                           sub_request(SUB_REQ1, CLASS_A, 2, mem("2Gi"))))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "2Gi"),
                                   mem_device(DEVICE2, "2Gi"), mem_device(DEVICE3, "1Gi"))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE3),
                                dar(R1S1, DRIVER_A, POOL1, DEVICE1),
                                dar(R1S1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mem("8Gi")),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 1, mem("2Gi")),
                           sub_request(SUB_REQ1, CLASS_A, 1, mem("1Gi"))),
                      constraints=[match_attribute(VERSION_ATTRIBUTE, REQ0, REQ1)])],
        classes=A, slices=VERSIONED,
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(R1S1, DRIVER_A, POOL2, DEVICE3)])],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mem("8Gi")),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 1, mem("2Gi")),
                           sub_request(SUB_REQ1, CLASS_A, 1, mem("1Gi"))),
                      constraints=[match_attribute(VERSION_ATTRIBUTE, REQ0, R1S0)])],
        classes=A, slices=[VERSIONED[0], slice_with_devices(
            SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "2Gi", "2.0.0"))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(R1S1, DRIVER_A, POOL2, DEVICE2)])],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=[all_first(claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1),
                                             sub_request(SUB_REQ1, CLASS_A, 1))))],
        classes=A, allocated=[(DRIVER_A, POOL1, DEVICE1)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 0, allocationMode="All"),
                           sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(R1S1, DRIVER_A, POOL1, DEVICE2)])],
    ),
    "prioritized-list-multi-request": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 1, mem("8Gi")),
                      prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1, mem("8Gi")),
                           sub_request(SUB_REQ1, CLASS_A, 1, mem("4Gi"))))],
        classes=A, slices=EIGHT_AND_FOUR,
        expect=[Expect(LOCAL1, [dar(REQ1, DRIVER_A, POOL1, DEVICE1),
                                dar(R0S1, DRIVER_A, POOL2, DEVICE2)])],
    ),
    "prioritized-list-with-backtracking": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_A, 1, mem("8Gi")),
                                   sub_request(SUB_REQ1, CLASS_A, 1, mem("4Gi"))),
                      request(REQ1, CLASS_A, 1, mem("8Gi")))],
        classes=A, slices=EIGHT_AND_FOUR,
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL2, DEVICE2),
                                dar(REQ1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[claim(CLAIM0, prio(REQ0, sub_request(SUB_REQ0, CLASS_B, 500),
                                   sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=AB, slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[Expect(LOCAL1, [dar(R0S1, DRIVER_A, POOL1, DEVICE1)])],
    ),
    "prioritized-list-minimum-sum-exceeds-claim-limit": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 20),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 20),
                           sub_request(SUB_REQ1, CLASS_A, 24)))],
        classes=A, error="request req-1: adding 20 devices exceeds the claim limit",
    ),
    "prioritized-list-overflowing-first-subrequest-is-pruned": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      prio(REQ1, sub_request(SUB_REQ0, CLASS_A, 2**63 - 1),
                           sub_request(SUB_REQ1, CLASS_A, 1)))],
        classes=A,
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[Expect(LOCAL1, [dar(REQ0, DRIVER_A, POOL1, DEVICE1),
                                dar(R1S1, DRIVER_A, POOL1, DEVICE2)])],
    ),
}
