"""The Scheduler: cache, inbox, queue and profiles wired together, and the scheduling loop.

Threads: one scheduling thread runs :func:`scheduler.cycle.schedule_one` in a loop and owns the
cache; a pool of binding threads runs binding cycles; the operator's watch feeds the inbox and
the queue from its own thread. Nothing here does I/O itself: binding, Events and evictions go
through the ports the operator supplies.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import structlog

from scheduler.binding_workers import BindingBatch, BindingWorkers
from scheduler.cache.cache import Cache
from scheduler.cache.dra_objects import DraObjects
from scheduler.cache.inbox import Inbox
from scheduler.cache.pod_groups import PodGroups
from scheduler.cache.snapshot import Snapshot
from scheduler.cache.volume_objects import CLAIMS, KINDS, VOLUMES, Parsed
from scheduler.config import SchedulerConfig
from scheduler.cycle import PodGroupConditions, schedule_one
from scheduler.framework.avoidance import NodeAvoidance, owner_key
from scheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from scheduler.framework.extender import EXTENDER_NAME, Extender, ordered
from scheduler.framework.handle import Preempting
from scheduler.framework.interface import Plugin
from scheduler.framework.ports import Binder, Evictor, ObjectWriter, Reporter, WriteResult
from scheduler.framework.profile_config import ProfileConfig
from scheduler.framework.registry import POINT_METHODS, Registry
from scheduler.framework.runtime import Framework, PluginSets
from scheduler.framework.waiting import WaitingPods
from scheduler.metrics import Metrics
from scheduler.model.pod import PodInfo
from scheduler.model.volumes import ClaimInfo, VolumeInfo
from scheduler.queue.heap import order_of_less
from scheduler.queue.nominator import Nominator
from scheduler.queue.scheduling_queue import SchedulingQueue

log = structlog.get_logger("scheduler")

_T = TypeVar("_T")

# How long an idle scheduling loop waits for a pod before it expires lost assumptions and
# hands over held bindings. Work put in the inbox wakes it at once (Inbox's wake).
IDLE_WAIT_SECONDS = 0.5
# How often a standby's loop applies the watch deltas it has not popped pods for.
STANDBY_REFRESH_SECONDS = 0.2
# The collector's thresholds from the synced start's listings on (operator/app.py), and kept
# once the cluster is cached (settle_heap): container objects allocated and not
# yet freed before a young collection, then young collections per middle one, and middle ones
# per full one. A cycle allocates some two hundred and frees nearly all of them by reference
# counting, so the count only crosses Python's 700 at a cycle's peak: over 5,000 pods of
# replicaset-pods-5000x50000, 79 young and 7 middle collections took 27 ms (5.4 us a pod, 2%
# of the cycle) and found no garbage. At 20,000 none ran.
GC_THRESHOLDS = (20_000, 10, 10)
# Extension points whose plugins can reject a pod (upstream's shouldHaveEnqueueExtensions).
_REJECTING_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")


def settle_heap() -> None:
    """Once the cluster is cached: move what is cached now out of the collector's reach (its
    full passes would otherwise pause a cycle for tens of milliseconds at 50,000 pods), and
    collect what comes after in larger, rarer passes."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@dataclass
