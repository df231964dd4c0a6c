"""PodTopologySpread: kube-scheduler's topology spread constraints (v1.37), filter and score.

Filtering uses the pod's ``DoNotSchedule`` constraints. PreFilter counts, per constraint, the
matching pods in every topology domain over the nodes that carry *all* the constraints' keys
and pass the constraint's node inclusion policies; counts live in a numpy array indexed by the
snapshot's domain id of the key, so Filter answers a whole batch of nodes with one fancy
index ``counts[domain_ids[rows]]``. A node fails when
``count[its domain] + (1 if the pod matches itself) - global minimum > maxSkew``; the global
minimum is 0 while fewer than ``minDomains`` domains are eligible.

Scoring uses the ``ScheduleAnyway`` constraints, or the profile's default constraints when the
pod declares none. Raw scores follow upstream (``round(Σ count·ln(#domains + 2) + maxSkew - 1)``)
and are normalised so the emptiest domain scores 100.

Default constraints (``defaultingType: System`` or ``List``): upstream derives their selector from
the Services, ReplicaSets, StatefulSets and ReplicationControllers selecting the pod. We do not
watch those objects, so the default selector here is *"pods of the same controller"*: pods in the
pod's namespace whose controller ownerReference has the same kind and name, for pods owned by a
ReplicaSet, StatefulSet or ReplicationController. A pod without such an owner gets no default
constraints (upstream would still spread it when a Service selects it). For a Deployment's pods
this equals upstream's ReplicaSet selector (which includes ``pod-template-hash``).

Hypothetical pods: a view row with ``added``/``removed`` pods is evaluated against a copy of the
counts adjusted for that node only (upstream's AddPod/RemovePod), the global minimum recomputed
exactly. Deviation, on purpose: a hypothetical pod counts only if it would have been counted by
PreFilter (same namespace, not terminating, non-empty selector); upstream's RemovePod also
decrements for terminating victims that PreFilter never counted.

Cost: the pods matching a selector come from the cache's label index once per cycle, shared with
InterPodAffinity (``MatchedPods`` in the CycleState); the default constraints' pods come from
the cache's index by controller owner (a lookup, then their node rows), never a pass over all
pods; node-affinity and taint masks are cached in the snapshot's node masks. Nothing loops over
nodes in Python on the fast path.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
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
    LabelSelector,
    NodeSummary,
    NodeTableView,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    SpreadConstraint,
    Status,
    label_key_error,
)
from scheduler.plugins.helper.explain_text import nodes_phrase
from scheduler.plugins.helper.matched_pods import matched_pods
from scheduler.plugins.helper.row_memo import TableFacts

NAME = "PodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# Raw score of a node missing a topology key; NormalizeScore turns it into 0.
INVALID_SCORE = -1
# Upstream's criticalPaths start at MaxInt32: with no eligible domain the minimum stays there.
_NO_DOMAIN_MIN = 2**31 - 1

# Owners whose selector upstream's helper.DefaultSelector reads (Services aside).
_DEFAULT_SELECTOR_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

DEFAULT_ARGS: Mapping[str, Any] = {"defaultingType": SYSTEM_DEFAULTING, "defaultConstraints": []}


# -- arguments ------------------------------------------------------------------------------
def validate_args(args: Mapping[str, Any], path: str) -> None:
    """ValidatePodTopologySpreadArgs; raises :class:`ConfigError` naming every bad field."""
    merged = {**DEFAULT_ARGS, **args}
    errors: list[str] = []
    unknown = sorted(set(args) - set(DEFAULT_ARGS))
    for key in unknown:
        errors.append(f"{path}.{key}: Invalid value: unknown field")
    defaulting = merged["defaultingType"]
    constraints = merged["defaultConstraints"]
    if constraints is None:
        constraints = []
    if not isinstance(constraints, list):
        errors.append(f"{path}.defaultConstraints: Invalid value: must be a list")
        constraints = []
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errors.append(
            f"{path}.defaultingType: Unsupported value: {defaulting!r}: "
            f'supported values: "{LIST_DEFAULTING}", "{SYSTEM_DEFAULTING}"'
        )
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        errors.append(
            f"{path}.defaultingType: Invalid value: {defaulting!r}: "
            "when .defaultConstraints are not empty"
        )
    seen: set[tuple[Any, Any]] = set()
    for i, c in enumerate(constraints):
        p = f"{path}.defaultConstraints[{i}]"
        if not isinstance(c, Mapping):
            errors.append(f"{p}: Invalid value: must be a mapping")
            continue
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            errors.append(f"{p}.maxSkew: Invalid value: {skew!r}: not in valid range (0, inf)")
        topology_key = c.get("topologyKey")
        if not topology_key:
            errors.append(f"{p}.topologyKey: Required value: can not be empty")
        elif not isinstance(topology_key, str):
            errors.append(f"{p}.topologyKey: Invalid value: {topology_key!r}: must be a string")
        else:
            if (why := label_key_error(topology_key)) is not None:
                errors.append(f"{p}.topologyKey: Invalid value: {topology_key!r}: {why}")
        action = c.get("whenUnsatisfiable")
        if not action:
            errors.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
        elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errors.append(
                f"{p}.whenUnsatisfiable: Unsupported value: {action!r}: "
                f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
            )
        if c.get("labelSelector") is not None:
            errors.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            )
        min_domains = c.get("minDomains")
        if min_domains is not None and (
            isinstance(min_domains, bool) or not isinstance(min_domains, int) or min_domains <= 0
        ):
            errors.append(f"{p}.minDomains: Invalid value: {min_domains!r}: must be > 0")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = c.get(policy)
            if value is not None and value not in (HONOR, IGNORE):
                errors.append(
                    f'{p}.{policy}: Unsupported value: {value!r}: supported values: '
                    f'"{HONOR}", "{IGNORE}"'
                )
        pair = (c.get("topologyKey"), action)
        if pair in seen:
            errors.append(f"{path}.defaultConstraints[{i}]: Duplicate value: "
                          f'"{{{pair[0]}, {pair[1]}}}"')
        seen.add(pair)
    if errors:
        raise ConfigError("; ".join(errors))


# -- constraints ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Constraint:
    """A constraint as the plugin uses it: defaults applied, selector or owner resolved.

    ``selector`` is ``None`` for a default constraint, whose pods are those of ``owner``.
    """

    max_skew: int
    topology_key: str
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool
    selector: LabelSelector | None
    owner: tuple[str, str] | None

    def matches(self, pod: PodInfo) -> bool:
        """``Selector.Matches(pod.Labels)``: the self-match of the incoming pod."""
        if self.selector is None:
            return (pod.owner_kind, pod.owner_name) == self.owner
        return self.selector.matches(pod.labels)

    @property
    def counts_nothing(self) -> bool:
        """Upstream ``countPodsMatchSelector`` counts 0 for an empty (match-all) selector."""
        sel = self.selector
        return sel is not None and not sel.matches_nothing and not sel.requirements

    def counts(self, pod: PodInfo, namespace: str) -> bool:
        """Whether ``pod`` on an eligible node adds to this constraint's domain count."""
        return (
            pod.namespace == namespace
            and not pod.is_terminating
            and not self.counts_nothing
            and self.matches(pod)
        )


