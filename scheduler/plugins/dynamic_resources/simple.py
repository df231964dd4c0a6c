"""The fast path for simple claims: the devices the full search would give, found greedily.

A claim set is *simple* when every request is ``exactly`` one class, ``ExactCount``, without
admin access or capacity requests (what scheduler_perf's DRA workloads and most pods ask).
On a node whose candidates for each such request
(``NodeView.candidates_for``: selectable, untainted, fitting, not shareable) are known,
whether a device is acceptable depends on the other devices only through whether it is
already allocated or taken earlier in this call, and through the claim's constraints over
the devices chosen before it.
Then upstream's depth-first search takes, at every step, the first free acceptable device in
search order, and when that never leads to a dead end its first complete solution is exactly
the greedy one. At a greedy dead end the claims are a bipartite matching of request slots to
free devices, which the search (trying every combination) solves exactly when one exists:
when Hall's condition fails there is none (constraints only take solutions away) and the
answer is no solution; otherwise (backtracking may find what greedy did not), and whenever
a device needs what the fast path does not model, the caller runs the full search.
A free device consuming counters (partitionable devices) is never taken here, since whether
it fits depends on the counters the other picks consume; on meeting one the claims are
tested by Hall's condition, with every such device counted as free (counters only take
solutions away), and the search decides when that does not rule the node out.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.plugin_api import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationConfiguration,
    AllocationResult,
    DeviceClass,
    DeviceID,
    DeviceSubRequest,
    ResourceClaim,
    SelectorCache,
)
from scheduler.plugins.dynamic_resources.constraints import Constraint, make_constraint
from scheduler.plugins.dynamic_resources.results import claim_configs
from scheduler.plugins.dynamic_resources.view import (
    Candidate,
    NodeView,
    Selection,
    SliceView,
    node_selector,
)

# Hall's condition is checked over every subset of a claim set's distinct selections.
_MAX_HALL_SELECTIONS = 6


class Outcome(enum.Enum):
    SEARCH = "the full search must decide"


@dataclass(frozen=True, slots=True)
class SimpleRequest:
    request: DeviceSubRequest
    selection: Selection
    selection_id: int


@dataclass(frozen=True, slots=True)
class SimplePlan:
    """The simple requests per claim and each claim's configs (they do not depend on the
    node). ``claims`` keeps the claims alive: plans are found by the claims' ids."""

    claims: tuple[ResourceClaim, ...]
    requests: tuple[tuple[SimpleRequest, ...], ...]
    configs: tuple[tuple[AllocationConfiguration, ...], ...]
    # Whether a claim has constraints (built anew per call: they keep state).
    constrained: bool = False
    # The one request of a plan of one claim without configs or constraints asking for one
    # device.
    single: SimpleRequest | None = None

    @property
    def requests_devices(self) -> bool:
        return any(self.requests)


def _simple_request(
    request: DeviceSubRequest | None, classes: Mapping[str, DeviceClass]
) -> DeviceClass | None:
    """The request's class when the request is simple (and valid: the full search reports
    what is wrong with it)."""
    if (
        request is None
        or request.allocation_mode == ALL
        or request.admin_access
        or request.capacity_requests is not None
        or any(s is None for s in request.selectors)
    ):
        return None
    device_class = classes.get(request.device_class_name)
    if device_class is None or any(s is None for s in device_class.selectors):
        return None
    return device_class


def simple_plan(
    claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass], view: SliceView
) -> SimplePlan | None:
    """The plan for these claims, or None when one of them is not simple."""
    requests: list[tuple[SimpleRequest, ...]] = []
    configs = []
    for claim in claims:
        if any(make_constraint(c) is None for c in claim.spec.constraints):
            return None
        mine = []
        used_classes = []
        for request in claim.spec.requests:
            device_class = _simple_request(request.exactly, classes)
            if device_class is None or request.exactly is None:
                return None
            selection = Selection.of(device_class, request.exactly)
            mine.append(SimpleRequest(request.exactly, selection, view.selection_id(selection)))
            used_classes.append(device_class)
        if sum(r.request.count for r in mine) > ALLOCATION_RESULTS_MAX_SIZE:
            return None
        requests.append(tuple(mine))
        configs.append(claim_configs(claim, [r.name for r in claim.spec.requests], used_classes))
    constrained = any(claim.spec.constraints for claim in claims)
    single = None
    if len(requests) == 1 and len(requests[0]) == 1 and not configs[0] and not constrained:
        single = requests[0][0] if requests[0][0].request.count == 1 else None
    return SimplePlan(tuple(claims), tuple(requests), tuple(configs), constrained, single)


