"""The fast path and the kept node views give what upstream's search gives (``Allocate`` in
``allocator_incubating.go``), on random slices, classes, claims and allocated devices.

Each seed builds a small cluster (node-local pools, pools for all nodes or by label, tainted,
shareable and attribute-less devices), classes with CEL selectors (one fails at run time on
devices without the attribute), claims mixing simple requests with tolerations, selectors,
``All``, constraints, and a set of allocated devices; on every node, ``allocate`` (fast path
where it applies) and ``search`` (the full search alone) must agree: the same results, or the
same error, also from node views kept across cycles and across a slice change."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from scheduler.plugins.dynamic_resources import allocator as allocator_module
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    AllocatorCache,
)
from scheduler.plugins.dynamic_resources.simple import Outcome, allocate_simple

DRIVERS = ("driver-a", "driver-b")
NODES = ("node-1", "node-2", "node-3")
REGIONS = ("region-1", "region-2")
SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
CLASSES = {
    "class-a": 'device.driver == "driver-a"',
    "class-b": 'device.driver == "driver-b"',
    "class-numa": 'device.driver == "driver-a" && device.attributes["driver-a"].numa >= 1',
    "class-any": "true",
}
REQUEST_SELECTORS = (
    'device.attributes["driver-a"].?model.orValue("") == "big"',
    'device.capacity["driver-a"].?memory.orValue(quantity("0")).isGreaterThan(quantity("1Gi"))',
    'device.attributes["driver-b"].model == "small"',  # an error on devices without it
)
TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}


def _device(rng: random.Random, name: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "attributes": {}}
    if rng.random() < 0.95:
        device["attributes"]["numa"] = {"int": rng.randrange(3)}
    if rng.random() < 0.6:
        device["attributes"]["model"] = {"string": rng.choice(("big", "small"))}
    if rng.random() < 0.5:
        device["capacity"] = {"memory": {"value": rng.choice(("1Gi", "2Gi", "4Gi"))}}
    if rng.random() < 0.15:
        device["taints"] = [dict(TAINT, effect=rng.choice(("NoSchedule", "NoExecute", "None")))]
    if rng.random() < 0.05:
        device["allowMultipleAllocations"] = True
        device["capacity"] = {"memory": {"value": "4Gi"}}
    return device


def _slice(rng: random.Random, pool: str, selection: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": f"{pool}-slice"}, "spec": {
        "driver": rng.choice(DRIVERS), **selection,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
        "devices": [_device(rng, f"dev-{i}") for i in range(rng.randrange(6))]}}


def _partitioned(rng: random.Random, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The slice's pool with a counter set in a second slice (partitionable devices), most of
    its devices consuming from it (as scheduler_perf's partitionable slices)."""
    spec = raw["spec"]
    spec["pool"]["resourceSliceCount"] = 2
    counters = ("c1", "c2", "c3")
    for device in spec["devices"]:
        if rng.random() < 0.8:
            device["consumesCounters"] = [{"counterSet": "cs", "counters": {
                name: {"value": str(rng.choice((1, 1, 2)))}
                for name in rng.sample(counters, rng.choice((1, 2)))}}]
    counter_slice = {"metadata": {"name": f"{spec['pool']['name']}-counters"}, "spec": {
        **{k: v for k, v in spec.items() if k != "devices"},
        "sharedCounters": [{"name": "cs", "counters": {
            name: {"value": str(rng.randrange(1, 5))} for name in counters}}]}}
    return [raw, counter_slice]


def _slices(rng: random.Random, counters: bool = False) -> list[ResourceSlice]:
    raw = [
        _slice(rng, f"{node}-p{k}", {"nodeName": node})
        for node in NODES for k in range(rng.randrange(3))
    ]
    if counters:
        raw = [part for s in raw for part in _partitioned(rng, s)]
    if rng.random() < 0.3:
        raw.append(_slice(rng, "everywhere", {"allNodes": True}))
    if rng.random() < 0.3:
        raw.append(_slice(rng, "regional", {"nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "region", "operator": "In",
                                   "values": [rng.choice(REGIONS)]}]}]}}))
    return [ResourceSlice.parse(s) for s in raw]


