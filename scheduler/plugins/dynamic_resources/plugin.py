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
  (``binding.py``), then waits for the binding conditions of the devices that have some
  (``binding_conditions.py``, with the Event ``BindingConditionsPending``); Filter leaves out
  claims whose conditions failed or timed out. The wait is recorded in upstream's
  ``scheduler_dra_bindingconditions_*`` metrics.
- **DRA-backed extended resources** (``extended_resources.py``): the claim the scheduler
  makes for a pod's ``example.com/gpu: 1``, created in PreBind (counted in
  ``dynamic_resource_allocation_resourceclaim_creates_total``), named in the pod's status.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
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
    DeviceClass,
    DeviceTaintRule,
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
    AllocatorCache,
    Deadline,
    FailedOnNodeError,
    SearchTimeoutError,
    apply_taint_rules,
)
from scheduler.plugins.dynamic_resources.args import DynamicResourcesArgs
from scheduler.plugins.dynamic_resources.binding import (
    BindError,
    bind_claim,
    create_extended_claim,
    delete_claim,
    record_extended_claim,
)
from scheduler.plugins.dynamic_resources.binding_conditions import (
    ERR_TIMEOUT,
    POLL_SECONDS,
    BindingFailedError,
    has_binding_conditions,
    ready_for_binding,
    record_wait,
    timed_out,
    unavailable,
    wait_status,
)
from scheduler.plugins.dynamic_resources.claim_writes import (
    FINALIZER,
    claim_path,
    deallocated,
    unreserve_patch,
)
from scheduler.plugins.dynamic_resources.explain import (
    NodeDevices,
    combination_line,
    request_lines,
)
from scheduler.plugins.dynamic_resources.extended_resources import (
    IN_MEMORY_NAME,
    claim_for_node,
    dra_backed_requests,
    find_extended_claim,
    in_memory_claim,
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
DELETED = "deletion of ResourceClaim completed"
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
    # The unallocated claims, in order: what the allocator gets on every node.
    pending: list[ResourceClaim] = field(default_factory=list)
    # What the allocator was built from (explanations count devices from them).
    slices: Sequence[ResourceSlice] = ()
    allocated: AllocatedState = field(default_factory=AllocatedState)
    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    # Nodes with slices of their own, and whether any slice serves several nodes: a node
    # with neither has no device to offer.
    nodes_with_slices: frozenset[str] = frozenset()
    shared_slices: bool = False
    unavailable: set[int] = field(default_factory=set)
    # Allocated claims whose devices failed their binding conditions or timed out.
    not_ready: frozenset[int] = frozenset()
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # DRA-backed extended resources: the index in ``claims`` of the claim for them (the
    # last), its first UID (the in-flight allocation's key), the pod's requests, and per
    # node the claim with that node's requests and the pod's request mappings.
    extended_index: int | None = None
    extended_uid: str = ""
    extended_requests: Mapping[str, int] = field(default_factory=dict)
    node_extended: dict[str, tuple[ResourceClaim, list[dict[str, str]]]] = field(
        default_factory=dict)
    pod: PodInfo | None = None

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.allocation is None]

    def user_claims(self) -> list[ResourceClaim]:
        return self.claims if self.extended_index is None else self.claims[:self.extended_index]


# Pods without claims share one state: PostFilter tells it from a PreFilter that never ran.
_NO_CLAIMS = _State()


