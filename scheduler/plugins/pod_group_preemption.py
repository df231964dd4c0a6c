"""DefaultPreemption's PodGroupPostFilter: room for a whole pod group (upstream's
``framework/preemption/podgrouppreemption.go``, ``types.go``, ``util.go`` and ``executor.go``'s
``actuatePodGroupPreemption``, v1.37.2, with PodGroupPreemptionPolicy and CompositePodGroup
off, as at their defaults).

When a group's cycle ends Unschedulable, the cycle hands the group's members and a
:class:`PodGroupSimulation` to this hook:

1. the preemptor: the group's priority (a Workload-API PodGroup's ``spec.priority``, 0 when
   unset); a member with ``preemptionPolicy: Never`` makes the group not eligible;
2. a member nominated to a node where a lower-priority pod is terminating by preemption: the
   preemption is still under way, Success with the nominations as they are;
3. victims over the whole cluster, each an atomic unit: a pod, or every scheduled pod of a
   Workload-API PodGroup with ``disruptionMode: All``, across nodes. A victim's priority is
   its PodGroup's (the pod's own without one); only strictly lower ones may go;
4. every potential victim taken out, the group's algorithm run once; if the group still does
   not fit, that is the answer;
5. the victims sorted by importance (higher priority; then a group before a pod of a group
   before a plain pod; then the larger; then the earlier start), and given back one at a time,
   PDB-violating ones first (a unit violates if any of its pods does), as long as every
   member still passes Filter on its node with the members before it placed;
6. the rest evicted, on a worker thread, through DefaultPreemption's own removal (Eviction
   API, budgets as its ``pdbMode`` says, victims waiting at Permit rejected in memory), and the
   members nominated to their nodes. Until the last victim is gone or terminating, the
   group's members are held at PreEnqueue (``waiting for the preemption for this pod group to
   be finished``).

Beyond upstream, as for single pods: ``pdbMode: Strict`` never violates a budget, and
``victimScope: OwnProfiles`` keeps victims to this scheduler's pods (a unit only if all of its
pods are). scheduler-plugins' Coscheduling groups preempt too (upstream has no such groups):
their priority is their lowest member's and their pods are single victims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import structlog

from scheduler.plugin_api import (
    WORKLOAD_API,
    ClusterSnapshot,
    Code,
    DisruptionBudget,
    Handle,
    PluginSpec,
    PodGroup,
    PodGroupPostFilterResult,
    PodGroupSimulation,
    PodGroupsView,
    PodInfo,
    Status,
)
from scheduler.plugins.default_preemption import (
    ACTUATION_THREADS,
    NAME,
    NEVER,
    PREEMPTION_REFUSED,
    DefaultPreemption,
    DefaultPreemptionArgs,
    Removal,
    _Actuation,
)
from scheduler.plugins.preemption_victims import (
    POD_GROUP,
    Victim,
    split_victims_by_pdb,
    victim_priority,
    victims_among,
)

log = structlog.get_logger("scheduler.preemption")

ONGOING = "ongoing preemption on nominated nodes"
NO_VICTIMS = "No preemption victims found for incoming preemptor"
WAITING = "waiting for the preemption for this pod group to be finished"
STRICT_PDB = "preemption would violate a PodDisruptionBudget"
PREFIX = "pod group preemption: "
# The candidate of a pod group's preemption: its domain is the whole cluster.
CLUSTER = "cluster"
# core/v1 PreemptionPolicy value, as parsed.
NEVER_POLICY = "Never"


@dataclass(frozen=True)
class Preemptor:
    """upstream's podGroupPreemptor: the group, the members it preempts for, its priority
    and preemption policy."""

    group: PodGroup
    members: tuple[PodInfo, ...]
    priority: int
    never: bool

    @classmethod
    def of(cls, group: PodGroup, members: Sequence[PodInfo]) -> Preemptor:
        """resolvePreemptionPolicy with PodGroupPreemptionPolicy off: Never when any member
        says Never. A Coscheduling group has no priority of its own: its lowest member's."""
        if group.source == WORKLOAD_API:
            priority = group.priority or 0
        else:
            priority = min((m.priority for m in members), default=0)
        never = any(m.preemption_policy == NEVER_POLICY for m in members)
        return cls(group, tuple(members), priority, never)

    @property
    def gate_key(self) -> str:
        return gate_key(self.group)



def gate_key(group: PodGroup) -> str:
    """What a group's actuation is filed under (upstream keys it by the PodGroup's UID)."""
    return f"podgroup/{group.uid or group.key}"


