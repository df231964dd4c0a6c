"""Explanations: every Filter plugin on every node, scores, the preemption preview, hints.

Each case builds a scheduler from a listing (the one-shot mode's path), explains a pending pod,
then lets the real cycle schedule the same pod and checks that the explanation said what the
cycle then did: the same FailedScheduling message, the same node, the same victims.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from scheduler.config import default_config, parse_config
from scheduler.cycle import schedule_one
from scheduler.explain import (
    WIDTH,
    ExplainError,
    Explanation,
    Listing,
    as_dict,
    explain,
    explain_in_loop,
    from_dict,
    scheduler_from_listing,
    to_text,
)
from scheduler.framework.interface import BoolArray, Code, CycleState, FilterResult, NodeView
from scheduler.framework.ports import NullPorts
from scheduler.framework.registry import PluginSpec
from scheduler.intake import Intake
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler
from scheduler.testing import node, pod
from tests.plugins.test_default_preemption import FakeEvictor, pdb

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
SPREAD_ZONE = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]}


@dataclass
class Case:
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    pending: dict[str, Any]
    # Per node: the reasons FailedScheduling counts ([] = fits).
    counted: dict[str, list[str]]
    # Per node: every failing plugin and a substring of its details.
    failing: dict[str, dict[str, str]] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)


CASES = {
    "mixed reasons, every plugin's verdict": Case(
        nodes=[node("small", cpu="1"), node("gpu", cpu="8", taints=[GPU_TAINT]),
               node("busy", cpu="4"), node("full", cpu="4", pods=1)],
        pods=[pod("filler", cpu="3", node_name="busy"), pod("one", cpu="1", node_name="full")],
        pending=pod("web", cpu="2", spec={"nodeSelector": {"disk": "ssd"}}),
        counted={
            "small": ["node(s) didn't match Pod's node affinity/selector"],
            "gpu": ["node(s) had untolerated taint(s)"],
            "busy": ["node(s) didn't match Pod's node affinity/selector"],
            "full": ["node(s) didn't match Pod's node affinity/selector"],
        },
        failing={
            "small": {"NodeAffinity": "nodeSelector disk=ssd: no such label",
                      "NodeResourcesFit": "cpu: the pod requests 2, 1 free (1 allocatable, 0 "
                                          "requested)"},
            "gpu": {"TaintToleration": "untolerated taint dedicated=gpu:NoSchedule",
                    "NodeAffinity": "disk=ssd"},
            "busy": {"NodeAffinity": "disk=ssd",
                     "NodeResourcesFit": "cpu: the pod requests 2, 1 free (4 allocatable, 3 "
                                         "requested)"},
            "full": {"NodeAffinity": "disk=ssd", "NodeResourcesFit": "pods: 1 of 1 in use"},
        },
        hints=[],
    ),
    "resources short by different amounts": Case(
        nodes=[node("a", cpu="2"), node("b", cpu="4"), node("c", cpu="4")],
        pods=[pod("x", cpu="1500m", node_name="a"), pod("y", cpu="4", node_name="b"),
              pod("z", cpu="3500m", node_name="c")],
        pending=pod("web", cpu="1"),
        counted={n: ["Insufficient cpu"] for n in ("a", "b", "c")},
        failing={"a": {"NodeResourcesFit": "cpu: the pod requests 1, 500m free (2 allocatable, "
                                           "1500m requested)"}},
        hints=["2 nodes would fit with 500m less cpu; 3 with 1 less"],
    ),
    "a taint, and the toleration that would help": Case(
        nodes=[node("gpu-1", taints=[GPU_TAINT]), node("gpu-2", taints=[GPU_TAINT]),
               node("small", cpu="1")],
        pods=[],
        pending=pod("web", cpu="2"),
        counted={"gpu-1": ["node(s) had untolerated taint(s)"],
                 "gpu-2": ["node(s) had untolerated taint(s)"], "small": ["Insufficient cpu"]},
        failing={"gpu-1": {"TaintToleration": "untolerated taint dedicated=gpu:NoSchedule"}},
        hints=["tolerate dedicated=gpu:NoSchedule: 2 nodes would then pass every filter",
               "1 node would fit with 1 less cpu"],
    ),
    "spread skew, and the zone that would keep it": Case(
        nodes=[node("a1", zone="zone-a"), node("b1", zone="zone-b"),
               node("c1", zone="zone-c", cpu="1")],
        pods=[pod(f"w{i}", cpu="100m", node_name=n, labels={"app": "web"})
              for i, n in enumerate(("a1", "a1", "b1", "b1"))],
        pending=pod("web", cpu="2", labels={"app": "web"}, spec=SPREAD_ZONE),
        counted={"a1": ["node(s) didn't match pod topology spread constraints"],
                 "b1": ["node(s) didn't match pod topology spread constraints"],
                 "c1": ["Insufficient cpu"]},
        failing={"a1": {"PodTopologySpread": "topology.kubernetes.io/zone=zone-a: skew 3 > "
                                             "maxSkew 1 (global minimum 0)"}},
        hints=["0 nodes in zone-c satisfy the spread constraint topology.kubernetes.io/zone "
               "(maxSkew 1) and the other filters"],
    ),
}


def build(
    nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
    pdbs: Sequence[Mapping[str, Any]] = (), config: Mapping[str, Any] | None = None,
) -> tuple[Scheduler, Intake]:
    registry = default_registry()
    cfg = parse_config(dict(config), registry) if config else default_config(registry)
    listing = Listing([dict(n) for n in nodes], [dict(p) for p in pods], pdbs=list(pdbs))
    return scheduler_from_listing(cfg, registry, listing)


def failures(s: Scheduler) -> list[tuple[str, str, str]]:
    reporter = s.reporter
    assert isinstance(reporter, NullPorts)
    return reporter.failures


def by_node(e: Explanation) -> dict[str, Any]:
    return {r.node: r for r in e.nodes}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_every_plugin_on_every_node_and_the_message_the_cycle_writes(case: Case) -> None:
    s, intake = build(case.nodes, [*case.pods, case.pending], case.pdbs)
    e = explain(s, intake.pod_info(case.pending))

    reports = by_node(e)
    assert {n: r.counted for n, r in reports.items()} == case.counted
    for name, report in reports.items():
        assert [v.plugin for v in report.filters] == e.filter_plugins, "every plugin, every node"
        failing = {v.plugin: v for v in report.filters
                   if v.code not in ("Success", "Skip")}
        assert report.counted_plugin in failing
        for plugin, detail in case.failing.get(name, {}).items():
            assert plugin in failing, (name, plugin)
            assert any(detail in d for d in failing[plugin].details), failing[plugin].details
    assert e.hints[: len(case.hints)] == case.hints or set(case.hints) <= set(e.hints), e.hints

    # The cycle, on the same cache, says the same thing.
    assert e.outcome == "unschedulable"
    assert schedule_one(s, timeout=0)
    ((key, reason, message),) = failures(s)
    assert (key, reason) == ("default/web", "Unschedulable")
    assert e.message == message


def test_scores_per_plugin_weighted_and_the_node_the_cycle_binds() -> None:
    nodes = [node("big", cpu="16", memory="32Gi"), node("mid", cpu="8"),
             node("tiny", cpu="1"), node("tainted", taints=[GPU_TAINT])]
    pending = pod("web", cpu="500m", memory="256Mi")
    s, intake = build(nodes, [pod("x", cpu="4", node_name="mid"), pending])
    e = explain(s, intake.pod_info(pending))

    feasible = [r for r in e.nodes if r.feasible]
    assert [r.node for r in feasible] == ["big", "mid", "tiny"]
    weights = dict(e.score_plugins)
    for r in feasible:
        assert r.total == sum(score * weights[name] for name, score in r.scores.items())
        assert all(0 <= v <= 100 for v in r.scores.values())
    totals = [r.total or 0 for r in feasible]
    assert totals == sorted(totals, reverse=True) and totals[0] > totals[1]
    assert e.outcome == "schedulable" and e.message == "would be bound to big (highest score)"
    assert by_node(e)["tainted"].counted == ["node(s) had untolerated taint(s)"]

    assert schedule_one(s, timeout=0)
    s.stop(timeout=20)  # the binding cycle runs on a binding thread
    ports = s.binder
    assert isinstance(ports, NullPorts) and ports.bound == [("default/web", "big")]


def preempting_scheduler(evictor: FakeEvictor) -> tuple[Scheduler, Intake]:
    registry = default_registry()
    ports = NullPorts()
    s = Scheduler(default_config(registry), registry, binder=ports, reporter=ports,
                  evictor=evictor, seed=3)
    return s, Intake(s)


def test_preemption_preview_names_the_victims_the_cycle_then_evicts() -> None:
    evictor = FakeEvictor()
    s, intake = preempting_scheduler(evictor)
    for n in (node("n1", cpu="4"), node("n2", cpu="4")):
        intake.on_node("ADDED", n)
    running = [
        # n1: one pod under a budget that allows no disruption; n2: two pods, no budget.
        # Fewest budget violations decides before fewest victims: n2.
        pod("guarded", cpu="3", node_name="n1", priority=1, labels={"app": "foo"}),
        pod("other-1", cpu="2", node_name="n2", priority=5),
        pod("other-2", cpu="2", node_name="n2", priority=5),
    ]
    intake.resync("poddisruptionbudgets", [pdb("foo-budget", {"app": "foo"}, allowed=0)])
    pending = pod("urgent", cpu="3", priority=100)
    for p in [*running, pending]:
        intake.on_pod("ADDED", p)
    s.refresh()

    e = explain(s, intake.pod_info(pending))
    preview = e.preemption
    assert preview is not None and preview.nominate == "n2" and not preview.tied
    best, other = preview.candidates
    assert best.node == "n2" and best.pdb_violations == 0
    assert [(v.pod, v.priority, v.budgets) for v in best.victims] == [
        ("default/other-1", 5, []), ("default/other-2", 5, [])]
    assert other.node == "n1" and other.pdb_violations == 1
    assert [(v.pod, v.priority, v.budgets, v.violates) for v in other.victims] == [
        ("default/guarded", 1, ["default/foo-budget"], "default/foo-budget")]
    assert evictor.calls == [], "an explanation never evicts"
    assert e.message == ("0/2 nodes are available: 2 Insufficient cpu. preemption: found a "
                         "potential placement for pod on node n2, preempting 2 victims")

    assert schedule_one(s, timeout=0)
    plugin = s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(30)  # type: ignore[attr-defined]
    evicted = [c[1] for c in evictor.calls if c[0] == "evict"]
    assert [f"default/{v}" for v in evicted] == [v.pod for v in best.victims]
    ((_, _, message),) = failures(s)
    assert message == e.message


def test_preemption_preview_when_no_node_can_help() -> None:
    pending = pod("web", cpu="8", priority=10)
    s, intake = build([node("a", cpu="4"), node("b", cpu="4")],
                      [pod("low", cpu="1", node_name="b", priority=0), pending])
    e = explain(s, intake.pod_info(pending))
    assert e.preemption is not None and e.preemption.nominate is None
    assert e.preemption.message == ("preemption: 0/2 nodes are available: 2 Preemption is not "
                                    "helpful for scheduling.")
    assert e.message.endswith(e.preemption.message)


@pytest.mark.parametrize(("change", "error"), [
    ({"spec": {"nodeName": "a"}}, "pod default/web is already bound to a"),
    ({"profile": "nope"}, "no profile named 'nope' (profiles: secondary-scheduler)"),
])
def test_what_cannot_be_explained(change: Mapping[str, Any], error: str) -> None:
    raw = pod("web", cpu="1", node_name=change.get("spec", {}).get("nodeName", ""))
    s, intake = build([node("a")], [])
    with pytest.raises(ExplainError) as info:
        explain(s, intake.pod_info(raw), change.get("profile"))
    assert str(info.value) == error


def test_a_pod_of_another_scheduler_is_explained_with_the_first_profile() -> None:
    pending = pod("web", cpu="1", scheduler_name="default-scheduler")
    s, intake = build([node("a")], [pending])
    e = explain(s, intake.pod_info(pending))
    assert e.profile == "secondary-scheduler" and e.outcome == "schedulable"
    assert e.notes and "default-scheduler" in e.notes[0]


def test_explaining_changes_nothing_the_scheduler_keeps() -> None:
    pending = pod("web", cpu="3", priority=10)
    s, intake = build([node("a", cpu="4"), node("b", cpu="4")],
                      [pod("low", cpu="2", node_name="a", priority=0),
                       pod("low2", cpu="2", node_name="b", priority=0), pending])
    before = (s.rng.bit_generator.state, s.next_start_index, len(s.queue))
    e = explain(s, intake.pod_info(pending))
    assert e.preemption is not None and e.preemption.tied
    assert (s.rng.bit_generator.state, s.next_start_index, len(s.queue)) == before
    assert s.queue.nominator.all() == {}


def test_explain_in_loop_runs_on_the_thread_that_drains_the_inbox() -> None:
    pending = pod("web", cpu="1")
    s, intake = build([node("a")], [pending])
    info = intake.pod_info(pending)
    answers: list[Explanation] = []
    asker = threading.Thread(target=lambda: answers.append(explain_in_loop(s, info, None, 60)))
    asker.start()
    while not len(s.inbox):
        asker.join(0.001)
    assert answers == [], "nothing is computed until the scheduling thread drains the inbox"
    s.refresh()
    asker.join()
    assert answers[0].outcome == "schedulable"


def test_explain_in_loop_times_out_when_nobody_drains() -> None:
    pending = pod("web", cpu="1")
    s, intake = build([node("a")], [pending])
    with pytest.raises(TimeoutError):
        explain_in_loop(s, intake.pod_info(pending), None, 0)
    s.refresh()  # the abandoned request is dropped, not run


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_text_fits_100_columns_and_json_round_trips(case: Case) -> None:
    s, intake = build(case.nodes, [*case.pods, case.pending], case.pdbs)
    e = explain(s, intake.pod_info(case.pending))
    source = "one-shot: computed in this process from a listing of the cluster (no running " \
             "scheduler found)"
    e.pod = "a-namespace-as-long-as-kubernetes-allows-it-to-be-written-out-here/web"
    text = to_text(e, source)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert "\033[" not in text
    assert e.message.split(":")[0] in text
    assert to_text(from_dict(as_dict(e, source)), source) == text
    assert "\033[31mFAIL" in to_text(e, source, colour=True)


def test_a_budget_that_blocks_preemption_under_strict_pdb_mode() -> None:
    strict = {"profiles": [{"schedulerName": "secondary-scheduler", "pluginConfig": [
        {"name": "DefaultPreemption", "args": {"pdbMode": "Strict"}}]}]}
    pending = pod("urgent", cpu="3", priority=100)
    s, intake = build(
        [node("n1", cpu="4")],
        [pod("guarded", cpu="3", node_name="n1", priority=1, labels={"app": "foo"}), pending],
        [pdb("foo-budget", {"app": "foo"}, allowed=0)], config=strict)
    e = explain(s, intake.pod_info(pending))
    assert e.preemption is not None and e.preemption.nominate is None
    assert e.preemption.not_candidates == {
        "n1": "preemption would violate PodDisruptionBudget default/foo-budget"}
    text = to_text(e, "one-shot")
    assert "n1: preemption would violate PodDisruptionBudget default/foo-budget" in text
    assert schedule_one(s, timeout=0)
    ((_, _, message),) = failures(s)
    assert message == e.message


class _OddNodes:
    """A Filter plugin of one's own, with the explain hooks: it rejects nodes whose name
    ends in an odd digit."""

    name = "OddNodes"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        odd = np.asarray([int(nodes.snapshot.nodes.names[r][-1]) % 2 == 1
                          for r in nodes.idx.tolist()], dtype=np.bool_)
        result.add_reason(odd, Code.UNSCHEDULABLE, "node(s) were odd")
        return result

    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        return [[f"{nodes.snapshot.nodes.names[r]} ends in an odd digit"]
                for r in nodes.idx.tolist()]

    def explain_hints(self, state: CycleState, pod: PodInfo, nodes: NodeView,
                      rejected: BoolArray, others_pass: BoolArray) -> list[str]:
        return [f"rename {int(np.count_nonzero(rejected & others_pass))} node(s)"]


def test_a_plugin_of_ones_own_explains_itself_through_the_hooks() -> None:
    """The per-node why and the hints come from the plugin (scheduler.framework.explaining),
    and a plugin with a hints hook gets no generic 'fail only' line."""
    registry = default_registry()
    registry.register(PluginSpec(name="OddNodes", factory=lambda args, handle: _OddNodes()))
    config = parse_config({"profiles": [{"plugins": {"filter": {"enabled": [
        {"name": "OddNodes"}]}}}]}, registry)
    listing = Listing([node("n1"), node("n2", cpu="1"), node("n3")], [])
    s, intake = scheduler_from_listing(config, registry, listing)
    pending = pod("web", cpu="2")
    e = explain(s, intake.pod_info(pending))
    odd = {r.node: v for r in e.nodes for v in r.filters if v.plugin == "OddNodes"}
    assert odd["n1"].details == ["n1 ends in an odd digit"]
    assert odd["n3"].details == ["n3 ends in an odd digit"]
    assert odd["n2"].code == "Success" and odd["n2"].details == []
    assert "rename 2 node(s)" in e.hints
    assert not any("fail only OddNodes" in h for h in e.hints), e.hints
