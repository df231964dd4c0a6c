"""DefaultPreemption's PodGroupPostFilter (scheduler/plugins/pod_group_preemption.py).

The table is upstream's TestPodGroupEvaluator_SelectVictimsOnDomain
(pkg/scheduler/framework/preemption/podgrouppreemption_test.go, v1.37.2), case names kept,
with its harness: pods have a "size" label (1 when absent), nodes a capacity, a pod fits
where the sizes on the node plus its own stay within it (upstream's mockFilterPlugin), and
the group's algorithm puts members round-robin on the first node with room, Unschedulable
with fewer than minCount placed (upstream's mockSchedulingFunc). The cases that need
CompositePodGroup (alpha, off) are not ported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from scheduler.framework.interface import Code, ProposedAssignment, Status
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import BASIC, DISRUPTION_ALL, DISRUPTION_SINGLE, GANG, PodGroup
from scheduler.plugins.pod_group_preemption import (
    NO_VICTIMS,
    Preemptor,
    Selection,
    domain_victims,
    select_victims_on_domain,
)
from scheduler.testing import pod

LOW, MID, HIGH = 0, 100, 1000


def member(name: str, *, node: str = "", priority: int = LOW, group: str = "",
           size: int = 1, start: int | None = None, labels: Mapping[str, str] | None = None,
           policy: str | None = None) -> PodInfo:
    spec: dict[str, Any] = {}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if policy:
        spec["preemptionPolicy"] = policy
    status = {} if start is None else {"startTime": f"1970-01-01T00:00:{start:02d}Z"}
    return PodInfo.from_pod(pod(name, node_name=node, priority=priority, spec=spec,
                                status=status, labels={"size": str(size), **(labels or {})}))


def group(name: str, priority: int | None = None, *, all_mode: bool = False,
          min_count: int = 1) -> PodGroup:
    return PodGroup("default", name, uid=name, priority=priority, policy=GANG,
                    min_count=min_count,
                    disruption_mode=DISRUPTION_ALL if all_mode else DISRUPTION_SINGLE)


def size(p: PodInfo) -> int:
    return int(p.labels.get("size", "1"))


@dataclass
class State:
    """A pod group's scheduled members, as PodGroupsView.state_of gives them."""

    pods: list[PodInfo]

    def scheduled_pods(self) -> list[PodInfo]:
        return list(self.pods)


@dataclass
class Cluster:
    """The snapshot, the pod groups and the simulation of upstream's harness, in one."""

    capacities: dict[str, int]
    pods: list[PodInfo]
    groups: dict[str, PodGroup]
    preemptor: Preemptor
    removed: set[str] = field(default_factory=set)

    # ClusterSnapshot, as far as domain_victims reads it.
    def order(self) -> np.ndarray[Any, Any]:
        return np.arange(len(self.capacities))

    def pods_on(self, row: int) -> list[PodInfo]:
        name = list(self.capacities)[row]
        return [p for p in self.pods if p.node_name == name]

    # PodGroupsView.
    def group_of(self, p: PodInfo) -> PodGroup | None:
        return None if p.pod_group is None else self.groups.get(p.pod_group.name)

    def state_of(self, p: PodInfo) -> State:
        assert p.pod_group is not None
        return State([q for q in self.pods if q.pod_group is not None
                      and q.pod_group.name == p.pod_group.name and q.node_name])

    # PodGroupSimulation.
    def remove_pods(self, pods: Sequence[PodInfo]) -> None:
        self.removed |= {p.uid for p in pods}

    def add_pods(self, pods: Sequence[PodInfo]) -> None:
        self.removed -= {p.uid for p in pods}

    def _used(self) -> dict[str, int]:
        used = dict.fromkeys(self.capacities, 0)
        for p in self.pods:
            if p.node_name and p.uid not in self.removed:
                used[p.node_name] += size(p)
        return used

    def schedule(self) -> tuple[list[ProposedAssignment], Status]:
        used, names = self._used(), list(self.capacities)
        assignments: list[ProposedAssignment] = []
        start = 0
        for m in self.preemptor.members:
            for step in range(len(names)):
                i = (start + step) % len(names)
                if used[names[i]] + size(m) <= self.capacities[names[i]]:
                    assignments.append(ProposedAssignment(m, names[i]))
                    used[names[i]] += size(m)
                    start = (i + 1) % len(names)
                    break
        if len(assignments) >= self.preemptor.group.min_count:
            return assignments, Status()
        return [], Status(Code.UNSCHEDULABLE)

    def fits(self, assignments: Sequence[ProposedAssignment]) -> Status:
        used = self._used()
        for a in assignments:
            if used[a.node] + size(a.pod) > self.capacities[a.node]:
                return Status(Code.UNSCHEDULABLE, ("not enough capacity",))
            used[a.node] += size(a.pod)
        return Status()


