"""DefaultPreemption (PostFilter): make room for a pod that fits nowhere.

kube-scheduler's semantics (pkg/scheduler/framework/plugins/defaultpreemption and
framework/preemption, v1.37):

1. eligibility: not for ``preemptionPolicy: Never``; no new preemption while a lower-priority
   pod terminating because of preemption is still on the pod's nominated node (unless that node
   is now unresolvable for the pod);
2. candidates: only nodes where the pod failed with plain Unschedulable, sampled from a random
   offset (at least ``minCandidateNodesAbsolute``, at least ``minCandidateNodesPercentage`` %);
3. victims per node: remove every lower-priority victim; if the pod then fits, reprieve as
   many as possible, PDB-violating victims first, then the others, most important first. A
   victim is a pod, or (GetVictimsOnNode) every scheduled pod of a ``disruptionMode: All``
   PodGroup with a pod on the node, on whatever node they run, evicted together; a pod of a
   PodGroup counts at its group's priority (``preemption_victims.py``);
4. node choice: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
   fewest victims, latest start among the most important victims, then the first;
5. actuation, asynchronously (upstream's prepareCandidateAsync): clear lower-priority
   nominations on that node (their own preemptions, if still running, are void and they
   retry at once), then remove the victims, all but the last in parallel and the last once
   the others are gone: evict each through the Eviction API (which marks it
   ``DisruptionTarget``), give the condition our reason unless the victim was deleted at once,
   and record a ``Preempted`` Event; a budget's refusal in BestEffort mode marks and deletes
   it, as upstream does. A victim waiting at Permit is rejected in memory. Victims
   already terminating are skipped (none left: nothing is sent). The nomination itself is
   written once, with the PodScheduled condition, by the failure handler. While the
   actuation runs the pod is gated in PreEnqueue; a deletion event of a bound pod makes the
   queue look again, and the gate lifts once the last victim is gone or terminating as the
   watch shows it, even after the calls are over (upstream's informer has the deletion in
   the cache before any later event can requeue the pod; ours may lag the eviction call,
   and a cycle run meanwhile would preempt a second victim); so does a last victim the API
   found already gone while the watch still shows it. When no such event can come (a
   removal failed, the last victim was preempted in memory, or was found gone and the watch
   has delivered its deletion already) the pod is activated. A preemptor deleted or bound
   meanwhile touches no victim.

Errors, as upstream: a Filter error on one node does not hide the candidates of the others;
with no candidate at all, an error met on some node is the answer (the nomination is kept).

There is no cross-node preemption, as upstream: removing pods on other nodes could only help a
pod whose anti-affinity or spreading spans nodes, and evaluating that means re-running filters
for every combination of nodes; upstream decided against it for that cost. The one exception
is upstream's too: a ``disruptionMode: All`` group victim goes whole, so its pods on other
nodes are removed with it in the node's dry run, for the plugins that count pods over several
nodes (the view's ``removed_elsewhere``: upstream runs its PreFilterExtensions' RemovePod and
AddPod with the remote node for them, and mutates only the candidate node). A pod with
required affinity to lower-priority pods therefore gets no help: removing victims can only
break its affinity, so such nodes fail the dry run and the pod stays pending.

The dry run is batched: victims are removed and reprieved across all sampled nodes at once,
step by step, with the same vectorised filters the cycle uses and the hypothetical removals
carried by the NodeView, which keeps 50+ decisions per second within reach at 5,000 nodes.

Beyond upstream: ``pdbMode: Strict`` never violates a PodDisruptionBudget (the pod stays
pending with a message naming the budget; an eviction the API refuses anyway releases the
node and the pod retries after its backoff), and ``victimScope: OwnProfiles`` restricts
victims to pods of this scheduler's profiles. In BestEffort mode an eviction refused by a
budget (or by several budgets covering the pod) is followed by a delete, as upstream deletes.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
import structlog

from scheduler.plugin_api import (
    SUCCESS,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    Diagnosis,
    DisruptionBudget,
    EvictionOutcome,
    Evictor,
    ExtenderError,
    Handle,
    IntArray,
    Metrics,
    NodeTableView,
    NodeView,
    PodGroup,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    Resource,
    Status,
    Victims,
    fit_error_message,
)
from scheduler.plugins.preemption_victims import (
    NOT_STARTED,
    Charge,
    LonePodsMemo,
    NodeVictims,
    Victim,
    pod_importance,
    victim_priority,
    victims_among,
)
from scheduler.plugins.preemption_victims import pod_start as _start

log = structlog.get_logger("scheduler.preemption")

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
# Extenders left no candidate.
NO_CANDIDATE = "no candidate node for preemption"
# Eviction metric outcome of a victim deleted after a budget refused its eviction.
DELETED = "Deleted"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
WAITING = "waiting for the preemption for this pod to be finished"
GONE = "the pod is no longer pending"
REFUSED_BY_PDB = "a PodDisruptionBudget refused the eviction of a victim"
REASON_UNSCHEDULABLE = "Unschedulable"
# Sent to the preemptor alone after a refusal: requeued after its backoff, gated or not.
PREEMPTION_REFUSED = ClusterEvent(Resource.WILDCARD, Action.ALL, "PreemptionRefused")
MAX_INT32 = 2**31 - 1
# Upstream starts a goroutine per preemption, so no preemption waits for another's API calls;
# threads are started as needed, up to this many (a burst of preemptions on a slow API server
# stays well below it).
ACTUATION_THREADS = 256

@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """DefaultPreemptionArgs with upstream's v1 defaults (10 %, 100 nodes), and this
    scheduler's pdbMode and victimScope; ValidateDefaultPreemptionArgs through field_errors."""

    unknown_field_reason: ClassVar[str] = "unknown field"

    min_candidate_nodes_percentage: int = field(
        default=10, metadata={"type_error": "must be in [0, 100]"})
    min_candidate_nodes_absolute: int = field(default=100, metadata={"type_error": "must be >= 0"})
    pdb_mode: Literal["BestEffort", "Strict"] = field(
        default="BestEffort", metadata={"type_error": "must be BestEffort or Strict"})
    victim_scope: Literal["All", "OwnProfiles"] = field(
        default="All", metadata={"type_error": "must be All or OwnProfiles"})

    def field_errors(self, path: str) -> Iterator[str]:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if not 0 <= pct <= 100:
            yield f"{path}.minCandidateNodesPercentage: must be in [0, 100]"
        if absolute < 0:
            yield f"{path}.minCandidateNodesAbsolute: must be >= 0"
        if pct == 0 and absolute == 0:
            yield (f"{path}: minCandidateNodesPercentage and minCandidateNodesAbsolute "
                   "cannot both be 0")


