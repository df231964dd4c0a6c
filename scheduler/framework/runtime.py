"""One profile's framework: its plugins per extension point and how they are run.

The filter runner keeps kube-scheduler's per-node semantics over batches: plugins run in
profile order, each on the nodes that every earlier plugin let through, so a node's status
and reasons are those of the first plugin that rejected it. Nominated pods follow upstream's
two-pass rule (``run_filters_with_nominated``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    BindPlugin,
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
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)

if TYPE_CHECKING:
    from scheduler.cache.snapshot import Snapshot
    from scheduler.model.pod import PodInfo

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
        return np.flatnonzero(self.codes == np.uint8(Code.SUCCESS)).astype(np.int64)

    def plugins_with(self, code: Code) -> set[str]:
        wanted = np.uint8(code)
        return {plugin for rows, _, plugin in self.reasons if (self.codes[rows] == wanted).any()}

    def reasons_of(self, position: int) -> list[str]:
        return [reason for rows, reason, _ in self.reasons if position in rows]


@dataclass
class PluginSets:
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
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self._profile_name = profile_name
        self.plugins = plugins
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.instances: dict[str, Plugin] = dict(instances or {})
        self.extra: dict[str, Any] = dict(extra or {})

    @property
    def profile_name(self) -> str:
        return self._profile_name

    # -- PreFilter ------------------------------------------------------------------------
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Run every PreFilter; returns the merged node restriction, status, rejecting plugins.

        As upstream: Skip drops the plugin's Filter for this cycle; UnschedulableAndUnresolvable
        stops at once while Unschedulable lets the remaining PreFilters run (kubernetes#119770).
        """
        merged: PreFilterResult | None = None
        restricting: list[str] = []
        rejection: Status | None = None
        rejectors: set[str] = set()
        for plugin in self.plugins.pre_filter:
            result, status = plugin.pre_filter(state, pod, snapshot)
            if status.is_skip():
                state.skip_filter.add(plugin.name)
                continue
            if status.code is Code.ERROR:
                return None, status.with_plugin(plugin.name), {plugin.name}
            if status.is_rejected():
                rejectors.add(plugin.name)
                if rejection is None or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    rejection = status.with_plugin(plugin.name)
                if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    break
                continue
            if result is not None and result.node_names is not None:
                restricting.append(plugin.name)
                merged = (
                    result
                    if merged is None or merged.node_names is None
                    else PreFilterResult(merged.node_names & result.node_names)
                )
        if rejection is not None:
            return None, rejection, rejectors
        if merged is not None:
            merged = PreFilterResult(merged.node_names, tuple(sorted(restricting)))
        if merged is not None and merged.node_names is not None and not merged.node_names:
            if len(restricting) == 1:
                message = f"node(s) didn't satisfy plugin {restricting[0]}"
            else:
                joined = " ".join(sorted(restricting))
                message = f"node(s) didn't satisfy plugin(s) [{joined}] simultaneously"
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), restricting[0])
            return merged, status, set(restricting)
        return merged, SUCCESS, set()

    # -- Filter ---------------------------------------------------------------------------
    def run_filters(self, state: CycleState, pod: PodInfo, view: NodeView) -> FilterOutcome:
        n = len(view)
        codes = np.zeros(n, dtype=np.uint8)
        out = FilterOutcome(codes)
        remaining = np.arange(n, dtype=np.int64)
        current = view
        for plugin in self.plugins.filter:
            if remaining.size == 0:
                break
            if plugin.name in state.skip_filter:
                continue
            result = plugin.filter(state, pod, current)
            rejected = result.codes != np.uint8(Code.SUCCESS)
            if not rejected.any():
                continue
            if (result.codes == np.uint8(Code.ERROR)).any():
                message = next((r for m, r in result.reasons if m[result.codes == 1].any()), "")
                out.error = Status(Code.ERROR, (message or "filter failed",), plugin.name)
                return out
            codes[remaining[rejected]] = result.codes[rejected]
            for mask, reason in result.reasons:
                out.reasons.append((remaining[mask], reason, plugin.name))
            keep = np.flatnonzero(~rejected)
            remaining = remaining[keep]
            current = current.subset(keep)
        return out

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
        index = view.snapshot.nodes.index
        reserved: dict[int, list[PodInfo]] = {}
        for node_name, pods in nominated.items():
            row = index.get(node_name)
            if row is None:
                continue
            keep = [p for p in pods if p.uid != pod.uid and p.priority >= pod.priority]
            if keep:
                reserved[row] = keep
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
        if not failed.any():
            return plain
        # Where the first pass failed, its status replaces the plain one.
        failed_positions = rows[failed]
        plain.codes[failed_positions] = first.codes[failed]
        replaced = np.zeros(len(view), dtype=np.bool_)
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
        return plain

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
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        last = Status(Code.UNSCHEDULABLE)
        for plugin in self.plugins.post_filter:
            result, status = plugin.post_filter(state, pod, diagnosis)
            if status.is_success():
                return result, status
            if status.code is Code.ERROR:
                return result, status.with_plugin(plugin.name)
            last = status.with_plugin(plugin.name)
            if result is not None:
                return result, last
        return None, last

    # -- PreScore / Score -----------------------------------------------------------------
    def run_pre_score(self, state: CycleState, pod: PodInfo, view: NodeView) -> Status:
        for plugin in self.plugins.pre_score:
            status = plugin.pre_score(state, pod, view)
            if status.is_skip():
                state.skip_score.add(plugin.name)
            elif not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_score(
        self, state: CycleState, pod: PodInfo, view: NodeView
    ) -> tuple[IntArray, Status, dict[str, IntArray]]:
        """Weighted sum of normalised scores per row, plus each plugin's scores."""
        total = np.zeros(len(view), dtype=np.int64)
        per_plugin: dict[str, IntArray] = {}
        for plugin, weight in self.plugins.score:
            if plugin.name in state.skip_score:
                continue
            raw = plugin.score(state, pod, view)
            scores = plugin.normalize(state, pod, raw)
            if scores.size and (scores.min() < 0 or scores.max() > MAX_NODE_SCORE):
                return total, Status.error(
                    f"plugin {plugin.name} returned an invalid score, "
                    f"must be in [0, {MAX_NODE_SCORE}]"
                ), per_plugin
            per_plugin[plugin.name] = scores
            total += scores * weight
        return total, SUCCESS, per_plugin

    # -- Reserve / Permit / Bind ----------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in self.plugins.reserve:
            status = plugin.reserve(state, pod, node)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for plugin in reversed(self.plugins.reserve):
            plugin.unreserve(state, pod, node)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision:
        """Allow, reject, or wait for the longest timeout any plugin asked for (capped)."""
        wait = 0.0
        for plugin in self.plugins.permit:
            decision = plugin.permit(state, pod, node)
            if decision.status.code is Code.WAIT:
                wait = max(wait, min(decision.timeout_seconds, MAX_PERMIT_WAIT_SECONDS))
            elif not decision.status.is_success():
                return PermitDecision(decision.status.with_plugin(plugin.name))
        if wait > 0:
            return PermitDecision(Status(Code.WAIT), wait)
        return PermitDecision(SUCCESS)

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in self.plugins.pre_bind:
            status = plugin.pre_bind(state, pod, node)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for plugin in self.plugins.bind:
            status = plugin.bind(state, pod, node)
            if status.is_skip():
                continue
            return status if status.is_success() else status.with_plugin(plugin.name)
        return Status.error("no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for plugin in self.plugins.post_bind:
            plugin.post_bind(state, pod, node)
