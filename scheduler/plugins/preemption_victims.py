"""Preemption victims as units, shared by DefaultPreemption's PostFilter (single pods) and its
PodGroupPostFilter (upstream's ``framework/preemption/types.go`` and ``util.go``, v1.37.2,
CompositePodGroup off).

A victim is a pod, or every scheduled pod of a Workload-API PodGroup with ``disruptionMode:
All``, across nodes: evicted together or not at all, with the group's priority. A pod of a
Workload-API group is ranked as a group's pod (upstream's NewPodVictim keeps the PodGroup
key type for it), with its group's priority. Coscheduling groups have neither a priority nor
a disruption mode: their pods are plain victims.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from scheduler.plugin_api import (
    DisruptionBudget,
    PodGroup,
    PodGroupsView,
    PodInfo,
)

# scheduling/v1beta1 DisruptionMode, as parsed.
DISRUPTION_ALL = "All"
# A victim's kind (upstream's EntityKeyType): a plain pod, or a Workload-API group's pods.
POD = "Pod"
POD_GROUP = "PodGroup"

NOT_STARTED = datetime.max.replace(tzinfo=UTC)


def pod_start(pod: PodInfo) -> datetime:
    """A pod that has not started counts as the newest, as upstream's GetPodStartTime does."""
    start = pod.start_time
    if start is None:
        return NOT_STARTED
    return start if start.tzinfo is not None else start.replace(tzinfo=UTC)


class Victim:
    """upstream's Victim: pods evicted together or not at all, with one priority.

    Its MoreImportantVictim sort key is made once, with the victim: a dry run builds one
    for every lower-priority pod of every candidate node and sorts them more than once.
    """

    __slots__ = ("key", "kind", "pods", "priority")

    def __init__(self, pods: tuple[PodInfo, ...], priority: int, kind: str = POD) -> None:
        self.pods = pods
        self.priority = priority
        self.kind = kind
        start = pod_start(pods[0]) if len(pods) == 1 else min(pod_start(p) for p in pods)
        # Most important first: higher priority, then a group's pods before a plain pod,
        # then the larger unit, then the earlier start.
        self.key = (-priority, -2 if kind == POD_GROUP else -1, -len(pods), start)

    def __repr__(self) -> str:
        return f"Victim({[p.key for p in self.pods]}, {self.priority}, {self.kind})"

    @property
    def is_group(self) -> bool:
        return self.kind == POD_GROUP

    def earliest_start(self) -> datetime:
        return self.key[3]

    def importance_key(self) -> tuple[int, int, int, datetime]:
        """MoreImportantVictim as a sort key, most important first."""
        return self.key


def workload_group(pod: PodInfo, groups: PodGroupsView) -> PodGroup | None:
    """The pod's Workload-API PodGroup, if observed (Coscheduling groups have no priority
    nor disruption mode)."""
    return groups.group_of(pod) if pod.in_workload_group else None


def victim_priority(pod: PodInfo, groups: PodGroupsView) -> int:
    """GetPodPriority: the pod's PodGroup's priority, else its own."""
    group = workload_group(pod, groups)
    return pod.priority if group is None else group.priority or 0


def victims_among(pods: Iterable[PodInfo], groups: PodGroupsView) -> list[Victim]:
    """getCrossNodesVictims over ``pods``: each pod is a victim of its own (NewPodVictim),
    except the pods of a ``disruptionMode: All`` group, which are one victim with every
    scheduled pod of the group, wherever it runs (searchCrossNodesVictimPods)."""
    victims: list[Victim] = []
    whole: set[str] = set()
    for pod in pods:
        if not pod.in_workload_group:
            victims.append(Victim((pod,), pod.priority))
            continue
        group = groups.group_of(pod)
        if group is None or group.disruption_mode != DISRUPTION_ALL:
            priority = pod.priority if group is None else group.priority or 0
            victims.append(Victim((pod,), priority, POD_GROUP))
            continue
        if group.key in whole:
            continue
        whole.add(group.key)
        state = groups.state_of(pod)
        scheduled = [] if state is None else state.scheduled_pods()
        victims.append(Victim(tuple(scheduled) or (pod,), group.priority or 0, POD_GROUP))
    return victims


def split_by_pdb(
    victims: Sequence[PodInfo], pdbs: Sequence[DisruptionBudget]
) -> tuple[list[int], list[str]]:
    """filterPodsWithPDBViolation: victim indices, PDB-violating first (stable), and per index
    the budget the victim would violate (``""``: none).

    As upstream, a victim is charged to every matching budget until one goes below zero; the
    budgets after that one are not charged for it.
    """
    if not pdbs:
        return list(range(len(victims))), [""] * len(victims)
    allowed = {pdb.key: pdb.disruptions_allowed for pdb in pdbs}
    violating: list[int] = []
    budgets: list[str] = []
    others: list[int] = []
    for k, victim in enumerate(victims):
        broken = ""
        if victim.labels:
            for pdb in pdbs:
                if pdb.namespace != victim.namespace or not pdb.selector.matches(victim.labels):
                    continue
                if victim.name in pdb.disrupted_pods:
                    continue
                allowed[pdb.key] -= 1
                if allowed[pdb.key] < 0:
                    broken = pdb.key
                    break
        if broken:
            violating.append(k)
            budgets.append(broken)
        else:
            others.append(k)
    return violating + others, budgets + [""] * len(others)


class PdbSplit(NamedTuple):
    """One victim as FilterVictimsWithPDBViolation sees it: how many of its pods violate a
    budget, and which budgets."""

    victim: Victim
    violations: int
    budgets: frozenset[str]


NO_BUDGETS: frozenset[str] = frozenset()


def split_victims_by_pdb(
    victims: Sequence[Victim], pdbs: Sequence[DisruptionBudget]
) -> tuple[list[PdbSplit], list[PdbSplit]]:
    """FilterVictimsWithPDBViolation: the violating units and the others, each in the given
    order. Budgets are charged pod by pod, unit after unit, as for single pods
    (``split_by_pdb`` over the pods in that order); a unit violates if any of its pods does."""
    if not pdbs:
        return [], [PdbSplit(victim, 0, NO_BUDGETS) for victim in victims]
    pods = [p for v in victims for p in v.pods]
    order, budgets = split_by_pdb(pods, pdbs)
    broken = {k: budget for k, budget in zip(order, budgets, strict=True) if budget}
    violating: list[PdbSplit] = []
    others: list[PdbSplit] = []
    first = 0
    for victim in victims:
        mine = [broken[k] for k in range(first, first + len(victim.pods)) if k in broken]
        first += len(victim.pods)
        split = PdbSplit(victim, len(mine), frozenset(mine))
        (violating if mine else others).append(split)
    return violating, others
