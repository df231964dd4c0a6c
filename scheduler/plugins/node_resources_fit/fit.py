"""NodeResourcesFit, the plugin: Filter (upstream ``fit.go``) and Score by the configured
strategy (:mod:`.scoring`), with its queueing hints."""


from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from scheduler.plugin_api import (
    CPU,
    DEVICE_CLASS_RESOURCE_PREFIX,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    SUCCESS,
    Action,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    DeviceClass,
    DraManager,
    FilterResult,
    Handle,
    IntArray,
    NodeSummary,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    SelectorCache,
    Status,
    is_dra_extended_resource_name,
    is_extended_resource_name,
    is_scalar_resource,
)
from scheduler.plugins.helper.explain_text import nodes_phrase, quantity
from scheduler.plugins.helper.resource_allocation import (
    DraScoring,
    allocation_inputs,
    may_be_dra_backed,
    requests_reader,
)
from scheduler.plugins.helper.row_memo import RowMemo
from scheduler.plugins.helper.shape_score import (
    BrokenLinear,
    build_shape,
)
from scheduler.plugins.node_resources_fit.args import (
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
)
from scheduler.plugins.node_resources_fit.scoring import (
    least_allocated_score,
    most_allocated_score,
    requested_to_capacity_ratio_score,
    weights_column,
)

NAME = "NodeResourcesFit"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

TOO_MANY_PODS = "Too many pods"
_BASIC_REASONS = {
    CPU: "Insufficient cpu",
    MEMORY: "Insufficient memory",
    EPHEMERAL_STORAGE: "Insufficient ephemeral-storage",
}


def insufficient_reason(resource: str) -> str:
    return _BASIC_REASONS.get(resource) or f"Insufficient {resource}"



def _column(nodes: NodeView, name: str) -> int | None:
    col = nodes.snapshot.resources.column.get(name)
    if col is None or col >= nodes.requested.shape[1]:
        return None
    return col



# What Filter checks of a pod: each resource it requests (> 0), with the quantity.
Checks = tuple[tuple[str, int], ...]



# -- the plugin -----------------------------------------------------------------------------
# What Score reads: the pod's request of each scoring resource, and what scoring reads of DRA
# when a DeviceClass serves one of them (upstream's ``preScoreState``). A plain tuple: made for
# every pod scored, where a NamedTuple's constructor is a call.
PreScoreState = tuple[tuple[int, ...], DraScoring | None]


class PodResourceRequest(NamedTuple):
    """What Filter checks: the basic resources, then the scalar ones, request > 0 only (a
    NamedTuple: made for every pod, at a third of a frozen dataclass's cost)."""

    checks: Checks
    any_request: bool
    # Extended resources a DeviceClass serves (DRAExtendedResource): on a node that does
    # not offer them itself (allocatable 0), DynamicResources decides, not this plugin.
    delegable: frozenset[str] = frozenset()


def compute_pod_resource_request(
    pod: PodInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> PodResourceRequest:
    requests = pod.requests
    checks: list[tuple[str, int]] = []
    any_request = False
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        q = int(requests.get(name, 0))
        if q:
            any_request = True
        if q > 0:
            checks.append((name, q))
    for name, value in requests.items():
        if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) or not is_scalar_resource(name):
            continue
        any_request = True
        q = int(value)
        if q <= 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or name.split("/", 1)[0] in ignored_groups
        ):
            continue
        checks.append((name, q))
    return PodResourceRequest(tuple(checks), any_request)


