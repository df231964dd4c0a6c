"""The rescheduler: moves running pods to where the scheduler would now put them.

Every ``interval`` seconds, on the leader only, a pass:

1. checks the moves in flight: where each evicted pod's replacement landed (the target, another
   node, back on the node it left) or that it did not within ``moveTimeout``;
2. lists the movable pods (:mod:`.eligibility`) in groups of one controller on one node (its
   pods there pose the same question), lowest priority first;
3. asks the scheduler where each group's first pod would go now (:mod:`.simulation`), in
   slices run on the scheduling thread between cycles, each accepted move held in the cache
   for the next candidates; after a move, the group's next pod goes to the back of the line,
   so one pass moves several pods of a controller while the simulation, with the earlier
   moves applied, still shows a gain; within the limits per node, per namespace and per pass
   (moves in flight count), and never past a PodDisruptionBudget the cache says allows no
   disruption; a controller whose replacement is not bound yet is left alone (busy). Every
   candidate gets one log event with the reason it was or was not moved, and the skips are
   counted by reason;
4. evicts the moved pods through the Eviction API (a 429 from a budget: skipped, tried again
   next pass), after recording their old node for AvoidBounceBack so the replacement does not
   land back; an Event ``Rescheduled`` on each pod says why. In a dry run nothing is evicted
   and nothing recorded: the Event is ``WouldReschedule``, once per pod and target.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter
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
from scheduler.rescheduling.simulation import (
    BUDGET,
    CONTROLLER_BUSY,
    LIMIT,
    STAND_IN_SUFFIX,
    Hypothesis,
    Move,
    Verdict,
    evaluate,
    objective_plugins,
)
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
# Fullness is a ratio of integers: this only absorbs rounding.
_EPSILON = 1e-9

_T = TypeVar("_T")


@dataclass
class InFlight:
    """An evicted pod whose replacement has not been bound yet."""

    move: Move
    owner: OwnerKey
    objective: str
    evicted_at: float
    # The controller's pods when the move was decided: a pod not among them is a replacement.
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
    # Per controller moved: its pods when its first move was decided, and the moved ones;
    # the nodes its moves leave (its later replacements avoid them, as AvoidBounceBack will).
    siblings: dict[OwnerKey, set[str]] = field(default_factory=dict)
    sources: dict[OwnerKey, set[str]] = field(default_factory=dict)
    per_node: Counter[str] = field(default_factory=Counter)
    per_namespace: Counter[str] = field(default_factory=Counter)
    budgets_used: Counter[str] = field(default_factory=Counter)


class Rescheduler:
    def __init__(self, s: Scheduler, config: ReschedulerConfig, *, evictor: Evictor,
                 reporter: MoveReporter) -> None:
        self.s = s
        self.config = config
        self.evictor = evictor
        self.reporter = reporter
        # By the evicted pod's uid.
        self.in_flight: dict[str, InFlight] = {}
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
        pending = _Line(candidates, partial(_node_fullness, self.s))
        while pending:
            self._on_scheduling_thread(partial(self._plan_slice, pending, plan))
        report.verdicts, report.moves = plan.verdicts, plan.moves
        for move in plan.moves:
            report.outcomes[move.pod.key] = self._act(move, plan)
        self.s.metrics.rescheduler_pass_duration.observe(time.perf_counter() - start)
        skipped = Counter(v.reason for v in plan.verdicts if v.target is None)
        log.info("Rescheduler pass", candidates=len(plan.verdicts), protected=report.protected,
                 moves=len(plan.moves), skipped=dict(skipped), in_flight=len(self.in_flight),
                 dry_run=self.config.dry_run,
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
        by_owner: dict[OwnerKey, list[InFlight]] = {}
        for flight in self.in_flight.values():
            by_owner.setdefault(flight.owner, []).append(flight)
        for owner, flights in by_owner.items():
            fresh = [p for uid, p in self.s.snapshot.pods_of_owner(*owner).items()
                     if not uid.endswith(STAND_IN_SUFFIX) and not self.s.cache.is_assumed(uid)
                     and not p.is_terminating]
            for flight in flights:
                mine = [p for p in fresh if p.uid not in flight.siblings]
                # Several moves of one controller: a replacement on a move's target is its.
                replacement = next((p for p in mine if p.node_name == flight.move.target),
                                   mine[0] if mine else None)
                if replacement is not None:
                    fresh.remove(replacement)
                where = self._landed(flight, replacement)
                if where:
                    del self.in_flight[flight.move.pod.uid]
                    landed[flight.move.pod.key] = where
                    self.s.metrics.rescheduler_replacements.labels(where).inc()
        return landed

    def _landed(self, flight: InFlight, replacement: PodInfo | None) -> str:
        """Where ``flight``'s replacement landed; ``""`` while it is still awaited."""
        move = flight.move
        if replacement is not None:
            node = replacement.node_name
            where = ("target" if node == move.target
                     else "source" if node == move.source else "other")
            log.info("Moved pod's replacement bound", pod=move.pod.key,
                     replacement=replacement.key, node=node, landed=where,
                     source=move.source, target=move.target)
            return where
        if self.s.clock() - flight.evicted_at >= self.config.move_timeout:
            log.info("Moved pod's replacement not bound in time", pod=move.pod.key,
                     source=move.source, target=move.target)
            return "timeout"
        return ""

    def _candidates(self) -> tuple[list[list[PodInfo]], int]:
        """The movable pods in groups of one controller on one node, each group lowest
        priority first; the groups from the lowest priority, then the fullest node."""
        names = self.s.config.scheduler_names
        groups: dict[tuple[OwnerKey, str], list[PodInfo]] = {}
        protected = 0
        for pod in self.s.cache.pods.by_uid.values():
            if self.s.cache.is_assumed(pod.uid) or protection(
                    pod, names, allow_local_storage=self.config.allow_local_storage):
                protected += 1
                continue
            owner = owner_key(pod)
            if owner is not None:
                groups.setdefault((owner, pod.node_name), []).append(pod)
        for group in groups.values():
            group.sort(key=lambda p: (p.priority, p.key))
        return list(groups.values()), protected

    def _plan_slice(self, pending: _Line, plan: _Plan) -> None:
        """Evaluate candidates from ``pending`` for about SLICE_SECONDS. A group whose pod
        moved goes back in line with its next pod: the same question, asked again with the
        move applied, once the groups on fuller nodes had their turn."""
        hypothesis = Hypothesis(self.s)
        deadline = time.perf_counter() + SLICE_SECONDS
        try:
            hypothesis.apply([f.move for f in self.in_flight.values()])
            hypothesis.apply(plan.moves)
            while pending:  # one at least, however slow
                group = pending.pop()
                pod, rest = group[0], group[1:]
                current = self.s.cache.get_pod(pod.uid)
                if (current is not None and current.node_name == pod.node_name
                        and not current.is_terminating):
                    verdict = self._consider(current, plan, hypothesis)
                    if verdict is not None:
                        plan.verdicts.append(verdict)
                        self._said(verdict)
                        if verdict.target is not None and rest:
                            pending.push(rest)
                elif rest:
                    pending.push(rest)
                if time.perf_counter() >= deadline:
                    break
        finally:
            hypothesis.undo()

    def _said(self, verdict: Verdict) -> None:
        """The candidate's log event when it is not moved (a move's is its eviction's), and
        the skips counted by reason."""
        if verdict.target is not None:
            return
        self.s.metrics.rescheduler_skips.labels(verdict.reason).inc()
        log.info("Did not move pod", pod=verdict.pod.key, node=verdict.source,
                 reason=verdict.reason, why=verdict.blocker, dry_run=self.config.dry_run)

    def _consider(self, pod: PodInfo, plan: _Plan, hypothesis: Hypothesis) -> Verdict | None:
        owner = owner_key(pod)
        assert owner is not None
        blocked = self._blocked(pod, owner, plan)
        if blocked is not None:
            return blocked
        budgets = _covering(self.s.snapshot.pdbs(), pod)
        exhausted = [b.key for b in budgets
                     if b.disruptions_allowed - plan.budgets_used[b.key] <= 0]
        if exhausted:
            return Verdict(pod, pod.node_name, reason=BUDGET, blocker=f"PodDisruptionBudget "
                           f"{', '.join(exhausted)} allows no disruption now")
        if not hypothesis.take_off(pod):
            return None
        avoided = {*self.s.avoidance.nodes_for(owner), *plan.sources.get(owner, ())}
        verdict = evaluate(self.s, pod, objectives=self.config.objectives,
                           min_score_gain=self.config.min_score_gain, avoided=avoided)
        if verdict.target is None:
            hypothesis.put_back(pod)
            return verdict
        hypothesis.place(pod, verdict.target)
        plan.moves.append(Move(pod, pod.node_name, verdict.target))
        plan.chosen[pod.uid] = verdict
        # Taken off its node for now, so not among them: added.
        plan.siblings.setdefault(owner, set(self.s.snapshot.pods_of_owner(*owner))).add(pod.uid)
        plan.sources.setdefault(owner, set()).add(pod.node_name)
        plan.per_node[pod.node_name] += 1
        plan.per_namespace[pod.namespace] += 1
        for budget in budgets:
            plan.budgets_used[budget.key] += 1
        return verdict

    def _blocked(self, pod: PodInfo, owner: OwnerKey, plan: _Plan) -> Verdict | None:
        """A verdict when the controller is busy or a limit is reached, else None."""
        def blocked(reason: str, why: str) -> Verdict:
            return Verdict(pod, pod.node_name, reason=reason, blocker=why)

        flights = self.in_flight.values()
        if any(f.owner == owner for f in flights):
            return blocked(CONTROLLER_BUSY, "a moved pod of its controller has no bound "
                           "replacement yet")
        limits = self.config.limits
        if len(plan.moves) >= limits.per_pass:
            return blocked(LIMIT, f"the limit of {limits.per_pass} evictions per pass is "
                           "reached")
        on_node = plan.per_node[pod.node_name] + sum(
            1 for f in flights if f.move.source == pod.node_name)
        if on_node >= limits.per_node:
            return blocked(LIMIT, f"the limit of {limits.per_node} evictions per node is "
                           "reached")
        in_namespace = plan.per_namespace[pod.namespace] + sum(
            1 for f in flights if f.move.pod.namespace == pod.namespace)
        if in_namespace >= limits.per_namespace:
            return blocked(LIMIT, f"the limit of {limits.per_namespace} evictions per "
                           "namespace is reached")
        return None

    # -- on the rescheduler's thread --------------------------------------------------------
    def _act(self, move: Move, plan: _Plan) -> str:
        pod = move.pod
        owner = owner_key(pod)
        assert owner is not None
        verdict = plan.chosen[pod.uid]
        objective = verdict.objective
        why = (f"from node {move.source} to node {move.target} "
               f"({describe(verdict, self.config.objectives)})")
        said = {"pod": pod.key, "node": move.source, "target": move.target,
                "objective": objective, "gain": verdict.objective_gain,
                "gains": dict(verdict.objective_gains), "total_gain": verdict.total_gain}
        if self.config.dry_run:
            key = (pod.uid, move.target)
            if key not in self._dry_run_reported:
                self._dry_run_reported[key] = True
                self.reporter.rescheduled(pod, WOULD_RESCHEDULE, f"Dry run: would move {why}")
            self.s.metrics.rescheduler_evictions.labels(objective, "dry_run").inc()
            log.info("Would move pod (dry run)", reason="moved", **said)
            return "DryRun"
        # Recorded first: the controller creates the replacement as soon as the pod goes.
        self.s.avoidance.avoid(owner, move.source, self.config.avoid_seconds, AVOID_REASON)
        result = self.evictor.evict(pod)
        outcome = result.outcome
        if outcome is EvictionOutcome.EVICTED:
            self.in_flight[pod.uid] = InFlight(move, owner, objective, self.s.clock(),
                                               frozenset(plan.siblings[owner]))
            self.reporter.rescheduled(pod, RESCHEDULED, f"Evicted to move it {why}")
            self.s.metrics.rescheduler_evictions.labels(objective, "evicted").inc()
            log.info("Moved pod", reason="moved", **said)
            return str(outcome.value)
        self.s.avoidance.forget(owner, move.source)
        refused = outcome in (EvictionOutcome.BLOCKED_BY_PDB, EvictionOutcome.MULTIPLE_PDBS)
        label = ("blocked_by_pdb" if refused
                 else "gone" if outcome is EvictionOutcome.GONE else "failed")
        self.s.metrics.rescheduler_evictions.labels(objective, label).inc()
        if refused:
            self.s.metrics.rescheduler_skips.labels(BUDGET).inc()
        log.info("Did not move pod: the eviction was refused; trying again next pass"
                 if refused else "Did not move pod", reason=BUDGET if refused else label,
                 outcome=outcome.value, why=result.message, **said)
        return str(outcome.value)


