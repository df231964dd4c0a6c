"""The structured allocator: which devices of a node satisfy a pod's unallocated claims.

Upstream: ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/
allocator_incubating.go`` (with ``constraint.go`` and ``consumable_capacity.go``), the
"incubating" allocator that kube-scheduler v1.37.2 picks with its default feature gates:
prioritized lists, admin access, device taints, partitionable devices, consumable capacity
and binding conditions are on; DRAFractionalCapacityRange, list-type and derived attributes
and compatibility groups are off.

The search is upstream's, step for step, because the order decides *which* devices a claim
gets: depth first over claims, their requests and each request's devices; pools in
``gather_pools`` order, slices by name, devices in slice order; within one request only
combinations are tried (each next device comes after the previous one); on a dead end the
last device is rolled back and the next candidate tried; the first complete solution wins.

``Allocator`` is built once per scheduling cycle (PreFilter) and ``allocate`` runs per node
(Filter). It does no I/O. An ``AllocationError`` is upstream's ``error`` (an Error status for
the pod); ``None`` means no solution on this node.

How a plugin should use it, for speed::

    cache = AllocatorCache(SelectorCache())            # once, kept for the scheduler's life
    # PreFilter, once per cycle (cheap):
    allocator = cache.allocator(allocated, classes, slices, slices_key=dra.slices_generation)
    # Filter, per node:
    results = allocator.allocate(node_name, node_labels, claims)

``slices_key`` must change whenever a slice or a DeviceTaintRule changes (``slices`` with the
rules applied); while it does not, every node's pools and, per class and request selectors,
its selectable devices (``view.SliceView``) are reused across cycles. When it changes, a
node whose slices are the same objects as before keeps them too, so pass unchanged slices
as the same objects (as the DRA manager's store does). Classes may change
without a new key. ``Allocator(allocated, classes, slices, cel_cache)`` alone still works and
keeps those for the one cycle. Pass the same claim objects to every ``allocate`` of a cycle:
the fast path's plan is found once per cycle by their identities.

Simple claim sets (every request ``exactly`` one device class, ``ExactCount``, no admin
access, capacity requests or constraints) take the fast path of ``simple.py``, which gives
exactly the devices the full search gives; anything else, or a node whose devices need more
(shared devices, counters, CEL or capacity errors), runs the full search.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial

from scheduler.plugin_api import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceID,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
    SelectorCache,
)
from scheduler.plugins.dynamic_resources import capacity as cap
from scheduler.plugins.dynamic_resources.constraints import Constraint, make_constraint
from scheduler.plugins.dynamic_resources.pools import Pool
from scheduler.plugins.dynamic_resources.results import claim_configs
from scheduler.plugins.dynamic_resources.simple import (
    Outcome,
    SimplePlan,
    allocate_simple,
    simple_plan,
)
from scheduler.plugins.dynamic_resources.view import (
    AllocationError,
    Candidate,
    FailedOnNodeError,
    NodeView,
    SliceView,
    claim_ref,
    device_id_str,
    node_selector,
    selectable,
    taint_prevents,
)

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "AllocatorCache",
    "Deadline",
    "FailedOnNodeError",
    "SearchTimeoutError",
    "apply_taint_rules",
]


class SearchTimeoutError(Exception):
    """The deadline passed while ``allocate`` ran (upstream's ``filter operation aborted:
    context deadline exceeded``)."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """When ``allocate`` must give up: upstream's Filter context with ``filterTimeout``,
    which its search checks at every step (``allocateOne``)."""

    clock: Callable[[], float]
    at: float

    def check(self) -> None:
        if self.clock() >= self.at:
            raise SearchTimeoutError


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """Devices already allocated or in flight (``AllocatedState``).

    ``aggregated_capacity`` sums the capacity consumed per shareable device; ``shared_devices``
    names the shareable devices with at least one share.
    """

    devices: frozenset[DeviceID] = frozenset()
    shared_devices: frozenset[DeviceID] = frozenset()
    aggregated_capacity: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """``IsDeviceAllocated``: whole, or with a share or consumed capacity."""
        return (
            device_id in self.devices
            or device_id in self.shared_devices
            or device_id in self.aggregated_capacity
        )


def apply_taint_rules(
    slices: Sequence[ResourceSlice], rules: Sequence[DeviceTaintRule]
) -> list[ResourceSlice]:
    """The slices with each rule's taint added to the devices it selects (the slice tracker)."""
    if not rules:
        return list(slices)
    result = []
    for s in slices:
        devices = tuple(_tainted(s, d, rules) for d in s.devices)
        result.append(s if devices == s.devices else replace(s, devices=devices))
    return result


