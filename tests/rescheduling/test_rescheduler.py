"""The rescheduler's passes on an in-process scheduler with a manual clock: what it moves,
where to, what it refuses and why, and what it tells the API."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from scheduler.framework.avoidance import owner_key
from scheduler.framework.ports import EvictionOutcome
from scheduler.intake import DELETED, MODIFIED
from scheduler.rescheduling.rescheduler import AVOID_REASON, RESCHEDULED, WOULD_RESCHEDULE
from scheduler.testing import node, run_cycles
from tests.rescheduling.conftest import owned


def packed(per_node: int = 3) -> list[dict[str, Any]]:
    """Deployment web: ``per_node`` one-cpu pods on each of a and b."""
    return [owned(f"web-{n}{i}", "web", node=n) for n in "ab" for i in range(per_node)]


def test_a_pass_moves_several_pods_of_one_controller_while_the_simulation_gains(
        world_of: Any) -> None:
    # 3,3 and an empty node: one pod from each full node, 2,2,2. One pass, one controller.
    w = world_of([node("a"), node("b"), node("c")], packed())
    report = w.r.run_once()
    assert sorted((m.source, m.target) for m in report.moves) == [("a", "c"), ("b", "c")]
    assert sorted(w.ports.evicted) == sorted(m.pod.key for m in report.moves)
    assert [e[1] for e in w.ports.events] == [RESCHEDULED, RESCHEDULED]
    for move, event in zip(report.moves, w.ports.events, strict=True):
        # The room gains, by its own plugins; the default spreading is the pod's own term
        # for none of the objectives.
        assert event[2].startswith(f"Evicted to move it from node {move.source} to node c "
                                   "(UnderutilizedNodes +"), event
        assert "PreferredTerms +0; not counted: PodTopologySpread +" in event[2], event
        assert "the scheduler scores c +" in event[2] and f"over {move.source} in all)" in (
            event[2])
    owner = owner_key(report.moves[0].pod)
    assert w.s.avoidance.nodes_for(owner) == {"a": AVOID_REASON, "b": AVOID_REASON}
    assert {f.move.pod.uid for f in w.r.in_flight.values()} == {
        m.pod.uid for m in report.moves}
    # The next pods of a and b: one eviction per node in flight.
    assert sorted(v.reason for v in report.verdicts if v.target is None) == ["limit", "limit"]
    assert evictions(w, "evicted") == 2
    assert w.s.metrics.rescheduler_skips.labels("limit").value == 2


def test_a_second_move_of_a_controller_is_refused_once_the_first_evens_the_nodes(
        world_of: Any) -> None:
    # 4 pods on a, b empty: with the per-node limit out of the way, two move (2,2), and the
    # third would only swap the imbalance.
    pods = [owned(f"web-{i}", "web", node="a") for i in range(4)]
    w = world_of([node("a"), node("b")], pods, {"limits": {"perNode": 5, "perNamespace": 5}})
    report = w.r.run_once()
    assert [(m.source, m.target) for m in report.moves] == [("a", "b"), ("a", "b")]
    (last,) = [v for v in report.verdicts if v.target is None]
    assert last.reason == "no_better_node", last
    assert w.placement() == {f"web-{i}": "a" for i in range(4)}, "the cache is restored"


def test_a_controller_with_a_replacement_not_bound_yet_is_busy(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c"), node("d")], packed(),
                 {"limits": {"perPass": 1}})
    assert len(w.r.run_once().moves) == 1
    report = w.r.run_once()
    assert report.moves == []
    assert {v.reason for v in report.verdicts} == {"controller_busy"}
    assert w.s.metrics.rescheduler_skips.labels("controller_busy").value == 2


def test_the_replacement_lands_on_the_target_not_back_and_the_next_move_follows(
        world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c"), node("d")], packed(),
                 {"limits": {"perPass": 1}})
    (move,) = w.r.run_once().moves
    # The API deletes the evicted pod; the ReplicaSet creates a replacement.
    w.deliver(DELETED, owned(move.pod.name, "web", node=move.source))
    w.deliver(MODIFIED, owned("web-new", "web"))
    run_cycles(w.s)
    (bound,) = [node for key, node in w.null.bound if key == "default/web-new"]
    assert bound != move.source
    w.deliver(MODIFIED, owned("web-new", "web", node=bound))
    report = w.r.run_once()
    assert report.landed == {move.pod.key: "target" if bound == move.target else "other"}
    assert w.s.metrics.rescheduler_replacements.labels("target").value == (
        1 if bound == move.target else 0)
    # The next pass moves a pod of the other packed node to the remaining empty one.
    (second,) = report.moves
    assert {second.source, move.source} == {"a", "b"}
    assert second.target not in (move.source, second.source, bound)


def test_two_moves_in_one_pass_never_claim_the_same_room(world_of: Any) -> None:
    pods = [owned("one-0", "one", node="a", cpu="2"), owned("two-0", "two", node="a", cpu="2")]
    w = world_of([node("a"), node("c", cpu="3")], pods, {"limits": {"perNode": 5}})
    report = w.r.run_once()
    assert [(m.pod.name, m.target) for m in report.moves] == [("one-0", "c")]
    (refused,) = [v for v in report.verdicts if v.target is None]
    assert refused.pod.name == "two-0"
    assert refused.blocker == "no other node fits it"
    # The pass leaves the cache as it found it.
    assert w.placement() == {"one-0": "a", "two-0": "a"}
    assert w.s.cache.nodes.requested[w.s.snapshot.row_of("c")].sum() == 0


def test_a_pod_moves_to_a_node_that_satisfies_its_preferred_affinity(world_of: Any) -> None:
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fast"]}]}}]}}
    pods = [owned("api-0", "api", node="a", cpu="100m", spec={"affinity": affinity})]
    w = world_of([node("a"), node("b"), node("fast", labels={"tier": "fast"})], pods)
    (move,) = w.r.run_once().moves
    assert move.target == "fast"
    (event,) = w.ports.events
    # Each objective's own gain, the move's first.
    assert event[2].endswith("to node fast (PreferredTerms +200: NodeAffinity +200; "
                             "UnderutilizedNodes +0; the scheduler scores fast +200 over a "
                             "in all)"), event


@pytest.mark.parametrize("cordon", [
    {"unschedulable": True},
    # Even for a pod that tolerates the cordon: a draining node is never a target.
    {"unschedulable": True, "tolerates": True},
])
def test_a_cordoned_node_is_never_a_target(world_of: Any, cordon: dict[str, bool]) -> None:
    spec = ({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                              "effect": "NoSchedule"}]} if cordon.get("tolerates") else {})
    pods = [owned(f"web-{i}", "web", node="a", spec=spec) for i in range(3)]
    w = world_of([node("a"), node("c", unschedulable=True)], pods)
    report = w.r.run_once()
    assert report.moves == [] and w.ports.evicted == []
    assert {v.blocker for v in report.verdicts} == {"no other node fits it"}


def test_dry_run_evicts_nothing_records_nothing_and_reports_once(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed(), {"dryRun": True})
    first = w.r.run_once()
    second = w.r.run_once()
    assert len(first.moves) == 2 and set(first.outcomes.values()) == {"DryRun"}
    assert [m.pod.key for m in second.moves] == [m.pod.key for m in first.moves]
    assert w.ports.evicted == []
    assert w.r.in_flight == {}
    assert w.s.avoidance.nodes_for(owner_key(first.moves[0].pod)) == {}
    assert [e[1] for e in w.ports.events] == [WOULD_RESCHEDULE] * 2
    assert all(e[2].startswith("Dry run: would move from") for e in w.ports.events)
    assert evictions(w, "dry_run") == 4
    # The same decisions said as in a real run: the skips too.
    assert w.s.metrics.rescheduler_skips.labels("limit").value == 4


def test_no_better_node_no_eviction(world_of: Any) -> None:
    # The big pod fits nowhere else; the small node's extra room would not help it.
    pods = [owned("big-0", "big", node="a", cpu="3")]
    w = world_of([node("a"), node("small", cpu="2")], pods)
    report = w.r.run_once()
    assert report.moves == [] and w.ports.evicted == [] and w.ports.events == []
    assert [v.blocker for v in report.verdicts] == ["no other node fits it"]


@pytest.mark.parametrize(("gain", "moves"), [(10, 1), (60, 0)])
def test_the_minimum_gain_is_the_aggressiveness_knob(world_of: Any, gain: int,
                                                     moves: int) -> None:
    # A 1-cpu pod alone on a: a scores 75 on cpu, the empty node 75 too, but a has memory
    # from nothing else; make the gap modest: two pods on a, one moves to the empty node.
    pods = [owned("web-0", "web", node="a"), owned("db-0", "db", node="a")]
    w = world_of([node("a"), node("c")], pods, {"minScoreGain": gain})
    report = w.r.run_once()
    assert len(report.moves) == moves
    if not moves:
        assert all(v.reason == "below_min_gain"
                   and v.blocker.startswith("the best other node, c, scores +")
                   and v.blocker.endswith("below the minimum gain of 60")
                   for v in report.verdicts), report.verdicts


def test_a_budget_that_allows_no_disruption_is_not_tried(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed())
    w.intake.on_pdb(None, {"metadata": {"name": "web", "namespace": "default",
                                        "resourceVersion": "1"},
                           "spec": {"selector": {"matchLabels": {"app": "web"}}},
                           "status": {"disruptionsAllowed": 0}})
    w.s.refresh()
    report = w.r.run_once()
    assert report.moves == [] and w.ports.evicted == []
    assert {v.blocker for v in report.verdicts} == {
        "PodDisruptionBudget default/web allows no disruption now"}


def test_an_eviction_a_budget_refuses_is_skipped_and_tried_again(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed(), {"limits": {"perPass": 1}})
    w.ports.outcome = EvictionOutcome.BLOCKED_BY_PDB
    first = w.r.run_once()
    (move,) = first.moves
    assert first.outcomes == {move.pod.key: "BlockedByPDB"}
    assert w.r.in_flight == {} and w.ports.events == []
    assert w.s.avoidance.nodes_for(owner_key(move.pod)) == {}
    assert evictions(w, "blocked_by_pdb") == 1
    w.ports.outcome = EvictionOutcome.EVICTED
    assert len(w.r.run_once().moves) == 1
    assert len(w.ports.evicted) == 2


@pytest.mark.parametrize(("limits", "moved"), [
    ({"perPass": 1}, 1),
    ({"perPass": 5, "perNode": 1, "perNamespace": 5}, 2),   # one from a, one from b
    ({"perPass": 5, "perNode": 5, "perNamespace": 3}, 3),
    # 4,4,0,0,0,0 to 2,2,1,1,1,1: the fewest moves, from the fuller node each time.
    ({"perPass": 5, "perNode": 5, "perNamespace": 5}, 4),
])
def test_limits_per_pass_node_and_namespace(world_of: Any, limits: dict[str, int],
                                            moved: int) -> None:
    # Four controllers, two pods each on a and b; four empty nodes.
    pods = [owned(f"{app}-{n}", app, node=n) for app in ("p", "q", "r", "s")
            for n in "ab"]
    nodes = [node(n) for n in ("a", "b", "c", "d", "e", "f")]
    w = world_of(nodes, pods, {"limits": limits})
    report = w.r.run_once()
    assert len(report.moves) == moved
    per_node = limits.get("perNode", 1)
    assert all(n <= per_node for n in Counter(m.source for m in report.moves).values())
    # Sequential accounting: no target ends with more than 2, no move into a source.
    ends = Counter(m.target for m in report.moves)
    assert max(ends.values()) <= 2 and not set(ends) & {"a", "b"}, report.moves


def test_moves_in_flight_count_against_the_node_limit_until_their_replacement_binds(
        world_of: Any) -> None:
    pods = [owned(f"{app}-0", app, node="a") for app in ("p", "q", "r")]
    w = world_of([node("a"), node("c"), node("d")], pods, {"limits": {"perNode": 1}})
    (move,) = w.r.run_once().moves
    assert w.r.run_once().moves == []  # a's one eviction is still in flight
    w.deliver(DELETED, owned(move.pod.name, move.pod.owner_name, node="a"))
    w.deliver(MODIFIED, owned("new", move.pod.owner_name, node=move.target))
    report = w.r.run_once()
    assert report.landed == {move.pod.key: "target"}
    assert len(report.moves) == 1


def test_a_replacement_never_bound_ends_the_move_after_the_timeout(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed(),
                 {"moveTimeout": "5m", "limits": {"perPass": 1}})
    (move,) = w.r.run_once().moves
    w.clock.advance(299)
    assert w.r.run_once().landed == {}
    w.clock.advance(1)
    assert w.r.run_once().landed == {move.pod.key: "timeout"}
    assert w.s.metrics.rescheduler_replacements.labels("timeout").value == 1


def test_a_standby_moves_nothing(world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed())
    w.s._scheduling.clear()
    assert w.r.tick() is None
    assert w.ports.evicted == []
    w.s.allow_scheduling()
    report = w.r.tick()
    assert report is not None and len(report.moves) == 2


def test_protected_pods_are_never_candidates(world_of: Any) -> None:
    pods = [owned("ds-0", "ds", kind="DaemonSet", node="a"),
            owned("other-0", "other", node="a", scheduler_name="default-scheduler"),
            owned("scratch-0", "scratch", node="a",
                  spec={"volumes": [{"name": "tmp", "emptyDir": {}}]})]
    w = world_of([node("a"), node("c")], pods)
    report = w.r.run_once()
    assert report.protected == 3 and report.verdicts == [] and report.moves == []


def evictions(w: Any, result: str) -> float:
    counter = w.s.metrics.rescheduler_evictions
    return sum(counter.labels(objective, result).value
               for objective in ("UnderutilizedNodes", "PreferredTerms"))


def test_with_the_scheduling_loop_running_the_pass_reads_the_cache_on_its_thread(
        world_of: Any) -> None:
    w = world_of([node("a"), node("b"), node("c")], packed())
    threads: list[str] = []
    candidates = w.r._candidates

    def spy() -> Any:
        threads.append(threading.current_thread().name)
        return candidates()

    w.r._candidates = spy
    w.s.start()
    report = w.r.run_once()
    assert threads == ["scheduling"]
    assert len(report.moves) == 2 and len(w.ports.evicted) == 2
