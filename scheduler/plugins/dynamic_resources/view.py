"""What the allocator knows of the slices, kept between scheduling cycles while they do not change.

Upstream recomputes a node's pools (``GatherPools``) and every device's selector verdicts on
each ``Allocate`` call; in Go that is cheap, in Python it was most of a Filter call. The
slices change far less often than pods are scheduled, so ``SliceView`` keeps, per node:

- the node's pools in allocation order (``gather_pools``), and
- per *selection* (a class's selectors, a request's selectors and tolerations), the devices
  of those pools that the selection can take, in upstream's search order, with nothing
  allocated: selectable (CEL, per-device node selection), not tainted against the
  tolerations, their capacity fitting a request for none (``Candidates``, classified only
  as far as a caller has asked). At a device that needs the full search (a CEL or capacity
  error to report, a shareable device, a device consuming counters) the classification
  stops and says so.

It also counts, per cycle, the devices in use per slice (``in_use_per_slice``), so that the
allocator can reject a node whose devices are all in use without looking at them.

A view is valid for one set of slices (with DeviceTaintRules applied): the owner builds a new
one when a slice or rule changes, from the previous one, which hands over the node views of
nodes whose slices are the same objects. Device classes may change freely: a selection holds
the class's selectors themselves, not its name.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from scheduler.plugin_api import (
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    AllocationResult,
    CELError,
    Device,
    DeviceClass,
    DeviceID,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    ResourceClaim,
    ResourceSlice,
    SelectorCache,
    enhance_runtime_error,
)
from scheduler.plugins.dynamic_resources import capacity as cap
from scheduler.plugins.dynamic_resources.pools import Pool, gather_pools
from scheduler.plugins.helper.dra_nodes import node_matches

# A node view per node (and label set, where slices select nodes by label); far more than a
# cluster's nodes means labels keep changing, and the memo starts over.
_MAX_NODE_VIEWS = 50_000
# Sets of the full search's verdicts a node keeps (one per class and request selectors).
_MAX_VERDICT_SETS = 256
# Candidates are classified under this lock: the memo is shared by whoever holds the cache.
_CLASSIFYING = threading.Lock()
# Distinct selections (class and request selectors, tolerations) before the memo starts over.
_MAX_SELECTIONS = 10_000
# Distinct claim shapes (specs and the classes they name) before the outcomes start over;
# a shape is found by comparing with each known one, once per cycle.
_MAX_SHAPES = 64
# Outcomes a node keeps (one per claim shape and state of its devices).
_MAX_OUTCOMES = 32


class AllocationError(Exception):
    """Allocation cannot proceed (upstream returns an error): the pod's attempt fails."""


class FailedOnNodeError(AllocationError):
    """``ErrFailedAllocationOnNode``: only this node is unsuitable (a UU status there)."""


def device_id_str(device_id: DeviceID) -> str:
    return "/".join(device_id)


