"""The running scheduler: API client, ports, core, watches and health, started together."""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.framework.config import SchedulerConfig
from scheduler.intake import NAMESPACES, PDBS, PRIORITY_CLASSES, Intake
from scheduler.metrics import Metrics
from scheduler.operator.api_ports import ApiPorts
from scheduler.operator.explain_endpoint import ExplainEndpoint
from scheduler.operator.health import HealthServer
from scheduler.operator.kubeapi import KubeApi, api_client_from
from scheduler.operator.reflector import Reflector
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler

log = structlog.get_logger("scheduler.app")

LIST_PATHS = {
    NAMESPACES: "/api/v1/namespaces",
    PRIORITY_CLASSES: "/apis/scheduling.k8s.io/v1/priorityclasses",
    PDBS: "/apis/policy/v1/poddisruptionbudgets",
}
# kopf relists these without reporting deletions it missed; reconcile them this often.
RESYNC_SECONDS = 60.0
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
    health_port: int = 10259
    resync_seconds: float = RESYNC_SECONDS


class SchedulerApp:
    def __init__(self, config: SchedulerConfig, options: Options) -> None:
        self.options = options
        self.metrics = Metrics(process=True)
        api_client = api_client_from(options.kubeconfig, connections=CONNECTIONS)
        qps, burst = config.client_connection.qps, config.client_connection.burst
        self.api = KubeApi(api_client, qps=qps, burst=burst, metrics=self.metrics)
        # Like kube-scheduler's event client: the same connection settings, its own budget.
        self.ports = ApiPorts(
            self.api, events=KubeApi(api_client, qps=qps, burst=burst, metrics=self.metrics),
            workers=API_LANES,
        )
        self.scheduler = Scheduler(
            config, default_registry(), binder=self.ports, reporter=self.ports,
            evictor=self.ports, metrics=self.metrics, binding_workers=BINDING_WORKERS,
        )
        self.intake = Intake(self.scheduler)
        self.reflectors = [
            Reflector(self.api, "/api/v1/nodes", name="nodes",
                      on_event=self.intake.on_node, on_listed=self.intake.resync_nodes),
            Reflector(self.api, "/api/v1/pods", name="pods",
                      on_event=self.intake.on_pod, on_listed=self.intake.resync_pods),
        ]
        self.health = HealthServer(options.health_port, live=self.live, ready=self.ready,
                                   metrics=self.metrics.exposition,
                                   explain=ExplainEndpoint(self.api, self.scheduler, self.intake))
        self._initial_applied = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.health.start()
        self.resync_low_volume()
        for reflector in self.reflectors:
            reflector.start()
        self._spawn(self._schedule_when_listed, "readiness")
        self._spawn(self._resync_loop, "resync")
        log.info("Scheduler started", profiles=sorted(self.scheduler.profiles),
                 health_port=self.health.port)

    def stop(self) -> None:
        self._stop.set()
        for reflector in self.reflectors:
            reflector.stop()
        self.scheduler.stop()
        self.ports.close()
        self.health.stop()
        log.info("Scheduler stopped")

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- the low-volume kinds -------------------------------------------------------------
    def resync_low_volume(self) -> None:
        for kind, path in LIST_PATHS.items():
            response = self.api.get(path)
            if not response.ok:
                log.warning("Listing failed", resource=kind, status=response.status,
                            reason=response.message())
                continue
            gone = self.intake.resync(kind, response.body.get("items") or [],
                                      (response.body.get("metadata") or {}).get("resourceVersion"))
            if gone:
                log.info("Removed objects deleted while unobserved", resource=kind, keys=gone)

    def _resync_loop(self) -> None:
        while not self._stop.wait(self.options.resync_seconds):
            try:
                self.resync_low_volume()
            except Exception:
                log.exception("Periodic resync failed")

    # -- health ---------------------------------------------------------------------------
    def _schedule_when_listed(self) -> None:
        for reflector in self.reflectors:
            while not reflector.listed.wait(1.0):
                if self._stop.is_set():
                    return
        # Like kube-scheduler's WaitForCacheSync: no cycle before nodes and pods are listed, or
        # the pending pods would first fail on an empty cluster (an Event and a patch each).
        self.scheduler.start()
        # Ready once the scheduling thread has applied everything listed so far.
        self.scheduler.inbox.put(self._initial_listing_applied)

    def _initial_listing_applied(self) -> None:
        # The listing is the bulk of the long-lived objects: keep it out of the collector's
        # full passes, which otherwise pause a cycle for tens of milliseconds at 50,000 pods.
        gc.collect()
        gc.freeze()
        self._initial_applied.set()

    def live(self) -> tuple[bool, dict[str, object]]:
        watches = {r.name: r.alive() for r in self.reflectors}
        listing = not all(r.listed.is_set() for r in self.reflectors)
        thread = self.scheduler.is_running() or listing
        return thread and all(watches.values()), {"scheduling": thread, "watches": watches}

    def ready(self) -> tuple[bool, dict[str, object]]:
        listed = {r.name: r.listed.is_set() for r in self.reflectors}
        ok = self._initial_applied.is_set()
        return ok, {"listed": listed, "applied": ok}
