"""GangScheduling: a gang's pods are placed all or none (upstream
``framework/plugins/gangscheduling/gangscheduling.go``, GenericWorkload on, CompositePodGroup
off).

- **PreEnqueue** holds a member until its PodGroup is observed and, for a gang, until
  ``minCount`` members exist (unscheduled, assumed or bound).
- **Permit** makes a member wait until ``minCount`` members are assumed or bound, then allows
  every assumed member waiting at Permit together; the members still unscheduled are
  activated meanwhile. A member that waits too long (five minutes) is rejected and
  unreserved: its room is never held longer.
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
    SUCCESS,
    WORKLOAD_API,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PermitDecision,
    PluginSpec,
    PodGroup,
    PodInfo,
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
        state = self._handle.pod_groups.state_of(pod)
        group = None if state is None else state.group
        if state is None or group is None:
            if ref.source != WORKLOAD_API:
                return SUCCESS  # Coscheduling: no PodGroup, a pod like any other
            return Status.unschedulable(waiting_for_group(ref.name), resolvable=False)
        if group.is_gang and state.all_count() < group.min_count:
            return Status.unschedulable(WAITING_FOR_MIN_COUNT, resolvable=False)
        return SUCCESS

    # -- Permit --------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision:
        ref = pod.pod_group
        if ref is None:
            return PermitDecision(SUCCESS)
        group_state = self._handle.pod_groups.state_of(pod)
        group = None if group_state is None else group_state.group
        if group_state is None or group is None:
            if ref.source != WORKLOAD_API:
                return PermitDecision(SUCCESS)
            return PermitDecision(Status.error(
                f"failed to get podGroup {pod.namespace}/{ref.name}: "
                f'podgroup.scheduling.k8s.io "{ref.name}" not found'))
        if not group.is_gang:
            return PermitDecision(SUCCESS)
        if group_state.scheduled_count() < group.min_count:
            # The other members may have been waiting for this one to be scheduled.
            self._handle.activate(p.uid for p in group_state.unscheduled_pods())
            return PermitDecision(Status(Code.WAIT, (WAITING_AT_PERMIT,), NAME),
                                  permit_timeout(group))
        waiting = self._handle.waiting_pods
        for uid in group_state.assumed:
            if uid in waiting:
                waiting.allow(uid, NAME)
        return PermitDecision(SUCCESS)

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # A new member, pending or bound, may complete the gang (schedulingGroup is
            # immutable: updates never change membership).
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD),
                                 _after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD),
                                 _after_pod_added),
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


def placement_feasible(group: PodGroup, scheduled: int, remaining: int) -> Status:
    """Upstream's PlacementFeasible: whether the group's ``minCount`` can still be met with
    ``scheduled`` members placed and ``remaining`` still to try."""
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


def _same_group(pod: PodInfo, source: str, namespace: str, name: str) -> bool:
    ref = pod.pod_group
    return ref is not None and (ref.source, pod.namespace, ref.name) == (source, namespace, name)


def _after_pod_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    if not isinstance(new, PodInfo) or new.pod_group is None:
        return QueueingHint.SKIP
    if _same_group(pod, new.pod_group.source, new.namespace, new.pod_group.name):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


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


SPEC = PluginSpec(name=NAME, factory=new, points=frozenset({"preEnqueue", "permit"}))
