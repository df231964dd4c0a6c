"""Gangs through the whole scheduler: the intake counts members, GangScheduling holds them at
PreEnqueue and Permit, and the group's members are bound together or not at all."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache.pod_groups import POD_GROUPS
from scheduler.config.scheduler_config import default_config
from scheduler.framework.interface import Code, Status
from scheduler.framework.profile_config import GANG_SCHEDULING
from scheduler.intake import ADDED
from scheduler.plugins.registry import default_registry
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.testing import node, pod
from tests.test_cycle import Harness

WITH_GANGS = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
                  "multiPoint": {"enabled": [{"name": GANG_SCHEDULING}]}}}]}


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def member(name: str, group: str = "pg", cpu: str = "1") -> dict[str, Any]:
    return pod(name, uid=name, cpu=cpu, spec={"schedulingGroup": {"podGroupName": group}})


def test_the_default_profile_has_gang_scheduling_only_where_the_cluster_serves_pod_groups(
) -> None:
    """default_plugins.go: applyGangScheduling appends GangScheduling with the gate on."""
    def permit_plugins(gangs: bool) -> list[str]:
        config = default_config(default_registry(), gang_scheduling=gangs)
        return [ref.name for ref in config.profiles[0].points["permit"]]

    assert permit_plugins(False) == []
    assert permit_plugins(True) == [GANG_SCHEDULING]


def test_members_are_held_until_their_group_and_min_count_exist_then_bound_together() -> None:
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.add(member("a"), member("b"))
    assert h.drain() == 0 and h.where("a") == UNSCHEDULABLE  # no PodGroup yet
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 3))
    assert h.drain() == 0  # 2 of 3 members
    h.add(member("c"))
    assert h.drain() == 1  # one pod-group cycle for the three
    h.run_bindings()
    assert sorted(key for key, _ in h.ports.binds) == ["default/a", "default/b", "default/c"]


def drain_active(h: Harness) -> int:
    """Run cycles while activeQ has a pod: a group whose cycle failed waits in backoffQ,
    which ``pop`` would take from again and again while nothing else is ready
    (PopFromBackoffQ), as upstream retries its entity."""
    n = 0
    while h.s.queue.pending_pods()[ACTIVE] and h.cycle():
        n += 1
    return n


def gang_of(h: Harness, name: str, size: int, cpu: str = "1") -> list[str]:
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group(name, size))
    names = [f"{name}-{i}" for i in range(size)]
    h.add(*(member(n, name, cpu) for n in names))
    return names


def test_a_gang_that_cannot_fit_whole_binds_none_and_holds_no_room() -> None:
    """The issue's first case: 8 members, minCount 8, room for 6."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="6"))
    names = gang_of(h, "pg", 8)
    drain_active(h)
    h.run_bindings()
    assert h.ports.binds == []
    h.s.refresh()
    assert h.s.cache.assumed_uids() == set()
    assert all(h.where(n) == BACKOFF for n in names)
    failures = {h.ports.failures_of(n)[0][1] for n in names}
    # As upstream's group message: PodGroupPostFilter (preemption) found no victim.
    assert ("minCount (8) cannot be satisfied: 6 scheduled, 1 remaining, pod group "
            "preemption: No preemption victims found for incoming preemptor") in failures
    # Room comes: the whole gang goes.
    h.nodes(node("n2", cpu="6"))
    h.drain()
    h.run_bindings()
    assert len(h.ports.binds) == 8
    # Upstream's pod-group metrics: one attempt per group cycle.
    registry = h.s.metrics.registry
    for result in ("unschedulable", "scheduled"):
        assert registry.get_sample_value("scheduler_podgroup_schedule_attempts_total", {
            "result": result, "profile": "secondary-scheduler"}) == 1
    assert registry.get_sample_value(
        "scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 2


def test_two_gangs_that_fit_alone_but_not_together_end_with_one_whole() -> None:
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="6"))
    first = gang_of(h, "first", 4)
    second = gang_of(h, "second", 4)
    drain_active(h)
    h.run_bindings()
    bound = {key.split("/")[1] for key, _ in h.ports.binds}
    assert bound == set(first)
    assert all(h.where(n) == BACKOFF for n in second)
    h.s.refresh()
    assert h.s.cache.assumed_uids() <= {h.uid(n) for n in first}


