"""The framework runtime: how plugins are run per extension point (upstream framework.go).

Facts from upstream's ``framework_test.go``: TestRunPreFilterPlugins, TestFilterPlugins,
TestFilterPluginsWithNominatedPods, TestPostFilterPlugins, TestRunScorePlugins,
TestPermitPlugins, TestReservePlugins, TestRunBindPlugins, plus the batch semantics this
runtime adds (a node's status is that of the first plugin that rejected it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Diagnosis,
    FilterResult,
    IntArray,
    NodeView,
    PermitDecision,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from scheduler.framework.runtime import MAX_PERMIT_WAIT_SECONDS, Framework, PluginSets
from scheduler.metrics import Metrics
from scheduler.model.pod import PodInfo
from scheduler.testing import full_view, node, pod, pod_info, snapshot_of
from tests.test_cycle import (
    SCHED,
    FakeFilter,
    FakePermit,
    FakePreFilter,
    Harness,
    PreferNode,
    RecordingReserve,
)

NODES = ("n1", "n2", "n3")


def framework(**sets: Any) -> Framework:
    return Framework(SCHED, PluginSets(**sets))


def view_of(*names: str) -> NodeView:
    return full_view(snapshot_of([node(n) for n in names]))


def reasons_by_node(view: NodeView, outcome: Any) -> dict[str, list[tuple[str, str]]]:
    names = view.names()
    out: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    for positions, reason, plugin in outcome.reasons:
        for p in positions:
            out[names[int(p)]].append((reason, plugin))
    return out


# == PreFilter ===============================================================================
S, U, UU, E = SUCCESS, Status.unschedulable, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Status.error


def uu(reason: str = "injected") -> Status:
    return Status(UU, (reason,))


@pytest.mark.parametrize(
    ("plugins", "code", "skipped", "message", "rejectors", "nodes"),
    [
        pytest.param([FakePreFilter("success1"), FakePreFilter("success2")],
                     Code.SUCCESS, set(), "", set(), None,
                     id="all PreFilter returned success"),
        pytest.param([FakePreFilter("success"), FakePreFilter("error", status=E("boom"))],
                     Code.ERROR, set(), 'running PreFilter plugin "error": boom', set(), None,
                     id="a PreFilter error is an Error naming the plugin"),
        pytest.param([FakePreFilter("skip", status=SKIP), FakePreFilter("error", status=E("x"))],
                     Code.ERROR, {"skip"}, 'running PreFilter plugin "error": x', set(), None,
                     id="one PreFilter plugin returned skip, another an error"),
        pytest.param([FakePreFilter(f"skip{i}", status=SKIP) for i in (1, 2, 3)],
                     Code.SUCCESS, {"skip1", "skip2", "skip3"}, "", set(), None,
                     id="all PreFilter plugins returned skip"),
        pytest.param([FakePreFilter("skip1", status=SKIP), FakePreFilter("success1"),
                      FakePreFilter("skip2", status=SKIP), FakePreFilter("success2")],
                     Code.SUCCESS, {"skip1", "skip2"}, "", set(), None,
                     id="some PreFilter plugins returned skip"),
        pytest.param([FakePreFilter("unschedulable", status=U("a")),
                      FakePreFilter("skip", status=SKIP)],
                     Code.UNSCHEDULABLE, {"skip"}, "a", {"unschedulable"}, None,
                     id="Unschedulable lets the other PreFilter plugins run"),
        pytest.param([FakePreFilter("unresolvable", status=uu()),
                      FakePreFilter("skip", status=SKIP)],
                     UU, set(), "injected", {"unresolvable"}, None,
                     id="UnschedulableAndUnresolvable stops the other PreFilter plugins"),
        pytest.param([FakePreFilter("reject-all-nodes", result=[]),
                      FakePreFilter("skip", status=SKIP)],
                     UU, set(), "node(s) didn't satisfy plugin reject-all-nodes",
                     {"reject-all-nodes"}, frozenset(),
                     id="an empty node set stops the others as UnschedulableAndUnresolvable"),
        pytest.param([FakePreFilter("u1", status=U("first")),
                      FakePreFilter("u2", status=U("last"))],
                     Code.UNSCHEDULABLE, set(), "last", {"u1", "u2"}, None,
                     id="of several Unschedulable the last message is kept, all are rejectors"),
        pytest.param([FakePreFilter("u1", status=U("first")), FakePreFilter("b", result=["n1"]),
                      FakePreFilter("a", result=["n2"])],
                     UU, set(),
                     "node(s) didn't satisfy plugin(s) [a b] simultaneously", {"a", "b"},
                     frozenset(),
                     id="an empty intersection after an Unschedulable is unresolvable"),
        pytest.param([FakePreFilter("u1", status=U("first")), FakePreFilter("uu", status=uu("x"))],
                     UU, set(), "x", {"uu"}, None,
                     id="an UnschedulableAndUnresolvable after an Unschedulable wins alone"),
        pytest.param([FakePreFilter("b", result=["n1", "n2"]),
                      FakePreFilter("a", result=["n2", "n3"]), FakePreFilter("c")],
                     Code.SUCCESS, set(), "", {"a", "b"}, frozenset({"n2"}),
                     id="node sets are intersected and the restricting plugins named"),
    ],
)
def test_run_pre_filter(
    plugins: list[FakePreFilter], code: Code, skipped: set[str], message: str,
    rejectors: set[str], nodes: frozenset[str] | None,
) -> None:
    state = CycleState()
    result, status, got_rejectors = framework(pre_filter=plugins).run_pre_filter(
        state, pod_info("p"), snapshot_of([node(n) for n in NODES]))
    assert status.code is code
    assert status.message == message
    assert state.skip_filter == skipped
    assert got_rejectors == rejectors
    assert (None if result is None else result.node_names) == nodes
    if result is not None and nodes is not None:
        assert result.plugins == tuple(sorted(rejectors))


# == Filter ==================================================================================
def test_plugins_run_in_order_each_on_the_nodes_the_earlier_ones_let_through() -> None:
    first = FakeFilter("First", {"n1": Code.UNSCHEDULABLE}, reason="first says no")
    second = FakeFilter("Second", {"n1": Code.UNSCHEDULABLE, "n2": Code.UNSCHEDULABLE},
                        reason="second says no")
    third = FakeFilter("Third")
    view = view_of(*NODES)
    outcome = framework(filter=[first, second, third]).run_filters(CycleState(), pod_info("p"),
                                                                    view)
    assert first.calls == [["n1", "n2", "n3"]]
    assert second.calls == [["n2", "n3"]]
    assert third.calls == [["n3"]]
    assert reasons_by_node(view, outcome) == {
        "n1": [("first says no", "First")],  # the first rejecting plugin decides
        "n2": [("second says no", "Second")],
        "n3": [],
    }
    assert outcome.feasible.tolist() == [2]
    assert outcome.plugins_with(Code.UNSCHEDULABLE) == {"First", "Second"}


def test_once_every_node_is_rejected_no_further_plugin_runs() -> None:
    first = FakeFilter("First", {n: Code.UNSCHEDULABLE for n in NODES})
    second = FakeFilter("Second")
    framework(filter=[first, second]).run_filters(CycleState(), pod_info("p"), view_of(*NODES))
    assert second.calls == []


def test_a_node_keeps_every_reason_its_first_rejecting_plugin_gives() -> None:
    h = Harness({"profiles": [{"plugins": {"multiPoint": {
        "disabled": [{"name": "DefaultPreemption"}]}}}]})
    h.nodes(node("small", cpu="1", memory="1Gi", labels={"disk": "ssd"}), node("other"))
    h.s.refresh()
    fw = h.s.profiles[SCHED]
    p = PodInfo.from_pod(pod("p", cpu="2", memory="2Gi", spec={"nodeSelector": {"disk": "ssd"}}))
    state = CycleState()
    fw.run_pre_filter(state, p, h.s.snapshot)
    view = full_view(h.s.snapshot)
    outcome = fw.run_filters(state, p, view)
    assert reasons_by_node(view, outcome) == {
        "small": [("Insufficient cpu", "NodeResourcesFit"),
                  ("Insufficient memory", "NodeResourcesFit")],
        "other": [("node(s) didn't match Pod's node affinity/selector", "NodeAffinity")],
    }
    assert outcome.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE] * 2


def test_a_filter_error_stops_at_once_worded_as_upstream() -> None:
    broken = FakeFilter("TestPlugin2", {"n2": Code.ERROR}, reason="injected filter status")
    after = FakeFilter("After")
    outcome = framework(filter=[broken, after]).run_filters(
        CycleState(), pod_info("p"), view_of(*NODES))
    assert outcome.error == Status(
        Code.ERROR, ('running "TestPlugin2" filter plugin: injected filter status',),
        "TestPlugin2")
    assert after.calls == []


def test_a_filter_skipped_at_prefilter_does_not_run() -> None:
    skipped = FakeFilter("Skipped", {n: Code.UNSCHEDULABLE for n in NODES})
    state = CycleState()
    state.skip_filter.add("Skipped")
    outcome = framework(filter=[skipped]).run_filters(state, pod_info("p"), view_of(*NODES))
    assert skipped.calls == [] and outcome.feasible.tolist() == [0, 1, 2]


# == the two-pass rule for nominated pods ====================================================
def two_pass(pod_obj: dict[str, Any], nominated: Sequence[dict[str, Any]],
             nodes: Sequence[dict[str, Any]], bound: Sequence[dict[str, Any]] = (),
             *, one_node_at_a_time: bool = False) -> dict[str, list[tuple[str, str]]]:
    """Filter ``pod_obj`` on every node with ``nominated`` pods (nominatedNodeName set); with
    ``one_node_at_a_time``, in views of one node each, as a preemption dry run asks, and with
    one more nomination on a node the cluster does not have (more nominated nodes than a view
    has nodes)."""
    h = Harness({"profiles": [{"plugins": {"multiPoint": {
        "disabled": [{"name": "DefaultPreemption"}]}}}]})
    h.nodes(*nodes)
    h.add(*bound)
    h.s.refresh()
    by_node: dict[str, list[PodInfo]] = {}
    for obj in nominated:
        info = PodInfo.from_pod(obj)
        by_node.setdefault(info.nominated_node_name, []).append(info)
    fw = h.s.profiles[SCHED]
    p = PodInfo.from_pod(pod_obj)
    state = CycleState()
    _, status, _ = fw.run_pre_filter(state, p, h.s.snapshot)
    assert status.is_success()
    view = full_view(h.s.snapshot)
    if not one_node_at_a_time:
        outcome = fw.run_filters_with_nominated(state, p, view, by_node)
        assert outcome.error is None
        return reasons_by_node(view, outcome)
    by_node["gone"] = [PodInfo.from_pod(
        pod("elsewhere", cpu="3", priority=1000, nominated_node_name="gone"))]
    got: dict[str, list[tuple[str, str]]] = {}
    for row in view.idx:
        single = NodeView.of(h.s.snapshot, np.asarray([row], dtype=np.int64))
        outcome = fw.run_filters_with_nominated(state, p, single, by_node)
        assert outcome.error is None
        got.update(reasons_by_node(single, outcome))
    return got


AFFINITY_TO_DB = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
ANTI_AFFINITY_TO_DB = {"affinity": {"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}},
         "topologyKey": "kubernetes.io/hostname"}]}}}


NO_AFFINITY_MATCH = [("node(s) didn't match pod affinity rules", "InterPodAffinity")]


@pytest.mark.parametrize(
    ("pod_obj", "nominated", "want_n1", "want_n2"),
    [
        pytest.param(pod("p", cpu="2", priority=0), [], [], [],
                     id="node has no nominated pod"),
        pytest.param(pod("p", cpu="2", priority=0),
                     [pod("hp", cpu="3", priority=100, nominated_node_name="n1")],
                     [("Insufficient cpu", "NodeResourcesFit")], [],
                     id="a higher-priority nominated pod keeps its room: first pass fails"),
        pytest.param(pod("p", cpu="2", priority=100),
                     [pod("hp", cpu="3", priority=100, nominated_node_name="n1")],
                     [("Insufficient cpu", "NodeResourcesFit")], [],
                     id="an equal-priority nominated pod keeps its room too"),
        pytest.param(pod("p", cpu="2", priority=100),
                     [pod("lp", cpu="3", priority=0, nominated_node_name="n1")], [], [],
                     id="a lower-priority nominated pod is ignored"),
        pytest.param(pod("p", cpu="2", priority=0, nominated_node_name="n1"),
                     [pod("p", cpu="2", priority=0, nominated_node_name="n1")], [], [],
                     id="the pod's own nomination does not count against it"),
        pytest.param(pod("p", priority=0, spec=AFFINITY_TO_DB),
                     [pod("db", labels={"app": "db"}, priority=100, nominated_node_name="n1")],
                     NO_AFFINITY_MATCH, NO_AFFINITY_MATCH,
                     id="affinity to a nominated pod does not count: the second pass fails"),
        pytest.param(pod("p", priority=0, spec=ANTI_AFFINITY_TO_DB),
                     [pod("db", labels={"app": "db"}, priority=100, nominated_node_name="n1")],
                     [("node(s) didn't match pod anti-affinity rules", "InterPodAffinity")], [],
                     id="anti-affinity to a nominated pod counts: the first pass fails"),
    ],
)
@pytest.mark.parametrize("one_node_at_a_time", [False, True],
                         ids=["every node in one view", "one node per view"])
def test_run_filters_with_nominated_pods(
    pod_obj: dict[str, Any], nominated: list[dict[str, Any]], want_n1: list[tuple[str, str]],
    want_n2: list[tuple[str, str]], one_node_at_a_time: bool,
) -> None:
    got = two_pass(pod_obj, nominated, [node("n1", cpu="4"), node("n2", cpu="4")],
                   one_node_at_a_time=one_node_at_a_time)
    assert got == {"n1": want_n1, "n2": want_n2}


def test_the_second_pass_reasons_replace_nothing_when_the_first_pass_passes() -> None:
    """A node with a nominated pod that fails only the plain pass keeps the plain reasons,
    and nodes without nominated pods are untouched."""
    got = two_pass(
        pod("p", priority=0, spec=AFFINITY_TO_DB),
        [pod("db", labels={"app": "db"}, priority=100, nominated_node_name="n1")],
        [node("n1"), node("n2"), node("n3")],
        bound=[pod("db-bound", labels={"app": "db"}, node_name="n3")],
    )
    assert got == {
        "n1": [("node(s) didn't match pod affinity rules", "InterPodAffinity")],
        "n2": [("node(s) didn't match pod affinity rules", "InterPodAffinity")],
        "n3": [],
    }


def test_a_filter_error_in_the_pass_with_nominated_pods_is_returned() -> None:
    class ErrorWithNominated:
        name = "TestPlugin2"

        def filter(self, state: CycleState, p: PodInfo, nodes: NodeView) -> FilterResult:
            result = FilterResult.all_pass(len(nodes))
            if nodes.added is not None:
                result.reject(np.ones(len(nodes), dtype=np.bool_), Code.ERROR, "injected")
            return result

    view = view_of("n1", "n2")
    nominated = {"n1": [pod_info("hp", priority=100, nominated_node_name="n1")]}
    outcome = framework(filter=[ErrorWithNominated()]).run_filters_with_nominated(
        CycleState(), pod_info("p", priority=0), view, nominated)
    assert outcome.error == Status(
        Code.ERROR, ('running "TestPlugin2" filter plugin: injected',), "TestPlugin2")


# == PostFilter ==============================================================================
class FakePostFilter:
    def __init__(self, name: str, status: Status, result: PostFilterResult | None = None
                 ) -> None:
        self.name = name
        self.status = status
        self.result = result
        self.calls = 0

    def post_filter(self, state: CycleState, p: PodInfo, diagnosis: Diagnosis) -> tuple[
            PostFilterResult | None, Status]:
        self.calls += 1
        return self.result, self.status


REASON = "injected status"


@pytest.mark.parametrize(
    ("statuses", "want"),
    [
        pytest.param([Status(Code.SUCCESS, (REASON,))], Status(Code.SUCCESS, (REASON,)),
                     id="a single plugin makes a Pod schedulable"),
        pytest.param([U(REASON), Status(Code.SUCCESS, (REASON,))],
                     Status(Code.SUCCESS, (REASON,)),
                     id="plugin1 fails, plugin2 makes the Pod schedulable"),
        pytest.param([Status(Code.SUCCESS, (REASON,)), U(REASON)],
                     Status(Code.SUCCESS, (REASON,)),
                     id="plugin1 makes the Pod schedulable, plugin2 does not run"),
        pytest.param([E(REASON), Status(Code.SUCCESS, (REASON,))],
                     Status(Code.ERROR, (REASON,), "TestPlugin1"),
                     id="an error stops at once and names the plugin"),
        pytest.param([U(REASON), uu(REASON)], Status(UU, (REASON,), "TestPlugin2"),
                     id="plugin2 makes the Pod unresolvable"),
        pytest.param([U(REASON), U(REASON)],
                     Status(Code.UNSCHEDULABLE, (REASON, REASON), "TestPlugin1"),
                     id="both plugins fail: reasons joined, the first rejector named"),
    ],
)
def test_run_post_filter(statuses: list[Status], want: Status) -> None:
    plugins = [FakePostFilter(f"TestPlugin{i + 1}", s) for i, s in enumerate(statuses)]
    _, status = framework(post_filter=plugins).run_post_filter(
        CycleState(), pod_info("p"), Diagnosis(codes=np.zeros(0, dtype=np.uint8)))
    assert status == want


def test_post_filter_keeps_the_last_result_that_changes_the_nomination() -> None:
    plugins = [
        FakePostFilter("A", U("a"), PostFilterResult("n1")),
        FakePostFilter("B", U("b"), PostFilterResult(None)),
    ]
    result, status = framework(post_filter=plugins).run_post_filter(
        CycleState(), pod_info("p"), Diagnosis(codes=np.zeros(0, dtype=np.uint8)))
    assert result == PostFilterResult("n1")
    assert status.message == "a, b"


# == PreScore / Score ========================================================================
class RawScore:
    def __init__(self, name: str, scores: Sequence[int], normalize_to: int | None = None) -> None:
        self.name = name
        self.scores = scores
        self.normalize_to = normalize_to

    def score(self, state: CycleState, p: PodInfo, nodes: NodeView) -> IntArray:
        return np.asarray(self.scores, dtype=np.int64)

    def normalize(self, state: CycleState, p: PodInfo, scores: IntArray) -> IntArray:
        if self.normalize_to is None or scores.max() == 0:
            return scores
        return np.asarray(scores * self.normalize_to // scores.max(), dtype=np.int64)


class FakePreScore:
    def __init__(self, name: str, status: Status) -> None:
        self.name = name
        self.status = status

    def pre_score(self, state: CycleState, p: PodInfo, nodes: NodeView) -> Status:
        return self.status


def test_scores_are_normalised_then_weighted_and_summed() -> None:
    a = RawScore("A", [1, 2, 4], normalize_to=MAX_NODE_SCORE)  # -> 25, 50, 100
    b = RawScore("B", [10, 0, 0])
    totals, status, per_plugin = framework(score=[(a, 1), (b, 3)]).run_score(
        CycleState(), pod_info("p"), view_of(*NODES))
    assert status.is_success()
    assert per_plugin["A"].tolist() == [25, 50, 100]
    assert totals.tolist() == [25 + 30, 50, 100]


@pytest.mark.parametrize(
    ("scores", "bad"),
    [pytest.param([0, 101, 5], 101, id="above MaxNodeScore after normalizing"),
     pytest.param([0, -1, 5], -1, id="below MinNodeScore after normalizing")],
)
def test_a_score_out_of_bounds_is_an_error(scores: list[int], bad: int) -> None:
    _, status, _ = framework(score=[(RawScore("Bad", scores), 1)]).run_score(
        CycleState(), pod_info("p"), view_of(*NODES))
    assert status.code is Code.ERROR and status.plugin == "Bad"
    assert status.message == (
        'applying score defaultWeights on Score plugins: plugin "Bad" returns an invalid '
        f"score {bad}, it should in the range of [0, 100] after normalizing")


def test_a_pre_score_skip_skips_the_score_and_an_error_is_worded_as_upstream() -> None:
    fw = framework(
        pre_score=[FakePreScore("Skipper", SKIP), FakePreScore("Fine", SUCCESS)],
        score=[(RawScore("Skipper", [500, 500, 500]), 1), (PreferNode("n2"), 1)],
    )
    state = CycleState()
    assert fw.run_pre_score(state, pod_info("p"), view_of(*NODES)).is_success()
    assert state.skip_score == {"Skipper"}
    totals, status, _ = fw.run_score(state, pod_info("p"), view_of(*NODES))
    assert status.is_success() and totals.tolist() == [0, 100, 0]
    broken = framework(pre_score=[FakePreScore("Broken", U("no"))])
    assert broken.run_pre_score(CycleState(), pod_info("p"), view_of(*NODES)) == Status(
        Code.ERROR, ('running PreScore plugin "Broken": no',), "Broken")


# == Reserve / Permit / Bind =================================================================
def test_reserve_stops_at_the_first_failure_and_unreserve_runs_every_plugin_in_reverse() -> None:
    log: list[tuple[str, str, str]] = []
    first = RecordingReserve("First", log=log)
    failing = RecordingReserve("Failing", status=U("rack full"), log=log)
    never = RecordingReserve("Never", log=log)
    fw = framework(reserve=[first, failing, never])
    status = fw.run_reserve(CycleState(), pod_info("p"), "n1")
    assert status == Status(Code.UNSCHEDULABLE, ("rack full",), "Failing")
    fw.run_unreserve(CycleState(), pod_info("p"), "n1")
    assert [e for e, _, _ in log] == [
        "reserve:First", "reserve:Failing",
        "unreserve:Never", "unreserve:Failing", "unreserve:First",
    ]


def test_an_unreserve_that_raises_does_not_stop_the_others() -> None:
    log: list[tuple[str, str, str]] = []

    class Raising(RecordingReserve):
        def unreserve(self, state: CycleState, p: PodInfo, n: str) -> None:
            raise RuntimeError("bug")

    fw = framework(reserve=[RecordingReserve("First", log=log), Raising("Second", log=log)])
    fw.run_unreserve(CycleState(), pod_info("p"), "n1")
    assert [e for e, _, _ in log] == ["unreserve:First"]


@pytest.mark.parametrize(
    ("plugins", "want", "timeout"),
    [
        pytest.param([], SUCCESS, 0.0, id="no Permit plugin"),
        pytest.param([FakePermit("TestPlugin")], SUCCESS, 0.0, id="a successful Permit plugin"),
        pytest.param([FakePermit("TestPlugin", U(REASON))],
                     Status(Code.UNSCHEDULABLE, (REASON,), "TestPlugin"), 0.0,
                     id="an Unschedulable Permit plugin rejects, naming itself"),
        pytest.param([FakePermit("TestPlugin", E(REASON))],
                     Status(Code.ERROR, (f'running Permit plugin "TestPlugin": {REASON}',),
                            "TestPlugin"), 0.0,
                     id="an Error is worded as upstream"),
        pytest.param([FakePermit("TestPlugin", uu(REASON))],
                     Status(UU, (REASON,), "TestPlugin"), 0.0,
                     id="an UnschedulableAndUnresolvable Permit plugin rejects"),
        pytest.param([FakePermit("A", Status(Code.WAIT), 10),
                      FakePermit("B", Status(Code.WAIT), 1)],
                     Status(Code.WAIT), 10.0, id="wait for the longest timeout asked for"),
        pytest.param([FakePermit("A", Status(Code.WAIT), 10), FakePermit("B", U("deny"))],
                     Status(Code.UNSCHEDULABLE, ("deny",), "B"), 0.0,
                     id="a denial after a wait rejects"),
        pytest.param([FakePermit("A", Status(Code.WAIT), 3600)], Status(Code.WAIT),
                     MAX_PERMIT_WAIT_SECONDS, id="a wait is capped at fifteen minutes"),
    ],
)
def test_run_permit(plugins: list[FakePermit], want: Status, timeout: float) -> None:
    decision = framework(permit=plugins).run_permit(CycleState(), pod_info("p"), "n1")
    assert (decision.status, decision.timeout_seconds) == (want, timeout)


def test_run_permit_names_each_waiting_plugin_with_its_timeout() -> None:
    """Upstream's RunPermitPlugins keeps a timeout per plugin (pluginsWaitTime): each
    waiting plugin must allow the pod, and the first timeout names its plugin."""
    plugins = [FakePermit("A", Status(Code.WAIT), 10), FakePermit("B", Status(Code.WAIT), 1)]
    decision = framework(permit=plugins).run_permit(CycleState(), pod_info("p"), "n1")
    assert decision == PermitDecision(Status(Code.WAIT), 10.0, (("A", 10.0), ("B", 1.0)))


class FakeBind:
    def __init__(self, name: str, status: Status) -> None:
        self.name = name
        self.status = status
        self.calls = 0

    def bind(self, state: CycleState, p: PodInfo, n: str) -> Status:
        self.calls += 1
        return self.status


@pytest.mark.parametrize(
    ("statuses", "want", "calls"),
    [
        pytest.param([], Status.error("no bind plugin bound the pod"), [],
                     id="no bind plugin"),
        pytest.param([SKIP, SUCCESS], SUCCESS, [1, 1], id="a skip lets the next plugin bind"),
        pytest.param([SUCCESS, SUCCESS], SUCCESS, [1, 0], id="the first binder wins"),
        pytest.param([E("409")], Status(Code.ERROR, ('running Bind plugin "Bind0": 409',),
                                        "Bind0"), [1],
                     id="an error is worded as upstream"),
        pytest.param([U("no")], Status(Code.UNSCHEDULABLE, ("no",), "Bind0"), [1],
                     id="a rejection keeps its reasons and names the plugin"),
    ],
)
def test_run_bind(statuses: list[Status], want: Status, calls: list[int]) -> None:
    plugins = [FakeBind(f"Bind{i}", s) for i, s in enumerate(statuses)]
    assert framework(bind=plugins).run_bind(CycleState(), pod_info("p"), "n1") == want
    assert [p.calls for p in plugins] == calls


def test_post_bind_runs_every_plugin_even_if_one_raises() -> None:
    seen: list[str] = []

    class PostBind:
        def __init__(self, name: str, fail: bool = False) -> None:
            self.name = name
            self.fail = fail

        def post_bind(self, state: CycleState, p: PodInfo, n: str) -> None:
            seen.append(self.name)
            if self.fail:
                raise RuntimeError("bug")

    framework(post_bind=[PostBind("A", fail=True), PostBind("B")]).run_post_bind(
        CycleState(), pod_info("p"), "n1")
    assert seen == ["A", "B"]


def test_filters_read_pod_lists_unless_every_active_filter_says_otherwise() -> None:
    class Lean(FakeFilter):
        filter_reads_pod_lists = False

    lean, reader = Lean("Lean"), FakeFilter("Reader")
    fw = framework(filter=[lean, reader])
    assert fw.filters_read_pod_lists(CycleState())
    state = CycleState()
    state.skip_filter.add("Reader")
    assert not fw.filters_read_pod_lists(state)


def test_pre_filter_result_plugins_mapping() -> None:
    # The merged result names the plugins that restricted the nodes, sorted (for the
    # "node(s) didn't satisfy plugin(s) [A B]" reason of the nodes left out).
    result, _, _ = framework(pre_filter=[
        FakePreFilter("Zeta", result=["n1", "n2"]), FakePreFilter("Alpha", result=["n1"]),
    ]).run_pre_filter(CycleState(), pod_info("p"), snapshot_of([node(n) for n in NODES]))
    assert result == PreFilterResult(frozenset({"n1"}), ("Alpha", "Zeta"))


# == a plugin that raises ====================================================================
class Broken:
    """Raises at every extension point; ``normalize`` only when asked to."""

    name = "Broken"

    def __init__(self, *, normalize_only: bool = False) -> None:
        self.normalize_only = normalize_only

    def _raise(self, *args: Any) -> Any:
        raise RuntimeError("bug")

    pre_filter = filter = post_filter = pre_score = reserve = permit = pre_bind = bind = _raise

    def score(self, *args: Any) -> IntArray:
        if self.normalize_only:
            return np.zeros(len(NODES), dtype=np.int64)
        return self._raise()

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return self._raise() if self.normalize_only else scores


@pytest.mark.parametrize(
    ("point", "make_sets", "message"),
    [
        ("PreFilter", lambda b: {"pre_filter": [b]}, 'running PreFilter plugin "Broken"'),
        ("Filter", lambda b: {"filter": [b]}, 'running "Broken" filter plugin'),
        ("PostFilter", lambda b: {"post_filter": [b]}, 'running PostFilter plugin "Broken"'),
        ("PreScore", lambda b: {"pre_score": [b]}, 'running PreScore plugin "Broken"'),
        ("Score", lambda b: {"score": [(b, 1)]}, 'running Score plugin "Broken"'),
        ("NormalizeScore", lambda b: {"score": [(b, 1)]},
         'running NormalizeScore plugin "Broken"'),
        ("Reserve", lambda b: {"reserve": [b]}, 'running Reserve plugin "Broken"'),
        ("Permit", lambda b: {"permit": [b]}, 'running Permit plugin "Broken"'),
        ("PreBind", lambda b: {"pre_bind": [b]}, 'running PreBind plugin "Broken"'),
        ("Bind", lambda b: {"bind": [b]}, 'running Bind plugin "Broken"'),
    ],
)
@pytest.mark.parametrize("sampled", [False, True], ids=["plain cycle", "sampled for metrics"])
def test_a_raising_plugin_is_named_with_its_extension_point(
    point: str, make_sets: Any, message: str, sampled: bool
) -> None:
    broken = Broken(normalize_only=point == "NormalizeScore")
    fw = Framework(SCHED, PluginSets(**make_sets(broken)),
                   metrics=Metrics().profile(SCHED) if sampled else None)
    state = CycleState()
    state.record_plugin_metrics = sampled
    view = view_of(*NODES)
    p = pod_info("p")
    calls = {
        "PreFilter": lambda: fw.run_pre_filter(state, p, view.snapshot),
        "Filter": lambda: fw.run_filters(state, p, view),
        "PostFilter": lambda: fw.run_post_filter(state, p, Diagnosis(np.zeros(3, np.uint8))),
        "PreScore": lambda: fw.run_pre_score(state, p, view),
        "Score": lambda: fw.run_score(state, p, view),
        "NormalizeScore": lambda: fw.run_score(state, p, view),
        "Reserve": lambda: fw.run_reserve(state, p, "n1"),
        "Permit": lambda: fw.run_permit(state, p, "n1"),
        "PreBind": lambda: fw.run_pre_bind(state, p, "n1"),
        "Bind": lambda: fw.run_bind(state, p, "n1"),
    }
    with pytest.raises(Exception, match=f"^{message}: RuntimeError: bug$") as raised:
        calls[point]()
    assert isinstance(raised.value.__cause__, RuntimeError)


# == PreBindPreFlight ========================================================================
class FlightPreBind:
    """A PreBind plugin with a PreBindPreFlight answer (None: it has no PreBindPreFlight)."""

    def __init__(self, name: str, flight: Status | None) -> None:
        self.name = name
        self.ran = 0
        if flight is not None:
            self.pre_bind_pre_flight = lambda state, pod, node: flight

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.ran += 1
        return SUCCESS


@pytest.mark.parametrize(
    ("flights", "outcome", "pre_bind_runs"),
    [
        # Upstream's RunPreBindPreFlights: Success if any plugin has work, Skip if none has.
        ([SKIP, SKIP], Code.SKIP, [0, 0]),
        ([SKIP, SUCCESS], Code.SUCCESS, [0, 1]),
        ([SUCCESS, SUCCESS], Code.SUCCESS, [1, 1]),
        # Without a PreBindPreFlight a plugin is taken to have work.
        ([None, SKIP], Code.SUCCESS, [1, 0]),
        ([SKIP, Status.error("no volume")], Code.ERROR, None),
        ([Status.unschedulable("no")], Code.ERROR, None),
    ],
)
def test_pre_bind_pre_flights_decide_which_pre_binds_run(
    flights: list[Status | None], outcome: Code, pre_bind_runs: list[int] | None
) -> None:
    plugins = [FlightPreBind(f"P{i}", flight) for i, flight in enumerate(flights)]
    metrics = Metrics()
    fw = Framework(SCHED, PluginSets(pre_bind=list(plugins)), metrics=metrics.profile(SCHED))
    state = CycleState()
    p = pod_info("p")
    status = fw.run_pre_bind_pre_flights(state, p, "n1")
    assert status.code is outcome
    assert metrics.registry.get_sample_value(
        "scheduler_framework_extension_point_duration_seconds_count",
        {"extension_point": "PreBindPreFlight", "status": outcome.name.title(),
         "profile": SCHED}) == 1
    if pre_bind_runs is None:
        return
    assert fw.run_pre_bind(state, p, "n1").is_success()
    assert [plugin.ran for plugin in plugins] == pre_bind_runs


# == a plugin idle after its PreFilter said Skip =============================================
class IdleAfterSkip:
    """Every point after PreFilter, each call recorded; declares itself idle at PreScore,
    Reserve and PreBind after a PreFilter Skip, and keeps that promise."""

    idle_when_pre_filter_skips = frozenset({"preScore", "reserve", "preBind"})

    def __init__(self, name: str, pre_filter: Status) -> None:
        self.name = name
        self.answer = pre_filter
        self.calls: list[str] = []

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Any) -> tuple[
            PreFilterResult | None, Status]:
        self.calls.append("pre_filter")
        return None, self.answer

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        self.calls.append("filter")
        return FilterResult.all_pass(len(nodes))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        self.calls.append("pre_score")
        return SKIP if self.answer.is_skip() else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        self.calls.append("score")
        return np.full(len(nodes), 7, dtype=np.int64)

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("reserve")
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.calls.append("unreserve")

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("pre_bind_pre_flight")
        return SKIP if self.answer.is_skip() else SUCCESS

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("pre_bind")
        return SUCCESS


def _every_point(fw: Framework, state: CycleState) -> tuple[Any, ...]:
    """PreFilter to PreBind for one pod; what each point answered."""
    view, p = view_of(*NODES), pod_info("p")
    answers = (
        fw.run_pre_filter(state, p, view.snapshot)[1],
        fw.run_filters(state, p, view).codes.tolist(),
        fw.run_pre_score(state, p, view),
        fw.run_score(state, p, view)[0].tolist(),
        fw.run_reserve(state, p, "n1"),
        fw.run_pre_bind_pre_flights(state, p, "n1"),
        fw.run_pre_bind(state, p, "n1"),
    )
    fw.run_unreserve(state, p, "n1")
    return answers


@pytest.mark.parametrize(("pre_filter", "sampled", "calls"), [
    # Left out after its Skip: only its PreFilter runs (upstream also calls the idle points).
    (SKIP, False, ["pre_filter"]),
    # Sampled for per-plugin metrics: every call upstream makes, as upstream makes it.
    (SKIP, True, ["pre_filter", "pre_score", "reserve", "pre_bind_pre_flight", "unreserve"]),
    (SUCCESS, False, ["pre_filter", "filter", "pre_score", "score", "reserve",
                      "pre_bind_pre_flight", "pre_bind", "unreserve"]),
    (SUCCESS, True, ["pre_filter", "filter", "pre_score", "score", "reserve",
                     "pre_bind_pre_flight", "pre_bind", "unreserve"]),
], ids=["skip", "skip, sampled", "success", "success, sampled"])
def test_a_plugin_idle_after_its_pre_filter_skip_is_left_out_with_the_same_outcome(
    pre_filter: Status, sampled: bool, calls: list[str]
) -> None:
    idle = IdleAfterSkip("Idle", pre_filter)
    other = RecordingReserve("Other")
    sets = PluginSets(pre_filter=[idle], filter=[idle], pre_score=[idle],
                      score=[(idle, 1), (PreferNode("n2"), 1)], reserve=[idle, other],
                      pre_bind=[idle])
    fw = Framework(SCHED, sets, metrics=Metrics().profile(SCHED) if sampled else None)
    state = CycleState()
    state.record_plugin_metrics = sampled
    answers = _every_point(fw, state)
    assert idle.calls == calls
    assert [entry[0] for entry in other.log] == ["reserve:Other", "unreserve:Other"]
    # Whatever was called, every point answered as when every plugin runs (a state marked
    # sampled, on a framework without metrics: nothing is left out, nothing timed).
    everything = CycleState()
    everything.record_plugin_metrics = True
    assert answers == _every_point(Framework(SCHED, sets), everything)
