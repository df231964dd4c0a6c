"""The constraints PodTopologySpread's filtering and scoring share, and the node facts they
read (upstream ``common.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    BoolArray,
    ClusterSnapshot,
    CycleState,
    IntArray,
    LabelSelector,
    NodeTableView,
    PodInfo,
    SpreadConstraint,
)
from scheduler.plugins.helper.matched_pods import matched_pods
from scheduler.plugins.pod_topology_spread.args import HONOR, IGNORE, NAME

NO_DOMAIN_MIN = 2**31 - 1

# Owners whose selector upstream's helper.DefaultSelector reads (Services aside).
_DEFAULT_SELECTOR_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})

# -- constraints ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Constraint:
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


def from_pod_constraint(c: SpreadConstraint) -> Constraint:
    return Constraint(
        max_skew=int(c.max_skew),
        topology_key=c.topology_key,
        min_domains=1 if c.min_domains is None else int(c.min_domains),
        honor_node_affinity=(c.node_affinity_policy or HONOR) == HONOR,
        honor_node_taints=(c.node_taints_policy or IGNORE) == HONOR,
        selector=c.selector,
        owner=None,
    )


def from_default(raw: Mapping[str, Any], owner: tuple[str, str]) -> Constraint:
    min_domains = raw.get("minDomains")
    return Constraint(
        max_skew=int(raw["maxSkew"]),
        topology_key=str(raw["topologyKey"]),
        min_domains=1 if min_domains is None else int(min_domains),
        honor_node_affinity=(raw.get("nodeAffinityPolicy") or HONOR) == HONOR,
        honor_node_taints=(raw.get("nodeTaintsPolicy") or IGNORE) == HONOR,
        selector=None,
        owner=owner,
    )


def default_owner(pod: PodInfo) -> tuple[str, str] | None:
    kind, name = pod.owner_kind, pod.owner_name
    if not kind or not name or kind not in _DEFAULT_SELECTOR_OWNERS:
        return None
    return (kind, name)


# -- node masks -----------------------------------------------------------------------------
MAX_KEPT_DEFAULTS = 4096
_NOSCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Topology:
    """What Score reads of the nodes for one topology key."""

    ids: IntArray  # per node row, the id of the node's value (-1: no such label)
    values: list[str]
    has: BoolArray  # per node row, the node has the label
    everywhere: bool  # every node has it (Score need not look at ``has``)
    folded: IntArray  # ``ids``, a missing label read as "" (the "" domain, or one more id)


def row_labels(nodes: NodeTableView, row: int) -> object:
    """What the topologies read of a row: its node's name (none: no node) and labels."""
    return nodes.names[row], nodes.labels[row]


def topology_of(snapshot: ClusterSnapshot, key: str) -> Topology:
    ids, values = snapshot.domains(key)
    has = ids >= 0
    missing_id = values.index("") if "" in values else len(values)
    return Topology(ids, values, has, not np.count_nonzero(snapshot.nodes.alive & ~has),
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


class CountedPods:
    """Node rows of the pods each constraint counts (same namespace, not terminating)."""

    def __init__(self, state: CycleState, snapshot: ClusterSnapshot, namespace: str) -> None:
        self.state = state
        self.snapshot = snapshot
        self.namespace = namespace
        # The system default constraints (hostname and zone) count the same siblings.
        self._siblings: dict[tuple[str, str], IntArray] = {}

    def rows(self, c: Constraint) -> IntArray:
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
