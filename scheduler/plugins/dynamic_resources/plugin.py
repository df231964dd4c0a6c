"""DynamicResources: pods get devices through ResourceClaims (upstream
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``, v1.37.2).

- **PreEnqueue**: every claim the pod names exists (a template's claim is created by the
  resourceclaim controller and named in ``status.resourceClaimStatuses``), is not being
  deleted, and a template's claim is owned by the pod.
- **PreFilter** reads the pod's claims from the DRA manager (assumed versions included): an
  allocated claim restricts the pod to its allocation's node selector; an unallocated one
  whose allocation is in flight for another pod makes the pod wait; the others get the
  structured allocator, built once for the cycle from the devices allocated or in flight,
  the classes and the slices with DeviceTaintRules applied. Pods without claims Skip.
- **Filter** runs the allocator per node. Every rejection is UnschedulableAndUnresolvable,
  as upstream's ``statusUnschedulable`` makes them: preemption never evicts for devices.
- **PostFilter** deallocates one allocated claim of the pod that no other pod uses and that
  did not fit, before DefaultPreemption evicts anybody.
- **Score** (DRAPrioritizedList): prefers nodes where ``firstAvailable`` got an earlier
  subrequest.
- **Reserve** marks the node's allocations in flight (no later cycle hands out these
  devices); **Unreserve** drops them and takes the pod out of ``reservedFor``.
- **PreBind** writes each claim: finalizer, allocation, the pod in ``reservedFor``
  (``binding.py``), then waits for the binding conditions of the devices that have some.

Not done, unlike upstream: DRA-backed extended resources (DRAExtendedResource) and the
Event ``BindingConditionsPending``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    AllocatedDevices,
    AllocationResult,
    ClusterSnapshot,
    Code,
    CycleState,
    Diagnosis,
    FilterResult,
    Handle,
    IntArray,
    NodeSelector,
    NodeView,
    PluginSpec,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    ResourceClaim,
    ResourceSlice,
    SelectorCache,
    Status,
)
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    FailedOnNodeError,
    apply_taint_rules,
)
from scheduler.plugins.dynamic_resources.args import DEFAULT_ARGS, seconds, validate_args
from scheduler.plugins.dynamic_resources.binding import BindError, bind_claim
from scheduler.plugins.dynamic_resources.claim_writes import (
    FINALIZER,
    claim_path,
    deallocated,
    unreserve_patch,
)
from scheduler.plugins.dynamic_resources.hints import register_events
from scheduler.plugins.dynamic_resources.pod_claims import (
    ClaimLookupError,
    is_reserved_for,
    pod_claim_entries,
    pod_claims,
)
from scheduler.plugins.dynamic_resources.scoring import prioritized_list_score
from scheduler.plugins.dynamic_resources.view import claim_ref
from scheduler.plugins.helper.normalize_score import default_normalize_score

log = structlog.get_logger("scheduler.plugins.dynamic_resources")

NAME = "DynamicResources"
STATE_KEY = NAME
NOT_AVAILABLE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
DEALLOCATED = "deallocation of ResourceClaim completed"
# fwk.ErrNotFound: what CycleState.Read answers when PreFilter never wrote the state.
STATE_NOT_FOUND = "not found"


@dataclass
class _State:
    """``stateData``: the pod's claims, what PreFilter found, what Filter allocated."""

    claims: list[ResourceClaim] = field(default_factory=list)
    # Per claim: the node selector of its allocation (None: usable everywhere).
    available_on: list[NodeSelector | None] = field(default_factory=list)
    # Per claim: the allocation Reserve chose (None for claims allocated before).
    allocations: list[AllocationResult | None] = field(default_factory=list)
    allocator: Allocator | None = None
    # Nodes with slices of their own, and whether any slice serves several nodes: a node
    # with neither has no device to offer.
    nodes_with_slices: frozenset[str] = frozenset()
    shared_slices: bool = False
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.allocation is None]


# Pods without claims share one state: PostFilter tells it from a PreFilter that never ran.
_NO_CLAIMS = _State()