def test_members_of_a_group_are_popped_together_from_the_queue() -> None:
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    gang_of(h, "pg", 3)
    assert h.cycle() is True  # one cycle places the three
    assert len(h.s.queue) == 0 and len(h.deferred) == 3


def test_a_coscheduling_gang_is_placed_all_or_nothing_on_the_same_machinery() -> None:
    from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS

    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="3"))
    h.intake.on_pod_group_object(COSCHEDULING_POD_GROUPS, ADDED, {
        "metadata": {"name": "cg", "namespace": "default"}, "spec": {"minMember": 4}})
    names = [f"cg-{i}" for i in range(4)]
    h.add(*(pod(n, uid=n, cpu="1", labels={"scheduling.x-k8s.io/pod-group": "cg"})
            for n in names))
    h.drain()
    h.run_bindings()
    # scheduler-plugins queues its members one by one: they wait in the pool for events.
    assert h.ports.binds == [] and all(h.where(n) == UNSCHEDULABLE for n in names)
    h.nodes(node("n2", cpu="1"))
    h.drain()
    h.run_bindings()
    assert len(h.ports.binds) == 4


def test_explain_says_what_a_gang_member_waits_for() -> None:
    from scheduler.explain import explain

    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="6"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 8))
    h.add(*(member(f"pg-{i}", "pg") for i in range(5)))
    notes = explain(h.s, h.info("pg-0")).notes
    assert notes == ["pod group default/pg (gang, minCount 8): 5 of 8 members exist, "
                     "0 of 8 reserved or bound", "its members are held until 8 exist"]
    h.add(*(member(f"pg-{i}", "pg") for i in range(5, 8)))
    h.drain()
    notes = explain(h.s, h.info("pg-0")).notes
    assert notes[0] == ("pod group default/pg (gang, minCount 8): 8 of 8 members exist, "
                        "0 of 8 reserved or bound")
    assert notes[1].startswith("the group's last cycle: 6 of 8 members fitted, 1 did not: "
                               "0/1 nodes are available: 1 Insufficient cpu. (minCount (8) "
                               "cannot be satisfied: 6 scheduled, 1 remaining)")


class RecordingGroupReporter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def pod_group_condition(self, group: Any, scheduled: bool, reason: str,
                            message: str) -> None:
        assert scheduled == (reason == "Scheduled")
        self.calls.append((group.key, reason, message))


def test_the_pod_group_condition_is_reported_and_never_set_back_once_true() -> None:
    h = Harness(config=WITH_GANGS, binding="deferred")
    reporter = RecordingGroupReporter()
    h.s.pod_group_reporter = reporter
    h.nodes(node("n1", cpu="2"))
    gang_of(h, "pg", 3)
    drain_active(h)
    assert reporter.calls == [("default/pg", "Unschedulable",
                               "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
                               "pod group preemption: No preemption victims found for incoming "
                               "preemptor")]
    h.nodes(node("n2", cpu="1"))
    h.drain()
    assert reporter.calls[-1] == ("default/pg", "Scheduled", "")
    initially = pod_group("pg", 3)
    initially["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled",
                                           "status": "True"}]}
    from scheduler.intake import MODIFIED

    h.intake.on_pod_group_object(POD_GROUPS, MODIFIED, initially)
    h.add(member("late", "pg", cpu="4"))
    h.drain()
    assert reporter.calls[-1] == ("default/pg", "Scheduled", "")


