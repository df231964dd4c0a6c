"""VolumeRestrictions: volumes that cannot be shared (upstream
``volumerestrictions/volume_restrictions.go``, v1.37).

- **ReadWriteOncePod.** A claim with that access mode may be used by one pod only. PreFilter
  counts, over every pod on a node (bound or assumed, of any scheduler), the uses of the
  pod's RWOP claims; while the count is above zero every node is refused (Unschedulable, so
  preemption may remove the holder: a preemption dry run's removed pods are subtracted).
- **Inline disks.** A GCE PD, AWS EBS, RBD or iSCSI volume of the pod conflicts with the same
  disk used by a pod on the node, unless both mount it read-only (EBS: always).
- A claim the pod names that does not exist is UnschedulableAndUnresolvable in PreFilter;
  generic ephemeral volumes are VolumeBinding's to report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    READ_WRITE_ONCE_POD,
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

NAME = "VolumeRestrictions"
STATE_KEY = f"PreFilter{NAME}"
ERR_DISK_CONFLICT = "node(s) had no available disk"
ERR_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                     "access mode already in-use by another pod")
INLINE_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


@dataclass(frozen=True)
class _State:
    rwop_claims: frozenset[str]
    rwop_users: int
    disks: tuple[tuple[str, Mapping[str, Any]], ...]


def inline_disks(pod: PodInfo) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    spec = pod.raw.get("spec") or {}
    out = []
    for volume in spec.get("volumes") or ():
        # dict first: isinstance stops at the first match, and the ABC's check is dearer.
        if not isinstance(volume, (dict, Mapping)):
            continue
        for kind in INLINE_DISKS:
            source = volume.get(kind)
            if source is not None and isinstance(source, (dict, Mapping)):
                out.append((kind, source))
    return tuple(out)


def disks_conflict(kind: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """upstream's isVolumeConflict for one pair of inline volumes of the same kind."""
    both_read_only = bool(a.get("readOnly")) and bool(b.get("readOnly"))
    if kind == "gcePersistentDisk":
        return a.get("pdName") == b.get("pdName") and not both_read_only
    if kind == "awsElasticBlockStore":
        return a.get("volumeID") == b.get("volumeID")
    if kind == "iscsi":
        return a.get("iqn") == b.get("iqn") and not both_read_only
    # rbd: a shared monitor, the same pool and image.
    shared = set(a.get("monitors") or ()) & set(b.get("monitors") or ())
    return (bool(shared) and a.get("pool") == b.get("pool") and a.get("image") == b.get("image")
            and not both_read_only)


class VolumeRestrictions:
    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (preemption's dry runs).
    filter_reads_pod_lists = True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        disks = inline_disks(pod)
        if not disks and not pod.claims:
            return None, SKIP
        rwop: set[str] = set()
        for name, ephemeral in pod.claims:
            if ephemeral:
                continue
            claim = snapshot.claim(pod.namespace, name)
            if claim is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (claim_not_found(name),))
            if READ_WRITE_ONCE_POD in claim.access_modes:
                rwop.add(name)
        users = sum(snapshot.claim_users(pod.namespace, name) for name in rwop)
        if not disks and users == 0:
            return None, SKIP
        state.write(STATE_KEY, _State(frozenset(rwop), users, disks))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        st: _State = state.read(STATE_KEY)
        n = len(nodes)
        result = FilterResult.all_pass(n)
        if st.disks:
            table = nodes.snapshot.nodes
            conflict = np.fromiter(
                (self._disk_conflict(st.disks, table.pods[int(row)].values())
                 for row in nodes.idx), dtype=np.bool_, count=n)
            for pos, row, added, removed in nodes.delta_rows():
                gone = {p.uid for p in removed}
                pods = [p for p in table.pods[row].values() if p.uid not in gone]
                conflict[pos] = self._disk_conflict(st.disks, [*pods, *added])
            result.reject(conflict, Code.UNSCHEDULABLE, ERR_DISK_CONFLICT)
        if st.rwop_users > 0 or nodes.has_deltas:
            users = np.full(n, st.rwop_users, dtype=np.int64)
            # A claim's user counts wherever it runs: one removed from another node frees
            # the claim too (upstream's RemovePod with that node).
            for pos, _, added, removed, elsewhere in nodes.delta_rows_across_nodes():
                users[pos] += _uses(added, pod.namespace, st.rwop_claims)
                users[pos] -= _uses([*removed, *elsewhere], pod.namespace, st.rwop_claims)
            result.reject(users > 0, Code.UNSCHEDULABLE, ERR_RWOP_CONFLICT)
        return result

    @staticmethod
    def _disk_conflict(
        disks: Sequence[tuple[str, Mapping[str, Any]]], others: Iterable[PodInfo]
    ) -> bool:
        for other in others:
            theirs = inline_disks(other)
            for kind, mine in disks:
                if any(k == kind and disks_conflict(kind, mine, v) for k, v in theirs):
                    return True
        return False

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE),
                                 _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD), after_claim_named),
        ]


def _uses(pods: Iterable[PodInfo], namespace: str, claims: frozenset[str]) -> int:
    return sum(1 for p in pods if p.namespace == namespace
               for name, _ in p.claims if name in claims)


def _after_pod_deleted(pod: PodInfo, old: PodInfo | None, new: object) -> QueueingHint:
    """The deleted pod shared a claim with the pod, or an inline disk that conflicts."""
    if old is None or old.namespace != pod.namespace:
        return QueueingHint.SKIP
    if {n for n, _ in old.claims} & {n for n, _ in pod.claims}:
        return QueueingHint.QUEUE
    mine = inline_disks(pod)
    if mine and VolumeRestrictions._disk_conflict(mine, [old]):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions()


SPEC = PluginSpec(name=NAME, factory=new)
