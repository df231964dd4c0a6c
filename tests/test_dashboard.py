"""The Grafana dashboard in manifests/grafana: valid JSON, and every query reads only metrics
the scheduler exports (a renamed metric would otherwise leave a panel silently empty)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import default_config
from scheduler.framework.ports import NullPorts
from scheduler.metrics import Metrics
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler

DASHBOARD = (Path(__file__).resolve().parent.parent
             / "manifests" / "grafana" / "secondary-scheduler-dashboard.json")

# What is not a metric name in our queries: strings, label matchers, ranges, grouping
# clauses, template variables, function calls and PromQL keywords.
_NOT_NAMES = [r'"[^"]*"', r"\{[^}]*\}", r"\[[^\]]*\]", r"\b(?:by|without|on|ignoring)\s*\([^)]*\)",
              r"\$\w+"]
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right"}
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "counter": ("_total",),
             "gauge": ("",), "info": ("_info",)}


def metric_names(expr: str) -> set[str]:
    for pattern in _NOT_NAMES:
        expr = re.sub(pattern, " ", expr)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)", expr):
        if match.group(1) is None and match.group(0) not in _KEYWORDS:
            names.add(match.group(0))
    return names


def exported_names() -> set[str]:
    metrics = Metrics(process=True)
    registry = default_registry()
    Scheduler(default_config(registry), registry, binder=NullPorts(), reporter=NullPorts(),
              metrics=metrics)
    return {family.name + suffix for family in metrics.registry.collect()
            for suffix in _SUFFIXES[family.type]}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('sum by (le, result) (rate(a_bucket{job=~"$job"}[$__rate_interval]))', {"a_bucket"}),
        ("histogram_quantile(0.99, sum by (le) (rate(b_bucket[5m])))", {"b_bucket"}),
        ('max by (instance) (c{name="x"}) and on (instance) (d == 1)', {"c", "d"}),
    ],
)
def test_metric_names_are_read_out_of_promql(expr: str, want: set[str]) -> None:
    assert metric_names(expr) == want


def test_every_panel_queries_exported_metrics_only() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exported = exported_names()
    used: set[str] = set()
    for panel in panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel.get("description"), f"panel {panel['title']!r} says not what it answers"
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, (panel["title"], target["expr"])
            assert names <= exported, (panel["title"], sorted(names - exported))
            used |= names
    # The panels the README promises.
    for name in ("scheduler_schedule_attempts_total", "scheduler_pending_pods",
                 "scheduler_pod_scheduling_sli_duration_seconds_bucket",
                 "scheduler_queue_incoming_pods_total", "scheduler_preemption_attempts_total",
                 "scheduler_preemption_victims_bucket",
                 "secondary_scheduler_preemption_evictions_total", "rest_client_requests_total",
                 "rest_client_rate_limiter_duration_seconds_bucket",
                 "leader_election_master_status"):
        assert name in used, name