def _request(rng: random.Random, name: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": rng.choice(list(CLASSES)),
                               "count": rng.choice((1, 1, 1, 2, 3))}
    if rng.random() < 0.15:
        exactly["selectors"] = [{"cel": {"expression": rng.choice(REQUEST_SELECTORS)}}]
    if rng.random() < 0.2:
        exactly["tolerations"] = [{"operator": "Exists", "key": "k"}]
    if rng.random() < 0.05:
        exactly = {"deviceClassName": exactly["deviceClassName"], "allocationMode": "All"}
    return {"name": name, "exactly": exactly}


def _claims(rng: random.Random) -> list[ResourceClaim]:
    claims = []
    for c in range(rng.choice((1, 1, 1, 2))):
        devices: dict[str, Any] = {
            "requests": [_request(rng, f"req-{r}") for r in range(rng.choice((1, 1, 2, 3)))]}
        if rng.random() < 0.3:
            devices["constraints"] = [
                {rng.choice(("matchAttribute", "distinctAttribute")): f"driver-a/{attribute}"}
                for attribute in rng.sample(("numa", "model"), rng.choice((1, 2)))]
        claims.append(ResourceClaim.parse({
            "metadata": {"namespace": "ns", "name": f"claim-{c}"}, "spec": {"devices": devices}}))
    return claims


def _classes() -> dict[str, DeviceClass]:
    return {name: DeviceClass.parse({"metadata": {"name": name}, "spec": {
        "selectors": [{"cel": {"expression": expression}}]}}) for name, expression in
        CLASSES.items()}


def _outcome(call: Any) -> Any:
    try:
        return call()
    except AllocationError as err:
        return (type(err).__name__, str(err))


def _reserve_every_counter_compared(run: Any, candidate: Any) -> bool:
    """``checkAvailableCounters`` as upstream writes it (and this allocator did before it
    kept a count of counters over their limit): add the device's consumption, then compare
    every counter of the pool."""
    available = run._available_counters(candidate.pool)
    consumed = run.consumed_counters.setdefault(candidate.pool.pool_id, {})
    for consumption in candidate.device.consumes_counters:
        counters = consumed.setdefault(consumption.counter_set, {})
        for name, value in consumption.counters.items():
            counters[name] = counters.get(name, 0) + value
    for set_name, limits in available.items():
        for name, value in limits.items():
            if value < consumed.get(set_name, {}).get(name, 0):
                _release_every_counter(run, candidate)
                return False
    return True


def _release_every_counter(run: Any, candidate: Any) -> None:
    consumed = run.consumed_counters[candidate.pool.pool_id]
    for consumption in candidate.device.consumes_counters:
        for name, value in consumption.counters.items():
            consumed[consumption.counter_set][name] -= value


