"""NodeAffinity: ``nodeSelector``, required and preferred node affinity, and ``addedAffinity``.

Upstream ``nodeaffinity/node_affinity.go`` (v1.37):

- PreFilter answers Skip when the pod has no ``nodeSelector``, no required node affinity and
  the profile adds none. When every required term names nodes with ``matchFields
  metadata.name In``, it restricts the cycle to the union of those names (intersected within
  a term); if they cancel out to nothing the pod is UnschedulableAndUnresolvable with
  ``pod affinity terms conflict``.
- Filter rejects (UnschedulableAndUnresolvable) a node that fails the profile's
  ``addedAffinity.requiredDuringSchedulingIgnoredDuringExecution`` with
  ``node(s) didn't match scheduler-enforced node affinity``, then one that fails the pod's
  ``nodeSelector`` and required terms with ``node(s) didn't match Pod's node affinity/selector``.
- Score sums the weights of the pod's preferred terms and the profile's added preferred terms
  that match the node; normalised so the best node gets 100. PreScore answers Skip when there
  are no preferred terms at all.

Node labels only change through the cache, so every per-node answer is a mask over rows
cached in the snapshot (per selector, per term), recomputed when labels or nodes change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scheduler.plugin_api import (
    IN,
    NODE_NAME_FIELD,
    SKIP,
    SUCCESS,
    Action,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    FilterResult,
    Handle,
    IntArray,
    InvalidSpecError,
    NodeSelector,
    NodeSelectorTerm,
    NodeSummary,
    NodeView,
    PluginSpec,
    PodInfo,
    PreferredSchedulingTerm,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    parse_node_selector,
    parse_node_selector_term,
    parse_preferred_terms,
)
from scheduler.plugins.helper.normalize_score import default_normalize_score

NAME = "NodeAffinity"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_UNSET = object()


# -- arguments ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddedAffinity:
    """``addedAffinity``, a core/v1 NodeAffinity: its selector and terms are read by the
    model's parsers, which word their errors as the API server does."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    required_during_scheduling_ignored_during_execution: Any = None
    preferred_during_scheduling_ignored_during_execution: Any = None

    def field_errors(self, path: str) -> Iterator[str]:
        yield from _read_added(self, path)[2]