def select(capacities: dict[str, int], pods: list[PodInfo], groups: list[PodGroup],
           preemptor: Preemptor, pdbs: Sequence[DisruptionBudget] = ()) -> Selection | Status:
    cluster = Cluster(capacities, pods, {g.name: g for g in groups}, preemptor)
    victims = domain_victims(cluster, cluster)  # type: ignore[arg-type]
    return select_victims_on_domain(preemptor, victims, pdbs, cluster)


def preemptor(pg: PodGroup, members: list[PodInfo]) -> Preemptor:
    return Preemptor.of(pg, members)


def budget(selector: Mapping[str, str], allowed: int = 0) -> DisruptionBudget:
    return DisruptionBudget.from_object({
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(selector)}},
        "status": {"disruptionsAllowed": allowed}})


@dataclass
class Case:
    capacities: dict[str, int]
    pods: list[PodInfo]
    groups: list[PodGroup]
    preemptor: Preemptor
    victims: set[str]
    code: Code = Code.SUCCESS
    group_disruptions: int = 0
    pdb_violations: int = 0
    pdbs: list[DisruptionBudget] = field(default_factory=list)


PG_HIGH = group("preemptor-pg", HIGH)
PG_MID = group("preemptor-pg", MID)
ONE_HIGH = [member("p", priority=HIGH)]
ONE_MID = [member("p", priority=MID)]
THREE_HIGH = [member(f"p-{x}", priority=HIGH) for x in "abc"]
FOO = {"app": "foo"}


def capacities(*caps: int) -> dict[str, int]:
    return {f"node{i}": c for i, c in enumerate(caps, start=1)}