class NodeResourcesFit:
    name = NAME
    # Filter needs only the NodeView's numbers, not its hypothetical pod lists.
    filter_reads_pod_lists = False

    def __init__(self, args: NodeResourcesFitArgs, dra: DraManager | None = None) -> None:
        self.dra = dra
        self.ignored_resources = frozenset(args.ignored_resources or ())
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups or ())
        strategy = args.strategy
        assert strategy.type is not None  # validated
        self.strategy: str = strategy.type
        self.resources = strategy.resource_specs()
        self.shape: BrokenLinear | None = None
        ratio = strategy.requested_to_capacity_ratio
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO and ratio is not None:
            self.shape = build_shape(ratio.shape)
        self._weights = weights_column(self.resources)
        self._dra_resources = may_be_dra_backed(self.resources)
        # Compiles the selectors of the classes behind DRA-backed extended resources.
        self._cel_cache = SelectorCache()
        self.pod_requests = requests_reader(self.resources, use_requested=False)
        self._scores: RowMemo[tuple[int, ...]] = RowMemo(self._score_rows)
        self._misfits: RowMemo[tuple[Checks, frozenset[str]]] = RowMemo(self._misfit_rows)

    # -- PreFilter / Filter ---------------------------------------------------------------
    def _request(self, pod: PodInfo) -> PodResourceRequest:
        request = compute_pod_resource_request(
            pod, self.ignored_resources, self.ignored_resource_groups
        )
        # Extended resources have a domain ("example.com/gpu"): most pods ask for none, told
        # by one join of the names the checks come from (every pod pays for this test).
        if self.dra is None or "/" not in "".join(pod.requests):
            return request
        delegable = frozenset(name for name, _ in request.checks
                              if delegable_to_dra(name, self.dra))
        return request._replace(delegable=delegable) if delegable else request

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(PRE_FILTER_STATE_KEY, self._request(pod))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        request: PodResourceRequest | None = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            request = self._request(pod)
        if not nodes.as_in_table:
            return self._judge(nodes, request)
        # Which rows cannot take the pod is kept between cycles; only those rows are judged
        # again for their reasons, and usually there are none.
        misfits = self._misfits.values(nodes, (request.checks, request.delegable))
        n = len(nodes)
        if not np.count_nonzero(misfits):
            return FilterResult.all_pass(n)
        positions = misfits.nonzero()[0]
        if positions.shape[0] == n:
            return self._judge(nodes, request)
        judged = self._judge(nodes.subset(positions), request)
        result = FilterResult.all_pass(n)
        result.codes[positions] = judged.codes
        for mask, reason in judged.reasons:
            rows = np.zeros(n, dtype=np.bool_)
            rows[positions[mask]] = True
            result.reasons.append((rows, reason))
        return result

    def _misfit_rows(self, nodes: NodeView, key: tuple[Checks, frozenset[str]]) -> IntArray:
        """Per row of the view: 1 where Filter rejects a pod that requests ``checks``."""
        checks, delegable = key
        table = nodes.snapshot.nodes
        misfit = nodes.pod_count + 1 > table.allowed_pods.take(nodes.idx)
        for name, q in checks:
            col = _column(nodes, name)
            if col is None:
                if name not in delegable:
                    misfit |= q > 0
                continue
            allocatable = table.allocatable[nodes.idx, col]
            short = q > allocatable - nodes.requested[:, col]
            misfit |= short & (allocatable > 0) if name in delegable else short
        return misfit.astype(np.int64)

    def _judge(self, nodes: NodeView, request: PodResourceRequest) -> FilterResult:
        """Filter's answer for every row of the view, with every reason of each rejection."""
        n = len(nodes)
        result = FilterResult.all_pass(n)
        table = nodes.snapshot.nodes
        too_many = nodes.pod_count + 1 > table.allowed_pods.take(nodes.idx)
        result.add_reason(too_many, Code.UNSCHEDULABLE, TOO_MANY_PODS)
        if not request.any_request:
            return result
        for name, q in request.checks:
            col = _column(nodes, name)
            if col is None:
                allocatable = np.zeros(n, dtype=np.int64)
                used = allocatable
            else:
                allocatable = table.allocatable[nodes.idx, col]
                used = nodes.requested[:, col]
            short = q > allocatable - used
            if name in request.delegable:
                short &= allocatable > 0  # shouldDelegateResourceToDRA
            if not np.count_nonzero(short):
                continue
            result.add_reason(short, Code.UNSCHEDULABLE, insufficient_reason(name))
            unresolvable = short & (q > allocatable)
            result.codes[unresolvable] = np.uint8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return result

    # -- PreScore / Score -----------------------------------------------------------------
    def _pre_score_state(self, pod: PodInfo) -> PreScoreState:
        if not self._dra_resources:  # as the default cpu and memory: no DeviceClass serves them
            return self.pod_requests(pod), None
        return self.pod_requests(pod), DraScoring.of(self.dra, self._dra_resources,
                                                     self._cel_cache)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        state.write(PRE_SCORE_STATE_KEY, self._pre_score_state(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        pre_score: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score is None:
            pre_score = self._pre_score_state(pod)
        pod_requests, dra = pre_score
        if dra is not None:
            # Device counts change with every allocation: not kept with the rows.
            return self._score_rows(nodes, pod_requests, dra)
        return self._scores.values(nodes, pod_requests)

    def _score_rows(self, nodes: NodeView, pod_requests: tuple[int, ...],
                    dra: DraScoring | None = None) -> IntArray:
        inputs = allocation_inputs(nodes, self.resources, pod_requests, use_requested=False,
                                   dra=dra)
        if self.strategy == MOST_ALLOCATED:
            return most_allocated_score(inputs, self._weights)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            assert self.shape is not None
            return requested_to_capacity_ratio_score(inputs, self._weights, self.shape)
        return least_allocated_score(inputs, self._weights)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores

    # -- explain ------------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """Pods in use when the node is full, and each resource the node is short of."""
        out = []
        for row in nodes.idx.tolist():
            lines = []
            if not _pods_fit(nodes, row):
                lines.append(f"pods: {int(nodes.snapshot.nodes.pod_count[row])} of "
                             f"{int(nodes.snapshot.nodes.allowed_pods[row])} in use")
            for name, need, free, alloc, used in self._requests_on(pod, nodes, row):
                if need > free:
                    lines.append(f"{name}: the pod requests {quantity(name, need)}, "
                                 f"{quantity(name, max(free, 0))} free "
                                 f"({quantity(name, alloc)} allocatable, "
                                 f"{quantity(name, used)} requested)")
            out.append(lines)
        return out

    def explain_hints(
        self, state: CycleState, pod: PodInfo, nodes: NodeView, rejected: BoolArray,
        others_pass: BoolArray,
    ) -> list[str]:
        """Nodes short of exactly one resource, and of nothing else: how much less would do."""
        short: dict[str, list[int]] = defaultdict(list)
        for row in nodes.idx[rejected & others_pass].tolist():
            shortages = [(name, need - free) for name, need, free, _, _
                         in self._requests_on(pod, nodes, row) if need > free]
            if len(shortages) == 1 and _pods_fit(nodes, row):
                name, amount = shortages[0]
                short[name].append(amount)
        hints = []
        for name, amounts in short.items():
            amounts.sort()
            least = amounts[0]
            hint = (f"{nodes_phrase(amounts.count(least))} would fit with "
                    f"{quantity(name, least)} less {name}")
            if amounts[-1] != least:
                hint += f"; {len(amounts)} with {quantity(name, amounts[-1])} less"
            hints.append(hint)
        return hints

    def _requests_on(
        self, pod: PodInfo, nodes: NodeView, row: int
    ) -> list[tuple[str, int, int, int, int]]:
        """(resource, the pod's request, free, allocatable, requested) for what Filter checks."""
        table = nodes.snapshot.nodes
        out = []
        for name, need in self._request(pod).checks:
            col = nodes.snapshot.resources.column.get(name)
            alloc = int(table.allocatable[row, col]) if col is not None else 0
            used = int(table.requested[row, col]) if col is not None else 0
            out.append((name, need, alloc - used, alloc, used))
        return out

    # -- events ---------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), _after_assigned_pod_delete
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE),
                _after_node_change,
            ),
            # InPlacePodVerticalScaling is GA: a bound pod shrinking may free room.
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE_POD_SCALE_DOWN),
                _after_assigned_pod_scale_down,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCALE_DOWN)
            ),
            # DRAExtendedResource: a class that comes to serve a resource the pod asks for.
            ClusterEventWithHint(
                ClusterEvent(Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE),
                _after_device_class_change,
            ),
        ]


