"""NodeResourcesBalancedAllocation: favour nodes whose resource usage stays balanced.

Upstream ``noderesources/balanced_allocation.go`` (v1.37). Per node, the fractions
``min(1, requested / allocatable)`` of the configured resources (default cpu and memory; plain
requests, no non-zero defaults) give a balance score ``int((1 - std) · 100)``, where std is
``|f1 - f2| / 2`` for two resources and the population standard deviation for more. Since
v1.36 the score rewards the *improvement* the pod brings::

    score = 50 + (50 + balance(with pod) - balance(without pod)) / 2

so it lies in [50, 100] and is about 75 when the pod changes little. A resource the node has
none of is left out, and so is a scalar resource the pod does not request. PreScore answers
Skip for a pod that requests none of the resources (a best-effort pod, kubernetes#129138).
No normalisation.

A DRA-backed extended resource in ``resources`` (one a DeviceClass serves,
DRAExtendedResource) is counted, on a node without it in its allocatable, from the node's
devices the class selects and those of them in use, as NodeResourcesFit counts it (upstream's
``getDRAPreScoredParams`` and ``calculateDRAResourceTotals`` in ``resource_allocation.go``).
Upstream's plugin has no CEL cache and panics on a class with a selector; ours evaluates it.

The floating-point operations are done in upstream's order so that scores match exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    DraManager,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    SelectorCache,
    Status,
)
from scheduler.plugins.helper.resource_allocation import (
    DEFAULT_RESOURCES,
    DraScoring,
    ResourceSpec,
    allocation_inputs,
    may_be_dra_backed,
    parse_resources,
    requests_reader,
)
from scheduler.plugins.helper.row_memo import RowMemo

NAME = "NodeResourcesBalancedAllocation"
# One array of rows per resource: a list of them, or a 2-D array (resource, row).
Columns = Sequence[IntArray] | IntArray

PRE_SCORE_STATE_KEY = "PreScore" + NAME
_NAME_REQUIRED = "Required value: must be a non-empty string"
_WEIGHT_NOT_1 = "Invalid value: {value!r}: must be 1"

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class BalancedResource:
    """One of the args' ``resources`` (upstream's ResourceSpec); a weight of 0 or none is 1."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"
    mapping_reason: ClassVar[str] = "must be a mapping with name and weight"

    name: str = field(default="", metadata={"type_error": _NAME_REQUIRED})
    weight: int | None = field(default=None, metadata={"type_error": _WEIGHT_NOT_1})


@dataclass(frozen=True)
class BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs with upstream's v1 defaults (cpu and memory);
    ValidateNodeResourcesBalancedAllocationArgs through field_errors."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    # None or empty: SetDefaults_NodeResourcesBalancedAllocationArgs' cpu and memory.
    resources: list[BalancedResource] | None = field(
        default_factory=lambda: [BalancedResource(str(r["name"]), int(r["weight"]))
                                 for r in DEFAULT_RESOURCES],
        metadata={"type_error": "Invalid value: {value!r}: must be a list"})

    def field_errors(self, path: str) -> Iterator[str]:
        seen: set[str] = set()
        for i, resource in enumerate(self.resources or ()):
            p = f"{path}.resources[{i}]"
            if not resource.name:
                yield f"{p}.name: {_NAME_REQUIRED}"
            elif resource.name in seen:
                yield f'{p}.name: Duplicate value: "{resource.name}"'
            seen.add(resource.name)
            if resource.weight not in (None, 0, 1):
                yield f"{p}.weight: {_WEIGHT_NOT_1.format(value=resource.weight)}"

    def resource_specs(self) -> tuple[ResourceSpec, ...]:
        """The defaulted resources, each of weight 1."""
        if not self.resources:
            return parse_resources(DEFAULT_RESOURCES)
        return tuple(ResourceSpec(r.name, 1) for r in self.resources)