def _from_pod_constraint(c: SpreadConstraint) -> _Constraint:
    return _Constraint(
        max_skew=int(c.max_skew),
        topology_key=c.topology_key,
        min_domains=1 if c.min_domains is None else int(c.min_domains),
        honor_node_affinity=(c.node_affinity_policy or HONOR) == HONOR,
        honor_node_taints=(c.node_taints_policy or IGNORE) == HONOR,
        selector=c.selector,
        owner=None,
    )


def _from_default(raw: Mapping[str, Any], owner: tuple[str, str]) -> _Constraint:
    min_domains = raw.get("minDomains")
    return _Constraint(
        max_skew=int(raw["maxSkew"]),
        topology_key=str(raw["topologyKey"]),
        min_domains=1 if min_domains is None else int(min_domains),
        honor_node_affinity=(raw.get("nodeAffinityPolicy") or HONOR) == HONOR,
        honor_node_taints=(raw.get("nodeTaintsPolicy") or IGNORE) == HONOR,
        selector=None,
        owner=owner,
    )


def _default_owner(pod: PodInfo) -> tuple[str, str] | None:
    kind, name = pod.owner_kind, pod.owner_name
    if not kind or not name or kind not in _DEFAULT_SELECTOR_OWNERS:
        return None
    return (kind, name)


