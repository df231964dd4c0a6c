"""Where would the scheduler put this pod now? The rescheduler's question, answered by the
profile that schedules the pod, on the scheduler's own cache.

For a running pod P on node O, :func:`evaluate` takes P off O in the cache, and runs its
replacement (P unbound) through the same pipeline a cycle runs: PreFilter, Filter with the
nominated pods, the filter extenders, PreScore and Score over every feasible node (no
sampling), plus the extenders' scores. O is one of those nodes, so O and the best other node T
are compared within one run (normalised scores depend on the nodes scored together). It is a
move only if T scores higher than O by ``min_score_gain``, both in total and counting only the
plugins of the configured objectives; never to a cordoned node, nor to a node the pod's
controller is told to avoid. AvoidBounceBack itself is left out of the comparison: it would
always score O down.

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

from scheduler.config import AVOID_BOUNCE_BACK, OBJECTIVE_PLUGINS
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


@dataclass(frozen=True)
class Verdict:
    pod: PodInfo
    source: str
    # The node the replacement would go to; None when it is no move (``blocker`` says why).
    target: str | None = None
    blocker: str = ""
    # Weighted score of the target minus the source's: all plugins, the objectives' plugins,
    # and per plugin (the plugins that differ).
    total_gain: int = 0
    objective_gain: int = 0
    gains: Mapping[str, int] = field(default_factory=dict)
    # The objective that gains most.
    objective: str = ""


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
        return Verdict(pod, source, blocker="its node is gone")
    state = CycleState()
    diagnosis = Diagnosis(codes=np.zeros(snapshot.nodes.capacity, dtype=np.uint8),
                          num_all_nodes=snapshot.num_nodes)
    try:
        feasible = _feasible_rows(s, framework, state, replacement, diagnosis)
        if source_row not in feasible:
            return Verdict(pod, source, blocker="it would not be scheduled on its own node now")
        targets = _targets(s, feasible, source_row, avoided)
        if targets.size == 0:
            return Verdict(pod, source, blocker="no other node fits it")
        view = NodeView.of(s.snapshot, feasible)
        _, per_plugin = prioritize(framework, state, replacement, view)
    except SchedulingError as err:
        return Verdict(pod, source, blocker=f"simulation failed: {err}")
    weights = {plugin.name: weight for plugin, weight in framework.plugins.score}
    weighted = {name: scores * weights[name] for name, scores in per_plugin.items()
                if name != AVOID_BOUNCE_BACK}
    total = sum(weighted.values(), np.zeros(feasible.size, dtype=np.int64))
    if s.extenders:
        total = total + extender_scores(s, replacement, view)
    wanted = set().union(*(OBJECTIVE_PLUGINS[o] for o in objectives))
    counted = sum((v for n, v in weighted.items() if n in wanted),
                  np.zeros(feasible.size, dtype=np.int64))
    position = {int(row): i for i, row in enumerate(feasible)}
    at_source = position[source_row]
    best = max((position[int(row)] for row in targets), key=lambda i: (int(total[i]), -i))
    gains = {name: int(v[best] - v[at_source]) for name, v in weighted.items()
             if v[best] != v[at_source]}
    by_objective = {o: sum(g for n, g in gains.items() if n in OBJECTIVE_PLUGINS[o])
                    for o in objectives}
    target = snapshot.nodes.names[int(feasible[best])]
    verdict = Verdict(
        pod, source, target,
        total_gain=int(total[best] - total[at_source]),
        objective_gain=int(counted[best] - counted[at_source]),
        gains=gains,
        objective=max(by_objective, key=lambda o: by_objective[o]),
    )
    if verdict.total_gain < min_score_gain or verdict.objective_gain < min_score_gain:
        return dataclasses.replace(
            verdict, target=None,
            blocker=f"no better node: the best other, {target}, scores "
                    f"{verdict.objective_gain:+d} ({verdict.total_gain:+d} in all), "
                    f"below the minimum gain of {min_score_gain}")
    return verdict


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
