"""NodeResourcesFit: the node must have room for the pod's requests; score by allocation.

Upstream ``noderesources/fit.go`` and its scorers (v1.37).

Filter, per node (all shortages are reported, in this order):

- ``Too many pods`` when ``pods + 1 > allocatable pods`` (even for a pod that requests
  nothing); always Unschedulable.
- ``Insufficient cpu``, ``Insufficient memory``, ``Insufficient ephemeral-storage``, then
  ``Insufficient <name>`` for each requested scalar resource (extended, hugepages,
  ``kubernetes.io/*``) in the order the pod declares them, when
  ``request > allocatable - requested``. Extended resources named in ``ignoredResources``
  or whose prefix (before ``/``) is in ``ignoredResourceGroups`` are not checked. A shortage
  where the request exceeds the node's whole allocatable makes the node
  UnschedulableAndUnresolvable, so preemption never targets it.

Score, with ``scoringStrategy`` (default ``LeastAllocated`` over cpu and memory, weight 1):
requested = node's requests + pod's, with cpu and memory taken with upstream's non-zero
defaults (100m / 200Mi per container that requests nothing). A resource the node has none of
is left out (of the weights too); a scalar resource the pod does not request is left out.

- ``LeastAllocated``: ``Σ w·((alloc - req)·100 / alloc) / Σ w`` (0 for an over-full resource).
- ``MostAllocated``: ``Σ w·(min(req, alloc)·100 / alloc) / Σ w``.
- ``RequestedToCapacityRatio``: the broken-linear ``shape`` (scores ×10) of
  ``req·100 / alloc`` (100 when over-full); only resources scoring > 0 count; rounded.

All divisions are Go's integer divisions. Everything is computed for the whole batch of rows
with numpy; rows carrying hypothetical pods already have them in ``NodeView.requested``, and
their non-zero cpu/memory is adjusted here.

Not supported: extended resources backed by DRA device classes (``DRAExtendedResource``, GA
in v1.37). Such a request is treated as a plain extended resource, so a node that does not
advertise it in ``status.allocatable`` fails with ``Insufficient <name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeGuard, TypeVar

import numpy as np

from scheduler.plugin_api import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    PODS,
    SUCCESS,
    Action,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    ConfigError,
    CycleState,
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
    Status,
    is_extended_resource_name,
    is_scalar_resource,
    label_key_error,
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

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# config.MaxCustomPriorityScore: shape scores are 0..10, scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

DEFAULT_RESOURCES: tuple[Mapping[str, Any], ...] = (
    {"name": CPU, "weight": 1},
    {"name": MEMORY, "weight": 1},
)

DEFAULT_ARGS: Mapping[str, Any] = {
    "ignoredResources": [],
    "ignoredResourceGroups": [],
    "scoringStrategy": {
        "type": LEAST_ALLOCATED,
        "resources": [dict(r) for r in DEFAULT_RESOURCES],
    },
}


def insufficient_reason(resource: str) -> str:
    return _BASIC_REASONS.get(resource) or f"Insufficient {resource}"


# -- arguments ------------------------------------------------------------------------------
def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int


def default_resources(raw: Any) -> Any:
    """SetDefaults for a ``resources`` list: empty → cpu and memory; weight 0 → 1."""
    if raw is None or (isinstance(raw, list) and not raw):
        return [dict(r) for r in DEFAULT_RESOURCES]
    if not isinstance(raw, list):
        return raw
    out: list[Any] = []
    for item in raw:
        if isinstance(item, Mapping):
            item = dict(item)
            if item.get("weight") in (None, 0):
                item["weight"] = 1
        out.append(item)
    return out


def defaulted_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream ``SetDefaults_NodeResourcesFitArgs`` over the (shallowly merged) args."""
    out = {**DEFAULT_ARGS, **args}
    strategy = out.get("scoringStrategy")
    if strategy is None:
        strategy = DEFAULT_ARGS["scoringStrategy"]
    if isinstance(strategy, Mapping):
        strategy = dict(strategy)
        strategy["resources"] = default_resources(strategy.get("resources"))
    out["scoringStrategy"] = strategy
    for key in ("ignoredResources", "ignoredResourceGroups"):
        if out.get(key) is None:
            out[key] = []
    return out


