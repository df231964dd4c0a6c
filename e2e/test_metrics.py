"""``/metrics`` of the running scheduler after a placement, an unschedulable pod and a
preemption: kube-scheduler's metric names, labels and counts.

The scheduler is shared by the session, so every count is a difference between a scrape
before and one after. Upstream kube-scheduler passes this test too (its ``/metrics`` is
HTTPS; both are scraped with the suite's admin client certificate); the evictions counter is
ours only (kube-scheduler deletes its victims and has no such metric).
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2e.conftest import Env, ReferenceScheduler
from e2e.kube import SCHEDULER_NAME, secure_get, wait_until

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(env: Env) -> Samples:
    """As the suite's admin user (its client certificate; system:masters may get any path)."""
    base = env.scheduler.url
    if base is None:
        pytest.skip("the deployed scheduler's port is not reachable from the test")
    status, body = secure_get(f"{base}/metrics", kube=env.kube)
    assert status == 200, body
    text = body.decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_metrics_count_placements_failures_and_preemptions(env: Env) -> None:
    (node,) = env.nodes("n", 1, cpu="2", memory="8Gi")
    low = env.priority_class("low", 10)
    high = env.priority_class("high", 1000)
    before = scrape(env)

    env.create_pod("victim", cpu="1500m", priority_class=low, grace=0)
    env.wait_bound("victim")
    env.create_pod("too-big", cpu="16", priority_class=low)
    env.wait_unschedulable("too-big")
    env.create_pod("preemptor", cpu="1500m", priority_class=high)
    assert env.wait_bound("preemptor", timeout=60) == node

    def settled() -> Samples | None:
        # The SLI and attempts are recorded after the binding returns; scrape until both
        # bindings are in.
        after = scrape(env)
        scheduled = delta(before, after, "scheduler_schedule_attempts_total",
                          result="scheduled", profile=SCHEDULER_NAME)
        return after if scheduled >= 2 else None

    after = wait_until(settled, 30, "two scheduled attempts on /metrics", diagnose=env.diagnose)

    def d(name: str, **labels: str) -> float:
        return delta(before, after, name, **labels)

    assert d("scheduler_schedule_attempts_total", result="scheduled",
             profile=SCHEDULER_NAME) == 2
    # too-big at least once, the preemptor once before its victim was gone.
    assert d("scheduler_schedule_attempts_total", result="unschedulable",
             profile=SCHEDULER_NAME) >= 2
    assert d("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled",
             profile=SCHEDULER_NAME) == 2
    assert d("scheduler_pod_scheduling_sli_duration_seconds_count") == 2
    assert d("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") >= 1
    assert d("scheduler_queue_incoming_pods_total", queue="active",
             event="UnscheduledPodAdd") >= 3
    assert d("scheduler_queue_incoming_pods_total", event="ScheduleAttemptFailure") >= 2
    assert d("scheduler_preemption_attempts_total") >= 1
    assert d("scheduler_preemption_victims_count") >= 1
    assert d("scheduler_preemption_victims_sum") >= 1
    assert d("scheduler_framework_extension_point_duration_seconds_count",
             extension_point="Bind", status="Success", profile=SCHEDULER_NAME) == 2
    # Both bindings are POSTs answered 201 Created.
    assert d("rest_client_requests_total", code="201", method="POST") >= 2
    # too-big is still waiting, blamed on NodeResourcesFit.
    pending = sum(value(after, "scheduler_pending_pods", queue=q)
                  for q in ("active", "backoff", "unschedulable"))
    assert pending >= 1
    assert value(after, "scheduler_unschedulable_pods", plugin="NodeResourcesFit",
                 profile=SCHEDULER_NAME) >= 1
    # Upstream's buckets: 15 bounds from 1 ms for attempts, 12 from 0.1 ms per extension
    # point, 20 from 10 ms for the SLI (plus +Inf each).
    for name, bounds in (("scheduler_scheduling_attempt_duration_seconds", 16),
                         ("scheduler_framework_extension_point_duration_seconds", 13),
                         ("scheduler_pod_scheduling_sli_duration_seconds", 21)):
        les = {dict(ls)["le"] for (n, ls) in after if n == f"{name}_bucket"}
        assert len(les) == bounds, (name, sorted(les))
    if not isinstance(env.scheduler, ReferenceScheduler):
        assert d("secondary_scheduler_preemption_evictions_total", outcome="Evicted") == 1
        assert d("secondary_scheduler_bindings_total", outcome="Bound") == 2