class Removal(enum.Enum):
    """How the removal of one victim ended."""

    # Removed through the API: its deletion event will follow.
    EVICTED = "evicted"
    # Already gone at the API: its deletion event follows, unless the watch delivered it.
    GONE = "gone"
    # Preempted in memory at Permit: never bound, so no deletion event is coming for it.
    IN_MEMORY = "in memory"
    # Refused by a PodDisruptionBudget (pdbMode Strict): not retried at once.
    REFUSED = "refused"
    FAILED = "failed"


_REFUSALS = (EvictionOutcome.BLOCKED_BY_PDB, EvictionOutcome.MULTIPLE_PDBS)
_REMOVED = (Removal.EVICTED, Removal.GONE, Removal.IN_MEMORY)


@dataclass(eq=False)
class _Actuation:
    """One preemption being carried out; its pod is gated until it ends."""

    pod: PodInfo
    node: str
    # Set when the last victim's removal starts. From then on the gate holds only while that
    # victim exists and is not terminating (upstream's lastVictimsPendingPreemption): a
    # deletion event that beats the end of the actuation still lets the pod through.
    last_victim: str = ""
    # A higher-priority preemptor took the node: the plan is void.
    superseded: bool = False
    # The calls are over, the last victim evicted, and the watch still shows it: the gate
    # holds until the watch shows it gone or terminating.
    ended: bool = False
    # What the gate is filed under: the preemptor's uid, or its pod group's.
    key: str = ""

    def __post_init__(self) -> None:
        self.key = self.key or self.pod.uid


def _skip(pod: object, old: object, new: object) -> QueueingHint:
    return QueueingHint.SKIP


@dataclass
class Candidate:
    row: int
    node: str
    victims: list[PodInfo]
    num_pdb_violations: int
    violated_budgets: set[str] = field(default_factory=set)


@dataclass
class PreemptionPlan:
    """The outcome of a dry run: what PostFilter answers, every candidate found, why the other
    potential nodes were no help (rows, reason), and the candidate that would be chosen."""

    result: PostFilterResult | None
    status: Status
    candidates: list[Candidate] = field(default_factory=list)
    rejected: list[tuple[IntArray, str]] = field(default_factory=list)
    best: Candidate | None = None
    # The newest version of the preemptor, the one a chosen ``best`` is actuated for.
    preemptor: PodInfo | None = None


@dataclass(frozen=True)
class _DryRun:
    """What one batch of the dry run filters with: the cycle's state, the preemptor, the
    snapshot, the nominated pods, and whether an active Filter reads views' pod lists."""

    state: CycleState
    pod: PodInfo
    snapshot: ClusterSnapshot
    nominated: Mapping[str, Sequence[PodInfo]]
    lists: bool


@dataclass
class _VictimBatch:
    """Nodes of a dry run with their potential victims (most important first), whether any
    victim has pods on other nodes, each victim's request vector and pod count on its node
    (node by node, from ``offsets``), the nodes' requests and pod counts, and per node what
    the victims still removed free."""

    rows: IntArray
    potential: list[NodeVictims]
    spans: bool
    vectors: IntArray
    counts: IntArray
    offsets: IntArray
    base_requested: IntArray
    base_count: IntArray
    removed_sum: IntArray
    removed_count: IntArray

    def keep(self, positions: IntArray) -> None:
        """Only the nodes at ``positions`` go on."""
        self.rows = self.rows[positions]
        self.potential = [self.potential[i] for i in positions.tolist()]
        self.offsets = self.offsets[positions]
        self.base_requested = self.base_requested[positions]
        self.base_count = self.base_count[positions]
        self.removed_sum = self.removed_sum[positions]
        self.removed_count = self.removed_count[positions]

    def removed_pods(self) -> list[list[PodInfo]]:
        """Per node, the pods on it that the potential victims take away."""
        return [list(victims.pods) for victims in self.potential]

    def removed_elsewhere(self) -> list[list[PodInfo]] | None:
        """Per node, the pods on other nodes that its potential victims take away (a
        ``disruptionMode: All`` group's), or None when no node's victims have any."""
        if not self.spans:
            return None
        elsewhere = [[p for unit in victims.remote_pods() for p in unit]
                     for victims in self.potential]
        return elsewhere if any(elsewhere) else None


@dataclass
class _RemovedPods:
    """The reprieve's pod lists, per queue: each queued victim's pods on the node
    (``local``) and on other nodes (``remote``), and the pods the victims not given back
    still remove there (``here``, ``elsewhere``; None when no victim has pods elsewhere)."""

    local: list[list[Sequence[PodInfo]]]
    remote: list[list[Sequence[PodInfo]]]
    here: list[list[PodInfo]]
    elsewhere: list[list[PodInfo]] | None

    @classmethod
    def of(cls, local: list[list[Sequence[PodInfo]]],
           remote: list[list[Sequence[PodInfo]]] | None) -> _RemovedPods:
        here = [[p for unit in q for p in unit] for q in local]
        if remote is None:
            return cls(local, [], here, None)
        elsewhere = [[p for unit in q for p in unit] for q in remote]
        return cls(local, remote, here, elsewhere if any(elsewhere) else None)

    def given_back(
        self, active: Sequence[int], step: int
    ) -> tuple[list[list[PodInfo]], list[list[PodInfo]] | None]:
        """For the queues ``active``, the lists with their victim at ``step`` given back."""
        here = [_without(self.here[i], self.local[i][step]) for i in active]
        if self.elsewhere is None:
            return here, None
        return here, [_without(self.elsewhere[i], self.remote[i][step]) for i in active]

    def keep(
        self, queue: int, here: list[list[PodInfo]] | None,
        elsewhere: list[list[PodInfo]] | None, position: int,
    ) -> None:
        """Queue ``queue``'s victim was given back: its trial lists (at ``position``) stay."""
        if here is not None:
            self.here[queue] = here[position]
        if self.elsewhere is not None and elsewhere is not None:
            self.elsewhere[queue] = elsewhere[position]