def _tainted(s: ResourceSlice, device: Device, rules: Sequence[DeviceTaintRule]) -> Device:
    added = tuple(r.taint for r in rules if r.selects(s.driver, s.pool, device.name))
    return replace(device, taints=device.taints + added) if added else device


@dataclass(slots=True)
class _RequestData:
    request: DeviceSubRequest
    parent: DeviceRequest | None
    device_class: DeviceClass
    num_devices: int = 0
    all_devices: list[Candidate] | None = None
    selected_sub_request: int = 0

    @property
    def name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


@dataclass(slots=True)
class _DeviceResult:
    candidate: Candidate
    request: DeviceSubRequest
    parent_name: str
    share_id: str | None = None
    consumed: dict[str, int] | None = None

    @property
    def request_name(self) -> str:
        if self.parent_name:
            return f"{self.parent_name}/{self.request.name}"
        return self.request.name


class Allocator:
    """One cycle's view: allocated devices, classes and slices (DeviceTaintRules applied).

    ``view`` is the slices' ``SliceView`` when the caller keeps one across cycles
    (``AllocatorCache``); without it the allocator builds its own, kept for this cycle.
    """

    def __init__(
        self,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        cel_cache: SelectorCache,
        new_share_id: Callable[[], str] | None = None,
        view: SliceView | None = None,
    ) -> None:
        self.allocated = allocated
        self.classes = classes
        self.view = view if view is not None else SliceView(slices)
        self.cel_cache = cel_cache
        self.new_share_id = new_share_id if new_share_id is not None else ShareIds()
        self.available_counters: dict[str, dict[str, dict[str, int]]] = {}
        self._in_use = (allocated.devices, allocated.aggregated_capacity)
        self._plans: dict[tuple[int, ...], SimplePlan | None] = {}
        self._shapes: dict[tuple[int, ...], tuple[tuple[ResourceClaim, ...], int]] = {}
        # Nodes the fast path rejected in this cycle, and then the devices in use per slice
        # (by the slice's id), so that a full node is told by counting (``_all_in_use``).
        self._rejections = 0
        self._in_use_per_slice: dict[int, int] | None = None

    def allocate(
        self, node_name: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim],
        deadline: Deadline | None = None,
    ) -> list[AllocationResult] | None:
        """``Allocator.Allocate``: one result per claim, or None if this node has no solution;
        :class:`SearchTimeoutError` once ``deadline`` has passed.

        Except for one plain device on a node without shared or partitionable devices (the
        fast path's cheapest case), the outcome is kept on the node's view, by the claims'
        shape and the state of the node's devices, which is all it depends on: a node in the
        same state gets it again, with new share IDs, without the search."""
        node = self.view.node(node_name, labels)
        plan = self._plan(claims)
        if plan is not None and plan.single is not None and not node.shares_or_counters:
            found = self._allocate(node, plan, claims, deadline)
        else:
            state = self.allocated
            key = (self._shape_id(claims), node.state_key(
                state.devices, state.shared_devices, state.aggregated_capacity))
            try:
                kept = node.outcomes[key]
            except KeyError:
                found = self._allocate(node, plan, claims, deadline)
                node.remember(key, None if found is None else tuple(found))
            else:
                # Where the search's last step would have checked it.
                if deadline is not None:
                    deadline.check()
                found = None if kept is None else self._fresh(kept)
        if found is None and node.any_invalid:
            raise FailedOnNodeError("invalid resource pools were encountered")
        return found

    def search(
        self, node: NodeView, claims: Sequence[ResourceClaim], deadline: Deadline | None = None
    ) -> list[AllocationResult] | None:
        """The full search (upstream's ``Allocate``), without the fast path."""
        found = self._search(node, claims, deadline)
        if found is None and node.any_invalid:
            raise FailedOnNodeError("invalid resource pools were encountered")
        return found

    def _allocate(
        self, node: NodeView, plan: SimplePlan | None, claims: Sequence[ResourceClaim],
        deadline: Deadline | None,
    ) -> list[AllocationResult] | None:
        """The fast path where it decides, else the full search (invalid pools not told)."""
        if plan is not None:
            if plan.requests_devices and self._all_in_use(node):
                found: list[AllocationResult] | Outcome | None = None
            else:
                found = allocate_simple(plan, node, self._in_use, self.cel_cache)
            if found is None:
                self._rejections += 1
            if found is not Outcome.SEARCH:
                # Where the search's last step would have checked it.
                if deadline is not None:
                    deadline.check()
                return found
        return self._search(node, claims, deadline)

    def _search(
        self, node: NodeView, claims: Sequence[ResourceClaim], deadline: Deadline | None
    ) -> list[AllocationResult] | None:
        run = _Run(self, node, claims, deadline)
        run.prepare()
        try:
            done = run.allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceededError as err:
            raise AllocationError("allocation max size exceeded") from err
        if not done:
            return None
        return [run.result_for(i) for i in range(len(claims))]

    def _fresh(self, kept: tuple[AllocationResult, ...]) -> list[AllocationResult]:
        """A kept outcome for this call: every share gets a new ID, as each allocation's
        shares are its own."""
        return [
            replace(result, results=tuple(
                r if r.share_id is None else _with_share_id(r, self.new_share_id())
                for r in result.results))
            if any(r.share_id is not None for r in result.results) else result
            for result in kept
        ]

    def _shape_id(self, claims: Sequence[ResourceClaim]) -> int:
        """The claims' shape (their specs and the classes they name: all an allocation
        reads of them) as the view numbers it, found once per cycle by their identities."""
        key = tuple([id(c) for c in claims])
        known = self._shapes.get(key)
        if known is not None:
            return known[1]
        names = [
            sub.device_class_name
            for claim in claims for request in claim.spec.requests
            for sub in ((request.exactly,) if request.exactly is not None
                        else request.first_available)
        ]
        found = self.view.shape_id(
            (tuple(c.spec for c in claims), tuple(self.classes.get(n) for n in names)))
        if len(self._shapes) >= _MAX_PLANS:
            self._shapes.clear()
        # The claims are kept with their number: a key of ids must not outlive them.
        self._shapes[key] = (tuple(claims), found)
        return found

    def _all_in_use(self, node: NodeView) -> bool:
        """Whether every device the search would look at on this node is in use, told by
        counting, which a cycle starts once it has rejected enough nodes: a claim set that
        asks for a device has no solution there (the search skips devices in use first)."""
        if self._in_use_per_slice is None:
            if self._rejections < _COUNT_AFTER_REJECTIONS:
                return False
            self._in_use_per_slice = self.view.in_use_per_slice(self.allocated.devices)
        counts = self._in_use_per_slice
        return sum(counts.get(id(s), 0) for s in node.usable_slices) >= node.usable_devices

    def _plan(self, claims: Sequence[ResourceClaim]) -> SimplePlan | None:
        """The claims' fast-path plan, found once per cycle (by the claims' identities)."""
        key = tuple([id(c) for c in claims])
        try:
            return self._plans[key]
        except KeyError:
            pass
        plan = simple_plan(claims, self.classes, self.view)
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[key] = plan
        return plan


