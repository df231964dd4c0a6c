"""One profile's framework: its plugins per extension point and how they are run.

The filter runner keeps kube-scheduler's per-node semantics over batches: plugins run in
profile order, each on the nodes that every earlier plugin let through, so a node's status
and reasons are those of the first plugin that rejected it. Nominated pods follow upstream's
two-pass rule (``run_filters_with_nominated``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import numpy as np
import structlog

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    BindPlugin,
    BoolArray,
    Code,
    CodeArray,
    CycleState,
    Diagnosis,
    FilterPlugin,
    IntArray,
    NodeView,
    PermitDecision,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)

if TYPE_CHECKING:
    from scheduler.framework.snapshot import ClusterSnapshot
    from scheduler.metrics import Observations, ProfileMetrics
    from scheduler.model.pod import PodInfo
    from scheduler.model.pod_group import PodGroup

log = structlog.get_logger("scheduler.framework")

# Upstream's cap on how long a Permit plugin may make a pod wait.
MAX_PERMIT_WAIT_SECONDS = 15 * 60.0


@dataclass
class FilterOutcome:
    """Per row of the filtered view: code, and the ``(positions, reason, plugin)`` reasons."""

    codes: CodeArray
    reasons: list[tuple[IntArray, str, str]] = field(default_factory=list)
    error: Status | None = None

    @property
    def feasible(self) -> IntArray:
        # nonzero, not np.flatnonzero: half the cost, for a 1-D array the same.
        rows: IntArray = (self.codes == np.uint8(Code.SUCCESS)).nonzero()[0]
        return rows.astype(np.int64, copy=False)

    def plugins_with(self, code: Code) -> set[str]:
        wanted = np.uint8(code)
        return {plugin for rows, _, plugin in self.reasons if (self.codes[rows] == wanted).any()}

    @classmethod
    def joined(cls, parts: Sequence[FilterOutcome]) -> FilterOutcome:
        """The outcome of consecutive views as one: positions continue across the parts,
        and a reason a plugin gave in several parts is one entry."""
        if len(parts) == 1:
            return parts[0]
        reasons: dict[tuple[str, str], list[IntArray]] = {}
        offset = 0
        for part in parts:
            for positions, reason, plugin in part.reasons:
                reasons.setdefault((reason, plugin), []).append(positions + offset)
            offset += int(part.codes.size)
        return cls(
            np.concatenate([part.codes for part in parts]),
            [(np.concatenate(rows), reason, plugin) for (reason, plugin), rows in reasons.items()],
        )



_P = ParamSpec("_P")
_R = TypeVar("_R")

# Read once: on Python 3.11 a member read from an Enum class is slow (see interface.Status).
_SUCCESS_CODE, _SKIP_CODE = Code.SUCCESS, Code.SKIP

_NONE_IDLE: frozenset[str] = frozenset()

# Read at every extension point of every cycle: one global, not time's attribute.
_now = time.perf_counter

# The status code of a point that returns a Status (or a PermitDecision), read by the point's
# timer: an attrgetter runs in C, where a lambda is one more Python call at six points a pod.
_STATUS_CODE = attrgetter("code")
_DECISION_CODE = attrgetter("status.code")

# Every plugin allowed the pod (nearly every cycle): one decision for all, it is frozen.
_ALLOWED = PermitDecision(SUCCESS)

# Upstream's status code strings, the ``status`` label of the duration metrics.
_CODE_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


def _timed_point(
    point: str, status_of: Callable[[Any], Code]
) -> Callable[
    [Callable[Concatenate[Framework, _P], _R]], Callable[Concatenate[Framework, _P], _R]
]:
    """Record ``scheduler_framework_extension_point_duration_seconds`` for a ``run_*``."""

    def wrap(
        run: Callable[Concatenate[Framework, _P], _R],
    ) -> Callable[Concatenate[Framework, _P], _R]:
        @functools.wraps(run)
        def timed(self: Framework, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            metrics = self.metrics
            if metrics is None:
                return run(self, *args, **kwargs)
            start = _now()
            out = run(self, *args, **kwargs)
            seconds = _now() - start
            # The histogram child by (point, code), resolved once: ten points a cycle.
            code = status_of(out)
            children = self._point_children
            child = children.get((point, code))
            if child is None:
                child = children[(point, code)] = metrics.point_histogram(
                    point, _CODE_LABELS[code])
            child.observe(seconds)
            return out

        return timed

    return wrap


# A Score plugin, its weight, and its normalize (upstream: ScoreExtensions may be nil).
Scorer = tuple[ScorePlugin, int, Callable[[CycleState, "PodInfo", IntArray], IntArray] | None]


def scorers(score: Sequence[tuple[ScorePlugin, int]]) -> tuple[Scorer, ...]:
    return tuple((plugin, w, getattr(plugin, "normalize", None)) for plugin, w in score)


@dataclass(frozen=True, slots=True)
class CyclePlugins:
    """The plugins the rest of a cycle runs once PreFilter has said which of them Skip: the
    Filters of the others, and, in the cycles not sampled for per-plugin metrics, the
    PreScore, Score, Reserve and PreBind plugins without those idle after their Skip
    (``idle_when_pre_filter_skips``). Chosen once per set of skipping plugins and kept, so a
    cycle pays one lookup, not a membership test per plugin per batch of nodes."""

    filter: tuple[FilterPlugin, ...]
    pre_score: tuple[PreScorePlugin, ...]
    # With each its weight and its normalize, if it has one.
    score: tuple[Scorer, ...]
    reserve: tuple[ReservePlugin, ...]
    pre_bind: tuple[PreBindPlugin, ...]

    @classmethod
    def chosen(
        cls, sets: PluginSets, skipped: frozenset[str], idle: Mapping[str, frozenset[str]]
    ) -> CyclePlugins:
        """From ``sets``, given the plugins whose PreFilter said Skip; ``idle``: per plugin,
        the points it is idle at then (empty in sampled cycles)."""

        def kept(point: str, plugin: Plugin) -> bool:
            return plugin.name not in skipped or point not in idle.get(plugin.name, ())

        return cls(
            filter=tuple(p for p in sets.filter if p.name not in skipped),
            pre_score=tuple(p for p in sets.pre_score if kept("preScore", p)),
            score=scorers([(p, w) for p, w in sets.score if kept("preScore", p)]),
            reserve=tuple(p for p in sets.reserve if kept("reserve", p)),
            pre_bind=tuple(p for p in sets.pre_bind if kept("preBind", p)),
        )


@dataclass
class PluginSets:
    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: QueueSortPlugin | None = None
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)


class Framework:
    def __init__(
        self,
        profile_name: str,
        plugins: PluginSets,
        *,
        percentage_of_nodes_to_score: int | None = None,
        instances: Mapping[str, Plugin] | None = None,
        metrics: ProfileMetrics | None = None,
    ) -> None:
        self._profile_name = profile_name
        self.plugins = plugins
        self.metrics = metrics
        # What cycles run: the plugins, timed one by one in the cycles sampled for plugin
        # metrics. The runners turn a plugin's exception into a PluginError that names it.
        self._timed = plugins if metrics is None else _wrapped_sets(plugins, _timer(metrics))
        self._point_children: dict[tuple[str, Code], Observations] = {}
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.instances: dict[str, Plugin] = dict(instances or {})
        # Per PreFilter plugin, the points it is idle at after saying Skip.
        self._idle: dict[str, frozenset[str]] = {
            p.name: idle for p in plugins.pre_filter
            if (idle := getattr(p, "idle_when_pre_filter_skips", _NONE_IDLE))}
        # By (plugins that said Skip at PreFilter, sampled for plugin metrics).
        self._chosen: dict[tuple[frozenset[str], bool], CyclePlugins] = {}

    @property
    def profile_name(self) -> str:
        return self._profile_name

    # -- PreEnqueue -----------------------------------------------------------------------
    def run_pre_enqueue(self, pod: PodInfo) -> str | None:
        """The name of the first PreEnqueue plugin that gates ``pod``, or ``None``."""
        for plugin in self.plugins.pre_enqueue:
            if not plugin.pre_enqueue(pod).is_success():
                return plugin.name
        return None

    def _plugins_for(self, state: CycleState) -> PluginSets:
        return self._timed if state.record_plugin_metrics else self.plugins

    # The points after PreFilter read ``state.after_pre_filter or self._plugins_for(state)``:
    # the cycle's choice, or for a state that did not go through run_pre_filter every plugin
    # (the Filter runner then leaves out the skipped ones itself). Inline: five points a pod.
    def _choose_after_pre_filter(self, state: CycleState) -> None:
        sampled = state.record_plugin_metrics
        key = (frozenset(state.skip_filter), sampled)
        chosen = self._chosen.get(key)
        if chosen is None:
            # Sampled cycles call every plugin upstream calls, so that per-plugin metrics
            # see them all: only the Filters of skipped plugins are left out there.
            chosen = CyclePlugins.chosen(
                self._plugins_for(state), key[0], {} if sampled else self._idle)
            # At most one entry per combination of skipping PreFilters that occurs.
            self._chosen[key] = chosen
        state.after_pre_filter = chosen

    # -- PreFilter ------------------------------------------------------------------------
    @_timed_point("PreFilter", lambda out: out[1].code)
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Run every PreFilter; returns the merged node restriction, status, rejecting plugins.

        As upstream's RunPreFilterPlugins: Skip drops the plugin's Filter for this cycle; an
        Error or UnschedulableAndUnresolvable stops at once; Unschedulable lets the remaining
        PreFilters run (kubernetes#119770) and the last one decides the message; node
        restrictions are intersected, and an empty intersection stops at once as
        UnschedulableAndUnresolvable ("node(s) didn't satisfy plugin(s) [A B] simultaneously").
        The plugins returned are those that restricted the nodes plus those that rejected the
        pod (upstream records only the last Unschedulable one; recording all of them only
        makes the queue retry the pod on more events).
        """
        merged: frozenset[str] | None = None
        restricting: list[str] = []
        rejection: Status | None = None
        rejectors: set[str] = set()
        state.after_pre_filter = None
        # Read once: a dozen plugins a cycle, and most of them Skip.
        skip = state.skip_filter.add
        for plugin in self._plugins_for(state).pre_filter:
            try:
                result, status = plugin.pre_filter(state, pod, snapshot)
            except Exception as exc:
                raise PluginError("PreFilter", plugin.name, exc) from exc
            code = status.code
            if code is not _SUCCESS_CODE:  # a dozen plugins a cycle: the usual case first
                if code is _SKIP_CODE:
                    skip(plugin.name)
                    continue
                if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    # No preemption can help: the other PreFilters need not run.
                    return None, status.with_plugin(plugin.name), {plugin.name}
                if status.is_rejected():
                    rejection = status.with_plugin(plugin.name)
                    rejectors.add(plugin.name)
                    continue
                return None, _plugin_error("PreFilter", plugin.name, status), set()
            if result is None or result.node_names is None:
                continue
            restricting.append(plugin.name)
            merged = result.node_names if merged is None else merged & result.node_names
            if not merged:
                names = sorted(restricting)
                if len(names) == 1:
                    message = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    message = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), names[0])
                return PreFilterResult(merged, tuple(names)), status, set(names)
        out = None if merged is None else PreFilterResult(merged, tuple(sorted(restricting)))
        self._choose_after_pre_filter(state)
        if rejection is not None:
            return out, rejection, rejectors | set(restricting)
        return out, SUCCESS, set(restricting)

    # -- Filter ---------------------------------------------------------------------------
    def run_filters(self, state: CycleState, pod: PodInfo, view: NodeView) -> FilterOutcome:
        n = len(view)
        codes = np.zeros(n, dtype=np.uint8)
        out = FilterOutcome(codes)
        # The positions in ``view`` of the rows of ``current``; made at the first rejection
        # (most cycles have none).
        remaining: IntArray | None = None
        left = n
        current = view
        chosen: CyclePlugins | None = state.after_pre_filter
        if chosen is None:
            skipped = state.skip_filter
            filters: Sequence[FilterPlugin] = [
                p for p in self._plugins_for(state).filter if p.name not in skipped]
        else:
            filters = chosen.filter
        for plugin in filters:
            if left == 0:
                break
            try:
                result = plugin.filter(state, pod, current)
            except Exception as exc:
                raise PluginError("Filter", plugin.name, exc) from exc
            if not np.count_nonzero(result.codes):  # every row passed (SUCCESS is 0)
                continue
            rejected = result.codes != np.uint8(Code.SUCCESS)
            errors = result.codes == np.uint8(Code.ERROR)
            if np.count_nonzero(errors):
                message = next((r for m, r in result.reasons if m[errors].any()), "filter failed")
                out.error = Status(
                    Code.ERROR, (f'running "{plugin.name}" filter plugin: {message}',), plugin.name
                )
                return out
            at = np.arange(n, dtype=np.int64) if remaining is None else remaining
            codes[at[rejected]] = result.codes[rejected]
            for mask, reason in result.reasons:
                out.reasons.append((at[mask], reason, plugin.name))
            keep = np.flatnonzero(~rejected)
            remaining = at[keep]
            left = int(keep.size)
            current = current.subset(keep)
        return out

    @_timed_point("Filter", lambda out: out.error.code if out.error else SUCCESS.code)
    def run_filters_with_nominated(
        self,
        state: CycleState,
        pod: PodInfo,
        view: NodeView,
        nominated: Mapping[str, Sequence[PodInfo]],
    ) -> FilterOutcome:
        """Filters with nominated pods of equal or higher priority counted on their nodes.

        Upstream's two passes: a node with such nominated pods must pass both with them
        (so they keep the space reserved for them) and without them (so affinity to a
        nominated pod that may never land does not count); the first pass that fails
        decides the reasons.
        """
        plain = self.run_filters(state, pod, view)
        if plain.error is not None or not nominated:
            return plain
        reserved = self._reserved_rows(view, pod, nominated)
        if not reserved:
            return plain
        hits = np.flatnonzero(np.isin(view.idx, np.fromiter(reserved, dtype=np.int64)))
        if hits.size == 0:
            return plain
        positions = hits.tolist()
        added = [reserved[int(view.idx[p])] for p in positions]
        rows = np.asarray(positions, dtype=np.int64)
        with_nominated = view.subset(rows).with_added(added)
        first = self.run_filters(state, pod, with_nominated)
        if first.error is not None:
            return first
        failed = first.codes != np.uint8(Code.SUCCESS)
        if failed.any():
            self._replace_where_failed(plain, first, rows, failed)
        return plain

    @staticmethod
    def _reserved_rows(
        view: NodeView, pod: PodInfo, nominated: Mapping[str, Sequence[PodInfo]]
    ) -> dict[int, list[PodInfo]]:
        """The view's rows with nominated pods that ``pod`` must leave room for (others than
        itself, of equal or higher priority), and those pods."""
        table = view.snapshot.nodes
        # From whichever is smaller: the view's nodes (a preemption dry run asks about one
        # node at a time) or the nominated ones; never every nomination for every view.
        if len(view) < len(nominated):
            by_row = ((row, nominated.get(table.names[row])) for row in view.idx.tolist())
        else:
            by_row = ((table.index.get(name), pods) for name, pods in nominated.items())
        reserved: dict[int, list[PodInfo]] = {}
        for row, pods in by_row:
            if row is None or not pods:
                continue
            keep = [p for p in pods if p.uid != pod.uid and p.priority >= pod.priority]
            if keep:
                reserved[row] = keep
        return reserved

    @staticmethod
    def _replace_where_failed(
        plain: FilterOutcome, first: FilterOutcome, rows: IntArray, failed: BoolArray
    ) -> None:
        """Where the pass with nominated pods failed (``failed``, over ``rows`` of the view),
        its codes and reasons replace the plain pass's, in ``plain``."""
        failed_positions = rows[failed]
        plain.codes[failed_positions] = first.codes[failed]
        replaced = np.zeros(len(plain.codes), dtype=np.bool_)
        replaced[failed_positions] = True
        plain.reasons = [
            (pos[~replaced[pos]], reason, plugin)
            for pos, reason, plugin in plain.reasons
            if (~replaced[pos]).any()
        ]
        for pos, reason, plugin in first.reasons:
            keep = failed[pos]
            if keep.any():
                plain.reasons.append((rows[pos[keep]], reason, plugin))

    def filters_read_pod_lists(self, state: CycleState) -> bool:
        """Whether any Filter active in this cycle reads a NodeView's hypothetical pod lists.

        A plugin that does not say is assumed to read them.
        """
        return any(
            getattr(plugin, "filter_reads_pod_lists", True)
            for plugin in self.plugins.filter
            if plugin.name not in state.skip_filter
        )

    # -- PostFilter -----------------------------------------------------------------------
    @_timed_point("PostFilter", lambda out: out[1].code)
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream's RunPostFilterPlugins: the first success wins; UnschedulableAndUnresolvable
        and Error stop at once; otherwise every plugin runs, the last result that changes the
        nomination is kept and the reasons of all are joined (the first rejector is named)."""
        kept: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self._plugins_for(state).post_filter:
            try:
                result, status = plugin.post_filter(state, pod, diagnosis)
            except Exception as exc:
                raise PluginError("PostFilter", plugin.name, exc) from exc
            if status.is_success():
                return result, status
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, status.reasons, plugin.name)
            if result is not None and result.nominated_node_name is not None:
                kept = result
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return kept, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # -- PreScore / Score -----------------------------------------------------------------
    @_timed_point("PreScore", _STATUS_CODE)
    def run_pre_score(self, state: CycleState, pod: PodInfo, view: NodeView) -> Status:
        for plugin in (state.after_pre_filter or self._plugins_for(state)).pre_score:
            try:
                status = plugin.pre_score(state, pod, view)
            except Exception as exc:
                raise PluginError("PreScore", plugin.name, exc) from exc
            code = status.code
            if code is _SUCCESS_CODE:
                continue
            if code is _SKIP_CODE:
                state.skip_score.add(plugin.name)
            else:
                return _plugin_error("PreScore", plugin.name, status, wrap_rejections=True)
        return SUCCESS

    @_timed_point("Score", lambda out: out[1].code)
    def run_score(
        self, state: CycleState, pod: PodInfo, view: NodeView
    ) -> tuple[IntArray, Status, dict[str, IntArray]]:
        """Weighted sum of normalised scores per row, plus each plugin's scores."""
        names: list[str] = []
        weights: list[int] = []
        scored: list[IntArray] = []
        chosen: CyclePlugins | None = state.after_pre_filter
        skipped = state.skip_score
        for plugin, weight, normalize in (
                scorers(self._plugins_for(state).score) if chosen is None else chosen.score):
            if plugin.name in skipped:
                continue
            names.append(plugin.name)
            weights.append(weight)
            try:
                raw = plugin.score(state, pod, view)
            except Exception as exc:
                raise PluginError("Score", plugin.name, exc) from exc
            if normalize is None:  # the raw scores stand
                scored.append(raw)
                continue
            try:
                scored.append(normalize(state, pod, raw))
            except Exception as exc:
                raise PluginError("NormalizeScore", plugin.name, exc) from exc
        if not scored:
            return np.zeros(len(view), dtype=np.int64), SUCCESS, {}
        # One array for every plugin: the range check and the weighted sum in two operations.
        matrix = np.array(scored, dtype=np.int64)  # np.stack: twice the time for the same
        # Read as unsigned, a negative score is above the maximum too: one pass, not two
        # (and indexing at argmax costs less than max()'s reduction).
        unsigned = matrix.view(np.uint64).reshape(-1)
        if unsigned.size and unsigned[unsigned.argmax()] > MAX_NODE_SCORE:
            invalid = np.argwhere((matrix < 0) | (matrix > MAX_NODE_SCORE))
            p, i = (int(v) for v in invalid[0])
            return np.zeros(len(view), dtype=np.int64), Status(Code.ERROR, (
                "applying score defaultWeights on Score plugins: "
                f'plugin "{names[p]}" returns an invalid score {int(matrix[p, i])}, '
                f"it should in the range of [0, {MAX_NODE_SCORE}] after normalizing",
            ), names[p]), dict(zip(names[:p], scored[:p], strict=True))
        # np.dot, not @: numpy's matmul loop for int64 takes three times as long here.
        total = np.dot(np.asarray(weights, dtype=np.int64), matrix)
        return total, SUCCESS, dict(zip(names, scored, strict=True))

    # -- the pod-group cycle ---------------------------------------------------------------
    def run_placement_feasible(self, group: PodGroup, scheduled: int, remaining: int) -> Status:
        """Every plugin with a ``placement_feasible`` hook (upstream's
        RunPlacementFeasiblePlugins): the first rejection or error stops; else Wait if any
        plugin waits, else Success."""
        outcome = SUCCESS
        for plugin in self.instances.values():
            check = getattr(plugin, "placement_feasible", None)
            if not callable(check):
                continue
            status: Status = check(group, scheduled, remaining)
            if status.code is Code.WAIT:
                outcome = status
            elif not status.is_success():
                return status
        return outcome

    # -- Reserve / Permit / Bind ----------------------------------------------------------
    @_timed_point("Reserve", _STATUS_CODE)
    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in (state.after_pre_filter or self._plugins_for(state)).reserve:
            try:
                status = plugin.reserve(state, pod, node)
            except Exception as exc:
                raise PluginError("Reserve", plugin.name, exc) from exc
            if not status.is_success():
                return _plugin_error("Reserve", plugin.name, status)
        return SUCCESS

    @_timed_point("Unreserve", lambda _: Code.SUCCESS)
    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Every Reserve plugin, in reverse order; one that raises does not stop the others
        (the caller must still forget the assumed pod)."""
        for plugin in reversed((state.after_pre_filter or self._plugins_for(state)).reserve):
            try:
                plugin.unreserve(state, pod, node)
            except Exception:
                log.exception("Unreserve failed", plugin=plugin.name, pod=pod.key, node=node)

    @_timed_point("Permit", _DECISION_CODE)
    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision:
        """Allow, reject, or wait for the longest timeout any plugin asked for (capped)."""
        waiting: list[tuple[str, float]] = []
        for plugin in self._plugins_for(state).permit:
            try:
                decision = plugin.permit(state, pod, node)
            except Exception as exc:
                raise PluginError("Permit", plugin.name, exc) from exc
            if decision.status.code is Code.WAIT:
                waiting.append(
                    (plugin.name, min(decision.timeout_seconds, MAX_PERMIT_WAIT_SECONDS)))
            elif not decision.status.is_success():
                return PermitDecision(_plugin_error("Permit", plugin.name, decision.status))
        if waiting:
            return PermitDecision(
                Status(Code.WAIT), max(t for _, t in waiting), tuple(waiting))
        return _ALLOWED

    @_timed_point("PreBindPreFlight", _STATUS_CODE)
    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Whether PreBind will have work to do (upstream's RunPreBindPreFlights): Success if
        any PreBind plugin says so, Skip if none does, or the first error. A plugin without
        ``pre_bind_pre_flight`` is taken to have work; one that says Skip is left out of
        PreBind."""
        outcome = SKIP
        skipped: set[str] = set()
        for plugin in (state.after_pre_filter or self._plugins_for(state)).pre_bind:
            check = getattr(plugin, "pre_bind_pre_flight", None)
            status: Status = check(state, pod, node) if callable(check) else SUCCESS
            if status.code is Code.ERROR:
                return Status.error(f'running PreBindPreFlight "{plugin.name}": {status.message}')
            if status.is_success():
                outcome = SUCCESS
            elif status.is_skip():
                skipped.add(plugin.name)
            else:
                return Status.error(
                    f'PreBindPreFlight {plugin.name} returned "{status.code.name}", which is '
                    "unsupported. It is supposed to return Success, Skip, or Error status")
        state.skip_pre_bind = skipped
        return outcome

    @_timed_point("PreBind", _STATUS_CODE)
    def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in (state.after_pre_filter or self._plugins_for(state)).pre_bind:
            if plugin.name in state.skip_pre_bind:
                continue
            try:
                status = plugin.pre_bind(state, pod, node)
            except Exception as exc:
                raise PluginError("PreBind", plugin.name, exc) from exc
            if not status.is_success():
                return _plugin_error("PreBind", plugin.name, status)
        return SUCCESS

    @_timed_point("Bind", _STATUS_CODE)
    def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in self._plugins_for(state).bind:
            try:
                status = plugin.bind(state, pod, node)
            except Exception as exc:
                raise PluginError("Bind", plugin.name, exc) from exc
            if status.is_skip():
                continue
            return status if status.is_success() else _plugin_error("Bind", plugin.name, status)
        return Status.error("no bind plugin bound the pod")

    @_timed_point("PostBind", lambda _: Code.SUCCESS)
    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Informational: a plugin that raises is logged and the others still run."""
        for plugin in self._plugins_for(state).post_bind:
            try:
                plugin.post_bind(state, pod, node)
            except Exception:
                log.exception("PostBind failed", plugin=plugin.name, pod=pod.key, node=node)


def _plugin_error(
    point: str, plugin: str, status: Status, *, wrap_rejections: bool = False
) -> Status:
    """A rejection keeps its reasons and names the plugin; anything else is an Error worded as
    upstream's ``running <Point> plugin "<name>": <message>``."""
    if status.is_rejected() and not wrap_rejections:
        return status.with_plugin(plugin)
    return Status(Code.ERROR, (f'running {point} plugin "{plugin}": {status.message}',), plugin)


def _filter_code(result: Any) -> Code:
    """A batch has one status per node; the label takes the highest code among them."""
    codes = result.codes
    return Code(int(codes.max())) if codes.size else Code.SUCCESS


def _success(_: object) -> Code:
    return Code.SUCCESS


# Plugin methods per extension point, with the name plugin_execution_duration_seconds gives
# the point (upstream's metrics.Filter and so on) and where the call's status is.
_POINT_OF_METHOD: dict[str, tuple[str, Callable[[Any], Code]]] = {
    "pre_filter": ("PreFilter", lambda out: out[1].code),
    "filter": ("Filter", _filter_code),
    "post_filter": ("PostFilter", lambda out: out[1].code),
    "pre_score": ("PreScore", _STATUS_CODE),
    "score": ("Score", _success),
    "normalize": ("ScoreExtensionNormalize", _success),
    "reserve": ("Reserve", _STATUS_CODE),
    "unreserve": ("Unreserve", _success),
    "permit": ("Permit", _DECISION_CODE),
    "pre_bind_pre_flight": ("PreBindPreFlight", _STATUS_CODE),
    "pre_bind": ("PreBind", _STATUS_CODE),
    "bind": ("Bind", _STATUS_CODE),
    "post_bind": ("PostBind", _success),
}


class PluginError(Exception):
    """A plugin raised. The message names the plugin and its extension point, as upstream
    words a plugin's error, so the pod's condition and Event say whose fault it is."""

    def __init__(self, point: str, plugin: str, cause: Exception) -> None:
        what = f"{type(cause).__name__}: {cause}"
        if point == "Filter":
            super().__init__(f'running "{plugin}" filter plugin: {what}')
        else:
            super().__init__(f'running {point} plugin "{plugin}": {what}')


Wrap = Callable[[Callable[..., Any], str, str, Callable[[Any], Code]], Callable[..., Any]]


def _timer(metrics: ProfileMetrics) -> Wrap:
    def wrap(
        method: Callable[..., Any], plugin: str, point: str, status_of: Callable[[Any], Code]
    ) -> Callable[..., Any]:
        # By status, the histogram child: resolved once, not per call (a sampled cycle
        # times some forty plugin calls).
        children: dict[Code, Observations] = {}

        def timed(*args: Any) -> Any:
            start = _now()
            out = method(*args)
            seconds = _now() - start
            code = status_of(out)
            child = children.get(code)
            if child is None:
                child = children[code] = metrics.plugin_histogram(plugin, point,
                                                                  _CODE_LABELS[code])
            child.observe(seconds)
            return out

        return timed

    return wrap


class _WrappedPlugin:
    """Forwards to a plugin, each extension-point method wrapped."""

    def __init__(self, plugin: Plugin, wrap: Wrap) -> None:
        self._plugin = plugin
        # Read on every call of every extension point: not through __getattr__.
        self.name = plugin.name
        for attr, (point, status_of) in _POINT_OF_METHOD.items():
            method = getattr(plugin, attr, None)
            if method is not None:
                setattr(self, attr, wrap(method, plugin.name, point, status_of))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._plugin, attr)


def _wrapped_sets(plugins: PluginSets, wrap: Wrap) -> PluginSets:
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(plugins):
        current = getattr(plugins, f.name)
        if f.name == "score":
            changes[f.name] = [(_WrappedPlugin(p, wrap), weight) for p, weight in current]
        elif isinstance(current, list):
            changes[f.name] = [_WrappedPlugin(p, wrap) for p in current]
    return dataclasses.replace(plugins, **changes)