CASES: dict[str, Case] = {
    "Priority: mix of no groups and pod groups": Case(
        capacities(2),
        [member("p1", node="node1"), member("p2", node="node1", group="pg1")],
        [group("pg1", LOW)], preemptor(PG_HIGH, ONE_HIGH), {"p1"}),
    "Priority: StartTime of pods from same group with disruption mode single ": Case(
        capacities(2),
        [member("p1", node="node1", group="pg1", start=1),
         member("p2", node="node1", group="pg1", start=0)],
        [group("pg1", LOW)], preemptor(PG_HIGH, ONE_HIGH), {"p1"}, group_disruptions=1),
    "Pod group with disruption mode group not reprieved": Case(
        capacities(1, 1),
        [member("p1", node="node1", group="pg1"), member("p2", node="node2", group="pg1")],
        [group("pg1", LOW, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"p1", "p2"},
        group_disruptions=1),
    "Complex Mixed: Shared, different, and no groups": Case(
        capacities(2, 1, 2, 2, 2),
        [member("p1", node="node1", group="pg1", start=2),
         member("p2", node="node2", group="pg1", start=1),
         member("p3", node="node3", group="pg2", start=0),
         member("p4", node="node4", priority=MID),
         member("p5", node="node5", priority=HIGH, group="pg3", start=0)],
        [group("pg1", LOW), group("pg2", LOW), group("pg3", HIGH)],
        preemptor(PG_HIGH, [member(f"p-{i}", priority=HIGH) for i in (1, 2, 3)]),
        {"p2"}, group_disruptions=1),
    "PDB: Mixed groups": Case(
        capacities(2),
        [member("victim-pdb", node="node1", group="pg1", labels=FOO),
         member("victim-no-pdb", node="node1", group="pg1")],
        [], preemptor(PG_HIGH, ONE_HIGH), {"victim-no-pdb"}, group_disruptions=1,
        pdbs=[budget(FOO)]),
    "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption": Case(
        capacities(1, 1, 1),
        [member("p1", node="node1"), member("p2", node="node2", group="pg1"),
         member("p3", node="node3", group="pg2")],
        [group("pg1", LOW), group("pg2", LOW)],
        preemptor(PG_HIGH, [member("p-1", priority=HIGH)]), {"p1"}),
    "Preempt single lower priority pod": Case(
        capacities(1), [member("p1", node="node1")], [],
        preemptor(PG_HIGH, ONE_HIGH), {"p1"}),
    "Priority: Prefer lower priority victim": Case(
        capacities(2),
        [member("p1", node="node1"), member("p2", node="node1", priority=MID),
         member("p3", node="node1", priority=HIGH)],
        [], preemptor(PG_HIGH, ONE_HIGH), {"p1", "p2"}),
    "Efficiency: Preempt minimum number of victims": Case(
        capacities(3), [member(f"p{i}", node="node1") for i in (1, 2, 3, 4)], [],
        preemptor(PG_HIGH, ONE_HIGH), {"p3", "p4"}),
    "PDB: Prefer non-violating victim": Case(
        capacities(2),
        [member("victim-pdb", node="node1", labels=FOO), member("victim-no-pdb", node="node1")],
        [], preemptor(PG_HIGH, ONE_HIGH), {"victim-no-pdb"}, pdbs=[budget(FOO)]),
    "PDB: Prefer removing non-violating victim over lower priority violating victim": Case(
        capacities(2),
        [member("victim-pdb", node="node1", labels=FOO),
         member("victim-no-pdb", node="node1", priority=MID)],
        [], preemptor(PG_HIGH, ONE_HIGH), {"victim-no-pdb"}, pdbs=[budget(FOO)]),
    "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption with "
    "PodGroup victims": Case(
        capacities(1, 1, 1),
        [member("p1", node="node1"), member("p2", node="node2", group="pg1"),
         member("p3", node="node3", group="pg2")],
        [group("pg1", LOW), group("pg2", LOW)],
        preemptor(PG_HIGH, [member("p-1", priority=HIGH)]), {"p1"}),
    "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation is "
    "not possible": Case(
        capacities(2),
        [member("p1", node="node1", labels=FOO),
         member("p2", node="node1", priority=MID, labels=FOO)],
        [], preemptor(PG_HIGH, ONE_HIGH), {"p1"}, pdb_violations=1, pdbs=[budget(FOO)]),
    "PodGroup: Preempt group as a whole": Case(
        capacities(1, 2),
        [member("p1", node="node1", group="pg1"), member("p2", node="node2", group="pg1")],
        [group("pg1", LOW, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"p1", "p2"},
        group_disruptions=1),
    "PodGroup: Prefer single pod over podGroup for preemption candidate": Case(
        capacities(3),
        [member("p1", node="node1"), member("g1-1", node="node1", group="pg1"),
         member("g1-2", node="node1", group="pg1")],
        [group("pg1", LOW, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"p1"}),
    "PodGroup: Preempt group as a whole on single node": Case(
        capacities(3),
        [member("g1-1", node="node1", group="pg1"), member("g1-2", node="node1", group="pg1"),
         member("p1", node="node1", priority=MID)],
        [group("pg1", LOW, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"g1-1", "g1-2"},
        group_disruptions=1),
    "PDB: Unit violation if any member violates": Case(
        capacities(3),
        [member("g1-1", node="node1", group="pg1", labels=FOO),
         member("g1-2", node="node1", group="pg1"), member("p1", node="node1")],
        [group("pg1", LOW, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"p1"},
        pdbs=[budget(FOO)]),
    "Failure: Cannot preempt the victim with higher priority": Case(
        capacities(100), [member("p1", node="node1", priority=HIGH)], [],
        preemptor(PG_MID, ONE_MID), set(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    "Failure: Cannot preempt the victim with equal priority": Case(
        capacities(100), [member("p1", node="node1", priority=MID)], [],
        preemptor(PG_MID, ONE_MID), set(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    "Failure: Cannot preempt if node is empty": Case(
        capacities(100), [], [], preemptor(PG_MID, ONE_MID), set(),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    "Priority divergence: candidate victim PodGroup has lower priority than the Pods from "
    "that group": Case(
        capacities(1, 1),
        [member("p1", node="node1", priority=HIGH, group="pg1"),
         member("p2", node="node2", priority=HIGH, group="pg1")],
        [group("pg1", MID, all_mode=True)], preemptor(PG_HIGH, ONE_HIGH), {"p1", "p2"},
        group_disruptions=1),
    "Priority divergence: candidate victim PodGroup has higher priority than the Pods from "
    "that group": Case(
        capacities(1, 1),
        [member("p1", node="node1", group="pg1"), member("p2", node="node2", group="pg1")],
        [group("pg1", MID, all_mode=True)], preemptor(PG_MID, ONE_MID), set(),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    "Gang scheduling: schedule as many pods as possible without preempting higher priority "
    "pods, but still more than minCount": Case(
        capacities(1, 1, 1, 1),
        [member("p1", node="node1"), member("p2", node="node2"),
         member("p3", node="node3", priority=HIGH), member("p4", node="node4", priority=HIGH)],
        [], preemptor(group("preemptor-pg", HIGH, min_count=1), THREE_HIGH), {"p1", "p2"}),
    "Gang scheduling: do not reprieve victim pod group of lower priority": Case(
        capacities(1, 1, 1),
        [member("v1", node="node1", group="victim-pg", priority=MID),
         member("v2", node="node2", group="victim-pg", priority=MID),
         member("v3", node="node3")],
        [group("victim-pg", MID, all_mode=True)],
        preemptor(group("preemptor-pg", HIGH, min_count=1), THREE_HIGH),
        {"v1", "v2", "v3"}, group_disruptions=1),
    "Gang scheduling: preempt a pod group victim but do not schedule full pod group": Case(
        capacities(1, 1, 1, 1),
        [member("v1", node="node1", group="victim-pg", priority=MID),
         member("v2", node="node2", group="victim-pg", priority=MID),
         member("v3", node="node3", group="victim-pg2", priority=HIGH),
         member("v4", node="node4", group="victim-pg2", priority=HIGH)],
        [group("victim-pg", MID, all_mode=True, min_count=2),
         group("victim-pg2", HIGH, all_mode=True, min_count=2)],
        preemptor(group("preemptor-pg", HIGH, min_count=1, all_mode=True), THREE_HIGH),
        {"v1", "v2"}, group_disruptions=1),
}
# Upstream's Basic-policy cases are its Gang cases with minCount 1 (the mock's minimum for a
# Basic group, as GangScheduling's PlacementFeasible): the same outcomes.
for _gang, _basic in (
    ("Gang scheduling: schedule as many pods as possible without preempting higher priority "
     "pods, but still more than minCount",
     "Basic scheduling: schedule as many pods as possible without preempting higher priority "
     "pods"),
    ("Gang scheduling: do not reprieve victim pod group of lower priority",
     "Basic scheduling: do not reprieve victim pod group of lower priority"),
    ("Gang scheduling: preempt a pod group victim but do not schedule full pod group",
     "Basic scheduling: preempt a pod group victim but do not schedule full pod group"),
):
    _case = CASES[_gang]
    CASES[_basic] = Case(_case.capacities, _case.pods, _case.groups,
                         preemptor(replace(_case.preemptor.group, policy=BASIC),
                                   list(_case.preemptor.members)),
                         _case.victims, _case.code, _case.group_disruptions)


@pytest.mark.parametrize("name", list(CASES))
def test_select_victims_on_domain(name: str) -> None:
    """upstream's TestPodGroupEvaluator_SelectVictimsOnDomain, case by case."""
    case = CASES[name]
    got = select(case.capacities, case.pods, case.groups, case.preemptor, case.pdbs)
    if case.code is not Code.SUCCESS:
        assert isinstance(got, Status)
        assert got.code is case.code
        return
    assert isinstance(got, Selection), got
    assert {p.name for v in got.victims for p in v.pods} == case.victims
    assert got.num_group_disruptions == case.group_disruptions
    assert got.num_pdb_violations == case.pdb_violations


def test_no_victim_is_upstreams_message() -> None:
    got = select({"node1": 1}, [], [], preemptor(PG_HIGH, ONE_HIGH))
    assert got == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))


def test_the_group_still_not_fitting_is_the_answer() -> None:
    """Every victim out and the gang of 3 still has room for 2: the algorithm's status."""
    got = select({"node1": 1, "node2": 1}, [member("v1", node="node1")], [],
                 preemptor(group("preemptor-pg", HIGH, min_count=3),
                           [member(f"p{i}", priority=HIGH) for i in (1, 2, 3)]))
    assert isinstance(got, Status) and got.code is Code.UNSCHEDULABLE


def test_a_member_with_preemption_policy_never_makes_the_group_never() -> None:
    """resolvePreemptionPolicy with PodGroupPreemptionPolicy off (its default at 1.37)."""
    members = [member("p1", priority=HIGH), member("p2", priority=HIGH, policy="Never")]
    assert Preemptor.of(PG_HIGH, members).never
    assert not Preemptor.of(PG_HIGH, members[:1]).never
