"""delayCacheUntilActive (KubeSchedulerConfiguration v1): with leader election on, a standby
lists nothing until it leads, as kube-scheduler starts its informers in OnStartedLeading
(cmd/kube-scheduler/app/server.go, Run); without it, the standby's cache fills at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from scheduler.config import parse_config
from scheduler.operator.app import Options, SchedulerApp
from scheduler.operator.serving.options import ServingOptions
from scheduler.plugins.registry import default_registry
from tests.operator.fake_api import FakeApi, Reply
from tests.operator.test_explain_cli import write_kubeconfig

NAMESPACES = "/api/v1/namespaces"


class LeadershipGate(threading.Event):
    """The app's leading flag, telling when something first waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


def standby(api: FakeApi, tmp_path: Path, *, delay: bool) -> tuple[SchedulerApp, LeadershipGate]:
    for path in (NAMESPACES, "/apis/scheduling.k8s.io/v1/priorityclasses",
                 "/apis/policy/v1/poddisruptionbudgets"):
        api.on("GET", path, Reply(200, {"items": [], "metadata": {"resourceVersion": "1"}}))
    config = parse_config({"leaderElection": {"leaderElect": True},
                           "delayCacheUntilActive": delay}, default_registry())
    options = Options(kubeconfig=str(write_kubeconfig(tmp_path, api.url)),
                      serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                             insecure=True),
                      single_cpu=False)
    app = SchedulerApp(config, default_registry(), options)
    gate = app._leading = LeadershipGate()
    return app, gate


def sync_in_background(app: SchedulerApp) -> threading.Thread:
    thread = threading.Thread(target=app._sync, daemon=True)
    thread.start()
    return thread


def stop(app: SchedulerApp, thread: threading.Thread) -> None:
    app._stop.set()
    for reflector in app.reflectors:
        reflector.stop()
    thread.join(timeout=10)


def listed(api: FakeApi) -> threading.Event:
    done = threading.Event()

    def poll() -> None:
        while not api.calls("GET", NAMESPACES):
            if done.wait(0.01):
                return
        done.set()

    threading.Thread(target=poll, daemon=True).start()
    return done


def test_a_standby_lists_nothing_until_it_leads(api: FakeApi, tmp_path: Path) -> None:
    app, gate = standby(api, tmp_path, delay=True)
    thread = sync_in_background(app)
    try:
        assert gate.waited.wait(10)
        assert api.requests == []
        gate.set()  # leadership acquired
        assert listed(api).wait(10)
    finally:
        stop(app, thread)


def test_without_it_a_standby_fills_its_cache_at_once(api: FakeApi, tmp_path: Path) -> None:
    app, gate = standby(api, tmp_path, delay=False)
    thread = sync_in_background(app)
    try:
        assert listed(api).wait(10)
        assert not gate.is_set()
    finally:
        stop(app, thread)


@pytest.mark.parametrize(("leader_elect", "want"), [(True, True), (False, False)])
def test_it_applies_only_with_leader_election(api: FakeApi, tmp_path: Path,
                                              leader_elect: bool, want: bool) -> None:
    """Upstream: "If this is true and leader election is enabled"."""
    config = parse_config({"leaderElection": {"leaderElect": leader_elect},
                           "delayCacheUntilActive": True}, default_registry())
    options = Options(kubeconfig=str(write_kubeconfig(tmp_path, api.url)),
                      serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                             insecure=True),
                      single_cpu=False)
    assert SchedulerApp(config, default_registry(), options).delay_cache is want