# -- node masks -----------------------------------------------------------------------------
_MAX_KEPT_DEFAULTS = 4096
_NOSCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class _Topology:
    """What Score reads of the nodes for one topology key."""

    ids: IntArray  # per node row, the id of the node's value (-1: no such label)
    values: list[str]
    has: BoolArray  # per node row, the node has the label
    everywhere: bool  # every node has it (Score need not look at ``has``)
    folded: IntArray  # ``ids``, a missing label read as "" (the "" domain, or one more id)


def _row_labels(nodes: NodeTableView, row: int) -> object:
    """What the topologies read of a row: its node's name (none: no node) and labels."""
    return nodes.names[row], nodes.labels[row]


def _topology(snapshot: ClusterSnapshot, key: str) -> _Topology:
    ids, values = snapshot.domains(key)
    has = ids >= 0
    missing_id = values.index("") if "" in values else len(values)
    return _Topology(ids, values, has, not np.count_nonzero(snapshot.nodes.alive & ~has),
                     np.where(has, ids, missing_id))


def node_affinity_mask(snapshot: ClusterSnapshot, pod: PodInfo) -> BoolArray:
    """Per node row: the node matches the pod's nodeSelector and required node affinity."""
    nodes = snapshot.nodes
    selector = dict(pod.node_selector or {})
    required = pod.required_node_affinity
    if not selector and required is None:
        return nodes.alive

    def compute() -> BoolArray:
        out = np.zeros(nodes.capacity, dtype=np.bool_)
        for name, row in nodes.index.items():
            labels = nodes.labels[row]
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            if required is not None and not required.matches(labels, name):
                continue
            out[row] = True
        return out

    return snapshot.node_mask((NAME, "affinity", tuple(sorted(selector.items())), required),
                        compute)


def node_taints_mask(snapshot: ClusterSnapshot, pod: PodInfo) -> BoolArray:
    """Per node row: the pod tolerates every NoSchedule/NoExecute taint of the node."""
    nodes = snapshot.nodes
    tolerations = tuple(pod.tolerations)

    def compute() -> BoolArray:
        out = np.zeros(nodes.capacity, dtype=np.bool_)
        for row in nodes.index.values():
            out[row] = all(
                taint.effect not in _NOSCHEDULE_EFFECTS
                or any(tol.tolerates(taint) for tol in tolerations)
                for taint in nodes.taints[row]
            )
        return out

    return snapshot.node_mask((NAME, "taints", tolerations), compute)


class _CountedPods:
    """Node rows of the pods each constraint counts (same namespace, not terminating)."""

    def __init__(self, state: CycleState, snapshot: ClusterSnapshot, namespace: str) -> None:
        self.state = state
        self.snapshot = snapshot
        self.namespace = namespace
        # The system default constraints (hostname and zone) count the same siblings.
        self._siblings: dict[tuple[str, str], IntArray] = {}

    def rows(self, c: _Constraint) -> IntArray:
        """Rows of the counted pods' nodes, only nodes the table holds."""
        if c.selector is None:
            assert c.owner is not None
            rows = self._siblings.get(c.owner)
            if rows is None:
                rows = self._siblings[c.owner] = self.snapshot.owner_rows(self.namespace,
                                                                          *c.owner)
            return rows
        if c.counts_nothing:
            return np.zeros(0, dtype=np.int64)
        matched = matched_pods(self.state, self.snapshot, (self.namespace,), c.selector)
        return matched.counted_rows_not_terminating()


