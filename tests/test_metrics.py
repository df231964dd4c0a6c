"""Prometheus metrics recorded by the scheduling core, read back from the scheduler's registry.

Pods are scheduled, rejected and preempted through the fakes of ``tests/test_cycle.py`` and
``tests/plugins/test_default_preemption.py``; durations are not asserted (wall clock), only
counts and the SLI, which runs on the fake clock.
"""

from __future__ import annotations

import threading
import urllib.request
from typing import Any

import pytest

from scheduler.framework.interface import Code
from scheduler.framework.ports import BindOutcome, EvictionOutcome
from scheduler.metrics import EXTENSION_POINT_BUCKETS, Metrics, Observations, attempts_label
from scheduler.operator.health import HealthServer
from scheduler.operator.serving.auth import User
from scheduler.testing import node, pod
from tests.operator.serving_kit import FakeReviews, client_context, running, secure
from tests.plugins.test_default_preemption import (
    BASIC_NODES,
    BASIC_PODS,
    HIGH,
    VERY_LARGE,
    FakeEvictor,
    cluster,
    info,
    p,
)
from tests.test_cycle import SCHED, FakeFilter, Harness, RaisingFilter, only


def sample(metrics: Metrics, metric: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(metric, labels) or 0.0


def attempts(metrics: Metrics, result: str) -> float:
    return sample(metrics, "scheduler_schedule_attempts_total", result=result, profile=SCHED)


def test_a_scheduled_pod_is_counted_once_with_its_sli_and_binding() -> None:
    h = Harness().nodes(node("n1", cpu="2", memory="2Gi"), node("n2", cpu="2", memory="2Gi"))
    h.add(pod("a", cpu="1"))
    h.cycle()
    m = h.s.metrics
    assert attempts(m, "scheduled") == 1
    assert attempts(m, "unschedulable") == attempts(m, "error") == 0
    assert sample(m, "scheduler_scheduling_attempt_duration_seconds_count",
                  result="scheduled", profile=SCHED) == 1
    # The fake clock did not move: queued and bound at the same instant.
    assert sample(m, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 1
    assert sample(m, "scheduler_pod_scheduling_sli_duration_seconds_sum", attempts="1") == 0
    assert sample(m, "scheduler_pod_scheduling_attempts_sum") == 1
    assert sample(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 1
    assert sample(m, "secondary_scheduler_bindings_total", outcome="Bound") == 1
    assert sample(m, "scheduler_queue_incoming_pods_total",
                  queue="active", event="UnscheduledPodAdd") == 1
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind",
                  "Bind", "PostBind"):
        assert sample(m, "scheduler_framework_extension_point_duration_seconds_count",
                      extension_point=point, status="Success", profile=SCHED) == 1, point
    # VolumeBinding, the one PreBind plugin, has nothing to do for a pod without claims.
    assert sample(m, "scheduler_framework_extension_point_duration_seconds_count",
                  extension_point="PreBindPreFlight", status="Skip", profile=SCHED) == 1


def test_an_unschedulable_pod_is_counted_queued_and_blamed_on_its_plugin() -> None:
    h = Harness().nodes(node("n1", cpu="1", memory="1Gi"))
    h.add(pod("big", cpu="4"))
    h.cycle()
    m = h.s.metrics
    assert attempts(m, "unschedulable") == 1
    assert attempts(m, "scheduled") == 0
    assert sample(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 0
    assert sample(m, "scheduler_queue_incoming_pods_total",
                  queue="unschedulable", event="ScheduleAttemptFailure") == 1
    assert sample(m, "scheduler_pending_pods", queue="unschedulable") == 1
    assert sample(m, "scheduler_pending_pods", queue="active") == 0
    assert sample(m, "scheduler_unschedulable_pods",
                  plugin="NodeResourcesFit", profile=SCHED) == 1
    assert sample(m, "scheduler_framework_extension_point_duration_seconds_count",
                  extension_point="PostFilter", status="Unschedulable", profile=SCHED) == 1
    # PostFilter ran DefaultPreemption, which found nothing to preempt.
    assert sample(m, "scheduler_preemption_attempts_total") == 1
    assert sample(m, "scheduler_preemption_victims_count") == 0


def test_the_sli_runs_from_the_first_queueing_across_attempts() -> None:
    h = Harness().nodes(node("n1", cpu="1", memory="1Gi"))
    h.add(pod("big", cpu="2"))
    h.cycle()
    h.clock.advance(42.0)
    h.nodes(node("n2", cpu="4", memory="4Gi"))
    h.clock.advance(10.0)  # past the backoff
    h.s.queue.flush_backoff_completed()
    h.cycle()
    m = h.s.metrics
    assert attempts(m, "scheduled") == 1
    assert sample(m, "scheduler_pod_scheduling_sli_duration_seconds_sum", attempts="2") == 52.0
    assert sample(m, "scheduler_pod_scheduling_attempts_sum") == 2
    moved = sum(
        sample(m, "scheduler_queue_incoming_pods_total", queue=q, event="NodeAdd")
        for q in ("active", "backoff")
    )
    assert moved == 1


def test_a_plugin_error_counts_as_an_error_attempt() -> None:
    h = Harness(config=only(RaisingFilter()), plugins=[RaisingFilter()])
    h.nodes(node("n1"))
    h.add(pod("a"))
    h.cycle()
    m = h.s.metrics
    assert attempts(m, "error") == 1
    assert sample(m, "scheduler_queue_incoming_pods_total",
                  queue="backoff", event="ScheduleAttemptFailure") == 1


@pytest.mark.parametrize(
    ("draw", "recorded"),
    [
        pytest.param(0, 1, id="a sampled cycle times each plugin"),
        pytest.param(9, 1, id="the sample is 10 %: draws 0..9 record"),
        pytest.param(10, 0, id="draws 10..99 record nothing"),
    ],
)
def test_plugin_durations_are_sampled(draw: int, recorded: int) -> None:
    fake = FakeFilter(codes={})
    h = Harness(config=only(fake), plugins=[fake])
    h.s.metrics.sample = lambda: draw
    h.nodes(node("n1"))
    h.add(pod("a"))
    h.cycle()
    m = h.s.metrics
    assert sample(m, "scheduler_plugin_execution_duration_seconds_count",
                  plugin="FakeFilter", extension_point="Filter", status="Success") == recorded
    assert sample(m, "scheduler_plugin_execution_duration_seconds_count",
                  plugin="DefaultBinder", extension_point="Bind", status="Success") == recorded
    # The extension-point totals are not sampled.
    assert sample(m, "scheduler_framework_extension_point_duration_seconds_count",
                  extension_point="Filter", status="Success", profile=SCHED) == 1


def test_a_sampled_rejection_is_labelled_with_the_plugins_code() -> None:
    fake = FakeFilter(codes={"n1": Code.UNSCHEDULABLE})
    h = Harness(config=only(fake), plugins=[fake])
    h.s.metrics.sample = lambda: 0
    h.nodes(node("n1"))
    h.add(pod("a"))
    h.cycle()
    assert sample(h.s.metrics, "scheduler_plugin_execution_duration_seconds_count",
                  plugin="FakeFilter", extension_point="Filter", status="Unschedulable") == 1


@pytest.mark.parametrize(
    ("evictor", "want"),
    [
        pytest.param(FakeEvictor(), {"Evicted": 2}, id="both victims evicted"),
        pytest.param(FakeEvictor({"p1.1": EvictionOutcome.BLOCKED_BY_PDB}),
                     {"BlockedByPDB": 1, "Deleted": 1, "Evicted": 1},
                     id="a budget refusal, then the BestEffort delete"),
        pytest.param(FakeEvictor({"p1.1": EvictionOutcome.FAILED}), {"Failed": 1},
                     id="a failed eviction ends the actuation"),
    ],
)
def test_preemption_counts_attempts_victims_and_eviction_outcomes(
    evictor: FakeEvictor, want: dict[str, int]
) -> None:
    c = cluster(BASIC_NODES, BASIC_PODS, evictor=evictor)
    c.schedule(info(p("p", prio=HIGH, res=VERY_LARGE)))
    assert c.plugin.wait_for_actuations(10)
    m = c.s.metrics
    assert sample(m, "scheduler_preemption_attempts_total") == 1
    assert sample(m, "scheduler_preemption_victims_count") == 1
    assert sample(m, "scheduler_preemption_victims_sum") == 2
    got = {
        outcome: sample(m, "secondary_scheduler_preemption_evictions_total", outcome=outcome)
        for outcome in ("Evicted", "Gone", "BlockedByPDB", "MultiplePDBs", "Failed", "Deleted")
    }
    assert {k: v for k, v in got.items() if v} == want


@pytest.mark.parametrize(
    ("attempts_made", "label"),
    [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")],
)
def test_the_sli_attempts_label_caps_at_15(attempts_made: int, label: str) -> None:
    assert attempts_label(attempts_made) == label
    m = Metrics()
    m.scheduled(40, 1.0)  # another count past the cap first: the same series
    m.scheduled(attempts_made, 2.0)
    want = 3.0 if label == "15+" else 2.0
    assert sample(m, "scheduler_pod_scheduling_sli_duration_seconds_sum", attempts=label) == want


def test_leader_status_is_absent_until_election_reports_it() -> None:
    m = Metrics()
    assert m.registry.get_sample_value("leader_election_master_status", {"name": "x"}) is None
    m.set_leader("x", True)
    assert sample(m, "leader_election_master_status", name="x") == 1
    m.set_leader("x", False)
    assert sample(m, "leader_election_master_status", name="x") == 0


def test_health_server_serves_the_registry_on_metrics() -> None:
    m = Metrics(process=True)
    m.set_leader("lease", True)
    reviews = FakeReviews(tokens={"t": User("prometheus")}, rule=lambda spec: True)
    server = HealthServer(secure(reviews), live=lambda: (True, {}), ready=lambda: (True, {}),
                          metrics=m.exposition)
    with running(server):
        request = urllib.request.Request(f"https://127.0.0.1:{server.port}/metrics",
                                         headers={"Authorization": "Bearer t"})
        with urllib.request.urlopen(request, timeout=5, context=client_context()) as r:
            content_type = r.headers["Content-Type"]
            body = r.read().decode()
    assert content_type.startswith("text/plain")
    assert 'leader_election_master_status{name="lease"} 1.0' in body
    assert "process_resident_memory_bytes" in body
    assert "_created" not in body


def test_each_metrics_instance_has_its_own_registry() -> None:
    a, b = Metrics(), Metrics()
    a.preemption_attempts.inc()
    assert sample(a, "scheduler_preemption_attempts_total") == 1
    assert sample(b, "scheduler_preemption_attempts_total") == 0


def test_concurrent_recording_loses_no_increment() -> None:
    m = Metrics()
    profile = m.profile(SCHED)

    def record(_: Any = None) -> None:
        for _ in range(1000):
            profile.attempt("scheduled", 0.001)
            m.queue_incoming_pod("active", "NodeAdd")

    threads = [threading.Thread(target=record) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert attempts(m, "scheduled") == 4000
    assert sample(m, "scheduler_queue_incoming_pods_total", queue="active", event="NodeAdd") == 4000


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(1, {"1.0": 1, "2.0": 1, "+Inf": 1}, id="on a bound: counted in it (le)"),
        pytest.param(3, {"1.0": 0, "2.0": 0, "4.0": 1, "+Inf": 1}, id="between bounds"),
        pytest.param(100, {"64.0": 0, "+Inf": 1}, id="above the last bound: only +Inf"),
    ],
)
def test_histogram_buckets_are_cumulative_upper_bounds(value: int, want: dict[str, int]) -> None:
    m = Metrics()
    m.preemption_victims.observe(value)
    for le, count in want.items():
        assert sample(m, "scheduler_preemption_victims_bucket", le=le) == count, le
    assert sample(m, "scheduler_preemption_victims_sum") == value


def test_unlabelled_metrics_read_zero_before_any_event() -> None:
    m = Metrics()
    assert m.registry.get_sample_value("scheduler_preemption_attempts_total") == 0
    assert m.registry.get_sample_value("scheduler_preemption_victims_count") == 0


@pytest.mark.parametrize("outcome", [BindOutcome.GONE, BindOutcome.CONFLICT, BindOutcome.FAILED])
def test_a_failed_binding_is_an_error_attempt_with_its_outcome(outcome: BindOutcome) -> None:
    h = Harness().nodes(node("n1"))
    h.ports.outcomes["a"] = [outcome]
    h.add(pod("a"))
    h.cycle()
    m = h.s.metrics
    assert attempts(m, "error") == 1
    assert attempts(m, "scheduled") == 0
    assert sample(m, "secondary_scheduler_bindings_total", outcome=outcome.value) == 1


def test_observations_racing_their_reads_are_all_counted() -> None:
    child = Observations(EXTENSION_POINT_BUCKETS)
    per_thread, threads = 5000, 4
    start = threading.Barrier(threads + 1)

    def observe() -> None:
        start.wait()
        for i in range(per_thread):
            child.observe(0.0001 * (i % 3))

    workers = [threading.Thread(target=observe) for _ in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    while any(worker.is_alive() for worker in workers):
        child.read()  # folds while appends go on
    for worker in workers:
        worker.join()
    counts, total = child.read()
    assert sum(counts) == per_thread * threads
    # 0 and 0.0001 in the first bucket (le 0.0001), 0.0002 in the second.
    assert counts[0] == sum(1 for i in range(per_thread) if i % 3 < 2) * threads
    assert counts[1] == sum(1 for i in range(per_thread) if i % 3 == 2) * threads
    assert total == pytest.approx(0.0001 * sum(i % 3 for i in range(per_thread)) * threads)


def test_cache_size_counts_nodes_pods_and_assumed_pods_at_scrape_time() -> None:
    """kubernetes-mixin's scheduler dashboard reads scheduler_cache_size{type}: a bound pod the
    watch has not confirmed yet is both a pod and an assumed pod, as in upstream's cache."""
    h = Harness().nodes(node("n1", cpu="2", memory="2Gi"), node("n2", cpu="2", memory="2Gi"))
    m = h.s.metrics

    def sizes() -> list[float]:
        return [sample(m, "scheduler_cache_size", type=t)
                for t in ("nodes", "pods", "assumed_pods")]

    h.s.refresh()
    assert sizes() == [2, 0, 0]
    h.add(pod("a", cpu="1"))
    h.cycle()
    assert sizes() == [2, 1, 1]
    bound = h.s.cache.get_pod(h.uid("a"))
    assert bound is not None
    h.observe_bound("a", bound.node_name)
    h.s.refresh()
    assert sizes() == [2, 1, 0]


def test_the_process_exports_kubernetes_build_info_with_upstreams_labels() -> None:
    """component-base metrics/prometheus/version: a constant 1 labelled by the build."""
    from importlib.metadata import version

    text = Metrics(process=True).exposition().decode()
    (line,) = [s for s in text.splitlines() if s.startswith("kubernetes_build_info{")]
    release = version("secondary-scheduler")
    major, minor = release.split(".")[:2]
    for label in (f'major="{major}"', f'minor="{minor}"', f'git_version="v{release}"',
                  'git_commit=', 'git_tree_state=', 'build_date=', 'go_version=',
                  'compiler="cpython"', 'platform="linux/'):
        assert label in line
    assert line.endswith(" 1.0")