def test_members_whose_priority_differs_from_the_groups_fail_with_a_scheduler_error() -> None:
    """validatePodGroup: every member at the PodGroup's priority."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    group = pod_group("pg", 2)
    group["spec"]["priority"] = 100
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, group)
    h.add(member("a"), member("b"))
    h.drain()
    message = ("all pods in a single pod group should have the same priority as the pod "
               "group's priority, got 0 and 100")
    assert h.ports.failures_of("a") == [("SchedulerError", message, "")]
    assert h.ports.failures_of("b") == [("SchedulerError", message, "")]
    assert h.deferred == []


def test_a_placement_feasible_error_places_no_member_and_holds_nothing() -> None:
    class Broken:
        name = "Broken"

        def placement_feasible(self, group: Any, scheduled: int, remaining: int) -> Any:
            raise RuntimeError("bug")

    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    gang_of(h, "pg", 2)
    h.s.profiles["secondary-scheduler"].instances["Broken"] = Broken()  # type: ignore[assignment]
    h.drain()
    assert h.deferred == [] and h.s.cache.assumed_uids() == set()
    assert h.ports.failures_of("pg-0") == [(
        "SchedulerError", "failed to evaluate placement feasibility: bug", "")]


def _preemption_scene(disruption_all: bool, policy: str = "PreemptLowerPriority"
                      ) -> tuple[Harness, Any, list[str], list[str]]:
    """e2e/test_gang.py's preemption case: a low gang of 4 (2 CPUs each) fills 4 nodes of 2
    CPUs; a high gang of 2 such members comes."""
    from tests.plugins.test_default_preemption import FakeEvictor

    h = Harness(config=WITH_GANGS, binding="deferred")
    evictor = FakeEvictor()
    h.s.evictor = evictor  # type: ignore[assignment]
    h.nodes(*(node(f"n{i}", cpu="2") for i in range(4)))
    low = pod_group("low", 4)
    low["spec"]["priority"] = 100
    if disruption_all:
        low["spec"]["disruptionMode"] = {"all": {}}
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, low)
    lows = [f"low-{i}" for i in range(4)]
    for i, name in enumerate(lows):
        h.add(pod(name, uid=name, cpu="2", priority=100, node_name=f"n{i}",
                  spec={"schedulingGroup": {"podGroupName": "low"}}))
    high = pod_group("high", 2)
    high["spec"]["priority"] = 1000
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, high)
    highs = ["high-0", "high-1"]
    h.add(*(pod(n, uid=n, cpu="2", priority=1000, spec={
        "schedulingGroup": {"podGroupName": "high"}, "preemptionPolicy": policy})
        for n in highs))
    return h, evictor, lows, highs


def _evicted(evictor: Any) -> list[str]:
    return sorted(call[1] for call in evictor.calls if call[0] == "evict")


def test_a_higher_priority_gang_preempts_the_fewest_single_mode_victims_and_is_nominated(
) -> None:
    """podgrouppreemption.go: victims are taken out, the gang placed, and every victim that
    can be given back is; the members wait, nominated, and are bound once the room is free."""
    h, evictor, lows, highs = _preemption_scene(disruption_all=False)
    h.drain()
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    evicted = _evicted(evictor)
    assert len(evicted) == 2
    # Each single-mode member is a unit of its own that affects a pod group.
    assert h.s.metrics.registry.get_sample_value(
        "scheduler_preemption_workload_disruptions_sum", {"preemptor": "PodGroup"}) == 2
    nominated = {h.s.queue.nominator.node_of(n) for n in highs}
    assert nominated == {f"n{lows.index(v)}" for v in evicted}
    messages = {h.ports.failures_of(n)[-1][1] for n in highs}
    assert any(m.endswith("pod group preemption: found a placement for podgroup, "
                          "preempting 2 victims") for m in messages), messages
    assert h.ports.binds == []
    for victim in evicted:
        h.delete(victim)
    h.drain()
    h.run_bindings()
    assert sorted(k for k, _ in h.ports.binds) == ["default/high-0", "default/high-1"]


def test_a_disruption_mode_all_gang_is_preempted_whole() -> None:
    """types.go: a disruptionMode All group is one victim; the room for 2 costs all 4."""
    h, evictor, lows, _ = _preemption_scene(disruption_all=True)
    h.drain()
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert _evicted(evictor) == lows
    # executor.go: each victim's Preempted Event names the preemptor PodGroup.
    assert evictor.event_groups == {v: "default/high" for v in lows}
    # executor.go observeVictims: a group's victims and its group disruptions; the pods'
    # histogram is not touched.
    metric = h.s.metrics.registry.get_sample_value
    assert metric("scheduler_workload_preemption_attempts_total", {"result": "Success"}) == 1
    assert metric("scheduler_workload_preemption_victims_sum") == 4
    assert metric("scheduler_preemption_workload_disruptions_sum",
                  {"preemptor": "PodGroup"}) == 1
    assert metric("scheduler_preemption_victims_count") == 0


def _plain_preemptor_scene(disruption_all: bool) -> tuple[Harness, Any, list[str]]:
    """e2e/test_gang.py's single-pod case: the low gang of 4 fills the 4 nodes; one plain
    pod of a higher priority needs one node's room."""
    h, evictor, lows, highs = _preemption_scene(disruption_all, policy="Never")
    for name in highs:
        h.delete(name)
    h.add(pod("plain", uid="plain", cpu="2", priority=1000))
    return h, evictor, lows


