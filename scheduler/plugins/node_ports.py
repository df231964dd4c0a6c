"""NodePorts: a pod's host ports must be free on the node (upstream ``nodeports/node_ports.go``).

PreFilter skips pods without host ports (the vast majority), so the fast path never reaches
Filter. For a pod with host ports, Filter checks each row's used ports with upstream's
``HostPortInfo.CheckConflict`` rules (``0.0.0.0`` collides with every address of the same
protocol and port). Rows carrying hypothetical pods use their ports adjusted for the pods
added to or removed from them. The rejection is plain Unschedulable: preempting the pod that
holds the port can free it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
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
    HostPort,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    ports_conflict,
)

NAME = "NodePorts"

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

PortKey = tuple[str, str, int]


def _port_counter(pods: Iterable[PodInfo]) -> Counter[PortKey]:
    used: Counter[PortKey] = Counter()
    for p in pods:
        for hp in p.host_ports:
            used[(hp.ip, hp.protocol, hp.port)] += 1
    return used


class NodePorts:
    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (see interface.NodeView).
    filter_reads_pod_lists = True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.host_ports:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, tuple(pod.host_ports))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        n = len(nodes)
        result = FilterResult.all_pass(n)
        wanted: tuple[HostPort, ...] = state.get(PRE_FILTER_STATE_KEY) or tuple(pod.host_ports)
        if not wanted or n == 0:
            return result
        used_ports = nodes.snapshot.nodes.used_ports
        rows = nodes.idx.tolist()
        # Only rows with some port in use can conflict; most rows have none.
        conflict = np.fromiter(
            (bool(used_ports[r]) and ports_conflict(used_ports[r], wanted) for r in rows),
            dtype=np.bool_,
            count=n,
        )
        if nodes.has_deltas:
            for pos in range(n):
                added = nodes.added[pos] if nodes.added is not None else ()
                removed = nodes.removed[pos] if nodes.removed is not None else ()
                if not added and not removed:
                    continue
                used = Counter(used_ports[rows[pos]])
                used.update(_port_counter(added))
                used.subtract(_port_counter(removed))
                used = +used  # drop keys that fell to zero
                conflict[pos] = ports_conflict(used, wanted)
        result.reject(conflict, Code.UNSCHEDULABLE, ERR_REASON)
        return result

    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """The pod's host ports already in use on the node."""
        used_ports = nodes.snapshot.nodes.used_ports
        return [[f"host port {hp.port}/{hp.protocol} on {hp.ip} is in use"
                 for hp in pod.host_ports if ports_conflict(used_ports[row], [hp])]
                for row in nodes.idx.tolist()]

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), _after_assigned_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
        ]


def _after_assigned_pod_deleted(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    """Queue only when the deleted pod held (or was nominated with) a port the pod wants."""
    deleted = old
    if deleted is None:
        return QueueingHint.QUEUE
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.SKIP
    if not deleted.host_ports:
        return QueueingHint.SKIP
    if ports_conflict(_port_counter([deleted]), pod.host_ports):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> NodePorts:
    return NodePorts()


SPEC = PluginSpec(name=NAME, factory=new)