def allocate_simple(
    plan: SimplePlan,
    node: NodeView,
    allocated: tuple[frozenset[DeviceID], Mapping[DeviceID, object]],
    cel_cache: SelectorCache,
) -> list[AllocationResult] | Outcome | None:
    """The greedy allocation; ``allocated`` is the devices in use and those with consumed
    capacity (``AllocatedState``)."""
    if plan.single is not None:
        return _allocate_single(plan.single, node, allocated, cel_cache)
    in_use, with_capacity = allocated
    taken: set[DeviceID] = set()
    picks_per_claim: list[list[tuple[DeviceSubRequest, Candidate]]] = []
    for claim, requests in zip(plan.claims, plan.requests, strict=True):
        picks: list[tuple[DeviceSubRequest, Candidate]] = []
        # simple_plan made sure every constraint is of a known kind.
        constraints = [c for c in map(make_constraint, claim.spec.constraints) if c is not None]
        for r in requests:
            candidates = node.candidates_for(r.selection_id, r.selection, cel_cache)
            need = r.request.count
            for candidate in candidates.walk():
                device_id = candidate.device_id
                if device_id in in_use or device_id in taken:
                    continue
                if device_id in with_capacity:
                    return Outcome.SEARCH
                if candidate.device.consumes_counters:
                    return None if _infeasible(plan, node, in_use, cel_cache) else Outcome.SEARCH
                if constraints and not _constraints_admit(constraints, r.request, candidate):
                    continue
                taken.add(device_id)
                picks.append((r.request, candidate))
                need -= 1
                if not need:
                    break
            if need:
                return None if _infeasible(plan, node, in_use, cel_cache) else Outcome.SEARCH
        picks_per_claim.append(picks)
    return [
        _claim_result(node, picks, configs)
        for picks, configs in zip(picks_per_claim, plan.configs, strict=True)
    ]


def _constraints_admit(
    constraints: list[Constraint], request: DeviceSubRequest, candidate: Candidate
) -> bool:
    """Every constraint of the claim takes the device (``allocateDevice``'s loop); on a
    refusal the ones that took it let it go again."""
    for i, constraint in enumerate(constraints):
        if not constraint.add(request.name, "", candidate.device, candidate.device_id):
            for earlier in constraints[:i]:
                earlier.remove(request.name, "")
            return False
    return True


def _infeasible(
    plan: SimplePlan, node: NodeView, in_use: frozenset[DeviceID], cel_cache: SelectorCache
) -> bool:
    """Hall's condition fails: some set of selections needs more devices than their free
    candidates together hold, so no assignment exists and the search would find none (it
    tries every combination). The free candidates over-count (a device with consumed
    capacity counts as free), which keeps the answer sound."""
    need: dict[int, int] = {}
    free: dict[int, frozenset[DeviceID]] = {}
    for requests in plan.requests:
        for r in requests:
            need[r.selection_id] = need.get(r.selection_id, 0) + r.request.count
            if r.selection_id not in free:
                candidates = node.candidates_for(r.selection_id, r.selection, cel_cache).every()
                if candidates is None:
                    return False
                free[r.selection_id] = frozenset(
                    c.device_id for c in candidates if c.device_id not in in_use
                )
    ids = list(need)
    if len(ids) > _MAX_HALL_SELECTIONS:
        return False
    for mask in range(1, 1 << len(ids)):
        chosen = [i for bit, i in enumerate(ids) if mask >> bit & 1]
        if len(frozenset().union(*(free[i] for i in chosen))) < sum(need[i] for i in chosen):
            return True
    return False


def _allocate_single(
    r: SimpleRequest,
    node: NodeView,
    allocated: tuple[frozenset[DeviceID], Mapping[DeviceID, object]],
    cel_cache: SelectorCache,
) -> list[AllocationResult] | Outcome | None:
    """``allocate_simple`` for the commonest claim set: one claim without configs, one
    request for one device."""
    candidates = node.candidates_for(r.selection_id, r.selection, cel_cache)
    in_use, with_capacity = allocated
    for known in candidates.found:
        if known.device_id in in_use:
            continue
        if known.device_id in with_capacity or known.device.consumes_counters:
            return Outcome.SEARCH
        return [known.alone_result(r.request, node)]
    while (new := candidates.advance()) is not None:
        if new.device_id in in_use:
            continue
        if new.device_id in with_capacity or new.device.consumes_counters:
            return Outcome.SEARCH
        return [new.alone_result(r.request, node)]
    return Outcome.SEARCH if candidates.needs_search else None


def _claim_result(
    node: NodeView,
    picks: list[tuple[DeviceSubRequest, Candidate]],
    configs: tuple[AllocationConfiguration, ...],
) -> AllocationResult:
    if len(picks) == 1 and not configs:
        request, candidate = picks[0]
        return candidate.alone_result(request, node)
    return AllocationResult(
        results=tuple(c.simple_result(request) for request, c in picks),
        config=configs,
        node_selector=node_selector(node, [(request.name, c) for request, c in picks]),
    )