class DefaultPreemption:
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        self.handle = handle
        self.min_pct = args.min_candidate_nodes_percentage
        self.min_abs = args.min_candidate_nodes_absolute
        self.strict_pdb = args.pdb_mode == "Strict"
        self.own_profiles_only = args.victim_scope == "OwnProfiles"
        # The common case's victims per node, kept between preemptors until the node changes.
        self._lone_pods = LonePodsMemo()
        self._lock = threading.Lock()
        self._actuations: dict[str, _Actuation] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._removals: ThreadPoolExecutor | None = None
        self._in_flight: set[Future[None]] = set()
        # Victims this plugin evicted, until the watch shows them gone: the Eviction API
        # marks a victim with its own reason (EvictionByEvictionAPI) as it deletes it, and ours
        # is restored only after, so for a while the watch shows the victim terminating with
        # the API's reason; eligibility still counts it as terminating by preemption.
        self._evicted: set[str] = set()

    # -- PostFilter -----------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, diagnosis)
        return result, prefixed(status)

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        handle = self.handle
        metrics = handle.metrics
        metrics.preemption_attempts.inc()
        plan = self.plan(state, pod, diagnosis)
        if plan.best is not None and plan.preemptor is not None:
            metrics.preemption_victims.observe(len(plan.best.victims))
            self.actuate(plan.preemptor, plan.best)
        return plan.result, plan.status

    def plan(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> PreemptionPlan:
        """The dry run: what preempting for ``pod`` would do now. Nothing is changed."""
        handle = self.handle
        snapshot = handle.snapshot
        # As upstream, the newest version of the preemptor: one deleted or bound during its
        # own cycle preempts nobody.
        current = handle.get_pod(pod.uid)
        if current is None or current.node_name or current.is_terminating:
            return PreemptionPlan(None, Status(Code.UNSCHEDULABLE, (GONE,)))
        pod = current
        nominated = handle.nominator.node_of(pod.uid) or pod.nominated_node_name
        eligible, reason = self.eligible(pod, nominated, diagnosis, snapshot)
        if not eligible:
            return PreemptionPlan(None, Status(Code.UNSCHEDULABLE, (reason,)))

        order = snapshot.order()
        potential = order[diagnosis.codes[order] == np.uint8(Code.UNSCHEDULABLE)]
        if potential.size == 0:
            return PreemptionPlan(PostFilterResult(""), no_candidate_status(order, []))

        candidates, statuses, errors = self.find_candidates(state, pod, snapshot, potential)
        if not candidates and errors:
            # As upstream: an error on some node with no candidate anywhere is an error (the
            # nomination is left as it is), not a FitError.
            status = Status(Code.ERROR, (aggregate_errors(errors),))
            return PreemptionPlan(None, status, rejected=statuses)
        if not candidates:
            status = no_candidate_status(order, statuses)
            return PreemptionPlan(PostFilterResult(""), status, rejected=statuses)

        candidates, error = self.call_extenders(pod, candidates)
        if error is not None:
            return PreemptionPlan(None, Status(Code.ERROR, (error,)), rejected=statuses)
        if not candidates:
            return PreemptionPlan(None, Status(Code.UNSCHEDULABLE, (NO_CANDIDATE,)),
                                  rejected=statuses)
        best = select_candidate(candidates)
        message = (
            f"found a potential placement for pod on node {best.node}, "
            f"preempting {len(best.victims)} victims"
        )
        return PreemptionPlan(
            PostFilterResult(best.node), Status(Code.SUCCESS, (message,)), candidates, statuses,
            best, pod,
        )

    def call_extenders(
        self, pod: PodInfo, candidates: list[Candidate]
    ) -> tuple[list[Candidate], str | None]:
        """Extenders that preempt confirm or change the victims, each given what the previous
        left; an error from one that is not ignorable stops preemption (upstream's
        callExtenders)."""
        extenders = [e for e in self.handle.extenders
                     if e.supports_preemption and e.is_interested(pod)]
        if not extenders or not candidates:
            return candidates, None
        snapshot = self.handle.snapshot
        victims: Mapping[str, Victims] = {
            c.node: Victims(c.victims, c.num_pdb_violations) for c in candidates
        }
        for extender in extenders:
            try:
                answer = dict(extender.process_preemption(pod, victims, snapshot))
            except ExtenderError as err:
                if extender.ignorable:
                    continue
                return [], str(err)
            for node, chosen in list(answer.items()):
                if not chosen.pods:
                    if not extender.ignorable:
                        return [], f'expected at least one victim pod on node "{node}"'
                    del answer[node]
            victims = answer
            if not victims:
                break
        by_node = {c.node: c for c in candidates}
        out = []
        for node, chosen in victims.items():
            row = snapshot.row_of(node)
            if row is None:
                continue
            budgets = by_node[node].violated_budgets if node in by_node else set()
            ordered_victims = sorted(chosen.pods, key=pod_importance)
            out.append(Candidate(row, node, ordered_victims, chosen.num_pdb_violations, budgets))
        return out, None

    def eligible(
        self, pod: PodInfo, nominated: str, diagnosis: Diagnosis, snapshot: ClusterSnapshot
    ) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NEVER
        if nominated:
            row = snapshot.row_of(nominated)
            if row is None:
                return True, ""
            if diagnosis.codes[row] == np.uint8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                return True, ""
            for other in snapshot.pods_on(row):
                if (
                    self._may_preempt(other, pod)
                    and other.is_terminating
                    and self._terminating_by_preemption(other)
                ):
                    return False, TERMINATING
        return True, ""

    def _terminating_by_preemption(self, pod: PodInfo) -> bool:
        """Upstream's PodTerminatingByPreemption: the DisruptionTarget condition says
        PreemptionByScheduler. Upstream writes that condition before its DELETE, so a victim
        never terminates without it; ours goes through the Eviction API, whose own reason
        stands until our patch is seen, so a victim this plugin evicted counts as well."""
        if pod.has_preemption_disruption_target():
            return True
        with self._lock:
            return pod.uid in self._evicted

    def _may_preempt(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """isPreemptionAllowed for the pod as a victim of its own (NewPodVictim: its
        PodGroup's priority, else its own)."""
        unit = Victim((victim,), victim_priority(victim, self.handle.pod_groups))
        return bool(self._eligible([unit], preemptor))

    def _eligible(self, units: Iterable[Victim], preemptor: PodInfo) -> list[Victim]:
        """isPreemptionAllowedAcrossAllVictimNodes over ``units``: those of a lower
        priority, and with victimScope OwnProfiles every pod of them this scheduler's (one
        pass: it runs for every pod of every candidate node)."""
        below, every_scope = preemptor.priority, not self.own_profiles_only
        return [v for v in units if v.priority < below and (every_scope or self.in_scope(v))]

    def _pod_in_scope(self, pod: PodInfo) -> bool:
        """victimScope OwnProfiles: the pod is this scheduler's."""
        handle = self.handle
        return handle.has_profile(pod.scheduler_name)

    def in_scope(self, victim: Victim) -> bool:
        """victimScope: with OwnProfiles, every pod of the victim is this scheduler's."""
        if not self.own_profiles_only:
            return True
        handle = self.handle
        return all(handle.has_profile(p.scheduler_name) for p in victim.pods)

    # -- dry run --------------------------------------------------------------------------
    def num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_pct // 100
        return min(max(n, self.min_abs), num_nodes)

    def find_candidates(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot, potential: IntArray
    ) -> tuple[list[Candidate], list[tuple[IntArray, str]], list[str]]:
        """Candidates in dry-run order, the (rows, reason) of nodes that were no help, and the
        errors met on the way."""
        handle = self.handle
        n = int(potential.size)
        wanted = self.num_candidates(n)
        offset = int(handle.rng.integers(n))
        ordered = potential[(offset + np.arange(n)) % n]
        pdbs = list(snapshot.pdbs())
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        strict_blocked: list[Candidate] = []
        statuses: list[tuple[IntArray, str]] = []
        errors: list[str] = []
        # Nodes are evaluated a chunk at a time; within a chunk, candidates are taken in
        # dry-run order and the search stops where upstream's sequential one would (at least
        # one non-violating candidate and ``wanted`` in all), so the outcome does not depend
        # on the chunk size.
        chunk = max(wanted, 32)
        enough = False
        for start in range(0, n, chunk):
            rows = ordered[start : start + chunk]
            found, failed, failures = self.select_victims(state, pod, snapshot, rows, pdbs)
            statuses.extend(failed)
            errors.extend(failures)
            for candidate in found:
                if candidate.num_pdb_violations == 0:
                    if len(non_violating) < wanted:
                        non_violating.append(candidate)
                elif self.strict_pdb:
                    strict_blocked.append(candidate)
                elif len(violating) < wanted:
                    violating.append(candidate)
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    enough = True
                    break
            if enough:
                break
        if self.strict_pdb and not non_violating and strict_blocked:
            for candidate in strict_blocked:
                budgets = ", ".join(sorted(candidate.violated_budgets))
                statuses.append((
                    np.asarray([candidate.row], dtype=np.int64),
                    f"preemption would violate PodDisruptionBudget {budgets}",
                ))
        return non_violating + violating, statuses, errors

    def select_victims(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: ClusterSnapshot,
        rows: IntArray,
        pdbs: Sequence[DisruptionBudget],
    ) -> tuple[list[Candidate], list[tuple[IntArray, str]], list[str]]:
        """SelectVictimsOnNode for every row at once: candidates, (rows, reason), errors.

        A Filter error answers for the whole batch, so on an error the rows are evaluated one
        by one: as upstream, an error on one node must not hide the candidates of the others.
        """
        found, failed, error = self._select_victims_batch(state, pod, snapshot, rows, pdbs)
        if error is None:
            return found, failed, []
        if rows.size == 1:
            return [], failed, [error]
        candidates: list[Candidate] = []
        statuses: list[tuple[IntArray, str]] = []
        errors: list[str] = []
        for k in range(int(rows.size)):
            one, why, err = self._select_victims_batch(state, pod, snapshot, rows[k : k + 1], pdbs)
            candidates.extend(one)
            statuses.extend(why)
            if err is not None:
                errors.append(err)
        return candidates, statuses, errors

    def _select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: ClusterSnapshot,
        rows: IntArray,
        pdbs: Sequence[DisruptionBudget],
    ) -> tuple[list[Candidate], list[tuple[IntArray, str]], str | None]:
        """upstream SelectVictimsOnNode, for every node of ``rows`` at once: the candidates,
        the rows that are none (with why), or the error a Filter plugin returned."""
        dry = _DryRun(state, pod, snapshot, self.handle.nominator.all(),
                      self.handle.framework.filters_read_pod_lists(state))
        failed: list[tuple[IntArray, str]] = []
        batch = self._potential_victims(dry, rows, failed)
        if batch is None:
            return [], failed, None
        # 1) Everything lower-priority removed: does the pod fit at all?
        error = self._keep_fitting_without_victims(dry, batch, failed)
        if error is not None or batch.rows.size == 0:
            return [], failed, error
        # 2) Reprieve: PDB-violating victims first, then the others, most important first.
        reprieved = self._reprieve(dry, batch, pdbs)
        if isinstance(reprieved, str):
            return [], failed, reprieved
        names = snapshot.nodes.names
        for candidate in reprieved:
            if not candidate.victims:
                # As upstream: the pod failed here, yet fits with every victim given back.
                return [], failed, ("expected at least one victim pod on node "
                                    f'"{names[candidate.row]}"')
        return reprieved, failed, None

    def _potential_victims(
        self, dry: _DryRun, rows: IntArray, failed: list[tuple[IntArray, str]]
    ) -> _VictimBatch | None:
        """The rows with victims the preemptor may evict (GetVictimsOnNode: a pod, or a
        ``disruptionMode: All`` group with its pods on every node), each node's most
        important first, and what removing all of them frees on the node; rows with none go
        to ``failed``."""
        nodes = dry.snapshot.nodes
        self._lone_pods.follow(nodes)
        potential: list[NodeVictims] = []
        with_victims: list[int] = []
        no_victims: list[int] = []
        for position, row in enumerate(rows.tolist()):
            victims = self._victims_on(nodes, row, dry.pod)
            if victims is None:
                no_victims.append(row)
            else:
                potential.append(victims)
                with_victims.append(position)
        if no_victims:
            failed.append((np.asarray(no_victims, dtype=np.int64), NO_VICTIMS))
        if not with_victims:
            return None
        batch_rows = rows[np.asarray(with_victims, dtype=np.int64)]
        per_node = np.asarray([victims.size for victims in potential], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(per_node)[:-1]))
        vectors = np.concatenate([victims.vectors for victims in potential])
        counts = _unit_counts(potential, int(per_node.sum()))
        # Every node has a victim: no segment is empty.
        return _VictimBatch(
            batch_rows, potential, any(victims.spans for victims in potential), vectors, counts,
            offsets, np.take(nodes.requested, batch_rows, axis=0), nodes.pod_count[batch_rows],
            np.add.reduceat(vectors, offsets, axis=0), np.add.reduceat(counts, offsets),
        )

    def _victims_on(self, nodes: NodeTableView, row: int, pod: PodInfo) -> NodeVictims | None:
        """The victims ``pod`` may take on the node: its lower-priority pods, from the memo,
        on a node without Workload-API group members; else the units of getCrossNodesVictims
        that ``_eligible`` keeps. None when there are none."""
        lone = self._lone_pods.of(nodes, row)
        if lone is not None:
            return lone.below(pod.priority, self._pod_in_scope if self.own_profiles_only
                              else None)
        here = nodes.pods[row]
        units = self._eligible(victims_among(here.values(), self.handle.pod_groups), pod)
        if not units:
            return None
        units.sort(key=Victim.importance_key)
        return NodeVictims.of_units(units, here, nodes)

    def _keep_fitting_without_victims(
        self, dry: _DryRun, batch: _VictimBatch, failed: list[tuple[IntArray, str]]
    ) -> str | None:
        """Run the filters with every potential victim removed; keep in ``batch`` only the
        nodes where the pod then fits, the others go to ``failed``. A Filter's error."""
        # Only build per-row pod lists when an active filter reads them; for a pod without
        # affinity, spreading or host ports the numbers alone decide.
        stripped = NodeView(dry.snapshot, batch.rows, batch.base_requested - batch.removed_sum,
                            batch.base_count - batch.removed_count,
                            removed=batch.removed_pods() if dry.lists else None,
                            removed_elsewhere=batch.removed_elsewhere() if dry.lists else None)
        outcome = self.handle.framework.run_filters_with_nominated(
            dry.state, dry.pod, stripped, dry.nominated)
        if outcome.error is not None:
            return outcome.error.message
        for positions, reason, _ in outcome.reasons:
            failed.append((batch.rows[positions], reason))
        batch.keep(outcome.feasible)
        return None

    def _reprieve(
        self, dry: _DryRun, batch: _VictimBatch, pdbs: Sequence[DisruptionBudget]
    ) -> list[Candidate] | str:
        """Give each node's victims back one at a time (PDB-violating ones first), on every
        node at once, keeping those the pod still fits beside: the candidates, their victims'
        pods most important victim first, or a Filter's error."""
        # Per node, its victims' indices in reprieve order, what each costs in budgets, and
        # where each one's vector sits in ``batch.vectors``. Without budgets, the order is
        # the victims' own and nothing is charged.
        queues: list[Sequence[int]] = []
        charges: list[list[Charge]] = []
        vector_rows: list[Sequence[int]] = []
        for victims, offset in zip(batch.potential, batch.offsets.tolist(), strict=True):
            if not pdbs:
                queues.append(range(victims.size))
                vector_rows.append(range(offset, offset + victims.size))
                continue
            queue, charge = victims.pdb_queue(pdbs)
            queues.append(queue)
            charges.append(charge)
            vector_rows.append([offset + k for k in queue])
        removed = self._reprieve_lists(batch, queues) if dry.lists else None
        names = dry.snapshot.nodes.names
        candidates = [Candidate(row, names[row], [], 0) for row in batch.rows.tolist()]
        chosen: list[list[int]] = [[] for _ in candidates]
        for step in range(max(len(q) for q in queues)):
            active = [i for i, q in enumerate(queues) if step < len(q)]
            idx = np.asarray(active, dtype=np.int64)
            unit_rows = [vector_rows[i][step] for i in active]
            back, back_count = batch.vectors[unit_rows], batch.counts[unit_rows]
            trial_removed, trial_elsewhere = (
                removed.given_back(active, step) if removed is not None else (None, None))
            trial = NodeView(
                dry.snapshot,
                batch.rows[idx],
                batch.base_requested[idx] - batch.removed_sum[idx] + back,
                batch.base_count[idx] - batch.removed_count[idx] + back_count,
                removed=trial_removed,
                removed_elsewhere=trial_elsewhere,
            )
            result = self.handle.framework.run_filters_with_nominated(
                dry.state, dry.pod, trial, dry.nominated)
            if result.error is not None:
                return result.error.message
            passed = result.codes == np.uint8(Code.SUCCESS)
            kept = idx[passed]
            batch.removed_sum[kept] -= back[passed]
            batch.removed_count[kept] -= back_count[passed]
            for j, i in enumerate(active):
                if passed[j]:
                    if removed is not None:
                        removed.keep(i, trial_removed, trial_elsewhere, j)
                    continue
                chosen[i].append(queues[i][step])
                if not pdbs:
                    continue
                violations, budgets = charges[i][step]
                if violations:
                    candidates[i].num_pdb_violations += violations
                    candidates[i].violated_budgets |= budgets
        for candidate, victims, picked in zip(candidates, batch.potential, chosen, strict=True):
            if pdbs:
                # Taken in reprieve order; most important first, as the reprieve found them
                # among equals (without budgets that order is already the importance order).
                picked.sort(key=victims.key)
            candidate.victims = victims.victims(picked)
        return candidates

    @staticmethod
    def _reprieve_lists(batch: _VictimBatch, queues: Sequence[Sequence[int]]) -> _RemovedPods:
        """The pod lists the reprieve hands the filters that read them, for ``queues``."""
        local: list[list[Sequence[PodInfo]]] = []
        remote: list[list[Sequence[PodInfo]]] = []
        for victims, queue in zip(batch.potential, queues, strict=True):
            here = victims.local_pods()
            local.append([here[k] for k in queue])
            if batch.spans:
                there = victims.remote_pods()
                remote.append([there[k] for k in queue])
        return _RemovedPods.of(local, remote if batch.spans else None)

    # -- actuation ------------------------------------------------------------------------
    def actuate(self, pod: PodInfo, best: Candidate) -> None:
        """Start removing ``best``'s victims on a worker thread (upstream's async preemption).

        Until that work ends, :meth:`pre_enqueue` keeps ``pod`` gated.
        """
        handle = self.handle
        log.info(
            "Preempting pods to make room",
            pod=pod.key, node=best.node, victims=[v.key for v in best.victims],
            pdb_violations=best.num_pdb_violations, budgets=sorted(best.violated_budgets),
        )
        if handle.evictor is None:
            return
        to_remove = [v for v in best.victims if not v.is_terminating]
        if not to_remove:
            # As upstream: every victim is already terminating, there is nothing to send.
            return
        lower_nominated = [
            p for p in handle.nominator.pods_for_node(best.node)
            if p.priority < pod.priority and p.uid != pod.uid
        ]
        actuation = _Actuation(pod, best.node)
        with self._lock:
            self._forget_ended_locked()
            self._forget_gone_victims_locked()
            self._actuations[pod.uid] = actuation
            if self._executor is None:
                self._executor = ThreadPoolExecutor(ACTUATION_THREADS,
                                                    thread_name_prefix="preemption")
            future = self._executor.submit(self._execute, actuation, to_remove, lower_nominated)
            self._in_flight.add(future)
        future.add_done_callback(self._actuation_done)

    def _actuation_done(self, future: Future[None]) -> None:
        with self._lock:
            self._in_flight.discard(future)

    def wait_for_actuations(self, timeout: float | None = None) -> bool:
        """Block until every actuation started so far has ended; False on timeout.

        For tests and an orderly shutdown: the scheduling loop never waits on actuations.
        """
        with self._lock:
            pending = list(self._in_flight)
        _, not_done = wait(pending, timeout=timeout)
        return not not_done

    # -- PreEnqueue -----------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """As upstream: a pod whose victims are being removed waits, gated, instead of running
        cycles that could only say it is waiting."""
        if self.is_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING,))
        return SUCCESS

    def is_running_preemption(self, uid: str) -> bool:
        """Upstream's IsPodRunningPreemption: the actuation for ``uid`` has not ended, and its
        last victim, once its removal started, still exists and is not terminating. An
        actuation whose calls are over counts until the watch shows that victim gone or
        terminating, then is forgotten."""
        with self._lock:
            actuation = self._actuations.get(uid)
            last = actuation.last_victim if actuation is not None else ""
        if actuation is None:
            return False
        if not last or self._victim_present(last):
            return True
        if actuation.ended:
            with self._lock:
                if self._actuations.get(uid) is actuation:
                    del self._actuations[uid]
        return False

    def _victim_present(self, uid: str) -> bool:
        """The watch still shows the victim, not terminating."""
        handle = self.handle
        victim = handle.get_pod(uid)
        return victim is not None and not victim.is_terminating

    def _forget_ended_locked(self) -> None:
        """Drop ended actuations whose last victim the watch shows gone or terminating (the
        pod was deleted or bound while gated, so no PreEnqueue check came to drop them)."""
        for uid, actuation in list(self._actuations.items()):
            if actuation.ended and not self._victim_present(actuation.last_victim):
                del self._actuations[uid]

    def _forget_gone_victims_locked(self) -> None:
        """Drop the evicted victims the watch no longer shows."""
        handle = self.handle
        self._evicted = {uid for uid in self._evicted if handle.get_pod(uid) is not None}

    def supersede(self, uid: str) -> None:
        """Another preemptor took the node ``uid`` was nominated to: its plan is void. The gate
        lifts now, so the pod can retry at once; its actuation sends nothing more."""
        with self._lock:
            actuation = self._actuations.pop(uid, None)
            if actuation is not None:
                actuation.superseded = True

    def _execute(
        self, actuation: _Actuation, to_remove: list[PodInfo], lower_nominated: list[PodInfo]
    ) -> None:
        """Clear lower nominations, then remove the victims: all but the last in parallel, the
        last once the others are gone (upstream's prepareCandidateAsync).

        At the end the pod is activated when no deletion event would wake it: a removal
        failed, or the last victim was already gone or was preempted in memory. A refusal by
        a budget (pdbMode Strict) releases the node and retries after the pod's backoff.
        """
        handle = self.handle
        evictor = handle.evictor
        assert evictor is not None
        pod, node = actuation.pod, actuation.node
        outcomes: list[Removal] = []
        try:
            if not self._still_wanted(actuation):
                # Deleted or bound during its own cycle: no victim is disturbed for it.
                log.info("Preemptor no longer pending; no victim was touched", pod=pod.key,
                         node=node)
                handle.nominator.delete(pod.uid)
                return
            self._clear_lower_nominations(pod, lower_nominated)
            message = f"{pod.scheduler_name}: preempting to accommodate a higher priority pod"
            *others, last = to_remove
            outcomes = self._remove_in_parallel(evictor, others, pod, node, message)
            removed = all(o in _REMOVED for o in outcomes)
            if removed and self._still_wanted(actuation):
                with self._lock:
                    actuation.last_victim = last.uid
                outcomes.append(self._remove_victim(evictor, last, pod, node, message))
        except Exception:
            log.exception("Preemption failed", pod=pod.key, node=node)
            outcomes.append(Removal.FAILED)
        finally:
            if not self._end(actuation, outcomes):
                self._finish(actuation, outcomes)

    def _end(self, actuation: _Actuation, outcomes: Sequence[Removal]) -> bool:
        """The calls are over: the gate lifts now, unless the last victim was removed at the
        API (evicted, or found gone) and the watch still shows it; then its deletion event
        lifts the gate, and True."""
        awaited = (
            bool(outcomes)
            and outcomes[-1] in (Removal.EVICTED, Removal.GONE)
            and bool(actuation.last_victim)
            and self._victim_present(actuation.last_victim)
        )
        uid = actuation.key
        with self._lock:
            if self._actuations.get(uid) is actuation:
                if awaited:
                    actuation.ended = True
                else:
                    del self._actuations[uid]
        return awaited

    def _finish(self, actuation: _Actuation, outcomes: Sequence[Removal]) -> None:
        handle = self.handle
        pod = actuation.pod
        if actuation.superseded or not self._still_wanted(actuation):
            return
        if Removal.REFUSED in outcomes:
            # Holding the node for a plan a budget refused would block it for nothing:
            # release the reservation, say why, and retry after the pod's backoff.
            handle.nominator.delete(pod.uid)
            handle.reporter.failed(
                pod, REASON_UNSCHEDULABLE, f"preemption: {REFUSED_BY_PDB} on node {actuation.node}",
                "",
            )
            handle.move_all_to_active_or_backoff(PREEMPTION_REFUSED, None, pod)
        elif (
            Removal.FAILED in outcomes
            or Removal.IN_MEMORY in outcomes
            or (Removal.GONE in outcomes and handle.get_pod(actuation.last_victim) is None)
        ):
            # No deletion event is coming to move the pod: a removal failed, the last victim
            # was never bound, or the watch delivered the deletion of a victim found gone
            # perhaps before PreEnqueue knew to wait for it. A victim found gone that the watch
            # still shows will be deleted there, and that event moves the pod.
            handle.activate([pod.uid])

    def _still_wanted(self, actuation: _Actuation) -> bool:
        """The preemptor still exists, unbound and not terminating, and no one took its node."""
        handle = self.handle
        current = handle.get_pod(actuation.pod.uid)
        return (
            not actuation.superseded
            and current is not None
            and not current.node_name
            and not current.is_terminating
        )

    def _clear_lower_nominations(self, pod: PodInfo, lower: Sequence[PodInfo]) -> None:
        """Lower-priority pods nominated to the node may no longer fit there: their
        nominations go, their own preemptions (if still running) are void, and they retry."""
        handle = self.handle
        evictor = handle.evictor
        assert evictor is not None
        for other in lower:
            handle.nominator.delete(other.uid)
            handle.supersede(other)
            evictor.set_nominated_node(other, "")
            log.info("Cleared a lower-priority nomination", pod=other.key,
                     preemptor=pod.key, node=other.nominated_node_name or None)
        handle.activate([p.uid for p in lower])

    def _remove_in_parallel(
        self, evictor: Evictor, victims: Sequence[PodInfo], pod: PodInfo, node: str,
        message: str, group: PodGroup | None = None,
    ) -> list[Removal]:
        """Remove ``victims`` concurrently; each ends on its own, whatever the others do.
        ``group``: the pod group whose preemption this is (``pod`` its first member)."""
        if len(victims) <= 1:
            return [self._remove_victim(evictor, v, pod, node, message, group)
                    for v in victims]
        handle = self.handle
        with self._lock:
            if self._removals is None:
                self._removals = ThreadPoolExecutor(
                    handle.parallelism, thread_name_prefix="eviction"
                )
            pool = self._removals
        return list(pool.map(
            lambda v: self._remove_victim(evictor, v, pod, node, message, group), victims))

    def _remove_victim(
        self, evictor: Evictor, victim: PodInfo, pod: PodInfo, node: str, message: str,
        group: PodGroup | None = None,
    ) -> Removal:
        try:
            removal = self._remove(evictor, victim, pod, node, message, group)
        except Exception:
            log.exception("Could not remove preemption victim", pod=pod.key, victim=victim.key)
            removal = Removal.FAILED
        if removal in (Removal.REFUSED, Removal.FAILED):
            with self._lock:
                self._evicted.discard(victim.uid)
        return removal

    def _remove(
        self, evictor: Evictor, victim: PodInfo, pod: PodInfo, node: str, message: str,
        group: PodGroup | None,
    ) -> Removal:
        handle = self.handle
        waiting = handle.waiting_pods
        if victim.uid in waiting:
            # As upstream: a victim still waiting at Permit is rejected in memory; it was
            # never bound, so no deletion event will follow.
            waiting.reject(victim.uid, "preempted", NAME)
            log.info("Preempted a pod waiting at Permit", pod=pod.key, victim=victim.key,
                     node=node)
            return Removal.IN_MEMORY
        # The Eviction API marks the victim DisruptionTarget itself (reason
        # EvictionByEvictionAPI) as it deletes it, so no mark goes before it: a victim a
        # budget spares is left unmarked.
        with self._lock:
            # Before the call: the watch may show the victim terminating before it returns.
            self._evicted.add(victim.uid)
        result = evictor.evict(victim)
        outcome = result.outcome
        self._metrics().evictions.labels(outcome.value).inc()
        if outcome is EvictionOutcome.EVICTED:
            # While the victim terminates our reason replaces the API's, so it reads as
            # upstream's victims do and eligibility ("a terminating pod on the nominated
            # node") recognises it. A victim deleted at once is not written again.
            if not victim.deleted_at_once() and not evictor.mark_disruption_target(victim, message):
                # Cosmetic: the victim is going; only its condition's reason is the API's.
                log.warning("Could not mark preemption victim", pod=pod.key, victim=victim.key)
        elif outcome in _REFUSALS and not self.strict_pdb:
            # BestEffort, as upstream (which marks, then deletes outright): a budget is
            # respected when possible, not at any cost; a pod under several budgets can
            # never be evicted.
            log.info("Eviction refused by a PodDisruptionBudget; deleting the victim",
                     pod=pod.key, victim=victim.key, reason=result.message)
            if not evictor.mark_disruption_target(victim, message):
                log.warning("Could not mark preemption victim", pod=pod.key, victim=victim.key)
                return Removal.FAILED
            outcome = evictor.delete(victim)
            self._metrics().evictions.labels(DELETED if outcome is EvictionOutcome.EVICTED
                                             else outcome.value).inc()
        if outcome is EvictionOutcome.EVICTED:
            evictor.preempted_event(victim, pod, node, group)
            return Removal.EVICTED
        if outcome is EvictionOutcome.GONE:
            return Removal.GONE
        log.warning("Could not evict preemption victim", pod=pod.key, victim=victim.key,
                    outcome=outcome.value, reason=result.message)
        return Removal.REFUSED if outcome in _REFUSALS else Removal.FAILED

    def _metrics(self) -> Metrics:
        handle = self.handle
        return handle.metrics

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """As upstream: a gated preemptor is re-examined when a bound pod goes away (its
        PreEnqueue then decides); whether the pod may fit is for the other plugins' hints."""
        return (ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), _skip),)


