"""NodeName: a pod that names its node in ``spec.nodeName`` fits only that node.

Upstream ``nodename/node_name.go``. PreFilter restricts the cycle to the named node (so the
others are UnschedulableAndUnresolvable and never preemption candidates). A pod without
``spec.nodeName`` passes every node; PreFilter then answers Skip so that Filter is not run
at all, which changes no outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    FilterResult,
    Handle,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    Resource,
    Status,
)

NAME = "NodeName"

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME
    # Filter needs only the NodeView's numbers, not its hypothetical pod lists.
    filter_reads_pod_lists = False

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if pod.node_name:
            return PreFilterResult(frozenset({pod.node_name})), SUCCESS
        return None, SKIP

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        if not pod.node_name:
            return result
        row = nodes.snapshot.row_of(pod.node_name)
        mismatch = np.ones(len(nodes), dtype=np.bool_) if row is None else nodes.idx != row
        result.reject(mismatch, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
        return result

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # No hint: a new node is always worth a retry (upstream registers none either).
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD))]


def new(args: Mapping[str, Any], handle: Handle) -> NodeName:
    return NodeName()


SPEC = PluginSpec(name=NAME, factory=new)
