"""The pod-group kinds are watched where the cluster serves them, found by discovery at start:
the Workload API's Workloads and PodGroups (scheduling.k8s.io/v1beta1, GenericWorkload) and
scheduler-plugins' Coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1, its CRD). Their
listings reach the intake before the synced start, as the other kinds'."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS, POD_GROUPS, WORKLOADS
from scheduler.config import parse_config
from scheduler.model.pod_group import COSCHEDULING, WORKLOAD_API
from scheduler.operator.app import VOLUME_PATHS, Options, SchedulerApp
from scheduler.operator.pod_group_watches import (
    discover_pod_group_paths,
    served_pod_group_paths,
)
from scheduler.operator.serving.options import ServingOptions
from scheduler.plugins.registry import default_registry
from tests.operator.fake_api import FakeApi, Reply
from tests.operator.test_explain_cli import write_kubeconfig

V1BETA1 = "/apis/scheduling.k8s.io/v1beta1"
X_V1ALPHA1 = "/apis/scheduling.x-k8s.io/v1alpha1"
EMPTY_LIST = Reply(200, {"items": [], "metadata": {"resourceVersion": "1"}})


def resources(*names: str) -> Reply:
    return Reply(200, {"kind": "APIResourceList", "resources": [{"name": n} for n in names]})


def serve_workload_api(api: FakeApi) -> None:
    api.on("GET", V1BETA1, resources("workloads", "podgroups", "podgroups/status"))


def serve_coscheduling(api: FakeApi) -> None:
    api.on("GET", X_V1ALPHA1, resources("podgroups", "podgroups/status"))


def test_both_apis_served_gives_the_three_kinds(api: FakeApi) -> None:
    serve_workload_api(api)
    serve_coscheduling(api)
    assert served_pod_group_paths(api.kube_api()) == {
        WORKLOADS: f"{V1BETA1}/workloads", POD_GROUPS: f"{V1BETA1}/podgroups",
        COSCHEDULING_POD_GROUPS: f"{X_V1ALPHA1}/podgroups"}


def test_neither_served_gives_none_to_watch(api: FakeApi) -> None:
    assert served_pod_group_paths(api.kube_api()) == {}


def test_only_the_resources_a_group_version_lists_are_watched(api: FakeApi) -> None:
    api.on("GET", V1BETA1, resources("podgroups"))
    assert served_pod_group_paths(api.kube_api()) == {POD_GROUPS: f"{V1BETA1}/podgroups"}


def test_a_failed_discovery_is_asked_again(api: FakeApi) -> None:
    api.on("GET", V1BETA1, Reply(403, {"message": "forbidden"}))
    assert served_pod_group_paths(api.kube_api()) is None


# ----------------------------------------------------------------------------- the app
def app_on(api: FakeApi, tmp_path: Path) -> SchedulerApp:
    """The app as main builds it: the kinds discovery found get their watches."""
    for path in ("/api/v1/namespaces", "/apis/scheduling.k8s.io/v1/priorityclasses",
                 "/apis/policy/v1/poddisruptionbudgets"):
        api.on("GET", path, EMPTY_LIST)
    for path in ("/api/v1/nodes", "/api/v1/pods", *VOLUME_PATHS.values()):
        api.on("GET", path, EMPTY_LIST)
        api.on("WATCH", path, Reply(200, lines=[]))
    options = Options(kubeconfig=str(write_kubeconfig(tmp_path, api.url)),
                      serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                             insecure=True),
                      single_cpu=False)
    paths = discover_pod_group_paths(str(options.kubeconfig))
    return SchedulerApp(parse_config({}, default_registry(), gang_scheduling=bool(paths)),
                        default_registry(), options, pod_group_paths=paths)


def listing(*items: dict[str, Any]) -> Reply:
    return Reply(200, {"items": list(items), "metadata": {"resourceVersion": "5"}})


def sync(app: SchedulerApp) -> None:
    """Run the start-up sync until every reflector it started has listed, then stop."""
    thread = threading.Thread(target=app._sync, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            if app.reflectors and all(r.listed.is_set() for r in app.reflectors):
                return
            time.sleep(0.01)
        raise AssertionError("the reflectors never listed")
    finally:
        app._stop.set()
        for reflector in app.reflectors:
            reflector.stop()
        thread.join(timeout=10)
        # The sync ends by starting the loop and the queue's threads: stopped here, so no
        # thread outlives the test.
        app.scheduler.stop()
        app.ports.close()


def test_served_kinds_are_listed_into_the_store_before_the_synced_start(
        api: FakeApi, tmp_path: Path) -> None:
    serve_workload_api(api)
    serve_coscheduling(api)
    group = {"metadata": {"namespace": "ml", "name": "train", "uid": "u1"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 8}}}}
    cosched = {"metadata": {"namespace": "ml", "name": "spark", "uid": "u2"},
               "spec": {"minMember": 3, "scheduleTimeoutSeconds": 10}}
    workload = {"metadata": {"namespace": "ml", "name": "train", "uid": "u3"},
                "spec": {"podGroupTemplates": [
                    {"name": "w", "schedulingPolicy": {"gang": {"minCount": 8}}}]}}
    api.on("GET", f"{V1BETA1}/podgroups", listing(group))
    api.on("GET", f"{V1BETA1}/workloads", listing(workload))
    api.on("GET", f"{X_V1ALPHA1}/podgroups", listing(cosched))
    for path in (f"{V1BETA1}/podgroups", f"{V1BETA1}/workloads", f"{X_V1ALPHA1}/podgroups"):
        api.on("WATCH", path, Reply(200, lines=[]))
    app = app_on(api, tmp_path)
    sync(app)
    assert {r.name for r in app.reflectors} >= {WORKLOADS, POD_GROUPS, COSCHEDULING_POD_GROUPS}
    store = app.scheduler.pod_groups
    train = store.get(POD_GROUPS, "ml/train")
    spark = store.get(COSCHEDULING_POD_GROUPS, "ml/spark")
    assert train is not None and train.source == WORKLOAD_API and train.min_count == 8
    assert spark is not None and spark.source == COSCHEDULING and spark.min_count == 3
    assert store.get(WORKLOADS, "ml/train") is not None


def test_the_group_cycle_reports_its_condition_through_the_api(
    api: FakeApi, tmp_path: Path
) -> None:
    """The pod-group cycle's PodGroupInitiallyScheduled condition goes to the API ports."""
    app = app_on(api, tmp_path)
    assert app.scheduler.pod_group_reporter is app.ports


