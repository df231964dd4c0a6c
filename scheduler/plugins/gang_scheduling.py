"""GangScheduling: a gang's pods are placed all or none (upstream
``framework/plugins/gangscheduling/gangscheduling.go``, GenericWorkload on, CompositePodGroup
off).

- **PreEnqueue** holds a member until its PodGroup is observed and, for a gang, until
  ``minCount`` members exist (unscheduled, assumed or bound).
- **Permit** makes a member wait until ``minCount`` members are assumed or bound, then allows
  every assumed member waiting at Permit together; the members still unscheduled are
  activated meanwhile. A member that waits too long (five minutes) is rejected and
  unreserved: its room is never held longer.
- **PreFilter** (Coscheduling PodGroups with ``minResources`` only) rejects a member early
  when the cluster's free resources, the group's own placed members not counted, cannot
  hold ``minResources`` and ``minMember`` pods (scheduler-plugins' ``CheckClusterResource``):
  ``resource gap: map[...]``, UnschedulableAndUnresolvable.
- **placement_feasible** is upstream's PlacementFeasible, the check of the pod-group
  scheduling cycle after each member: Unschedulable when ``minCount`` can no longer be
  reached, Wait until it is, Success once it is (a Basic group counts as ``minCount`` 1).

scheduler-plugins' Coscheduling PodGroups run on the same plugin: quorum ``minMember``,
Permit's wait ``scheduleTimeoutSeconds`` (its plugin's default, 60 s, when unset), and a
pod whose Coscheduling PodGroup does not exist is scheduled alone, as that plugin does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import (
    COSCHEDULING,
    CPU,
    PODS,
    SKIP,
    SUCCESS,
    WORKLOAD_API,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    Handle,
    PermitDecision,
    PluginSpec,
    PodGroup,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)

NAME = "GangScheduling"
# permitTimeoutDuration: how long gang members wait at Permit for a quorum.
PERMIT_TIMEOUT_SECONDS = 300.0
# scheduler-plugins' Coscheduling permitWaitingTimeSeconds default, for groups without
# scheduleTimeoutSeconds.
COSCHEDULING_PERMIT_TIMEOUT_SECONDS = 60.0

WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def waiting_for_group(name: str) -> str:
    # Upstream's text, "pods's" included.
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    # -- PreEnqueue ----------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        ref = pod.pod_group
        if ref is None:
            return SUCCESS
        group, members = self._handle.pod_groups.quorum_of(pod)
        if group is None:
            if not pod.in_workload_group:
                return SUCCESS  # Coscheduling: no PodGroup, a pod like any other
            return Status.unschedulable(waiting_for_group(ref.name), resolvable=False)
        if group.is_gang and members < group.min_count:
            return Status.unschedulable(WAITING_FOR_MIN_COUNT, resolvable=False)
        return SUCCESS

    # -- PreFilter (Coscheduling's minResources) -----------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        ref = pod.pod_group
        if ref is None or ref.source != COSCHEDULING:
            return None, SKIP
        group_state = self._handle.pod_groups.state_of(pod)
        group = None if group_state is None else group_state.group
        if group_state is None or group is None or not group.min_resources:
            return None, SKIP
        gap = resource_gap(snapshot, group, group_state.scheduled_pods())
        if gap:
            return None, Status.unschedulable(
                f"resource gap: {_go_map(gap)}", resolvable=False)
        return None, SUCCESS

    # -- Permit --------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision:
        ref = pod.pod_group
        if ref is None:
            return PermitDecision(SUCCESS)
        groups = self._handle.pod_groups
        group, scheduled, assumed = groups.scheduled_of(pod)
        if group is None:
            if not pod.in_workload_group:
                return PermitDecision(SUCCESS)
            return PermitDecision(Status.error(
                f"failed to get podGroup {pod.namespace}/{ref.name}: "
                f'podgroup.scheduling.k8s.io "{ref.name}" not found'))
        if not group.is_gang:
            return PermitDecision(SUCCESS)
        if scheduled < group.min_count:
            # The other members may have been waiting for this one to be scheduled.
            group_state = groups.state_of(pod)
            if group_state is not None:
                self._handle.activate(p.uid for p in group_state.unscheduled_pods())
            return PermitDecision(Status(Code.WAIT, (WAITING_AT_PERMIT,), NAME),
                                  permit_timeout(group))
        waiting = self._handle.waiting_pods
        for uid in assumed:
            if uid in waiting:
                waiting.allow(uid, NAME)
        return PermitDecision(SUCCESS)

    # -- PlacementFeasible (the pod-group cycle) --------------------------------------------
    def placement_feasible(self, group: PodGroup, scheduled: int, remaining: int) -> Status:
        """Whether the group's ``minCount`` can still be met with ``scheduled`` members
        placed and ``remaining`` still to try (1 for a Basic group)."""
        min_count = group.min_count if group.is_gang else 1
        if remaining + scheduled < min_count:
            return Status(Code.UNSCHEDULABLE, (
                f"minCount ({min_count}) cannot be satisfied: "
                f"{scheduled} scheduled, {remaining} remaining",), NAME)
        if scheduled < min_count:
            return Status(Code.WAIT, (
                f"minCount ({min_count}) is not yet satisfied: "
                f"{scheduled} scheduled, {remaining} remaining",), NAME)
        return SUCCESS

    def _after_pod_added(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """A member of the pod's own group was added. Upstream queues the group at once
        and PreEnqueue holds it again until minCount members exist; here each member waits
        on its own, so the hint skips while the quorum is short: a gang of 1000 would
        otherwise be moved and held again 500,000 times as its members arrive."""
        if not isinstance(new, PodInfo) or new.pod_group is None:
            return QueueingHint.SKIP
        if not _same_group(pod, new.pod_group.source, new.namespace, new.pod_group.name):
            return QueueingHint.SKIP
        group, members = self._handle.pod_groups.quorum_of(pod)
        if group is not None and group.is_gang and members < group.min_count:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # -- explain -----------------------------------------------------------------------------
    def explain_pod(self, pod: PodInfo) -> list[str]:
        """What the pod's group waits for: the group itself, its members, the last cycle."""
        ref = pod.pod_group
        if ref is None:
            return []
        state = self._handle.pod_groups.state_of(pod)
        group = None if state is None else state.group
        if state is None or group is None:
            if not pod.in_workload_group:
                return [f"PodGroup {pod.namespace}/{ref.name} ({ref.source}) does not exist: "
                        "the pod is scheduled on its own"]
            return [f"pod group {pod.namespace}/{ref.name} does not exist yet: its members "
                    "are held until it does"]
        kind = f"gang, minCount {group.min_count}" if group.is_gang else "basic"
        lines = [f"pod group {group.key} ({kind}): {state.all_count()} of "
                 f"{group.min_count} members exist, {state.scheduled_count()} of "
                 f"{group.min_count} reserved or bound"]
        if group.is_gang and state.all_count() < group.min_count:
            lines.append(f"its members are held until {group.min_count} exist")
        if state.last_cycle:
            lines.append(f"the group's last cycle: {state.last_cycle}; members are placed "
                         "all together or none, and none holds room meanwhile")
        return lines

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # A new member, pending or bound, may complete the gang (schedulingGroup is
            # immutable: updates never change membership).
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD),
                                 self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD),
                                 self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, Action.ADD),
                                 _after_pod_group_added),
            ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, Action.UPDATE),
                                 _after_pod_group_updated),
        ]


