"""The scheduling cycle (upstream ``schedule_one.go``), driven through fake Binder/Reporter ports.

The facts come from upstream's ``schedule_one_test.go`` (TestSchedulerScheduleOne,
TestSchedulerSchedulePod, TestFindFitAllError/SomeError, TestNumFeasibleNodesToFind,
TestFairEvaluationForNodes, Test_SelectHost, TestPreferNominatedNodeFilterCallCounts) and the
failure handling of ``handleSchedulingFailure``. The helpers at the top are shared with
``tests/test_intake.py``, ``tests/test_scheduler.py`` and ``tests/framework/test_runtime.py``.
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from scheduler.config import default_config, parse_config
from scheduler.cycle import (
    NO_NODES_AVAILABLE,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    Failure,
    find_nodes_that_fit,
    num_feasible_nodes_to_find,
    schedule_one,
    schedule_pod,
    select_host,
)
from scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    IntArray,
    NodeView,
    PermitDecision,
    PreFilterResult,
    Status,
)
from scheduler.framework.ports import BindOutcome, BindResult
from scheduler.framework.registry import PluginSpec, Registry, points_of
from scheduler.intake import ADDED, DELETED, MODIFIED, Intake
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.scheduler import Scheduler
from scheduler.testing import node, pod
from tests.plugins.test_default_preemption import FakeEvictor
from tests.queue.fakes import FakeClock

SCHED = "secondary-scheduler"
# No PostFilter plugin at all (DynamicResources has one too).
NO_PREEMPTION = {"profiles": [{"plugins": {"multiPoint": {
    "disabled": [{"name": "DefaultPreemption"}, {"name": "DynamicResources"}]}}}]}
ERR_REASON_FAKE = "Nodes failed the fake plugin"  # upstream tf.ErrReasonFake


# -- fake ports ------------------------------------------------------------------------------
class RecordingPorts:
    """A Binder and a Reporter that record every call.

    ``outcomes[pod name]`` lists the bind outcomes to return, in order (then BOUND).
    ``gate``, when set, makes every bind wait for it (a slow API server).
    ``on_bind`` is called after each bind with the outcome (e.g. to echo the watch event).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.binds: list[tuple[str, str]] = []
        self.scheduled_calls: list[tuple[str, str]] = []
        self.failures: list[tuple[str, str, str, str | None]] = []
        self.expected: list[tuple[str, str]] = []
        self.outcomes: dict[str, list[BindOutcome]] = {}
        self.gate: threading.Event | None = None
        self.on_bind: Callable[[PodInfo, str, BindOutcome], None] | None = None

    def bind(self, pod: PodInfo, node: str) -> BindResult:
        if self.gate is not None:
            assert self.gate.wait(30), "the bind gate was never opened"
        with self.lock:
            planned = self.outcomes.get(pod.name)
            outcome = planned.pop(0) if planned else BindOutcome.BOUND
            self.binds.append((pod.key, node))
        if self.on_bind is not None:
            self.on_bind(pod, node, outcome)
        messages = {
            BindOutcome.BOUND: "",
            BindOutcome.GONE: f'pods "{pod.name}" not found',
            BindOutcome.CONFLICT: f'Operation cannot be fulfilled on pods/binding "{pod.name}"',
            BindOutcome.FAILED: "500: etcdserver: request timed out",
        }
        return BindResult(outcome, messages[outcome])

    def expecting(self, pod: PodInfo, node: str) -> None:
        with self.lock:
            self.expected.append((pod.key, node))

    def scheduled(self, pod: PodInfo, node: str) -> None:
        with self.lock:
            self.scheduled_calls.append((pod.key, node))

    def failed(
        self, pod: PodInfo, reason: str, message: str, nominated_node: str | None
    ) -> None:
        with self.lock:
            self.failures.append((pod.key, reason, message, nominated_node))

    def failures_of(
        self, name: str, namespace: str = "default"
    ) -> list[tuple[str, str, str | None]]:
        key = f"{namespace}/{name}"
        with self.lock:
            return [(r, m, n) for k, r, m, n in self.failures if k == key]


# -- fake plugins (upstream's framework/testing/framework/fake_plugins.go) --------------------
class FakeFilter:
    """Rejects the nodes named in ``codes`` with "injecting failure for pod <name>"."""

    def __init__(self, name: str = "FakeFilter", codes: Mapping[str, Code] | None = None,
                 reason: str | None = None) -> None:
        self.name = name
        self.codes = dict(codes or {})
        self.reason = reason
        self.calls: list[list[str]] = []

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        names = nodes.names()
        self.calls.append(names)
        result = FilterResult.all_pass(len(nodes))
        reason = self.reason or f"injecting failure for pod {pod.name}"
        for code in sorted(set(self.codes.values())):
            mask = np.asarray([self.codes.get(n) is code for n in names], dtype=np.bool_)
            result.reject(mask, code, reason)
        return result