def test_a_plain_pod_preempts_a_disruption_mode_all_gang_whole() -> None:
    """preemption.go GetVictimsOnNode: single-pod preemption sees the All-mode group on
    the node as one victim with its pods on the other nodes; all 4 go, as upstream's
    executor evicts every pod of the victims."""
    h, evictor, lows = _plain_preemptor_scene(disruption_all=True)
    h.drain()
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert _evicted(evictor) == lows
    message = h.ports.failures_of("plain")[-1][1]
    assert "preempting 4 victims" in message, message
    assert h.s.queue.nominator.node_of(h.uid("plain")) in {f"n{i}" for i in range(4)}


def test_a_plain_pod_preempts_one_pod_of_a_single_mode_gang() -> None:
    h, evictor, lows = _plain_preemptor_scene(disruption_all=False)
    h.drain()
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    evicted = _evicted(evictor)
    assert len(evicted) == 1 and evicted[0] in lows
    assert h.s.queue.nominator.node_of(h.uid("plain")) == f"n{lows.index(evicted[0])}"


def test_a_gang_whose_victims_are_going_is_held_then_not_preempting_again() -> None:
    """While its victims are being removed the gang is gated at PreEnqueue; once they are
    terminating by preemption its next cycle sees the preemption under way and evicts
    nobody else (isOngoingPreemption)."""
    h, evictor, _, highs = _preemption_scene(disruption_all=False)
    h.drain()
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    evicted = _evicted(evictor)
    for victim in evicted:
        h.update(victim, lambda o: (o["metadata"].__setitem__(
            "deletionTimestamp", "2026-01-01T00:00:00Z"), o["status"].__setitem__(
            "conditions", [{"type": "DisruptionTarget", "status": "True",
                            "reason": "PreemptionByScheduler"}])))
    h.s.queue.activate([h.uid(n) for n in highs])
    h.drain()
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert _evicted(evictor) == evicted
    messages = {h.ports.failures_of(n)[-1][1] for n in highs}
    assert any(m.endswith("pod group preemption: ongoing preemption on nominated nodes")
               for m in messages), messages


def test_a_gang_whose_members_never_preempt_evicts_nobody() -> None:
    """resolvePreemptionPolicy (PodGroupPreemptionPolicy off): members with
    preemptionPolicy Never make the group not eligible."""
    h, evictor, _, highs = _preemption_scene(disruption_all=False, policy="Never")
    drain_active(h)
    plugin = h.s.profiles["secondary-scheduler"].instances["DefaultPreemption"]
    assert plugin.wait_for_actuations(10)  # type: ignore[attr-defined]
    assert _evicted(evictor) == []
    metric = h.s.metrics.registry.get_sample_value
    assert metric("scheduler_workload_preemption_attempts_total",
                  {"result": "Unschedulable"}) == 1
    messages = {h.ports.failures_of(n)[-1][1] for n in highs}
    assert any(m.endswith("pod group preemption: not eligible due to preemptionPolicy=Never.")
               for m in messages), messages
    assert all(h.s.queue.nominator.node_of(h.uid(n)) is None for n in highs)


class FailingGroupPostFilter:
    """A PostFilter plugin whose PodGroupPostFilter fails, after it took a member out."""

    name = "FailingGroupPostFilter"

    def post_filter(self, state: Any, pod: Any, diagnosis: Any) -> tuple[None, Status]:
        return None, Status(Code.UNSCHEDULABLE)

    def pod_group_post_filter(self, group: Any, members: Any, simulation: Any
                              ) -> tuple[None, Status]:
        simulation.remove_pods([self.victim])
        return None, Status.error("boom")


def test_a_pod_group_post_filter_error_is_every_members_and_the_cluster_is_put_back() -> None:
    """RunPodGroupPostFilterPlugins: an error stops and becomes the group's status
    (SchedulerError for each member); what the plugin took out is back in the cache."""
    plugin = FailingGroupPostFilter()
    config = {**WITH_GANGS, "profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "multiPoint": {"enabled": [{"name": GANG_SCHEDULING}]},
        "postFilter": {"enabled": [{"name": plugin.name}],
                       "disabled": [{"name": "DefaultPreemption"}]}}}]}
    h = Harness(config=config, plugins=[plugin], binding="deferred")
    h.nodes(node("n1", cpu="1"))
    h.add(pod("low", uid="low", cpu="1", node_name="n1"))
    plugin.victim = h.info("low")  # type: ignore[attr-defined]
    names = gang_of(h, "pg", 2)
    h.drain()
    for name in names:
        reason, message = h.ports.failures_of(name)[-1][:2]
        assert (reason, message) == ("SchedulerError",
                                     'error in "FailingGroupPostFilter" PodGroupPostFilter '
                                     "plugins: boom")
    assert h.s.cache.get_pod("low") is not None


