"""The structured allocator against upstream's table (``k8s.io/dynamic-resource-allocation/
structured/internal/allocatortesting/allocator_testing.go`` ``TestAllocator``, run there for
the incubating allocator), case names kept: 211 of its 275 cases, in the ``cases_*.py`` files.
The others need gates that are off, alpha or locked on in v1.37.2, or input the model rejects
(docs/dra.md lists them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from scheduler.model.dra import (
    AllocationResult,
    DeviceClass,
    DeviceTaint,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)
from scheduler.model.dra_cel import SelectorCache
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    AllocatorCache,
    apply_taint_rules,
)
from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    NODE1,
    POOL1,
    REGION1,
    REQ0,
    SLICE1,
    TAINT_KEY,
    TAINT_NO_SCHEDULE,
    TAINT_VALUE,
    Case,
    claim,
    claim_with_request,
    device,
    device_class,
    node,
    request,
    slice_with_devices,
    slice_with_one_device,
)
from tests.plugins.dynamic_resources.cases_capacity import CASES as CAPACITY
from tests.plugins.dynamic_resources.cases_core import CASES as CORE
from tests.plugins.dynamic_resources.cases_mode_all import CASES as MODE_ALL
from tests.plugins.dynamic_resources.cases_more import CASES as MORE
from tests.plugins.dynamic_resources.cases_partitionable import CASES as PARTITIONABLE
from tests.plugins.dynamic_resources.cases_pools import CASES as POOLS
from tests.plugins.dynamic_resources.cases_prioritized import CASES as PRIORITIZED
from tests.plugins.dynamic_resources.cases_sharing import CASES as SHARING
from tests.plugins.dynamic_resources.cases_taints import CASES as TAINTS

FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def _canonical(result: AllocationResult) -> tuple[Any, ...]:
    results = [
        replace(r, share_id=FIXED_SHARE_ID if r.share_id is not None else None)
        for r in result.results
    ]
    return result.node_selector, Counter(map(repr, results)), tuple(result.config)


def run_case(case: Case, path: str) -> None:
    classes = {c.name: c for c in map(DeviceClass.parse, case.classes)}
    slices = [ResourceSlice.parse(s) for s in case.slices]
    claims = [ResourceClaim.parse(c) for c in case.claims]
    state = AllocatedState(
        devices=frozenset(case.allocated),
        shared_devices=frozenset(case.shared),
        aggregated_capacity=case.aggregated,
    )
    cache = AllocatorCache()
    calls = 2 if path == "cached" else 1
    for _ in range(calls):  # the second call finds the node view the first one built
        allocator = cache.allocator(state, classes, slices, slices_key=1,
                                    new_share_id=lambda: FIXED_SHARE_ID)
        check_outcome(case, partial(_call, allocator, path, case.node, claims))


def _call(
    allocator: Allocator, path: str, node: tuple[str, dict[str, str]],
    claims: list[ResourceClaim],
) -> list[AllocationResult] | None:
    if path == "search":
        return allocator.search(allocator.view.node(*node), claims)
    return allocator.allocate(*node, claims)


def check_outcome(case: Case, allocate: Callable[[], list[AllocationResult] | None]) -> None:
    if case.error is not None:
        with pytest.raises(AllocationError) as err:
            allocate()
        assert case.error in str(err.value)
        return
    got = allocate()
    if not case.expect:
        assert not got, got
        return
    assert got is not None, "no allocation"
    want = [
        AllocationResult(tuple(e.results), tuple(e.config), e.node_selector) for e in case.expect
    ]
    assert [_canonical(r) for r in got] == [_canonical(r) for r in want]


CASE_FILES = (CORE, MORE, PRIORITIZED, TAINTS, SHARING, POOLS, PARTITIONABLE, MODE_ALL,
              CAPACITY)
CASES = {name: case for cases in CASE_FILES for name, case in cases.items()}
assert len(CASES) == sum(map(len, CASE_FILES)), "a case name is used twice"


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocator(name: str) -> None:
    """Through ``allocate``: the fast path where the claims are simple, else the search."""
    run_case(CASES[name], "allocate")


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocator_full_search(name: str) -> None:
    """The same table through the full search alone (``Allocator.search``)."""
    run_case(CASES[name], "search")


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocator_with_views_kept(name: str) -> None:
    """The same table twice from one ``AllocatorCache``, the second from the kept views."""
    run_case(CASES[name], "cached")


def test_device_taint_rules_taint_the_devices_they_select() -> None:
    """The slice tracker's ``applyPatches``: a rule's taint is added to the devices its
    selector names; a rule without a selector names none."""
    slices = [ResourceSlice.parse(slice_with_devices(
        SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)))]
    rules = [
        DeviceTaintRule.parse({"metadata": {"name": "r1"}, "spec": {
            "deviceSelector": {"driver": DRIVER_A, "device": DEVICE1},
            "taint": TAINT_NO_SCHEDULE}}),
        DeviceTaintRule.parse({"metadata": {"name": "r2"}, "spec": {"taint": TAINT_NO_SCHEDULE}}),
    ]
    tainted = apply_taint_rules(slices, rules)
    assert [d.taints for d in tainted[0].devices] == [
        (DeviceTaint(TAINT_KEY, TAINT_VALUE, "NoSchedule"),), ()]
    assert apply_taint_rules(slices, []) == slices
    claims = [ResourceClaim.parse(claim_with_request(CLAIM0, REQ0, CLASS_A))]
    classes = {CLASS_A: DeviceClass.parse(device_class(CLASS_A, DRIVER_A))}
    allocator = Allocator(AllocatedState(), classes, tainted, SelectorCache())
    got = allocator.allocate(*node(NODE1, REGION1), claims)
    assert got is not None and [r.device for r in got[0].results] == [DEVICE2]


def test_devices_allocated_or_in_flight_are_not_given_twice() -> None:
    """``AllocatedState``: devices of allocated claims and of Reserve'd (in-flight) claims."""
    slices = [ResourceSlice.parse(slice_with_devices(
        SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)))]
    classes = {CLASS_A: DeviceClass.parse(device_class(CLASS_A, DRIVER_A))}
    claims = [ResourceClaim.parse(claim(CLAIM0, request(REQ0, CLASS_A, 2)))]
    free = Allocator(AllocatedState(), classes, slices, SelectorCache())
    assert free.allocate(*node(NODE1, REGION1), claims) is not None
    one_taken = AllocatedState(devices=frozenset({(DRIVER_A, POOL1, DEVICE2)}))
    busy = Allocator(one_taken, classes, slices, SelectorCache())
    assert busy.allocate(*node(NODE1, REGION1), claims) is None


def test_a_runtime_cel_error_names_the_class_selector_and_device() -> None:
    """``selectorsMatch``: a runtime error aborts the attempt, upstream's wording."""
    slices = [ResourceSlice.parse(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A))]
    bad = device_class(CLASS_A, DRIVER_A)
    bad["spec"]["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER_A}"].gpu'}}]
    classes = {CLASS_A: DeviceClass.parse(bad)}
    claims = [ResourceClaim.parse(claim_with_request(CLAIM0, REQ0, CLASS_A))]
    allocator = Allocator(AllocatedState(), classes, slices, SelectorCache())
    with pytest.raises(AllocationError) as err:
        allocator.allocate(*node(NODE1, REGION1), claims)
    assert str(err.value) == (
        "class class-a: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: "
        "no such key: gpu. consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )
