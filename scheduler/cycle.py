"""The scheduling cycle, top to bottom (upstream's schedule_one.go).

    schedule_one
      pop -> refresh the cache (apply watch deltas) -> pre-checks
      scheduling_cycle -> the ScheduleResult, or a Failure
        find_nodes_that_fit:  PreFilter -> nominated node first -> Filter (two-pass rule)
        PostFilter when nothing fits (preemption)
        prioritize:           PreScore -> Score -> NormalizeScore -> weighted sum
        select_host:          highest total, ties broken at random
        assume -> Reserve -> Permit
      a Failure -> handle_scheduling_failure
      run_binding_cycle (on a binding thread, so the next cycle starts at once)
        binding_cycle:        wait on Permit -> PreBind -> Bind -> PostBind, or a Failure
        a Failure -> handle_binding_cycle_error: Unreserve + forget -> handle_scheduling_failure

Each cycle ends in one place: a :class:`Failure` (a Status, with the diagnosis and the
nomination the failure handler needs) goes to the one failure handler, as upstream's
ScheduleOne hands a Status to its FailureHandler. Whenever the cache assumes a pod, every path
that does not end in a confirmed bind calls ``forget`` for it (through the inbox when on a
binding thread).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import structlog

from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.framework.extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, ExtenderError
from scheduler.framework.fit_error import fit_error_message
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    Diagnosis,
    IntArray,
    NodeView,
    PermitDecision,
    PodGroupPostFilterResult,
    ProposedAssignment,
    Status,
)
from scheduler.framework.runtime import FilterOutcome
from scheduler.metrics import ERROR, PLUGIN_METRICS_SAMPLE_PERCENT, SCHEDULED, UNSCHEDULABLE
from scheduler.model.pod_group import WORKLOAD_API, PodGroup

if TYPE_CHECKING:
    from scheduler.cache.cache import Cache
    from scheduler.cache.inbox import Inbox
    from scheduler.cache.pod_groups import PodGroups
    from scheduler.config import SchedulerConfig
    from scheduler.framework.extender import Extender
    from scheduler.framework.ports import Reporter
    from scheduler.framework.runtime import Framework
    from scheduler.framework.snapshot import ClusterSnapshot
    from scheduler.framework.waiting import WaitingPods
    from scheduler.metrics import Metrics
    from scheduler.model.pod import PodInfo
    from scheduler.queue.queued_pod import QueuedPodInfo
    from scheduler.queue.scheduling_queue import SchedulingQueue

log = structlog.get_logger("scheduler.cycle")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_SCHEDULED = "Scheduled"
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class FitError(Exception):
    """No node fits. The message is built on demand: PostFilter still adds to the diagnosis."""

    def __init__(self, pod: PodInfo, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.diagnosis)


class NoNodesAvailableError(Exception):
    """The cluster has no nodes: not a FitError, and it clears any nomination."""


class SchedulingError(Exception):
    """A plugin error or an internal failure: SchedulerError, retried after error backoff."""


class PodGroupConditions(Protocol):
    """Where a Workload-API pod group's cycle outcome goes: the PodGroup's
    ``PodGroupInitiallyScheduled`` condition (upstream's updatePodGroupCondition), written by
    the operator's API ports; called on the scheduling thread."""

    def pod_group_condition(
        self, group: PodGroup, scheduled: bool, reason: str, message: str
    ) -> None: ...


class CycleHost(Protocol):
    """What a cycle needs of the scheduler that runs it (``scheduler.scheduler.Scheduler``):
    the cycle reads and updates these, and nothing else of it."""

    config: SchedulerConfig
    queue: SchedulingQueue[PodInfo]
    cache: Cache
    inbox: Inbox
    waiting: WaitingPods
    # Pod groups and their members: assumed and forgotten with the cache.
    pod_groups: PodGroups
    pod_group_reporter: PodGroupConditions | None
    metrics: Metrics
    reporter: Reporter
    # HTTP extenders, ignorable ones last; called after the plugins (upstream's Extenders).
    extenders: Sequence[Extender]
    rng: np.random.Generator
    clock: Callable[[], float]
    # Where the next Filter pass starts in the node order (upstream's nextStartNodeIndex).
    next_start_index: int

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def profiles(self) -> Mapping[str, Framework]: ...

    @property
    def pods(self) -> Mapping[str, PodInfo]:
        """The watch's newest version of every pod, by uid."""
        ...

    def refresh(self) -> None:
        """Apply the watch's deltas to the cache."""
        ...

    def node_exists(self, name: str) -> bool: ...

    def submit_binding(self, fn: Callable[..., None], *args: Any) -> None: ...


@dataclass
class ScheduleResult:
    node: str
    evaluated_nodes: int
    feasible_nodes: int


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt at scheduling one pod: its profile, its cycle state, the queue's record of
    it, and when the attempt began (``time.perf_counter``)."""

    framework: Framework
    state: CycleState
    qpi: QueuedPodInfo[PodInfo]
    start: float

    @property
    def pod(self) -> PodInfo:
        return self.qpi.pod


@dataclass(frozen=True, slots=True)
class Failure:
    """How a cycle ended without binding its pod: what the failure handler needs (upstream's
    Status, with the FitError it may wrap, and the NominatingInfo)."""

    # Rejected (Unschedulable, UnschedulableAndUnresolvable, Pending): the pod is
    # Unschedulable; anything else is a SchedulerError, retried after the error backoff.
    status: Status
    # Set for a FitError: the message is built from it, and the plugins it names decide
    # which cluster events bring the pod back.
    diagnosis: Diagnosis | None = None
    # The pod's nomination afterwards: "" clears it (upstream's clearNominatedNode), None
    # leaves it as it is (PostFilter returned no result).
    nominated_node: str | None = ""
    # Bind found the pod deleted, or bound by someone else: nothing to retry.
    pod_gone: bool = False

    @property
    def reason(self) -> str:
        return REASON_UNSCHEDULABLE if self.status.is_rejected() else REASON_SCHEDULER_ERROR

    def message(self) -> str:
        if self.diagnosis is not None:
            return fit_error_message(self.diagnosis)
        return self.status.message


def schedule_one(s: CycleHost, timeout: float | None = None) -> bool:
    """Schedule the next pod; returns False when no pod arrived within ``timeout``."""
    qpi = s.queue.pop(timeout)
    s.refresh()
    if qpi is None:
        return False
    attempt = _begin_attempt(s, qpi)
    if attempt is None:
        return True
    if qpi.pod.pod_group is not None and schedule_pod_group(s, attempt):
        return True
    result = scheduling_cycle(s, attempt)
    if isinstance(result, Failure):
        handle_scheduling_failure(s, attempt, result)
    else:
        s.submit_binding(run_binding_cycle, s, attempt, result)
    return True


def _begin_attempt(s: CycleHost, qpi: QueuedPodInfo[PodInfo]) -> Attempt | None:
    """The attempt at a popped pod, or None (and its attempt over) when it is skipped:
    deleting pods, pods assumed by an earlier cycle, and pods the cache already accounts as
    bound (bound by someone else between the pop and the refresh)."""
    pod = qpi.pod
    framework = s.profiles.get(pod.scheduler_name)
    if (
        framework is None
        or pod.is_terminating
        or s.cache.is_assumed(pod.uid)
        or s.cache.get_pod(pod.uid) is not None
    ):
        s.queue.done(pod.uid)
        return None
    state = CycleState()
    state.record_plugin_metrics = s.metrics.sample() < PLUGIN_METRICS_SAMPLE_PERCENT
    return Attempt(framework, state, qpi, time.perf_counter())


def scheduling_cycle(s: CycleHost, attempt: Attempt) -> ScheduleResult | Failure:
    """Find the pod a node, assume it there, then Reserve and Permit (upstream's
    schedulingCycle). On a Failure nothing stays assumed."""
    pod = attempt.pod
    result = _find_guarded(s, attempt, post_filter=True)
    if isinstance(result, Failure):
        return result
    s.metrics.algorithm_duration.observe(time.perf_counter() - attempt.start)

    s.queue.nominator.delete(pod.uid)
    assumed = s.cache.assume(pod, result.node)
    if pod.pod_group is not None:
        s.pod_groups.assume(assumed)
    decision = _reserve_and_permit(attempt, assumed, result.node)
    status = decision.status
    if not (status.is_success() or status.code is Code.WAIT):
        try:
            attempt.framework.run_unreserve(attempt.state, assumed, result.node)
        finally:
            s.cache.forget(pod.uid)
            if pod.pod_group is not None:
                s.pod_groups.forget(pod)
        if status.is_rejected():
            return Failure(status, _fit_error_on_one_node(status))
        return Failure(status)
    if status.code is Code.WAIT:
        s.waiting.add(assumed, decision.waiting)
    return result


def _find_guarded(
    s: CycleHost, attempt: Attempt, *, post_filter: bool
) -> ScheduleResult | Failure:
    """The scheduling algorithm (upstream's SchedulePod), a FitError being a Failure with its
    diagnosis, and with ``post_filter``, when no node fits, PostFilter. A plugin's exception
    is the attempt's error, so that the pod is not lost in flight."""
    try:
        return schedule_pod(s, attempt.framework, attempt.state, attempt.qpi.pod)
    except FitError as fit:
        failure = Failure(Status(Code.UNSCHEDULABLE), fit.diagnosis)
    except NoNodesAvailableError:
        return Failure(Status.unschedulable(NO_NODES_AVAILABLE, resolvable=False))
    except SchedulingError as err:
        return Failure(Status.error(str(err)))
    except Exception as exc:
        return _crashed(attempt, exc)
    if not post_filter:
        return failure
    try:
        return _post_filter(attempt, failure)
    except Exception as exc:
        return _crashed(attempt, exc)


def _crashed(attempt: Attempt, exc: Exception) -> Failure:
    log.exception("Scheduling cycle failed", pod=attempt.pod.key)
    return Failure(Status.error(_exception_message(exc)))


def _post_filter(attempt: Attempt, failure: Failure) -> Failure:
    """No node fits (``failure``, a FitError's): PostFilter (preemption) may nominate one for
    a later attempt."""
    framework, state, pod = attempt.framework, attempt.state, attempt.pod
    diagnosis = failure.diagnosis
    if diagnosis is None or not framework.plugins.post_filter:
        return failure
    post_result, status = framework.run_post_filter(state, pod, diagnosis)
    # Upstream keeps the PostFilter message whatever the outcome, success included.
    diagnosis.post_filter_msg = status.message
    if status.code is Code.ERROR:
        log.error("PostFilter failed", pod=pod.key, plugin=status.plugin, reason=status.message)
    nominated = None if post_result is None else post_result.nominated_node_name
    return Failure(Status(Code.UNSCHEDULABLE), diagnosis, nominated)


def _reserve_and_permit(attempt: Attempt, assumed: PodInfo, node: str) -> PermitDecision:
    """Reserve, then Permit if every Reserve plugin agreed: the status, and which plugins
    asked the pod to wait, for how long."""
    framework, state = attempt.framework, attempt.state
    try:
        status = framework.run_reserve(state, assumed, node)
        if not status.is_success():
            return PermitDecision(status)
        return framework.run_permit(state, assumed, node)
    except Exception as exc:
        log.exception("Reserve or Permit failed", pod=assumed.key, node=node)
        return PermitDecision(Status.error(_exception_message(exc)))


def schedule_pod(
    s: CycleHost, framework: Framework, state: CycleState, pod: PodInfo
) -> ScheduleResult:
    snapshot = s.snapshot
    if snapshot.num_nodes == 0:
        raise NoNodesAvailableError
    feasible, diagnosis, evaluated = find_nodes_that_fit(s, framework, state, pod)
    if feasible.size == 0:
        raise FitError(pod, diagnosis)
    names = snapshot.nodes.names
    if feasible.size == 1:
        return ScheduleResult(names[int(feasible[0])], evaluated, 1)
    view = NodeView.of(s.snapshot, feasible)
    totals, _ = prioritize(framework, state, pod, view)
    if s.extenders:
        totals = totals + extender_scores(s, pod, view)
    host = select_host(s, view, totals)
    return ScheduleResult(host, evaluated, int(feasible.size))


def find_nodes_that_fit(
    s: CycleHost, framework: Framework, state: CycleState, pod: PodInfo
) -> tuple[IntArray, Diagnosis, int]:
    """Feasible node rows, the diagnosis of the rejected ones, and how many were evaluated."""
    snapshot = s.snapshot
    order = snapshot.order()
    diagnosis = Diagnosis(
        codes=np.zeros(snapshot.nodes.capacity, dtype=np.uint8), num_all_nodes=int(order.size)
    )
    candidates = pre_filter_candidates(s, framework, state, pod, diagnosis)
    if candidates is None:
        return np.zeros(0, dtype=np.int64), diagnosis, 0

    nominated = s.queue.nominator.all()
    # A pod nominated by an earlier preemption tries its nominated node first.
    if pod.nominated_node_name:
        row = snapshot.row_of(pod.nominated_node_name)
        if row is not None:
            single = NodeView.of(s.snapshot, np.asarray([row], dtype=np.int64))
            outcome = framework.run_filters_with_nominated(state, pod, single, nominated)
            if outcome.error is not None:
                # Upstream logs this and goes on with every node.
                log.error("Evaluation failed on nominated node", pod=pod.key,
                          node=pod.nominated_node_name, reason=outcome.error.message)
            elif outcome.codes[0] == Code.SUCCESS:
                # What extenders say of it here is said again by the full pass if it fails.
                scratch = Diagnosis(codes=diagnosis.codes.copy(),
                                    num_all_nodes=diagnosis.num_all_nodes)
                passed = find_nodes_that_pass_extenders(s, pod, single.idx, scratch)
                if passed.size:
                    return passed, diagnosis, 1

    n = int(candidates.size)
    if n == 0:
        return np.zeros(0, dtype=np.int64), diagnosis, 0
    to_find = num_feasible_nodes_to_find(
        framework.percentage_of_nodes_to_score, s.config.percentage_of_nodes_to_score, n
    )
    if not (framework.plugins.score or any(e.is_filter or e.is_prioritizer for e in s.extenders)):
        to_find = 1
    outcome, judged, feasible_positions = filter_until_found(
        s, framework, state, pod, candidates, s.next_start_index % n, to_find, nominated
    )
    evaluated = int(outcome.codes.size)
    if feasible_positions.size > to_find:
        feasible_positions = feasible_positions[:to_find]
        processed = int(feasible_positions[-1]) + 1
    else:
        processed = evaluated
    # Upstream: (nextStartNodeIndex + processed) % len(allNodes), whatever the restriction.
    s.next_start_index = (s.next_start_index + processed) % max(int(order.size), 1)
    record_rejections(diagnosis, judged, outcome, processed)
    feasible = judged[feasible_positions]
    passed = find_nodes_that_pass_extenders(s, pod, feasible, diagnosis)
    if passed.size != feasible.size:
        # Extenders register no events: a pod they rejected retries on any event.
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
    return passed, diagnosis, processed


def filter_until_found(
    s: CycleHost,
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    candidates: IntArray,
    start: int,
    to_find: int,
    nominated: Mapping[str, Sequence[PodInfo]],
) -> tuple[FilterOutcome, IntArray, IntArray]:
    """The Filter outcome of the candidates from position ``start`` on, wrapping around, in
    windows, until ``to_find`` of them are feasible or every row is judged: as upstream,
    which stops checking nodes once it has found enough, the rest of a large cluster is not
    filtered. Each window is sized from the feasible share seen so far, with a quarter to
    spare. Returns the outcome, the rows it answers for and the positions of the feasible
    ones, in order."""
    n = int(candidates.size)
    outcomes: list[FilterOutcome] = []
    windows: list[IntArray] = []
    feasible: list[IntArray] = []
    judged = found = 0
    size = min(n, to_find + to_find // 4)
    while True:
        rows = _wrapped_slice(candidates, start + judged, size)
        view = NodeView.of(s.snapshot, rows)
        outcome = framework.run_filters_with_nominated(state, pod, view, nominated)
        if outcome.error is not None:
            raise SchedulingError(outcome.error.message)
        outcomes.append(outcome)
        windows.append(rows)
        passed = outcome.feasible
        feasible.append(passed + judged if judged else passed)
        found += int(passed.size)
        judged += len(view)
        if found >= to_find or judged >= n:
            if len(windows) == 1:
                return outcome, rows, passed
            return (FilterOutcome.joined(outcomes), np.concatenate(windows),
                    np.concatenate(feasible))
        wanted = (to_find - found) * judged // found if found else n
        size = min(n - judged, wanted + wanted // 4 + 1)


def _wrapped_slice(rows: IntArray, start: int, size: int) -> IntArray:
    """``size`` consecutive entries of ``rows`` from ``start``, wrapping around the end."""
    n = int(rows.size)
    start %= n
    end = start + size
    if end <= n:
        return rows[start:end]  # a view: the usual window copies nothing
    return np.concatenate((rows[start:], rows[: end - n]))


def find_nodes_that_pass_extenders(
    s: CycleHost, pod: PodInfo, feasible: IntArray, diagnosis: Diagnosis
) -> IntArray:
    """Each interested extender in turn filters what the previous ones left; the nodes it
    failed get its reason in ``diagnosis``. An error fails the cycle unless the extender is
    ignorable (upstream's findNodesThatPassExtenders)."""
    table = s.snapshot.nodes
    for extender in s.extenders:
        if feasible.size == 0:
            break
        if not extender.is_interested(pod):
            continue
        names = [table.names[int(row)] for row in feasible]
        try:
            result = extender.filter(pod, names, s.snapshot)
        except ExtenderError as err:
            if extender.ignorable:
                log.info("Skipping extender as it returned error and has ignorable flag set",
                         extender=extender.name, pod=pod.key, reason=str(err))
                continue
            raise SchedulingError(str(err)) from err
        failures = [(name, message, Code.UNSCHEDULABLE) for name, message
                    in result.failed.items() if name not in result.failed_and_unresolvable]
        failures += [(name, message, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
                     for name, message in result.failed_and_unresolvable.items()]
        for name, message, code in failures:
            row = table.index.get(name)
            if row is not None:
                diagnosis.codes[row] = np.uint8(code)
                diagnosis.reasons.append((np.asarray([row], dtype=np.int64), message, ""))
        rows = (table.index.get(name) for name in result.nodes)
        feasible = np.asarray([r for r in rows if r is not None], dtype=np.int64)
    return feasible


def pre_filter_candidates(
    s: CycleHost, framework: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
) -> IntArray | None:
    """Run PreFilter: the node rows left to filter, or None when PreFilter rejected the pod.

    The rejection, or the nodes PreFilter's node restriction left out, go to ``diagnosis``.
    """
    snapshot = s.snapshot
    order = snapshot.order()
    pre_result, status, rejectors = framework.run_pre_filter(state, pod, snapshot)
    if status.code is Code.ERROR:
        raise SchedulingError(status.message)
    if not status.is_success():
        diagnosis.codes[order] = np.uint8(status.code)
        diagnosis.reasons = [(order, reason, status.plugin) for reason in status.reasons]
        diagnosis.pre_filter_msg = status.message
        _record_rejectors(diagnosis, status.code, rejectors)
        return None
    # As upstream, the plugins that restricted the nodes count as rejectors if nothing fits.
    diagnosis.unschedulable_plugins |= rejectors
    if pre_result is None or pre_result.node_names is None:
        return order
    rows = (snapshot.row_of(n) for n in pre_result.node_names)
    allowed = np.asarray([r for r in rows if r is not None], dtype=np.int64)
    inside = np.isin(order, allowed)
    absent = order[~inside]
    if absent.size:
        plugins = pre_result.plugins
        reason = f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"
        diagnosis.codes[absent] = np.uint8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        diagnosis.reasons.append((absent, reason, plugins[0] if plugins else ""))
    return order[inside]


def record_rejections(
    diagnosis: Diagnosis, rows: IntArray, outcome: FilterOutcome, processed: int
) -> None:
    """Record the Filter rejections of the first ``processed`` rows of ``rows`` (the rows
    ``outcome`` answered for, in order) in ``diagnosis``."""
    if not outcome.reasons:  # every row passed (a rejected row carries a reason)
        return
    rejected = np.flatnonzero(outcome.codes[:processed] != np.uint8(Code.SUCCESS))
    diagnosis.codes[rows[rejected]] = outcome.codes[rejected]
    for positions, reason, plugin in outcome.reasons:
        kept = positions[positions < processed]
        if kept.size:
            diagnosis.reasons.append((rows[kept], reason, plugin))
    diagnosis.unschedulable_plugins |= outcome.plugins_with(Code.UNSCHEDULABLE)
    diagnosis.unschedulable_plugins |= outcome.plugins_with(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    diagnosis.pending_plugins |= outcome.plugins_with(Code.PENDING)


def num_feasible_nodes_to_find(profile_pct: int | None, global_pct: int, num_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream numFeasibleNodesToFind)."""
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_nodes
    pct = profile_pct if profile_pct is not None else global_pct
    if pct == 0:
        pct = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - num_nodes // 125)
    if pct >= 100:
        return num_nodes
    return max(num_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


def prioritize(
    framework: Framework, state: CycleState, pod: PodInfo, view: NodeView
) -> tuple[IntArray, dict[str, IntArray]]:
    """PreScore and Score: the weighted total per row, and each plugin's normalised scores."""
    status = framework.run_pre_score(state, pod, view)
    if not status.is_success():
        raise SchedulingError(status.message)
    totals, status, per_plugin = framework.run_score(state, pod, view)
    if not status.is_success():
        raise SchedulingError(status.message)
    return totals, per_plugin


def extender_scores(s: CycleHost, pod: PodInfo, view: NodeView) -> IntArray:
    """Each interested extender's scores, times its weight, scaled from its 0..10 range to
    the plugins' 0..100; an extender that fails gives no score (upstream's prioritizeNodes)."""
    table = s.snapshot.nodes
    names = [table.names[int(row)] for row in view.idx]
    position = {name: i for i, name in enumerate(names)}
    totals = np.zeros(len(names), dtype=np.int64)
    for extender in s.extenders:
        if not extender.is_interested(pod):
            continue
        try:
            scores = extender.prioritize(pod, names, s.snapshot)
        except ExtenderError as err:
            log.info("Failed to run extender's priority function; no score given by it",
                     extender=extender.name, pod=pod.key, reason=str(err))
            continue
        scale = extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        for name, score in scores.items():
            i = position.get(name)
            if i is not None:
                totals[i] += score * scale
    return totals


def select_host(s: CycleHost, view: NodeView, totals: IntArray) -> str:
    """The node with the highest total; ties are broken uniformly at random."""
    # totals[argmax]: a fifth of max()'s cost; not np.flatnonzero: half the cost.
    best = (totals == totals[totals.argmax()]).nonzero()[0]
    # Generator.integers, not Generator.choice: the same uniform pick at a fifth of the cost.
    pick = int(best[0]) if best.size == 1 else int(best[s.rng.integers(best.size)])
    return s.snapshot.nodes.names[int(view.idx[pick])]


def run_binding_cycle(s: CycleHost, attempt: Attempt, result: ScheduleResult) -> None:
    """What a binding thread runs for one pod: the binding cycle, then its failure if any."""
    failure = binding_cycle(s, attempt, result)
    if failure is not None:
        handle_binding_cycle_error(s, attempt, result.node, failure)


def binding_cycle(s: CycleHost, attempt: Attempt, result: ScheduleResult) -> Failure | None:
    """Wait on Permit, PreBind, Bind, then confirm the binding and run PostBind (upstream's
    bindingCycle). Runs on a binding thread: cache changes go through the inbox."""
    pod, node = attempt.pod, result.node
    try:
        failure = _wait_and_bind(s, attempt, node)
    except Exception as exc:  # a binding thread must always release the pod
        log.exception("Binding cycle failed", pod=pod.key, node=node)
        failure = Failure(Status.error(_exception_message(exc)))
    if failure is not None:
        return failure
    framework = attempt.framework
    try:
        s.inbox.put(lambda: s.cache.finish_binding(pod.uid))
        s.reporter.scheduled(pod, node)
        framework.run_post_bind(attempt.state, pod, node)
    finally:
        s.queue.done(pod.uid)
    _record_scheduled(s, attempt)
    log.info(
        "Successfully bound pod to node",
        pod=pod.key, node=node, profile=framework.profile_name, attempt=attempt.qpi.attempts,
        evaluated_nodes=result.evaluated_nodes, feasible_nodes=result.feasible_nodes,
        duration_ms=round((time.perf_counter() - attempt.start) * 1000, 3),
    )
    return None


def _wait_and_bind(s: CycleHost, attempt: Attempt, node: str) -> Failure | None:
    """PreBind's pre-flight, the wait at Permit, PreBind, then the extenders' or the Bind
    plugins' binding; None when the pod is bound."""
    framework, state, pod = attempt.framework, attempt.state, attempt.pod
    status = framework.run_pre_bind_pre_flights(state, pod, node)
    if status.code is Code.ERROR:
        return Failure(status)
    if status.is_success() or (status.is_skip() and pod.uid in s.waiting):
        # Other components learn where the pod is going while PreBind or Permit works.
        s.reporter.expecting(pod, node)
    status = s.waiting.wait(pod.uid)
    if status.is_rejected():
        # Rejected while waiting at Permit: a FitError on the one node, as upstream.
        return Failure(status, _fit_error_on_one_node(status))
    if not status.is_success():
        return Failure(status)
    status = framework.run_pre_bind(state, pod, node)
    if not status.is_success():
        return Failure(status)
    if not s.node_exists(node):
        return Failure(Status.error(f"node {node!r} was deleted before the binding"))
    delegated = extenders_binding(s, pod, node)
    status = framework.run_bind(state, pod, node) if delegated is None else delegated
    if not status.is_success():
        return Failure(status, pod_gone=status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    return None


def handle_binding_cycle_error(
    s: CycleHost, attempt: Attempt, node: str, failure: Failure
) -> None:
    """Unreserve and forget the assumed pod, tell the queue its room is free, and hand the
    failure to the failure handler (upstream's handleBindingCycleError)."""
    framework, pod = attempt.framework, attempt.pod
    try:
        framework.run_unreserve(attempt.state, pod, node)
    finally:
        s.inbox.put(lambda: s.cache.forget(pod.uid))
        if pod.pod_group is not None:
            s.pod_groups.forget(pod)
    # Forgetting the assumed pod frees its room: an AssignedPodDelete for the others.
    assumed = pod.replace(node_name=node)
    if failure.pod_gone:
        log.info("Dropped pod after binding", pod=pod.key, node=node,
                 reason=failure.status.message)
        s.metrics.profile(framework.profile_name).attempt(
            ERROR, time.perf_counter() - attempt.start)
        s.queue.delete(pod.uid)
        s.queue.done(pod.uid)
        s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        return
    if not failure.status.is_rejected():
        s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        handle_scheduling_failure(s, attempt, failure, requeue="group_member")
        return
    handle_scheduling_failure(s, attempt, failure, requeue="group_member")
    # After the requeue, as upstream defers it: the pod's own forget must not move it.
    s.queue.move_all_to_active_or_backoff(
        ASSIGNED_POD_DELETE, assumed, None, pre_check=lambda other: other.uid != pod.uid
    )


def extenders_binding(s: CycleHost, pod: PodInfo, node: str) -> Status | None:
    """The first interested binder extender binds the pod, before any Bind plugin; None when
    no extender binds it (upstream's extendersBinding)."""
    for extender in s.extenders:
        if not extender.is_binder or not extender.is_interested(pod):
            continue
        try:
            extender.bind(pod, node)
        except ExtenderError as err:
            if extender.ignorable:
                log.info("Skipping extender in bind as it returned error and has ignorable "
                         "flag set", extender=extender.name, pod=pod.key, reason=str(err))
                continue
            return Status.error(str(err))
        return Status()
    return None


# How a failed attempt's pod goes back to the queue (handle_scheduling_failure).
Requeue = Literal["pod", "with_its_group", "group_member"]


def handle_scheduling_failure(
    s: CycleHost, attempt: Attempt, failure: Failure, *, requeue: Requeue = "pod",
) -> None:
    """Requeue the pod, keep or change its nomination, and tell the user why (upstream's
    handleSchedulingFailure, its FailureHandler): the one end of every failed attempt.

    As upstream, the watch's newest version of the pod decides: a pod deleted, terminating or
    bound since the cycle began is not requeued, gets no nomination and no status write.
    ``requeue``: ``pod``, the pod's own failure path; ``with_its_group``, a member of a
    group whose cycle ended, already requeued with the group (``_requeue_group``);
    ``group_member``, its binding cycle failed, and a member of a pod group joins its group
    in the queue (upstream's addPodGroupMember).
    """
    qpi, framework = attempt.qpi, attempt.framework
    pod = qpi.pod
    _note_rejectors(qpi, failure)
    is_error = not failure.status.is_rejected()
    if requeue == "pod":
        s.queue.add_unschedulable_if_not_present(qpi, error=is_error)
    elif requeue == "group_member":
        s.queue.add_unschedulable_group_member(qpi, error=is_error)
    reason, message, nominated_node = failure.reason, failure.message(), failure.nominated_node
    current = s.pods.get(pod.uid)
    if current is not None and (current.node_name or current.is_terminating):
        current = None
    if current is not None:
        if nominated_node is not None:
            s.queue.nominator.add(current, nominated_node)
        s.reporter.failed(current, reason, message, nominated_node)
    s.metrics.profile(framework.profile_name).attempt(
        ERROR if is_error else UNSCHEDULABLE, time.perf_counter() - attempt.start
    )
    log.info(
        "Unable to schedule pod",
        pod=pod.key, profile=framework.profile_name, attempt=qpi.attempts, reason=reason,
        message=message, nominated_node=nominated_node, still_pending=current is not None,
        duration_ms=round((time.perf_counter() - attempt.start) * 1000, 3),
    )


def _note_rejectors(qpi: QueuedPodInfo[PodInfo], failure: Failure) -> None:
    """The plugins that rejected the pod, for the queue's hints and metrics."""
    if failure.diagnosis is not None:
        qpi.unschedulable_plugins = set(failure.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(failure.diagnosis.pending_plugins)


def _record_scheduled(s: CycleHost, attempt: Attempt) -> None:
    s.metrics.profile(attempt.framework.profile_name).attempt(
        SCHEDULED, time.perf_counter() - attempt.start)
    queued = attempt.qpi.initial_attempt_timestamp
    s.metrics.scheduled(attempt.qpi.attempts, None if queued is None else s.clock() - queued)


def _exception_message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _fit_error_on_one_node(status: Status) -> Diagnosis:
    """A rejection at Reserve, Permit or the wait at Permit, as upstream's FitError on the
    one chosen node: "0/1 nodes are available: <reason>."."""
    rows = np.zeros(1, dtype=np.int64)
    diagnosis = Diagnosis(codes=np.asarray([status.code], dtype=np.uint8), num_all_nodes=1)
    diagnosis.reasons = [(rows, reason, status.plugin) for reason in status.reasons]
    if status.plugin:
        diagnosis.unschedulable_plugins = {status.plugin}
    return diagnosis


def _record_rejectors(diagnosis: Diagnosis, code: Code, plugins: set[str]) -> None:
    if code is Code.PENDING:
        diagnosis.pending_plugins |= plugins
    else:
        diagnosis.unschedulable_plugins |= plugins



# -- the pod-group cycle ----------------------------------------------------------------------
# Upstream's scheduleOnePodGroup (schedule_one_podgroup.go, without topology-aware placement):
# a group's members are popped together and placed all or none. Here the members the
# algorithm places are assumed and Reserved for real at once, and undone together when the
# group cannot be placed: nothing else runs on the scheduling thread in between, so no other
# pod ever sees room the group held, which is what upstream's simulation on the snapshot
# achieves before it assumes the members.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"


@dataclass
class _Placed:
    attempt: Attempt
    result: ScheduleResult
    assumed: PodInfo


@dataclass
class _GroupOutcome:
    status: Status
    placed: list[_Placed]
    failed: list[tuple[Attempt, Failure]]
    untried: list[Attempt]


def schedule_pod_group(s: CycleHost, first: Attempt) -> bool:
    """Place ``first``'s pod group: its members still queued are popped with it, tried in
    order, and bound together if the group's constraint holds (PlacementFeasible), else all
    requeued with nothing held. False, and nothing done, when the pod has no group (gone
    since the pop): it is scheduled as a pod of its own."""
    state = s.pod_groups.state_of(first.pod)
    group = None if state is None else state.group
    if state is None or group is None:
        return False
    others = sorted(uid for uid in state.unscheduled if uid != first.qpi.uid)
    attempts = [first]
    for qpi in s.queue.take(others):
        attempt = _begin_attempt(s, qpi)
        if attempt is not None:
            attempts.append(attempt)
    invalid = validate_pod_group(group, [a.pod for a in attempts] + state.scheduled_pods())
    if invalid is not None:
        outcome = _GroupOutcome(Status.error(invalid), [], [], attempts)
    else:
        outcome = _place_members(s, first.framework, group, state.scheduled_count(), attempts)
    s.metrics.pod_group_algorithm_duration.observe(time.perf_counter() - first.start)
    log.info("Pod group cycle", group=group.key, members=len(attempts),
             placed=len(outcome.placed), status=outcome.status.code.name,
             message=outcome.status.message)
    s.pod_groups.record_cycle(first.pod, _cycle_summary(outcome, len(attempts)))
    waiting = False
    if outcome.status.is_success():
        outcome.failed.extend(_bind_placed(s, outcome.placed))
    else:
        _undo_placed(s, outcome)
        nominations = _post_filter_pod_group(s, first.framework, group,
                                             state.scheduled_count(), attempts, outcome)
        _fail_placed(outcome, nominations)
        waiting = nominations is not None
    requeue = _requeue_group(s, group, outcome)
    for attempt, failure in outcome.failed:
        handle_scheduling_failure(s, attempt, failure, requeue=requeue)
    result = WAITING_ON_PREEMPTION if waiting else _attempt_result(outcome.status)
    s.metrics.profile(first.framework.profile_name).pod_group_attempt(
        result, time.perf_counter() - first.start)
    _report_pod_group(s, group, outcome.status)
    return True


def _report_pod_group(s: CycleHost, group: PodGroup, status: Status) -> None:
    """The PodGroupInitiallyScheduled condition, for Workload-API groups (a Coscheduling
    group's status is its controller's): True/Scheduled, or False with the reason and the
    group's message, never back to False once True."""
    if s.pod_group_reporter is None or group.source != WORKLOAD_API:
        return
    if status.is_success():
        s.pod_group_reporter.pod_group_condition(group, True, REASON_SCHEDULED, "")
    elif not group.initially_scheduled:
        reason = REASON_UNSCHEDULABLE if status.is_rejected() else REASON_SCHEDULER_ERROR
        s.pod_group_reporter.pod_group_condition(group, False, reason, status.message)


def _cycle_summary(outcome: _GroupOutcome, tried: int) -> str:
    """For explain: how many members fitted, how many did not and why (the first's
    message), and the group's status; "" when the group was placed."""
    if outcome.status.is_success():
        return ""
    text = f"{len(outcome.placed)} of {tried} members fitted"
    if outcome.failed:
        text += f", {len(outcome.failed)} did not: {outcome.failed[0][1].message()}"
    return f"{text} ({outcome.status.message})"


def _attempt_result(status: Status) -> str:
    if status.is_success():
        return SCHEDULED
    return UNSCHEDULABLE if status.is_rejected() else ERROR


def validate_pod_group(group: PodGroup, members: list[PodInfo]) -> str | None:
    """Upstream's validatePodGroup (PodGroupPreemptionPolicy off) for a Workload-API group:
    one schedulerName, every member at the group's priority (``spec.priority``, 0 unset),
    one preemption policy; what is wrong, or None. Coscheduling checks none of it."""
    if group.source != WORKLOAD_API or not members:
        return None
    scheduler_name = members[0].scheduler_name
    policy = members[0].preemption_policy
    group_priority = group.priority or 0
    for pod in members:
        if pod.scheduler_name != scheduler_name:
            return ("all pods in a single pod group should have the same .spec.schedulerName "
                    f'set, got: "{pod.scheduler_name}" and "{scheduler_name}"')
        if pod.priority != group_priority:
            return ("all pods in a single pod group should have the same priority as the pod "
                    f"group's priority, got {pod.priority} and {group_priority}")
        if pod.preemption_policy != policy:
            return ("all pods in a single pod group should have the same preemption policy, "
                    f"got {pod.preemption_policy} and {policy}")
    return None


def _place_members(
    s: CycleHost, framework: Framework, group: PodGroup, scheduled: int, attempts: list[Attempt]
) -> _GroupOutcome:
    """Each member in turn: the algorithm (no PostFilter), then assume and Reserve; after
    each, PlacementFeasible, whose Unschedulable (or error) stops the loop."""
    outcome = _GroupOutcome(_placement_feasible(framework, group, scheduled, len(attempts)),
                            [], [], [])
    for i, attempt in enumerate(attempts):
        if not (outcome.status.is_success() or outcome.status.code is Code.WAIT):
            outcome.untried = attempts[i:]
            break
        placed = _place_member(s, attempt)
        if isinstance(placed, Failure):
            outcome.failed.append((attempt, placed))
        else:
            outcome.placed.append(placed)
            scheduled += 1
        outcome.status = _placement_feasible(framework, group, scheduled, len(attempts) - i - 1)
    if outcome.status.code is Code.WAIT:
        outcome.status = Status(Code.UNSCHEDULABLE, outcome.status.reasons, outcome.status.plugin)
    elif outcome.status.is_success() and not outcome.placed:
        outcome.status = Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))
    return outcome


def _placement_feasible(
    framework: Framework, group: PodGroup, scheduled: int, remaining: int
) -> Status:
    """PlacementFeasible; a plugin's error (or exception) fails the group's attempt, as
    upstream's "failed to evaluate placement feasibility"."""
    try:
        status = framework.run_placement_feasible(group, scheduled, remaining)
    except Exception as exc:
        log.exception("PlacementFeasible failed", group=group.key)
        status = Status.error(_exception_message(exc))
    if status.code is Code.ERROR:
        return Status.error(f"failed to evaluate placement feasibility: {status.message}")
    return status


def _place_member(s: CycleHost, attempt: Attempt) -> _Placed | Failure:
    pod = attempt.pod
    result = _find_guarded(s, attempt, post_filter=False)
    if isinstance(result, Failure):
        return result
    assumed = s.cache.assume(pod, result.node)
    s.pod_groups.assume(assumed)
    try:
        status = attempt.framework.run_reserve(attempt.state, assumed, result.node)
    except Exception as exc:
        log.exception("Reserve failed", pod=pod.key, node=result.node)
        status = Status.error(_exception_message(exc))
    if status.is_success():
        return _Placed(attempt, result, assumed)
    _undo(s, attempt, result.node)
    if status.is_rejected():
        return Failure(status, _fit_error_on_one_node(status))
    return Failure(status)


def _undo(s: CycleHost, attempt: Attempt, node: str) -> None:
    try:
        attempt.framework.run_unreserve(attempt.state, attempt.pod.replace(node_name=node), node)
    finally:
        s.cache.forget(attempt.pod.uid)
        s.pod_groups.forget(attempt.pod)


def _bind_placed(s: CycleHost, placed: list[_Placed]) -> list[tuple[Attempt, Failure]]:
    """The group holds: each placed member runs Permit (GangScheduling allows them all once
    the last is assumed) and goes to its binding cycle. Returns the members a Permit plugin
    rejected (or failed), unreserved and forgotten: upstream's prepareForBindingCycle hands
    them to the FailureHandler, and they are requeued with the group's leftovers."""
    rejected: list[tuple[Attempt, Failure]] = []
    for p in placed:
        s.metrics.algorithm_duration.observe(time.perf_counter() - p.attempt.start)
        s.queue.nominator.delete(p.attempt.pod.uid)
        try:
            decision = p.attempt.framework.run_permit(p.attempt.state, p.assumed, p.result.node)
        except Exception as exc:
            log.exception("Permit failed", pod=p.assumed.key, node=p.result.node)
            decision = PermitDecision(Status.error(_exception_message(exc)))
        status = decision.status
        if status.code is Code.WAIT:
            s.waiting.add(p.assumed, decision.waiting)
        elif not status.is_success():
            _undo(s, p.attempt, p.result.node)
            rejected.append((p.attempt, Failure(
                status, _fit_error_on_one_node(status) if status.is_rejected() else None)))
            continue
        s.submit_binding(run_binding_cycle, s, p.attempt, p.result)
    return rejected


def _undo_placed(s: CycleHost, outcome: _GroupOutcome) -> None:
    """The group does not hold: every placed member is unreserved and forgotten."""
    for p in outcome.placed:
        _undo(s, p.attempt, p.result.node)


def _fail_placed(outcome: _GroupOutcome, nominations: Mapping[str, str] | None) -> None:
    """The placed members fail with the group's message (upstream's FailureHandler with the
    pod group's status); so do the members not tried. They come back on the events that may
    help the others. A group waiting on preemption: each member keeps its nominated node."""
    rejectors = {outcome.status.plugin} - {""}
    for _, failure in outcome.failed:
        if failure.diagnosis is not None:
            rejectors |= failure.diagnosis.unschedulable_plugins
    group_failure = Failure(Status(outcome.status.code, outcome.status.reasons))
    if outcome.status.code is Code.ERROR:
        # The group's error is every member's, but for a member's own error (upstream's
        # submitPodGroupAlgorithmResult).
        outcome.failed = [(attempt, failure if not failure.status.is_rejected()
                           else group_failure) for attempt, failure in outcome.failed]
    for attempt in [p.attempt for p in outcome.placed] + outcome.untried:
        attempt.qpi.unschedulable_plugins = set(rejectors)
        outcome.failed.append((attempt, group_failure))
    if nominations is not None:
        outcome.failed = [
            (attempt, replace(failure, nominated_node=nominations.get(attempt.pod.uid, "")))
            for attempt, failure in outcome.failed
        ]


def _requeue_group(s: CycleHost, group: PodGroup, outcome: _GroupOutcome) -> Requeue:
    """Requeue the members the cycle did not bind (upstream's AddAttemptedPodGroupIfNeeded
    at the end of every pod-group cycle), and say how their failure path is to requeue them.
    A group that was placed: its leftovers (not fitted, failed, rejected at Permit) to
    activeQ at once. A Workload-API group that was not: its members together, after the
    group's backoff whatever the events; an error of the group's counts as one. A
    Coscheduling group's members then take the pod's failure path, as scheduler-plugins
    queues them one by one."""
    placed = outcome.status.is_success()
    if not placed and group.source != WORKLOAD_API:
        return "pod"
    for attempt, failure in outcome.failed:
        _note_rejectors(attempt.qpi, failure)
    members = [attempt.qpi for attempt, _ in outcome.failed]
    if placed:
        s.queue.add_placed_group_leftovers(members)
    else:
        s.queue.add_failed_group(members, error=not outcome.status.is_rejected())
    return "with_its_group"


# -- pod-group preemption: the cycle's side -----------------------------------------------------
# Upstream runs the PodGroupPostFilter plugins on a snapshot they mutate and restore
# (MutableSnapshotSharedLister) with the group's algorithm passed as a function. Here the
# cycle's cache is the snapshot: victims are taken out of it and put back, and the group's
# algorithm is the one above, its placements undone each time. Nothing else runs on the
# scheduling thread meanwhile, so no other pod sees the cache in between.
WAITING_ON_PREEMPTION = "waiting_on_preemption"


def _post_filter_pod_group(
    s: CycleHost, framework: Framework, group: PodGroup, scheduled: int,
    attempts: list[Attempt], outcome: _GroupOutcome,
) -> dict[str, str] | None:
    """Upstream's RunPodGroupPostFilterPlugins and applyPodGroupPostFilterResult, for a group
    whose cycle ended Unschedulable: the members' nominations when a plugin succeeded (the
    group then waits on preemption), else None. The plugins' message is added to the
    group's; their error becomes the group's status."""
    if outcome.status.code is not Code.UNSCHEDULABLE:
        return None
    simulation = _GroupSimulation(s, framework, group, scheduled, attempts)
    members = [a.pod for a in attempts]
    result, status = run_pod_group_post_filter(framework, group, members, simulation)
    if status is None:
        return None
    if status.code is Code.ERROR:
        outcome.status = status
        return None
    outcome.status = Status(outcome.status.code, (*outcome.status.reasons, status.message),
                            outcome.status.plugin)
    if not status.is_success():
        return None
    return {} if result is None else dict(result.nominations)


def run_pod_group_post_filter(
    framework: Framework, group: PodGroup, members: Sequence[PodInfo],
    simulation: _GroupSimulation,
) -> tuple[PodGroupPostFilterResult | None, Status | None]:
    """The profile's PostFilter plugins with a ``pod_group_post_filter`` hook, in order: the
    first Success wins, UnschedulableAndUnresolvable and Error stop, Unschedulable reasons
    are joined (None: no plugin has the hook). The cluster is restored after each."""
    reasons: list[str] = []
    rejector = ""
    for plugin in framework.plugins.post_filter:
        hook = getattr(plugin, "pod_group_post_filter", None)
        if not callable(hook):
            continue
        try:
            result, status = hook(group, members, simulation)
        except Exception as exc:
            log.exception("PodGroupPostFilter failed", group=group.key, plugin=plugin.name)
            result, status = None, Status.error(_exception_message(exc))
        finally:
            simulation.restore()
        if status.is_success():
            return result, status
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return result, status.with_plugin(plugin.name)
        if not status.is_rejected():
            return None, Status(Code.ERROR, (f'error in "{plugin.name}" PodGroupPostFilter '
                                             f"plugins: {status.message}",), plugin.name)
        reasons.extend(status.reasons)
        rejector = rejector or plugin.name
    if not rejector:
        return None, None
    return None, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)


class _GroupSimulation:
    """The PodGroupSimulation a PodGroupPostFilter plugin runs on: the live cache, with
    pods taken out and put back (``restore`` puts back whatever is still out)."""

    def __init__(self, s: CycleHost, framework: Framework, group: PodGroup, scheduled: int,
                 attempts: list[Attempt]) -> None:
        self._s = s
        self._framework = framework
        self._group = group
        self._scheduled = scheduled
        self._attempts = {a.pod.uid: a for a in attempts}
        # Taken out: the cache's version, and whether it was assumed (not yet bound).
        self._removed: dict[str, tuple[PodInfo, bool]] = {}

    def remove_pods(self, pods: Sequence[PodInfo]) -> None:
        cache = self._s.cache
        for pod in pods:
            cached = cache.get_pod(pod.uid)
            if cached is None or pod.uid in self._removed:
                continue
            self._removed[pod.uid] = (cached, cache.is_assumed(pod.uid))
            cache.remove_pod(pod.uid)

    def add_pods(self, pods: Sequence[PodInfo]) -> None:
        cache = self._s.cache
        for pod in pods:
            entry = self._removed.pop(pod.uid, None)
            if entry is None:
                continue
            cached, assumed = entry
            if assumed:
                # Assumed again; a finished binding's expiry deadline starts anew with the
                # next finish_binding, or the watch confirms the pod first.
                cache.assume(cached.replace(node_name=""), cached.node_name)
            else:
                cache.upsert_pod(cached)

    def restore(self) -> None:
        self.add_pods([pod for pod, _ in list(self._removed.values())])

    def _fresh(self, uid: str) -> Attempt:
        """The member's attempt with a new cycle state: PreFilter runs again."""
        attempt = self._attempts[uid]
        return Attempt(attempt.framework, CycleState(), attempt.qpi, attempt.start)

    def schedule(self) -> tuple[list[ProposedAssignment], Status]:
        """The group's algorithm (``_place_members``), every placement undone after."""
        attempts = [self._fresh(uid) for uid in self._attempts]
        outcome = _place_members(self._s, self._framework, self._group, self._scheduled,
                                 attempts)
        _undo_placed(self._s, outcome)
        return [ProposedAssignment(p.attempt.pod, p.result.node) for p in outcome.placed], \
            outcome.status

    def fits(self, assignments: Sequence[ProposedAssignment]) -> Status:
        """Each member's PreFilter and Filter on its node, the members before it assumed
        and Reserved (upstream's reprieveVictim loop); all undone after."""
        s = self._s
        placed: list[tuple[Attempt, str]] = []
        try:
            for assignment in assignments:
                attempt = self._fresh(assignment.pod.uid)
                status = _fits_on(s, attempt, assignment.node)
                if status.is_success():
                    assumed = s.cache.assume(attempt.pod, assignment.node)
                    s.pod_groups.assume(assumed)
                    placed.append((attempt, assignment.node))
                    status = attempt.framework.run_reserve(attempt.state, assumed,
                                                           assignment.node)
                if not status.is_success():
                    return status
            return Status()
        except Exception as exc:
            log.exception("Pod group simulation failed", group=self._group.key)
            return Status.error(_exception_message(exc))
        finally:
            for attempt, node in reversed(placed):
                _undo(s, attempt, node)


def _fits_on(s: CycleHost, attempt: Attempt, node: str) -> Status:
    """PreFilter, then Filter with the nominated pods, of the attempt's pod on one node."""
    snapshot = s.snapshot
    row = snapshot.row_of(node)
    if row is None:
        return Status(Code.UNSCHEDULABLE)
    diagnosis = Diagnosis(codes=np.zeros(snapshot.nodes.capacity, dtype=np.uint8),
                          num_all_nodes=1)
    candidates = pre_filter_candidates(s, attempt.framework, attempt.state, attempt.pod,
                                       diagnosis)
    if candidates is None or not np.isin(row, candidates):
        return Status(Code.UNSCHEDULABLE)
    view = NodeView.of(snapshot, np.asarray([row], dtype=np.int64))
    outcome = attempt.framework.run_filters_with_nominated(
        attempt.state, attempt.pod, view, s.queue.nominator.all())
    if outcome.error is not None:
        return outcome.error
    return Status() if outcome.codes[0] == Code.SUCCESS else Status(Code.UNSCHEDULABLE)