class _Line:
    """The candidate groups in the order they are asked: lowest priority first, then from the
    fullest node, as the pass's moves so far leave it (those moves gain most, and a node one
    move relieved waits behind the nodes still fuller: moving from those is what balances
    with the fewest evictions)."""

    def __init__(self, groups: Iterable[list[PodInfo]],
                 fullness: Callable[[str], float]) -> None:
        self._fullness = fullness
        self._order = itertools.count()
        self._heap: list[tuple[int, float, str, str, int, list[PodInfo]]] = []
        for group in groups:
            self.push(group)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, group: list[PodInfo]) -> None:
        pod = group[0]
        heapq.heappush(self._heap, (pod.priority, -self._fullness(pod.node_name),
                                    pod.node_name, pod.key, next(self._order), group))

    def pop(self) -> list[PodInfo]:
        while True:
            entry = heapq.heappop(self._heap)
            # Moves since it was queued changed its node: queued again as the node is now.
            if not self._heap or abs(self._fullness(entry[2]) + entry[1]) < _EPSILON:
                return entry[-1]
            self.push(entry[-1])


def _node_fullness(s: Scheduler, name: str) -> float:
    """The node's most requested resource as a share of what it can hold."""
    table = s.snapshot.nodes
    row = table.index.get(name)
    if row is None:
        return 0.0
    allocatable = table.allocatable[row].astype(np.float64)
    share = np.divide(table.requested[row], allocatable, out=np.zeros_like(allocatable),
                      where=allocatable > 0)
    return float(share.max()) if share.size else 0.0


