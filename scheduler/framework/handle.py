"""What a plugin may use of the scheduler that runs it (upstream's ``fwk.Handle``).

A plugin's factory receives a :class:`Handle`; plugins reach it, and everything else they may
use, through the public plugin API (``scheduler.plugin_api``). The scheduler implements the
protocol once per profile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from scheduler.framework.dra import DraManager
    from scheduler.framework.events import ClusterEvent
    from scheduler.framework.extender import Extender
    from scheduler.framework.interface import CycleState, NodeView
    from scheduler.framework.ports import Binder, Evictor, ObjectWriter, Reporter
    from scheduler.framework.runtime import FilterOutcome
    from scheduler.framework.snapshot import ClusterSnapshot
    from scheduler.metrics import Metrics
    from scheduler.model.pod import PodInfo
    from scheduler.model.pod_group import PodGroup
    from scheduler.model.volumes import ClaimInfo, VolumeInfo


class NominatorView(Protocol):
    """Pods nominated to nodes by preemption, and where (upstream's PodNominator)."""

    def node_of(self, uid: str) -> str | None: ...

    def pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def all(self) -> Mapping[str, Sequence[PodInfo]]:
        """Nominated pods by node name."""
        ...

    def delete(self, uid: str) -> None: ...


class WaitingPodsView(Protocol):
    """Pods a Permit plugin told to wait (upstream's WaitingPod)."""

    def __contains__(self, uid: str) -> bool: ...

    def reject(self, uid: str, message: str, plugin: str = "") -> None:
        """Reject a waiting pod; ``plugin`` names the rejector, whose events retry it."""
        ...

    def allow(self, uid: str, plugin: str) -> None:
        """``plugin`` lets the pod go on (upstream's ``WaitingPod.Allow``); it does once no
        plugin it waits for is left."""
        ...


class PodGroupStateView(Protocol):
    """A pod group's members as the scheduler knows them (upstream's ``PodGroupState``)."""

    @property
    def group(self) -> PodGroup | None:
        """The PodGroup object, once observed (members may come first)."""
        ...

    @property
    def assumed(self) -> Mapping[str, PodInfo]:
        """Members assumed (Reserve reached), not yet bound, by uid."""
        ...

    def all_count(self) -> int:
        """Every member known: unscheduled, assumed and bound."""
        ...

    def scheduled_count(self) -> int:
        """Assumed or bound members."""
        ...

    def unscheduled_pods(self) -> list[PodInfo]: ...


class PodGroupsView(Protocol):
    """Pod groups of both APIs and their members (upstream's ``PodGroupManager``); any
    thread. Reads are copies: a state does not change under its reader."""

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        """The PodGroup ``pod`` belongs to, once observed."""
        ...

    def state_of(self, pod: PodInfo) -> PodGroupStateView | None:
        """``pod``'s group and its members; None for a pod without a group."""
        ...


class FrameworkView(Protocol):
    """What a plugin may run of its own profile's framework: the Filter plugins, for dry runs
    (upstream's ``RunFilterPluginsWithNominatedPods``, as preemption runs them)."""

    def filters_read_pod_lists(self, state: CycleState) -> bool:
        """Whether any Filter active in this cycle reads a NodeView's hypothetical pod lists."""
        ...

    def run_filters_with_nominated(
        self,
        state: CycleState,
        pod: PodInfo,
        view: NodeView,
        nominated: Mapping[str, Sequence[PodInfo]],
    ) -> FilterOutcome:
        """Every Filter plugin on the view's rows, nominated pods of equal or higher priority
        counted first, as upstream runs them."""
        ...


@runtime_checkable
class Preempting(Protocol):
    """A PostFilter plugin that preempts asynchronously: it is told when a pod's nomination
    was cleared by a higher-priority preemption (its own work for that pod is then void)."""

    def supersede(self, uid: str) -> None: ...


class Handle(Protocol):
    """The framework a plugin runs in: one per profile."""

    @property
    def profile_name(self) -> str: ...

    @property
    def snapshot(self) -> ClusterSnapshot:
        """The cluster as the current cycle sees it."""
        ...

    @property
    def framework(self) -> FrameworkView:
        """This profile's framework: plugins that dry-run others (preemption) run it."""
        ...

    def has_profile(self, scheduler_name: str) -> bool:
        """Whether this scheduler has a profile by that name (its pods are ours)."""
        ...

    def supersede(self, pod: PodInfo) -> None:
        """The pod's nomination was cleared: its profile's :class:`Preempting` PostFilter
        plugins drop what they still do for it (a preemption whose victims are going)."""
        ...

    @property
    def nominator(self) -> NominatorView: ...

    @property
    def waiting_pods(self) -> WaitingPodsView: ...

    def get_pod(self, uid: str) -> PodInfo | None:
        """The newest version of a pod the watch delivered (upstream's pod lister): ``None``
        once deleted. Unlike the snapshot it includes pending pods."""
        ...

    @property
    def rng(self) -> np.random.Generator:
        """The scheduler's random source (seeded in tests)."""
        ...

    def now(self) -> float:
        """The scheduler's clock (monotonic seconds; a manual clock in tests): for intervals."""
        ...

    def wall_clock(self) -> float:
        """The time of day, as seconds since the epoch (``time.time()``; settable in tests):
        for comparing with times written in API objects, such as a maintenance window in a
        node's annotation (API 1.6). ``datetime.fromtimestamp(t, timezone.utc)`` reads it."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait on the scheduler's clock: binding threads that poll (VolumeBinding's PreBind)
        wait through this, so tests with a manual clock do not wait at all."""
        ...

    @property
    def parallelism(self) -> int:
        """API calls one plugin may make at once (the configuration's ``parallelism``)."""
        ...

    @property
    def binder(self) -> Binder: ...

    @property
    def evictor(self) -> Evictor | None:
        """``None`` where the scheduler may not remove pods (dry runs, one-shot explain)."""
        ...

    @property
    def reporter(self) -> Reporter: ...

    @property
    def writer(self) -> ObjectWriter:
        """PUTs API objects (VolumeBinding's PreBind); called from binding threads."""
        ...

    def get_claim(self, namespace: str, name: str) -> ClaimInfo | None:
        """The newest version of a PersistentVolumeClaim the watch delivered; any thread."""
        ...

    @property
    def pod_groups(self) -> PodGroupsView:
        """Pod groups (Workload API and Coscheduling) and their members, shared by every
        profile; any thread."""
        ...

    @property
    def dra(self) -> DraManager:
        """ResourceClaims, ResourceSlices, DeviceClasses and the claims allocated in flight,
        shared by every profile (upstream's ``SharedDRAManager``); any thread."""
        ...

    def get_volume(self, name: str) -> VolumeInfo | None:
        """The newest version of a PersistentVolume the watch delivered; any thread."""
        ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured HTTP extenders, ignorable ones last (preemption asks them)."""
        ...

    @property
    def metrics(self) -> Metrics: ...

    def watch_config_map(
        self, namespace: str, name: str, on_change: Callable[[Mapping[str, str] | None], None]
    ) -> None:
        """Call ``on_change`` with the ConfigMap's ``data`` (``None`` while it does not exist)
        whenever it changes, on the scheduling thread, before the next cycle; then requeue
        the pods that plugins registered ConfigMap events for. Call it from the factory: no
        pod is scheduled before every watched ConfigMap has been read once."""
        ...

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pods from backoff or the unschedulable pool to activeQ."""
        ...

    def avoided_nodes(self, pod: PodInfo) -> Mapping[str, str]:
        """Nodes ``pod``'s controller should stay off for now, with why: the rescheduler moved
        one of its pods away from there, or the kubelet there rejected or evicted one."""
        ...

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: object, new: object
    ) -> None:
        """Requeue the unschedulable pods this event may help, as if it had been observed."""
        ...