def test_a_cluster_without_them_watches_none(api: FakeApi, tmp_path: Path) -> None:
    app = app_on(api, tmp_path)
    sync(app)
    assert not {r.name for r in app.reflectors} & {WORKLOADS, POD_GROUPS,
                                                   COSCHEDULING_POD_GROUPS}
    assert api.calls("GET", f"{V1BETA1}/podgroups") == []


def test_main_puts_gang_scheduling_in_the_default_profile_where_pod_groups_are_served(
        api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As kube-scheduler's GenericWorkload gate appends GangScheduling to the default
    plugins (pkg/scheduler/apis/config/v1/default_plugins.go)."""
    from scheduler.operator import main as entry

    serve_workload_api(api)
    built: list[tuple[Any, Any]] = []

    class BuiltError(Exception):
        pass

    def app(config: Any, registry: Any, options: Any, *, pod_group_paths: Any) -> None:
        built.append((config, pod_group_paths))
        raise BuiltError

    monkeypatch.setattr(entry, "SchedulerApp", app)
    kubeconfig = write_kubeconfig(tmp_path, api.url)
    with pytest.raises(BuiltError):
        entry.main(["--log-format", "json", "--kubeconfig", str(kubeconfig)])
    ((config, paths),) = built
    assert set(paths) == {WORKLOADS, POD_GROUPS}
    assert [ref.name for ref in config.profiles[0].multi_point][-1] == "GangScheduling"


def test_without_pod_groups_the_default_profile_has_no_gang_scheduling(
        api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.operator import main as entry

    built: list[Any] = []

    class BuiltError(Exception):
        pass

    def app(config: Any, registry: Any, options: Any, *, pod_group_paths: Any) -> None:
        built.append(config)
        raise BuiltError

    monkeypatch.setattr(entry, "SchedulerApp", app)
    with pytest.raises(BuiltError):
        entry.main(["--log-format", "json", "--kubeconfig",
                    str(write_kubeconfig(tmp_path, api.url))])
    assert "GangScheduling" not in [ref.name for ref in built[0].profiles[0].multi_point]
