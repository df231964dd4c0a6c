"""NodeVolumeLimits: no node gets more CSI volumes of a driver than its CSINode allows
(upstream ``nodevolumelimits/csi.go``, v1.37 with VolumeLimitScaling on).

The pod's volumes become a set of ``driver/handle`` names: a bound claim's CSI PV gives its
driver and handle; an unbound claim (or one whose PV is missing) counts as one new volume of
its StorageClass's provisioner. Per node, the volumes its pods already use are subtracted
(a shared volume counts once), and a driver whose count would exceed the node's CSINode
``allocatable.count`` refuses the node (Unschedulable). A CSIDriver with
``preventPodSchedulingIfMissing`` also refuses nodes whose CSINode does not list it. No
CSINode, or no counts: no limit.

Not counted here, unlike upstream: in-tree volumes migrated to CSI (no translation library)
and VolumeAttachments of volumes still detaching (not watched).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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
    QueueingHint,
    Resource,
    Status,
)
from scheduler.plugins.helper.volume_hints import after_claim_named

NAME = "NodeVolumeLimits"
STATE_KEY = f"PreFilter{NAME}"
ERR_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


def not_installed(driver: str) -> str:
    return f"{driver} CSI driver is not installed on the node"


@dataclass(frozen=True)
class _State:
    # driver/handle -> driver
    volumes: Mapping[str, str]


def attachable_volumes(
    snapshot: ClusterSnapshot, pod: PodInfo, *, strict: bool
) -> tuple[dict[str, str], str | None]:
    """The pod's CSI volumes as ``{driver/handle: driver}``; with ``strict``, a missing claim
    is an error message (the incoming pod) instead of being skipped (pods on the node)."""
    out: dict[str, str] = {}
    for name, _ in pod.claims:
        claim = snapshot.claim(pod.namespace, name)
        if claim is None:
            if strict:
                return {}, (f"looking up PVC {pod.namespace}/{name}: persistentvolumeclaim "
                            f'"{name}" not found')
            continue
        volume = snapshot.volume(claim.volume_name) if claim.volume_name else None
        if volume is not None:
            if volume.csi_driver:
                out[f"{volume.csi_driver}/{volume.csi_handle}"] = volume.csi_driver
            continue
        storage_class = snapshot.storage_class(claim.storage_class)
        if storage_class is not None and storage_class.provisioner:
            # One new volume per claim, whatever it will be called.
            driver = storage_class.provisioner
            out[f"{driver}/<unbound {claim.key}>"] = driver
    return out, None


class NodeVolumeLimits:
    name = NAME
    filter_reads_pod_lists = True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.claims:
            return None, SKIP
        volumes, error = attachable_volumes(snapshot, pod, strict=True)
        if error is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (error,))
        if not volumes:
            return None, SKIP
        state.write(STATE_KEY, _State(volumes))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        wanted: Mapping[str, str] = state.read(STATE_KEY).volumes
        snapshot = nodes.snapshot
        table = snapshot.nodes
        drivers = set(wanted.values())
        guarded = {d for d in drivers
                   if (info := snapshot.csi_driver(d)) and info.prevent_scheduling_if_missing}
        result = FilterResult.all_pass(len(nodes))
        over = np.zeros(len(nodes), dtype=np.bool_)
        deltas = {pos: (added, removed) for pos, _, added, removed in nodes.delta_rows()}
        for pos, row in enumerate(nodes.idx.tolist()):
            csi = snapshot.csi_node(table.names[row])
            for driver in sorted(guarded):
                if csi is None or driver not in csi.drivers:
                    mask = np.zeros(len(nodes), dtype=np.bool_)
                    mask[pos] = True
                    result.reject(mask, Code.UNSCHEDULABLE, not_installed(driver))
                    break
            if csi is None or result.codes[pos]:
                continue
            limits = {d: c for d, c in csi.drivers.items() if c is not None and d in drivers}
            if not limits:
                continue
            added, removed = deltas.get(pos, ((), ()))
            gone = {p.uid for p in removed}
            pods = [p for p in table.pods[row].values() if p.uid not in gone] + list(added)
            in_use = self._in_use(snapshot, pods)
            new = Counter(d for name, d in wanted.items() if name not in in_use)
            used = Counter(in_use.values())
            over[pos] = any(used[d] + new[d] > limit
                            for d, limit in limits.items() if new[d])
        result.reject(over, Code.UNSCHEDULABLE, ERR_MAX_VOLUME_COUNT)
        return result

    @staticmethod
    def _in_use(snapshot: ClusterSnapshot, pods: Iterable[PodInfo]) -> dict[str, str]:
        out: dict[str, str] = {}
        for other in pods:
            if other.claims:
                out.update(attachable_volumes(snapshot, other, strict=False)[0])
        return out

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.UPDATE),
                                 _after_csi_node_update),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE),
                                 _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD), after_claim_named),
        ]


def _after_csi_node_update(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Some driver's count increased (absent counts as 0)."""
    if old is None or new is None:
        return QueueingHint.QUEUE
    grew = any((count or 0) > (old.drivers.get(d) or 0) for d, count in new.drivers.items())
    return QueueingHint.QUEUE if grew else QueueingHint.SKIP


def _after_pod_deleted(pod: PodInfo, old: PodInfo | None, new: object) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    placed = bool(old.node_name or old.nominated_node_name)
    return QueueingHint.QUEUE if placed and old.claims else QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits()


SPEC = PluginSpec(name=NAME, factory=new)