def _unit_counts(potential: Sequence[NodeVictims], total: int) -> IntArray:
    """Per victim of ``potential``, node after node, its pods on its node: one each but for
    a group's (``total`` victims in all)."""
    if all(victims.units is None for victims in potential):
        return np.ones(total, dtype=np.int64)
    return np.asarray([c for victims in potential for c in victims.counts()], dtype=np.int64)


def _without(pods: Sequence[PodInfo], gone: Sequence[PodInfo]) -> list[PodInfo]:
    """``pods`` but those of ``gone`` (the same objects)."""
    ids = {id(p) for p in gone}
    return [p for p in pods if id(p) not in ids]


def aggregate_errors(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message, or the distinct ones in brackets."""
    distinct = list(dict.fromkeys(errors))
    if len(errors) == 1 or len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]"


def prefixed(status: Status) -> Status:
    """The status as PostFilter reports it: its message says it comes from preemption."""
    if status.message:
        return Status(status.code, (f"preemption: {status.message}",))
    return status


def no_candidate_status(order: IntArray, statuses: Sequence[tuple[IntArray, str]]) -> Status:
    """The "0/N nodes are available: ..." status over every node: the reason each potential
    node was no help, and "Preemption is not helpful" for the others."""
    fit = Diagnosis(codes=np.zeros(0, dtype=np.uint8), num_all_nodes=int(order.size))
    explained: set[int] = set()
    for rows, reason in statuses:
        fit.reasons.append((rows, reason, NAME))
        explained.update(int(r) for r in rows)
    absent = np.asarray([r for r in order if int(r) not in explained], dtype=np.int64)
    if absent.size:
        fit.reasons.append((absent, NOT_HELPFUL, NAME))
    return Status(Code.UNSCHEDULABLE, (fit_error_message(fit),))


def select_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """pickOneNodeForPreemption: each criterion keeps only the best; the first one left wins.

    Criteria, in order: fewest PDB violations, lowest highest-victim priority, smallest sum of
    (shifted) victim priorities, fewest victims, latest earliest-start among the highest-
    priority victims; then the earliest candidate. One lexicographic sort does all of it.
    """
    if len(candidates) == 1:
        return candidates[0]
    violations = np.asarray([c.num_pdb_violations for c in candidates], dtype=np.int64)
    top = np.asarray([c.victims[0].priority for c in candidates], dtype=np.int64)
    sums = np.asarray(
        [sum(v.priority + MAX_INT32 + 1 for v in c.victims) for c in candidates], dtype=np.int64
    )
    counts = np.asarray([len(c.victims) for c in candidates], dtype=np.int64)
    latest_start = np.asarray([_earliest_top_start(c) for c in candidates], dtype=np.float64)
    order = np.arange(len(candidates))
    # np.lexsort sorts by the last key first; every key ascends, so negate "later is better".
    best = np.lexsort((order, -latest_start, counts, sums, top, violations))[0]
    return candidates[int(best)]


def _earliest_top_start(candidate: Candidate) -> float:
    """The earliest start among the node's highest-priority victims (GetEarliestPodStartTime)."""
    top = candidate.victims[0].priority
    earliest = min(_start(v) for v in candidate.victims if v.priority == top)
    return float("inf") if earliest is NOT_STARTED else earliest.timestamp()

