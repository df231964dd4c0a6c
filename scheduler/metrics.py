"""Prometheus metrics under kube-scheduler's names, labels and buckets.

Names, label sets and buckets are upstream's (k8s ``pkg/scheduler/metrics/metrics.go``,
component-base ``metrics/prometheus/restclient`` and ``.../clientgo/leaderelection``), so
dashboards and alerts written for kube-scheduler read ours unchanged. Metrics of our own carry
the ``secondary_scheduler_`` prefix.

Each :class:`Metrics` owns its registry: a process serves exactly one, and tests build as many
as they like. Counters and histograms are our own small collectors (one lock and a list of
numbers per child, the bucket found by bisection): prometheus_client's take a lock per bucket
and per sum, which the scheduling cycle, observing a dozen times per pod, would feel. Hot-path
recorders reach their children through small dicts; queue sizes and in-flight counts are read
at scrape time, so the scheduling cycle pays nothing for them.
"""

from __future__ import annotations

import platform
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from prometheus_client import (
    CollectorRegistry,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from scheduler.version import build_platform, version

# kube-scheduler has no ``_created`` series.
disable_created_metrics()  # type: ignore[no-untyped-call]

# upstream pluginMetricsSamplePercent: per-plugin timings are recorded in 1 cycle of 10.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# Observations appended to a histogram child before they are sorted into its buckets.
_FOLD_EVERY = 256

# Upstream attempts label: "1".."14", then "15+".
_MAX_ATTEMPTS_LABEL = 15


def register_build_info(registry: CollectorRegistry) -> None:
    """component-base's ``kubernetes_build_info`` (metrics/prometheus/version), with its
    labels: our version where upstream has Kubernetes', and the Go-only ones empty."""
    release = version()
    major, minor = [*release.split("."), "", ""][:2]
    gauge = Gauge(
        "kubernetes_build_info", "[BETA] A metric with a constant '1' value labeled by major, "
        "minor, git version, git commit, git tree state, build date, Go version, and compiler "
        "from which Kubernetes was built, and platform on which it is running.",
        ["major", "minor", "git_version", "git_commit", "git_tree_state", "build_date",
         "go_version", "compiler", "platform"], registry=registry)
    gauge.labels(major, minor, f"v{release}", "", "", "", "",
                 platform.python_implementation().lower(), build_platform()).set(1)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
VICTIM_BUCKETS = exponential_buckets(1, 2, 7)
# The workload preemption histograms': 1 up to [1024, Inf).
WORKLOAD_VICTIM_BUCKETS = exponential_buckets(1, 2, 11)
ATTEMPTS_COUNT_BUCKETS = exponential_buckets(1, 2, 5)
DRA_BINDING_CONDITIONS_BUCKETS = exponential_buckets(0.1, 2, 14)
REST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]

QueueCounts = Callable[[], Mapping[str, int]]
PluginCounts = Callable[[], Mapping[tuple[str, str], int]]
# (queue, entity type) -> entities: scheduler_queued_entities.
EntityCounts = Callable[[], Mapping[tuple[str, str], int]]


def attempts_label(attempts: int) -> str:
    return str(attempts) if attempts < _MAX_ATTEMPTS_LABEL else f"{_MAX_ATTEMPTS_LABEL}+"