def claim_ref(claim: ResourceClaim) -> str:
    """``klog.KObj(claim)``."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


@dataclass(slots=True)
class Candidate:
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool
    # For the fast path, whose candidates belong to one node and one selection (so the
    # tolerations are fixed) and are neither shared nor admin-accessed: the device's result
    # per request name, and the whole AllocationResult of a claim that gets only this device
    # and has no configs (frozen dataclasses are slow to build; both are immutable).
    results: dict[str, DeviceRequestAllocationResult] | None = None
    claim_results: dict[str, AllocationResult] | None = None

    def simple_result(self, request: DeviceSubRequest) -> DeviceRequestAllocationResult:
        if self.results is None:
            self.results = {}
        found = self.results.get(request.name)
        if found is None:
            found = DeviceRequestAllocationResult(
                request=request.name,
                driver=self.device_id[0],
                pool=self.device_id[1],
                device=self.device_id[2],
                tolerations=request.tolerations,
                binding_conditions=self.device.binding_conditions,
                binding_failure_conditions=self.device.binding_failure_conditions,
            )
            self.results[request.name] = found
        return found

    def alone_result(self, request: DeviceSubRequest, node: NodeView) -> AllocationResult:
        """The AllocationResult of a claim without configs that gets only this device."""
        if self.claim_results is None:
            self.claim_results = {}
        found = self.claim_results.get(request.name)
        if found is None:
            found = AllocationResult(
                results=(self.simple_result(request),),
                node_selector=node_selector(node, [(request.name, self)]),
            )
            self.claim_results[request.name] = found
        return found


def taint_prevents(device: Device, request: DeviceSubRequest) -> bool:
    """``taintPreventsAllocation``: a NoSchedule/NoExecute taint the request does not
    tolerate."""
    return any(
        taint.effect in (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)
        and not any(t.tolerates(taint) for t in request.tolerations)
        for taint in device.taints
    )


def selectors_match(
    cel_cache: SelectorCache, owner: str, candidate: Candidate, selectors: Sequence[str | None]
) -> bool:
    """``selectorsMatch``: every CEL selector; compile and runtime errors are errors."""
    for i, expression in enumerate(selectors):
        compiled = cel_cache.get_or_compile(expression or "")
        if compiled.error is not None:
            raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
        try:
            matched = compiled.driver_verdict(candidate.slice.driver)
            if matched is None:
                matched = compiled.matches(candidate.device.cel_input(candidate.slice.driver))
            elif (error := candidate.device.cel_conversion_error()) is not None:
                raise CELError(error)
        except CELError as err:
            raise AllocationError(
                f"{owner}: selector #{i} on device {device_id_str(candidate.device_id)}: "
                f"CEL runtime error: {enhance_runtime_error(str(err))}"
            ) from err
        if not matched:
            return False
    return True


def selectable(
    cel_cache: SelectorCache,
    owners: tuple[str, str],
    selectors: tuple[Sequence[str | None], Sequence[str | None]],
    candidate: Candidate,
    node: tuple[str, Mapping[str, str]],
) -> bool:
    """``isSelectable``: class selectors, request selectors, per-device node selection;
    ``owners`` name the class and the claim in error messages."""
    device = candidate.device
    return (
        selectors_match(cel_cache, owners[0], candidate, selectors[0])
        and selectors_match(cel_cache, owners[1], candidate, selectors[1])
        and (
            not candidate.slice.per_device_node_selection
            or node_matches(
                node[0], node[1], device.node_name, device.all_nodes, device.node_selector
            )
        )
    )


@dataclass(frozen=True, slots=True)
class Selection:
    """What decides, nothing being allocated, whether a request may take a device: the
    class's selectors and the request without what does not (name, count, class name).
    Only requests without capacity requests have one (they must be hashable)."""

    class_selectors: tuple[str | None, ...]
    request: DeviceSubRequest

    @classmethod
    def of(cls, device_class: DeviceClass, request: DeviceSubRequest) -> Selection:
        return cls(device_class.selectors, replace(request, name="", count=1,
                                                   device_class_name=""))


class NodeView:
    """One node's pools and, per selection, the devices it may take (see module docstring)."""

    def __init__(
        self,
        node_name: str,
        labels: Mapping[str, str],
        pools: list[Pool],
        slices: list[ResourceSlice],
    ) -> None:
        self.node = (node_name, labels)
        self.pools = pools
        # The slices the pools were gathered from (held, so their identities stay theirs),
        # and whether the pools needed no other slice (a pool all of whose slices are here).
        self.slices = slices
        self.self_contained = all(s.resource_slice_count == 1 for s in slices) and len(
            {(s.driver, s.pool) for s in slices}
        ) == len(slices)
        self.any_invalid = any(p.invalid for p in pools)
        # The slices the search looks at, and how many devices they hold.
        self.usable_slices = [
            s for p in pools if not (p.incomplete or p.invalid) for s in p.slices
        ]
        self.usable_devices = sum(len(s.devices) for s in self.usable_slices)
        # Every device of the node's pools, those on other nodes included (their use
        # counts against the pools' counters), and whether a device is shareable or
        # consumes counters (what the fast path does not model).
        self.device_ids = frozenset(
            (p.driver, p.name, d.name)
            for p in pools for s in (*p.slices, *p.other_slices) for d in s.devices
        )
        self.shares_or_counters = any(
            d.allow_multiple_allocations or d.consumes_counters
            for s in self.usable_slices for d in s.devices
        )
        # Allocation outcomes, by claim shape and the state of this node's devices.
        self.outcomes: dict[Hashable, tuple[AllocationResult, ...] | None] = {}
        self.candidates: dict[int, Candidates] = {}
        self._verdicts: dict[tuple[tuple[str | None, ...], ...], dict[DeviceID, bool]] = {}
        self._node_local: NodeSelector | None = None

    def built_from(self, slices: list[ResourceSlice]) -> bool:
        """Whether this view holds for a node with these slices (the same objects)."""
        return (
            self.self_contained
            and len(slices) == len(self.slices)
            and all(a is b for a, b in zip(slices, self.slices, strict=True))
        )

    def state_key(
        self,
        in_use: frozenset[DeviceID],
        shared: frozenset[DeviceID],
        consumed: Mapping[DeviceID, Mapping[str, int]],
    ) -> Hashable:
        """What of the allocated state an allocation on this node can depend on: which of
        its pools' devices are in use, shared, and how much capacity they have given out."""
        ids = self.device_ids
        return (
            ids & in_use,
            ids & shared if shared else frozenset(),
            frozenset((d, frozenset(consumed[d].items())) for d in ids if d in consumed)
            if consumed else frozenset(),
        )

    def remember(self, key: Hashable, outcome: tuple[AllocationResult, ...] | None) -> None:
        if len(self.outcomes) >= _MAX_OUTCOMES:
            self.outcomes.clear()
        self.outcomes[key] = outcome

    def verdicts_for(
        self, selectors: tuple[tuple[str | None, ...], ...]
    ) -> dict[DeviceID, bool]:
        """The full search's ``isSelectable`` verdicts on this node's devices for these class
        and request selectors, as it fills them in."""
        found = self._verdicts.get(selectors)
        if found is None:
            if len(self._verdicts) >= _MAX_VERDICT_SETS:
                self._verdicts.clear()
            found = self._verdicts[selectors] = {}
        return found

    def node_local_selector(self) -> NodeSelector:
        """``createNodeSelector``'s selector for a node-local device: this node by name."""
        if self._node_local is None:
            self._node_local = NodeSelector((NodeSelectorTerm((), (Requirement(
                "metadata.name", "In", (self.node[0],)),)),))
        return self._node_local

    def candidates_for(
        self, selection_id: int, selection: Selection, cel_cache: SelectorCache
    ) -> Candidates:
        try:
            return self.candidates[selection_id]
        except KeyError:
            pass
        found = self.candidates[selection_id] = Candidates(
            self._classify(selection, cel_cache)
        )
        return found

    def _classify(self, selection: Selection, cel_cache: SelectorCache) -> Iterator[Candidate]:
        """The selection's candidates in search order; raises ``NeedsSearchError`` at a
        device the fast path does not model. A device consuming counters is a candidate
        (the search may still refuse it for its counters), which the fast path never takes
        but counts as free when it shows a node infeasible."""
        selectors = (selection.class_selectors, selection.request.selectors)
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for device in s.devices:
                    candidate = Candidate((pool.driver, pool.name, device.name), device, s, pool)
                    try:
                        if not selectable(cel_cache, ("", ""), selectors, candidate, self.node):
                            continue
                        if device.allow_multiple_allocations:
                            raise NeedsSearchError
                        if taint_prevents(device, selection.request):
                            continue
                        if not cap.fits({}, None, device.capacity, {}):
                            continue
                    except (AllocationError, cap.CapacityError) as err:
                        raise NeedsSearchError from err
                    yield candidate


