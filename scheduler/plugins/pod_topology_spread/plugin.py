"""PodTopologySpread, the plugin: its filtering and scoring halves, the constraints a pod
spreads by, and its queueing hints (upstream ``plugin.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import (
    Action,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    Handle,
    NodeSummary,
    PluginSpec,
    PodInfo,
    QueueingHint,
    Resource,
)
from scheduler.plugins.helper.row_memo import TableFacts
from scheduler.plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    NAME,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from scheduler.plugins.pod_topology_spread.common import (
    MAX_KEPT_DEFAULTS,
    Constraint,
    Topology,
    default_owner,
    from_default,
    from_pod_constraint,
    row_labels,
)
from scheduler.plugins.pod_topology_spread.filtering import Filtering
from scheduler.plugins.pod_topology_spread.scoring import Scoring


class PodTopologySpread(Filtering, Scoring):

    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (see interface.NodeView).
    filter_reads_pod_lists = True

    def __init__(self, args: PodTopologySpreadArgs) -> None:
        # Node-only facts for Score, per topology key and per set of keys, kept while the
        # node table's labels and node set stay as they were (``_node_facts``).
        self._topologies: dict[str, Topology] = {}
        self._with_keys: dict[tuple[str, ...], tuple[BoolArray, BoolArray]] = {}
        self._node_facts = TableFacts(row_labels)
        # Per (controller, action): the default constraints of its pods (a plain dict, not a
        # cachetools cache: asked twice a cycle; cleared when it grows past the bound).
        self._defaults: dict[tuple[tuple[str, str], str], tuple[Constraint, ...]] = {}
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[Mapping[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS
            if self.system_defaulted
            else tuple(args.default_constraints or ())
        )
        # Pods by controller owner, for the default constraints' selector.

    # -- constraints ------------------------------------------------------------------------
    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """upstream getConstraints: the pod's own constraints, else the defaults."""
        if pod.spread_constraints:
            return tuple(
                from_pod_constraint(c)
                for c in pod.spread_constraints
                if c.when_unsatisfiable == action
            )
        owner = default_owner(pod)
        if owner is None:
            return ()
        # The same for every pod of a controller, asked at PreFilter and PreScore each cycle.
        key = (owner, action)
        kept = self._defaults.get(key)
        if kept is None:
            if len(self._defaults) >= MAX_KEPT_DEFAULTS:
                self._defaults.clear()
            kept = self._defaults[key] = tuple(
                from_default(raw, owner)
                for raw in self.default_constraints
                if raw.get("whenUnsatisfiable") == action
            )
        return kept


    # -- events -----------------------------------------------------------------------------

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
    old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[Constraint]
) -> QueueingHint:
    if dict(old) == dict(new):
        return QueueingHint.SKIP
    for c in constraints:
        if c.selector is None:
            continue  # owner-based defaults do not depend on labels
        if c.selector.matches(old) != c.selector.matches(new):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP




def new(args: PodTopologySpreadArgs, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args)


SPEC = PluginSpec(name=NAME, factory=new, args=PodTopologySpreadArgs)