class DynamicResources:
    name = NAME
    filter_reads_pod_lists = False
    # PreFilter says Skip only with a state whose ``claims`` is empty and ``allocator`` None
    # (``_NO_CLAIMS``, or a pod whose template claims the controller decided it needs none):
    # with it PreScore says Skip, Reserve returns at once, Unreserve does nothing and
    # PreBindPreFlight says Skip, so leaving the plugin out of those points for such a pod
    # (as the runtime then does) changes nothing but the calls.
    idle_when_pre_filter_skips = frozenset({"preScore", "reserve", "preBind"})

    def __init__(self, args: DynamicResourcesArgs, handle: Handle) -> None:
        self.handle = handle
        self.filter_timeout = args.filter_timeout_seconds
        self.binding_timeout = args.binding_timeout_seconds
        # cel.NewCache(10, ...) upstream; SelectorCache keeps more, compiled once each. The
        # allocator cache keeps each node's pools and selectable devices between cycles while
        # no slice or DeviceTaintRule changes. One per plugin instance, so per profile: the
        # plugin API has no place to share it, and two profiles with DynamicResources (rare)
        # only cost a second copy of derived data.
        self.cel_cache = SelectorCache()
        self.allocators = AllocatorCache(self.cel_cache)
        self._slices_key: int | None = None
        self._slices: list[ResourceSlice] = []
        # By the store's slice object's id: (that object, it with the rules applied).
        self._patched: dict[int, tuple[ResourceSlice, ResourceSlice]] = {}
        self._rules: tuple[DeviceTaintRule, ...] = ()
        self._nodes_with_slices: frozenset[str] = frozenset()
        self._shared_slices = False

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
        dra = self.handle.dra
        entries = pod_claim_entries(pod)
        extended_requests = dra_backed_requests(pod, dra)
        if not entries and not extended_requests:
            state.write(STATE_KEY, _NO_CLAIMS)
            return None, SKIP
        st = _State(pod=pod)
        state.write(STATE_KEY, st)
        try:
            claims = pod_claims(pod, dra)
        except ClaimLookupError as err:
            return None, Status.unschedulable(str(err), resolvable=False)
        if extended_requests:
            extended = find_extended_claim(pod, dra.claims()) or in_memory_claim(
                pod, str(uuid.uuid4()))
            st.extended_index, st.extended_uid = len(claims), extended.uid
            st.extended_requests = extended_requests
            claims.append(extended)
        if not claims:
            return None, SKIP
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
                st.available_on.append(claim.allocation.node_selector)
                continue
            st.available_on.append(None)
            problem = self._not_allocatable(claim, index != st.extended_index)
            if problem is not None:
                return None, problem
        st.claims = claims
        st.allocations = [None] * len(claims)
        now = self.handle.wall_clock()
        st.not_ready = frozenset(
            i for i, c in enumerate(claims)
            if c.allocation is not None and unavailable(c, self.binding_timeout, now))
        if any(c.allocation is None for c in claims):
            self._prepare_allocator(st)
        return None, SUCCESS

    def _not_allocatable(self, claim: ResourceClaim, check_classes: bool) -> Status | None:
        """An unallocated claim that cannot be allocated in this cycle: in flight for
        another pod, or a request naming a class that does not exist."""
        dra = self.handle.dra
        if dra.pending_allocation(claim.uid) is not None:
            return Status.unschedulable(
                f"resource claim {claim_ref(claim)} is in the process of being allocated",
                resolvable=False)
        for request in claim.spec.requests if check_classes else ():
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
        st.allocated = AllocatedState(held.devices, held.shared_devices, held.consumed)
        st.classes = dra.device_classes()
        st.slices = slices
        st.pending = [st.claims[i] for i in st.to_allocate()]
        st.allocator = self.allocators.allocator(
            st.allocated, st.classes, slices, slices_key=self._slices_key)
        st.nodes_with_slices = self._nodes_with_slices
        st.shared_slices = self._shared_slices

    def _tainted_slices(self) -> list[ResourceSlice]:
        """The slices with the DeviceTaintRules applied, kept while neither changes
        (``slices_generation`` counts changes of both). Under a new key, a slice that is the
        same object as before under the same rules keeps its patched object, so the
        allocator cache keeps its node's view."""
        dra = self.handle.dra
        key = dra.slices_generation
        if key != self._slices_key:
            rules = tuple(dra.taint_rules())
            kept = self._patched if rules == self._rules else {}
            patched: dict[int, tuple[ResourceSlice, ResourceSlice]] = {}
            for source in dra.slices():
                before = kept.get(id(source))
                if before is None or before[0] is not source:
                    before = (source, apply_taint_rules([source], rules)[0])
                patched[id(source)] = before
            self._slices = [after for _, after in patched.values()]
            self._patched, self._rules, self._slices_key = patched, rules, key
            self._nodes_with_slices = frozenset(s.node_name for s in self._slices if s.node_name)
            self._shared_slices = any(not s.node_name for s in self._slices)
        return self._slices

    # -- Filter ---------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        st: _State = state.read(STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        rejected: dict[tuple[Code, str], list[int]] = {}
        for pos, row in enumerate(nodes.idx.tolist()):
            status = self._filter_node(st, nodes.snapshot, row)
            if status is not None:
                rejected.setdefault((status.code, status.message), []).append(pos)
        for (code, message), positions in rejected.items():
            mask = np.zeros(len(nodes), dtype=np.bool_)
            mask[positions] = True
            result.reject(mask, code, message)
        return result

    def _filter_node(self, st: _State, snapshot: ClusterSnapshot, row: int) -> Status | None:
        """Upstream's Filter for one node: None when the pod's claims fit there."""
        node, labels = snapshot.nodes.names[row], snapshot.nodes.labels[row]
        node_extended: ResourceClaim | None = None
        if st.extended_index is not None:
            outcome = self._extended_for_node(st, snapshot, row)
            if isinstance(outcome, Status):
                return outcome
            if outcome is None and not st.user_claims():
                return None
            node_extended = None if outcome is None else outcome[0]
        unavailable = [i for i, selector in enumerate(st.available_on)
                       if i in st.not_ready or (
                           selector is not None and st.claims[i].allocation is not None
                           and not selector.matches(labels, node))]
        allocations: list[AllocationResult] = []
        if st.allocator is not None:
            # The cycle's own claim objects on every node (the allocator finds its plan by
            # their identities); only the extended claim is made per node.
            claims = st.pending if node_extended is None else [
                node_extended if i == st.extended_index else st.claims[i]
                for i in st.to_allocate()]
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

    def _extended_for_node(
        self, st: _State, snapshot: ClusterSnapshot, row: int
    ) -> Status | tuple[ResourceClaim, list[dict[str, str]]] | None:
        """``filterExtendedResources``: the extended claim with this node's requests (None
        when the node needs none), or why the node cannot serve the pod's resources."""
        claim = st.claims[st.extended_index or 0]
        if claim.spec.requests:
            return Status.unschedulable("cannot schedule extended resource claim",
                                        resolvable=False)
        dra = self.handle.dra
        needed: dict[str, int] = {}
        for name, quantity in st.extended_requests.items():
            column = snapshot.resources.column.get(name)
            allocatable = None if column is None or column >= snapshot.nodes.allocatable.shape[
                1] else int(snapshot.nodes.allocatable[row, column])
            if dra.class_for_extended_resource(name) is not None and not allocatable:
                needed[name] = quantity
            elif allocatable is None:
                return Status.unschedulable("cannot fit resource", resolvable=False)
        if (not needed and not st.user_claims()) or claim.allocation is not None:
            return None
        assert st.pod is not None
        node_claim = claim_for_node(claim, st.pod, needed, dra)
        with st.lock:
            st.node_extended[snapshot.nodes.names[row]] = node_claim
        return node_claim

    def _allocate(
        self, st: _State, node: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim]
    ) -> list[AllocationResult] | None:
        assert st.allocator is not None
        if (not st.shared_slices and node not in st.nodes_with_slices
                and all(_needs_a_device(c) for c in claims)):
            return None  # no device can be on this node: what the allocator would answer
        # filterTimeout per node, checked at every step of the search (0: none).
        deadline = (Deadline(self.handle.now, self.handle.now() + self.filter_timeout)
                    if self.filter_timeout else None)
        try:
            return st.allocator.allocate(node, labels, claims, deadline)
        except SearchTimeoutError as err:
            raise AllocationError(f"node {node}: timed out trying to allocate devices") from err

    # -- explanations ---------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """Per node: the claim allocated elsewhere, or each request's device count."""
        st: _State | None = state.get(STATE_KEY)
        table = nodes.snapshot.nodes
        return [[] if st is None else self._explain_node(st, table.names[row], table.labels[row])
                for row in nodes.idx.tolist()]

    def _explain_node(self, st: _State, node: str, labels: Mapping[str, str]) -> list[str]:
        lines = [f"claim {claim_ref(st.claims[i])}: allocated for other nodes (its "
                 "allocation's node selector does not match this node)"
                 for i, selector in enumerate(st.available_on)
                 if selector is not None and st.claims[i].allocation is not None
                 and not selector.matches(labels, node)]
        if st.allocator is None:
            return lines
        offered = NodeDevices.of(st.slices, node, labels)
        short = False
        pending = [st.node_extended[node][0] if i == st.extended_index and node in
                   st.node_extended else st.claims[i] for i in st.to_allocate()]
        for claim in pending:
            claim_lines, claim_short = request_lines(
                claim, offered, st.classes, st.allocated, self.cel_cache)
            lines.extend(claim_lines)
            short = short or claim_short
        if not short:
            lines.extend(combination_line(c) for c in pending)
        return lines

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
            if index == st.extended_index:
                continue
            users = claim.reserved_for
            if not users or (len(users) == 1 and users[0].uid == pod.uid):
                written = self.handle.writer.replace(
                    claim_path(claim.namespace, claim.name, status=True), deallocated(claim))
                if not written.ok:
                    return None, Status.error(written.message)
                log.info("claim deallocated", pod=pod.key, claim=claim.key)
                return None, Status(Code.UNSCHEDULABLE, (DEALLOCATED,))
        if st.extended_index is not None and st.claims[st.extended_index].name != IN_MEMORY_NAME:
            try:
                delete_claim(self.handle, st.claims[st.extended_index])
            except BindError as err:
                return None, Status.error(str(err))
            return None, Status(Code.UNSCHEDULABLE, (DELETED,))
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
        if st.allocator is None:
            return SUCCESS
        pending = st.to_allocate()
        if not pending:
            return SUCCESS
        allocations = st.node_allocations.get(node)
        if not allocations:
            if all(i == st.extended_index for i in pending):
                return SUCCESS
            return Status.error("claim allocation not found for node")
        if len(allocations) != len(pending):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, {len(pending)} claims "
                f"to allocate, want {len(pending)} claims")
        dra = self.handle.dra
        for index, allocation in zip(pending, allocations, strict=True):
            st.allocations[index] = allocation
            claim = st.claims[index]
            if index == st.extended_index and node in st.node_extended:
                claim = st.node_extended[node][0]
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
        for claim in st.user_claims():
            if dra.remove_pending_allocation(claim.uid):
                dra.restore_assumed(claim.namespace, claim.name)
            if claim.allocation is not None and is_reserved_for(pod, claim):
                written = self.handle.writer.patch(
                    claim_path(claim.namespace, claim.name, status=True),
                    unreserve_patch(claim, pod))
                if not written.ok:
                    log.error("unreserve", claim=claim.key, pod=pod.key,
                              reason=written.message)
        if st.extended_index is not None:
            self._unreserve_extended(st, pod)

    def _unreserve_extended(self, st: _State, pod: PodInfo) -> None:
        """``unreserveExtendedResourceClaim``: the in-flight allocation goes, and a claim
        PreBind already created is deleted."""
        dra = self.handle.dra
        claim = st.claims[st.extended_index or 0]
        if dra.remove_pending_allocation(st.extended_uid):
            dra.restore_assumed(claim.namespace, claim.name)
        if claim.name != IN_MEMORY_NAME:
            try:
                delete_claim(self.handle, claim)
            except BindError as err:
                log.error("delete", claim=claim.key, pod=pod.key, reason=str(err))

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
                if index == st.extended_index:
                    self._bind_extended(st, pod, node)
                else:
                    st.claims[index] = bind_claim(
                        self.handle, claim, st.allocations[index], pod)
            except BindError as err:
                return Status.error(str(err))
        if has_binding_conditions(st.claims):
            self.handle.reporter.note(pod, "BindingConditionsPending",
                                      f"waiting for binding conditions for device on node {node}")
            started = self.handle.now()
            problem = self._wait_for_binding_conditions(st)
            record_wait(self.handle.metrics, self.handle.profile_name, st.claims,
                        wait_status(problem), self.handle.now() - started)
            if problem is not None:
                return Status.error(problem)
        dra = self.handle.dra
        for index, claim in enumerate(st.claims):
            if st.allocations[index] is not None:
                dra.remove_pending_allocation(
                    st.extended_uid if index == st.extended_index else claim.uid, force=True)
        return SUCCESS

    def _bind_extended(self, st: _State, pod: PodInfo, node: str) -> None:
        """``bindClaim`` for the extended claim: created first when it is still in memory,
        then written as any claim, then named in the pod's status."""
        index = st.extended_index or 0
        allocation = st.allocations[index]
        if allocation is None and not st.claims[index].spec.requests:
            return
        node_claim, mappings = st.node_extended.get(node, (None, []))
        if st.claims[index].name == IN_MEMORY_NAME:
            if node_claim is None:
                raise BindError(f"extended resource claim not found for node {node}")
            st.claims[index] = create_extended_claim(self.handle, node_claim)
        st.claims[index] = bind_claim(self.handle, st.claims[index], allocation, pod)
        record_extended_claim(self.handle, pod, st.claims[index], mappings)

    def _wait_for_binding_conditions(self, st: _State) -> str | None:
        """Polls the claims every 5 s (the first time at once) until every device's binding
        conditions are True: None then, else upstream's error."""
        handle = self.handle
        deadline = handle.now() + self.binding_timeout
        while True:
            try:
                if self._pod_ready_for_binding(st):
                    return None
            except BindingFailedError as err:
                return str(err)
            if handle.now() + POLL_SECONDS > deadline:
                return f"{ERR_TIMEOUT}: context deadline exceeded"
            handle.sleep(POLL_SECONDS)

    def _pod_ready_for_binding(self, st: _State) -> bool:
        """``isPodReadyForBinding``, on the claims as the DRA manager has them now."""
        for index, claim in enumerate(st.claims):
            current = self.handle.dra.claim(claim.namespace, claim.name)
            if current is None:
                raise BindingFailedError(
                    f'could not find ResourceClaim "{claim.namespace}/{claim.name}"')
            st.claims[index] = current
            if not ready_for_binding(current):
                if timed_out(current, self.binding_timeout, self.handle.wall_clock()):
                    raise BindingFailedError(f"{ERR_TIMEOUT}: claim={current.name}")
                return False
        return True

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


def new(args: DynamicResourcesArgs, handle: Handle) -> DynamicResources:
    return DynamicResources(args, handle)


SPEC = PluginSpec(name=NAME, factory=new, args=DynamicResourcesArgs)
