"""VolumeZone: a pod whose bound PersistentVolumes are labelled with zones or regions goes
only to nodes in one of them (upstream ``volumezone/volume_zone.go``, v1.37).

PreFilter reads each claim's PV labels under the four zone and region keys (a value may list
several, ``a__b``; a value with an empty part is ignored). Unbound claims of a
WaitForFirstConsumer class are VolumeBinding's; other unbound claims, missing claims, volumes
and classes are UnschedulableAndUnresolvable. Filter: a node without any of the four labels
passes (the single-zone assumption); otherwise each PV key needs the node's value (a beta key
falls back to the node's GA label) to be one the PV allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    ZONE_KEYS,
    Action,
    BoolArray,
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
    VolumeInfo,
)

NAME = "VolumeZone"
STATE_KEY = f"PreFilter{NAME}"
ERR_REASON = "node(s) had no available volume zone"
NO_NAME_NO_CLASS = "PersistentVolumeClaim had no pv name and storageClass name"
NO_PV_NAME = "PersistentVolume had no name"

Topology = tuple[tuple[str, frozenset[str]], ...]


def topology_of(volume: VolumeInfo) -> Topology:
    out = []
    for key in ZONE_KEYS:
        value = volume.labels.get(key)
        if not value:
            continue
        parts = [part.strip() for part in value.split("__")]
        if all(parts):
            out.append((key, frozenset(parts)))
    return tuple(out)


def _uu(message: str) -> tuple[None, Status]:
    return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


class VolumeZone:
    name = NAME
    filter_reads_pod_lists = False

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        topology: list[tuple[str, frozenset[str]]] = []
        for name, ephemeral in pod.claims:
            if ephemeral:
                continue
            claim = snapshot.claim(pod.namespace, name)
            if claim is None:
                return _uu(f'persistentvolumeclaim "{name}" not found')
            if not claim.volume_name:
                if not claim.storage_class:
                    return _uu(NO_NAME_NO_CLASS)
                storage_class = snapshot.storage_class(claim.storage_class)
                if storage_class is None:
                    return _uu(f'storageclass.storage.k8s.io "{claim.storage_class}" not found')
                if storage_class.wait_for_first_consumer:
                    continue
                return _uu(NO_PV_NAME)
            volume = snapshot.volume(claim.volume_name)
            if volume is None:
                return _uu(f'persistentvolume "{claim.volume_name}" not found')
            topology.extend(topology_of(volume))
        if not topology:
            return None, SKIP
        state.write(STATE_KEY, tuple(topology))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        topology: Topology = state.read(STATE_KEY)
        snapshot = nodes.snapshot
        rows = nodes.idx
        labelled = np.zeros(len(nodes), dtype=np.bool_)
        for key in ZONE_KEYS:
            labelled |= snapshot.domains(key)[0][rows] >= 0
        ok = np.ones(len(nodes), dtype=np.bool_)
        for key, allowed in topology:
            ok &= self._allows(snapshot, rows, key, allowed)
        result = FilterResult.all_pass(len(nodes))
        result.reject(labelled & ~ok, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
        return result

    @staticmethod
    def _allows(
        snapshot: ClusterSnapshot, rows: Any, key: str, allowed: frozenset[str]
    ) -> BoolArray:
        """Per row: the node's value for ``key`` (a beta key falls back to the GA label) is
        one of ``allowed``."""
        ids, names = snapshot.domains(key)
        good = np.asarray([name in allowed for name in names] + [False], dtype=np.bool_)
        row_ids = ids[rows]
        ok: BoolArray = good[row_ids]  # -1 (no label) picks the trailing False
        fallback = ZONE_KEYS[key]
        if fallback is not None:
            ga_ids, ga_names = snapshot.domains(fallback)
            ga_good = np.asarray([n in allowed for n in ga_names] + [False], dtype=np.bool_)
            missing = row_ids < 0
            ok = np.where(missing, ga_good[ga_ids[rows]], ok)
        return ok

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, Action.ADD),
                                 _after_class_added),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD | Action.UPDATE),
                                 _after_claim_change),
            ClusterEventWithHint(ClusterEvent(Resource.PV, Action.ADD | Action.UPDATE),
                                 _after_volume_change),
        ]


def _after_class_added(pod: PodInfo, old: object, new: Any) -> QueueingHint:
    wffc = new is not None and new.wait_for_first_consumer
    return QueueingHint.QUEUE if wffc else QueueingHint.SKIP


def _after_claim_change(pod: PodInfo, old: object, new: Any) -> QueueingHint:
    named = new is not None and new.namespace == pod.namespace and any(
        n == new.name and not ephemeral for n, ephemeral in pod.claims)
    return QueueingHint.QUEUE if named else QueueingHint.SKIP


def _after_volume_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    changed = topology_of(old) != topology_of(new)
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def new(args: Mapping[str, Any], handle: Handle) -> VolumeZone:
    return VolumeZone()


SPEC = PluginSpec(name=NAME, factory=new)
