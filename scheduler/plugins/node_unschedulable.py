"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods that tolerate it.

Upstream ``nodeunschedulable/node_unschedulable.go``: a pod passes a cordoned node only if it
tolerates the taint ``node.kubernetes.io/unschedulable:NoSchedule`` (which the node lifecycle
controller adds to cordoned nodes anyway). The answer depends on one bit per node, so Filter
is a single mask over the batch. Upstream's PreFilter only acts for deferred in-place resizes
of bound pods (an alpha gate, off by default) and is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterResult,
    Handle,
    NodeSummary,
    NodeView,
    PluginSpec,
    PodInfo,
    QueueingHint,
    Resource,
    Taint,
)

NAME = "NodeUnschedulable"

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


def tolerates_unschedulable(pod: Any) -> bool:
    """The pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    return any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable:
    name = NAME
    # Filter needs only the NodeView's numbers, not its hypothetical pod lists.
    filter_reads_pod_lists = False

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        cordoned = nodes.snapshot.nodes.unschedulable.take(nodes.idx)
        if np.count_nonzero(cordoned) and not tolerates_unschedulable(pod):
            result.reject(cordoned, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)
        return result

    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """A cordoned node: the toleration the pod lacks."""
        why = f"cordoned: the pod does not tolerate {TAINT_NODE_UNSCHEDULABLE}:NoSchedule"
        return [[why] for _ in range(len(nodes))]

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
                _after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATION),
                _after_pod_toleration_change,
            ),
        ]



def _after_node_change(
    pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
) -> QueueingHint:
    """Queue when a node is added schedulable or goes from unschedulable to schedulable."""
    if new is None:
        return QueueingHint.SKIP
    if new.unschedulable:
        return QueueingHint.SKIP
    if old is None or old.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_pod_toleration_change(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    """Queue when the updated pod now tolerates the unschedulable taint."""
    target = new if new is not None else pod
    return QueueingHint.QUEUE if tolerates_unschedulable(target) else QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


SPEC = PluginSpec(name=NAME, factory=new)