def resource_items(
    resources: Any, path: str, errors: list[str]
) -> Iterator[tuple[str, str | None, Any]]:
    """The well-formed items of a ``resources`` list as (path, name, weight).

    Shape problems (not a list, an item that is not a mapping, unknown fields, a missing name)
    go to ``errors``; an item without a valid name is yielded with ``None`` so its weight is
    still checked. Shared by the plugins whose arguments list resources with weights.
    """
    if not isinstance(resources, list):
        errors.append(f"{path}: Invalid value: {resources!r}: must be a list")
        return
    for i, item in enumerate(resources):
        p = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{p}: Invalid value: {item!r}: must be a mapping with name and weight")
            continue
        errors.extend(f"{p}.{k}: Invalid value: unknown field" for k in item
                      if k not in ("name", "weight"))
        name = item.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"{p}.name: Required value: must be a non-empty string")
            name = None
        yield p, name, item.get("weight")


def resources_errors(resources: Any, path: str) -> list[str]:
    """validateResources: each weight in (0, 100]; the list and its items well-formed."""
    errors: list[str] = []
    for p, name, weight in resource_items(resources, path, errors):
        if not _is_int(weight) or not 0 < weight <= 100:
            errors.append(
                f"{p}.weight: Invalid value: {weight!r}: resource weight of {name} not in "
                "valid range (0, 100]"
            )
    return errors


def shape_errors(shape: Any, path: str) -> list[str]:
    """validateFunctionShape."""
    if not isinstance(shape, list) or not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errors: list[str] = []
    points: list[tuple[Any, Any] | None] = []
    for i, point in enumerate(shape):
        if not isinstance(point, Mapping):
            errors.append(f"{path}[{i}]: Invalid value: {point!r}: must be a mapping")
            points.append(None)
            continue
        errors.extend(f"{path}[{i}].{k}: Invalid value: unknown field" for k in point
                      if k not in ("utilization", "score"))
        points.append((point.get("utilization", 0), point.get("score", 0)))
    for i in range(1, len(points)):
        before, after = points[i - 1], points[i]
        if before is None or after is None:
            continue
        prev, cur = before[0], after[0]
        if _is_int(prev) and _is_int(cur) and prev >= cur:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {cur}: "
                "values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(points):
        if point is None:
            continue
        utilization, score = point
        if not _is_int(utilization) or not 0 <= utilization <= MAX_UTILIZATION:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {utilization!r}: "
                f"not in valid range [0, {MAX_UTILIZATION}]"
            )
        if not _is_int(score) or not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{path}[{i}].score: Invalid value: {score!r}: "
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return errors


