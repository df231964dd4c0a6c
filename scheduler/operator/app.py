"""The running scheduler: API client, ports, core, watches and health, started together."""

from __future__ import annotations

import functools
import gc
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.cache.dra_objects import KINDS as DRA_KINDS
from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS
from scheduler.cache.volume_objects import (
    CAPACITIES,
    CLAIMS,
    CSI_DRIVERS,
    CSI_NODES,
    STORAGE_CLASSES,
    VOLUMES,
)
from scheduler.config import SchedulerConfig
from scheduler.framework.events import CONFIG_MAP_ADD, CONFIG_MAP_DELETE, CONFIG_MAP_UPDATE
from scheduler.framework.registry import Registry
from scheduler.intake import NAMESPACES, PDBS, PRIORITY_CLASSES, Intake
from scheduler.metrics import Metrics
from scheduler.operator.api_ports import ApiPorts
from scheduler.operator.coscheduling_status import CoschedulingStatusWriter
from scheduler.operator.cpu_affinity import REBALANCE_SECONDS, SingleCpu, single_cpu
from scheduler.operator.explain_endpoint import ExplainEndpoint
from scheduler.operator.extender import HTTPExtender
from scheduler.operator.health import HealthServer
from scheduler.operator.kubeapi import KubeApi, api_client_from
from scheduler.operator.leader import ApiLeaseStore, LeaderElector, new_identity
from scheduler.operator.liveness import loop_progress
from scheduler.operator.reflector import Reflector
from scheduler.operator.serving.options import ServingOptions, secure_server
from scheduler.scheduler import GC_THRESHOLDS, Scheduler, settle_heap

if TYPE_CHECKING:
    from scheduler.rescheduling.rescheduler import Rescheduler

log = structlog.get_logger("scheduler.app")

LIST_PATHS = {
    NAMESPACES: "/api/v1/namespaces",
    PRIORITY_CLASSES: "/apis/scheduling.k8s.io/v1/priorityclasses",
    PDBS: "/apis/policy/v1/poddisruptionbudgets",
}
# The volume plugins' kinds, through reflectors like pods and nodes.
VOLUME_PATHS = {
    CLAIMS: "/api/v1/persistentvolumeclaims",
    VOLUMES: "/api/v1/persistentvolumes",
    STORAGE_CLASSES: "/apis/storage.k8s.io/v1/storageclasses",
    CSI_NODES: "/apis/storage.k8s.io/v1/csinodes",
    CSI_DRIVERS: "/apis/storage.k8s.io/v1/csidrivers",
    CAPACITIES: "/apis/storage.k8s.io/v1/csistoragecapacities",
}
# DRA's kinds (resource.k8s.io/v1, named by their resource), through reflectors like pods and
# volumes. A kind the API server does not serve (DeviceTaintRules with DRADeviceTaintRules off,
# or no resource.k8s.io/v1 at all) is left out: kube-scheduler starts no informer for them then.
DRA_GROUP_VERSION = "/apis/resource.k8s.io/v1"
# kopf relists these without reporting deletions it missed; reconcile them this often.
RESYNC_SECONDS = 60.0
# A failed initial listing of a low-volume kind is retried this often; nothing is scheduled
# until every kind has been listed.
LIST_RETRY_SECONDS = 2.0
# Binds in flight: a bind is ~all waiting on the API server, so throughput is this many over
# its latency. 64 measured best on the local control plane (16: 0.6x, 128: 0.8x of 64;
# bench/e2e.py, SchedulingBasic, QPS 1000).
BINDING_WORKERS = 64
API_LANES = 8
# One kept-alive connection per thread that talks to the API: binds, lanes, watches, resync.
CONNECTIONS = BINDING_WORKERS + API_LANES + 8


@dataclass
class Options:
    kubeconfig: str | None = None
    serving: ServingOptions = field(default_factory=ServingOptions)
    resync_seconds: float = RESYNC_SECONDS
    # Every thread on one CPU, moved when other work crowds it (scheduler.operator.cpu_affinity).
    single_cpu: bool = True


