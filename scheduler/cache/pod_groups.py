"""Pod groups as the watches last delivered them, and each group's members by state
(upstream's ``backend/cache/podgroupstate.go``): Workloads by "namespace/name", PodGroups of
both APIs, and per group the pods known, unscheduled, assumed and assigned.

One store, shared by the intake (watch events, on the watch thread) and the scheduling cycle
(assume and forget): GangScheduling's PreEnqueue runs when the intake hands a pod to the
queue and must count that pod already, as upstream's event handler updates the pod-group
state before it adds the pod to the queue. Hence a lock, not the inbox.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import COSCHEDULING, WORKLOAD_API, PodGroup, Workload

# The watched kinds: the Workload API's two, and scheduler-plugins' Coscheduling PodGroup.
WORKLOADS = "workloads"
POD_GROUPS = "podgroups"
COSCHEDULING_POD_GROUPS = "podgroups.scheduling.x-k8s.io"
KINDS = (WORKLOADS, POD_GROUPS, COSCHEDULING_POD_GROUPS)

Parsed = Workload | PodGroup
PARSERS: Mapping[str, Callable[[Mapping[str, Any]], Parsed]] = {
    WORKLOADS: Workload.parse,
    POD_GROUPS: PodGroup.parse,
    COSCHEDULING_POD_GROUPS: PodGroup.parse_coscheduling,
}
SOURCE_OF_KIND: Mapping[str, str] = {
    POD_GROUPS: WORKLOAD_API, COSCHEDULING_POD_GROUPS: COSCHEDULING}

# A group by (source API, namespace, name).
GroupKey = tuple[str, str, str]


def group_key(pod: PodInfo) -> GroupKey | None:
    ref = pod.pod_group
    return None if ref is None else (ref.source, pod.namespace, ref.name)


def same_group(pod: PodInfo) -> Callable[[PodInfo], bool]:
    """Whether another pod is a member of ``pod``'s group."""
    key = group_key(pod)
    return lambda other: other.pod_group is not None and group_key(other) == key


@dataclass(slots=True)
class PodGroupState:
    """One group's members as the scheduler knows them; the group object once observed
    (members may come first)."""

    group: PodGroup | None = None
    all_pods: dict[str, PodInfo] = field(default_factory=dict)
    unscheduled: set[str] = field(default_factory=set)
    assumed: dict[str, PodInfo] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)
    # Unscheduled members with scheduling gates: they hold the group's others in the queue.
    gated: set[str] = field(default_factory=set)
    # How the group's last pod-group cycle ended, when it did not place the group.
    last_cycle: str = ""

    def all_count(self) -> int:
        return len(self.all_pods)

    def scheduled_count(self) -> int:
        """Assumed or assigned (upstream's ScheduledPodsCount)."""
        return len(self.assumed) + len(self.assigned)

    def unscheduled_pods(self) -> list[PodInfo]:
        return [self.all_pods[uid] for uid in self.unscheduled]

    def scheduled_pods(self) -> list[PodInfo]:
        return [*self.assumed.values(), *(self.all_pods[uid] for uid in self.assigned)]

    def empty(self) -> bool:
        return not self.all_pods and self.group is None

    def add(self, pod: PodInfo) -> None:
        self.all_pods[pod.uid] = pod
        if pod.node_name:
            self.assigned.add(pod.uid)
            self.unscheduled.discard(pod.uid)
            self.assumed.pop(pod.uid, None)
        elif pod.uid not in self.assumed:
            self.unscheduled.add(pod.uid)
        if not pod.node_name and _has_scheduling_gates(pod):
            self.gated.add(pod.uid)
        else:
            self.gated.discard(pod.uid)

    def delete(self, uid: str) -> None:
        self.gated.discard(uid)
        self.all_pods.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)