def validate_args(args: Mapping[str, Any], path: str) -> None:
    """ValidateNodeResourcesFitArgs, after defaulting; raises :class:`ConfigError`."""
    errors: list[str] = [
        f"{path}.{key}: Invalid value: unknown field"
        for key in sorted(set(args) - set(DEFAULT_ARGS))
    ]
    merged = defaulted_args(args)
    for key in ("ignoredResources", "ignoredResourceGroups"):
        values = merged[key]
        if not isinstance(values, list):
            errors.append(f"{path}.{key}: Invalid value: {values!r}: must be a list")
            continue
        for i, value in enumerate(values):
            p = f"{path}.{key}[{i}]"
            if key == "ignoredResourceGroups" and isinstance(value, str) and "/" in value:
                errors.append(
                    f"{p}: Invalid value: {value!r}: resource group name can't contain '/'"
                )
            why = label_key_error(value) if isinstance(value, str) else "must be a string"
            if why is not None:
                errors.append(f"{p}: Invalid value: {value!r}: {why}")
    strategy = merged["scoringStrategy"]
    sp = f"{path}.scoringStrategy"
    if not isinstance(strategy, Mapping):
        errors.append(f"{sp}: Invalid value: {strategy!r}: must be a mapping")
    else:
        errors.extend(
            f"{sp}.{k}: Invalid value: unknown field"
            for k in strategy
            if k not in ("type", "resources", "requestedToCapacityRatio")
        )
        kind = strategy.get("type")
        if kind not in STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in STRATEGIES)
            errors.append(
                f"{sp}.type: Unsupported value: {kind!r}: supported values: {supported}"
            )
        errors.extend(resources_errors(strategy.get("resources"), f"{sp}.resources"))
        ratio = strategy.get("requestedToCapacityRatio")
        rp = f"{sp}.requestedToCapacityRatio"
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            if ratio is None:
                errors.append(
                    f"{rp}: Required value: must be specified when type is "
                    "RequestedToCapacityRatio"
                )
            elif not isinstance(ratio, Mapping):
                errors.append(f"{rp}: Invalid value: {ratio!r}: must be a mapping")
            else:
                errors.extend(f"{rp}.{k}: Invalid value: unknown field" for k in ratio
                              if k != "shape")
                errors.extend(shape_errors(ratio.get("shape"), f"{rp}.shape"))
        elif ratio is not None:
            errors.append(f"{rp}: Forbidden: must be nil when type is not RequestedToCapacityRatio")
    if errors:
        raise ConfigError("; ".join(errors))


def parse_resources(raw: Sequence[Mapping[str, Any]]) -> tuple[ResourceSpec, ...]:
    return tuple(ResourceSpec(str(r["name"]), int(r["weight"])) for r in raw)


# -- pod and node quantities ----------------------------------------------------------------
def _nonzero_index(name: str) -> int:
    return 0 if name == CPU else 1


def pod_request(pod: PodInfo, name: str, use_requested: bool) -> int:
    """The pod's request of ``name``; cpu/memory with non-zero defaults unless ``use_requested``."""
    if not use_requested and name == CPU:
        return int(pod.non_zero_cpu)
    if not use_requested and name == MEMORY:
        return int(pod.non_zero_memory)
    return int(pod.requests.get(name, 0))


def _nonzero_deltas(nodes: NodeView) -> IntArray | None:
    """Per row: non-zero cpu/memory of the hypothetical pods added minus those removed."""
    if not nodes.has_deltas:
        return None
    out = np.zeros((len(nodes), 2), dtype=np.int64)
    for pos in range(len(nodes)):
        for p in nodes.added[pos] if nodes.added is not None else ():
            out[pos, 0] += p.non_zero_cpu
            out[pos, 1] += p.non_zero_memory
        for p in nodes.removed[pos] if nodes.removed is not None else ():
            out[pos, 0] -= p.non_zero_cpu
            out[pos, 1] -= p.non_zero_memory
    return out


def _column(nodes: NodeView, name: str) -> int | None:
    col = nodes.snapshot.resources.column.get(name)
    if col is None or col >= nodes.requested.shape[1]:
        return None
    return col


_NATIVE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})


def _allocation_columns(
    nodes: NodeView, resources: Sequence[ResourceSpec], pod_requests: Sequence[int]
) -> list[int | None]:
    """The table column a score reads for each resource; None for a resource it skips: a
    scalar one the pod does not ask for, one it does not know, or one no node has."""
    column = nodes.snapshot.resources.column
    width = nodes.requested.shape[1]
    cols: list[int | None] = []
    for spec, request in zip(resources, pod_requests, strict=True):
        name = spec.name
        col = (column.get(name) if name in _NATIVE or (request and is_scalar_resource(name))
               else None)
        cols.append(col if col is not None and col < width else None)
    return cols


@dataclass(frozen=True)
class AllocationInputs:
    """One row per configured resource, one column per node of the view: requested (with the
    pod), allocated, allocatable. A skipped resource reads 0 allocatable (and 0 the others).
    ``present`` says which (resource, node) pairs have allocatable (None: all of them, the
    usual case); ``divisor`` is allocatable with 1 where there is none."""

    requested: IntArray
    allocated: IntArray
    allocatable: IntArray
    present: BoolArray | None
    divisor: IntArray