class SchedulerApp:
    def __init__(self, config: SchedulerConfig, registry: Registry, options: Options,
                 pod_group_paths: Mapping[str, str] | None = None) -> None:
        """``pod_group_paths``: the pod-group kinds the cluster serves, by kind, and their
        list paths (``pod_group_watches.discover_pod_group_paths``): each gets a watch."""
        self.options = options
        # One name per process, for the Lease and for kopf (see main).
        self.identity = new_identity()
        self.metrics = Metrics(process=True)
        api_client = api_client_from(options.kubeconfig, connections=CONNECTIONS)
        qps, burst = config.client_connection.qps, config.client_connection.burst
        self.api = KubeApi(api_client, qps=qps, burst=burst, metrics=self.metrics)
        # Like kube-scheduler's event client: the same connection settings, its own budget.
        events = KubeApi(api_client, qps=qps, burst=burst, metrics=self.metrics)
        self.ports = ApiPorts(self.api, events=events, workers=API_LANES)
        self.elector = self._elector(config, api_client)
        # delayCacheUntilActive: a standby lists and watches nothing until it leads.
        self.delay_cache = config.delay_cache_until_active and self.elector is not None
        if self.elector is not None:
            self.api.may_write = events.may_write = self.elector.may_write
        self.scheduler = Scheduler(
            config, registry, binder=self.ports, reporter=self.ports,
            evictor=self.ports, metrics=self.metrics, binding_workers=BINDING_WORKERS,
            extenders=[HTTPExtender(extender) for extender in config.extenders],
            writer=self.ports, pod_group_reporter=self.ports,
        )
        # Off by default; on, it moves pods on the leader only (it waits while a standby).
        self.rescheduler = self._rescheduler(config) if config.rescheduler.enabled else None
        self.intake = Intake(self.scheduler)
        # Set by the synced start once every other kind's listing is in (see _sync).
        self._others_applied = threading.Event()
        self.ports.pod_exists = self.scheduler.pods.__contains__
        # Coscheduling PodGroups' status, as scheduler-plugins' controller writes it; fed
        # labelled pods by the pod watch, groups once discovery finds the CRD.
        self.coscheduling = CoschedulingStatusWriter(self.ports)
        self.reflectors = [
            Reflector(self.api, "/api/v1/nodes", name="nodes",
                      on_event=self.intake.on_node, on_listed=self.intake.resync_nodes),
            Reflector(self.api, "/api/v1/pods", name="pods",
                      on_event=self._on_pod, on_listed=self._on_pods_listed,
                      apply_after=self._others_applied),
            *(self._volume_reflector(kind, path) for kind, path in VOLUME_PATHS.items()),
            *(self._pod_group_reflector(kind, path)
              for kind, path in (pod_group_paths or {}).items()),
            *(self._dra_reflector(kind) for kind in DRA_KINDS),
            *(self._config_map_reflector(namespace, name)
              for namespace, name in self.scheduler.config_map_watches),
        ]
        self.health = HealthServer(functools.partial(secure_server, options.serving),
                                   live=self.live, ready=self.ready,
                                   metrics=self.metrics.exposition,
                                   explain=ExplainEndpoint(self.api, self.scheduler, self.intake))
        self._initial_applied = threading.Event()
        # Set once the loop has come round after the initial listing (see main).
        self._first_cycle_over = threading.Event()
        self._leading = threading.Event()
        if self.elector is None:
            self._leading.set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.cpu: SingleCpu | None = None

    def _rescheduler(self, config: SchedulerConfig) -> Rescheduler:
        # Imported only when it is on: a start without it does not pay its import.
        from scheduler.rescheduling.rescheduler import Rescheduler

        return Rescheduler(self.scheduler, config.rescheduler, evictor=self.ports,
                           reporter=self.ports)

    def _elector(self, config: SchedulerConfig, api_client: Any) -> LeaderElector | None:
        election = config.leader_election
        if not election.leader_elect:
            return None
        # Its own client (kube-scheduler's leader-election client): no shared token bucket,
        # so a burst of binds never delays a renewal, and no write gate of course.
        lease_api = KubeApi(api_client, qps=0, burst=0, metrics=self.metrics)
        store = ApiLeaseStore(lease_api, election.resource_namespace, election.resource_name,
                              timeout=election.retry_period)
        return LeaderElector(
            store, election, identity=self.identity, on_started=self._became_leader,
            on_lost=self._leadership_lost,
            on_status=lambda leading: self.metrics.set_leader(election.resource_name, leading),
        )

    def _volume_reflector(self, kind: str, path: str) -> Reflector:
        intake = self.intake
        return Reflector(
            self.api, path, name=kind,
            on_event=lambda event_type, obj: intake.on_volume_object(kind, event_type, obj),
            on_listed=lambda items: intake.resync_volume_objects(kind, items),
        )

    def _on_pod(self, event_type: str | None, obj: dict[str, Any]) -> None:
        self.intake.on_pod(event_type, obj)
        self.coscheduling.on_pod(event_type, obj)

    def _on_pods_listed(self, items: list[dict[str, Any]]) -> None:
        self.intake.resync_pods(items)
        self.coscheduling.on_pods_listed(items)

    def _pod_group_reflector(self, kind: str, path: str) -> Reflector:
        intake, status = self.intake, self.coscheduling
        if kind != COSCHEDULING_POD_GROUPS:
            return Reflector(
                self.api, path, name=kind,
                on_event=lambda event_type, obj: intake.on_pod_group_object(
                    kind, event_type, obj),
                on_listed=lambda items: intake.resync_pod_group_objects(kind, items),
            )

        def on_event(event_type: str | None, obj: dict[str, Any]) -> None:
            intake.on_pod_group_object(kind, event_type, obj)
            status.on_group(event_type, obj)

        def on_listed(items: list[dict[str, Any]]) -> None:
            intake.resync_pod_group_objects(kind, items)
            status.on_groups_listed(items)

        return Reflector(self.api, path, name=kind, on_event=on_event, on_listed=on_listed)
    def _dra_reflector(self, kind: str) -> Reflector:
        intake = self.intake
        return Reflector(
            self.api, f"{DRA_GROUP_VERSION}/{kind}", name=kind,
            on_event=lambda event_type, obj: intake.on_dra_object(kind, event_type, obj),
            on_listed=lambda items: intake.resync_dra_objects(kind, items),
        )

    def served_dra_kinds(self) -> set[str] | None:
        """The DRA kinds resource.k8s.io/v1 serves, from API discovery (none when the group
        version is not served); None when discovery failed otherwise (retried)."""
        response = self.api.get(DRA_GROUP_VERSION)
        if response.status == 404:
            return set()
        if not response.ok:
            log.warning("Discovery failed", group_version=DRA_GROUP_VERSION,
                        status=response.status, reason=response.message())
            return None
        served = {r.get("name") for r in response.body.get("resources") or []}
        return {kind for kind in DRA_KINDS if kind in served}

    def _drop_unserved_dra_reflectors(self, served: set[str]) -> None:
        unserved = [r.name for r in self.reflectors if r.name in DRA_KINDS and r.name not in served]
        for name in unserved:
            log.info("Not watched: the API server does not serve it", resource=name,
                     group_version=DRA_GROUP_VERSION)
        # One assignment: the health endpoints read the list from other threads.
        self.reflectors = [r for r in self.reflectors if r.name not in unserved]

    def _config_map_reflector(self, namespace: str, name: str) -> Reflector:
        """The watch of one ConfigMap a plugin asked for (Handle.watch_config_map); its
        listing counts for the synced start like the others."""
        changed = self.scheduler.config_map_changed
        events = {"ADDED": CONFIG_MAP_ADD, "MODIFIED": CONFIG_MAP_UPDATE,
                  "DELETED": CONFIG_MAP_DELETE}

        def on_event(kind: str | None, obj: dict[str, Any]) -> None:
            event = events.get(kind or "")
            if event is not None:
                data = None if event is CONFIG_MAP_DELETE else dict(obj.get("data") or {})
                changed(namespace, name, data, event)

        def on_listed(items: list[dict[str, Any]]) -> None:
            data = dict(items[0].get("data") or {}) if items else None
            changed(namespace, name, data, CONFIG_MAP_UPDATE)

        return Reflector(self.api, f"/api/v1/namespaces/{namespace}/configmaps",
                         name=f"configmap-{namespace}-{name}", on_event=on_event,
                         on_listed=on_listed, field_selector=f"metadata.name={name}")

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        if self.options.single_cpu:
            # Before any thread starts: each one started later runs where its starter does.
            self.cpu = single_cpu()
            if self.cpu is not None:
                self._spawn(self._rebalance_loop, "cpu")
        self.health.start()
        self._spawn(self._sync, "sync")
        self._spawn(self._resync_loop, "resync")
        if self.elector is not None:
            self.elector.start()
        log.info("Scheduler started", profiles=sorted(self.scheduler.profiles),
                 secure_port=self.health.port,
                 leader_election=self.elector.identity if self.elector else "off")

    def stop(self) -> None:
        self._stop.set()
        for reflector in self.reflectors:
            reflector.stop()
        if self.rescheduler is not None:
            self.rescheduler.stop()
        # Bindings in flight end while the lease is still held; then it is given up.
        self.scheduler.stop()
        self.ports.close()
        if self.elector is not None:
            self.elector.release()
        self.health.stop()
        log.info("Scheduler stopped")

    def _became_leader(self) -> None:
        self._leading.set()
        if self._initial_applied.is_set():
            self.scheduler.allow_scheduling()

    def _leadership_lost(self) -> None:
        # Writes are already fenced. As kube-scheduler, exit and come back as a standby: a
        # clean restart is simpler to reason about than a leader turned standby in place.
        log.critical("Exiting: leadership lost")
        os._exit(1)

    def wait_until_leading(self) -> None:
        """Returns once this replica leads (at once without leader election)."""
        self._leading.wait()

    def wait_until_first_cycle_over(self) -> None:
        """Returns once every initial listing is in the cache and the loop has come round
        once more: a leader's first scheduling cycle is over (a standby's loop only applied
        watch deltas)."""
        self._first_cycle_over.wait()

    def _rebalance_loop(self) -> None:
        while self.cpu is not None and not self._stop.wait(REBALANCE_SECONDS):
            try:
                self.cpu.rebalance()
            except OSError:
                log.exception("Moving to a quieter CPU failed")

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- the low-volume kinds -------------------------------------------------------------
    def resync_low_volume(self) -> bool:
        """List and reconcile namespaces, PriorityClasses and PDBs; False if a list failed."""
        complete = True
        for kind, path in LIST_PATHS.items():
            response = self.api.get(path)
            if not response.ok:
                log.warning("Listing failed", resource=kind, status=response.status,
                            reason=response.message())
                complete = False
                continue
            gone = self.intake.resync(kind, response.body.get("items") or [],
                                      (response.body.get("metadata") or {}).get("resourceVersion"))
            if gone:
                log.info("Removed objects deleted while unobserved", resource=kind, keys=gone)
        return complete

    def _resync_loop(self) -> None:
        while not self._stop.wait(self.options.resync_seconds):
            if self.delay_cache and not self._leading.is_set():
                continue
            try:
                self.resync_low_volume()
            except Exception:
                log.exception("Periodic resync failed")

    # -- health ---------------------------------------------------------------------------
    def _sync(self) -> None:
        """Like kube-scheduler's WaitForCacheSync: no cycle before every initial listing is
        in the cache, or a pod could be bound onto a node whose pods are not yet seen.

        Every listing is fetched at once, as kube-scheduler's informers start together; the
        DRA kinds' once discovery says which are served. The pods' listing is applied last:
        applied before the claims they name, each pending pod would wait at PreEnqueue, and
        every claim the listing then adds would run every such pod's queueing hint
        (thousands by thousands in a DRA burst); after them, no pod is known while the
        others are applied, and they cost the queue nothing (Intake._tell_queue)."""
        if self.delay_cache:
            while not self._leading.wait(1.0):
                if self._stop.is_set():
                    return
        # The listings allocate the cache's long-lived objects by the hundred thousand: with
        # Python's thresholds the collector ran every 700 of them and found no garbage, and
        # its full passes traversed the growing heap (decoding 2,550 ResourceClaims took three
        # times as long). The thresholds settle_heap keeps once they are in apply from here.
        gc.set_threshold(*GC_THRESHOLDS)
        for reflector in self.reflectors:
            if reflector.name not in DRA_KINDS:
                reflector.start()
        # PriorityClasses before the pods: a pending pod's priority is resolved when it
        # arrives.
        while not self.resync_low_volume():
            if self._stop.wait(LIST_RETRY_SECONDS):
                return
        while (served := self.served_dra_kinds()) is None:
            if self._stop.wait(LIST_RETRY_SECONDS):
                return
        self._drop_unserved_dra_reflectors(served)
        for reflector in self.reflectors:
            if reflector.name in DRA_KINDS:
                reflector.start()
        others = [r for r in self.reflectors if r.name != "pods"]
        if not self._wait_listed(others):
            return
        self._others_applied.set()
        if not self._wait_listed([r for r in self.reflectors if r.name == "pods"]):
            return
        # Everything listed is in the inbox; the loop applies it before this marker, in its
        # first pass: started after it, the loop does not wait a standby's interval for it.
        self.scheduler.inbox.put(self._initial_listing_applied)
        # The loop runs on a standby too, applying watch deltas: its cache stays warm.
        self.scheduler.start(scheduling=False)

    def _wait_listed(self, reflectors: list[Reflector]) -> bool:
        """Waits for the reflectors' listings to be applied; False if stopped first."""
        for reflector in reflectors:
            while not reflector.listed.wait(1.0):
                if self._stop.is_set():
                    return False
        return True

    def _initial_listing_applied(self) -> None:
        self._initial_applied.set()
        if self.rescheduler is not None:
            self.rescheduler.start()
        if self._leading.is_set():
            self.scheduler.allow_scheduling()
        # The loop pops the next pod before it applies its inbox: this runs in the first
        # cycle, and what it puts, in the next one, once the first is over.
        self.scheduler.inbox.put(lambda: self.scheduler.inbox.put(self._after_first_cycle))

    def _after_first_cycle(self) -> None:
        # The listing is the bulk of the long-lived objects. Their full collection (0.1-0.2 s
        # at 2,550 claims) comes after the first cycle rather than delay the first bind: it
        # has the synced start's thresholds (_sync), so the cycle starts no collection.
        settle_heap()
        self._first_cycle_over.set()

    def live(self) -> tuple[bool, dict[str, object]]:
        """``/healthz``: the threads alive, the loop coming round (liveness.loop_progress),
        and a leader renewing its lease (LeaderElector.check)."""
        if not self._initial_applied.is_set():
            # Still syncing (a listing that fails is retried and logged): restarting the
            # process would not help it.
            return not self._stop.is_set(), {"syncing": True}
        watches = {r.name: r.alive() for r in self.reflectors}
        thread = self.scheduler.is_running()
        loop_ok, loop = loop_progress(self.scheduler)
        lease_ok, lease = self._lease_check()
        return thread and all(watches.values()) and loop_ok and lease_ok, {
            "scheduling": thread, "watches": watches, "schedulingLoop": loop,
            "leaderElection": lease}

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Ready once every initial listing is in the cache, leader or standby, unless a
        leader stopped renewing (kube-scheduler adds the watchdog to /readyz as well)."""
        listed = {r.name: r.listed.is_set() for r in self.reflectors}
        ok = self._initial_applied.is_set()
        lease_ok, lease = self._lease_check()
        return ok and lease_ok, {"listed": listed, "applied": ok,
                                 "leading": self._leading.is_set(), "leaderElection": lease}

    def _lease_check(self) -> tuple[bool, dict[str, object]]:
        return self.elector.check() if self.elector is not None else (True, {})