class _Count:
    __slots__ = ("_lock", "value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount


class Observations:
    """One histogram child: a count per bucket (the last is +Inf) and the sum.

    An observation is only appended (no lock: ``list.append`` is atomic); the values are
    sorted into buckets a batch at a time, when a batch is full and when the child is read.
    Appends that race a fold land after the part it takes and wait for the next one.
    """

    __slots__ = ("_bounds", "_lock", "_pending", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = np.asarray(bounds, dtype=np.float64)
        self._lock = threading.Lock()
        self._pending: list[float] = []
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        pending = self._pending
        pending.append(value)
        if len(pending) >= _FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        with self._lock:
            pending = self._pending
            taken = pending[:]
            del pending[: len(taken)]
            if not taken:
                return
            # Per value the first bucket with value <= le, as bisect_left, for all at once.
            buckets = np.bincount(np.searchsorted(self._bounds, taken, side="left"),
                                  minlength=len(self.counts))
            counts = self.counts
            for i in buckets.nonzero()[0].tolist():
                counts[i] += int(buckets[i])
            total = self.total
            for value in taken:  # in order: the same sum as adding each when observed
                total += value
            self.total = total

    def read(self) -> tuple[list[int], float]:
        self._fold()
        with self._lock:
            return list(self.counts), self.total


class _Family(Collector):
    """A labelled metric: children made on first use of a label set, kept for ever."""

    def __init__(self, name: str, doc: str, labels: Sequence[str],
                 registry: CollectorRegistry) -> None:
        self.name = name
        self.doc = doc
        self.label_names = list(labels)
        self._children: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()
        if not self.label_names:
            self._child(())  # an unlabelled metric reads 0 before its first event
        registry.register(self)

    def _child(self, values: tuple[str, ...]) -> Any:
        child = self._children.get(values)
        if child is None:
            with self._lock:
                child = self._children.setdefault(values, self._new())
        return child

    def _new(self) -> Any:
        raise NotImplementedError

    def _items(self) -> list[tuple[tuple[str, ...], Any]]:
        with self._lock:
            return sorted(self._children.items())


class CounterVec(_Family):
    def _new(self) -> _Count:
        return _Count()

    def labels(self, *values: str) -> _Count:
        child: _Count = self._child(values)
        return child

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)

    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.doc, labels=self.label_names)
        for values, child in self._items():
            family.add_metric(list(values), child.value)
        yield family


class HistogramVec(_Family):
    def __init__(self, name: str, doc: str, labels: Sequence[str], buckets: Sequence[float],
                 registry: CollectorRegistry) -> None:
        self.bounds = list(buckets)
        self._les = [floatToGoString(b) for b in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        super().__init__(name, doc, labels, registry)

    def _new(self) -> Observations:
        return Observations(self.bounds)

    def labels(self, *values: str) -> Observations:
        child: Observations = self._child(values)
        return child

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def collect(self) -> Iterable[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.label_names)
        for values, child in self._items():
            counts, total = child.read()
            cumulative, running = [], 0
            for le, count in zip(self._les, counts, strict=True):
                running += count
                cumulative.append((le, float(running)))
            family.add_metric(list(values), cumulative, total)
        yield family


class _Sources(Collector):
    """Gauges computed at scrape time from the live scheduler (queue sizes, bindings)."""

    def __init__(self) -> None:
        self.pending: QueueCounts | None = None
        self.entities: EntityCounts | None = None
        self.unschedulable: PluginCounts | None = None
        self.bindings: Callable[[], int] | None = None
        self.cache_sizes: Callable[[], Mapping[str, int]] | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        if self.pending is not None:
            family = GaugeMetricFamily(
                "scheduler_pending_pods",
                "[STABLE] Number of pending pods, by the queue type. 'active' means number of "
                "pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' "
                "means number of pods in unschedulableEntities that the scheduler attempted to "
                "schedule and failed; 'gated' is the number of unschedulable pods that the "
                "scheduler never attempted to schedule because they are gated; 'incomplete' "
                "means number of pods in incompletePodGroupPods; 'pending' means number of "
                "pods in pendingPodGroupPods.",
                labels=["queue"],
            )
            for queue, count in self.pending().items():
                family.add_metric([queue], count)
            yield family
        if self.entities is not None:
            yield self._queued_entities(self.entities)
        if self.unschedulable is not None:
            family = GaugeMetricFamily(
                "scheduler_unschedulable_pods",
                "[BETA] The number of unschedulable pods broken down by plugin name. A pod will "
                "increment the gauge for all plugins that caused it to not schedule and so this "
                "metric have meaning only when broken down by plugin.",
                labels=["plugin", "profile"],
            )
            for (plugin, profile), count in sorted(self.unschedulable().items()):
                family.add_metric([plugin, profile], count)
            yield family
        if self.bindings is not None:
            family = GaugeMetricFamily(
                "scheduler_goroutines",
                "[BETA] Number of running goroutines split by the work they do such as binding. "
                "Here: binding threads busy with a binding cycle.",
                labels=["operation"],
            )
            family.add_metric(["binding"], self.bindings())
            yield family
        if self.cache_sizes is not None:
            family = GaugeMetricFamily(
                "scheduler_cache_size",
                "[ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler "
                "cache.",
                labels=["type"],
            )
            for kind, count in self.cache_sizes().items():
                family.add_metric([kind], count)
            yield family

    @staticmethod
    def _queued_entities(entities: EntityCounts) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "scheduler_queued_entities",
            "[ALPHA] Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands "
            "for individual pods that are not members of any podgroup) by the queue type. "
            "'active' means number of entities in activeQ; 'backoff' means number of entities "
            "in backoffQ; 'unschedulable' means number of entities in unschedulableEntities "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of "
            "unschedulable entities that the scheduler never attempted to schedule because "
            "they are gated.",
            labels=["queue", "type"],
        )
        for (queue, kind), count in entities().items():
            family.add_metric([queue, kind], count)
        return family