def allocation_inputs(
    nodes: NodeView,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
) -> AllocationInputs:
    """Upstream ``calculateNodeAllocatableRequest`` for every resource and node at once; cpu
    and memory count non-zero requests unless ``use_requested``."""
    table = nodes.snapshot.nodes
    cols = _allocation_columns(nodes, resources, pod_requests)
    taken = [0 if c is None else c for c in cols]
    # Resource-major: each resource's values are contiguous, and sums run across rows.
    allocatable = np.take(table.allocatable, nodes.idx, axis=0).T[taken]
    used = nodes.requested.T[taken]
    non_zero = [(j, _nonzero_index(spec.name)) for j, spec in enumerate(resources)
                if spec.name in (CPU, MEMORY) and cols[j] is not None]
    if non_zero and not use_requested:
        counted = np.take(table.non_zero_requested, nodes.idx, axis=0)
        deltas = _nonzero_deltas(nodes)
        if deltas is not None:
            counted = counted + deltas
        for j, k in non_zero:
            used[j] = counted[:, k]
    skipped = [j for j, c in enumerate(cols) if c is None]
    if skipped:
        allocatable[skipped] = 0
    pod = np.asarray(pod_requests, dtype=np.int64)[:, None]
    present = allocatable != 0
    if present.all():
        return AllocationInputs(used + pod, used, allocatable, None, allocatable)
    return AllocationInputs(
        np.where(present, used + pod, 0), np.where(present, used, 0), allocatable, present,
        np.where(present, allocatable, 1),
    )


_K = TypeVar("_K", bound=Hashable)
# What Filter checks of a pod: each resource it requests (> 0), with the quantity.
Checks = tuple[tuple[str, int], ...]


class _Kept:
    """One key's values per table row, which rows hold a current value, and the rows whose
    value went stale since the memo last looked at the table's change log."""

    __slots__ = ("current", "dirty", "mark", "values")

    def __init__(self, capacity: int, mark: int) -> None:
        self.current: BoolArray = np.zeros(capacity, dtype=np.bool_)
        self.values: IntArray = np.zeros(capacity, dtype=np.int64)
        self.dirty: set[int] = set()
        self.mark = mark


class RowMemo(Generic[_K]):
    """Values per node row (a score, whether the pod fits) for each recent key (a pod's
    requests), kept until the row changes: pods of one ReplicaSet ask the same, and between
    two of them only the rows that took a pod change. A view with hypothetical pods is
    computed afresh.

    ``compute(view, key)`` must read nothing but the view's rows and ``key``."""

    def __init__(
        self, compute: Callable[[NodeView, _K], IntArray], keys: int = 16
    ) -> None:
        self._compute = compute
        self._keys = keys
        # Per key, least recently used first. A dict, not a cachetools cache: this runs
        # thrice a cycle.
        self._kept: dict[_K, _Kept] = {}
        self._table: object = None

    def values(self, nodes: NodeView, key: _K) -> IntArray:
        if not nodes.as_in_table:
            return self._compute(nodes, key)
        table = nodes.snapshot.nodes
        if table is not self._table:
            self._kept.clear()
            self._table = table
        kept = self._kept.pop(key, None)
        if kept is None:
            kept = _Kept(table.capacity, table.change_mark)
            if len(self._kept) >= self._keys:
                del self._kept[next(iter(self._kept))]
        self._kept[key] = kept
        changed = table.rows_changed_since(kept.mark)
        if changed is None:  # every row changed (the table may have grown)
            kept = self._kept[key] = _Kept(table.capacity, table.change_mark)
        elif changed:
            kept.mark += len(changed)
            current = kept.current
            for row in changed:  # a row or two a cycle: item by item beats a fancy index
                current[row] = False
            kept.dirty.update(changed)
        rows = nodes.idx
        current = kept.current.take(rows)
        if np.count_nonzero(current) != rows.shape[0]:
            fresh = self._fresh(nodes, current, kept)
            kept.values[fresh.idx] = self._compute(fresh, key)
            kept.current[fresh.idx] = True
        return kept.values.take(rows)

    @staticmethod
    def _fresh(nodes: NodeView, current: BoolArray, kept: _Kept) -> NodeView:
        """The rows to compute: the view's stale rows and every other changed row of the
        table when they are no more than the view's (a computation costs about the same for
        1 row as for 500, and the next views need not ask again), else the view's alone."""
        stale = nodes.idx[~current]
        if len(kept.dirty) + stale.shape[0] > nodes.idx.shape[0]:
            kept.dirty.difference_update(stale.tolist())
            return NodeView.of(nodes.snapshot, stale)
        dirty = kept.dirty
        dirty.update(stale.tolist())
        rows = np.fromiter(dirty, dtype=np.int64, count=len(dirty))
        dirty.clear()
        # A row that changed may since have lost its node (the view's rows all have one).
        return NodeView.of(nodes.snapshot, rows[nodes.snapshot.nodes.alive.take(rows)])