@dataclass
class Selection:
    """What selectVictimsOnDomain found: the victims to evict (most important first), the
    PDB violations that costs, and each member's node."""

    victims: list[Victim]
    num_pdb_violations: int
    nominations: dict[str, str] = field(default_factory=dict)

    @property
    def num_pods(self) -> int:
        return sum(len(v.pods) for v in self.victims)

    @property
    def num_group_disruptions(self) -> int:
        return sum(1 for v in self.victims if v.is_group)


def domain_victims(snapshot: ClusterSnapshot, groups: PodGroupsView) -> list[Victim]:
    """newDomainForWorkloadPreemption's victims: getCrossNodesVictims over every node."""
    pods = (pod for row in snapshot.order().tolist() for pod in snapshot.pods_on(row))
    return victims_among(pods, groups)


def select_victims_on_domain(
    preemptor: Preemptor,
    victims: Sequence[Victim],
    pdbs: Sequence[DisruptionBudget],
    simulation: PodGroupSimulation,
    may_preempt: Callable[[Victim], bool] = lambda v: True,
) -> Selection | Status:
    """selectVictimsOnDomain: take out every lower-priority victim, place the group once,
    then give victims back, most important first (PDB-violating ones before the others),
    while every member still fits where it was placed. The simulation is left with the
    victims to evict taken out."""
    potential = [v for v in victims if v.priority < preemptor.priority and may_preempt(v)]
    if not potential:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    for victim in potential:
        simulation.remove_pods(victim.pods)
    assignments, status = simulation.schedule()
    if not status.is_success():
        return status
    potential.sort(key=Victim.importance_key)
    violating, others = split_victims_by_pdb(potential, pdbs)

    def reprieved(victim: Victim) -> bool:
        simulation.add_pods(victim.pods)
        if simulation.fits(assignments).is_success():
            return True
        simulation.remove_pods(victim.pods)
        return False

    chosen: list[Victim] = []
    violations = 0
    for split in violating:
        if not reprieved(split.victim):
            chosen.append(split.victim)
            violations += split.violations
    chosen.extend(split.victim for split in others if not reprieved(split.victim))
    chosen.sort(key=Victim.importance_key)
    return Selection(chosen, violations, {a.pod.uid: a.node for a in assignments})


