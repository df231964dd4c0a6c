"""ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules (resource.k8s.io/v1) come
through reflectors like pods and volumes, and the synced start waits for their listings, as
kube-scheduler's WaitForCacheSync waits for its DRA informers
(pkg/scheduler/framework/plugins/dynamicresources, informers registered in New). A kind the API
server does not serve is left out with a log line instead of holding the start forever."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from scheduler.cache.dra_objects import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from scheduler.config import parse_config
from scheduler.operator.app import (
    DRA_GROUP_VERSION,
    LIST_PATHS,
    VOLUME_PATHS,
    Options,
    SchedulerApp,
)
from scheduler.operator.serving.options import ServingOptions
from scheduler.plugins.registry import default_registry
from tests.operator.fake_api import FakeApi, Reply
from tests.operator.test_explain_cli import write_kubeconfig

SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu", "resourceVersion": "5"},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0"}]},
}
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "gpu", "resourceVersion": "6"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}


def empty_list(*items: dict[str, Any]) -> Reply:
    return Reply(200, {"items": list(items), "metadata": {"resourceVersion": "10"}})


def serve_everything_but_dra(api: FakeApi) -> None:
    for path in (*LIST_PATHS.values(), *VOLUME_PATHS.values(), "/api/v1/nodes", "/api/v1/pods"):
        api.on("GET", path, empty_list())
        api.on("WATCH", path, Reply(200, lines=[]))
    for kind in (RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES):
        api.on("WATCH", f"{DRA_GROUP_VERSION}/{kind}", Reply(200, lines=[]))


def discovery(*resources: str) -> Reply:
    return Reply(200, {"kind": "APIResourceList", "groupVersion": "resource.k8s.io/v1",
                       "resources": [{"name": r, "namespaced": r == RESOURCE_CLAIMS}
                                     for r in resources]})


@pytest.fixture
def app(api: FakeApi, tmp_path: Path) -> Iterator[SchedulerApp]:
    serve_everything_but_dra(api)
    options = Options(kubeconfig=str(write_kubeconfig(tmp_path, api.url)),
                      serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                             insecure=True),
                      single_cpu=False)
    config = parse_config({"leaderElection": {"leaderElect": False}}, default_registry())
    made = SchedulerApp(config, default_registry(), options)
    yield made
    made._stop.set()
    for reflector in made.reflectors:
        reflector.stop()
    made.scheduler.stop()  # the synced start started the scheduler's loop and queue too


def sync(app: SchedulerApp) -> None:
    """The synced start up to the marker it puts in the loop's inbox: every listing is in."""
    thread = threading.Thread(target=app._sync, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "the synced start did not finish"


def test_the_served_kinds_are_listed_and_watched_before_the_start(api: FakeApi,
                                                                   app: SchedulerApp) -> None:
    api.on("GET", DRA_GROUP_VERSION, discovery(
        RESOURCE_CLAIMS, "resourceclaims/status", RESOURCE_SLICES, DEVICE_CLASSES,
        DEVICE_TAINT_RULES, "resourceclaimtemplates"))
    for kind in (RESOURCE_CLAIMS, DEVICE_TAINT_RULES):
        api.on("GET", f"{DRA_GROUP_VERSION}/{kind}", empty_list())
    api.on("GET", f"{DRA_GROUP_VERSION}/{RESOURCE_SLICES}", empty_list(SLICE))
    api.on("GET", f"{DRA_GROUP_VERSION}/{DEVICE_CLASSES}", empty_list(DEVICE_CLASS))
    sync(app)
    names = {r.name for r in app.reflectors}
    assert {RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES} <= names
    dra = app.scheduler.dra
    assert [s.name for s in dra.slices()] == ["node-1-gpu"]
    assert list(dra.keys(DEVICE_CLASSES)) == ["gpu"]
    for kind in (RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES):
        assert api.calls("GET", f"{DRA_GROUP_VERSION}/{kind}"), kind


def test_a_kind_the_server_does_not_serve_is_skipped_with_a_log_line(api: FakeApi,
                                                                      app: SchedulerApp) -> None:
    """DeviceTaintRules with DRADeviceTaintRules off: the other kinds are watched."""
    api.on("GET", DRA_GROUP_VERSION, discovery(RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES))
    for kind in (RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES):
        api.on("GET", f"{DRA_GROUP_VERSION}/{kind}", empty_list())
    with capture_logs() as logs:
        sync(app)
    assert DEVICE_TAINT_RULES not in {r.name for r in app.reflectors}
    assert not api.calls("GET", f"{DRA_GROUP_VERSION}/{DEVICE_TAINT_RULES}")
    skipped = [e for e in logs if e["event"] == "Not watched: the API server does not serve it"]
    assert [e["resource"] for e in skipped] == [DEVICE_TAINT_RULES]


def test_without_the_group_version_no_dra_kind_is_watched(api: FakeApi,
                                                          app: SchedulerApp) -> None:
    sync(app)  # discovery answers 404
    assert not {r.name for r in app.reflectors} & {
        RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES}
    assert app.ready()[1]["listed"]


def test_a_failed_discovery_is_retried_not_taken_for_absence(
        api: FakeApi, app: SchedulerApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.operator.app.LIST_RETRY_SECONDS", 0.01)
    api.on("GET", DRA_GROUP_VERSION, Reply(503, {"kind": "Status", "code": 503}),
           discovery(RESOURCE_SLICES))
    api.on("GET", f"{DRA_GROUP_VERSION}/{RESOURCE_SLICES}", empty_list(SLICE))
    sync(app)
    assert RESOURCE_SLICES in {r.name for r in app.reflectors}
    assert [s.name for s in app.scheduler.dra.slices()] == ["node-1-gpu"]


def test_pods_are_fetched_with_the_others_but_applied_after_the_claims_they_name(
        api: FakeApi, app: SchedulerApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every listing is fetched at once, as kube-scheduler's informers start together. The
    pods' is applied last: applied first, every pending pod with claims would wait at
    PreEnqueue, and each claim of the listing would then run every such pod's queueing hint."""
    api.on("GET", DRA_GROUP_VERSION, discovery(RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES))
    for kind in (RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES):
        api.on("GET", f"{DRA_GROUP_VERSION}/{kind}", empty_list())
    applied: list[str] = []
    fetched_meanwhile: list[bool] = []
    resync_dra, resync_pods = app.intake.resync_dra_objects, app.intake.resync_pods

    def dra_listed(kind: str, items: Any) -> None:
        if kind == RESOURCE_CLAIMS:
            # Held until the pods' listing is fetched (or 2 s): fetched meanwhile, not after.
            deadline = time.monotonic() + 2
            while not api.calls("GET", "/api/v1/pods") and time.monotonic() < deadline:
                time.sleep(0.01)
            fetched_meanwhile.append(bool(api.calls("GET", "/api/v1/pods")))
        resync_dra(kind, items)
        applied.append(kind)

    def pods_listed(items: Any) -> list[str]:
        applied.append("pods")
        return resync_pods(items)

    monkeypatch.setattr(app.intake, "resync_dra_objects", dra_listed)
    monkeypatch.setattr(app.intake, "resync_pods", pods_listed)
    sync(app)
    assert fetched_meanwhile == [True]
    assert sorted(applied[:3]) == sorted([RESOURCE_CLAIMS, RESOURCE_SLICES, DEVICE_CLASSES])
    assert applied[3:] == ["pods"]