class NeedsSearchError(Exception):
    """A device needs the full search: an error to report, or sharing."""


class Candidates:
    """One selection's candidates on one node, classified in search order only as far as a
    caller has asked (a first visit of an empty node looks at one device, as the search
    does). ``found`` is the classified part; once ``needs_search`` is set, the fast path
    must not decide for this selection on this node. Decisions taken before that stay
    right: they rested only on devices before the one that needs the search."""

    __slots__ = ("_rest", "complete", "found", "needs_search")

    def __init__(self, rest: Iterator[Candidate]) -> None:
        self.found: list[Candidate] = []
        self.complete = False
        self.needs_search = False
        self._rest = rest

    def advance(self) -> Candidate | None:
        """The next candidate, classified now; None when there is none (or the next
        device needs the search)."""
        if self.complete:
            return None
        with _CLASSIFYING:  # a generator runs in one thread at a time
            try:
                candidate = next(self._rest)
            except StopIteration:
                self.complete = True
                return None
            except NeedsSearchError:
                self.complete = self.needs_search = True
                return None
            self.found.append(candidate)
            return candidate

    def walk(self) -> Iterator[Candidate]:
        """Every candidate in order, classifying as the caller goes on."""
        yield from self.found[:]
        while (candidate := self.advance()) is not None:
            yield candidate

    def every(self) -> list[Candidate] | None:
        """All of them, or None when the selection needs the search on this node."""
        while self.advance() is not None:
            pass
        return None if self.needs_search else self.found


def _count(
    slices_of_device: Mapping[DeviceID, list[int]],
    counts: dict[int, int],
    devices: Iterable[DeviceID],
    sign: int,
) -> None:
    for device_id in devices:
        for slice_id in slices_of_device.get(device_id, ()):
            counts[slice_id] = counts.get(slice_id, 0) + sign


def node_selector(
    node: NodeView, picks: Sequence[tuple[str, Candidate]]
) -> NodeSelector | None:
    """``createNodeSelector``: the node itself for node-local devices, else the union of the
    single-term selectors, None for devices usable on all nodes. ``picks`` are (request
    name, device) in the claim's result order. Shared by the full search and the fast path."""
    expressions: list[Requirement] = []
    fields: list[Requirement] = []
    for request_name, candidate in picks:
        s, device = candidate.slice, candidate.device
        node_name, selector = (
            (device.node_name, device.node_selector)
            if s.per_device_node_selection
            else (s.node_name, s.node_selector)
        )
        if node_name or device.binds_to_node:
            return node.node_local_selector()
        if selector is None or not selector.terms:
            continue
        if len(selector.terms) > 1:
            raise AllocationError(
                f"create NodeSelector for claim {request_name}: unsupported "
                f"ResourceSlice.NodeSelector with {len(selector.terms)} terms"
            )
        term = selector.terms[0]
        fields.extend(x for x in term.match_fields if x not in fields)
        expressions.extend(x for x in term.match_expressions if x not in expressions)
    if not expressions and not fields:
        return None
    return NodeSelector((NodeSelectorTerm(tuple(expressions), tuple(fields)),))


