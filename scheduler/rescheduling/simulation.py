"""Where would the scheduler put this pod now? The rescheduler's question, answered by the
profile that schedules the pod, on the scheduler's own cache.

For a running pod P on node O, :func:`evaluate` takes P off O in the cache, and runs its
replacement (P unbound) through the same pipeline a cycle runs: PreFilter, Filter with the
nominated pods, the filter extenders, PreScore and Score over every feasible node (no
sampling), plus the extenders' scores. O is one of those nodes, so O and the best other node T
are compared within one run (normalised scores depend on the nodes scored together). T is the
node the scheduler would choose; never a cordoned node, nor a node the pod's controller is told
to avoid. It is a move only for a real gain (:func:`_decide`): T scores ``min_score_gain``
above O in total, and a configured objective gains that much by its own plugins
(:func:`objective_plugins`: spreading counts as a preferred term only when the pod declares
it); UnderutilizedNodes only when the nodes' requests end more even; and a T that ends fuller
than O was only when the pod's own terms gain. AvoidBounceBack itself is left out of the
comparison: it would always score O down.

The caller keeps P off O when it accepts the move and puts a stand-in for the replacement on
T (:class:`Hypothesis`), so that later candidates of the same pass see both, and two moves
never count on the same free room. Everything is undone before the scheduling loop goes on.
Runs on the scheduling thread only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.config import (
    AVOID_BOUNCE_BACK,
    OBJECTIVE_PLUGINS,
    PREFERRED_TERMS,
    UNDERUTILIZED_NODES,
)
from scheduler.cycle import (
    SchedulingError,
    extender_scores,
    find_nodes_that_pass_extenders,
    pre_filter_candidates,
    prioritize,
)
from scheduler.framework.interface import CycleState, Diagnosis, IntArray, NodeView
from scheduler.framework.runtime import Framework
from scheduler.model.pod import PodInfo
from scheduler.scheduler import Scheduler

# The stand-in for a moved pod's replacement: the pod's uid with this suffix.
STAND_IN_SUFFIX = "~replacement"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
# Shares are ratios of integers: equal ones compare equal, this only absorbs rounding.
_EPSILON = 1e-9

FloatArray = npt.NDArray[np.float64]


# Why a candidate was not moved: the label of the skips metric, and the ``reason`` of its
# log event.
NO_BETTER_NODE = "no_better_node"
BELOW_MIN_GAIN = "below_min_gain"
NO_BALANCE_GAIN = "no_balance_gain"
NOT_SIMULATED = "not_simulated"
CONTROLLER_BUSY = "controller_busy"
LIMIT = "limit"
BUDGET = "budget"


@dataclass(frozen=True)
class Verdict:
    pod: PodInfo
    source: str
    # The node the replacement would go to; None when it is no move (``blocker`` says why,
    # ``reason`` is its skip label).
    target: str | None = None
    blocker: str = ""
    reason: str = ""
    # Weighted score of the best other node minus the source's: all plugins, and per plugin
    # (the plugins that differ).
    total_gain: int = 0
    gains: Mapping[str, int] = field(default_factory=dict)
    # Per objective (configured or not), the gain of the plugins that count for it for this
    # pod (:func:`objective_plugins`).
    objective_gains: Mapping[str, int] = field(default_factory=dict)
    # The objective the move is for: the configured one that qualifies with most gain.
    objective: str = ""

    @property
    def objective_gain(self) -> int:
        return self.objective_gains.get(self.objective, 0)


@dataclass(frozen=True)
class Move:
    """A move the rescheduler decided on: the pod, its node, and where the replacement goes."""

    pod: PodInfo
    source: str
    target: str


class Hypothesis:
    """Moves held in the cache for the length of one slice of a pass: each moved pod off its
    node, a stand-in for its replacement on its target. :meth:`undo` restores the cache."""

    def __init__(self, s: Scheduler) -> None:
        self.s = s
        self._removed: dict[str, PodInfo] = {}
        self._stand_ins: list[str] = []

    def take_off(self, pod: PodInfo) -> bool:
        """Take ``pod`` off its node in the cache; False if the cache no longer has it."""
        removed = self.s.cache.remove_pod(pod.uid)
        if removed is None:
            return False
        self._removed[pod.uid] = removed
        return True

    def put_back(self, pod: PodInfo) -> None:
        removed = self._removed.pop(pod.uid, None)
        if removed is not None:
            self.s.cache.upsert_pod(removed)

    def place(self, pod: PodInfo, node: str) -> None:
        """Count a stand-in for ``pod``'s replacement on ``node``."""
        if self.s.cache.get_pod(pod.uid + STAND_IN_SUFFIX) is not None:
            return
        stand_in = pod.replace(uid=pod.uid + STAND_IN_SUFFIX, node_name="",
                                       nominated_node_name="")
        self.s.cache.assume(stand_in, node)
        self._stand_ins.append(stand_in.uid)

    def apply(self, moves: Iterable[Move]) -> None:
        for move in moves:
            if self.s.node_exists(move.target):
                self.take_off(move.pod)
                self.place(move.pod, move.target)

    def undo(self) -> None:
        for uid in self._stand_ins:
            self.s.cache.forget(uid)
        self._stand_ins.clear()
        for removed in self._removed.values():
            self.s.cache.upsert_pod(removed)
        self._removed.clear()