class ShareIds:
    """New share IDs for one cycle (``GenerateNewShareID``, a new UUID each): UUIDs of
    version 4 form, one random base and a counter from a random start, since a Filter over
    hundreds of nodes asks for one per share on each (only the chosen node's are written)."""

    def __init__(self) -> None:
        h = os.urandom(16).hex()
        self._base = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-"
        self._count = itertools.count(int(h[20:], 16))  # next() is atomic under the GIL

    def __call__(self) -> str:
        return f"{self._base}{next(self._count) & 0xFFFF_FFFF_FFFF:012x}"


_RESULT_FIELDS = tuple(f.name for f in fields(DeviceRequestAllocationResult))
_SHARE_ID_FIELD = _RESULT_FIELDS.index("share_id")


def _with_share_id(
    result: DeviceRequestAllocationResult, share_id: str
) -> DeviceRequestAllocationResult:
    """``replace(result, share_id=...)``, built directly (``replace`` costs several times
    more, and a hit on a node of shared devices makes one per share)."""
    values = [getattr(result, name) for name in _RESULT_FIELDS]
    values[_SHARE_ID_FIELD] = share_id
    return DeviceRequestAllocationResult(*values)


class AllocatorCache:
    """What the allocator keeps across scheduling cycles: one per scheduler, long-lived.

    ``allocator(...)`` is called once per cycle and is cheap; while ``slices_key`` is the
    same as the last call's, the nodes' pools and device candidates of earlier cycles are
    reused. ``slices_key`` must change whenever a ResourceSlice or DeviceTaintRule changes.
    """

    def __init__(self, cel_cache: SelectorCache | None = None) -> None:
        self.cel_cache = cel_cache if cel_cache is not None else SelectorCache()
        self._view: SliceView | None = None
        self._key: Hashable = None

    def allocator(
        self,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        slices_key: Hashable,
        new_share_id: Callable[[], str] | None = None,
    ) -> Allocator:
        if self._view is None or self._key != slices_key:
            self._view = SliceView(slices, self._view)
            self._key = slices_key
        return Allocator(allocated, classes, slices, self.cel_cache, new_share_id, self._view)