class MatchFilter:
    """Passes only the node named like the pod."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        mask = np.asarray([n != pod.name for n in nodes.names()], dtype=np.bool_)
        result.reject(mask, Code.UNSCHEDULABLE, ERR_REASON_FAKE)
        return result


class RaisingFilter:
    name = "RaisingFilter"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        raise RuntimeError("plugin bug")


class FakePreFilter:
    def __init__(self, name: str, result: Iterable[str] | None = None,
                 status: Status = SUCCESS) -> None:
        self.name = name
        self.result = None if result is None else PreFilterResult(frozenset(result))
        self.status = status
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Any) -> tuple[
            PreFilterResult | None, Status]:
        self.calls += 1
        return self.result, self.status


class NumericScore:
    """Scores a node by its name read as a number (upstream newNumericMapPlugin)."""

    name = "NumericMap"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        return np.asarray([int(n) for n in nodes.names()], dtype=np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


class EqualScore:
    name = "EqualPrioritizer"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        return np.ones(len(nodes), dtype=np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


class PreferNode:
    """Scores ``node`` 100 and every other node 0."""

    def __init__(self, node: str, name: str = "PreferNode") -> None:
        self.name = name
        self.node = node

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        return np.asarray([100 if n == self.node else 0 for n in nodes.names()], dtype=np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


class RecordingReserve:
    """Records Reserve/Unreserve; answers ``status`` to Reserve."""

    def __init__(self, name: str = "RecordingReserve", status: Status = SUCCESS,
                 log: list[tuple[str, str, str]] | None = None, raises: bool = False) -> None:
        self.name = name
        self.status = status
        self.raises = raises
        self.log = log if log is not None else []

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.log.append((f"reserve:{self.name}", pod.name, node))
        if self.raises:
            raise RuntimeError("reserve bug")
        return self.status

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.log.append((f"unreserve:{self.name}", pod.name, node))


class FakePermit:
    def __init__(self, name: str = "FakePermit", status: Status = SUCCESS,
                 timeout: float = 0.0) -> None:
        self.name = name
        self.status = status
        self.timeout = timeout

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision:
        return PermitDecision(self.status, self.timeout)


class FakePreBind:
    def __init__(self, name: str = "FakePreBind", status: Status = SUCCESS) -> None:
        self.name = name
        self.status = status

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return self.status


# -- the harness -----------------------------------------------------------------------------
def registry_with(*plugins: Any) -> Registry:
    """The default registry plus ``plugins`` (instances), each under its own name."""
    registry = default_registry()
    for plugin in plugins:
        registry.register(PluginSpec(
            name=plugin.name, factory=_returning(plugin), points=points_of(plugin)))
    return registry


def _returning(plugin: Any) -> Callable[[Mapping[str, Any], Any], Any]:
    return lambda args, handle: plugin


def only(*plugins: Any, weights: Mapping[str, int] | None = None) -> dict[str, Any]:
    """A profile with PrioritySort, DefaultBinder and ``plugins`` (by name) at their points."""
    weights = weights or {}
    enabled = [{"name": "PrioritySort"}, *(
        {"name": p.name, "weight": weights.get(p.name, 0)} for p in plugins
    ), {"name": "DefaultBinder"}]
    return {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "*"}],
                                                     "enabled": enabled}}}]}


@dataclass
class Harness:
    """A Scheduler with recording ports, a fake clock and the watch intake.

    ``binding="sync"`` runs binding cycles inline (deterministic), ``"deferred"`` keeps them
    until :meth:`run_bindings`, ``"threads"`` uses the scheduler's real pool.
    """

    config: Mapping[str, Any] | None = None
    plugins: Sequence[Any] = ()
    binding: str = "sync"
    seed: int = 1
    workers: int = 4
    ports: RecordingPorts = field(default_factory=RecordingPorts)
    clock: FakeClock = field(default_factory=FakeClock)

    def __post_init__(self) -> None:
        registry = registry_with(*self.plugins)
        cfg = parse_config(dict(self.config), registry) if self.config else default_config(
            registry)
        self.s = Scheduler(cfg, registry, binder=self.ports, reporter=self.ports,
                           clock=self.clock, seed=self.seed, binding_workers=self.workers)
        self.intake = Intake(self.s)
        self.objects: dict[str, dict[str, Any]] = {}
        self.deferred: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        if self.binding == "sync":
            self.s.submit_binding = lambda fn, *args: fn(*args)  # type: ignore[method-assign]
        elif self.binding == "deferred":
            self.s.submit_binding = (  # type: ignore[method-assign]
                lambda fn, *args: self.deferred.append((fn, args)))

    # cluster objects, through the watch intake
    def nodes(self, *objs: Mapping[str, Any]) -> Harness:
        for obj in objs:
            self.intake.on_node(ADDED, obj)
        return self

    def add(self, *objs: dict[str, Any]) -> Harness:
        for obj in objs:
            self.objects[obj["metadata"]["name"]] = obj
            self.intake.on_pod(ADDED, obj)
        return self

    def update(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        obj = copy.deepcopy(self.objects[name])
        change(obj)
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta.get("resourceVersion", "1")) + 1)
        self.objects[name] = obj
        self.intake.on_pod(MODIFIED, obj)
        return obj

    def observe_bound(self, name: str, node_name: str) -> None:
        """The watch reports the binding (``spec.nodeName`` set)."""
        def bind(obj: dict[str, Any]) -> None:
            obj["spec"]["nodeName"] = node_name
        self.update(name, bind)

    def delete(self, name: str) -> None:
        self.intake.on_pod(DELETED, self.objects.pop(name))

    def info(self, name: str) -> PodInfo:
        return PodInfo.from_pod(self.objects[name])

    def uid(self, name: str) -> str:
        return str(self.objects[name]["metadata"]["uid"])

    # the loop
    def cycle(self) -> bool:
        return schedule_one(self.s, timeout=0)

    def drain(self, limit: int = 1000) -> int:
        """Run cycles until the queue has nothing to pop right now."""
        n = 0
        while n < limit and self.cycle():
            n += 1
        return n

    def run_bindings(self) -> None:
        pending, self.deferred = self.deferred, []
        for fn, args in pending:
            fn(*args)

    def where(self, name: str) -> str | None:
        key = f"default/{name}"
        for queue, keys in self.s.queue.pending_pods().items():
            if key in keys:
                return queue
        return None

    def accounted_node(self, name: str) -> str | None:
        """The node the cache counts the pod on (after applying pending deltas)."""
        self.s.refresh()
        info = self.s.cache.get_pod(self.uid(name))
        return None if info is None else info.node_name


def zone_nodes(n: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [node(f"n{i}", **kwargs) for i in range(1, n + 1)]


# == scheduling and binding ==================================================================
def test_a_feasible_pod_is_assumed_bound_reported_and_confirmed_by_the_watch() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="1"), node("n2", cpu="4"))
    assumed_at_bind: list[bool] = []
    h.ports.on_bind = lambda p, n, o: assumed_at_bind.append(h.s.cache.is_assumed(p.uid))
    h.add(pod("web", cpu="2"))

    assert h.cycle() is True
    assert h.ports.binds == [("default/web", "n2")]
    assert assumed_at_bind == [True], "the pod is assumed before the Binder is called"
    assert h.ports.scheduled_calls == [("default/web", "n2")]
    assert h.ports.failures == []
    assert h.s.queue.in_flight() == [] and len(h.s.queue) == 0
    # Until the watch confirms, the cache counts the pod as assumed on n2.
    assert h.accounted_node("web") == "n2" and h.s.cache.is_assumed(h.uid("web"))

    h.observe_bound("web", "n2")
    assert h.accounted_node("web") == "n2"
    assert not h.s.cache.is_assumed(h.uid("web"))
    assert h.s.cache.assumed_uids() == set()
    assert h.cycle() is False, "the bound pod is not scheduled again"


def test_each_pod_of_a_burst_lands_where_the_assumed_ones_leave_room() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    h.add(*(pod(f"p{i}", cpu="1") for i in range(5)))
    h.drain()
    placed = [n for _, n in h.ports.binds]
    assert sorted(placed) == ["n1", "n1", "n2", "n2"]
    assert [(r, m) for _, r, m, _ in h.ports.failures] == [(
        "Unschedulable", "0/2 nodes are available: 2 Insufficient cpu.")]


@pytest.mark.parametrize(
    ("nodes", "spec", "message", "plugins"),
    [
        pytest.param(
            [node("n1", cpu="2", labels={"zone": "a"}), node("n2", cpu="8"), node("n3", cpu="8")],
            {"cpu": "3", "spec": {"nodeSelector": {"zone": "a"}}},
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node "
            "affinity/selector.",
            {"NodeAffinity", "NodeResourcesFit"},
            id="each node counts under the first plugin that rejected it, reasons sorted",
        ),
        pytest.param(
            [node("n1", cpu="1", memory="1Gi")],
            {"cpu": "2", "memory": "2Gi"},
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
            {"NodeResourcesFit"},
            id="NodeResourcesFit lists every insufficient resource of a node",
        ),
        pytest.param(
            [node("n1", pods=0), node("n2", unschedulable=True)],
            {"cpu": "100m"},
            "0/2 nodes are available: 1 Too many pods, 1 node(s) were unschedulable.",
            {"NodeResourcesFit", "NodeUnschedulable"},
            id="too many pods and an unschedulable node",
        ),
        pytest.param(
            [node("n1", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
             node("n2", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])],
            {"cpu": "100m"},
            "0/2 nodes are available: 2 node(s) had untolerated taint(s).",
            {"TaintToleration"},
            id="untolerated taints",
        ),
        pytest.param(
            [node(f"n{i}", cpu="1") for i in range(12)],
            {"cpu": "2"},
            "0/12 nodes are available: 12 Insufficient cpu.",
            {"NodeResourcesFit"},
            id="every node is counted when none fits",
        ),
    ],
)
def test_an_unschedulable_pod_gets_upstreams_fit_error_and_waits_in_the_pool(
    nodes: list[dict[str, Any]], spec: dict[str, Any], message: str, plugins: set[str]
) -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(*nodes)
    h.add(pod("p", **spec))
    h.cycle()
    # No PostFilter plugin: the nomination is cleared ("" = clear), as upstream.
    assert h.ports.failures_of("p") == [("Unschedulable", message, "")]
    assert h.ports.binds == []
    assert h.where("p") == UNSCHEDULABLE
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None
    assert queued.unschedulable_plugins == plugins
    assert queued.unschedulable_count == 1 and queued.consecutive_errors == 0
    assert h.s.cache.assumed_uids() == set()


def test_with_default_preemption_the_message_carries_the_postfilter_explanation() -> None:
    h = Harness()
    h.nodes(node("n1", cpu="4", labels={"zone": "a"}), node("n2", cpu="8"), node("n3", cpu="8"))
    # n1 is full of a more important pod: Insufficient cpu, but nothing to preempt there.
    h.add(pod("important", cpu="2", priority=10, node_name="n1"))
    h.add(pod("p", cpu="3", spec={"nodeSelector": {"zone": "a"}}))
    h.cycle()
    ((reason, message, nominated),) = h.ports.failures_of("p")
    assert reason == "Unschedulable"
    assert message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims "
        "found for incoming pod, 2 Preemption is not helpful for scheduling."
    )
    assert nominated == ""
    assert h.where("p") == UNSCHEDULABLE


def test_a_node_that_fits_moves_the_pod_out_of_the_pool_and_it_is_bound() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("small", cpu="1"))
    h.add(pod("p", cpu="2"))
    h.cycle()
    assert h.where("p") == UNSCHEDULABLE
    h.nodes(node("big", cpu="4"))  # NodeAdd: NodeResourcesFit's hint says Queue
    assert h.where("p") in (ACTIVE, BACKOFF)
    h.cycle()
    assert h.ports.binds == [("default/p", "big")]


def test_no_nodes_is_not_a_fit_error_and_retries_after_the_error_backoff() -> None:
    h = Harness(NO_PREEMPTION)
    h.add(pod("p"))
    h.cycle()
    assert h.ports.failures_of("p") == [("Unschedulable", NO_NODES_AVAILABLE, "")]
    assert NO_NODES_AVAILABLE == "no nodes available to schedule pods"
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None and queued.consecutive_errors == 1
    assert queued.unschedulable_plugins == set()
    assert h.where("p") == BACKOFF
    assert h.cycle() is False, "an error backoff is waited out, never popped early"
    h.clock.advance(2)
    h.s.queue.flush_backoff_completed()
    h.nodes(node("n1"))
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]


def error_filter() -> FakeFilter:
    return FakeFilter("ErrorFilter", {"n1": Code.ERROR, "n2": Code.ERROR}, reason="disk on fire")


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        pytest.param([FakePreFilter("FakePreFilter", status=Status.error("injected error"))],
                     'running PreFilter plugin "FakePreFilter": injected error',
                     id="a PreFilter error is worded as upstream"),
        pytest.param([error_filter()], 'running "ErrorFilter" filter plugin: disk on fire',
                     id="a Filter error is worded as upstream"),
        pytest.param([RaisingFilter()],
                     'running "RaisingFilter" filter plugin: RuntimeError: plugin bug',
                     id="a plugin that raises is a SchedulerError naming it, the pod is kept"),
        pytest.param([RecordingReserve(status=Status.error("no quota"))],
                     'running Reserve plugin "RecordingReserve": no quota',
                     id="a Reserve error is worded as upstream"),
        pytest.param([RecordingReserve(raises=True)],
                     'running Reserve plugin "RecordingReserve": RuntimeError: reserve bug',
                     id="a Reserve plugin that raises is unreserved and forgotten"),
        pytest.param([FakePermit(status=Status.error("not now"))],
                     'running Permit plugin "FakePermit": not now',
                     id="a Permit error is worded as upstream"),
    ],
)
def test_a_plugin_error_is_a_scheduler_error_retried_after_the_error_backoff(
    plugins: list[Any], message: str
) -> None:
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("n1"), node("n2"))
    h.add(pod("p"))
    h.cycle()
    assert h.ports.failures_of("p") == [("SchedulerError", message, "")]
    assert h.ports.binds == []
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None
    assert queued.consecutive_errors == 1 and queued.unschedulable_plugins == set()
    assert h.where("p") == BACKOFF
    assert h.s.queue.in_flight() == []
    assert h.accounted_node("p") is None and h.s.cache.assumed_uids() == set()
    for plugin in plugins:
        if isinstance(plugin, RecordingReserve):
            assert [e for e, _, _ in plugin.log] == [
                "reserve:RecordingReserve", "unreserve:RecordingReserve"]


@pytest.mark.parametrize(
    ("plugins", "message", "rejector"),
    [
        pytest.param(
            [RecordingReserve(status=Status.unschedulable("no room in the rack"))],
            "0/1 nodes are available: 1 no room in the rack.", "RecordingReserve",
            id="a Reserve rejection reads as a FitError on the chosen node",
        ),
        pytest.param(
            [FakePermit(status=Status.unschedulable("quota exceeded"))],
            "0/1 nodes are available: 1 quota exceeded.", "FakePermit",
            id="a Permit rejection reads as a FitError on the chosen node",
        ),
    ],
)
def test_a_rejection_after_assume_unreserves_forgets_and_parks_the_pod(
    plugins: list[Any], message: str, rejector: str
) -> None:
    log: list[tuple[str, str, str]] = []
    reserve = RecordingReserve("Recorder", log=log)
    h = Harness(only(reserve, *plugins), plugins=[reserve, *plugins])
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    assert h.ports.failures_of("p") == [("Unschedulable", message, "")]
    assert ("unreserve:Recorder", "p", "n1") in log
    assert h.accounted_node("p") is None
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None and queued.unschedulable_plugins == {rejector}
    assert h.where("p") == UNSCHEDULABLE


def test_a_failed_bind_unreserves_forgets_through_the_inbox_and_requeues_with_backoff() -> None:
    log: list[tuple[str, str, str]] = []
    reserve = RecordingReserve(log=log)
    h = Harness(only(reserve), plugins=[reserve])
    h.nodes(node("n1"))
    h.ports.outcomes["p"] = [BindOutcome.FAILED]
    h.add(pod("p"))
    h.cycle()
    assert [e for e, _, _ in log] == ["reserve:RecordingReserve", "unreserve:RecordingReserve"]
    # The binding thread never touches the cache: the forget waits in the inbox.
    assert h.s.cache.is_assumed(h.uid("p"))
    h.s.refresh()
    assert not h.s.cache.is_assumed(h.uid("p")) and h.s.cache.get_pod(h.uid("p")) is None
    assert h.ports.failures_of("p") == [(
        "SchedulerError",
        'running Bind plugin "DefaultBinder": 500: etcdserver: request timed out', "")]
    assert h.ports.scheduled_calls == []
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None and queued.consecutive_errors == 1
    assert h.where("p") == BACKOFF
    h.clock.advance(2)
    h.s.queue.flush_backoff_completed()
    h.cycle()
    assert h.ports.binds == [("default/p", "n1"), ("default/p", "n1")]
    assert h.ports.scheduled_calls == [("default/p", "n1")]


@pytest.mark.parametrize(
    "outcome",
    [pytest.param(BindOutcome.GONE, id="the pod was deleted meanwhile (404)"),
     pytest.param(BindOutcome.CONFLICT, id="the pod was bound by someone else (409)")],
)
def test_a_gone_or_conflicting_bind_drops_the_pod_quietly(outcome: BindOutcome) -> None:
    log: list[tuple[str, str, str]] = []
    reserve = RecordingReserve(log=log)
    h = Harness(only(reserve), plugins=[reserve])
    h.nodes(node("n1"))
    h.ports.outcomes["p"] = [outcome]
    h.add(pod("p"))
    h.cycle()
    assert h.ports.failures == [] and h.ports.scheduled_calls == []
    assert ("unreserve:RecordingReserve", "p", "n1") in log
    assert len(h.s.queue) == 0 and h.s.queue.in_flight() == []
    assert h.accounted_node("p") is None
    assert h.cycle() is False


class FakeBind:
    """An out-of-tree Bind plugin: the binding cycle reads only the Status it returns."""

    name = "FakeBind"

    def __init__(self, status: Status) -> None:
        self.status = status
        self.calls: list[tuple[str, str]] = []

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append((pod.name, node))
        return self.status


@pytest.mark.parametrize(
    ("status", "bound", "requeued", "reported"),
    [
        pytest.param(SUCCESS, True, False, [], id="bound"),
        pytest.param(Status.error("backend down"), False, True,
                     [("SchedulerError", 'running Bind plugin "FakeBind": backend down', "")],
                     id="an error: retried after backoff, reported"),
        pytest.param(Status.unschedulable("pod gone", resolvable=False), False, False, [],
                     id="unresolvable: dropped quietly"),
    ],
)
def test_a_custom_bind_plugin_is_judged_by_its_status(
    status: Status, bound: bool, requeued: bool, reported: list[tuple[str, str, str]]
) -> None:
    binder = FakeBind(status)
    config = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
        {"name": "PrioritySort"}, {"name": "FakeBind"}]}}}]}
    h = Harness(config, plugins=[binder])
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    assert binder.calls == [("p", "n1")]
    assert h.ports.binds == []  # DefaultBinder is not in the profile
    assert h.ports.scheduled_calls == ([("default/p", "n1")] if bound else [])
    assert (h.s.queue.get(h.uid("p")) is not None) is requeued
    assert h.ports.failures_of("p") == reported
    assert h.accounted_node("p") == ("n1" if bound else None)


def test_freeing_an_assumed_pod_after_a_failed_bind_wakes_pods_waiting_for_room() -> None:
    h = Harness(NO_PREEMPTION, binding="deferred")
    h.nodes(node("n1", cpu="2"))
    h.ports.outcomes["big"] = [BindOutcome.GONE]
    h.add(pod("big", cpu="2", priority=10))
    h.cycle()  # big is assumed on n1, its binding deferred
    h.add(pod("small", cpu="1"))
    h.cycle()
    assert h.where("small") == UNSCHEDULABLE
    h.run_bindings()  # 404: big is forgotten, an AssignedPodDelete for the others
    assert h.where("small") in (ACTIVE, BACKOFF)
    h.cycle()
    h.run_bindings()
    assert h.ports.binds[-1] == ("default/small", "n1")


def test_a_node_deleted_between_the_decision_and_the_binding_is_not_bound_to() -> None:
    h = Harness(NO_PREEMPTION, binding="deferred")
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    assert h.accounted_node("p") == "n1"
    h.intake.on_node(DELETED, node("n1"))
    h.run_bindings()
    assert h.ports.binds == []
    assert h.ports.failures_of("p") == [
        ("SchedulerError", "node 'n1' was deleted before the binding", "")]
    assert h.accounted_node("p") is None
    assert h.where("p") == BACKOFF
    h.nodes(node("n2"))
    h.clock.advance(2)
    h.s.queue.flush_backoff_completed()
    h.cycle()
    h.run_bindings()
    assert h.ports.binds == [("default/p", "n2")]


def test_a_pod_bound_by_someone_else_after_the_pop_is_left_alone() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"), node("n2"))
    h.add(pod("p"))
    pop = h.s.queue.pop

    def pop_then_bound_elsewhere(timeout: float | None = None) -> Any:
        qpi = pop(timeout)
        h.observe_bound("p", "n2")  # the watch event races the cycle
        return qpi

    h.s.queue.pop = pop_then_bound_elsewhere  # type: ignore[method-assign]
    assert h.cycle() is True
    assert h.ports.binds == [] and h.ports.failures == []
    assert h.s.queue.in_flight() == [] and len(h.s.queue) == 0
    assert h.accounted_node("p") == "n2" and h.s.cache.assumed_uids() == set()


def test_a_pod_waiting_at_permit_binds_when_allowed_and_is_parked_when_rejected() -> None:
    permit = FakePermit(status=Status(Code.WAIT), timeout=30)
    h = Harness(only(permit), plugins=[permit], binding="threads")
    h.nodes(node("n1"))
    h.add(pod("a"), pod("b"))
    h.cycle()
    h.cycle()
    uid_a, uid_b = h.uid("a"), h.uid("b")
    assert uid_a in h.s.waiting and uid_b in h.s.waiting
    assert h.ports.binds == []
    h.s.waiting.allow(uid_a)
    h.s.waiting.reject(uid_b, "gang incomplete", plugin="FakePermit")
    h.s.stop(timeout=5)
    assert h.ports.binds == [("default/a", "n1")]
    assert h.ports.failures_of("b") == [
        ("Unschedulable", "0/1 nodes are available: 1 gang incomplete.", "")]
    h.s.refresh()
    assert h.s.cache.assumed_uids() == {uid_a}
    assert h.where("b") == UNSCHEDULABLE
    queued = h.s.queue.get(uid_b)
    assert queued is not None and queued.unschedulable_plugins == {"FakePermit"}


# == finding nodes ===========================================================================
@pytest.mark.parametrize(
    ("profile", "global_pct", "num_nodes", "want"),
    [
        pytest.param(None, 0, 10, 10, id="not set and nodes number not more than 50"),
        pytest.param(40, 0, 10, 10, id="set profile percentage and nodes not more than 50"),
        pytest.param(None, 0, 1000, 420, id="not set and nodes number more than 50"),
        pytest.param(40, 0, 1000, 400, id="set profile percentage and nodes more than 50"),
        pytest.param(40, 100, 1000, 400,
                     id="set global and profile percentage, the profile one wins"),
        pytest.param(None, 40, 1000, 400, id="set global percentage and nodes more than 50"),
        pytest.param(None, 0, 6000, 300, id="not set and nodes number more than 50*125"),
        pytest.param(40, 0, 6000, 2400, id="set profile percentage and nodes more than 50*125"),
        pytest.param(None, 0, 5000, 500, id="adaptive at 5000 nodes is 10 percent"),
        pytest.param(None, 1, 5000, 100, id="never fewer than 100 nodes"),
        pytest.param(None, 100, 5000, 5000, id="100 percent means every node"),
    ],
)
def test_num_feasible_nodes_to_find(
    profile: int | None, global_pct: int, num_nodes: int, want: int
) -> None:
    assert num_feasible_nodes_to_find(profile, global_pct, num_nodes) == want


def test_round_robin_evaluation_is_fair_across_cycles() -> None:
    """Upstream TestFairEvaluationForNodes: 500 nodes at 30 percent."""
    h = Harness({"percentageOfNodesToScore": 30, **NO_PREEMPTION})
    h.nodes(*(node(f"n{i:03d}") for i in range(500)))
    h.s.refresh()
    framework = h.s.profiles[SCHED]
    to_find = num_feasible_nodes_to_find(None, 30, 500)
    assert to_find == 150
    seen: set[int] = set()
    for i in range(2 * (500 // to_find + 1)):
        feasible, _, evaluated = find_nodes_that_fit(
            h.s, framework, CycleState(), PodInfo.from_pod(pod(f"p{i}")))
        assert feasible.size == to_find and evaluated == to_find
        assert h.s.next_start_index == (i + 1) * to_find % 500
        seen.update(int(r) for r in feasible)
    assert len(seen) == 500, "every node gets its turn"


def windows_harness(rejected: Iterable[int], pct: int) -> tuple[Harness, FakeFilter]:
    """200 nodes n000..n199, ``rejected`` of them refused by a FakeFilter, an equal score."""
    refuse = FakeFilter(codes={f"n{i:03d}": Code.UNSCHEDULABLE for i in rejected})
    h = Harness({**only(refuse, EqualScore()), "percentageOfNodesToScore": pct},
                plugins=[refuse, EqualScore()])
    h.nodes(*(node(f"n{i:03d}") for i in range(200)))
    h.s.refresh()
    return h, refuse


def test_nodes_are_filtered_only_until_enough_are_feasible() -> None:
    # 100 to find (the minimum) when every node fits: one window of 125, not 200 nodes.
    h, refuse = windows_harness((), 10)
    feasible, _, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert (feasible.size, evaluated) == (100, 100)
    assert [len(names) for names in refuse.calls] == [125]


def test_windows_go_on_until_enough_are_found_and_agree_with_filtering_everything() -> None:
    # Every other node refused: the first window finds 63 of 100, the next is sized for the
    # 37 still missing; the answer is the first 100 feasible nodes in order, as one pass.
    odd = range(1, 200, 2)
    h, refuse = windows_harness(odd, 10)
    feasible, diagnosis, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert [len(names) for names in refuse.calls] == [125, 75]
    names = h.s.snapshot.nodes.names
    assert [names[r] for r in feasible] == [f"n{i:03d}" for i in range(0, 200, 2)]
    assert evaluated == 200, "the 100th feasible node is the last one"
    assert [(rows.size, reason) for rows, reason, _ in diagnosis.reasons] == [
        (100, "injecting failure for pod p")], "the rejections judged, as one reason"


def test_windows_wrap_around_the_node_list_from_the_start_index() -> None:
    # From n150 on: the first window wraps after n199, the second goes on from where it
    # stopped; the answer is the feasible nodes in that rotated order.
    h, refuse = windows_harness(range(1, 200, 2), 10)
    h.s.next_start_index = 150
    feasible, diagnosis, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert [len(names) for names in refuse.calls] == [125, 75]
    assert refuse.calls[0][:2] == ["n150", "n151"] and refuse.calls[0][50] == "n000"
    rotated = [*range(150, 200), *range(150)]
    names = h.s.snapshot.nodes.names
    assert [names[r] for r in feasible] == [f"n{i:03d}" for i in rotated if i % 2 == 0]
    assert evaluated == 200 and h.s.next_start_index == 150
    assert sorted(names[r] for r in diagnosis.reasons[0][0]) == [
        f"n{i:03d}" for i in range(1, 200, 2)]


def test_with_too_few_feasible_nodes_every_node_is_judged() -> None:
    h, refuse = windows_harness(range(190), 10)
    feasible, diagnosis, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert (feasible.size, evaluated) == (10, 200)
    assert sum(len(names) for names in refuse.calls) == 200
    assert int(np.count_nonzero(diagnosis.codes)) == 190


def test_a_profile_percentage_overrides_the_global_one() -> None:
    config = {"percentageOfNodesToScore": 100, "profiles": [
        {"percentageOfNodesToScore": 50,
         "plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}}}]}
    h = Harness(config)
    h.nodes(*(node(f"n{i:03d}") for i in range(300)))
    h.s.refresh()
    feasible, _, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert feasible.size == 150 and evaluated == 150


def test_without_score_plugins_one_feasible_node_is_enough() -> None:
    """Upstream: "test without score plugin no extra nodes are evaluated"."""
    true_filter = FakeFilter("TrueFilter")
    h = Harness(only(true_filter), plugins=[true_filter])
    h.nodes(node("node1"), node("node2"), node("node3"))
    h.s.refresh()
    result = schedule_pod(h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("p")))
    assert result.evaluated_nodes == 1 and result.feasible_nodes == 1
    assert h.s.next_start_index == 1


def test_find_fit_all_error() -> None:
    """Upstream TestFindFitAllError: every node rejected by MatchFilter, after TrueFilter."""
    plugins = [FakeFilter("TrueFilter"), MatchFilter()]
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("3"), node("2"), node("1"))
    h.s.refresh()
    feasible, diagnosis, evaluated = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("nothing")))
    assert feasible.size == 0 and evaluated == 3
    assert diagnosis.unschedulable_plugins == {"MatchFilter"}
    assert [(sorted(h.s.snapshot.nodes.names[r] for r in rows), reason, plugin)
            for rows, reason, plugin in diagnosis.reasons] == [
        (["1", "2", "3"], ERR_REASON_FAKE, "MatchFilter")]


def test_find_fit_some_error() -> None:
    """Upstream TestFindFitSomeError: the pod named like node 1 fits only there."""
    plugins = [FakeFilter("TrueFilter"), MatchFilter()]
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("3"), node("2"), node("1"))
    h.s.refresh()
    feasible, diagnosis, _ = find_nodes_that_fit(
        h.s, h.s.profiles[SCHED], CycleState(), PodInfo.from_pod(pod("1")))
    assert [h.s.snapshot.nodes.names[int(r)] for r in feasible] == ["1"]
    rejected: dict[str, list[str]] = {
        h.s.snapshot.nodes.names[int(r)]: [] for rows, _, _ in diagnosis.reasons for r in rows}
    for rows, reason, _ in diagnosis.reasons:
        for r in rows:
            rejected[h.s.snapshot.nodes.names[int(r)]].append(reason)
    assert rejected == {"2": [ERR_REASON_FAKE], "3": [ERR_REASON_FAKE]}
    assert diagnosis.unschedulable_plugins == {"MatchFilter"}


def schedule_pod_case(plugins: list[Any], nodes: list[str], pod_name: str = "test-prefilter",
                      weights: Mapping[str, int] | None = None) -> tuple[Harness, Any]:
    h = Harness(only(*plugins, weights=weights), plugins=plugins)
    h.nodes(*(node(n) for n in nodes))
    h.add(pod(pod_name))
    h.cycle()
    return h, h.s.queue.get(h.uid(pod_name))


@pytest.mark.parametrize(
    ("plugins", "nodes", "message", "rejectors", "pod_name"),
    [
        pytest.param(
            [FakeFilter("FalseFilter", {"node1": Code.UNSCHEDULABLE,
                                        "node2": Code.UNSCHEDULABLE}, reason=ERR_REASON_FAKE)],
            ["node1", "node2"],
            f"0/2 nodes are available: 2 {ERR_REASON_FAKE}.", {"FalseFilter"},
            "test-prefilter",
            id="test 1: a filter rejecting every node",
        ),
        pytest.param(
            [MatchFilter(), FakeFilter("NoPodsFilter", {"2": Code.UNSCHEDULABLE},
                                       reason=ERR_REASON_FAKE)],
            ["1", "2"], f"0/2 nodes are available: 2 {ERR_REASON_FAKE}.",
            {"MatchFilter", "NoPodsFilter"}, "2",
            id="test 8: two filters each rejecting a node, both recorded",
        ),
        pytest.param(
            [FakePreFilter("FakePreFilter", status=Status.unschedulable(
                "injected unschedulable status", resolvable=False))],
            ["node1", "node2"],
            "0/2 nodes are available: injected unschedulable status.", {"FakePreFilter"},
            "test-prefilter",
            id="test prefilter plugin returning Unschedulable status",
        ),
        pytest.param(
            [FakePreFilter("FakePreFilter1"),
             FakePreFilter("FakePreFilter2", result=["node2"]),
             FakePreFilter("FakePreFilter3", result=["node1"])],
            ["node1", "node2", "node3"],
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [FakePreFilter2 "
            "FakePreFilter3] simultaneously.", {"FakePreFilter2", "FakePreFilter3"},
            "test-prefilter",
            id="test prefilter plugin returning non-intersecting nodes",
        ),
        pytest.param(
            [FakePreFilter("FakePreFilter1"), FakePreFilter("FakePreFilter2", result=[])],
            ["node1"],
            "0/1 nodes are available: node(s) didn't satisfy plugin FakePreFilter2.",
            {"FakePreFilter2"},
            "test-prefilter",
            id="test prefilter plugin returning empty node set",
        ),
        pytest.param(
            [FakePreFilter("FakePreFilter", result=["node2"]),
             FakeFilter("FakeFilter", {"node2": Code.UNSCHEDULABLE})],
            ["node1", "node2"],
            "0/2 nodes are available: 1 injecting failure for pod test-prefilter, 1 node(s) "
            "didn't satisfy plugin(s) [FakePreFilter].", {"FakePreFilter", "FakeFilter"},
            "test-prefilter",
            id="some nodes filtered out by a prefilter result and the others by a filter",
        ),
        pytest.param(
            [FakePreFilter("FakePreFilter", result=["invalid-node"]),
             FakeFilter("TrueFilter")],
            ["1", "2"],
            "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [FakePreFilter].",
            {"FakePreFilter"},
            "test-prefilter",
            id="test prefilter plugin returned an invalid node",
        ),
        pytest.param(
            [FakeFilter("FakeFilter", {"3": Code.UNSCHEDULABLE_AND_UNRESOLVABLE})], ["3"],
            "0/1 nodes are available: 1 injecting failure for pod test-prefilter.",
            {"FakeFilter"},
            "test-prefilter",
            id="test with filter plugin returning UnschedulableAndUnresolvable status",
        ),
    ],
)
def test_schedule_pod_fit_errors(
    plugins: list[Any], nodes: list[str], message: str, rejectors: set[str], pod_name: str
) -> None:
    """Upstream TestSchedulerSchedulePod, the FitError cases."""
    h, queued = schedule_pod_case(plugins, nodes, pod_name)
    assert h.ports.failures_of(pod_name) == [("Unschedulable", message, "")]
    assert queued is not None and queued.unschedulable_plugins == rejectors


@pytest.mark.parametrize(
    ("plugins", "nodes", "want", "evaluated"),
    [
        pytest.param([FakeFilter("TrueFilter"), NumericScore()], ["1", "2", "3"], {"3"}, 3,
                     id="the highest numeric score wins"),
        pytest.param(
            [FakeFilter("FakeFilter", {"1": Code.UNSCHEDULABLE}), NumericScore()],
            ["1", "2"], {"2"}, 2, id="test with partial failed filter plugin"),
        pytest.param(
            [FakePreFilter("FakePreFilter1"),
             FakePreFilter("FakePreFilter2", result=["node2"]),
             FakePreFilter("FakePreFilter3", result=["node1", "node2"])],
            ["node1", "node2", "node3"], {"node2"}, 1,
            id="test prefilter plugin returning node"),
        pytest.param(
            [FakePreFilter("FakePreFilter", result=["node1", "node2"])],
            ["node1", "node2", "node3"], {"node1", "node2"}, 1,
            id="test no score plugin, prefilter plugin returning 2 nodes"),
    ],
)
def test_schedule_pod_successes(
    plugins: list[Any], nodes: list[str], want: set[str], evaluated: int
) -> None:
    """Upstream TestSchedulerSchedulePod, the successful cases (with EvaluatedNodes)."""
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(*(node(n) for n in nodes))
    h.s.refresh()
    result = schedule_pod(h.s, h.s.profiles[SCHED], CycleState(),
                          PodInfo.from_pod(pod("test-prefilter")))
    assert result.node in want
    assert result.evaluated_nodes == evaluated


def test_a_prefilter_skip_drops_that_plugins_filter() -> None:
    """Upstream "test prefilter plugin returning skip": the skipped Filter would error."""

    class SkipAndError:
        name = "FakeFilter2"

        def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Any) -> tuple[
                PreFilterResult | None, Status]:
            return None, Status(Code.SKIP)

        def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
            raise AssertionError("the Filter of a skipped PreFilter must not run")

    plugins = [FakeFilter("FakeFilter1", {"node1": Code.UNSCHEDULABLE}), SkipAndError(),
               EqualScore()]
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("node1"), node("node2"), node("node3"))
    h.s.refresh()
    result = schedule_pod(h.s, h.s.profiles[SCHED], CycleState(),
                          PodInfo.from_pod(pod("test-prefilter")))
    assert result.node in {"node2", "node3"} and result.evaluated_nodes == 3


# == nominated nodes =========================================================================
def test_the_nominated_node_is_tried_first_and_alone() -> None:
    counting = FakeFilter("Counting")
    plugins = [counting, EqualScore()]
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("n1"), node("n2"), node("n3"))
    h.add(pod("p", nominated_node_name="n3"))
    h.cycle()
    assert h.ports.binds == [("default/p", "n3")]
    assert counting.calls == [["n3"]], "only the nominated node was filtered"
    assert h.s.next_start_index == 0


def test_a_nominated_node_that_no_longer_fits_falls_back_to_every_node() -> None:
    """Upstream TestPreferNominatedNodeFilterCallCounts: 1 + 3 filter evaluations."""
    counting = FakeFilter("Counting", {"n3": Code.UNSCHEDULABLE})
    plugins = [counting, EqualScore()]
    h = Harness(only(*plugins), plugins=plugins)
    h.nodes(node("n1"), node("n2"), node("n3"))
    h.add(pod("p", nominated_node_name="n3"))
    h.cycle()
    assert sum(len(c) for c in counting.calls) == 4
    assert h.ports.binds[0][1] in {"n1", "n2"}


@pytest.mark.parametrize(
    ("priority", "fits"),
    [
        pytest.param(50, False, id="a lower-priority pod may not take the room reserved"),
        pytest.param(100, False, id="an equal-priority pod may not take the room reserved"),
        pytest.param(200, True, id="a higher-priority pod ignores the reservation"),
    ],
)
def test_nominated_pods_reserve_room_for_equal_or_higher_priority(
    priority: int, fits: bool
) -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="4"))
    # A pending pod of another scheduler: the watch knows it, our queue does not.
    h.add(pod("preemptor", cpu="3", priority=100, scheduler_name="other-scheduler"))
    h.s.queue.nominator.add(h.info("preemptor"), "n1")
    h.add(pod("p", cpu="2", priority=priority))
    h.cycle()
    if fits:
        assert h.ports.binds == [("default/p", "n1")]
    else:
        assert h.ports.binds == []
        assert h.ports.failures_of("p") == [
            ("Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", "")]


def test_the_scheduled_pod_leaves_the_nominator() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(pod("p", nominated_node_name="n1"))
    assert h.s.queue.nominator.node_of(h.uid("p")) == "n1"
    h.cycle()
    assert h.s.queue.nominator.node_of(h.uid("p")) is None
    assert h.ports.binds == [("default/p", "n1")]


class PreFilterHook:
    """Passes every pod; runs ``action`` once, as if a watch event arrived mid-cycle."""

    name = "PreFilterHook"

    def __init__(self) -> None:
        self.action: Callable[[], None] = lambda: None

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Any) -> tuple[
            PreFilterResult | None, Status]:
        action, self.action = self.action, lambda: None
        action()
        return None, SUCCESS


def test_a_preemptor_deleted_during_its_cycle_evicts_nobody_and_is_not_nominated() -> None:
    """Issue 14 item 1: a ReplicaSet scale-down deletes a pending high-priority pod while it
    preempts. Nothing may be evicted for it, and no nomination may be left behind (it would
    keep an equal-priority pod off the emptied node with "Insufficient cpu")."""
    hook = PreFilterHook()
    h = Harness({"profiles": [{"plugins": {"preFilter": {"enabled": [{"name": hook.name}]}}}]},
                plugins=[hook])
    evictor = FakeEvictor()
    h.s.evictor = evictor  # type: ignore[assignment]
    h.nodes(node("n1", cpu="1"))
    h.add(pod("low", cpu="1", node_name="n1"))
    h.add(pod("p", cpu="1", priority=100))
    hook.action = lambda: h.delete("p")
    h.cycle()
    plugin = h.s.profiles[SCHED].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert evictor.calls == []
    assert h.s.queue.nominator.all() == {}
    assert h.ports.failures_of("p") == [], "no status write for a pod that is gone"
    assert len(h.s.queue) == 0

    h.add(pod("p2", cpu="1", priority=100))
    h.cycle()
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert [c[:2] for c in evictor.calls if c[0] == "evict"] == [("evict", "low")]
    assert h.s.queue.nominator.node_of(h.uid("p2")) == "n1"


# == scoring and host selection ==============================================================
def test_select_host_takes_the_unique_highest_total() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("node1"), node("node2"))
    h.s.refresh()
    rows = np.asarray([h.s.snapshot.row_of("node1"), h.s.snapshot.row_of("node2")],
                      dtype=np.int64)
    view = NodeView(h.s.snapshot, rows, h.s.snapshot.nodes.requested[rows],
                    h.s.snapshot.nodes.pod_count[rows])
    for _ in range(20):
        assert select_host(h.s, view, np.asarray([1, 2], dtype=np.int64)) == "node2"


def picks(seed: int, runs: int = 200) -> list[str]:
    h = Harness(NO_PREEMPTION, seed=seed)
    h.nodes(*(node(f"n{i}") for i in range(4)))
    h.s.refresh()
    info = PodInfo.from_pod(pod("p"))
    return [schedule_pod(h.s, h.s.profiles[SCHED], CycleState(), info).node
            for _ in range(runs)]


def test_ties_are_broken_at_random_reproducibly_with_a_seed() -> None:
    first = picks(seed=7)
    assert first == picks(seed=7), "the same seed gives the same choices"
    assert set(first) == {"n0", "n1", "n2", "n3"}, "every tied node gets chosen"
    counts = [first.count(n) for n in ("n0", "n1", "n2", "n3")]
    assert min(counts) >= 25, counts
    assert picks(seed=8) != first


def test_score_weights_decide_between_plugins() -> None:
    """A weight-3 preference beats a weight-1 one."""
    a, b = PreferNode("n1", "PreferN1"), PreferNode("n2", "PreferN2")
    h = Harness(only(a, b, weights={"PreferN1": 1, "PreferN2": 3}), plugins=[a, b])
    h.nodes(node("n1"), node("n2"))
    h.add(pod("p"))
    h.cycle()
    assert h.ports.binds == [("default/p", "n2")]


# == the invariant ===========================================================================
class AssumeLog:
    """Wraps a cache: records assume and what ended each assumption."""

    def __init__(self, s: Scheduler) -> None:
        self.events: list[tuple[str, str]] = []
        cache = s.cache
        assume, forget, upsert, remove = (cache.assume, cache.forget, cache.upsert_pod,
                                          cache.remove_pod)
        depth = [0]  # the cache calls its own methods: log the outermost call only

        def logged(kind: str, uid: str, ends: bool, call: Callable[[], Any]) -> Any:
            was_assumed = cache.is_assumed(uid)
            depth[0] += 1
            try:
                out = call()
            finally:
                depth[0] -= 1
            # An assume starts an assumption; the others end one that was there before.
            started = not ends and cache.is_assumed(uid)
            ended = ends and was_assumed and not cache.is_assumed(uid)
            if depth[0] == 0 and (started or ended):
                self.events.append((kind, uid))
            return out

        def logged_assume(p: PodInfo, n: str) -> PodInfo:
            out: PodInfo = logged("assume", p.uid, False, lambda: assume(p, n))
            return out

        def logged_forget(uid: str) -> None:
            logged("forget", uid, True, lambda: forget(uid))

        def logged_upsert(p: PodInfo) -> None:
            logged("confirm" if p.node_name else "stale", p.uid, True, lambda: upsert(p))

        def logged_remove(uid: str) -> PodInfo | None:
            out: PodInfo | None = logged("deleted", uid, True, lambda: remove(uid))
            return out

        cache.assume = logged_assume  # type: ignore[method-assign,assignment]
        cache.forget = logged_forget  # type: ignore[method-assign]
        cache.upsert_pod = logged_upsert  # type: ignore[method-assign,assignment]
        cache.remove_pod = logged_remove  # type: ignore[method-assign]

    def check(self) -> None:
        open_: set[str] = set()
        for kind, uid in self.events:
            if kind == "assume":
                assert uid not in open_, f"{uid} assumed twice without an end"
                open_.add(uid)
            else:
                assert uid in open_, f"{kind} of {uid} without an assume"
                open_.discard(uid)
        assert not open_, f"assumed and never confirmed nor forgotten: {sorted(open_)}"


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"random sequence {s}") for s in range(8)])
def test_every_assume_is_followed_by_a_confirm_or_a_forget(seed: int) -> None:
    rng = random.Random(seed)
    log: list[tuple[str, str, str]] = []
    reserve = RecordingReserve(log=log)
    permit = FakePermit()
    h = Harness(only(reserve, permit), plugins=[reserve, permit], binding="deferred")
    assumes = AssumeLog(h.s)
    names = [f"n{i}" for i in range(3)]
    h.nodes(*(node(n, cpu="2") for n in names))
    outcomes = [BindOutcome.BOUND] * 4 + [BindOutcome.FAILED, BindOutcome.GONE,
                                          BindOutcome.CONFLICT]

    def echo(p: PodInfo, n: str, outcome: BindOutcome) -> None:
        # What the watch would deliver after each outcome (not always promptly).
        if outcome is BindOutcome.BOUND:
            later.append(lambda: h.observe_bound(p.name, n) if p.name in h.objects else None)
        elif outcome is BindOutcome.GONE:
            later.append(lambda: h.delete(p.name) if p.name in h.objects else None)
        elif outcome is BindOutcome.CONFLICT:
            other = rng.choice(names)
            later.append(lambda: h.observe_bound(p.name, other) if p.name in h.objects else None)

    later: list[Callable[[], None]] = []
    h.ports.on_bind = echo
    created = 0
    for _ in range(120):
        step = rng.random()
        if step < 0.25:
            name = f"p{created}"
            created += 1
            h.ports.outcomes[name] = [rng.choice(outcomes) for _ in range(3)]
            h.add(pod(name, cpu=rng.choice(["500m", "1", "2"])))
        elif step < 0.5:
            reserve.status = (SUCCESS if rng.random() < 0.8
                              else Status.unschedulable("reserve says no"))
            permit.status = SUCCESS if rng.random() < 0.9 else Status.unschedulable("no")
            h.cycle()
        elif step < 0.7:
            h.run_bindings()
        elif step < 0.85 and later:
            later.pop(rng.randrange(len(later)))()
        elif step < 0.9 and h.objects:
            h.delete(rng.choice(sorted(h.objects)))
        elif step < 0.95:
            gone = rng.choice(names)
            h.intake.on_node(DELETED, node(gone))
            h.nodes(node(gone, cpu="2"))
        else:
            h.clock.advance(rng.choice([1, 5, 30]))
            h.s.queue.flush_backoff_completed()
            h.s.queue.flush_unschedulable_leftover()
        h.s.refresh()
    # Let everything settle: bindings finish, the watch catches up.
    h.run_bindings()
    while later:
        later.pop(0)()
    h.s.refresh()
    assumes.check()
    assert h.s.cache.assumed_uids() == set()
    assert h.s.queue.in_flight() == []
    assert any(kind == "assume" for kind, _ in assumes.events)


@pytest.mark.parametrize(
    ("status", "want_reason"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, ("no",)), REASON_UNSCHEDULABLE, id="Unschedulable"),
        pytest.param(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no",)), REASON_UNSCHEDULABLE,
                     id="UnschedulableAndUnresolvable"),
        pytest.param(Status(Code.PENDING, ("wait",)), REASON_UNSCHEDULABLE, id="Pending"),
        pytest.param(Status.error("boom"), REASON_SCHEDULER_ERROR, id="Error"),
        pytest.param(Status(Code.SKIP), REASON_SCHEDULER_ERROR, id="Skip"),
    ],
)
def test_a_failure_is_unschedulable_only_when_rejected(status: Status, want_reason: str) -> None:
    # upstream's handleSchedulingFailure: PodReasonUnschedulable iff status.IsRejected().
    failure = Failure(status)
    assert failure.reason == want_reason
    assert failure.message() == status.message, "without a diagnosis the status speaks"