def _covering(budgets: Iterable[DisruptionBudget], pod: PodInfo) -> list[DisruptionBudget]:
    return [b for b in budgets
            if b.namespace == pod.namespace and b.selector.matches(pod.labels)]


def describe(verdict: Verdict, objectives: Iterable[str]) -> str:
    """Each objective's own gain with its plugins (the move's objective first), then the
    plugins that count for none, then the total: what the Event and the report say."""
    assert verdict.target is not None
    order = sorted(objectives, key=lambda o: o != verdict.objective)
    counted: set[str] = set()
    parts = []
    for objective in order:
        plugins = objective_plugins(objective, verdict.pod)
        counted |= plugins
        own = {n: g for n, g in verdict.gains.items() if n in plugins}
        parts.append(f"{objective} {verdict.objective_gains[objective]:+d}"
                     + (f": {_plugins(own)}" if own else ""))
    others = {n: g for n, g in verdict.gains.items() if n not in counted}
    if others:
        parts.append(f"not counted: {_plugins(others)}")
    parts.append(f"the scheduler scores {verdict.target} {verdict.total_gain:+d} over "
                 f"{verdict.source} in all")
    return "; ".join(parts)


def _plugins(gains: Mapping[str, int]) -> str:
    parts = sorted(gains.items(), key=lambda item: (-abs(item[1]), item[0]))
    return ", ".join(f"{name} {gain:+d}" for name, gain in parts)
