"""The testing kit plugin authors use (scheduler.testing), checked on built-in plugins whose
answers are known from upstream."""

from __future__ import annotations

from scheduler.plugins import node_affinity, node_resources_fit, taint_toleration
from scheduler.testing import filter_nodes, node, pod, schedule, score_nodes


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