# -- scorers --------------------------------------------------------------------------------
def _go_div(a: IntArray, b: IntArray | int) -> IntArray:
    """Go's integer division (truncates towards zero); ``b`` is never 0 where it matters."""
    b_arr = np.asarray(b, dtype=np.int64)
    safe = np.where(b_arr == 0, 1, b_arr)
    q = np.abs(a) // np.abs(safe)
    return np.where((a < 0) != (safe < 0), -q, q).astype(np.int64)


def _weights(resources: Sequence[ResourceSpec]) -> IntArray:
    """The resources' weights as a column, against the (resource, node) inputs."""
    return np.asarray([spec.weight for spec in resources], dtype=np.int64)[:, None]


def least_allocated_score(inputs: AllocationInputs, weights: IntArray) -> IntArray:
    req, alloc = inputs.requested, inputs.allocatable
    score = np.where(req > alloc, 0, (alloc - req) * MAX_NODE_SCORE // inputs.divisor)
    return _weighted(score, inputs.present, weights)


def most_allocated_score(inputs: AllocationInputs, weights: IntArray) -> IntArray:
    req, alloc = inputs.requested, inputs.allocatable
    score = np.minimum(req, alloc) * MAX_NODE_SCORE // inputs.divisor
    return _weighted(score, inputs.present, weights)


def _weighted(score: IntArray, counted: BoolArray | None, weights: IntArray) -> IntArray:
    """Per node, the weighted mean (rounded down) of the counted resources' scores
    (``counted`` None: every resource on every node); ``weights`` is a column."""
    if weights.size == 0:
        raise ValueError("resources not found")
    if counted is None:
        # np.dot: the weighted sums in one operation (integers, so exactly the same).
        total: IntArray = np.dot(weights[:, 0], score) // int(weights.sum())
        return total
    node_score = np.where(counted, score * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    return np.where(weight_sum == 0, 0, node_score // np.where(weight_sum == 0, 1, weight_sum))


@dataclass(frozen=True)
class BrokenLinear:
    """``helper.BuildBrokenLinearFunction`` over arrays (utilizations strictly increasing)."""

    utilization: tuple[int, ...]
    score: tuple[int, ...]

    def __call__(self, p: IntArray) -> IntArray:
        u, s = self.utilization, self.score
        out = np.full(p.shape, s[-1], dtype=np.int64)
        # Later points first, so the first point with p <= u[i] wins.
        for i in range(len(u) - 1, -1, -1):
            if i == 0:
                value: IntArray = np.full(p.shape, s[0], dtype=np.int64)
            else:
                value = s[i - 1] + _go_div((s[i] - s[i - 1]) * (p - u[i - 1]), u[i] - u[i - 1])
            out = np.where(p <= u[i], value, out)
        return out


def requested_to_capacity_ratio_score(
    inputs: AllocationInputs, weights: IntArray, shape: BrokenLinear
) -> IntArray:
    req, alloc, present = inputs.requested, inputs.allocatable, inputs.present
    if weights.size == 0:
        raise ValueError("resources not found")
    utilization = np.where(req > alloc, MAX_UTILIZATION, req * MAX_UTILIZATION // inputs.divisor)
    score = shape(utilization)
    counted = score > 0 if present is None else present & (score > 0)
    node_score = np.where(counted, score * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    # math.Round(ns / ws), half away from zero, exactly in integers (both are >= 0).
    safe_ws = np.where(weight_sum == 0, 1, weight_sum)
    return np.where(weight_sum == 0, 0, (2 * node_score + safe_ws) // (2 * safe_ws))


def build_shape(raw: Sequence[Mapping[str, Any]]) -> BrokenLinear:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return BrokenLinear(
        tuple(int(p.get("utilization", 0)) for p in raw),
        tuple(int(p.get("score", 0)) * scale for p in raw),
    )


# -- the plugin -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PodResourceRequest:
    """What Filter checks: the basic resources, then the scalar ones, request > 0 only."""

    checks: Checks
    any_request: bool


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

    def __init__(self, args: Mapping[str, Any]) -> None:
        args = defaulted_args(args)
        self.ignored_resources = frozenset(args["ignoredResources"])
        self.ignored_resource_groups = frozenset(args["ignoredResourceGroups"])
        strategy = args["scoringStrategy"]
        self.strategy: str = strategy["type"]
        self.resources = parse_resources(strategy["resources"])
        self.shape: BrokenLinear | None = None
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            self.shape = build_shape(strategy["requestedToCapacityRatio"]["shape"])
        self._weights = _weights(self.resources)
        self._scores: RowMemo[tuple[int, ...]] = RowMemo(self._score_rows)
        self._misfits: RowMemo[Checks] = RowMemo(self._misfit_rows)

    # -- PreFilter / Filter ---------------------------------------------------------------
    def _request(self, pod: PodInfo) -> PodResourceRequest:
        return compute_pod_resource_request(
            pod, self.ignored_resources, self.ignored_resource_groups
        )

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
        misfits = self._misfits.values(nodes, request.checks)
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

    def _misfit_rows(self, nodes: NodeView, checks: Checks) -> IntArray:
        """Per row of the view: 1 where Filter rejects a pod that requests ``checks``."""
        table = nodes.snapshot.nodes
        misfit = nodes.pod_count + 1 > table.allowed_pods.take(nodes.idx)
        for name, q in checks:
            col = _column(nodes, name)
            if col is None:
                misfit |= q > 0
            else:
                misfit |= q > table.allocatable[nodes.idx, col] - nodes.requested[:, col]
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
            if not np.count_nonzero(short):
                continue
            result.add_reason(short, Code.UNSCHEDULABLE, insufficient_reason(name))
            unresolvable = short & (q > allocatable)
            result.codes[unresolvable] = np.uint8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return result

    # -- PreScore / Score -----------------------------------------------------------------
    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        return tuple(pod_request(pod, r.name, use_requested=False) for r in self.resources)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        state.write(PRE_SCORE_STATE_KEY, self.pod_requests(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        pod_requests = state.get(PRE_SCORE_STATE_KEY)
        if pod_requests is None:
            pod_requests = self.pod_requests(pod)
        return self._scores.values(nodes, pod_requests)

    def _score_rows(self, nodes: NodeView, pod_requests: tuple[int, ...]) -> IntArray:
        inputs = allocation_inputs(nodes, self.resources, pod_requests, use_requested=False)
        if self.strategy == MOST_ALLOCATED:
            return most_allocated_score(inputs, self._weights)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            assert self.shape is not None
            return requested_to_capacity_ratio_score(inputs, self._weights, self.shape)
        return least_allocated_score(inputs, self._weights)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores

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
        ]


# -- queueing hints -------------------------------------------------------------------------
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


def new(args: Mapping[str, Any], handle: Handle) -> NodeResourcesFit:
    return NodeResourcesFit(args)


SPEC = PluginSpec(name=NAME, factory=new, default_args=DEFAULT_ARGS, validate=validate_args)