@dataclass(frozen=True)
class NodeAffinityArgs:
    """NodeAffinityArgs (upstream's v1 default: no added affinity); ValidateNodeAffinityArgs
    through AddedAffinity.field_errors."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    added_affinity: AddedAffinity | None = None


def _read_added(
    added: AddedAffinity | None, base: str
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...], list[str]]:
    """``addedAffinity`` as the plugin uses it, and what is wrong with it."""
    if added is None:
        return None, (), []
    errors: list[str] = []
    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()
    raw_required = added.required_during_scheduling_ignored_during_execution
    try:
        required = parse_node_selector(raw_required, f"{base}.{REQUIRED}")
    except InvalidSpecError as exc:
        errors.append(str(exc))
    if required is not None:
        # NewNodeSelector, unlike the pod's lazily-erroring selector, refuses invalid terms.
        for i, raw_term in enumerate(raw_required.get("nodeSelectorTerms") or ()):
            field = f"{base}.{REQUIRED}.nodeSelectorTerms[{i}]"
            term = parse_node_selector_term(raw_term, field)
            if (term.match_expressions or term.match_fields) and term.error is not None:
                errors.append(f"{field}.{term.error}")
    try:
        preferred = parse_preferred_terms(
            added.preferred_during_scheduling_ignored_during_execution, f"{base}.{PREFERRED}")
    except InvalidSpecError as exc:
        errors.append(str(exc))
    return required, preferred, errors


# -- node masks -----------------------------------------------------------------------------
def _rows_where(
    snapshot: ClusterSnapshot, predicate: Callable[[Mapping[str, str], str], bool]
) -> BoolArray:
    nodes = snapshot.nodes
    out = np.zeros(nodes.capacity, dtype=np.bool_)
    for name, row in nodes.index.items():
        if predicate(nodes.labels[row], name):
            out[row] = True
    return out


def selector_mask(snapshot: ClusterSnapshot, selector: NodeSelector) -> BoolArray:
    """Per node row: the node matches ``selector`` (terms ORed)."""
    return snapshot.node_mask((NAME, "selector", selector),
                              lambda: _rows_where(snapshot, selector.matches))


def required_mask(
    snapshot: ClusterSnapshot, node_selector: Mapping[str, str], required: NodeSelector | None
) -> BoolArray:
    """Per node row: ``RequiredNodeAffinity.Match`` (``nodeSelector`` pairs, then the terms)."""
    pairs = tuple(sorted(node_selector.items()))

    def matches(labels: Mapping[str, str], name: str) -> bool:
        for key, value in pairs:
            if labels.get(key) != value:
                return False
        return required is None or required.matches(labels, name)

    return snapshot.node_mask((NAME, "required", pairs, required),
                              lambda: _rows_where(snapshot, matches))


def term_mask(snapshot: ClusterSnapshot, term: NodeSelectorTerm) -> BoolArray:
    return snapshot.node_mask((NAME, "term", term), lambda: _rows_where(snapshot, term.matches))


def node_names_of_required_terms(pod: PodInfo) -> frozenset[str] | None:
    """The nodes the required terms pin by ``metadata.name In``; None when some term does not.

    Read from the pod's spec as written: upstream looks at every term, empty ones included.
    """
    spec = pod.raw.get("spec") or {}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get(REQUIRED) or {}).get("nodeSelectorTerms") or ()
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for field in (term or {}).get("matchFields") or ():
            if field.get("key") == NODE_NAME_FIELD and field.get("operator") == IN:
                values = set(field.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


# -- the plugin -----------------------------------------------------------------------------
class NodeAffinity:
    name = NAME
    # Filter needs only the NodeView's numbers, not its hypothetical pod lists.
    filter_reads_pod_lists = False

    def __init__(self, args: NodeAffinityArgs) -> None:
        self.added_required, self.added_preferred, _ = _read_added(
            args.added_affinity, f"{NAME}Args.addedAffinity")

    # -- PreFilter / Filter ---------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        required = pod.required_node_affinity
        if required is None and self.added_required is None and not pod.node_selector:
            return None, SKIP
        names = node_names_of_required_terms(pod) if required is not None else None
        state.write(PRE_FILTER_STATE_KEY, names)
        if names is None:
            return None, SUCCESS
        if not names:
            return None, Status.unschedulable(ERR_REASON_CONFLICT, resolvable=False)
        return PreFilterResult(names), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        snapshot = nodes.snapshot
        if self.added_required is not None:
            enforced = selector_mask(snapshot, self.added_required).take(nodes.idx)
            result.reject(~enforced, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        required = pod.required_node_affinity
        if not pod.node_selector and required is None:
            return result
        pinned = state.get(PRE_FILTER_STATE_KEY, _UNSET)
        if pinned is _UNSET:  # PreFilter did not run
            pinned = node_names_of_required_terms(pod) if required is not None else None
        if pinned:
            # Terms pinning node names are one pod's own (DaemonSet-style): match only the
            # rows at hand rather than cache a mask over every node that no pod will reuse.
            table = snapshot.nodes
            matched = np.fromiter(
                (
                    _matches_required(pod, table.labels[r], table.names[r])
                    for r in nodes.idx.tolist()
                ),
                dtype=np.bool_,
                count=len(nodes),
            )
        else:
            matched = required_mask(snapshot, pod.node_selector, required).take(nodes.idx)
        result.reject(~matched, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return result

    # -- PreScore / Score -----------------------------------------------------------------
    def preferred_terms(self, pod: PodInfo) -> tuple[PreferredSchedulingTerm, ...]:
        return (*self.added_preferred, *pod.preferred_node_affinity)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        if not _has_preferred(pod) and not self.added_preferred:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, self.preferred_terms(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        terms = state.get(PRE_SCORE_STATE_KEY)
        if terms is None:
            terms = self.preferred_terms(pod)
        out = np.zeros(len(nodes), dtype=np.int64)
        for preferred in terms:
            out += preferred.weight * term_mask(nodes.snapshot, preferred.term).take(nodes.idx)
        return out

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score(scores, reverse=False)

    # -- events ---------------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """Each nodeSelector label and required term the node does not meet, and whether the
        profile's addedAffinity does not."""
        table = nodes.snapshot.nodes
        return [self._unmet(pod, table.labels[row], table.names[row])
                for row in nodes.idx.tolist()]

    def _unmet(self, pod: PodInfo, labels: Mapping[str, str], name: str) -> list[str]:
        out = []
        for key, want in sorted(pod.node_selector.items()):
            have = labels.get(key)
            if have != want:
                got = "no such label" if have is None else f"the node has {key}={have}"
                out.append(f"nodeSelector {key}={want}: {got}")
        required = pod.required_node_affinity
        if required is not None and not required.matches(labels, name):
            for i, term in enumerate(required.terms, 1):
                unmet = [r for r in term.match_expressions if not r.matches(labels)]
                what = ", ".join(f"{r.key} {r.operator} {list(r.values)}" for r in unmet)
                out.append(f"required node affinity term {i}: "
                           f"{what or term.error or 'matchFields do not match'}")
        if self.added_required is not None and not self.added_required.matches(labels, name):
            out.append("the profile's addedAffinity does not match the node")
        return out

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
                self._after_node_change,
            )
        ]

    def _after_node_change(
        self, pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
    ) -> QueueingHint:
        """Queue when a node starts to match the pod's required affinity (and the added one)."""
        if new is None:
            return QueueingHint.SKIP
        name = new.name
        new_labels = new.labels
        if self.added_required is not None and not self.added_required.matches(new_labels, name):
            return QueueingHint.SKIP
        if not _matches_required(pod, new_labels, name):
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if _matches_required(pod, old.labels, name):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def _has_preferred(pod: PodInfo) -> bool:
    """The pod declares ``preferredDuringScheduling...`` (even all weight-0 or empty terms)."""
    if pod.preferred_node_affinity:
        return True
    spec = pod.raw.get("spec") or {}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return affinity.get(PREFERRED) is not None


def _matches_required(pod: Any, labels: Mapping[str, str], name: str) -> bool:
    for key, value in (pod.node_selector or {}).items():
        if labels.get(key) != value:
            return False
    required: NodeSelector | None = pod.required_node_affinity
    return required is None or required.matches(labels, name)




def new(args: NodeAffinityArgs, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args)


SPEC = PluginSpec(name=NAME, factory=new, args=NodeAffinityArgs)