def _one_seed(seed: int, counters: bool = False, monkeypatch: Any = None) -> int:
    """Compares both paths on every node; returns how many nodes the fast path decided.
    ``counters``: the node-local pools are partitionable (``_partitioned``); with
    ``monkeypatch`` the search alone keeps its counters as upstream does
    (``_reserve_every_counter_compared``)."""
    rng = random.Random(seed)
    slices = _slices(rng, counters)
    device_ids = [(s.driver, s.pool, d.name) for s in slices for d in s.devices]
    state = AllocatedState(devices=frozenset(d for d in device_ids if rng.random() < 0.3))
    claims = _claims(rng)
    cache = AllocatorCache()
    decided = 0
    for cycle in range(4):
        # The second cycle reuses the first one's node views (and the outcomes they keep);
        # the third has one slice less a device under a new slices key, and keeps the views
        # of the other nodes; in the fourth other devices are in use.
        if cycle == 2 and slices:
            i = rng.randrange(len(slices))
            slices = [*slices[:i], replace(slices[i], devices=slices[i].devices[1:]),
                      *slices[i + 1:]]
        if cycle == 3:
            state = AllocatedState(devices=frozenset(d for d in device_ids if rng.random() < 0.3))
        allocator = cache.allocator(state, _classes(), slices, slices_key=min(cycle // 2, 1),
                                    new_share_id=lambda: SHARE_ID)
        fresh = Allocator(state, _classes(), slices, cache.cel_cache, lambda: SHARE_ID)
        for node in NODES:
            labels = {"region": REGIONS[(seed + NODES.index(node)) % 2]}
            fast = _outcome(partial(allocator.allocate, node, labels, claims))
            if monkeypatch is not None:
                with monkeypatch.context() as patch:
                    patch.setattr(allocator_module._Run, "_reserve_counters",
                                  _reserve_every_counter_compared)
                    patch.setattr(allocator_module._Run, "_release_counters",
                                  _release_every_counter)
                    full = _outcome(partial(fresh.search, fresh.view.node(node, labels), claims))
            else:
                full = _outcome(partial(fresh.search, fresh.view.node(node, labels), claims))
            assert fast == full, (seed, cycle, node)
            decided += cycle == 0 and _decided_by_fast_path(allocator, node, labels, claims)
    return decided


def _decided_by_fast_path(
    allocator: Allocator, node: str, labels: dict[str, str], claims: list[ResourceClaim]
) -> bool:
    plan = allocator._plan(claims)
    if plan is None:
        return False
    view = allocator.view.node(node, labels)
    found = allocate_simple(plan, view, allocator._in_use, allocator.cel_cache)
    return found is not Outcome.SEARCH


@pytest.mark.parametrize("counting", [False, True])
@pytest.mark.parametrize("block", range(10))
def test_the_fast_path_gives_what_the_search_gives(
    block: int, counting: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``counting``: full nodes are told by counting devices in use from the first one."""
    if counting:
        monkeypatch.setattr(allocator_module, "_COUNT_AFTER_REJECTIONS", 0)
    decided = sum(_one_seed(seed) for seed in range(block * 40, block * 40 + 40))
    # Not vacuous: most claims are simple, so the fast path decides on many nodes.
    assert decided >= 40, decided


@pytest.mark.parametrize("block", range(5))
def test_on_partitionable_devices_the_fast_path_gives_what_the_search_gives(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Devices consuming counters: the fast path never takes one, but rejects a node where
    the claims need more devices than are free (``_infeasible``), as the search would; and
    the counters kept by counting those over their limit decide as upstream's comparison of
    every counter does."""
    decided = sum(_one_seed(seed, True, monkeypatch)
                  for seed in range(block * 40, block * 40 + 40))
    assert decided >= 20, decided


def test_a_cache_keeps_its_view_while_the_slices_key_holds() -> None:
    rng = random.Random(7)
    slices = _slices(rng)
    cache = AllocatorCache()
    first = cache.allocator(AllocatedState(), _classes(), slices, slices_key=1)
    again = cache.allocator(AllocatedState(), _classes(), slices, slices_key=1)
    changed = cache.allocator(AllocatedState(), _classes(), slices, slices_key=2)
    assert first.view is again.view
    assert changed.view is not first.view


@pytest.mark.parametrize("request_", [
    {"name": "r", "exactly": {"deviceClassName": "gpu"}},
    # the full search, whose outcomes a node keeps
    {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "gpu"}]},
])
def test_a_class_changed_under_the_same_slices_key_selects_anew(request_: Any) -> None:
    """Node views keep selectable devices per class *selectors*, and outcomes per claim
    shape with the classes it names, so a class edited in place (same name, same slices) is
    seen at once."""
    slices = [ResourceSlice.parse({"metadata": {"name": "s"}, "spec": {
        "driver": "driver-a", "nodeName": "node-1",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "d0", "attributes": {"numa": {"int": 0}}},
                    {"name": "d1", "attributes": {"numa": {"int": 1}}}]}})]
    claims = [ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {"requests": [request_]}}})]

    def gpu(expression: str) -> dict[str, DeviceClass]:
        return {"gpu": DeviceClass.parse({"metadata": {"name": "gpu"}, "spec": {
            "selectors": [{"cel": {"expression": expression}}]}})}

    cache = AllocatorCache()
    before = cache.allocator(AllocatedState(), gpu("true"), slices, slices_key=1)
    after = cache.allocator(
        AllocatedState(), gpu('device.attributes["driver-a"].numa == 1'), slices, slices_key=1)
    got_before = before.allocate("node-1", {}, claims)
    got_after = after.allocate("node-1", {}, claims)
    assert got_before is not None and got_after is not None
    assert [r.device for r in got_before[0].results] == ["d0"]
    assert [r.device for r in got_after[0].results] == ["d1"]