def test_an_assumed_victim_is_assumed_again_after_the_simulation() -> None:
    """A victim still binding (assumed) is taken out of the cache for the group's algorithm
    and put back assumed, on its node."""
    from tests.plugins.test_default_preemption import FakeEvictor

    h = Harness(config=WITH_GANGS, binding="deferred")
    h.s.evictor = FakeEvictor()  # type: ignore[assignment]
    h.nodes(node("n1", cpu="1"))
    h.add(pod("low", uid="low", cpu="1", priority=1))
    h.drain()
    assert h.s.cache.is_assumed("low")
    group = pod_group("pg", 1)
    group["spec"]["priority"] = 10
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, group)
    h.add(pod("pg-0", uid="pg-0", cpu="1", priority=10,
              spec={"schedulingGroup": {"podGroupName": "pg"}}))
    h.drain()
    assert h.s.cache.is_assumed("low")
    low = h.s.cache.get_pod("low")
    assert low is not None and low.node_name == "n1"
    assert h.s.queue.nominator.node_of("pg-0") == "n1"


def test_queue_metrics_count_unobserved_groups_members_as_incomplete_and_groups_as_entities(
) -> None:
    """Upstream's scheduler_pending_pods{queue="incomplete"} (members whose PodGroup is not
    observed) and scheduler_queued_entities{type="podgroup"} (a group waiting as one)."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="1"))
    h.add(member("a"), member("b"))
    h.drain()
    registry = h.s.metrics.registry

    def pending(queue: str) -> float | None:
        return registry.get_sample_value("scheduler_pending_pods", {"queue": queue})

    def entities(queue: str, kind: str) -> float | None:
        return registry.get_sample_value("scheduler_queued_entities",
                                         {"queue": queue, "type": kind})

    assert (pending("incomplete"), pending("gated")) == (2, 0)
    assert entities("gated", "podgroup") == 0
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 3))
    h.drain()
    assert (pending("incomplete"), pending("gated")) == (0, 2)
    assert entities("gated", "podgroup") == 1
    # Complete, tried and not placed (room for one): the group waits in backoffQ.
    h.add(member("c"))
    h.add(pod("single", uid="single", cpu="2"))
    drain_active(h)
    assert (pending("backoff"), pending("unschedulable"), pending("gated")) == (3, 1, 0)
    assert (entities("backoff", "podgroup"), entities("unschedulable", "pod")) == (1, 1)


def test_queue_metrics_count_a_group_entering_a_queue_as_one_entity_and_pending_members(
) -> None:
    """Upstream's scheduler_queue_incoming_entities_total{queue,event,type} (a group entering
    a queue is one podgroup entity, its members that many incoming pods) and
    scheduler_pending_pods{queue="pending"} (members waiting for their group's cycle)."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="1"))
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 2))
    h.add(member("a"), member("b"), pod("single", uid="single", cpu="2"))
    drain_active(h)
    registry = h.s.metrics.registry

    def entities(queue: str, event: str, kind: str) -> float | None:
        return registry.get_sample_value("scheduler_queue_incoming_entities_total",
                                         {"queue": queue, "event": event, "type": kind})

    assert entities("active", "UnscheduledPodAdd", "podgroup") == 1
    assert entities("active", "UnscheduledPodAdd", "pod") == 1
    assert entities("backoff", "ScheduleAttemptFailure", "podgroup") == 1
    assert registry.get_sample_value("scheduler_queue_incoming_pods_total", {
        "queue": "backoff", "event": "ScheduleAttemptFailure"}) == 2
    assert registry.get_sample_value("scheduler_pending_pods", {"queue": "pending"}) == 0


