"""The rescheduler: moves running pods to where the scheduler would now put them.

Every ``interval`` seconds, on the leader only, a pass:

1. checks the moves in flight: where each evicted pod's replacement landed (the target, another
   node, back on the node it left) or that it did not within ``moveTimeout``;
2. lists the movable pods (:mod:`.eligibility`), one per controller and node (its siblings
   there are the same question), lowest priority first, skipping controllers with a move in
   flight;
3. asks the scheduler where each would go now (:mod:`.simulation`), in slices run on the
   scheduling thread between cycles, each accepted move held in the cache for the next
   candidates; within the limits per node, per namespace and per pass, and never past a
   PodDisruptionBudget the cache says allows no disruption;
4. evicts the moved pods through the Eviction API (a 429 from a budget: skipped, tried again
   next pass), after recording their old node for AvoidBounceBack so the replacement does not
   land back; an Event ``Rescheduled`` on each pod says why. In a dry run nothing is evicted
   and nothing recorded: the Event is ``WouldReschedule``, once per pod and target.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import numpy as np
import structlog
from cachetools import TTLCache

from scheduler.config import ReschedulerConfig
from scheduler.framework.avoidance import OwnerKey, owner_key
from scheduler.framework.ports import EvictionOutcome, Evictor, MoveReporter
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.rescheduling.eligibility import protection
from scheduler.rescheduling.simulation import STAND_IN_SUFFIX, Hypothesis, Move, Verdict, evaluate
from scheduler.scheduler import Scheduler

log = structlog.get_logger("scheduler.rescheduler")

RESCHEDULED = "Rescheduled"
WOULD_RESCHEDULE = "WouldReschedule"
# How long one visit to the scheduling thread evaluates candidates (at least one): the
# scheduling loop waits this long between two cycles at most, plus one evaluation (1.3 ms at
# 1,000 nodes; bench/rescheduler.py).
SLICE_SECONDS = 0.01
# How long a pass waits for the scheduling thread to take one slice.
LOOP_TIMEOUT = 30.0
AVOID_REASON = "moved away by the rescheduler"

_T = TypeVar("_T")


@dataclass
class InFlight:
    """An evicted pod whose replacement has not been bound yet."""

    move: Move
    owner: OwnerKey
    objective: str
    evicted_at: float
    # The controller's pods when the move was decided: a pod not among them is the replacement.
    siblings: frozenset[str]


@dataclass
class PassReport:
    verdicts: list[Verdict] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    # Per move: what the eviction came to (EvictionOutcome's value, or "DryRun").
    outcomes: dict[str, str] = field(default_factory=dict)
    # Replacements that landed this pass: pod key -> target, other, source or timeout.
    landed: dict[str, str] = field(default_factory=dict)
    protected: int = 0


@dataclass
class _Plan:
    """What a pass has decided so far, and what it counts against the limits."""

    moves: list[Move] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    # The verdict behind each move, by pod uid.
    chosen: dict[str, Verdict] = field(default_factory=dict)
    siblings: dict[str, frozenset[str]] = field(default_factory=dict)
    per_node: Counter[str] = field(default_factory=Counter)
    per_namespace: Counter[str] = field(default_factory=Counter)
    owners: set[OwnerKey] = field(default_factory=set)
    budgets_used: Counter[str] = field(default_factory=Counter)


class Rescheduler:
    def __init__(self, s: Scheduler, config: ReschedulerConfig, *, evictor: Evictor,
                 reporter: MoveReporter) -> None:
        self.s = s
        self.config = config
        self.evictor = evictor
        self.reporter = reporter
        self.in_flight: dict[OwnerKey, InFlight] = {}
        self._dry_run_reported: TTLCache[tuple[str, str], bool] = TTLCache(
            maxsize=100_000, ttl=config.avoid_seconds, timer=s.clock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the loop ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rescheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(LOOP_TIMEOUT)

    def _run(self) -> None:
        while not self._stop.wait(self.config.interval):
            try:
                self.tick()
            except Exception:  # the next pass starts afresh
                log.exception("Rescheduler pass failed")

    def tick(self) -> PassReport | None:
        """A pass on the leader; a standby (not scheduling) moves nothing."""
        return self.run_once() if self.s.scheduling else None

    def run_once(self) -> PassReport:
        start = time.perf_counter()
        report = PassReport()
        report.landed = self._on_scheduling_thread(self._check_moves)
        candidates, report.protected = self._on_scheduling_thread(self._candidates)
        plan = _Plan()
        pending = deque(candidates)
        while pending:
            self._on_scheduling_thread(partial(self._plan_slice, pending, plan))
        report.verdicts, report.moves = plan.verdicts, plan.moves
        for move in plan.moves:
            report.outcomes[move.pod.key] = self._act(move, plan)
        self.s.metrics.rescheduler_pass_duration.observe(time.perf_counter() - start)
        log.info("Rescheduler pass", candidates=len(candidates), protected=report.protected,
                 moves=len(plan.moves), in_flight=len(self.in_flight), dry_run=self.config.dry_run,
                 duration_ms=round((time.perf_counter() - start) * 1000, 3))
        return report

    def _on_scheduling_thread(self, fn: Callable[[], _T]) -> _T:
        """The cache belongs to the scheduling thread; when its loop is not running (tests,
        the one-shot tools) nothing else touches the cache and ``fn`` runs here."""
        if not self.s.is_running():
            return fn()
        return self.s.run_in_loop(fn, LOOP_TIMEOUT)

    # -- on the scheduling thread -----------------------------------------------------------
    def _check_moves(self) -> dict[str, str]:
        landed: dict[str, str] = {}
        now = self.s.clock()
        for owner, flight in list(self.in_flight.items()):
            replacement = next(
                (p for uid, p in self.s.snapshot.pods_of_owner(*owner).items()
                 if uid not in flight.siblings and not uid.endswith(STAND_IN_SUFFIX)
                 and not self.s.cache.is_assumed(uid) and not p.is_terminating), None)
            if replacement is not None:
                node = replacement.node_name
                where = ("target" if node == flight.move.target
                         else "source" if node == flight.move.source else "other")
                log.info("Moved pod's replacement bound", pod=flight.move.pod.key,
                         replacement=replacement.key, node=node, landed=where,
                         source=flight.move.source, target=flight.move.target)
            elif now - flight.evicted_at >= self.config.move_timeout:
                where = "timeout"
                log.info("Moved pod's replacement not bound in time", pod=flight.move.pod.key,
                         source=flight.move.source, target=flight.move.target)
            else:
                continue
            del self.in_flight[owner]
            landed[flight.move.pod.key] = where
            self.s.metrics.rescheduler_replacements.labels(where).inc()
        return landed

    def _candidates(self) -> tuple[list[PodInfo], int]:
        names = self.s.config.scheduler_names
        chosen: dict[tuple[OwnerKey, str], PodInfo] = {}
        protected = 0
        for pod in self.s.cache.pods.by_uid.values():
            if self.s.cache.is_assumed(pod.uid) or protection(
                    pod, names, allow_local_storage=self.config.allow_local_storage):
                protected += 1
                continue
            owner = owner_key(pod)
            if owner is None or owner in self.in_flight:
                continue
            group = (owner, pod.node_name)
            if group not in chosen or (pod.priority, pod.key) < (chosen[group].priority,
                                                                  chosen[group].key):
                chosen[group] = pod
        # Lowest priority first, and from the fullest nodes first: those moves gain most.
        fullness = _fullness(self.s)
        ordered = sorted(chosen.values(), key=lambda p: (
            p.priority, -fullness.get(p.node_name, 0.0), p.node_name, p.key))
        return ordered, protected

    def _plan_slice(self, pending: deque[PodInfo], plan: _Plan) -> None:
        """Evaluate candidates from ``pending`` for about SLICE_SECONDS."""
        hypothesis = Hypothesis(self.s)
        deadline = time.perf_counter() + SLICE_SECONDS
        try:
            hypothesis.apply([f.move for f in self.in_flight.values()])
            hypothesis.apply(plan.moves)
            while pending:  # one at least, however slow
                pod = pending.popleft()
                current = self.s.cache.get_pod(pod.uid)
                if (current is not None and current.node_name == pod.node_name
                        and not current.is_terminating):
                    verdict = self._consider(current, plan, hypothesis)
                    if verdict is not None:
                        plan.verdicts.append(verdict)
                if time.perf_counter() >= deadline:
                    break
        finally:
            hypothesis.undo()

    def _consider(self, pod: PodInfo, plan: _Plan, hypothesis: Hypothesis) -> Verdict | None:
        owner = owner_key(pod)
        assert owner is not None
        limited = self._limit(pod, owner, plan)
        if limited:
            return Verdict(pod, pod.node_name, blocker=limited)
        budgets = _covering(self.s.snapshot.pdbs(), pod)
        exhausted = [b.key for b in budgets
                     if b.disruptions_allowed - plan.budgets_used[b.key] <= 0]
        if exhausted:
            return Verdict(pod, pod.node_name, blocker=f"PodDisruptionBudget "
                           f"{', '.join(exhausted)} allows no disruption now")
        if not hypothesis.take_off(pod):
            return None
        verdict = evaluate(self.s, pod, objectives=self.config.objectives,
                           min_score_gain=self.config.min_score_gain,
                           avoided=self.s.avoidance.nodes_for(owner))
        if verdict.target is None:
            hypothesis.put_back(pod)
            return verdict
        hypothesis.place(pod, verdict.target)
        move = Move(pod, pod.node_name, verdict.target)
        plan.moves.append(move)
        plan.chosen[pod.uid] = verdict
        # Taken off its node for now, so not among them: added.
        plan.siblings[pod.uid] = frozenset(self.s.snapshot.pods_of_owner(*owner)) | {pod.uid}
        plan.per_node[pod.node_name] += 1
        plan.per_namespace[pod.namespace] += 1
        plan.owners.add(owner)
        for budget in budgets:
            plan.budgets_used[budget.key] += 1
        return verdict

    def _limit(self, pod: PodInfo, owner: OwnerKey, plan: _Plan) -> str:
        limits = self.config.limits
        if owner in plan.owners:
            return "a pod of its controller is already being moved"
        if len(plan.moves) >= limits.per_pass:
            return f"the limit of {limits.per_pass} evictions per pass is reached"
        flights = self.in_flight.values()
        on_node = plan.per_node[pod.node_name] + sum(
            1 for f in flights if f.move.source == pod.node_name)
        if on_node >= limits.per_node:
            return f"the limit of {limits.per_node} evictions per node is reached"
        in_namespace = plan.per_namespace[pod.namespace] + sum(
            1 for f in flights if f.move.pod.namespace == pod.namespace)
        if in_namespace >= limits.per_namespace:
            return f"the limit of {limits.per_namespace} evictions per namespace is reached"
        return ""

    # -- on the rescheduler's thread --------------------------------------------------------
    def _act(self, move: Move, plan: _Plan) -> str:
        pod = move.pod
        owner = owner_key(pod)
        assert owner is not None
        verdict = plan.chosen[pod.uid]
        objective = verdict.objective
        why = (f"from node {move.source} to node {move.target} ({objective}: the scheduler "
               f"scores {move.target} {verdict.objective_gain:+d} over {move.source}; "
               f"{_describe(verdict.gains)})")
        if self.config.dry_run:
            key = (pod.uid, move.target)
            if key not in self._dry_run_reported:
                self._dry_run_reported[key] = True
                self.reporter.rescheduled(pod, WOULD_RESCHEDULE, f"Dry run: would move {why}")
            self.s.metrics.rescheduler_evictions.labels(objective, "dry_run").inc()
            log.info("Would move pod (dry run)", pod=pod.key, node=move.source,
                     target=move.target, objective=objective, gain=verdict.objective_gain)
            return "DryRun"
        # Recorded first: the controller creates the replacement as soon as the pod goes.
        self.s.avoidance.avoid(owner, move.source, self.config.avoid_seconds, AVOID_REASON)
        result = self.evictor.evict(pod)
        outcome = result.outcome
        if outcome is EvictionOutcome.EVICTED:
            self.in_flight[owner] = InFlight(move, owner, objective, self.s.clock(),
                                             plan.siblings[pod.uid])
            self.reporter.rescheduled(pod, RESCHEDULED, f"Evicted to move it {why}")
            self.s.metrics.rescheduler_evictions.labels(objective, "evicted").inc()
            log.info("Moved pod", pod=pod.key, node=move.source, target=move.target,
                     objective=objective, gain=verdict.objective_gain)
            return str(outcome.value)
        self.s.avoidance.forget(owner, move.source)
        refused = outcome in (EvictionOutcome.BLOCKED_BY_PDB, EvictionOutcome.MULTIPLE_PDBS)
        label = ("blocked_by_pdb" if refused
                 else "gone" if outcome is EvictionOutcome.GONE else "failed")
        self.s.metrics.rescheduler_evictions.labels(objective, label).inc()
        log.info("Did not move pod: the eviction was refused; trying again next pass"
                 if refused else "Did not move pod", pod=pod.key, node=move.source,
                 target=move.target, outcome=outcome.value, reason=result.message)
        return str(outcome.value)


def _fullness(s: Scheduler) -> dict[str, float]:
    """Per node, its most requested resource as a share of what it can hold."""
    table = s.snapshot.nodes
    rows = s.snapshot.order()
    allocatable = table.allocatable[rows].astype(np.float64)
    share = np.divide(table.requested[rows], allocatable, out=np.zeros_like(allocatable),
                      where=allocatable > 0)
    peaks = share.max(axis=1) if share.size else np.zeros(0)
    return {table.names[int(row)]: float(peak) for row, peak in zip(rows, peaks, strict=True)}


def _covering(budgets: Iterable[DisruptionBudget], pod: PodInfo) -> list[DisruptionBudget]:
    return [b for b in budgets
            if b.namespace == pod.namespace and b.selector.matches(pod.labels)]


def _describe(gains: Mapping[str, int]) -> str:
    if not gains:
        return "no plugin differs"
    parts = sorted(gains.items(), key=lambda item: -abs(item[1]))
    return ", ".join(f"{name} {gain:+d}" for name, gain in parts)