def test_a_new_slices_key_keeps_the_views_of_nodes_whose_slices_did_not_change() -> None:
    def node_slice(node: str, device: str) -> ResourceSlice:
        return ResourceSlice.parse({"metadata": {"name": node}, "spec": {
            "driver": "driver-a", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": device}]}})

    claims = [ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "class-a"}}]}}})]
    kept, changed = node_slice("node-1", "d0"), node_slice("node-2", "d0")
    cache = AllocatorCache()
    before = cache.allocator(AllocatedState(), _classes(), [kept, changed], slices_key=1)
    for node in ("node-1", "node-2"):
        before.allocate(node, {}, claims)
    after = cache.allocator(
        AllocatedState(), _classes(), [kept, node_slice("node-2", "d1")], slices_key=2)
    got = after.allocate("node-2", {}, claims)
    assert got is not None and [r.device for r in got[0].results] == ["d1"]
    assert after.view.node("node-1", {}) is before.view.node("node-1", {})
    assert after.view.node("node-2", {}) is not before.view.node("node-2", {})


def test_a_device_one_constraint_refuses_leaves_no_trace_in_the_others() -> None:
    """``allocateDevice`` removes the device from the constraints that took it when a later
    one refuses it: d0 (no model) is taken by matchAttribute numa and refused by
    distinctAttribute model; d1 must then be measured against no numa value at all."""
    slices = [ResourceSlice.parse({"metadata": {"name": "s"}, "spec": {
        "driver": "driver-a", "nodeName": "node-1",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "d0", "attributes": {"numa": {"int": 0}}},
                    {"name": "d1", "attributes": {"numa": {"int": 1},
                                                  "model": {"string": "big"}}}]}})]
    claims = [ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {
            "requests": [{"name": "r", "exactly": {"deviceClassName": "class-a"}}],
            "constraints": [{"matchAttribute": "driver-a/numa"},
                            {"distinctAttribute": "driver-a/model"}]}}})]
    allocator = AllocatorCache().allocator(AllocatedState(), _classes(), slices, slices_key=1)
    plan = allocator._plan(claims)
    assert plan is not None
    node = allocator.view.node("node-1", {})
    fast = allocate_simple(plan, node, allocator._in_use, allocator.cel_cache)
    assert fast == allocator.search(node, claims)
    assert isinstance(fast, list) and [r.device for r in fast[0].results] == ["d1"]


def test_a_device_that_cannot_be_converted_fails_a_driver_class_on_both_paths() -> None:
    """``DeviceMatches`` converts the device before evaluating even ``device.driver == ...``;
    a version that is not semver is a runtime error of the class's selector."""
    slices = [ResourceSlice.parse({"metadata": {"name": "s"}, "spec": {
        "driver": "driver-a", "nodeName": "node-1",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "d0", "attributes": {"v": {"version": "1.0"}}}]}})]
    claims = [ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "class-a"}}]}}})]
    allocator = AllocatorCache().allocator(AllocatedState(), _classes(), slices, slices_key=1)
    want = ("AllocationError", "class class-a: selector #0 on device driver-a/p/d0: CEL runtime "
            'error: attribute v: parse semantic version: No Major.Minor.Patch elements found')
    assert _outcome(partial(allocator.allocate, "node-1", {}, claims)) == want
    assert _outcome(partial(allocator.search, allocator.view.node("node-1", {}), claims)) == want