class SliceView:
    """The slices of one generation, indexed by node, with a ``NodeView`` memo per node.

    ``previous`` is the view of the slices before the last change: a node whose slices are
    the very same objects as then (and whose pools need no slice of another node) keeps its
    ``NodeView``, so one changed slice costs one node's views, not the cluster's. Selection
    numbers are shared with it for that reason.
    """

    def __init__(self, slices: Sequence[ResourceSlice], previous: SliceView | None = None) -> None:
        self.all_slices = list(slices)
        self.slices_on_node: dict[str, list[ResourceSlice]] = {}
        self.slices_shared: list[ResourceSlice] = []
        for s in slices:
            if s.node_name:
                self.slices_on_node.setdefault(s.node_name, []).append(s)
            else:
                self.slices_shared.append(s)
        # Whether a node's pools or devices depend on its labels, not only on its name.
        self.by_labels = any(
            s.node_selector is not None
            or (s.per_device_node_selection and any(d.node_selector for d in s.devices))
            for s in self.slices_shared
        )
        self._nodes: dict[Hashable, NodeView] = {}
        self._earlier: dict[Hashable, NodeView] = {}
        self._slices_of_device: dict[DeviceID, list[int]] | None = None
        self._counted: tuple[frozenset[DeviceID], dict[int, int]] | None = None
        self._selections: dict[Selection, int] = {}
        self._shapes: list[Hashable] = []
        if previous is not None:
            self._earlier = {**previous._earlier, **previous._nodes}
            self._selections = previous._selections
            self._shapes = previous._shapes
            if len(self._earlier) >= _MAX_NODE_VIEWS:
                self._earlier.clear()

    def node(self, node_name: str, labels: Mapping[str, str]) -> NodeView:
        key: Hashable = (node_name, frozenset(labels.items())) if self.by_labels else node_name
        found = self._nodes.get(key)
        if found is None:
            slices = self.slices_on_node.get(node_name, []) + self.slices_shared
            found = self._earlier.pop(key, None)
            if found is None or not found.built_from(slices):
                found = NodeView(node_name, labels,
                                 gather_pools(slices, node_name, labels, self.all_slices), slices)
            if len(self._nodes) >= _MAX_NODE_VIEWS:
                self._nodes.clear()
            self._nodes[key] = found
        return found

    def in_use_per_slice(self, in_use: frozenset[DeviceID]) -> dict[int, int]:
        """How many of the devices in use each slice holds, by the slice's ``id``. Counted
        from the last answer and the set differences (C speed) when that is cheaper, since
        from one cycle to the next few devices change hands."""
        if self._slices_of_device is None:
            index: dict[DeviceID, list[int]] = {}
            for s in self.all_slices:
                for d in s.devices:
                    index.setdefault((s.driver, s.pool, d.name), []).append(id(s))
            self._slices_of_device = index
        if self._counted is not None:
            before, counts = self._counted
            added, removed = in_use - before, before - in_use
            if len(added) + len(removed) < len(in_use) // 2:
                counts = dict(counts)
                _count(self._slices_of_device, counts, added, 1)
                _count(self._slices_of_device, counts, removed, -1)
                self._counted = (in_use, counts)
                return counts
        counts = {}
        _count(self._slices_of_device, counts, in_use, 1)
        self._counted = (in_use, counts)
        return counts

    def selection_id(self, selection: Selection) -> int:
        """A small number naming the selection in every ``NodeView`` of this view."""
        found = self._selections.get(selection)
        if found is None:
            if len(self._selections) >= _MAX_SELECTIONS:
                # Node views name selections by number: they go with the numbers.
                self._selections.clear()
                self._nodes.clear()
                self._earlier.clear()
            found = self._selections[selection] = len(self._selections)
        return found

    def shape_id(self, shape: Hashable) -> int:
        """A small number naming a claim shape (compared by value: claim specs hold dicts)
        in every ``NodeView``'s outcomes of this view."""
        for i, known in enumerate(self._shapes):
            if known == shape:
                return i
        if len(self._shapes) >= _MAX_SHAPES:
            # Node views name shapes by number: their outcomes go with the numbers.
            self._shapes.clear()
            for view in (*self._nodes.values(), *self._earlier.values()):
                view.outcomes.clear()
        self._shapes.append(shape)
        return len(self._shapes) - 1
