"""DynamicResources' ``filterTimeout`` (DRASchedulerFilterTimeout): upstream's Filter gives
each node's ``Allocate`` a context with that timeout, its search checks it at every step
(``allocateOne``: ``filter operation aborted``), and Filter fails the attempt with
``node <n>: timed out trying to allocate devices``. The clocks here are fake: each read
moves them one second on."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import Code
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from scheduler.plugin_api import SelectorCache
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    Allocator,
    Deadline,
    SearchTimeoutError,
)
from scheduler.testing import ManualClock
from tests.plugins.dynamic_resources.builders import (
    CLAIM0,
    CLASS_A,
    DRIVER_A,
    NODE1,
    POOL1,
    REGION1,
    SLICE1,
    claim,
    device_class,
    node,
    request,
    slice_with_multiple_devices,
)
from tests.plugins.dynamic_resources.plugin_fixtures import (
    DEVICE_CLASS,
    NODE_NAME,
    Run,
    TickingClock,
    pod_with_claim_name,
    resource_claim,
    resource_slice,
)
from tests.plugins.dynamic_resources.plugin_fixtures import (
    request as plugin_request,
)


def _allocator() -> tuple[Allocator, list[ResourceClaim]]:
    """Three devices, a claim for two of them with ``All`` of a class that takes every one
    (so the full search, not the fast path, runs): a search of several steps."""
    classes = {CLASS_A: DeviceClass.parse(device_class(CLASS_A, DRIVER_A))}
    slices = [ResourceSlice.parse(slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3))]
    claims = [ResourceClaim.parse(claim(CLAIM0, {"name": "req-0", "exactly": {
        "deviceClassName": CLASS_A, "allocationMode": "All"}}))]
    return Allocator(AllocatedState(), classes, slices, SelectorCache()), claims


def _steps_to_finish() -> int:
    allocator, claims = _allocator()
    clock = TickingClock()
    found = allocator.allocate(*node(NODE1, REGION1), claims, Deadline(clock, clock.now + 1e9))
    assert found is not None and len(found[0].results) == 3
    return clock.reads


def test_a_search_finished_before_the_deadline_is_unchanged() -> None:
    """Every step reads the clock once (allocateOne's check), and the answer is the one
    without a deadline."""
    allocator, claims = _allocator()
    without = allocator.allocate(*node(NODE1, REGION1), claims)
    assert without is not None and len(without[0].results) == 3
    assert _steps_to_finish() > 3


@pytest.mark.parametrize("after", [1, 2, 3])
def test_the_search_stops_at_the_step_where_the_deadline_passed(after: int) -> None:
    steps = _steps_to_finish()
    allocator, claims = _allocator()
    clock = TickingClock()
    with pytest.raises(SearchTimeoutError):
        allocator.allocate(*node(NODE1, REGION1), claims, Deadline(clock, clock.now + after))
    # Stopped midway: the step that read the deadline's time was the last.
    assert clock.reads == after + 1 < steps


def test_the_fast_path_checks_the_deadline_when_it_ends() -> None:
    """A claim set the fast path answers: its answer stands only within the deadline, where
    the search's last step would have checked it."""
    classes = {CLASS_A: DeviceClass.parse(device_class(CLASS_A, DRIVER_A))}
    slices = [ResourceSlice.parse(slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3))]
    claims = [ResourceClaim.parse(claim(CLAIM0, request("req-0", CLASS_A)))]
    allocator = Allocator(AllocatedState(), classes, slices, SelectorCache())
    clock = ManualClock()
    assert allocator.allocate(*node(NODE1, REGION1), claims, Deadline(clock, clock.now + 1))
    with pytest.raises(SearchTimeoutError):
        allocator.allocate(*node(NODE1, REGION1), claims, Deadline(clock, clock.now))


def _run(timeout: str, clock: ManualClock) -> Run:
    every = resource_claim("my-pod-my-resource", plugin_request(1, allocationMode="All"))
    return Run(pod_with_claim_name(), claims=[every], classes=[DEVICE_CLASS],
               objs=[resource_slice(NODE_NAME, "instance-1", "instance-2")],
               args={"filterTimeout": timeout}, clock=clock)


def test_filter_fails_the_attempt_when_the_timeout_expires_midway() -> None:
    """Filter's answer: an Error status (the pod retries after a backoff), upstream's
    message with the node."""
    run = _run("2s", TickingClock())
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (Code.ERROR,
                                        "node worker: timed out trying to allocate devices")}


@pytest.mark.parametrize("timeout", ["1h", "0s"], ids=["long enough", "off"])
def test_filter_allocates_within_the_timeout_or_without_one(timeout: str) -> None:
    run = _run(timeout, TickingClock())
    assert run.pre_filter().is_success()
    assert run.filter() == {NODE_NAME: (Code.SUCCESS, "")}