class PodGroupPreemption(DefaultPreemption):
    """DefaultPreemption with its PodGroupPostFilter (upstream's DefaultPreemption holds a
    PodGroupEvaluator beside its pod Evaluator): single pods preempt as before."""

    # -- PodGroupPostFilter -----------------------------------------------------------------
    def pod_group_post_filter(
        self, group: PodGroup, members: Sequence[PodInfo], simulation: PodGroupSimulation
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        result, status = self.preempt_group(group, members, simulation)
        # Upstream's result label is the status code's String(): SUCCESS -> "Success".
        label = "".join(word.capitalize() for word in status.code.name.split("_"))
        self.handle.metrics.workload_preemption_attempts.labels(label).inc()
        if status.message:
            status = Status(status.code, (PREFIX + status.message,), status.plugin)
        return result, status

    def preempt_group(
        self, group: PodGroup, members: Sequence[PodInfo], simulation: PodGroupSimulation
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """upstream's PodGroupEvaluator.Preempt: the nominations and the status."""
        preemptor = Preemptor.of(group, members)
        if preemptor.never:
            return None, Status(Code.UNSCHEDULABLE, (NEVER,))
        current = self._nominations(preemptor)
        if self._ongoing(preemptor, current.values()):
            return PodGroupPostFilterResult(current), Status(Code.SUCCESS, (ONGOING,))
        handle = self.handle
        snapshot = handle.snapshot
        pdbs = list(snapshot.pdbs())
        selection = select_victims_on_domain(
            preemptor, domain_victims(snapshot, handle.pod_groups), pdbs, simulation,
            self.in_scope)
        if isinstance(selection, Status):
            return None, selection
        if self.strict_pdb and selection.num_pdb_violations:
            return None, Status(Code.UNSCHEDULABLE, (STRICT_PDB,))
        metrics = handle.metrics
        # observeVictims: a group's victims have their own histogram, and the units that
        # were groups' are counted per preemptor kind.
        metrics.workload_preemption_victims.observe(selection.num_pods)
        if selection.num_group_disruptions:
            metrics.preemption_workload_disruptions.labels(POD_GROUP).observe(
                selection.num_group_disruptions)
        self.actuate_group(preemptor, selection)
        message = f"found a placement for podgroup, preempting {selection.num_pods} victims"
        return PodGroupPostFilterResult(selection.nominations), Status(Code.SUCCESS, (message,))

    def _nominations(self, preemptor: Preemptor) -> dict[str, str]:
        nominator = self.handle.nominator
        return {m.uid: nominator.node_of(m.uid) or m.nominated_node_name or ""
                for m in preemptor.members}

    def _ongoing(self, preemptor: Preemptor, nodes: Iterable[str]) -> bool:
        """isOngoingPreemption: a lower-priority pod terminating by preemption on a node a
        member is nominated to."""
        handle = self.handle
        snapshot = handle.snapshot
        for node in set(nodes) - {""}:
            row = snapshot.row_of(node)
            if row is None:
                continue
            for pod in snapshot.pods_on(row):
                if (pod.is_terminating and pod.has_preemption_disruption_target()
                        and victim_priority(pod, handle.pod_groups) < preemptor.priority):
                    return True
        return False

    # -- actuation --------------------------------------------------------------------------
    def actuate_group(self, preemptor: Preemptor, selection: Selection) -> None:
        """Remove the victims on a worker thread (async preemption, as for a pod); the
        group's members are held at PreEnqueue meanwhile."""
        handle = self.handle
        log.info(
            "Preempting pods to make room for a pod group", group=preemptor.group.key,
            victims=[p.key for v in selection.victims for p in v.pods],
            group_disruptions=selection.num_group_disruptions,
            pdb_violations=selection.num_pdb_violations,
        )
        to_remove = [p for v in selection.victims for p in v.pods if not p.is_terminating]
        if handle.evictor is None or not to_remove:
            return
        actuation = _Actuation(preemptor.members[0], CLUSTER, key=preemptor.gate_key)
        with self._lock:
            self._forget_ended_locked()
            self._actuations[actuation.key] = actuation
            if self._executor is None:
                self._executor = ThreadPoolExecutor(ACTUATION_THREADS,
                                                    thread_name_prefix="preemption")
            future = self._executor.submit(self._execute_group, actuation, preemptor,
                                           to_remove)
            self._in_flight.add(future)
        future.add_done_callback(self._actuation_done)

    def _execute_group(
        self, actuation: _Actuation, preemptor: Preemptor, to_remove: list[PodInfo]
    ) -> None:
        """All victims but the last in parallel, then the last (prepareCandidateAsync)."""
        evictor = self.handle.evictor
        assert evictor is not None
        first = actuation.pod
        message = f"{first.scheduler_name}: preempting to accommodate a higher priority podgroup"
        outcomes: list[Removal] = []
        try:
            if not self._group_pending(preemptor):
                log.info("Pod group no longer pending; no victim was touched",
                         group=preemptor.group.key)
                return
            *others, last = to_remove
            outcomes = self._remove_in_parallel(evictor, others, first, CLUSTER, message,
                                                preemptor.group)
            if all(o in (Removal.EVICTED, Removal.GONE) for o in outcomes):
                with self._lock:
                    actuation.last_victim = last.uid
                outcomes.append(self._remove_victim(evictor, last, first, CLUSTER, message,
                                                    preemptor.group))
        except Exception:
            log.exception("Pod group preemption failed", group=preemptor.group.key)
            outcomes.append(Removal.FAILED)
        finally:
            if not self._end(actuation, outcomes):
                self._finish_group(preemptor, outcomes)

    def _finish_group(self, preemptor: Preemptor, outcomes: Sequence[Removal]) -> None:
        """No deletion event will wake the members: a refusal by a budget (Strict) releases
        their nominations and retries them after their backoff; a failure, or a last victim
        already gone, activates them."""
        handle = self.handle
        if Removal.REFUSED in outcomes:
            for member in preemptor.members:
                handle.nominator.delete(member.uid)
                handle.move_all_to_active_or_backoff(PREEMPTION_REFUSED, None, member)
        elif Removal.FAILED in outcomes or Removal.GONE in outcomes:
            handle.activate(m.uid for m in preemptor.members)

    def _group_pending(self, preemptor: Preemptor) -> bool:
        handle = self.handle
        for member in preemptor.members:
            current = handle.get_pod(member.uid)
            if current is not None and not current.node_name and not current.is_terminating:
                return True
        return False

    # -- PreEnqueue -------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """A member of a group whose victims are being removed waits, gated, as a pod whose
        own victims are (upstream's PreEnqueue checks the pod's group)."""
        group = None if pod.pod_group is None else self.handle.pod_groups.group_of(pod)
        if group is not None and self.is_running_preemption(gate_key(group)):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING,))
        return super().pre_enqueue(pod)


def new(args: DefaultPreemptionArgs, handle: Handle) -> PodGroupPreemption:
    return PodGroupPreemption(args, handle)


# The one DefaultPreemption registered: single pods (default_preemption.py) and groups.
SPEC = PluginSpec(
    name=NAME,
    factory=new,
    args=DefaultPreemptionArgs,
    points=frozenset({"preEnqueue", "postFilter"}),
)