class ProfileHandle:
    """The framework's :class:`~scheduler.framework.handle.Handle` for one profile: what its
    plugins may reach of the scheduler, and nothing else."""

    profile_name: str
    scheduler: Scheduler

    @property
    def snapshot(self) -> Snapshot:
        return self.scheduler.snapshot

    @property
    def framework(self) -> Framework:
        return self.scheduler.profiles[self.profile_name]

    def has_profile(self, scheduler_name: str) -> bool:
        return scheduler_name in self.scheduler.profiles

    def supersede(self, pod: PodInfo) -> None:
        framework = self.scheduler.profiles.get(pod.scheduler_name)
        for plugin in framework.plugins.post_filter if framework is not None else ():
            if isinstance(plugin, Preempting):
                plugin.supersede(pod.uid)

    @property
    def nominator(self) -> Nominator[PodInfo]:
        return self.scheduler.queue.nominator

    @property
    def waiting_pods(self) -> WaitingPods:
        return self.scheduler.waiting

    def get_pod(self, uid: str) -> PodInfo | None:
        return self.scheduler.pods.get(uid)

    @property
    def rng(self) -> np.random.Generator:
        return self.scheduler.rng

    def now(self) -> float:
        return self.scheduler.clock()

    def wall_clock(self) -> float:
        return self.scheduler.wall_clock()

    def sleep(self, seconds: float) -> None:
        self.scheduler.sleep(seconds)

    @property
    def parallelism(self) -> int:
        return self.scheduler.config.parallelism

    @property
    def binder(self) -> Binder:
        return self.scheduler.binder

    @property
    def evictor(self) -> Evictor | None:
        return self.scheduler.evictor

    @property
    def reporter(self) -> Reporter:
        return self.scheduler.reporter

    @property
    def extenders(self) -> Sequence[Extender]:
        return self.scheduler.extenders

    @property
    def writer(self) -> ObjectWriter:
        return self.scheduler.writer

    def get_claim(self, namespace: str, name: str) -> ClaimInfo | None:
        claim = self.scheduler.volume_objects[CLAIMS].get(f"{namespace}/{name}")
        return claim if isinstance(claim, ClaimInfo) else None

    @property
    def pod_groups(self) -> PodGroups:
        return self.scheduler.pod_groups

    @property
    def dra(self) -> DraObjects:
        return self.scheduler.dra

    def get_volume(self, name: str) -> VolumeInfo | None:
        volume = self.scheduler.volume_objects[VOLUMES].get(name)
        return volume if isinstance(volume, VolumeInfo) else None

    @property
    def metrics(self) -> Metrics:
        return self.scheduler.metrics

    def watch_config_map(
        self, namespace: str, name: str, on_change: Callable[[Mapping[str, str] | None], None]
    ) -> None:
        self.scheduler.config_map_watches.setdefault((namespace, name), []).append(on_change)

    def activate(self, uids: Iterable[str]) -> None:
        self.scheduler.queue.activate(uids)

    def avoided_nodes(self, pod: PodInfo) -> Mapping[str, str]:
        return self.scheduler.avoidance.nodes_for(owner_key(pod))

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: object, new: object
    ) -> None:
        self.scheduler.queue.move_all_to_active_or_backoff(event, old, new)


