"""The scheduling loop's liveness check, on a fake clock: a loop stuck in a turn fails
/healthz once LOOP_STALL_SECONDS (plus its extenders' budget) have passed."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

from scheduler.config import ExtenderConfig, default_config
from scheduler.operator.app import Options, SchedulerApp
from scheduler.operator.liveness import LOOP_STALL_SECONDS, loop_progress, loop_stall_seconds
from scheduler.operator.serving.options import ServingOptions
from scheduler.plugins.registry import default_registry
from scheduler.testing import ManualClock, node, pod, pod_info, scheduler_of
from tests.operator.fake_api import FakeApi


def wait_for(condition: threading.Event) -> None:
    assert condition.wait(5), "the loop did not get there"


def test_a_loop_stuck_in_a_turn_fails_once_the_stall_limit_has_passed() -> None:
    clock = ManualClock()
    s, _ = scheduler_of(nodes=[node("n1")], clock=clock)
    entered, release, turned = threading.Event(), threading.Event(), threading.Event()

    def stuck() -> None:  # a turn that does not end: a cycle or a refresh hanging
        entered.set()
        release.wait(10)

    s.start()
    try:
        s.inbox.put(stuck)
        wait_for(entered)
        s.queue.add(pod_info("waiting", cpu="1"))  # queued behind the stuck turn
        clock.advance(LOOP_STALL_SECONDS)
        assert loop_progress(s)[0], "at the limit, not yet"
        clock.advance(1)
        ok, detail = loop_progress(s)
        assert not ok
        assert detail["reason"] == ("the scheduling loop has not come round for 61s "
                                    "(limit 60s)")
        assert detail["pending"]["active"] == 1  # type: ignore[index]
        s.inbox.put(turned.set)
        release.set()
        wait_for(turned)
        assert loop_progress(s)[0], "it came round: healthy again"
    finally:
        release.set()
        s.stop(timeout=5)


def test_an_idle_loop_comes_round_and_stays_healthy() -> None:
    """No pods: the loop still turns every pop timeout, so the check never fires."""
    clock = ManualClock()
    s, _ = scheduler_of(nodes=[node("n1")], pods=[pod("p", cpu="1")], clock=clock)
    turned = threading.Event()
    s.start()
    try:
        clock.advance(LOOP_STALL_SECONDS * 10)
        s.inbox.put(turned.set)
        wait_for(turned)
        assert loop_progress(s)[0]
    finally:
        s.stop(timeout=5)


def test_the_limit_leaves_room_for_every_extender_call_of_a_cycle() -> None:
    slow = ExtenderConfig(url_prefix="http://e", http_timeout=30.0)
    config = replace(default_config(default_registry()), extenders=(slow, slow))
    assert loop_stall_seconds(config) == LOOP_STALL_SECONDS + 2 * 3 * 30.0


def test_healthz_fails_for_a_stuck_loop_and_for_a_leader_that_stopped_renewing(
    api: FakeApi, tmp_path: Path
) -> None:
    """What /healthz answers (the app's live check): the threads all alive, yet a loop stuck
    in a turn, or a leader whose elector stopped renewing, fails it; the latter fails /readyz
    too (kube-scheduler's server.go adds its leader-election WatchDog to both)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": api.url}}],
        "users": [{"name": "fake", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
    registry = default_registry()
    app = SchedulerApp(default_config(registry), registry,
                       Options(kubeconfig=str(kubeconfig),
                               serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                                      insecure=True),
                               single_cpu=False))
    app.reflectors = []  # no watches in this test
    app._initial_applied.set()
    entered, release = threading.Event(), threading.Event()
    app.scheduler.start(scheduling=False)
    try:
        assert app.live()[0]
        app.scheduler.inbox.put(lambda: (entered.set(), release.wait(10)))
        wait_for(entered)
        app.scheduler.loop_turned_at -= LOOP_STALL_SECONDS + 1
        ok, detail = app.live()
        assert not ok and detail["scheduling"] is True
        assert "has not come round" in str(detail["schedulingLoop"])
    finally:
        release.set()
        app.scheduler.stop(timeout=5)
    assert app.elector is not None
    app.elector._leading = True  # it acquired the lease, then its thread hung
    app.elector._observed_at = time.monotonic() - app.elector.config.lease_duration - 21
    app.scheduler.loop_turned_at = app.scheduler.clock()
    stalled = {"reason": "failed election to renew leadership on lease secondary-scheduler"}
    ok, detail = app.live()
    assert not ok and detail["leaderElection"] == stalled
    ok, detail = app.ready()  # kube-scheduler's /readyz runs the watchdog too
    assert not ok and detail["leaderElection"] == stalled
    app.ports.close()