# -- filter state ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _FilterState:
    """PreFilter's counts; one entry per DoNotSchedule constraint, in the pod's order."""

    namespace: str
    constraints: tuple[_Constraint, ...]
    domain_ids: tuple[IntArray, ...]  # per node row: domain id of the constraint's key, -1 none
    eligible: tuple[BoolArray, ...]  # per node row: the node's pods count for the constraint
    counts: tuple[IntArray, ...]  # per domain id: matching pods on eligible nodes
    present: tuple[BoolArray, ...]  # per domain id: some eligible node is in the domain
    min_match: tuple[int, ...]  # global minimum, minDomains applied
    self_match: tuple[bool, ...]

    def with_pods(
        self, row: int, added: Sequence[PodInfo], removed: Sequence[PodInfo]
    ) -> _FilterState:
        """The state as if ``added`` were on node ``row`` and ``removed`` were not."""
        counts = list(self.counts)
        mins = list(self.min_match)
        for i, c in enumerate(self.constraints):
            if not self.eligible[i][row]:
                continue
            delta = sum(1 for p in added if c.counts(p, self.namespace)) - sum(
                1 for p in removed if c.counts(p, self.namespace)
            )
            if delta == 0:
                continue
            domain = int(self.domain_ids[i][row])
            counts[i] = counts[i].copy()
            counts[i][domain] += delta
            mins[i] = _global_min(counts[i], self.present[i], c.min_domains)
        return dataclasses.replace(self, counts=tuple(counts), min_match=tuple(mins))


def _global_min(counts: IntArray, present: BoolArray, min_domains: int) -> int:
    num_domains = int(np.count_nonzero(present))
    if num_domains < min_domains:
        return 0
    if num_domains == 0:
        return _NO_DOMAIN_MIN
    return int(counts[present].min())


_REASON_NONE, _REASON_LABEL, _REASON_SKEW = 0, 1, 2


def _filter_rows(state: _FilterState, rows: IntArray) -> IntArray:
    """Per row, the reason it fails (``_REASON_*``); the first failing constraint decides."""
    reason = np.zeros(rows.shape[0], dtype=np.int64)
    for i, c in enumerate(state.constraints):
        missing, skew = _skew(state, i, rows)
        open_ = reason == _REASON_NONE
        reason[open_ & missing] = _REASON_LABEL
        reason[open_ & ~missing & (skew > c.max_skew)] = _REASON_SKEW
    return reason


def _skew(state: _FilterState, i: int, rows: IntArray) -> tuple[BoolArray, IntArray]:
    """Per row: whether the node lacks constraint ``i``'s key, and the skew placing the pod
    there would make (meaningless where the key is missing)."""
    ids = state.domain_ids[i].take(rows)
    missing = ids < 0
    counts = (
        state.counts[i][np.where(missing, 0, ids)]
        if state.counts[i].size
        else np.zeros(rows.shape[0], dtype=np.int64)
    )
    return missing, counts + int(state.self_match[i]) - state.min_match[i]


@dataclass(frozen=True)
class ConstraintSkew:
    """One DoNotSchedule constraint seen from some node rows, for explanations."""

    topology_key: str
    max_skew: int
    min_match: int
    domains: list[str | None]  # per row: the node's value of the key (None: no such label)
    skews: IntArray  # per row: the skew the pod would make there (-1 where the key is missing)