def balanced_resource_score(
    requested: Columns, allocatable: Columns
) -> IntArray:
    """``balancedResourceScore`` per row: ``int((1 - std) · 100)`` over the present resources."""
    if len(allocatable) == 2 and allocatable[0].all() and allocatable[1].all():
        # The default (cpu and memory, on nodes that have both), in a few array operations.
        first = np.minimum(requested[0] / allocatable[0], 1.0)
        second = np.minimum(requested[1] / allocatable[1], 1.0)
        return ((1 - np.abs((first - second) / 2)) * float(MAX_NODE_SCORE)).astype(np.int64)
    n = allocatable[0].shape[0] if len(allocatable) else 0
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    fractions: list[tuple[FloatArray, npt.NDArray[np.bool_]]] = []
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    for req, alloc in zip(requested, allocatable, strict=True):
        present = alloc != 0
        safe = np.where(present, alloc, 1).astype(np.float64)
        fraction = np.minimum(req.astype(np.float64) / safe, 1.0)
        fraction = np.where(present, fraction, 0.0)
        first = np.where(present & (count == 0), fraction, first)
        second = np.where(present & (count == 1), fraction, second)
        total = np.where(present, total + fraction, total)
        count = count + present
        fractions.append((fraction, present))
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    if two.any():
        std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        safe_count = np.where(many, count, 1).astype(np.float64)
        mean = total / safe_count
        acc = np.zeros(n, dtype=np.float64)
        for fraction, present in fractions:
            acc = np.where(present, acc + (fraction - mean) * (fraction - mean), acc)
        std = np.where(many, np.sqrt(acc / safe_count), std)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_resource_scorer(
    requested: Columns, allocated: Columns, allocatable: Columns
) -> IntArray:
    if len(allocatable) == 2 and isinstance(allocatable, np.ndarray) and allocatable.all():
        # The default, both scores in one pass: the same float operations, twice as wide.
        # np.array, not np.stack: the same array at half the cost.
        fractions = np.minimum(np.array((requested, allocated)) / allocatable, 1.0)
        both = (1 - np.abs((fractions[:, 0] - fractions[:, 1]) / 2)) * float(MAX_NODE_SCORE)
        scores = both.astype(np.int64)
        with_pod: IntArray = scores[0]
        without_pod: IntArray = scores[1]
    else:
        with_pod = balanced_resource_score(requested, allocatable)
        without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    # The inner sum is never negative (both scores lie in [50, 100]): // is Go's division.
    return half + (half + with_pod - without_pod) // 2


# What Score reads (upstream's ``balancedAllocationPreScoreState``): the pod's request of each
# resource, and what scoring reads of DRA when a DeviceClass serves one of them. A plain tuple:
# made for every pod scored, where a NamedTuple's constructor is a call.
PreScoreState = tuple[tuple[int, ...], DraScoring | None]


class BalancedAllocation:
    name = NAME

    def __init__(self, args: BalancedAllocationArgs, dra: DraManager | None = None) -> None:
        self.resources: tuple[ResourceSpec, ...] = args.resource_specs()
        self.dra = dra
        self._dra_resources = may_be_dra_backed(self.resources)
        # Compiles the selectors of the classes behind DRA-backed extended resources.
        self._cel_cache = SelectorCache()
        self.pod_requests = requests_reader(self.resources, use_requested=True)
        self._scores: RowMemo[tuple[int, ...]] = RowMemo(self._score_rows)

    def _pre_score_state(self, requests: tuple[int, ...]) -> PreScoreState:
        if not self._dra_resources:  # as the default cpu and memory: no DeviceClass serves them
            return requests, None
        return requests, DraScoring.of(self.dra, self._dra_resources, self._cel_cache)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        requests = self.pod_requests(pod)
        if not any(requests):
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, self._pre_score_state(requests))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        pre_score: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score is None:
            requests = self.pod_requests(pod)
            if not any(requests):
                return np.zeros(len(nodes), dtype=np.int64)
            pre_score = self._pre_score_state(requests)
        if len(nodes) == 0:
            return np.zeros(0, dtype=np.int64)
        requests, dra = pre_score
        if dra is not None:
            # Device counts change with every allocation: not kept with the rows.
            return self._score_rows(nodes, requests, dra)
        return self._scores.values(nodes, requests)

    def _score_rows(self, nodes: NodeView, requests: tuple[int, ...],
                    dra: DraScoring | None = None) -> IntArray:
        inputs = allocation_inputs(nodes, self.resources, requests, use_requested=True,
                                   dra=dra)
        return balanced_resource_scorer(inputs.requested, inputs.allocated, inputs.allocatable)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


def new(args: BalancedAllocationArgs, handle: Handle) -> BalancedAllocation:
    # The registry builds one without a scheduler (handle None) to find its points.
    return BalancedAllocation(args, handle.dra if handle is not None else None)


SPEC = PluginSpec(name=NAME, factory=new, args=BalancedAllocationArgs)