@pytest.mark.parametrize("seed", range(60))
def test_a_full_node_told_by_counting_is_one_the_walk_rejects(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every device a candidate, many in use, allocated IDs of devices that do not exist
    and pools of several slices: counting the devices in use per slice rejects exactly the
    nodes the search rejects."""
    monkeypatch.setattr(allocator_module, "_COUNT_AFTER_REJECTIONS", 0)
    rng = random.Random(seed)
    raw = []
    for node in NODES:
        for k in range(rng.randrange(3)):
            count = rng.choice((1, 1, 2))
            for part in range(count):
                raw.append({"metadata": {"name": f"{node}-{k}-{part}"}, "spec": {
                    "driver": "driver-a", "nodeName": node,
                    "pool": {"name": f"{node}-{k}", "generation": 1,
                             "resourceSliceCount": count},
                    "devices": [{"name": f"d{part}-{i}"} for i in range(rng.randrange(4))]}})
    slices = [ResourceSlice.parse(s) for s in raw]
    ids = [(s.driver, s.pool, d.name) for s in slices for d in s.devices]
    ghosts = [("driver-a", f"{node}-0", "gone") for node in NODES]
    claims = [ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "class-a"}}]}}})]
    cache = AllocatorCache()
    # The first cycle has every device in use; in each next one some are freed and some
    # taken again, as pods come and go (counted from the last cycle's counts).
    in_use = set(ids + ghosts)
    for _ in range(5):
        state = AllocatedState(devices=frozenset(in_use))
        allocator = cache.allocator(state, _classes(), slices, slices_key=1)
        fresh = Allocator(state, _classes(), slices, cache.cel_cache)
        for node in NODES:
            fast = _outcome(partial(allocator.allocate, node, {}, claims))
            assert fast == _outcome(partial(fresh.search, fresh.view.node(node, {}), claims))
        in_use -= set(rng.sample(sorted(in_use), len(in_use) // 5))
        in_use |= set(rng.sample(ids + ghosts, min(2, len(ids))))
    assert allocator._in_use_per_slice is not None


def test_a_node_in_the_same_state_gets_its_outcome_again_with_new_share_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The outcome a node keeps is given again without the search while neither the claims'
    shape nor the state of the node's devices changed; each call's shares get new IDs (as
    each of upstream's searches makes new ones); a device of the node in use searches anew."""
    slices = [ResourceSlice.parse({"metadata": {"name": "s"}, "spec": {
        "driver": "driver-a", "nodeName": "node-1",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"d{i}", "allowMultipleAllocations": True,
                     "capacity": {"memory": {"value": "4Gi"}}} for i in range(2)]}})]

    def claim(name: str) -> ResourceClaim:
        return ResourceClaim.parse({"metadata": {"namespace": "ns", "name": name}, "spec": {
            "devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "class-a", "capacity": {"requests": {"memory": "1Gi"}}}}]}}})

    searches = []
    search = allocator_module.Allocator._search
    monkeypatch.setattr(allocator_module.Allocator, "_search",
                        lambda self, *a: searches.append(1) or search(self, *a))
    ids = iter(range(100))
    cache = AllocatorCache()
    got = []
    shared = frozenset({("driver-a", "p", "d1")})
    for cycle, in_use in enumerate((frozenset(), frozenset(), shared)):
        allocator = cache.allocator(
            AllocatedState(shared_devices=in_use,
                           aggregated_capacity={d: {"memory": 2**30 * 10**9} for d in in_use}),
            _classes(), slices, slices_key=1, new_share_id=lambda: f"share-{next(ids)}")
        found = allocator.allocate("node-1", {}, [claim(f"c{cycle}")])
        assert found is not None
        got.append(found[0].results[0])
    assert len(searches) == 2
    assert [r.device for r in got] == ["d0", "d0", "d0"]
    assert len({r.share_id for r in got}) == 3
    assert got[0].consumed_capacity == got[1].consumed_capacity


def test_share_ids_are_distinct_uuids_within_a_cycle_and_across_cycles() -> None:
    """``GenerateNewShareID`` makes a new UUID for every share."""
    cycles = [allocator_module.ShareIds() for _ in range(2)]
    ids = [ids() for ids in cycles for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    assert all(str(uuid.UUID(i)) == i and uuid.UUID(i).version == 4 for i in ids)
