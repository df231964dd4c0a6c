"""Preemption victims as units, shared by DefaultPreemption's PostFilter (single pods) and its
PodGroupPostFilter (upstream's ``framework/preemption/types.go`` and ``util.go``, v1.37.2,
CompositePodGroup off).

A victim is a pod, or every scheduled pod of a Workload-API PodGroup with ``disruptionMode:
All``, across nodes: evicted together or not at all, with the group's priority. A pod of a
Workload-API group is ranked as a group's pod (upstream's NewPodVictim keeps the PodGroup
key type for it), with its group's priority. Coscheduling groups have neither a priority nor
a disruption mode: their pods are plain victims.

A single pod's dry run reads the victims of a hundred nodes or more per preemptor, nearly
always nodes without any Workload-API group member: there each pod is a victim of its own,
so no Victim is made, and the node's pods stay sorted, with their request vectors, from one
preemptor to the next until the node changes (``LonePodsMemo``, ``NodeVictims``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from scheduler.plugin_api import (
    DisruptionBudget,
    IntArray,
    NodeTableView,
    PodGroup,
    PodGroupsView,
    PodInfo,
)
from scheduler.plugins.helper.row_memo import ChangeLog

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


def pod_importance(pod: PodInfo) -> tuple[int, datetime]:
    """MoreImportantPod as a sort key, most important first: higher priority, then the
    earlier start."""
    return (-pod.priority, pod_start(pod))


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


# What a victim costs in budgets (FilterVictimsWithPDBViolation): how many of its pods
# violate one, and which.
Charge = tuple[int, frozenset[str]]
UNCHARGED: Charge = (0, NO_BUDGETS)


class NodeVictims:
    """A node's potential victims in a preemption's dry run, most important first, and their
    request vectors (a unit's pods on the node, summed).

    On a node without Workload-API group members (the common case) the victims are its
    pods, each a unit of its own, and no Victim is made for them: ``units`` is None and
    ``pods`` are the victims. Otherwise ``units`` are the Victims, ``local`` each one's pods
    on the node, ``remote`` its pods on other nodes, and ``pods`` every pod they remove here.
    ``size``: how many victims; ``spans``: whether one has pods on other nodes (a
    ``disruptionMode: All`` group). Read only: one serves every preemptor it fits.
    """

    __slots__ = ("local", "pods", "remote", "size", "spans", "units", "vectors")

    def __init__(
        self,
        pods: Sequence[PodInfo],
        vectors: IntArray,
        units: Sequence[Victim] | None = None,
        local: Sequence[Sequence[PodInfo]] = (),
        remote: Sequence[Sequence[PodInfo]] = (),
    ) -> None:
        self.pods = pods
        self.vectors = vectors
        self.units = units
        self.local = local
        self.remote = remote
        self.size = len(pods) if units is None else len(units)
        self.spans = any(remote)

    @classmethod
    def of_units(
        cls, units: Sequence[Victim], here: Mapping[str, PodInfo], table: NodeTableView
    ) -> NodeVictims:
        """The node whose pods are ``here``, with ``units`` (most important first)."""
        columns = table.resources
        pod_vector = columns.pod_vector
        # A plain pod's unit is the pod of this node; a group's, its pods here.
        local = [[v.pods[0]] if v.kind == POD else [here[p.uid] for p in v.pods if p.uid in here]
                 for v in units]
        zero = np.zeros(len(columns.names), dtype=np.int64)
        vectors = np.stack([pod_vector(unit[0]) if len(unit) == 1
                            else sum((pod_vector(p) for p in unit), zero) for unit in local])
        remote = [() if len(v.pods) == 1 and v.pods[0].uid in here
                  else [p for p in v.pods if p.uid not in here] for v in units]
        return cls([p for unit in local for p in unit], vectors, units, local, remote)

    def counts(self) -> list[int]:
        """Per victim, its pods on the node."""
        if self.units is None:
            return [1] * self.size
        return [len(unit) for unit in self.local]

    def local_pods(self) -> Sequence[Sequence[PodInfo]]:
        """Per victim, its pods on the node."""
        return [[p] for p in self.pods] if self.units is None else self.local

    def remote_pods(self) -> Sequence[Sequence[PodInfo]]:
        """Per victim, its pods on other nodes."""
        return self.remote if self.units is not None else [()] * self.size

    def key(self, k: int) -> tuple[object, ...]:
        """Victim ``k``'s MoreImportantVictim key (on a node of lone pods, MoreImportantPod:
        the same order)."""
        units = self.units
        return pod_importance(self.pods[k]) if units is None else units[k].key

    def pdb_queue(self, pdbs: Sequence[DisruptionBudget]) -> tuple[list[int], list[Charge]]:
        """The reprieve's order (victim indices, PDB-violating first) and each one's charge
        in that order (``split_by_pdb``, ``split_victims_by_pdb``), for budgets ``pdbs``."""
        units = self.units
        if units is None:
            order, budgets = split_by_pdb(self.pods, pdbs)
            return order, [(1, frozenset((b,))) if b else UNCHARGED for b in budgets]
        violating, others = split_victims_by_pdb(units, pdbs)
        position = {id(v): k for k, v in enumerate(units)}
        queue = violating + others
        return ([position[id(split.victim)] for split in queue],
                [(split.violations, split.budgets) for split in queue])

    def victims(self, chosen: Sequence[int]) -> list[PodInfo]:
        """The pods of the victims at ``chosen``, in that order."""
        pods, units = self.pods, self.units
        if units is None:
            return [pods[k] for k in chosen]
        return [p for k in chosen for p in units[k].pods]


class LonePods:
    """A node's pods most important first when none is a Workload-API group's member: each
    is a victim of its own at its own priority, so one order serves every preemptor, who
    takes those of a lower priority (a tail of it). With their request vectors."""

    __slots__ = ("pods", "ranks", "tails", "vectors")

    def __init__(self, pods: list[PodInfo], table: NodeTableView) -> None:
        columns = table.resources
        pods.sort(key=pod_importance)
        self.pods = tuple(pods)
        # Negated priorities, ascending: the pods of a lower priority than p start at
        # bisect_right(ranks, -p).
        self.ranks = [-p.priority for p in pods]
        pod_vector = columns.pod_vector
        self.vectors: IntArray = (
            np.stack([pod_vector(p) for p in pods]) if pods
            else np.zeros((0, len(columns.names)), dtype=np.int64))
        # The victims from each start made so far: a node's pods have few priorities.
        self.tails: dict[int, NodeVictims] = {}

    def below(
        self, priority: int, in_scope: Callable[[PodInfo], bool] | None = None
    ) -> NodeVictims | None:
        """The victims of a preemptor of ``priority``: the pods of a lower one, those
        ``in_scope`` says when given; None when there are none."""
        start = bisect_right(self.ranks, -priority)
        if start == len(self.pods):
            return None
        if in_scope is None:
            tail = self.tails.get(start)
            if tail is None:
                tail = self.tails[start] = NodeVictims(self.pods[start:], self.vectors[start:])
            return tail
        pods = self.pods[start:]
        kept = [k for k, p in enumerate(pods) if in_scope(p)]
        if not kept:
            return None
        return NodeVictims([pods[k] for k in kept], self.vectors[start:][kept])


class LonePodsMemo:
    """Per node row, its LonePods, or None for a node with a Workload-API group's member (its
    victim is the group, at the group's priority, which the node table does not follow); kept
    until the table's change log names the row (``helper.row_memo.ChangeLog``):
    between two preemptors only the rows that took or lost a pod change."""

    def __init__(self) -> None:
        self._log = ChangeLog()
        self._rows: dict[int, LonePods | None] = {}

    def follow(self, table: NodeTableView) -> None:
        """Forget the rows that changed since the last call (every row, for a new table)."""
        changed = self._log.rows_changed(table)
        if changed is None:
            self._rows.clear()
            return
        rows = self._rows
        for row in changed:
            rows.pop(row, None)

    def of(self, table: NodeTableView, row: int) -> LonePods | None:
        """Row ``row``'s pods, once ``follow`` has seen the table's latest changes."""
        rows = self._rows
        if row in rows:
            return rows[row]
        pods = list(table.pods[row].values())
        lone = None if any(p.in_workload_group for p in pods) else LonePods(pods, table)
        rows[row] = lone
        return lone