def permit_timeout(group: PodGroup) -> float:
    if group.source == WORKLOAD_API:
        return PERMIT_TIMEOUT_SECONDS
    if group.schedule_timeout_seconds is not None:
        return float(group.schedule_timeout_seconds)
    return COSCHEDULING_PERMIT_TIMEOUT_SECONDS


def resource_gap(
    snapshot: ClusterSnapshot, group: PodGroup, placed: Sequence[PodInfo]
) -> dict[str, int]:
    """What ``minResources`` and ``minMember`` pods need beyond the free room of the live
    nodes, the group's ``placed`` members counted as free (``CheckClusterResource``)."""
    nodes = snapshot.nodes
    columns = nodes.resources
    alive = nodes.alive
    free = (nodes.allocatable[alive] - nodes.requested[alive]).sum(axis=0)
    free_pods = int((nodes.allowed_pods[alive] - nodes.pod_count[alive]).sum()) + len(placed)
    for pod in placed:
        free = free + columns.pod_vector(pod)
    gap: dict[str, int] = {}
    for name, need in group.min_resources.items():
        col = columns.column.get(name)
        have = 0 if col is None else int(free[col])
        if need > have:
            gap[name] = need - have
    if group.min_count > free_pods:
        gap[PODS] = group.min_count - free_pods
    return gap


def _go_map(gap: Mapping[str, int]) -> str:
    """As Go prints a ResourceList: map[name:quantity ...], keys sorted."""
    return "map[" + " ".join(f"{name}:{_quantity(name, gap[name])}" for name in sorted(gap)) + "]"


def _quantity(name: str, value: int) -> str:
    if name == CPU and value % 1000:
        return f"{value}m"
    return str(value // 1000 if name == CPU else value)


def _same_group(pod: PodInfo, source: str, namespace: str, name: str) -> bool:
    ref = pod.pod_group
    return ref is not None and (ref.source, pod.namespace, ref.name) == (source, namespace, name)


def _after_pod_group_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    if isinstance(new, PodGroup) and _same_group(pod, new.source, new.namespace, new.name):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_pod_group_updated(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Only a smaller gang ``minCount`` can let held members go."""
    if not (isinstance(old, PodGroup) and isinstance(new, PodGroup)):
        return QueueingHint.SKIP
    if not _same_group(pod, new.source, new.namespace, new.name):
        return QueueingHint.SKIP
    if not (new.is_gang and old.is_gang) or new.min_count >= old.min_count:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Mapping[str, Any], handle: Handle) -> GangScheduling:
    return GangScheduling(handle)


SPEC = PluginSpec(name=NAME, factory=new,
                  points=frozenset({"preEnqueue", "preFilter", "permit"}))
