"""The Scheduler with its real threads: the scheduling loop, the binding pool and the watch.

What matters here is the threading contract of ``scheduler/scheduler.py``: watch events never
wait for a scheduling cycle (the intake only touches the inbox and the thread-safe queue),
binding runs beside scheduling, and ``stop`` lets in-flight bindings finish.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from scheduler.binding_workers import BINDING_BATCH, BINDING_HOLD_SECONDS
from scheduler.cycle import schedule_one
from scheduler.framework.interface import Code, CycleState, FilterResult, NodeView, Status
from scheduler.framework.ports import BindOutcome
from scheduler.intake import ADDED, MODIFIED
from scheduler.model.pod import PodInfo
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.scheduler import GC_THRESHOLDS, settle_heap
from scheduler.testing import node, pod
from tests.test_cycle import NO_PREEMPTION, FakeFilter, FakePermit, Harness, only


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


class FakeWatch:
    """One thread delivering watch events to the intake, as the operator's pod watch does."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.events: queue.Queue[tuple[str, str, dict[str, Any]] | None] = queue.Queue()
        self.delivered = 0
        self.thread = threading.Thread(target=self._run, name="fake-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self.events.get()) is not None:
            kind, event, obj = item
            if kind == "pod":
                self.h.intake.on_pod(event, obj)
            else:
                self.h.intake.on_node(event, obj)
            self.delivered += 1

    def pod(self, event: str, obj: dict[str, Any]) -> None:
        self.events.put(("pod", event, obj))

    def node(self, event: str, obj: dict[str, Any]) -> None:
        self.events.put(("node", event, obj))

    def close(self) -> None:
        self.events.put(None)
        self.thread.join(10)


@pytest.fixture
def running() -> Iterator[Callable[..., Harness]]:
    started: list[Harness] = []

    def start(*args: Any, **kwargs: Any) -> Harness:
        kwargs["binding"] = "threads"
        h = Harness(*args, **kwargs)
        started.append(h)
        return h

    yield start
    for h in started:
        h.s.stop(timeout=5)


class BlockingFilter:
    """A Filter that holds the scheduling thread, for the pods named, until released."""

    name = "BlockingFilter"

    def __init__(self, *names: str) -> None:
        self.names = set(names)
        self.entered = threading.Event()
        self.release = threading.Event()

    def filter(self, state: CycleState, p: PodInfo, nodes: NodeView) -> FilterResult:
        if p.name in self.names:
            self.entered.set()
            assert self.release.wait(30)
        return FilterResult.all_pass(len(nodes))


def test_watch_events_are_taken_while_a_cycle_and_a_binding_hang(
    running: Callable[..., Harness],
) -> None:
    blocking = BlockingFilter("second")
    h = running(only(blocking), plugins=[blocking])
    h.nodes(node("n1", cpu="64", pods=500))
    h.ports.gate = threading.Event()  # the API does not answer binds yet
    h.s.start()
    h.intake.on_pod(ADDED, pod("first"))
    assert wait_until(lambda: h.s.bindings.in_flight() == 1), "first never reached its bind"
    h.intake.on_pod(ADDED, pod("second"))
    assert blocking.entered.wait(10), "the scheduling thread never started second's cycle"

    # The scheduling thread is stuck inside a cycle and a binding thread inside a bind; the
    # watch must be neither: its calls all return while both are still held.
    delivered = threading.Event()

    def watch() -> None:
        for i in range(200):
            h.intake.on_pod(ADDED, pod(f"p{i}"))
        for i in range(2, 20):
            h.intake.on_node(ADDED, node(f"n{i}"))
        h.intake.on_node(MODIFIED, node("n1", cpu="64", pods=500, labels={"x": "y"}))
        delivered.set()

    threading.Thread(target=watch, daemon=True).start()
    assert delivered.wait(30), "intake calls waited for the cycle or the binding"
    assert not blocking.release.is_set() and not h.ports.gate.is_set()
    assert len(h.s.queue) == 200 and len(h.s.inbox) > 0
    assert h.ports.scheduled_calls == []

    blocking.release.set()
    h.ports.gate.set()
    assert wait_until(lambda: len(h.ports.scheduled_calls) == 202)


def test_a_long_burst_is_scheduled_while_events_keep_flowing(
    running: Callable[..., Harness],
) -> None:
    h = running(NO_PREEMPTION, workers=8)
    watch = FakeWatch(h)
    objects: dict[str, dict[str, Any]] = {}

    def echo(p: PodInfo, node_name: str, outcome: BindOutcome) -> None:
        if outcome is BindOutcome.BOUND:  # the watch reports the binding, a little later
            bound = dict(objects[p.name], spec=dict(objects[p.name]["spec"], nodeName=node_name))
            bound["metadata"] = dict(bound["metadata"], resourceVersion="2")
            watch.pod(MODIFIED, bound)

    h.ports.on_bind = echo
    for i in range(20):
        watch.node(ADDED, node(f"n{i:02d}", cpu="16", pods=40))
    h.s.start()
    total = 600
    for i in range(total):
        objects[f"p{i}"] = pod(f"p{i}", cpu="500m", memory="64Mi")
        watch.pod(ADDED, objects[f"p{i}"])
        if i % 100 == 0:
            watch.node(MODIFIED, node(f"n{i // 100:02d}", cpu="16", pods=40, labels={"i": str(i)}))
    try:
        assert wait_until(lambda: len(h.ports.scheduled_calls) == total, timeout=60), (
            f"{len(h.ports.scheduled_calls)} of {total} pods bound")
        assert wait_until(lambda: watch.events.empty())
    finally:
        watch.close()
    h.s.stop(timeout=10)

    keys = [k for k, _ in h.ports.scheduled_calls]
    assert len(set(keys)) == total, "every pod bound exactly once"
    assert h.ports.failures == []
    h.s.refresh()  # the scheduling thread is gone: the cache is ours now
    assert h.s.cache.assumed_uids() == set()
    per_node: dict[str, int] = {}
    for _, n in h.ports.scheduled_calls:
        per_node[n] = per_node.get(n, 0) + 1
    assert max(per_node.values()) <= 32, "no node got more than its 16 cpu"
    assert len(h.s.cache.pod_uids()) == total


def test_bindings_wait_for_each_other_while_more_pods_are_ready(
    running: Callable[..., Harness],
) -> None:
    # Cycles run by hand (no loop): a batch and 4 more pods ready, so the batch's first
    # bindings are held, its last hands them all over together; the last 4 go once nothing
    # is ready any more.
    batch = BINDING_BATCH
    h = running(NO_PREEMPTION, workers=4)
    h.nodes(node("n1", cpu=str(2 * batch)))
    for i in range(batch + 4):
        h.add(pod(f"p{i:03d}"))
    for _ in range(batch - 1):
        assert h.cycle()
    assert h.s.bindings.in_flight() == batch - 1, "held ones count as in flight"
    time.sleep(0.05)
    assert h.ports.binds == [], "held while other pods are ready"
    assert h.cycle()
    assert wait_until(lambda: len(h.ports.binds) == batch)
    for _ in range(3):
        assert h.cycle()
    time.sleep(0.05)
    assert len(h.ports.binds) == batch
    assert h.cycle(), "the last ready pod"
    assert wait_until(lambda: len(h.ports.binds) == batch + 4), "nothing ready: released at once"
    assert wait_until(lambda: h.s.bindings.in_flight() == 0)


def test_a_held_binding_waits_at_most_a_few_milliseconds(
    running: Callable[..., Harness],
) -> None:
    h = running(NO_PREEMPTION, workers=4)
    h.nodes(node("n1", cpu="32"))
    for i in range(4):
        h.add(pod(f"p{i}"))
    assert h.cycle() and h.cycle()
    time.sleep(0.05)
    assert h.ports.binds == []
    h.clock.advance(BINDING_HOLD_SECONDS + 0.001)
    assert h.cycle()
    assert wait_until(lambda: len(h.ports.binds) == 3), "the oldest was held long enough"


def test_stop_hands_over_the_held_bindings(running: Callable[..., Harness]) -> None:
    h = running(NO_PREEMPTION, workers=4)
    h.nodes(node("n1", cpu="32"))
    h.add(pod("first"), pod("second"))
    assert h.cycle()
    assert h.s.bindings.in_flight() == 1 and h.ports.binds == []
    h.s.stop(timeout=5)
    assert [k for k, _ in h.ports.binds] == ["default/first"]


def test_stop_lets_in_flight_bindings_finish(running: Callable[..., Harness]) -> None:
    h = running(NO_PREEMPTION, workers=4)
    h.nodes(node("n1", cpu="32"))
    h.ports.gate = threading.Event()
    h.s.start()
    for i in range(6):
        h.intake.on_pod(ADDED, pod(f"p{i}"))
    assert wait_until(lambda: h.s.bindings.in_flight() == 6)

    stopped = threading.Event()

    def stop() -> None:
        h.s.stop(timeout=5)
        stopped.set()

    stopper = threading.Thread(target=stop)
    stopper.start()
    assert not stopped.wait(0.3), "stop returned while bindings were in flight"
    assert not h.s.is_running(), "the scheduling loop stops at once"
    h.ports.gate.set()
    assert stopped.wait(10)
    stopper.join()
    assert sorted(k for k, _ in h.ports.binds) == [f"default/p{i}" for i in range(6)]
    assert len(h.ports.scheduled_calls) == 6
    assert h.s.bindings.in_flight() == 0


def test_stop_does_not_wait_forever_on_a_hung_binding(running: Callable[..., Harness]) -> None:
    h = running(NO_PREEMPTION, workers=2)
    h.nodes(node("n1", cpu="32"))
    h.ports.gate = threading.Event()  # the API never answers the bind
    h.s.start()
    h.intake.on_pod(ADDED, pod("hung"))
    assert wait_until(lambda: h.s.bindings.in_flight() == 1)
    stopper = threading.Thread(target=h.s.stop, kwargs={"timeout": 0.2})
    stopper.start()
    stopper.join(10)
    assert not stopper.is_alive(), "stop outlived its timeout waiting on a hung bind"
    h.ports.gate.set()


def test_stop_wakes_an_idle_loop(running: Callable[..., Harness]) -> None:
    h = running(NO_PREEMPTION)
    # A loop waiting for a pod with no timeout at all: only stop can wake it.
    idle = threading.Thread(target=schedule_one, args=(h.s, None), daemon=True)
    idle.start()
    h.s.stop(timeout=5)
    idle.join(10)
    assert not idle.is_alive()


def test_the_loop_survives_a_failing_port(running: Callable[..., Harness]) -> None:
    h = running(NO_PREEMPTION)
    h.nodes(node("n1", cpu="1"))
    failing = h.ports.failed
    calls: list[str] = []

    def flaky_failed(p: PodInfo, reason: str, message: str, nominated: str | None) -> None:
        calls.append(p.name)
        if p.name == "too-big":
            raise ConnectionError("API server unreachable")
        failing(p, reason, message, nominated)

    h.ports.failed = flaky_failed  # type: ignore[method-assign,assignment]
    h.s.start()
    h.intake.on_pod(ADDED, pod("too-big", cpu="2"))
    assert wait_until(lambda: "too-big" in calls)
    h.intake.on_pod(ADDED, pod("fits", cpu="500m"))
    assert wait_until(lambda: len(h.ports.scheduled_calls) == 1)
    assert h.ports.scheduled_calls == [("default/fits", "n1")]
    # Requeued before the report failed: waiting in the pool, not lost.
    assert h.where("too-big") == UNSCHEDULABLE


def test_a_permit_wait_that_times_out_is_rejected(running: Callable[..., Harness]) -> None:
    permit = FakePermit(status=Status(Code.WAIT), timeout=0.2)
    h = running(only(permit), plugins=[permit])
    h.nodes(node("n1"))
    h.s.start()
    h.intake.on_pod(ADDED, pod("p"))
    assert wait_until(lambda: bool(h.ports.failures))
    assert h.ports.failures_of("p") == [(
        "Unschedulable",
        "0/1 nodes are available: 1 rejected due to timeout after waiting 200ms at plugin "
        "FakePermit.", "")]
    assert h.ports.binds == []


class AlwaysNo:
    """A Filter plugin without EnqueueExtensions: it does not say which events may help."""

    name = "AlwaysNo"

    def __init__(self) -> None:
        self.allow = False

    def filter(self, state: CycleState, p: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        if not self.allow:
            result.reject(np.ones(len(nodes), dtype=np.bool_), Code.UNSCHEDULABLE, "no")
        return result


def test_a_plugin_without_enqueue_extensions_hears_every_event() -> None:
    """Upstream's defaultEnqueueExtension: such a plugin's rejections are retried on any
    cluster event, not only after the five-minute leftover flush."""
    plugin = AlwaysNo()
    h = Harness(only(plugin), plugins=[plugin])
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    assert h.where("p") == UNSCHEDULABLE
    plugin.allow = True
    h.intake.on_node(MODIFIED, node("n1", labels={"anything": "changed"}))
    assert h.where("p") in (ACTIVE, BACKOFF)
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]


def test_a_plugin_with_enqueue_extensions_is_moved_only_by_its_events() -> None:
    rejecting = FakeFilter("Rejecting", {"n1": Code.UNSCHEDULABLE})
    rejecting.events_to_register = lambda: []  # type: ignore[attr-defined]
    h = Harness(only(rejecting), plugins=[rejecting])
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    h.intake.on_node(MODIFIED, node("n1", labels={"anything": "changed"}))
    assert h.where("p") == UNSCHEDULABLE


def test_queueing_hints_are_those_of_the_pods_own_profile() -> None:
    """Upstream's QueueingHintMapPerProfile. Profile a adds ``pool=a`` to every pod's node
    affinity, profile b does not: a b pod waiting for a ``disk=ssd`` node must be retried when
    such a node appears, although a's NodeAffinity would say Skip for it."""
    pool_a = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}
    config = {"profiles": [
        {"schedulerName": "a",
         "pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": pool_a}}]},
        {"schedulerName": "b"},
    ]}
    h = Harness(config)
    h.nodes(node("n1"))
    h.add(pod("p", scheduler_name="b", spec={"nodeSelector": {"disk": "ssd"}}))
    h.cycle()
    assert h.where("p") == UNSCHEDULABLE
    h.intake.on_node(ADDED, node("n2", labels={"disk": "ssd"}))
    assert h.where("p") in (ACTIVE, BACKOFF)
    h.clock.advance(10)
    h.s.queue.flush_backoff_completed()
    h.cycle()
    assert h.ports.binds == [("default/p", "n2")]


def test_a_standby_keeps_its_cache_warm_and_schedules_only_once_allowed(
    running: Callable[..., Harness],
) -> None:
    h = running(NO_PREEMPTION)
    h.s.start(scheduling=False)
    h.nodes(node("n1", cpu="4"))
    h.intake.on_pod(ADDED, pod("running", cpu="1", node_name="n1"))
    h.intake.on_pod(ADDED, pod("pending", cpu="1"))
    # The loop applies the watch deltas on its own (the inbox empties) but pops nothing.
    assert wait_until(lambda: len(h.s.inbox) == 0)
    assert h.where("pending") == ACTIVE
    assert h.ports.binds == []
    assert not h.s.scheduling
    h.s.allow_scheduling()
    assert wait_until(lambda: len(h.ports.binds) == 1)
    assert h.ports.binds[0][0] == "default/pending"
    h.s.stop(timeout=5)


def test_settling_the_heap_freezes_what_is_there_and_collects_young_objects_less_often() -> None:
    thresholds = gc.get_threshold()
    try:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)  # Python's defaults
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
