"""The testing kit plugin authors use (scheduler.testing), checked on built-in plugins whose
answers are known from upstream."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
import pytest

from scheduler.cycle import SchedulingError
from scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    ClusterSnapshot,
    CycleState,
    FilterResult,
    Handle,
    IntArray,
    NodeSummary,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    Status,
)
from scheduler.plugins import node_affinity, node_resources_fit, taint_toleration
from scheduler.testing import (
    ManualClock,
    filter_nodes,
    node,
    pod,
    run_cycles,
    schedule,
    scheduler_of,
    score_nodes,
)


def test_filter_nodes_runs_prefilter_then_filter_on_every_node() -> None:
    nodes = [node("small", cpu="1"), node("big", cpu="8")]
    reasons = filter_nodes(node_resources_fit.SPEC, None, pod("p", cpu="2"), nodes)
    assert reasons == {"small": ["Insufficient cpu"], "big": []}


def test_filter_nodes_counts_the_pods_already_there() -> None:
    nodes = [node("a", cpu="4"), node("b", cpu="4")]
    running = [pod("r", cpu="3", node_name="a")]
    reasons = filter_nodes(node_resources_fit.SPEC, None, pod("p", cpu="2"), nodes, running)
    assert reasons == {"a": ["Insufficient cpu"], "b": []}


def test_score_nodes_gives_normalised_scores_per_node() -> None:
    nodes = [node("plain"), node("tainted", taints=[
        {"key": "k", "value": "v", "effect": "PreferNoSchedule"}])]
    scores = score_nodes(taint_toleration.SPEC, None, pod("p"), nodes)
    assert scores == {"plain": 100, "tainted": 0}


def test_score_nodes_passes_the_arguments() -> None:
    args = {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    nodes = [node("ssd", labels={"disk": "ssd"}), node("hdd", labels={"disk": "hdd"})]
    assert score_nodes(node_affinity.SPEC, args, pod("p"), nodes) == {"ssd": 100, "hdd": 0}


def test_schedule_runs_whole_cycles_and_reports_pods_left_pending() -> None:
    nodes = [node("n1", cpu="2")]
    pods = [pod("first", cpu="1", priority=10), pod("second", cpu="1"), pod("third", cpu="1")]
    assert schedule(None, nodes, pods) == {"first": "n1", "second": "n1", "third": ""}


# -- the kit runs plugins as a profile does (issue 32) --------------------------------------
class Restrictor:
    """PreFilter restricts the cycle to node "a"; PreScore says Skip for pods labelled so."""

    name = "Restrictor"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return PreFilterResult(frozenset({"a"})), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        return FilterResult.all_pass(len(nodes))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        return SKIP if pod.labels.get("skip") else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        return np.full(len(nodes), 7, dtype=np.int64)


RESTRICTOR = PluginSpec("Restrictor", Restrictor,
                        points=frozenset({"preFilter", "filter", "preScore", "score"}))


def test_filter_nodes_reports_the_nodes_prefilter_left_out_as_a_cycle_does() -> None:
    """cycle.pre_filter_candidates: upstream's "didn't satisfy plugin(s)" for the rest."""
    reasons = filter_nodes(RESTRICTOR, None, pod("p"), [node("a"), node("b")])
    assert reasons == {"a": [], "b": ["node(s) didn't satisfy plugin(s) [Restrictor]"]}


def test_score_nodes_runs_prescore_and_leaves_a_skipping_plugin_out() -> None:
    nodes = [node("a"), node("b")]
    assert score_nodes(RESTRICTOR, None, pod("p"), nodes) == {"a": 7, "b": 7}
    assert score_nodes(RESTRICTOR, None, pod("p", labels={"skip": "1"}), nodes) == {
        "a": 0, "b": 0}


class OutOfRange(Restrictor):
    name = "OutOfRange"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        return np.full(len(nodes), 1_000, dtype=np.int64)


def test_score_nodes_fails_a_score_out_of_range_as_a_cycle_would() -> None:
    spec = PluginSpec("OutOfRange", OutOfRange, points=RESTRICTOR.points)
    with pytest.raises(SchedulingError, match='plugin "OutOfRange" returns an invalid score'):
        score_nodes(spec, None, pod("p"), [node("a")])


@pytest.mark.parametrize(("nodes", "pods", "message"), [
    pytest.param([pod("p")], [], "nodes[0] is a Pod ('p'), not a Node", id="a pod as a node"),
    pytest.param([node("n")], [node("m")], "pods[0] is a Node ('m'), not a Pod",
                 id="a node as a pod"),
    pytest.param([{"metadata": {"name": "q"}, "spec": {"containers": []}}], [],
                 "nodes[0] is a Pod ('q'), not a Node", id="a pod without its kind"),
])
def test_schedule_refuses_objects_of_the_wrong_kind(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        schedule(None, nodes, pods)
    assert str(err.value) == message


def test_scheduler_of_loads_the_installed_plugins_as_the_app_does() -> None:
    """The example NodePrice is installed (make install), not passed: its entry point is."""
    config = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "score": {"enabled": [{"name": "NodePrice", "weight": 100}]}}}]}
    nodes = [node("dear", labels={"node.example.com/hourly-price": "2"}),
             node("cheap", labels={"node.example.com/hourly-price": "1"})]
    assert schedule(config, nodes, [pod("p")]) == {"p": "cheap"}


def test_a_plugin_passed_takes_the_place_of_the_installed_one_of_its_name() -> None:
    class Dearest(Restrictor):
        name = "NodePrice"

        def pre_filter(
            self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
        ) -> tuple[PreFilterResult | None, Status]:
            return PreFilterResult(frozenset({"dear"})), SUCCESS

    config = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "multiPoint": {"enabled": [{"name": "NodePrice"}]}}}]}
    spec = PluginSpec("NodePrice", Dearest, points=RESTRICTOR.points)
    assert schedule(config, [node("dear"), node("cheap")], [pod("p")], plugins=[spec]) == {
        "p": "dear"}


class Clocked:
    """Records the Handle's clocks when it filters."""

    name = "Clocked"
    seen: ClassVar[list[tuple[float, float]]] = []

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        self.seen.append((self.handle.now(), self.handle.wall_clock()))
        return FilterResult.all_pass(len(nodes))


def test_the_handle_gives_plugins_the_manual_clock_s_wall_clock() -> None:
    clock = ManualClock(now=5.0)
    clock.set_wall(datetime(2030, 6, 1, 12, 0, tzinfo=UTC))
    clock.advance(30)
    spec = PluginSpec("Clocked", Clocked, points=frozenset({"filter"}))
    config = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "filter": {"enabled": [{"name": "Clocked"}]}}}]}
    s, _ = scheduler_of(config, plugins=[spec], nodes=[node("a")], pods=[pod("p")],
                        clock=clock)
    run_cycles(s)
    assert Clocked.seen == [(35.0, datetime(2030, 6, 1, 12, 0, 30, tzinfo=UTC)
                             .timestamp())]


def test_the_builders_take_annotations() -> None:
    assert node("n", annotations={"a": "1"})["metadata"]["annotations"] == {"a": "1"}
    assert pod("p", annotations={"b": "2"})["metadata"]["annotations"] == {"b": "2"}
    summary = NodeSummary.from_object(node("n", annotations={"a": "1"}))
    assert summary.annotations == {"a": "1"}