def evaluate(
    s: Scheduler,
    pod: PodInfo,
    *,
    objectives: Iterable[str],
    min_score_gain: int,
    avoided: Iterable[str] = (),
) -> Verdict:
    """Whether moving ``pod`` (already taken off its node in the cache) is worth it."""
    source = pod.node_name
    framework = s.profiles[pod.scheduler_name]
    replacement = pod.replace(node_name="", nominated_node_name="")
    snapshot = s.snapshot
    source_row = snapshot.row_of(source)
    if source_row is None:
        return Verdict(pod, source, blocker="its node is gone", reason=NOT_SIMULATED)
    scored = _score_elsewhere(s, framework, pod, replacement, source_row, avoided)
    if isinstance(scored, Verdict):
        return scored
    feasible, total, weighted = scored.feasible, scored.total, scored.weighted
    position = {int(row): i for i, row in enumerate(feasible)}
    at_source = position[source_row]
    # The node the scheduler would choose: the replacement goes there, whatever the objectives.
    best = max((position[int(row)] for row in scored.targets), key=lambda i: (int(total[i]), -i))
    gains = {name: int(v[best] - v[at_source]) for name, v in weighted.items()
             if v[best] != v[at_source]}
    verdict = Verdict(
        pod, source, snapshot.nodes.names[int(feasible[best])],
        total_gain=int(total[best] - total[at_source]), gains=gains,
        objective_gains={o: sum(g for n, g in gains.items() if n in objective_plugins(o, pod))
                         for o in OBJECTIVE_PLUGINS},
    )
    return _decide(verdict, tuple(objectives), min_score_gain,
                   Shares.of(s, pod, source_row, int(feasible[best])))


@dataclass(frozen=True)
class _Scored:
    """The replacement's feasible rows, those it may move to, and their scores: in all, and
    weighted per Score plugin (AvoidBounceBack left out)."""

    feasible: IntArray
    targets: IntArray
    total: IntArray
    weighted: dict[str, IntArray]


def _score_elsewhere(s: Scheduler, framework: Framework, pod: PodInfo, replacement: PodInfo,
                     source_row: int, avoided: Iterable[str]) -> _Scored | Verdict:
    """The replacement filtered and scored over every feasible node, its own among them; or
    the verdict that says why it could not be."""
    source = pod.node_name
    state = CycleState()
    diagnosis = Diagnosis(codes=np.zeros(s.snapshot.nodes.capacity, dtype=np.uint8),
                          num_all_nodes=s.snapshot.num_nodes)
    try:
        feasible = _feasible_rows(s, framework, state, replacement, diagnosis)
        if source_row not in feasible:
            return Verdict(pod, source, reason=NOT_SIMULATED,
                           blocker="it would not be scheduled on its own node now")
        targets = _targets(s, feasible, source_row, avoided)
        if targets.size == 0:
            return Verdict(pod, source, blocker="no other node fits it", reason=NO_BETTER_NODE)
        view = NodeView.of(s.snapshot, feasible)
        _, per_plugin = prioritize(framework, state, replacement, view)
    except SchedulingError as err:
        return Verdict(pod, source, blocker=f"simulation failed: {err}", reason=NOT_SIMULATED)
    weights = {plugin.name: weight for plugin, weight in framework.plugins.score}
    weighted = {name: scores * weights[name] for name, scores in per_plugin.items()
                if name != AVOID_BOUNCE_BACK}
    total = sum(weighted.values(), np.zeros(feasible.size, dtype=np.int64))
    if s.extenders:
        total = total + extender_scores(s, replacement, view)
    return _Scored(feasible, targets, total, weighted)


def objective_plugins(objective: str, pod: PodInfo) -> frozenset[str]:
    """The Score plugins whose gain counts for ``objective`` when ``pod`` moves. Spreading
    counts as a preferred term only when the pod declares it: the system default spreading
    (applied to every pod of a controller that declares none) would otherwise call any move
    off a node with siblings a gain (issue 37's 3,3,3,3 cluster)."""
    plugins = OBJECTIVE_PLUGINS[objective]
    if objective == PREFERRED_TERMS and not pod.spread_constraints:
        return plugins - {POD_TOPOLOGY_SPREAD}
    return plugins