class ProfileMetrics:
    """The per-profile recorders of one framework, children bound on first use."""

    def __init__(self, metrics: Metrics, profile: str) -> None:
        self._metrics = metrics
        self.profile = profile
        self._attempts = {
            result: (
                metrics.schedule_attempts.labels(result, profile),
                metrics.attempt_duration.labels(result, profile),
            )
            for result in (SCHEDULED, UNSCHEDULABLE, ERROR)
        }

    def attempt(self, result: str, seconds: float) -> None:
        counter, histogram = self._attempts[result]
        counter.inc()
        histogram.observe(seconds)

    def pod_group_attempt(self, result: str, seconds: float) -> None:
        """One pod-group cycle ended (upstream's PodGroupScheduled, PodGroupUnschedulable,
        PodGroupScheduleError)."""
        self._metrics.pod_group_attempts.labels(result, self.profile).inc()
        self._metrics.pod_group_attempt_duration.labels(result, self.profile).observe(seconds)

    def point_histogram(self, point: str, status: str) -> Observations:
        """The child of extension_point_duration_seconds the framework keeps for a status."""
        return self._metrics.extension_point_duration.labels(point, status, self.profile)

    def plugin_histogram(self, plugin: str, point: str, status: str) -> Observations:
        """The child of plugin_execution_duration_seconds a plugin's timer keeps for a status."""
        return self._metrics.plugin_duration.labels(plugin, point, status)

    def should_sample_plugins(self) -> bool:
        return self._metrics.sample() < PLUGIN_METRICS_SAMPLE_PERCENT


