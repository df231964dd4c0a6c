"""Our Event series against the real kube-apiserver: the series PATCH is accepted, counts
reach the stored Event, and an Event deleted meanwhile is created again with its series.
(The writer is ours, not the scheduler's decisions: the same with any E2E_SCHEDULER.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.conftest import Env
from e2e.kube import EVENTS_GROUP, ns_path
from scheduler.operator.event_series import FINISH_SECONDS, EventRecorder
from scheduler.operator.kubeapi import KubeApi, api_client_from
from scheduler.testing import ManualClock


def event(env: Env, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": env.ns},
        "eventTime": "2026-11-25T10:00:00.000000Z", "reportingController": "e2e-series",
        "reportingInstance": "e2e-series-host", "action": "Scheduling",
        "reason": "FailedScheduling", "type": "Warning", "note": "0/1 nodes are available",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": env.ns, "name": "web",
                      "uid": "00000000-0000-0000-0000-000000000001",
                      "resourceVersion": "42"},
    }


def test_repeats_become_a_series_on_the_api_server(env: Env, kubeconfig: Path) -> None:
    clock = ManualClock()
    recorder = EventRecorder(KubeApi(api_client_from(str(kubeconfig))), clock=clock)
    path = ns_path(env.ns, "events", "web.1", group=EVENTS_GROUP)
    recorder.record(event(env, "web.1"))
    assert "series" not in env.kube.get(path)
    recorder.record(event(env, "web.2"))
    stored = env.kube.get(path)
    assert stored["series"]["count"] == 2 and stored["series"]["lastObservedTime"]
    assert env.kube.get(ns_path(env.ns, "events", "web.2", group=EVENTS_GROUP)) is None
    recorder.record(event(env, "web.3"))
    assert env.kube.get(path)["series"]["count"] == 2  # counted in memory only
    env.kube.delete(path)
    recorder.maintain()  # not due yet: nothing written
    assert env.kube.get(path) is None
    clock.advance(FINISH_SECONDS)  # the series has ended: its final count, created again
    recorder.maintain()
    assert env.kube.get(path)["series"]["count"] == 3
