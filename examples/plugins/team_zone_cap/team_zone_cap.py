"""TeamZoneCap: an out-of-tree Filter plugin that caps how many pods each team may run per
zone, with the caps in a ConfigMap it watches.

A pod's team is its ``example.com/team`` label; a node's zone, its
``topology.kubernetes.io/zone`` label. The ConfigMap maps teams to caps::

    apiVersion: v1
    kind: ConfigMap
    metadata: {name: team-zone-caps, namespace: kube-system}
    data: {payments: "2", search: "10"}

A node is refused to a pod when the pod's team already runs its cap of pods in the node's
zone (Unschedulable: preemption may free room by removing lower-priority pods of the team).
Teams without a cap, pods without a team and nodes without a zone are not limited. A cap
that is not a whole number >= 0 refuses the team's pods with a message naming the ConfigMap,
until it is fixed. When the ConfigMap changes, a team's pod is deleted or a node's labels
change, the pods this plugin refused are retried.

The scheduler needs read access to the ConfigMap (get, list, watch), e.g. a Role and
RoleBinding in its namespace for the scheduler's ServiceAccount::

    profiles:
      - schedulerName: secondary-scheduler
        plugins:
          multiPoint:
            enabled: [{name: TeamZoneCap}]
        pluginConfig:
          - name: TeamZoneCap
            args: {configMapNamespace: kube-system, configMapName: team-zone-caps}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

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
    EnqueueExtensions,
    FilterPlugin,
    FilterPodListsHook,
    FilterResult,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    label_key_error,
)

NAME = "TeamZoneCap"
STATE_KEY = f"PreFilter{NAME}"


@dataclass(frozen=True)
class TeamZoneCapArgs:
    config_map_namespace: str = "kube-system"
    config_map_name: str = "team-zone-caps"
    team_label: str = "example.com/team"
    zone_label: str = "topology.kubernetes.io/zone"

    def problems(self) -> Iterator[tuple[str, str]]:
        for field in ("config_map_namespace", "config_map_name"):
            if not getattr(self, field):
                yield field, "must not be empty"
        for field in ("team_label", "zone_label"):
            why = label_key_error(getattr(self, field))
            if why is not None:
                yield field, why


@dataclass(frozen=True)
class _Quota:
    team: str
    cap: int
    zone_of_row: IntArray
    pods_per_zone: IntArray


class TeamZoneCap(PreFilterPlugin, FilterPlugin, FilterPodListsHook, EnqueueExtensions):
    name = NAME
    # Filter reads the hypothetical pods of a NodeView row (preemption's dry runs).
    filter_reads_pod_lists = True

    def __init__(self, args: TeamZoneCapArgs, handle: Handle) -> None:
        self.team_label = args.team_label
        self.zone_label = args.zone_label
        self.source = f"{args.config_map_namespace}/{args.config_map_name}"
        # team -> cap, or the text of a cap that is not one.
        self.caps: Mapping[str, int | str] = {}
        handle.watch_config_map(args.config_map_namespace, args.config_map_name,
                                self._caps_changed)

    def _caps_changed(self, data: Mapping[str, str] | None) -> None:
        caps: dict[str, int | str] = {}
        for team, text in (data or {}).items():
            value = text.strip()
            caps[team] = int(value) if value.isdigit() else text
        self.caps = caps

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        team = pod.labels.get(self.team_label)
        cap = self.caps.get(team) if team is not None else None
        if team is None or cap is None:
            return None, SKIP
        if isinstance(cap, str):
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
                f"team {team} has an invalid cap {cap!r} in ConfigMap {self.source}: "
                "want a whole number >= 0",))
        zone_of_row, zones = snapshot.domains(self.zone_label)
        pods_per_zone = np.zeros(len(zones), dtype=np.int64)
        table = snapshot.nodes
        for row in table.index.values():
            zone = int(zone_of_row[row])
            if zone >= 0:
                pods_per_zone[zone] += self._of_team(table.pods[row].values(), team)
        state.write(STATE_KEY, _Quota(team, cap, zone_of_row, pods_per_zone))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        quota: _Quota = state.read(STATE_KEY)
        result = FilterResult.all_pass(len(nodes))
        zone = quota.zone_of_row[nodes.idx]
        zoned = zone >= 0
        used = np.where(zoned, quota.pods_per_zone[np.maximum(zone, 0)], 0)
        # A preemption dry run may evict a pod group whole: its pods removed on the other
        # nodes of the row's zone free room too.
        for pos, _, added, removed, elsewhere in nodes.delta_rows_across_nodes():
            used[pos] += self._of_team(added, quota.team) - self._of_team(removed, quota.team)
            if elsewhere and zoned[pos]:
                used[pos] -= self._of_team_in_zone(elsewhere, quota, int(zone[pos]), nodes)
        result.reject(zoned & (used >= quota.cap), Code.UNSCHEDULABLE,
                      f"node(s) in a zone where team {quota.team} runs its cap of "
                      f"{quota.cap} pods")
        return result

    def _of_team(self, pods: Iterable[PodInfo], team: str) -> int:
        return sum(1 for p in pods if p.labels.get(self.team_label) == team)

    def _of_team_in_zone(
        self, pods: Iterable[PodInfo], quota: _Quota, zone: int, nodes: NodeView
    ) -> int:
        """The team's pods among ``pods`` whose own node is in ``zone``."""
        index = nodes.snapshot.nodes.index
        rows = (index.get(p.node_name) for p in pods
                if p.node_name and p.labels.get(self.team_label) == quota.team)
        return sum(1 for row in rows if row is not None and quota.zone_of_row[row] == zone)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CONFIG_MAP, Action.ALL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE | Action.UPDATE_POD_LABEL),
                self._team_pod_left,
            ),
        ]

    def _team_pod_left(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """Only a pod of the same team leaving (deleted, or relabelled) frees room."""
        team = pod.labels.get(self.team_label)
        was = old is not None and old.labels.get(self.team_label) == team
        still = new is not None and new.labels.get(self.team_label) == team
        return QueueingHint.QUEUE if was and not still else QueueingHint.SKIP


SPEC = PluginSpec(name=NAME, factory=TeamZoneCap, args=TeamZoneCapArgs,
                  points=frozenset({"preFilter", "filter"}))