def filter_skews(
    state: CycleState, snapshot: ClusterSnapshot, rows: IntArray
) -> list[ConstraintSkew]:
    """What PreFilter computed, per constraint, for ``rows``; empty when it did not run."""
    s: _FilterState | None = state.get(PRE_FILTER_STATE_KEY)
    if s is None:
        return []
    out: list[ConstraintSkew] = []
    for i, c in enumerate(s.constraints):
        missing, skew = _skew(s, i, rows)
        _, values = snapshot.domains(c.topology_key)
        ids = s.domain_ids[i][rows]
        domains = [None if m else values[int(d)] for m, d in zip(missing, ids, strict=True)]
        out.append(ConstraintSkew(c.topology_key, c.max_skew, s.min_match[i], domains,
                                  np.where(missing, -1, skew).astype(np.int64)))
    return out


# -- score state ----------------------------------------------------------------------------
class _ScoreState(NamedTuple):  # a NamedTuple: made every cycle, at a third of the cost
    constraints: tuple[_Constraint, ...]
    ignored: BoolArray | None  # per node row; None: no node is
    has_key: tuple[BoolArray | None, ...]  # per node row; None: every node has the key
    domain_ids: tuple[IntArray, ...]  # per node row; hostname: unused
    # Per domain id; hostname: the node rows of the counted pods, counted per row in Score.
    # (A per-row count is a table-sized array, and the binding cycle keeps this state: a
    # batch of 64 pods would hold 64 of them, fresh memory for every cycle.)
    counts: tuple[IntArray, ...]
    weights: tuple[float, ...]


def _round_half_away(x: npt.NDArray[np.floating[Any]]) -> IntArray:
    """Go's math.Round for non-negative values, exact (x - trunc(x) is exact in binary64)."""
    whole = np.trunc(x)
    out: IntArray = (whole + ((x - whole) >= 0.5)).astype(np.int64)
    return out