class DynamicResources:
    name = NAME
    filter_reads_pod_lists = False

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.filter_timeout = seconds(args["filterTimeout"])
        self.binding_timeout = seconds(args["bindingTimeout"])
        # cel.NewCache(10, ...) upstream; SelectorCache keeps more, compiled once each.
        self.cel_cache = SelectorCache()
        self._slices_key: tuple[int, int] | None = None
        self._slices: list[ResourceSlice] = []

    # -- PreEnqueue -----------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod_claim_entries(pod):
            return SUCCESS
        try:
            pod_claims(pod, self.handle.dra)
        except ClaimLookupError as err:
            return Status.unschedulable(str(err), resolvable=False)
        return SUCCESS

    # -- PreFilter ------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod_claim_entries(pod):
            state.write(STATE_KEY, _NO_CLAIMS)
            return None, SKIP
        st = _State()
        state.write(STATE_KEY, st)
        dra = self.handle.dra
        try:
            claims = pod_claims(pod, dra)
        except ClaimLookupError as err:
            return None, Status.unschedulable(str(err), resolvable=False)
        if not claims:
            return None, SKIP
        for claim in claims:
            if claim.allocation is not None:
                st.available_on.append(claim.allocation.node_selector)
                continue
            st.available_on.append(None)
            problem = self._not_allocatable(claim)
            if problem is not None:
                return None, problem
        st.claims = claims
        st.allocations = [None] * len(claims)
        if any(c.allocation is None for c in claims):
            self._prepare_allocator(st)
        return None, SUCCESS

    def _not_allocatable(self, claim: ResourceClaim) -> Status | None:
        """An unallocated claim that cannot be allocated in this cycle: in flight for
        another pod, or a request naming a class that does not exist."""
        dra = self.handle.dra
        if dra.pending_allocation(claim.uid) is not None:
            return Status.unschedulable(
                f"resource claim {claim_ref(claim)} is in the process of being allocated",
                resolvable=False)
        for request in claim.spec.requests:
            subs = ((request.exactly, request.name),) if request.exactly is not None else (
                (sub, f"{request.name}/{sub.name}") for sub in request.first_available)
            for sub, qualified in subs:
                if not sub.device_class_name:
                    return Status.error(f"request {qualified}: unsupported request type")
                if dra.device_class(sub.device_class_name) is None:
                    return Status.unschedulable(
                        f"request {qualified}: device class {sub.device_class_name} "
                        "does not exist", resolvable=False)
        return None

    def _prepare_allocator(self, st: _State) -> None:
        dra = self.handle.dra
        slices = self._tainted_slices()
        held: AllocatedDevices = dra.allocated()
        allocated = AllocatedState(held.devices, held.shared_devices, held.consumed)
        st.allocator = Allocator(allocated, dra.device_classes(), slices, self.cel_cache)
        st.nodes_with_slices = frozenset(s.node_name for s in slices if s.node_name)
        st.shared_slices = any(not s.node_name for s in slices)

    def _tainted_slices(self) -> list[ResourceSlice]:
        """The slices with the DeviceTaintRules applied, kept while neither changes."""
        dra = self.handle.dra
        key = (dra.slices_generation, dra.classes_generation)
        if key != self._slices_key:
            self._slices = apply_taint_rules(dra.slices(), dra.taint_rules())
            self._slices_key = key
        return self._slices

    # -- Filter ---------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        st: _State = state.read(STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        table = nodes.snapshot.nodes
        for pos, row in enumerate(nodes.idx.tolist()):
            status = self._filter_node(st, table.names[row], table.labels[row])
            if status is not None:
                mask = np.zeros(len(nodes), dtype=np.bool_)
                mask[pos] = True
                result.reject(mask, status.code, status.message)
        return result

    def _filter_node(self, st: _State, node: str, labels: Mapping[str, str]) -> Status | None:
        """Upstream's Filter for one node: None when the pod's claims fit there."""
        unavailable = [i for i, selector in enumerate(st.available_on)
                       if selector is not None and st.claims[i].allocation is not None
                       and not selector.matches(labels, node)]
        allocations: list[AllocationResult] = []
        if st.allocator is not None:
            claims = [st.claims[i] for i in st.to_allocate()]
            try:
                found = self._allocate(st, node, labels, claims)
            except FailedOnNodeError as err:
                return Status.unschedulable(str(err), resolvable=False)
            except AllocationError as err:
                return Status.error(str(err))
            if found is None or len(found) != len(claims):
                return Status.unschedulable(CANNOT_ALLOCATE, resolvable=False)
            allocations = found
        with st.lock:
            if unavailable:
                st.unavailable.update(unavailable)
                return Status.unschedulable(NOT_AVAILABLE, resolvable=False)
            if st.allocator is not None:
                st.node_allocations[node] = allocations
        return None

    def _allocate(
        self, st: _State, node: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim]
    ) -> list[AllocationResult] | None:
        assert st.allocator is not None
        if (not st.shared_slices and node not in st.nodes_with_slices
                and all(_needs_a_device(c) for c in claims)):
            return None  # no device can be on this node: what the allocator would answer
        started = self.handle.now()
        found = st.allocator.allocate(node, labels, claims)
        if self.filter_timeout and self.handle.now() - started > self.filter_timeout:
            raise AllocationError(f"node {node}: timed out trying to allocate devices")
        return found

    # -- PostFilter -----------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return None, Status.error(STATE_NOT_FOUND)
        if not st.claims:
            return None, Status(Code.UNSCHEDULABLE)
        for index in sorted(st.unavailable):
            claim = st.claims[index]
            users = claim.reserved_for
            if not users or (len(users) == 1 and users[0].uid == pod.uid):
                written = self.handle.writer.replace(
                    claim_path(claim.namespace, claim.name, status=True), deallocated(claim))
                if not written.ok:
                    return None, Status.error(written.message)
                log.info("claim deallocated", pod=pod.key, claim=claim.key)
                return None, Status(Code.UNSCHEDULABLE, (DEALLOCATED,))
        return None, Status(Code.UNSCHEDULABLE)

    # -- Score ----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        """Scores are all 0 unless a claim to allocate has a ``firstAvailable`` request:
        the Score is skipped then, with the same outcome."""
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.allocator is None or not any(
                r.first_available for c in st.claims for r in c.spec.requests):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        st: _State = state.read(STATE_KEY)
        names = nodes.snapshot.nodes.names
        return np.fromiter(
            (prioritized_list_score(st.claims, st.node_allocations.get(names[int(row)]))
             for row in nodes.idx), dtype=np.int64, count=len(nodes))

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score(scores, reverse=False)

    # -- Reserve / Unreserve --------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State = state.read(STATE_KEY)
        pending = st.to_allocate()
        if not pending or st.allocator is None:
            return SUCCESS
        allocations = st.node_allocations.get(node)
        if not allocations:
            return Status.error("claim allocation not found for node")
        if len(allocations) != len(pending):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, {len(pending)} claims "
                f"to allocate, want {len(pending)} claims")
        dra = self.handle.dra
        for index, allocation in zip(pending, allocations, strict=True):
            st.allocations[index] = allocation
            claim = st.claims[index]
            finalizers = claim.finalizers if FINALIZER in claim.finalizers else (
                *claim.finalizers, FINALIZER)
            dra.signal_pending_allocation(
                dataclasses.replace(claim, allocation=allocation, finalizers=finalizers))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        st: _State | None = state.get(STATE_KEY)
        if st is None or not st.claims:
            return
        dra = self.handle.dra
        for claim in st.claims:
            if dra.remove_pending_allocation(claim.uid):
                dra.restore_assumed(claim.namespace, claim.name)
            if claim.allocation is not None and is_reserved_for(pod, claim):
                written = self.handle.writer.patch(
                    claim_path(claim.namespace, claim.name, status=True),
                    unreserve_patch(claim, pod))
                if not written.ok:
                    log.error("unreserve", claim=claim.key, pod=pod.key,
                              reason=written.message)

    # -- PreBind --------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return Status.error(STATE_NOT_FOUND)
        return SUCCESS if st.claims else SKIP

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State = state.read(STATE_KEY)
        if not st.claims:
            return SUCCESS
        for index, claim in enumerate(st.claims):
            if is_reserved_for(pod, claim):
                continue
            try:
                st.claims[index] = bind_claim(self.handle, claim, st.allocations[index], pod)
            except BindError as err:
                return Status.error(str(err))
        dra = self.handle.dra
        for index, claim in enumerate(st.claims):
            if st.allocations[index] is not None:
                dra.remove_pending_allocation(claim.uid, force=True)
        return SUCCESS

    # -- requeueing -----------------------------------------------------------------------
    def events_to_register(self) -> Sequence[Any]:
        return register_events(self.handle.dra)


def _needs_a_device(claim: ResourceClaim) -> bool:
    """Every request takes at least one device (ExactCount), so a node without devices
    cannot satisfy the claim."""
    return bool(claim.spec.requests) and all(
        all(sub.allocation_mode != "All" for sub in
            ((r.exactly,) if r.exactly is not None else r.first_available))
        for r in claim.spec.requests)


def new(args: Mapping[str, Any], handle: Handle) -> DynamicResources:
    return DynamicResources({**DEFAULT_ARGS, **args}, handle)


SPEC = PluginSpec(name=NAME, factory=new, default_args=DEFAULT_ARGS, validate=validate_args)