class PodGroups:
    """The store; every method takes the lock, and reads return copies or frozen objects."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.workloads: dict[str, Workload] = {}
        self._states: dict[GroupKey, PodGroupState] = {}

    # -- API objects (upsert/remove/keys, as VolumeObjects) ------------------------------
    def upsert(self, kind: str, key: str, parsed: Parsed) -> None:
        with self._lock:
            if isinstance(parsed, Workload):
                self.workloads[key] = parsed
                return
            assert isinstance(parsed, PodGroup)
            namespace, _, name = key.partition("/")
            self._state((SOURCE_OF_KIND[kind], namespace, name)).group = parsed

    def remove(self, kind: str, key: str) -> None:
        with self._lock:
            if kind == WORKLOADS:
                self.workloads.pop(key, None)
                return
            namespace, _, name = key.partition("/")
            gkey = (SOURCE_OF_KIND[kind], namespace, name)
            state = self._states.get(gkey)
            if state is not None:
                state.group = None
                if state.empty():
                    del self._states[gkey]

    def keys(self, kind: str) -> Iterable[str]:
        with self._lock:
            if kind == WORKLOADS:
                return list(self.workloads)
            source = SOURCE_OF_KIND[kind]
            return [f"{ns}/{name}" for (src, ns, name), state in self._states.items()
                    if src == source and state.group is not None]

    def get(self, kind: str, key: str) -> Parsed | None:
        with self._lock:
            if kind == WORKLOADS:
                return self.workloads.get(key)
            namespace, _, name = key.partition("/")
            state = self._states.get((SOURCE_OF_KIND[kind], namespace, name))
            return None if state is None else state.group

    # -- members ---------------------------------------------------------------------------
    def pod_changed(self, old: PodInfo | None, new: PodInfo) -> None:
        """A member was added or updated (its group never changes: the field is immutable)."""
        key = group_key(new)
        if key is None:
            return
        with self._lock:
            state = self._state(key)
            if old is not None and old.node_name and not new.node_name:
                return  # a stale event; bound stays bound
            state.add(new)

    def pod_deleted(self, pod: PodInfo) -> None:
        key = group_key(pod)
        if key is None:
            return
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                state.delete(pod.uid)
                if state.empty():
                    del self._states[key]

    def assume(self, pod: PodInfo) -> None:
        """The pod reached Reserve (upstream's assumePod): scheduled, not yet bound."""
        with self._lock:
            member = self._member(pod)
            if member is None:
                return  # deleted meanwhile
            state, stored = member
            if stored.node_name:
                state.assigned.add(pod.uid)
            else:
                state.assumed[pod.uid] = pod
            state.unscheduled.discard(pod.uid)

    def forget(self, pod: PodInfo) -> None:
        """Back from assumed (upstream's forgetPod): unscheduled, unless bound meanwhile."""
        with self._lock:
            member = self._member(pod)
            if member is None:
                return
            state, stored = member
            state.assumed.pop(pod.uid, None)
            if stored.node_name:
                state.assigned.add(pod.uid)
            else:
                state.unscheduled.add(pod.uid)

    def state_of(self, pod: PodInfo) -> PodGroupState | None:
        """A copy of the pod's group state (None for a pod without a group)."""
        key = group_key(pod)
        return None if key is None else self.state(key)

    def state(self, key: GroupKey) -> PodGroupState | None:
        with self._lock:
            state = self._states.get(key)
            if state is None:
                return None
            return PodGroupState(state.group, dict(state.all_pods), set(state.unscheduled),
                                 dict(state.assumed), set(state.assigned), set(state.gated),
                                 state.last_cycle)

    def record_cycle(self, pod: PodInfo, text: str) -> None:
        """How the last pod-group cycle of ``pod``'s group ended ("" once placed)."""
        with self._lock:
            state = self._existing(pod)
            if state is not None:
                state.last_cycle = text

    def quorum_of(self, pod: PodInfo) -> tuple[PodGroup | None, int]:
        """The pod's group (None while unobserved) and how many members exist, without
        copying the state: PreEnqueue asks it of every member at every move."""
        with self._lock:
            state = self._existing(pod)
            if state is None:
                return None, 0
            return state.group, len(state.all_pods)

    def quorum_met(self, pod: PodInfo) -> bool:
        """The pod's group is observed and has ``minCount`` members (a Basic group: one)."""
        group, members = self.quorum_of(pod)
        return group is not None and members >= (group.min_count if group.is_gang else 1)

    def has_gated_sibling(self, pod: PodInfo) -> bool:
        """Whether another unscheduled member of the pod's group has scheduling gates."""
        with self._lock:
            state = self._existing(pod)
            return state is not None and bool(state.gated - {pod.uid})

    def scheduled_of(self, pod: PodInfo) -> tuple[PodGroup | None, int, list[str]]:
        """The pod's group, how many members are assumed or bound, and the assumed ones'
        uids: what Permit reads of every member, without copying the state."""
        with self._lock:
            state = self._existing(pod)
            if state is None:
                return None, 0, []
            return state.group, state.scheduled_count(), list(state.assumed)

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        with self._lock:
            state = self._existing(pod)
            return None if state is None else state.group

    def _state(self, key: GroupKey) -> PodGroupState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
        return state

    def _existing(self, pod: PodInfo) -> PodGroupState | None:
        """The pod's group state, if any (the lock held)."""
        key = group_key(pod)
        return None if key is None else self._states.get(key)

    def _member(self, pod: PodInfo) -> tuple[PodGroupState, PodInfo] | None:
        """The pod's group state and the pod as last stored in it (the lock held); None once
        either is gone."""
        state = self._existing(pod)
        stored = None if state is None else state.all_pods.get(pod.uid)
        return None if state is None or stored is None else (state, stored)


def _has_scheduling_gates(pod: PodInfo) -> bool:
    spec = pod.raw.get("spec")
    return isinstance(spec, Mapping) and bool(spec.get("schedulingGates"))