def test_queue_metrics_count_members_of_an_unobserved_pod_group_as_its_pod_group_comes(
) -> None:
    """Upstream's addPodGroupMember keeps members whose PodGroup is not observed in
    incompletePodGroupPods, no queue: no incoming pod nor entity; AddPodGroup then adds
    them (UnscheduledPodAdd), here to the pool, gated: 2 of minCount 3 exist. The second
    joins the entity the first made, which is counted whole (entity.Size()): 1 + 2 pods.
    The PodGroupAdd event then moves the entity out (GangScheduling's hint) and back, gated:
    2 pods and one entity more, as that event."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.add(member("a"), member("b"))
    registry = h.s.metrics.registry
    for queue in ("gated", "unschedulable"):
        assert registry.get_sample_value("scheduler_queue_incoming_pods_total", {
            "queue": queue, "event": "UnscheduledPodAdd"}) in (None, 0)
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 3))
    pods = sum(registry.get_sample_value("scheduler_queue_incoming_pods_total", {
        "queue": queue, "event": "UnscheduledPodAdd"}) or 0
        for queue in ("gated", "unschedulable"))
    groups = sum(registry.get_sample_value("scheduler_queue_incoming_entities_total", {
        "queue": queue, "event": "UnscheduledPodAdd", "type": "podgroup"}) or 0
        for queue in ("gated", "unschedulable"))
    assert (pods, groups) == (1 + 2, 1)
    assert (registry.get_sample_value("scheduler_queue_incoming_pods_total", {
        "queue": "unschedulable", "event": "PodGroupAdd"}),
        registry.get_sample_value("scheduler_queue_incoming_entities_total", {
            "queue": "unschedulable", "event": "PodGroupAdd", "type": "podgroup"})) == (2, 1)


# -- Coscheduling's PostFilter (scheduler-plugins pkg/coscheduling/coscheduling.go) ----------
def _coscheduling_gang(h: Harness, name: str, min_member: int, members: int) -> list[str]:
    from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS

    h.intake.on_pod_group_object(COSCHEDULING_POD_GROUPS, ADDED, {
        "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}})
    names = [f"{name}-{i}" for i in range(members)]
    h.add(*(pod(n, uid=n, cpu="1", labels={"scheduling.x-k8s.io/pod-group": name})
            for n in names))
    return names


def _permit_waits(h: Harness) -> list[str]:
    """Records every pod put to wait at Permit."""
    waits: list[str] = []
    add = h.s.waiting.add

    def spy(pod: Any, *args: Any) -> Any:
        waits.append(pod.name)
        return add(pod, *args)

    h.s.waiting.add = spy  # type: ignore[method-assign]
    return waits


@pytest.mark.parametrize("min_member", [4, 10], ids=["gap above PodGroupRejectPercentage",
                                                    "gap within PodGroupRejectPercentage"])
def test_coscheduling_post_filter_finds_no_waiting_sibling_to_reject(min_member: int) -> None:
    """Coscheduling's PostFilter rejects the siblings waiting at Permit when a member fails
    and the group is more than PodGroupRejectPercentage (10 %) short; within it, it leaves
    them waiting (up to scheduleTimeoutSeconds) for members still to come. Here a member never
    waits at Permit across cycles: the group's cycle places its members and allows them at
    once, or unreserves them all, so there is nothing to reject, and a group one member
    short holds no room either (the issue's rule; scheduler-plugins would hold it)."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    waits = _permit_waits(h)
    h.nodes(node("n1", cpu=str(min_member - 1)))
    names = _coscheduling_gang(h, "cg", min_member, min_member)
    h.drain()
    h.run_bindings()
    assert waits == [] and not any(h.uid(n) in h.s.waiting for n in names)
    assert h.ports.binds == [] and h.s.cache.assumed_uids() == set()
    assert all(h.ports.failures_of(n) for n in names)


def test_coscheduling_post_filter_has_nothing_to_do_once_min_member_is_placed() -> None:
    """Coscheduling's PostFilter returns plain Unschedulable when the group's assigned pods
    reach minMember ("don't bother to reject the whole PodGroup"): the member that did not
    fit fails alone; here too its placed siblings are bound."""
    h = Harness(config=WITH_GANGS, binding="deferred")
    waits = _permit_waits(h)
    h.nodes(node("n1", cpu="2"))
    names = _coscheduling_gang(h, "cg", 2, 3)
    assert h.cycle()
    h.run_bindings()
    assert waits == []
    assert sorted(key.split("/")[1] for key, _ in h.ports.binds) == names[:2]
    assert h.ports.failures_of(names[2]) and not h.ports.failures_of(names[0])