class _MaxSizeExceededError(Exception):
    """``errAllocationResultMaxSizeExceeded``: more than 32 devices in one claim."""


RequestKey = tuple[int, int, int]
# Rejected nodes after which a cycle counts the devices in use per slice: counting costs a
# pass over the allocated devices, checking a full node one by one costs ten look-ups.
_COUNT_AFTER_REJECTIONS = 64
# Fast-path plans kept per cycle; a cycle sees one pod's claims, so this bounds a misuse.
_MAX_PLANS = 64
Location = tuple[int, int, int]


class _Run:
    """One ``Allocate`` call: the search state (``allocator`` in upstream's code)."""

    def __init__(self, alloc: Allocator, node: NodeView, claims: Sequence[ResourceClaim],
                 deadline: Deadline | None = None) -> None:
        self.a = alloc
        self.deadline = deadline
        self.node = node
        self.claims = claims
        self.pools = node.pools
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.matches: dict[RequestKey, dict[DeviceID, bool]] = {}
        self.constraints: list[list[Constraint]] = []
        self.consumed_counters: dict[str, dict[str, dict[str, int]]] = {}
        # Per pool, how many counters ``consumed_counters`` takes beyond what is available.
        self.counters_over: dict[str, int] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, int]] = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in claims]

    # --- preparation (validation before the search) ------------------------------------

    def prepare(self) -> None:
        for ci, claim in enumerate(self.claims):
            min_per_claim = 0
            for ri, request in enumerate(claim.spec.requests):
                min_per_request = self._prepare_request(ci, ri, claim, request)
                if min_per_request > ALLOCATION_RESULTS_MAX_SIZE - min_per_claim:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: adding "
                        f"{min_per_request} devices exceeds the claim limit of "
                        f"{ALLOCATION_RESULTS_MAX_SIZE}, with {min_per_claim} already accounted for"
                    )
                min_per_claim += min_per_request
            constraints = []
            for i, c in enumerate(claim.spec.constraints):
                made = make_constraint(c)
                if made is None:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
                constraints.append(made)
            self.constraints.append(constraints)

    def _prepare_request(
        self, ci: int, ri: int, claim: ResourceClaim, request: DeviceRequest
    ) -> int:
        if request.exactly is not None:
            data = self._validate(ci, (ci, ri, 0), request.exactly, None)
            self.request_data[(ci, ri, 0)] = data
            return data.num_devices
        lowest = None
        for si, sub in enumerate(request.first_available):
            data = self._validate(ci, (ci, ri, si), sub, request)
            self.request_data[(ci, ri, si)] = data
            lowest = data.num_devices if lowest is None else min(lowest, data.num_devices)
        return lowest or 0

    def _validate(
        self, ci: int, key: RequestKey, req: DeviceSubRequest, parent: DeviceRequest | None
    ) -> _RequestData:
        """``validateDeviceRequest``."""
        claim = self.claims[ci]
        where = f"claim {claim_ref(claim)}, request {req.name}"
        for i, selector in enumerate(req.selectors):
            if selector is None:
                raise AllocationError(
                    f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        if not req.device_class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        device_class = self.a.classes.get(req.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"{where}: could not retrieve device class {req.device_class_name}: "
                f'deviceclass.resource.k8s.io "{req.device_class_name}" not found'
            )
        data = _RequestData(req, parent, device_class)
        if req.allocation_mode != ALL:
            data.num_devices = req.count
            return data
        data.all_devices = list(self._all_devices(key, data, where))
        data.num_devices = len(data.all_devices)
        return data

    def _all_devices(self, key: RequestKey, data: _RequestData, where: str) -> Iterator[Candidate]:
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.pool_id} "
                    "is currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.pool_id} "
                    "is currently invalid"
                )
            for s in pool.slices:
                for device in s.devices:
                    candidate = Candidate((s.driver, s.pool, device.name), device, s, pool)
                    if self._selectable(key, data, candidate) and self._fits_alone(
                        data.request, device, where
                    ):
                        yield candidate

    @staticmethod
    def _fits_alone(request: DeviceSubRequest, device: Device, where: str) -> bool:
        """The static capacity check of mode All (nothing allocated counts)."""
        try:
            return cap.fits({}, request.capacity_requests, device.capacity, {})
        except cap.CapacityError as err:
            raise AllocationError(
                f"{where}: checking capacity for device {device.name}: {err}"
            ) from err

    # --- the search --------------------------------------------------------------------

    def allocate_one(
        self, ci: int, ri: int, si: int, di: int, sub: bool, start: Location
    ) -> bool:
        """``allocateOne``: place device ``di`` of request ``ri`` (subrequest ``si``) of claim
        ``ci`` and everything after it; True when a complete solution was found."""
        if self.deadline is not None:
            self.deadline.check()
        if ci >= len(self.claims):
            return True
        if ri >= len(self.claims[ci].spec.requests):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceededError:
                return False
        data = self.request_data[(ci, ri, si)]
        if not sub and data.parent is not None:
            return self._allocate_first_available(ci, ri)
        if data.request.allocation_mode == ALL and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - len(self.results[ci]):
            raise _MaxSizeExceededError
        if data.all_devices is not None:
            return self._allocate_fixed(ci, ri, si, di, sub, data.all_devices[di])
        return self._allocate_search(ci, ri, si, di, sub, start, data)

    def _allocate_first_available(self, ci: int, ri: int) -> bool:
        all_exceeded = True
        si = 0
        while (ci, ri, si) in self.request_data:
            try:
                done = self.allocate_one(ci, ri, si, 0, True, (0, 0, 0))
            except _MaxSizeExceededError:
                si += 1
                continue
            all_exceeded = False
            if done:
                self.request_data[(ci, ri, 0)].selected_sub_request = si
                return True
            si += 1
        if all_exceeded:
            raise _MaxSizeExceededError
        return False

    def _allocate_fixed(
        self, ci: int, ri: int, si: int, di: int, sub: bool, candidate: Candidate
    ) -> bool:
        undo = self._allocate_device(ci, ri, si, candidate, must=True)
        if undo is None:
            return False
        try:
            done = self.allocate_one(ci, ri, si, di + 1, sub, (0, 0, 0))
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _candidates(self, start: Location) -> Iterator[tuple[Location, Candidate]]:
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start[1] if pi == start[0] else 0
            for sli in range(first_slice, len(pool.slices)):
                s = pool.slices[sli]
                first_device = start[2] if (pi, sli) == start[:2] else 0
                for dvi in range(first_device, len(s.devices)):
                    device = s.devices[dvi]
                    candidate = Candidate((pool.driver, pool.name, device.name), device, s, pool)
                    yield (pi, sli, dvi + 1), candidate

    def _allocate_search(
        self, ci: int, ri: int, si: int, di: int, sub: bool, start: Location, data: _RequestData
    ) -> bool:
        admin = bool(data.request.admin_access)
        for next_location, candidate in self._candidates(start):
            device_id = candidate.device_id
            if admin and ci in self.allocating.get(device_id, ()):
                continue
            if not admin and self._in_use(device_id):
                continue
            if not self._selectable((ci, ri, si), data, candidate):
                continue
            if not self._capacity_fits(ci, data.request, candidate, "checking"):
                continue
            undo = self._allocate_device(ci, ri, si, candidate, must=False)
            if undo is None:
                continue
            try:
                done = self.allocate_one(ci, ri, si, di + 1, sub, next_location)
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    # --- one device ----------------------------------------------------------------------

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.devices or bool(self.allocating.get(device_id))

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        state = self.a.allocated
        return (
            device_id in state.aggregated_capacity
            or device_id in state.shared_devices
            or device_id in self.allocating_capacity
        )

    def _capacity_fits(
        self, ci: int, request: DeviceSubRequest, candidate: Candidate, verb: str
    ) -> bool:
        """``CmpRequestOverCapacity`` with what is allocated and what this call allocates."""
        device_id = candidate.device_id
        try:
            return cap.fits(
                self.a.allocated.aggregated_capacity.get(device_id, {}),
                request.capacity_requests,
                candidate.device.capacity,
                self.allocating_capacity.get(device_id, {}),
            )
        except cap.CapacityError as err:
            raise AllocationError(
                f"claim {claim_ref(self.claims[ci])}, request {request.name}: {verb} capacity "
                f"for device {device_id_str(device_id)}: {err}"
            ) from err

    def _allocate_device(
        self, ci: int, ri: int, si: int, candidate: Candidate, must: bool
    ) -> Callable[[], None] | None:
        """``allocateDevice``: take the device for the request, or None; returns the undo."""
        data = self.request_data[(ci, ri, si)]
        request, device, device_id = data.request, candidate.device, candidate.device_id
        shareable = bool(device.allow_multiple_allocations)
        admin = bool(request.admin_access)
        if not shareable and admin and ci in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        undo: list[Callable[[], None]] = []

        def rollback() -> None:
            for step in reversed(undo):
                step()

        if (not shareable or not self._capacity_in_use(device_id)) and device.consumes_counters:
            if not self._reserve_counters(candidate):
                return None
            undo.append(lambda: self._release_counters(candidate))
        base = data.parent.name if data.parent is not None else request.name
        sub_name = request.name if data.parent is not None else ""
        if taint_prevents(device, request):
            rollback()
            return None
        for constraint in self.constraints[ci]:
            if not constraint.add(base, sub_name, device, device_id):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim_ref(self.claims[ci])}, request {request.name}: cannot add "
                        f"device {device_id_str(device_id)} because a claim constraint would not "
                        "be satisfied"
                    )
                return None
            undo.append(partial(constraint.remove, base, sub_name))
        result = _DeviceResult(candidate, request, base if data.parent is not None else "")
        if not shareable:
            self.allocating.setdefault(device_id, set()).add(ci)
            undo.append(lambda: self.allocating[device_id].discard(ci))
        try:
            fits = self._capacity_fits(ci, request, candidate, "rechecking")
        except AllocationError:
            rollback()
            raise
        if not fits:
            rollback()
            return None
        if shareable:
            consumed = cap.consumed_capacity(request.capacity_requests, device.capacity)
            result.share_id = self.a.new_share_id()
            result.consumed = consumed or None
            existed = device_id in self.allocating_capacity
            self._add_allocating_capacity(device_id, consumed)
            undo.append(partial(self._remove_allocating_capacity, device_id, consumed, existed))
        self.results[ci].append(result)
        undo.append(partial(self._drop_last_result, ci))
        return rollback

    def _drop_last_result(self, ci: int) -> None:
        self.results[ci].pop()

    def _add_allocating_capacity(self, device_id: DeviceID, consumed: Mapping[str, int]) -> None:
        entry = self.allocating_capacity.setdefault(device_id, {})
        for name, value in consumed.items():
            entry[name] = entry.get(name, 0) + value

    def _remove_allocating_capacity(
        self, device_id: DeviceID, consumed: Mapping[str, int], existed: bool
    ) -> None:
        """``ConsumedCapacityCollection.Remove``, which drops an emptied entry; an entry that
        existed before this share is kept, empty, because it marks the device's counters
        as already charged (``deviceCapacityInUse``)."""
        entry = self.allocating_capacity.get(device_id)
        if entry is None:
            return
        for name, value in consumed.items():
            if name in entry:
                entry[name] -= value
        if all(v == 0 for v in entry.values()):
            del self.allocating_capacity[device_id]
            if existed:
                self.allocating_capacity[device_id] = {}

    def _selectable(self, key: RequestKey, data: _RequestData, candidate: Candidate) -> bool:
        """``isSelectable``, memoised per device and selectors on the node's view, so across
        calls and cycles (an error is raised each time, never kept)."""
        memo = self.matches.get(key)
        if memo is None:
            memo = self.matches[key] = self.node.verdicts_for(
                (data.device_class.selectors, data.request.selectors)
            )
        found = memo.get(candidate.device_id)
        if found is None:
            found = selectable(
                self.a.cel_cache,
                (f"class {data.device_class.name}", f"claim {claim_ref(self.claims[key[0]])}"),
                (data.device_class.selectors, data.request.selectors),
                candidate,
                self.node.node,
            )
            memo[candidate.device_id] = found
        return found

    # --- counters (partitionable devices) ------------------------------------------------

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, int]]:
        """Counter sets minus what allocated devices of the pool consume (cached per cycle)."""
        cached = self.a.available_counters.get(pool.pool_id)
        if cached is not None:
            return cached
        available = {name: dict(cs.counters) for name, cs in pool.counter_sets.items()}
        for s in (*pool.slices, *pool.other_slices):
            for device in s.devices:
                if not self.a.allocated.is_allocated((s.driver, s.pool, device.name)):
                    continue
                for consumption in device.consumes_counters:
                    counters = available.get(consumption.counter_set, {})
                    for name, value in consumption.counters.items():
                        if name in counters:
                            counters[name] -= value
        self.a.available_counters[pool.pool_id] = available
        return available

    def _reserve_counters(self, candidate: Candidate) -> bool:
        """``checkAvailableCounters``: add the device's consumption; every counter of the
        pool must hold (upstream compares them all: the pool's count of counters over their
        limit, kept as consumption changes, tells the same)."""
        if self._consume_counters(candidate, 1):
            self._consume_counters(candidate, -1)
            return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        self._consume_counters(candidate, -1)

    def _consume_counters(self, candidate: Candidate, sign: int) -> int:
        """Adds (``sign`` 1) or takes back (-1) the device's consumption; returns how many
        counters of its pool are now consumed beyond what is available."""
        pool_id = candidate.pool.pool_id
        available = self._available_counters(candidate.pool)
        consumed = self.consumed_counters.setdefault(pool_id, {})
        over = self.counters_over.get(pool_id)
        if over is None:
            over = sum(v < 0 for counters in available.values() for v in counters.values())
        for consumption in candidate.device.consumes_counters:
            limits = available.get(consumption.counter_set, {})
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, value in consumption.counters.items():
                before = counters.get(name, 0)
                after = counters[name] = before + sign * value
                limit = limits.get(name)
                if limit is not None:
                    over += (after > limit) - (before > limit)
        self.counters_over[pool_id] = over
        return over

    # --- the result ------------------------------------------------------------------------

    def result_for(self, ci: int) -> AllocationResult:
        claim = self.claims[ci]
        results = tuple(
            DeviceRequestAllocationResult(
                request=r.request_name,
                driver=r.candidate.device_id[0],
                pool=r.candidate.device_id[1],
                device=r.candidate.device_id[2],
                admin_access=True if r.request.admin_access else None,
                tolerations=r.request.tolerations,
                binding_conditions=r.candidate.device.binding_conditions,
                binding_failure_conditions=r.candidate.device.binding_failure_conditions,
                share_id=r.share_id,
                consumed_capacity=r.consumed,
            )
            for r in self.results[ci]
        )
        names = [self._selected(ci, ri).name for ri in range(len(claim.spec.requests))]
        classes = [self._selected(ci, ri).device_class for ri in range(len(claim.spec.requests))]
        return AllocationResult(
            results=results,
            config=claim_configs(claim, names, classes),
            node_selector=node_selector(
                self.node, [(r.request_name, r.candidate) for r in self.results[ci]]
            ),
        )

    def _selected(self, ci: int, ri: int) -> _RequestData:
        data = self.request_data[(ci, ri, 0)]
        if data.parent is None:
            return data
        return self.request_data[(ci, ri, data.selected_sub_request)]