@dataclass(frozen=True)
class Shares:
    """The moved pod's resources (those it requests) as shares of what its source and target
    can hold: the source's with the pod still on it, the target's without its replacement."""

    source_before: FloatArray
    target_before: FloatArray
    on_source: FloatArray
    on_target: FloatArray

    @classmethod
    def of(cls, s: Scheduler, pod: PodInfo, source_row: int, target_row: int) -> Shares:
        table = s.snapshot.nodes
        request = table.resources.pod_vector(pod)
        used = request > 0

        def share(values: IntArray, row: int) -> FloatArray:
            allocatable = table.allocatable[row][used].astype(np.float64)
            out: FloatArray = np.zeros(allocatable.size)
            np.divide(values[used], allocatable, out=out, where=allocatable > 0)
            return out

        # The pod is off its node in the cache (the caller took it off): added back.
        return cls(share(table.requested[source_row] + request, source_row),
                   share(table.requested[target_row], target_row),
                   share(request, source_row), share(request, target_row))

    def balance_improves(self) -> bool:
        """Whether the sum over nodes of the squared shares falls: the nodes' requests end
        more even. With nodes of one size: the target ends less full than the source was."""
        before = self.source_before ** 2 + self.target_before ** 2
        after = (self.source_before - self.on_source) ** 2 + (
            self.target_before + self.on_target) ** 2
        return float((after - before).sum()) < -_EPSILON

    def target_ends_fuller(self) -> bool:
        """Whether the target ends fuller, on the pod's most requested resource, than the
        source was before the move."""
        if self.source_before.size == 0:
            return False
        return float((self.target_before + self.on_target).max()) > float(
            self.source_before.max()) + _EPSILON

    def describe(self) -> str:
        return (f"{_percent(self.target_before + self.on_target)} full after the move, "
                f"against {_percent(self.source_before)} for its node before")


def _decide(verdict: Verdict, objectives: tuple[str, ...], min_gain: int,
            shares: Shares) -> Verdict:
    """Move only for a real gain: the scheduler prefers the target by ``min_gain`` in all;
    a configured objective gains ``min_gain`` by its own plugins, UnderutilizedNodes only if
    the requests end more even; and a target that ends fuller than the source was needs the
    pod's own terms to gain."""
    target, gains = verdict.target, verdict.objective_gains
    named = ", ".join(f"{o} {gains[o]:+d}" for o in objectives)

    def refuse(reason: str, why: str) -> Verdict:
        return dataclasses.replace(verdict, target=None, reason=reason, blocker=why)

    if verdict.total_gain <= 0 or all(gains[o] <= 0 for o in objectives):
        return refuse(NO_BETTER_NODE, f"no better node: the best other, {target}, gains "
                      f"{named} ({verdict.total_gain:+d} in all)")
    if verdict.total_gain < min_gain:
        return refuse(BELOW_MIN_GAIN, f"the best other node, {target}, scores "
                      f"{verdict.total_gain:+d} in all, below the minimum gain of {min_gain}")
    qualifying = [o for o in objectives if gains[o] >= min_gain]
    if not qualifying:
        return refuse(BELOW_MIN_GAIN, f"the best other node, {target}, gains {named}, "
                      f"below the minimum gain of {min_gain}")
    own_terms = gains[PREFERRED_TERMS] >= min_gain
    if UNDERUTILIZED_NODES in qualifying and not shares.balance_improves():
        qualifying.remove(UNDERUTILIZED_NODES)
        if not qualifying:
            return refuse(NO_BALANCE_GAIN, f"moving it to {target} would not even out the "
                          f"nodes' requests ({shares.describe()}; {named})")
    if shares.target_ends_fuller() and not own_terms:
        return refuse(NO_BALANCE_GAIN, f"{target} would be {shares.describe()}, and none of "
                      f"its own terms gain ({named})")
    return dataclasses.replace(verdict, objective=max(qualifying, key=lambda o: gains[o]))


def _percent(shares: FloatArray) -> str:
    return f"{round(float(shares.max()) * 100) if shares.size else 0}%"


def _feasible_rows(s: Scheduler, framework: Framework, state: CycleState, pod: PodInfo,
                   diagnosis: Diagnosis) -> IntArray:
    candidates = pre_filter_candidates(s, framework, state, pod, diagnosis)
    if candidates is None or candidates.size == 0:
        return np.zeros(0, dtype=np.int64)
    outcome = framework.run_filters_with_nominated(
        state, pod, NodeView.of(s.snapshot, candidates), s.queue.nominator.all())
    if outcome.error is not None:
        raise SchedulingError(outcome.error.message)
    feasible = candidates[outcome.feasible]
    return find_nodes_that_pass_extenders(s, pod, feasible, diagnosis)


def _targets(s: Scheduler, feasible: IntArray, source_row: int,
             avoided: Iterable[str]) -> IntArray:
    """Feasible rows a move may go to: not the source, not cordoned, not avoided."""
    table = s.snapshot.nodes
    index = table.index
    excluded = [source_row, *(index[n] for n in avoided if n in index)]
    keep = ~np.isin(feasible, np.asarray(excluded, dtype=np.int64))
    keep &= ~table.unschedulable[feasible]
    return feasible[keep]