# -- the plugin -----------------------------------------------------------------------------
class PodTopologySpread:
    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (see interface.NodeView).
    filter_reads_pod_lists = True

    def __init__(self, args: Mapping[str, Any]) -> None:
        # Node-only facts for Score, per topology key and per set of keys, kept while the
        # node table's labels and node set stay as they were (``_node_facts``).
        self._topologies: dict[str, _Topology] = {}
        self._with_keys: dict[tuple[str, ...], tuple[BoolArray, BoolArray]] = {}
        self._node_facts = TableFacts(_row_labels)
        # Per (controller, action): the default constraints of its pods (a plain dict, not a
        # cachetools cache: asked twice a cycle; cleared when it grows past the bound).
        self._defaults: dict[tuple[tuple[str, str], str], tuple[_Constraint, ...]] = {}
        merged = {**DEFAULT_ARGS, **args}
        self.system_defaulted = merged["defaultingType"] == SYSTEM_DEFAULTING
        self.default_constraints: tuple[Mapping[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS
            if self.system_defaulted
            else tuple(merged["defaultConstraints"] or ())
        )
        # Pods by controller owner, for the default constraints' selector.

    # -- constraints ------------------------------------------------------------------------
    def constraints(self, pod: PodInfo, action: str) -> tuple[_Constraint, ...]:
        """upstream getConstraints: the pod's own constraints, else the defaults."""
        if pod.spread_constraints:
            return tuple(
                _from_pod_constraint(c)
                for c in pod.spread_constraints
                if c.when_unsatisfiable == action
            )
        owner = _default_owner(pod)
        if owner is None:
            return ()
        # The same for every pod of a controller, asked at PreFilter and PreScore each cycle.
        key = (owner, action)
        kept = self._defaults.get(key)
        if kept is None:
            if len(self._defaults) >= _MAX_KEPT_DEFAULTS:
                self._defaults.clear()
            kept = self._defaults[key] = tuple(
                _from_default(raw, owner)
                for raw in self.default_constraints
                if raw.get("whenUnsatisfiable") == action
            )
        return kept

    # -- PreFilter / Filter -----------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, self._filter_state(state, snapshot, pod, constraints))
        return None, SUCCESS

    def _filter_state(
        self,
        state: CycleState,
        snapshot: ClusterSnapshot,
        pod: PodInfo,
        constraints: tuple[_Constraint, ...],
    ) -> _FilterState:
        nodes = snapshot.nodes
        domain_ids: list[IntArray] = []
        num_domains: list[int] = []
        all_keys = nodes.alive.copy()
        for c in constraints:
            ids, values = snapshot.domains(c.topology_key)
            domain_ids.append(ids)
            num_domains.append(len(values))
            all_keys &= ids >= 0
        affinity = taints = None
        pods = _CountedPods(state, snapshot, pod.namespace)
        eligible: list[BoolArray] = []
        counts: list[IntArray] = []
        present: list[BoolArray] = []
        mins: list[int] = []
        for i, c in enumerate(constraints):
            ok = all_keys
            if c.honor_node_affinity:
                if affinity is None:
                    affinity = node_affinity_mask(snapshot, pod)
                ok = ok & affinity
            if c.honor_node_taints:
                if taints is None:
                    taints = node_taints_mask(snapshot, pod)
                ok = ok & taints
            ids = domain_ids[i]
            here = np.zeros(num_domains[i], dtype=np.bool_)
            here[ids[ok]] = True
            rows = pods.rows(c)
            rows = rows[ok[rows]]
            count = np.bincount(ids[rows], minlength=num_domains[i]).astype(np.int64)
            eligible.append(ok)
            counts.append(count)
            present.append(here)
            mins.append(_global_min(count, here, c.min_domains))
        return _FilterState(
            namespace=pod.namespace,
            constraints=constraints,
            domain_ids=tuple(domain_ids),
            eligible=tuple(eligible),
            counts=tuple(counts),
            present=tuple(present),
            min_match=tuple(mins),
            self_match=tuple(c.matches(pod) for c in constraints),
        )

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        s: _FilterState | None = state.get(PRE_FILTER_STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        if s is None:
            result.reject(
                np.ones(len(nodes), dtype=np.bool_),
                Code.ERROR,
                f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
            )
            return result
        if not s.constraints:
            return result
        reason = _filter_rows(s, nodes.idx)
        for pos, row, added, removed in nodes.delta_rows():
            adjusted = s.with_pods(row, added, removed)
            reason[pos] = _filter_rows(adjusted, nodes.idx[pos : pos + 1])[0]
        result.reject(
            reason == _REASON_LABEL, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_NODE_LABEL_NOT_MATCH,
        )
        result.reject(reason == _REASON_SKEW, Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return result

    # -- PreScore / Score / NormalizeScore --------------------------------------------------
    def _forget_stale_facts(self, snapshot: ClusterSnapshot) -> None:
        """Forget the node facts when node labels or the node set changed."""
        if self._node_facts.changed(snapshot.nodes):
            self._topologies.clear()
            self._with_keys.clear()

    def _topology(self, snapshot: ClusterSnapshot, key: str) -> _Topology:
        kept = self._topologies.get(key)
        if kept is None:
            kept = self._topologies[key] = _topology(snapshot, key)
        return kept

    def _keys_mask(self, snapshot: ClusterSnapshot, keys: tuple[str, ...]
                   ) -> tuple[BoolArray, BoolArray]:
        """Per node row: the node has every key; the node lacks one."""
        kept = self._with_keys.get(keys)
        if kept is None:
            every = snapshot.nodes.alive.copy()
            for key in keys:
                every &= self._topology(snapshot, key).has
            kept = self._with_keys[keys] = (every, ~every)
        return kept

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        snapshot = nodes.snapshot
        if snapshot.num_nodes == 0:
            return SKIP
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return SKIP
        # Only non-default constraints need every key: zone-less nodes still spread by hostname.
        require_all = bool(pod.spread_constraints) or not self.system_defaulted
        table = snapshot.nodes
        rows = nodes.idx
        self._forget_stale_facts(snapshot)
        ignored: BoolArray | None = None
        scored = rows
        ok_keys = table.alive
        if require_all:
            ok_keys, ignored = self._keys_mask(snapshot, tuple(c.topology_key for c in constraints))
            scored = rows[~ignored.take(rows)]
        affinity = taints = None
        pods = _CountedPods(state, snapshot, pod.namespace)
        has_key: list[BoolArray | None] = []
        domain_ids: list[IntArray] = []
        counts: list[IntArray] = []
        weights: list[float] = []
        for c in constraints:
            topology = self._topology(snapshot, c.topology_key)
            has_key.append(None if topology.everywhere else topology.has)
            pod_rows = pods.rows(c)
            if c.topology_key == LABEL_HOSTNAME:
                # Upstream counts the node's own pods in Score, without inclusion policies.
                domain_ids.append(topology.ids)
                counts.append(pod_rows)
                weights.append(math.log(scored.shape[0] + 2))
                continue
            eff = topology.folded
            ndom = len(topology.values) + 1
            wanted = np.zeros(ndom, dtype=np.bool_)
            wanted[eff.take(scored)] = True
            ok = ok_keys
            if c.honor_node_affinity:
                if affinity is None:
                    affinity = node_affinity_mask(snapshot, pod)
                if affinity is not table.alive:
                    ok = ok & affinity
            if c.honor_node_taints:
                if taints is None:
                    taints = node_taints_mask(snapshot, pod)
                ok = ok & taints
            if ok is not table.alive:  # the counted pods are all on nodes of the table
                pod_rows = pod_rows[ok[pod_rows]]
            count = np.bincount(eff.take(pod_rows), minlength=ndom)
            count *= wanted
            domain_ids.append(eff)
            counts.append(count)
            weights.append(math.log(int(np.count_nonzero(wanted)) + 2))
        state.write(
            PRE_SCORE_STATE_KEY,
            _ScoreState(
                constraints=constraints,
                ignored=ignored,
                has_key=tuple(has_key),
                domain_ids=tuple(domain_ids),
                counts=tuple(counts),
                weights=tuple(weights),
            ),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        rows = nodes.idx
        if s is None:
            return np.zeros(rows.shape[0], dtype=np.int64)
        # Upstream adds each constraint's term to a float64 starting at 0, in order: the same
        # sums, so the same roundings (an int64 count times a float is that count as float64).
        total: npt.NDArray[np.floating[Any]] | None = None
        capacity = nodes.snapshot.nodes.capacity
        for i, c in enumerate(s.constraints):
            if c.topology_key == LABEL_HOSTNAME:
                cnt = np.bincount(s.counts[i], minlength=capacity).take(rows)
            else:
                cnt = s.counts[i].take(s.domain_ids[i].take(rows))
            term = cnt * s.weights[i] + float(c.max_skew - 1)
            has = s.has_key[i]
            if has is not None:
                term = np.where(has.take(rows), term, 0.0)
            if total is None:
                total = term
            else:
                total += term
        assert total is not None, "PreScore writes its state only for some constraint"
        out = _round_half_away(total)
        if s.ignored is not None:
            out[s.ignored.take(rows)] = INVALID_SCORE
        return out

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        s: _ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return scores
        valid = None if s.ignored is None else scores != INVALID_SCORE
        if valid is None or valid.all():  # no node lacks a key: the same, without masks
            # Indexing at argmin/argmax: a fifth of the cost of min()/max()'s reductions.
            lo = int(scores[scores.argmin()])
            hi = max(int(scores[scores.argmax()]), 0)
            if hi == 0:
                return np.full(scores.shape[0], MAX_NODE_SCORE, dtype=np.int64)
            return np.asarray(MAX_NODE_SCORE * (hi + lo - scores) // hi, dtype=np.int64)
        out = np.zeros(scores.shape[0], dtype=np.int64)
        if not valid.any():
            return out
        lo = int(scores[valid].min())
        hi = max(int(scores[valid].max()), 0)
        if hi == 0:
            out[valid] = MAX_NODE_SCORE
        else:
            out[valid] = MAX_NODE_SCORE * (hi + lo - scores[valid]) // hi
        return out

    # -- events -----------------------------------------------------------------------------
    # -- explain --------------------------------------------------------------------------
    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """Per constraint: the node lacks its key, or the skew the pod would make there."""
        skews = filter_skews(state, nodes.snapshot, nodes.idx)
        out = []
        for pos in range(len(nodes)):
            lines = []
            for c in skews:
                domain, skew = c.domains[pos], int(c.skews[pos])
                if domain is None:
                    lines.append(f"no label {c.topology_key}")
                elif skew > c.max_skew:
                    lines.append(f"{c.topology_key}={domain}: skew {skew} > maxSkew "
                                 f"{c.max_skew} (global minimum {c.min_match})")
            out.append(lines)
        return out

    def explain_hints(
        self, state: CycleState, pod: PodInfo, nodes: NodeView, rejected: BoolArray,
        others_pass: BoolArray,
    ) -> list[str]:
        """Per constraint the pod breaks somewhere: the domains within its skew, and how many
        of their nodes pass the other filters."""
        if not rejected.any():
            return []
        hints = []
        for c in filter_skews(state, nodes.snapshot, nodes.idx):
            within = [i for i, d in enumerate(c.domains)
                      if d is not None and int(c.skews[i]) <= c.max_skew]
            domains = sorted({str(c.domains[i]) for i in within})
            if not domains:
                continue
            passing = sum(1 for i in within if others_pass[i])
            hints.append(
                f"{nodes_phrase(passing)} in {', '.join(domains)} satisfy the spread constraint "
                f"{c.topology_key} (maxSkew {c.max_skew}) and the other filters"
            )
        return hints

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD,
                    Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE,
                ),
                self._after_assigned_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.UNSCHEDULED_POD,
                    Action.UPDATE_POD_TOLERATION | Action.UPDATE_POD_LABEL,
                ),
                self._after_target_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    Action.ADD
                    | Action.DELETE
                    | Action.UPDATE_NODE_LABEL
                    | Action.UPDATE_NODE_TAINT,
                ),
                self._after_node_change,
            ),
        ]

    def _after_assigned_pod_change(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        for other in (old, new):
            if other is not None and not _involved(other, pod):
                return QueueingHint.SKIP
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            return _label_change_hint(old.labels, new.labels, constraints)
        changed = new if new is not None else old
        if changed is None:
            return QueueingHint.QUEUE
        if any(c.matches(changed) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def _after_target_pod_change(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if tuple(old.tolerations) != tuple(new.tolerations) and any(
            c.honor_node_taints for c in constraints
        ):
            return QueueingHint.QUEUE
        return _label_change_hint(old.labels, new.labels, constraints)

    def _after_node_change(
        self, pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
    ) -> QueueingHint:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
            keys = [c.topology_key for c in constraints]
            old_labels = None if old is None else old.labels
            new_labels = None if new is None else new.labels
        except (AttributeError, TypeError, KeyError):
            return QueueingHint.QUEUE
        old_match = old_labels is not None and all(k in old_labels for k in keys)
        new_match = new_labels is not None and all(k in new_labels for k in keys)
        if old_labels is not None and new_labels is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match and (
                any(old_labels.get(k) != new_labels.get(k) for k in keys)
                or (old is not None and new is not None and old.taints != new.taints)
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_labels is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.SKIP



def _involved(other: PodInfo, pod: PodInfo) -> bool:
    if not other.node_name and not other.nominated_node_name:
        return False
    return bool(other.namespace == pod.namespace)


def _label_change_hint(
    old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[_Constraint]
) -> QueueingHint:
    if dict(old) == dict(new):
        return QueueingHint.SKIP
    for c in constraints:
        if c.selector is None:
            continue  # owner-based defaults do not depend on labels
        if c.selector.matches(old) != c.selector.matches(new):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP




def new(args: Mapping[str, Any], handle: Handle) -> PodTopologySpread:
    validate_args(args, f"{NAME}Args")
    return PodTopologySpread(args)


SPEC = PluginSpec(name=NAME, factory=new, default_args=DEFAULT_ARGS, validate=validate_args)