# -- queueing hints -------------------------------------------------------------------------
def _after_device_class_change(
    pod: PodInfo, old: DeviceClass | None, new: DeviceClass | None
) -> QueueingHint:
    """upstream's isSchedulableAfterDeviceClassEvent: a class added for the pod's implicit
    ``deviceclass.resource.kubernetes.io/<class>`` request, or one whose extended resource
    name changed to one the pod requests."""
    if new is None:
        return QueueingHint.SKIP
    if old is not None:
        if old.extended_resource_name == new.extended_resource_name:
            return QueueingHint.SKIP
    elif DEVICE_CLASS_RESOURCE_PREFIX + new.name in pod.requests:
        return QueueingHint.QUEUE
    if new.extended_resource_name is not None and new.extended_resource_name in pod.requests:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_assigned_pod_delete(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    deleted = old if old is not None else new
    if deleted is None:
        return QueueingHint.QUEUE
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _after_assigned_pod_scale_down(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    """Queue when a bound pod's request of something the pod asks for went down."""
    if old is None or new is None or not new.node_name:
        return QueueingHint.SKIP
    for name, value in pod.requests.items():
        if value and name != PODS and old.requests.get(name, 0) > new.requests.get(name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP



def fits_empty_node(pod: Any, allocatable: Mapping[str, int]) -> bool:
    """Upstream ``isFit``: the pod fits the node with nothing on it."""
    if allocatable.get(PODS, 0) < 1:
        return False
    request = compute_pod_resource_request(pod)
    return all(q <= allocatable.get(name, 0) for name, q in request.checks)


def _after_node_change(
    pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
) -> QueueingHint:
    if new is None:
        return QueueingHint.SKIP
    new_alloc = new.allocatable
    if not fits_empty_node(pod, new_alloc):
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    old_alloc = old.allocatable
    if new_alloc.get(PODS, 0) > old_alloc.get(PODS, 0):
        return QueueingHint.QUEUE
    request = compute_pod_resource_request(pod)
    if not request.any_request:
        return QueueingHint.SKIP
    for name, _ in request.checks:
        if new_alloc.get(name, 0) > old_alloc.get(name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _pods_fit(nodes: NodeView, row: int) -> bool:
    table = nodes.snapshot.nodes
    return int(table.pod_count[row]) + 1 <= int(table.allowed_pods[row])


def delegable_to_dra(name: str, dra: DraManager) -> bool:
    """``shouldDelegateResourceToDRA`` without the node: a DeviceClass serves it."""
    return is_dra_extended_resource_name(name) and dra.class_for_extended_resource(name) is not None


def new(args: NodeResourcesFitArgs, handle: Handle) -> NodeResourcesFit:
    # The registry builds one without a scheduler (handle None) to find its points.
    return NodeResourcesFit(args, handle.dra if handle is not None else None)


SPEC = PluginSpec(name=NAME, factory=new, args=NodeResourcesFitArgs)