class Scheduler:
    def __init__(
        self,
        config: SchedulerConfig,
        registry: Registry,
        *,
        binder: Binder,
        reporter: Reporter,
        evictor: Evictor | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall_clock: Callable[[], float] = time.time,
        seed: int | None = None,
        binding_workers: int = 16,
        metrics: Metrics | None = None,
        extenders: Sequence[Extender] = (),
        writer: ObjectWriter | None = None,
        pod_group_reporter: PodGroupConditions | None = None,
    ) -> None:
        self.config = config
        # Where the PodGroups' conditions go (the operator's status writer), if anywhere.
        self.pod_group_reporter = pod_group_reporter
        self.writer: ObjectWriter = writer or _NoWriter()
        self.extenders: Sequence[Extender] = ordered(extenders)
        self.metrics = metrics or Metrics()
        self.binder = binder
        self.reporter = reporter
        self.evictor = evictor
        self.clock = clock
        self.sleep = sleep
        self.wall_clock = wall_clock
        self.rng = np.random.default_rng(seed)
        self._init_cluster_state(clock)
        hints = self._build_profiles(config, registry)
        self._init_queue(config, hints)
        self._init_bindings(binding_workers)
        self._stop = threading.Event()
        self._scheduling = threading.Event()
        self._thread: threading.Thread | None = None
        # When the loop last came round (it does at least every pop timeout when idle): the
        # liveness check's measure of progress.
        self.loop_turned_at = clock()

    def _init_cluster_state(self, clock: Callable[[], float]) -> None:
        """The cache, its snapshot and what the watch last saw: made before the profiles,
        whose plugins may read them (and register ConfigMap watches) as they are built."""
        self.cache = Cache(clock=clock)
        # The queue is made later; the inbox wakes its pop (the idle loop) on new work.
        self.inbox = Inbox(wake=lambda: self.queue.wake())
        self.snapshot = Snapshot(self.cache)
        self.waiting = WaitingPods()
        self.next_start_index = 0
        # Node names as the watch last saw them: lets a binding thread notice a node deleted
        # after the cycle chose it, without touching the cache.
        self.known_nodes: set[str] = set()
        # The newest version of every pod the watch delivered, by uid (upstream's pod lister):
        # written by the watch thread only (the intake), read from any thread one key at a
        # time. Whether a pod still exists, unbound, is decided here, not by a cycle's copy.
        self.pods: dict[str, PodInfo] = {}
        # Likewise the newest object of each volume kind, by key ("namespace/name" or name):
        # the hints' "old" objects, and what VolumeBinding's PreBind reads from a binding
        # thread while it waits for the PV controller.
        self.volume_objects: dict[str, dict[str, Parsed]] = {kind: {} for kind in KINDS}
        # Workloads, PodGroups of both APIs and their members (the intake and the cycle).
        self.pod_groups = PodGroups()
        # The DRA objects and claims allocated in flight, written by the watch thread as it
        # delivers (not through the inbox: upstream's DRA manager is read live at PreFilter).
        self.dra = DraObjects()
        self.avoidance = NodeAvoidance(clock)
        self.profiles: dict[str, Framework] = {}
        # The ConfigMaps plugins watch, by (namespace, name): the operator feeds them in.
        self.config_map_watches: dict[
            tuple[str, str], list[Callable[[Mapping[str, str] | None], None]]] = {}

    def _build_profiles(
        self, config: SchedulerConfig, registry: Registry
    ) -> dict[str, Mapping[str, list[ClusterEventWithHint]]]:
        """Each profile's framework into ``profiles``; their queueing hints, by profile."""
        hints: dict[str, Mapping[str, list[ClusterEventWithHint]]] = {}
        for profile in config.profiles:
            framework, hints[profile.scheduler_name] = self._build_framework(profile, registry)
            self.profiles[profile.scheduler_name] = framework
        return hints

    def _init_queue(
        self, config: SchedulerConfig, hints: dict[str, Mapping[str, list[ClusterEventWithHint]]]
    ) -> None:
        """One queue for every profile, ordered by the first profile's QueueSort plugin."""
        first = self.profiles[config.profiles[0].scheduler_name]
        queue_sort = first.plugins.queue_sort
        assert queue_sort is not None
        self.queue: SchedulingQueue[PodInfo] = SchedulingQueue(
            getattr(queue_sort, "sort_key", None) or order_of_less(queue_sort.less),
            clock=self.clock,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            hints_by_profile=hints,
            profile_of=_profile_of,
            pre_enqueue=self._pre_enqueue,
            lookup=self.pods.get,
            on_incoming=self.metrics.queue_incoming_pod,
            group_of=_workload_group_of,
            group_gate=self._scheduling_gated_sibling,
            incomplete=self._incomplete_member,
        )
        self.metrics.watch_queue(
            self.queue.pending_counts,
            lambda: self.queue.rejections(_profile_of),
            self.queue.queued_entities,
        )

    def _init_bindings(self, binding_workers: int) -> None:
        # Binding cycles, held in batches while more pods are ready (BindingBatch).
        self.bindings = BindingBatch(
            BindingWorkers(binding_workers), clock=self.clock, more_ready=self.queue.has_ready
        )
        self.metrics.watch_bindings(self.bindings.in_flight)
        self.metrics.watch_cache(self.cache.sizes)

    def _build_framework(
        self, profile: ProfileConfig, registry: Registry
    ) -> tuple[Framework, Mapping[str, list[ClusterEventWithHint]]]:
        handle = ProfileHandle(profile.scheduler_name, self)
        instances: dict[str, Plugin] = {}
        for refs in profile.points.values():
            for ref in refs:
                if ref.name not in instances:
                    spec = registry.get(ref.name)
                    assert spec is not None
                    instances[ref.name] = spec.build(profile.args.get(ref.name, {}), handle)
        sets = PluginSets()
        for point, refs in profile.points.items():
            plugins = [instances[ref.name] for ref in refs]
            if point == "queueSort":
                sets.queue_sort = plugins[0]  # type: ignore[assignment]
            elif point == "score":
                sets.score = [(instances[r.name], r.weight) for r in refs]  # type: ignore[misc]
            else:
                setattr(sets, _attr(point), plugins)
        hints: dict[str, list[ClusterEventWithHint]] = {}
        rejecting = {
            ref.name for point in _REJECTING_POINTS for ref in profile.points.get(point, ())
        }
        for name, plugin in instances.items():
            register = getattr(plugin, "events_to_register", None)
            if callable(register):
                hints[name] = list(register())
            elif name in rejecting:
                # Upstream's defaultEnqueueExtension: a plugin that may reject a pod but does
                # not say which events may help it hears every event.
                hints[name] = [ClusterEventWithHint(ClusterEvent(Resource.WILDCARD, Action.ALL))]
        if self.extenders:
            # Upstream registers the same for the extenders' pseudo-plugin.
            hints[EXTENDER_NAME] = [ClusterEventWithHint(ClusterEvent(Resource.WILDCARD,
                                                                      Action.ALL))]
        framework = Framework(
            profile.scheduler_name,
            sets,
            percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
            instances=instances,
            metrics=self.metrics.profile(profile.scheduler_name),
        )
        return framework, hints

    def _scheduling_gated_sibling(self, pod: PodInfo) -> str | None:
        """SchedulingGates when another member of the pod's Workload-API group has
        scheduling gates (such pods never reach the queue; upstream's group entity holds
        them, and one gated member gates the entity). Coscheduling's pods are queued one
        by one, as that plugin's are."""
        if _workload_group_of(pod) is None or not self.pod_groups.has_gated_sibling(pod):
            return None
        return SCHEDULING_GATES

    def _incomplete_member(self, pod: PodInfo) -> bool:
        """A Workload-API member whose PodGroup is not observed (upstream keeps such pods in
        incompletePodGroupPods, out of every queue)."""
        return _workload_group_of(pod) is not None and self.pod_groups.group_of(pod) is None

    def _pre_enqueue(self, pod: PodInfo) -> str | None:
        framework = self.profiles.get(pod.scheduler_name)
        return None if framework is None else framework.run_pre_enqueue(pod)

    def config_map_changed(
        self, namespace: str, name: str, data: Mapping[str, str] | None, event: ClusterEvent
    ) -> None:
        """A watched ConfigMap changed (``data`` None: it is gone); called from any thread.
        Its watchers hear it on the scheduling thread, then the queue hears ``event``."""
        watchers = self.config_map_watches.get((namespace, name), [])

        def apply() -> None:
            for on_change in watchers:
                on_change(data)
            self.queue.move_all_to_active_or_backoff(event, None, data)

        self.inbox.put(apply)

    def run_in_loop(self, fn: Callable[[], _T], timeout: float) -> _T:
        """``fn()`` on the scheduling thread, between two cycles (through the inbox), for
        readers of the cache; waits at most ``timeout`` seconds (``TimeoutError``, and ``fn``
        will not run). What ``fn`` raises is raised here."""
        future: Future[_T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except Exception as exc:  # handed to the waiting thread, not lost in the inbox
                future.set_exception(exc)

        self.inbox.put(run)
        try:
            return future.result(timeout)
        finally:
            future.cancel()

    # -- the loop -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring the cache up to date: apply watch deltas and expire lost assumptions."""
        self.inbox.drain()
        self.cache.expire_assumed()

    def node_exists(self, name: str) -> bool:
        return name in self.known_nodes

    def submit_binding(self, fn: Callable[..., None], *args: Any) -> None:
        self.bindings.submit(fn, *args)

    def run_until_stopped(self) -> None:
        while not self._stop.is_set():
            self.loop_turned_at = self.clock()
            if not self._scheduling.is_set():
                self.bindings.release(now=True)
                # A standby keeps its cache warm: watch deltas applied, nothing popped.
                self.refresh()
                self._scheduling.wait(STANDBY_REFRESH_SECONDS)
                continue
            try:
                schedule_one(self, timeout=IDLE_WAIT_SECONDS)
            except Exception:  # the loop must survive any single pod
                log.exception("Scheduling cycle crashed; continuing")
            # A cycle that bound nothing may leave the queue empty: nothing then waits on
            # the pods already held.
            self.bindings.release()

    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, *, scheduling: bool = True) -> None:
        """Start the loop; with ``scheduling=False`` it only applies watch deltas until
        :meth:`allow_scheduling` (a standby replica under leader election)."""
        if scheduling:
            self._scheduling.set()
        self.queue.start()
        self._thread = threading.Thread(
            target=self.run_until_stopped, name="scheduling", daemon=True
        )
        self._thread.start()

    def allow_scheduling(self) -> None:
        self._scheduling.set()

    @property
    def scheduling(self) -> bool:
        return self._scheduling.is_set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop scheduling; in-flight bindings and evictions get ``timeout`` seconds to end.

        A binding that ends in that time is confirmed or requeued as usual; one still hanging
        on the API server is left to its thread, and the pod is bound or not by the server,
        which the next scheduler's listing will show either way.
        """
        deadline = time.monotonic() + timeout
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout)
        self.bindings.release(now=True)
        self.bindings.wait_idle(max(0.0, deadline - time.monotonic()))
        self.bindings.close()
        for plugin in self._plugin_instances():
            waiter = getattr(plugin, "wait_for_actuations", None)
            if callable(waiter):
                waiter(max(0.0, deadline - time.monotonic()))

    def _plugin_instances(self) -> list[Plugin]:
        return [p for framework in self.profiles.values() for p in framework.instances.values()]


class _NoWriter:
    """For schedulers that may not write (the one-shot explain): a PreBind that would write
    fails instead."""

    def replace(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        return WriteResult(False, "this scheduler writes no API objects")

    def get(self, path: str) -> WriteResult:
        return WriteResult(False, "this scheduler reads no API objects")

    def patch(self, path: str, patch: Mapping[str, Any]) -> WriteResult:
        return WriteResult(False, "this scheduler writes no API objects")

    def create(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        return WriteResult(False, "this scheduler writes no API objects")

    def delete_object(self, path: str) -> WriteResult:
        return WriteResult(False, "this scheduler writes no API objects")


def _profile_of(pod: PodInfo) -> str:
    return pod.scheduler_name


def _workload_group_of(pod: PodInfo) -> tuple[str, str] | None:
    """A Workload-API member's group: its members wait as one in upstream's queue."""
    ref = pod.pod_group
    if ref is None or not pod.in_workload_group:
        return None
    return pod.namespace, ref.name


# Upstream's plugin that holds pods with scheduling gates; here the intake keeps them out of
# the queue, and the name is what holds their pod group's other members.
SCHEDULING_GATES = "SchedulingGates"


def _attr(point: str) -> str:
    return POINT_METHODS[point] if point not in ("queueSort", "score") else point
