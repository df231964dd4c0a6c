"""DraObjects: the DRA manager's claim tracker, listers and class resolver (upstream's
dra_manager.go, allocateddevices.go and extendedresourcecache.go)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.cache.dra_objects import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    DraObjects,
)
from scheduler.intake import Intake
from scheduler.model.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from scheduler.scheduler import ProfileHandle
from scheduler.testing import scheduler_of


def result(device: str, **extra: Any) -> dict[str, Any]:
    return {"request": "r", "driver": "d", "pool": "p", "device": device, **extra}


def claim(name: str, *results: dict[str, Any], rv: str = "1", uid: str = "") -> ResourceClaim:
    status = {"allocation": {"devices": {"results": list(results)}}} if results else {}
    return ResourceClaim.parse({
        "metadata": {"namespace": "ns", "name": name, "uid": uid or f"uid-{name}",
                     "resourceVersion": rv},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "c"}}]}},
        "status": status,
    })


def device_class(name: str, extended: str | None = None, created: str = "") -> DeviceClass:
    spec = {"extendedResourceName": extended} if extended else {}
    return DeviceClass.parse({"metadata": {"name": name, "creationTimestamp": created},
                              "spec": spec})


def devices_of(dra: DraObjects) -> set[str]:
    return {d[2] for d in dra.allocated().devices}


@pytest.mark.parametrize(
    ("results", "devices", "shared", "consumed"),
    [
        pytest.param([result("a"), result("b")], {"a", "b"}, set(), {},
                     id="dedicated devices count"),
        pytest.param([result("a", adminAccess=True)], set(), set(), {},
                     id="admin access holds nothing"),
        pytest.param([result("a", shareID="s1", consumedCapacity={"mem": "1Gi"})],
                     set(), {"a"}, {"a": {"mem": (1 << 30) * 10**9}},
                     id="a share and its capacity, in nano-units"),
    ],
)
def test_allocated_devices_of_allocated_claims(
    results: list[dict[str, Any]], devices: set[str], shared: set[str],
    consumed: dict[str, dict[str, int]],
) -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", *results))
    state = dra.allocated()
    assert {d[2] for d in state.devices} == devices
    assert {d[2] for d in state.shared_devices} == shared
    assert {d[2]: dict(c) for d, c in state.consumed.items()} == consumed


def test_a_deallocated_or_deleted_claim_frees_its_devices() -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", result("a")))
    dra.upsert(RESOURCE_CLAIMS, "ns/e", claim("e", result("b")))
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", rv="2"))
    assert devices_of(dra) == {"b"}
    dra.remove(RESOURCE_CLAIMS, "ns/e")
    assert devices_of(dra) == set()
    assert dra.claim("ns", "e") is None


@pytest.mark.parametrize(
    ("informer_rv", "assumed_kept"),
    [
        pytest.param("4", True, id="an older watch version keeps the assumption"),
        pytest.param("5", False, id="the assumed version itself ends it"),
        pytest.param("6", False, id="a newer version ends it"),
    ],
)
def test_assumed_claim_until_the_watch_catches_up(informer_rv: str, assumed_kept: bool) -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", rv="3"))
    dra.assume_after_api_call(claim("c", result("a"), rv="5"))
    assert devices_of(dra) == {"a"}
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", rv=informer_rv))
    got = dra.claim("ns", "c")
    assert got is not None
    assert (got.allocation is not None) is assumed_kept
    assert devices_of(dra) == ({"a"} if assumed_kept else set())


def test_restore_after_a_failed_write_reads_the_watch_again() -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", rv="3"))
    dra.assume_after_api_call(claim("c", result("a"), rv="4"))
    dra.restore_assumed("ns", "c")
    got = dra.claim("ns", "c")
    assert got is not None and got.allocation is None
    assert devices_of(dra) == set()


def test_an_assumption_older_than_the_watch_is_ignored() -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", rv="7"))
    dra.assume_after_api_call(claim("c", result("a"), rv="6"))
    assert devices_of(dra) == set()


def test_pending_allocations_are_shared_and_removed_by_the_last_sharer() -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c"))
    allocated = claim("c", result("a"))
    dra.signal_pending_allocation(allocated)
    dra.signal_pending_allocation(allocated)
    assert devices_of(dra) == {"a"}
    assert dra.pending_allocation("uid-c") == allocated.allocation
    assert dra.remove_pending_allocation("uid-c") is False
    assert devices_of(dra) == {"a"}
    assert dra.remove_pending_allocation("uid-c") is True
    assert devices_of(dra) == set()
    assert dra.remove_pending_allocation("uid-c") is False


def test_force_removes_a_shared_pending_allocation() -> None:
    dra = DraObjects()
    allocated = claim("c", result("a"))
    dra.signal_pending_allocation(allocated)
    dra.signal_pending_allocation(allocated)
    assert dra.remove_pending_allocation("uid-c", force=True) is True
    assert dra.pending_allocation("uid-c") is None


def test_no_pending_allocation_for_a_claim_already_allocated() -> None:
    dra = DraObjects()
    dra.upsert(RESOURCE_CLAIMS, "ns/c", claim("c", result("a")))
    dra.signal_pending_allocation(claim("c", result("a")))
    assert dra.pending_allocation("uid-c") is None


@pytest.mark.parametrize(
    ("classes", "resource", "want"),
    [
        pytest.param([device_class("gpu", "example.com/gpu")], "example.com/gpu", "gpu",
                     id="explicit name"),
        pytest.param([device_class("gpu")], "deviceclass.resource.kubernetes.io/gpu", "gpu",
                     id="implicit name"),
        pytest.param([device_class("gpu")], "example.com/gpu", None, id="no mapping"),
        pytest.param([device_class("old", "x/gpu", "2026-01-01T00:00:00Z"),
                      device_class("new", "x/gpu", "2026-02-01T00:00:00Z")], "x/gpu", "new",
                     id="the newer class wins"),
        pytest.param([device_class("b", "x/gpu", "2026-01-01T00:00:00Z"),
                      device_class("a", "x/gpu", "2026-01-01T00:00:00Z")], "x/gpu", "a",
                     id="the lower name breaks a tie"),
    ],
)
def test_class_for_extended_resource(
    classes: list[DeviceClass], resource: str, want: str | None
) -> None:
    dra = DraObjects()
    for c in classes:
        dra.upsert(DEVICE_CLASSES, c.name, c)
    got = dra.class_for_extended_resource(resource)
    assert (got.name if got else None) == want


def test_generations_follow_slices_rules_and_classes() -> None:
    dra = DraObjects()
    s = ResourceSlice.parse({"metadata": {"name": "s"}, "spec": {
        "driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "n1", "devices": [{"name": "a"}]}})
    rule = DeviceTaintRule.parse({"metadata": {"name": "t"}, "spec": {
        "deviceSelector": {"driver": "d"}, "taint": {"key": "k", "effect": "NoSchedule"}}})
    before = dra.slices_generation
    dra.upsert(RESOURCE_SLICES, "s", s)
    assert dra.slices() == (s,)
    dra.upsert(DEVICE_TAINT_RULES, "t", rule)
    assert dra.slices_generation == before + 2
    assert dra.taint_rules() == (rule,)
    dra.remove(RESOURCE_SLICES, "s")
    assert dra.slices() == ()
    classes = dra.classes_generation
    dra.upsert(DEVICE_CLASSES, "c", device_class("c"))
    assert dra.classes_generation == classes + 1
    assert set(dra.keys(DEVICE_CLASSES)) == {"c"}


def test_the_intake_feeds_the_watches_into_the_handle() -> None:
    s, _ = scheduler_of(storage=[{
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "1"},
        "spec": {"devices": {"requests": []}}}])
    handle = ProfileHandle("secondary-scheduler", s)
    assert handle.dra.claim("ns", "c") is not None
    Intake(s).on_dra_object(RESOURCE_CLAIMS, "DELETED", {"metadata": {
        "namespace": "ns", "name": "c"}})
    assert handle.dra.claim("ns", "c") is None


def _share(rng: random.Random, share_id: str) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"shareID": share_id}
    return {"shareID": share_id, "consumedCapacity": {
        rng.choice(("mem", "bw")): f"{rng.randrange(1, 4)}Gi"}}


def test_allocated_devices_follow_counts_through_random_claim_changes() -> None:
    """The devices held, kept as sets as counts leave and reach zero, and the capacity
    their shares consume, are what a claim (watched, assumed or in flight) holds: what
    counting every claim again gives (``GatherAllocatedState``), after each of 400 seeded
    random changes; and no change alters what an earlier read returned."""
    rng = random.Random(7)
    dra = DraObjects()
    names = [f"c{i}" for i in range(12)]
    version = 0
    earlier: list[tuple[Any, dict[Any, dict[str, int]]]] = []
    for _ in range(400):
        name, version = rng.choice(names), version + 1
        results = [result(f"d{rng.randrange(8)}", **(
            _share(rng, f"s{version}-{i}") if rng.random() < 0.3 else {}))
            for i in range(rng.randrange(3))]
        made = claim(name, *results, rv=str(version))
        action = rng.randrange(4)
        if action == 0:
            dra.remove(RESOURCE_CLAIMS, f"ns/{name}")
        elif action == 1:
            dra.assume_after_api_call(made)
        elif action == 2 and results:
            dra.signal_pending_allocation(claim(name, *results, uid=f"flight-{version}"))
        else:
            dra.upsert(RESOURCE_CLAIMS, f"ns/{name}", made)
        if rng.random() < 0.2:
            dra.remove_pending_allocation(f"flight-{version - rng.randrange(5)}", force=True)
        claims = [dra.claim("ns", n) for n in names]
        held = [c.allocation for c in claims if c is not None and c.allocation is not None]
        held += [a for a in (dra.pending_allocation(f"flight-{v}") for v in range(version + 1))
                 if a is not None]
        results_held = [r for a in held for r in a.results]
        state = dra.allocated()
        assert state.devices == {(r.driver, r.pool, r.device) for r in results_held
                                 if r.share_id is None}
        assert state.shared_devices == {(r.driver, r.pool, r.device) for r in results_held
                                        if r.share_id is not None}
        consumed: dict[Any, dict[str, int]] = {}
        for r in results_held:
            for capacity, value in (r.consumed_capacity or {}).items():
                entry = consumed.setdefault((r.driver, r.pool, r.device), {})
                entry[capacity] = entry.get(capacity, 0) + value
        assert {d: dict(c) for d, c in state.consumed.items()} == consumed
        earlier.append((state, consumed))
    assert all({d: dict(c) for d, c in state.consumed.items()} == consumed
               for state, consumed in earlier)