class Metrics:
    """Every metric the scheduler exports, registered in its own registry."""

    def __init__(self, *, process: bool = False, sample: Callable[[], int] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        if process:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            register_build_info(self.registry)
        # Which cycles record per-plugin timings: 0..99, below the sample percent records.
        self.sample = sample or (lambda: random.randrange(100))
        self._register_scheduler_metrics(self.registry)
        self._register_client_metrics(self.registry)
        self._register_own_metrics(self.registry)
        self._sources = _Sources()
        self.registry.register(self._sources)
        self._profiles: dict[str, ProfileMetrics] = {}

    def _register_scheduler_metrics(self, reg: CollectorRegistry) -> None:
        """kube-scheduler's own metrics, with its names, help texts and buckets."""
        self.schedule_attempts = CounterVec(
            "scheduler_schedule_attempts", "[STABLE] Number of attempts to schedule pods, by "
            "the result. 'unschedulable' means a pod could not be scheduled, while 'error' "
            "means an internal scheduler problem.", ["result", "profile"], registry=reg)
        self.attempt_duration = HistogramVec(
            "scheduler_scheduling_attempt_duration_seconds", "[STABLE] Scheduling attempt "
            "latency in seconds (scheduling algorithm + binding)", ["result", "profile"],
            buckets=ATTEMPT_BUCKETS, registry=reg)
        self.algorithm_duration = HistogramVec(
            "scheduler_scheduling_algorithm_duration_seconds", "[BETA] Scheduling algorithm "
            "latency in seconds", [], buckets=ATTEMPT_BUCKETS, registry=reg)
        self.sli_duration = HistogramVec(
            "scheduler_pod_scheduling_sli_duration_seconds", "[BETA] E2e latency for a pod "
            "being scheduled, from the time the pod enters the scheduling queue and might "
            "involve multiple scheduling attempts.", ["attempts"], buckets=SLI_BUCKETS,
            registry=reg)
        self.pod_attempts = HistogramVec(
            "scheduler_pod_scheduling_attempts", "[STABLE] Number of attempts to successfully "
            "schedule a pod.", [], buckets=ATTEMPTS_COUNT_BUCKETS, registry=reg)
        # The children every bound pod observes, looked up once.
        self._attempts = self.pod_attempts.labels()
        self._sli: dict[int, Observations] = {}
        self.queue_incoming = CounterVec(
            "scheduler_queue_incoming_pods", "[STABLE] Number of pods added to scheduling "
            "queues by event and queue type.", ["queue", "event"], registry=reg)
        self.queue_incoming_entities = CounterVec(
            "scheduler_queue_incoming_entities", "[ALPHA] Number of scheduling entities added "
            "to scheduling queues by event, queue type, and entity type. Entity types are "
            "either 'pod' (for individual pods that are not members of any podgroup) or "
            "'podgroup'.", ["queue", "event", "type"], registry=reg)
        self.extension_point_duration = HistogramVec(
            "scheduler_framework_extension_point_duration_seconds", "[STABLE] Latency for "
            "running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"], buckets=EXTENSION_POINT_BUCKETS,
            registry=reg)
        self.plugin_duration = HistogramVec(
            "scheduler_plugin_execution_duration_seconds", "[BETA] Duration for running a "
            "plugin at a specific extension point (sampled).",
            ["plugin", "extension_point", "status"], buckets=PLUGIN_BUCKETS, registry=reg)
        # The pod-group cycle's (GenericWorkload's): one attempt per group cycle.
        self.pod_group_attempts = CounterVec(
            "scheduler_podgroup_schedule_attempts", "[ALPHA] Number of attempts to schedule "
            "pod group, by the result. 'unschedulable' means a pod group could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=reg)
        self.pod_group_attempt_duration = HistogramVec(
            "scheduler_podgroup_scheduling_attempt_duration_seconds", "[ALPHA] Pod group "
            "scheduling attempt latency in seconds", ["result", "profile"],
            buckets=ATTEMPT_BUCKETS, registry=reg)
        self.pod_group_algorithm_duration = HistogramVec(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds", "[ALPHA] Pod group "
            "scheduling algorithm latency in seconds", [], buckets=ATTEMPT_BUCKETS,
            registry=reg)
        # DynamicResources' wait for binding conditions in PreBind (DRADeviceBindingConditions,
        # on in v1.37.2); status is success, failure, timeout or error.
        self.dra_binding_conditions_allocations = CounterVec(
            "scheduler_dra_bindingconditions_allocations", "[ALPHA] Number of allocations "
            "using devices with BindingConditions, counted per driver per scheduling attempt",
            ["profile", "driver", "status"], registry=reg)
        self.dra_binding_conditions_wait = HistogramVec(
            "scheduler_dra_bindingconditions_wait_duration_seconds", "[ALPHA] Time in seconds "
            "spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"], buckets=DRA_BINDING_CONDITIONS_BUCKETS,
            registry=reg)
        # k8s.io/dynamic-resource-allocation's, which kube-scheduler registers with
        # DRAExtendedResource: the claims it creates for DRA-backed extended resources.
        self.resource_claim_creates = CounterVec(
            "dynamic_resource_allocation_resourceclaim_creates", "[ALPHA] Number of "
            "ResourceClaims creation requests, categorized by creation status, admin access, "
            "and owning API group and kind (either Pod or scheduling.k8s.io/PodGroup)",
            ["status", "admin_access", "owner_api_group", "owner_api_kind"], registry=reg)
        self.preemption_attempts = CounterVec(
            "scheduler_preemption_attempts", "[STABLE] Total preemption attempts in the "
            "cluster till now", [], registry=reg)
        self.preemption_victims = HistogramVec(
            "scheduler_preemption_victims", "[STABLE] Number of selected preemption victims",
            [], buckets=VICTIM_BUCKETS, registry=reg)
        # A pod group's preemption (GenericWorkload's PodGroupPostFilter).
        self.workload_preemption_attempts = CounterVec(
            "scheduler_workload_preemption_attempts", "[ALPHA] Total preemption attempts "
            "initiated by workload (including pod groups) in the cluster till now.",
            ["result"], registry=reg)
        self.workload_preemption_victims = HistogramVec(
            "scheduler_workload_preemption_victims", "[ALPHA] Number of pod preemption "
            "victims caused by workload preemption.", [], buckets=WORKLOAD_VICTIM_BUCKETS,
            registry=reg)
        self.preemption_workload_disruptions = HistogramVec(
            "scheduler_preemption_workload_disruptions", "[ALPHA] Number of workload "
            "preemption units being preempted. A single preemption unit can be all pods in a "
            "pod group (in case of DisruptionMode=all), or a single pod (in case of "
            "DisruptionMode=single).", ["preemptor"], buckets=WORKLOAD_VICTIM_BUCKETS,
            registry=reg)

    def _register_client_metrics(self, reg: CollectorRegistry) -> None:
        """component-base's leader-election and REST client metrics, as kube-scheduler
        exports them."""
        self.leader_status = Gauge(
            "leader_election_master_status", "[ALPHA] Gauge of if the reporting system is "
            "master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is "
            "the string used to identify the lease. Please make sure to group by name.",
            ["name"], registry=reg)
        self.rest_requests = CounterVec(
            "rest_client_requests", "[ALPHA] Number of HTTP requests, partitioned by status "
            "code, method, and host.", ["code", "method", "host"], registry=reg)
        self.rest_duration = HistogramVec(
            "rest_client_request_duration_seconds", "[ALPHA] Request latency in seconds. "
            "Broken down by verb, and host.", ["verb", "host"], buckets=REST_BUCKETS,
            registry=reg)
        self.rest_rate_limiter = HistogramVec(
            "rest_client_rate_limiter_duration_seconds", "[ALPHA] Client side rate limiter "
            "latency in seconds. Broken down by verb, and host.", ["verb", "host"],
            buckets=REST_BUCKETS, registry=reg)

    def _register_own_metrics(self, reg: CollectorRegistry) -> None:
        """This scheduler's own: evictions, bindings and the rescheduler."""
        self.evictions = CounterVec(
            "secondary_scheduler_preemption_evictions", "Preemption victims the scheduler "
            "tried to remove, by outcome (Evicted, Gone, BlockedByPDB, MultiplePDBs, Failed; "
            "Deleted when a PDB refused the eviction and the victim was deleted instead).",
            ["outcome"], registry=reg)
        self.bindings = CounterVec(
            "secondary_scheduler_bindings", "Binding requests by outcome (Bound, Gone, "
            "Conflict, Failed).", ["outcome"], registry=reg)
        self.watch_objects_skipped = CounterVec(
            "secondary_scheduler_watch_objects_skipped", "Objects a watch or listing "
            "delivered that the scheduler could not parse, by kind: logged and skipped.",
            ["kind"], registry=reg)
        self.rescheduler_evictions = CounterVec(
            "secondary_scheduler_rescheduler_evictions", "Pods the rescheduler moved, by "
            "objective and result (evicted, dry_run, blocked_by_pdb, gone, failed).",
            ["objective", "result"], registry=reg)
        self.rescheduler_replacements = CounterVec(
            "secondary_scheduler_rescheduler_replacements", "Where the replacements of moved "
            "pods landed: target (the node the move was for), other, source (back where the "
            "pod was), or timeout (not bound within the move timeout).", ["landed"],
            registry=reg)
        self.rescheduler_skips = CounterVec(
            "secondary_scheduler_rescheduler_skips", "Candidates the rescheduler did not move, "
            "by reason (no_better_node, below_min_gain, no_balance_gain, not_simulated, "
            "controller_busy, limit, budget).", ["reason"], registry=reg)
        self.rescheduler_pass_duration = HistogramVec(
            "secondary_scheduler_rescheduler_pass_duration_seconds", "How long one rescheduler "
            "pass took, evictions included.", [], buckets=SLI_BUCKETS, registry=reg)

    # -- wiring ---------------------------------------------------------------------------
    def profile(self, name: str) -> ProfileMetrics:
        found = self._profiles.get(name)
        if found is None:
            found = self._profiles[name] = ProfileMetrics(self, name)
        return found

    def watch_queue(self, pending: QueueCounts, unschedulable: PluginCounts,
                    entities: EntityCounts | None = None) -> None:
        """Read ``scheduler_pending_pods``, ``scheduler_unschedulable_pods`` and
        ``scheduler_queued_entities`` at scrape time."""
        self._sources.pending = pending
        self._sources.unschedulable = unschedulable
        self._sources.entities = entities

    def watch_bindings(self, in_flight: Callable[[], int]) -> None:
        self._sources.bindings = in_flight

    def watch_cache(self, sizes: Callable[[], Mapping[str, int]]) -> None:
        """Read ``scheduler_cache_size`` at scrape time (kubernetes-mixin's dashboards)."""
        self._sources.cache_sizes = sizes

    # -- recorders ------------------------------------------------------------------------
    def queue_incoming_pod(self, queue: str, event: str, entity: str = "") -> None:
        """A pod entered ``queue``; ``entity`` (``pod``, ``podgroup``) when that counts as an
        entity entering it too."""
        self.queue_incoming.labels(queue, event).inc()
        if entity:
            self.queue_incoming_entities.labels(queue, event, entity).inc()

    def scheduled(self, attempts: int, sli_seconds: float | None) -> None:
        """A pod was bound after ``attempts`` attempts, ``sli_seconds`` after it was queued."""
        self._attempts.observe(attempts)
        if sli_seconds is not None:
            label = min(attempts, _MAX_ATTEMPTS_LABEL)
            child = self._sli.get(label)
            if child is None:
                child = self._sli[label] = self.sli_duration.labels(attempts_label(attempts))
            child.observe(sli_seconds)

    def set_leader(self, lease: str, leading: bool) -> None:
        """For leader election: 1 while this replica holds ``lease``, 0 while it stands by.

        Without leader election nothing calls it and the series is absent, as upstream (which
        only registers the lease's series once an elector runs).
        """
        self.leader_status.labels(lease).set(1 if leading else 0)

    def watch_object_skipped(self, kind: str) -> None:
        self.watch_objects_skipped.labels(kind).inc()

    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None:
        self.rest_requests.labels(code, method, host).inc()
        self.rest_duration.labels(method, host).observe(seconds)

    def rate_limited(self, method: str, host: str, seconds: float) -> None:
        self.rest_rate_limiter.labels(method, host).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
