"""Passes until nothing moves, on issue 37's clusters (1-CPU pods on 4-CPU nodes, the default
limits 1/2/5 and minScoreGain 10): how many passes and evictions it takes, that it ends within
one pod of balanced, never moves a pod back, and moves nothing where nothing should move.
Each pass is settled as the API would: the evicted pods go, their ReplicaSet's replacements
are scheduled and run (``World.settle``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.intake import MODIFIED
from scheduler.testing import node
from tests.rescheduling.conftest import owned

PREFERS_SSD = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}


def placed(app: str, counts: dict[str, int], **kw: Any) -> list[dict[str, Any]]:
    return [owned(f"{app}-{n}{i}", app, node=n, **kw)
            for n, count in counts.items() for i in range(count)]


def evictions(reports: list[Any]) -> int:
    return sum(len(r.moves) for r in reports)


def landed(reports: list[Any]) -> set[str]:
    return {where for r in reports for where in r.landed.values()}


@pytest.mark.parametrize(("before", "joining", "most_passes", "ideal"), [
    # Pack-then-grow: 3,3,3 and three empty nodes join (descheduler: 3 evictions).
    ({"a": 3, "b": 3, "c": 3}, ["d", "e", "f"], 3, 3),
    # Crowded: 4,4,1,0 (descheduler: 2 evictions, ending 3,3,2,1).
    ({"a": 4, "b": 4, "c": 1}, ["d"], 3, 3),
])
def test_an_imbalance_ends_within_one_pod_of_balanced_in_a_few_passes(
        world_of: Any, before: dict[str, int], joining: list[str], most_passes: int,
        ideal: int) -> None:
    w = world_of([node(n) for n in [*before, *joining]], placed("web", before))
    reports = w.converge(passes=5)
    counts = w.pods_per_node("web")
    every = [counts.get(n, 0) for n in [*before, *joining]]
    assert max(every) - min(every) <= 1, counts
    # The moves with work to do took at most this many passes; the last one moves nothing.
    assert len(reports) - 1 <= most_passes and not reports[-1].moves
    assert evictions(reports) == ideal
    assert "source" not in landed(reports)


def test_a_cluster_balanced_within_the_default_spread_moves_nothing(world_of: Any) -> None:
    # Issue 37: 3,3,3,3 at 75% CPU, three pods preferring ssd already on the ssd node and nine
    # plain pods on the others. Moving a plain pod would leave 4/4 and 2/4: the gain came
    # from the system default spreading, which is no term of the pod's own.
    nodes = [node("ssd", labels={"disk": "ssd"}), node("a"), node("b"), node("c")]
    pods = [*placed("fast", {"ssd": 3}, spec={"affinity": PREFERS_SSD}),
            *placed("plain", {"a": 3, "b": 3, "c": 3})]
    w = world_of(nodes, pods)
    for _ in range(5):
        report = w.r.run_once()
        assert report.moves == [], report.moves
    assert w.ports.evicted == []
    skipped = {v.pod.owner_name: v.reason for v in report.verdicts}
    assert skipped == {"fast": "no_better_node", "plain": "no_better_node"}, report.verdicts


def test_the_preferred_label_moves_every_pod_that_fits_and_no_other(world_of: Any) -> None:
    # Six pods preferring ssd, 2,2,2 on plain nodes; a 4-CPU node with the label joins: four
    # fit there (descheduler: six evictions, two of which bounced straight back).
    nodes = [node(n) for n in "abc"]
    w = world_of(nodes, placed("api", {"a": 2, "b": 2, "c": 2}, spec={"affinity": PREFERS_SSD}))
    w.intake.on_node(None, node("ssd", labels={"disk": "ssd"}))
    w.s.refresh()
    reports = w.converge(passes=5)
    assert evictions(reports) == 4
    assert {m.target for r in reports for m in r.moves} == {"ssd"}
    assert w.pods_per_node("api")["ssd"] == 4
    assert landed(reports) == {"target"}
    assert not reports[-1].moves


def test_a_node_that_gains_the_preferred_label_draws_the_pods_that_fit(world_of: Any) -> None:
    nodes = [node(n) for n in "abc"]
    w = world_of(nodes, placed("api", {"a": 1, "b": 1}, spec={"affinity": PREFERS_SSD}))
    w.intake.on_node(MODIFIED, node("c", labels={"disk": "ssd"}))
    w.s.refresh()
    reports = w.converge(passes=5)
    assert w.pods_per_node("api") == {"c": 2}
    assert evictions(reports) == 2


def spread_pods(app: str, counts: dict[str, int], *, declared: bool) -> list[dict[str, Any]]:
    spec = {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}}]}
    return placed(app, counts, spec=spec if declared else {})


@pytest.mark.parametrize(("declared", "moved"), [(True, 1), (False, 0)])
def test_spreading_is_a_preferred_term_only_when_the_pod_declares_it(
        world_of: Any, declared: bool, moved: int) -> None:
    # PreferredTerms alone: the same 2,0 layout is a gain for pods that ask to be spread,
    # and none for pods that only get the system default spreading.
    w = world_of([node("a"), node("b")], spread_pods("web", {"a": 2}, declared=declared),
                 {"objectives": ["PreferredTerms"]})
    report = w.r.run_once()
    assert len(report.moves) == moved
    if moved:
        (event,) = w.ports.events
        assert "(PreferredTerms +" in event[2] and ": PodTopologySpread +" in event[2]
    else:
        assert [v.reason for v in report.verdicts] == ["no_better_node"]


def test_underutilized_nodes_moves_only_when_the_requests_end_more_even(
        world_of: Any) -> None:
    # Bin packing (MostAllocated): NodeResourcesFit scores the fuller node higher, so moving
    # b's pod to a gains +28 of that objective's plugins. a would end 3/4 where b was 1/4: the
    # nodes would end less even, which is not what UnderutilizedNodes is for.
    config = {"profiles": [{"schedulerName": "secondary-scheduler", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}
    w = world_of([node("a"), node("b")], [*placed("other", {"a": 2}), *placed("web", {"b": 1})],
                 config=config)
    report = w.r.run_once()
    assert report.moves == []
    (web,) = [v for v in report.verdicts if v.pod.owner_name == "web"]
    assert web.reason == "no_balance_gain" and web.objective_gains["UnderutilizedNodes"] > 10
    assert web.blocker.startswith("moving it to a would not even out the nodes' requests "
                                  "(75% full after the move, against 25% for its node before")
