"""Why a pod is pending, per node and per plugin: the answer to "0/N nodes are available".

The cycle stops at the first Filter plugin that rejects a node and keeps only what the
FailedScheduling message needs. An explanation runs the same framework differently:

- PreFilter and the Filter pass exactly as the cycle runs them (``pre_filter_candidates``,
  ``run_filters_with_nominated``, ``record_rejections``), so the reason each node is counted
  under, and the ``0/N nodes are available: ...`` message, are the scheduler's own;
- then every Filter plugin on every node (PreFilter's Skip honoured), so a node shows all its
  reasons, with the numbers behind them from the plugins that give them (their optional
  ``explain_nodes`` hook, ``scheduler.framework.explaining``);
- PreScore, Score and NormalizeScore over the feasible nodes, per plugin, weighted;
- when nothing fits, DefaultPreemption's dry run (``DefaultPreemption.plan``): candidates,
  victims and budgets, and the node it would nominate. Nothing is evicted: the plugin's
  actuation is never reached.

Everything reads the cache, so :func:`explain` must run on the scheduling thread
(:func:`explain_in_loop` puts it in the inbox and waits). It changes nothing the scheduler
keeps: the random generator the preemption dry run draws from is restored afterwards.
The one-shot mode builds a scheduler of its own from a listing (:func:`scheduler_from_listing`).
No I/O here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.cache.volume_objects import KINDS as VOLUME_KINDS
from scheduler.config import SchedulerConfig
from scheduler.cycle import (
    NO_NODES_AVAILABLE,
    SchedulingError,
    num_feasible_nodes_to_find,
    pre_filter_candidates,
    record_rejections,
)
from scheduler.framework.explaining import ExplainsHints, ExplainsNodes, ExplainsPod
from scheduler.framework.fit_error import fit_error_message
from scheduler.framework.interface import Code, CycleState, Diagnosis, IntArray, NodeView
from scheduler.framework.ports import NullPorts
from scheduler.framework.registry import Registry
from scheduler.intake import NAMESPACES, PDBS, PRIORITY_CLASSES, Intake
from scheduler.model.pod import PodInfo
from scheduler.plugins.default_preemption import (
    Candidate,
    DefaultPreemption,
    prefixed,
    select_candidate,
)
from scheduler.plugins.helper.explain_text import nodes_phrase
from scheduler.scheduler import Scheduler

SKIPPED = "Skip"
_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: SKIPPED,
    Code.PENDING: "Pending",
}


class ExplainError(Exception):
    """The question cannot be answered as asked (an unknown profile, a bound pod)."""


# -- the answer -------------------------------------------------------------------------------
@dataclass
class FilterVerdict:
    plugin: str
    code: str  # "Success", "Unschedulable", ... or "Skip" (PreFilter asked to skip it)
    reasons: list[str] = field(default_factory=list)
    # The numbers behind the reasons, when there are any: "cpu: the pod requests 3, ...".
    details: list[str] = field(default_factory=list)


@dataclass
class NodeReport:
    node: str
    # What FailedScheduling counts for this node (the first rejecting plugin's reasons);
    # empty when the node fits.
    counted: list[str]
    counted_plugin: str
    filters: list[FilterVerdict]
    # Normalised score per Score plugin, and the weighted total (feasible nodes only).
    scores: dict[str, int] = field(default_factory=dict)
    total: int | None = None

    @property
    def feasible(self) -> bool:
        return not self.counted


@dataclass
class Victim:
    pod: str
    priority: int
    # Budgets covering the victim; the one evicting it would take below zero, if any.
    budgets: list[str]
    violates: str = ""


@dataclass
class PreemptionCandidate:
    node: str
    victims: list[Victim]
    pdb_violations: int


@dataclass
class PreemptionPreview:
    # The PostFilter message, as the FailedScheduling event ends.
    message: str
    candidates: list[PreemptionCandidate] = field(default_factory=list)
    # The node DefaultPreemption would nominate; its victims are the first candidate's.
    nominate: str | None = None
    # Other candidates are as good: the scheduler picks among them by a random start offset.
    tied: bool = False
    # Potential nodes that are no candidate, and why.
    not_candidates: dict[str, str] = field(default_factory=dict)


@dataclass
class Explanation:
    pod: str
    scheduler_name: str
    profile: str
    priority: int
    # "schedulable", "unschedulable" or "error".
    outcome: str
    # The FailedScheduling message (unschedulable), the error, or where the pod would go.
    message: str
    nodes_total: int
    filter_plugins: list[str]
    score_plugins: list[tuple[str, int]]
    nodes: list[NodeReport]
    preemption: PreemptionPreview | None = None
    hints: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- entry points -----------------------------------------------------------------------------
def choose_profile(s: Scheduler, pod: PodInfo, requested: str | None) -> str:
    """The profile asked for; else the pod's own scheduler's if it is ours; else the first."""
    if requested:
        if requested not in s.profiles:
            known = ", ".join(sorted(s.profiles))
            raise ExplainError(f"no profile named {requested!r} (profiles: {known})")
        return requested
    if pod.scheduler_name in s.profiles:
        return pod.scheduler_name
    return s.config.profiles[0].scheduler_name


def explain(s: Scheduler, pod: PodInfo, profile: str | None = None) -> Explanation:
    """What the scheduler would do with ``pod`` now, and why. On the scheduling thread only."""
    if pod.node_name:
        raise ExplainError(f"pod {pod.key} is already bound to {pod.node_name}")
    if pod.parse_error is not None:
        raise ExplainError(f"pod {pod.key} has an invalid spec: {pod.parse_error}")
    name = choose_profile(s, pod, profile)
    rng_state = s.rng.bit_generator.state
    try:
        return _Explainer(s, name, pod).run()
    finally:
        s.rng.bit_generator.state = rng_state


def explain_in_loop(
    s: Scheduler, pod: PodInfo, profile: str | None, timeout: float
) -> Explanation:
    """:func:`explain` on the scheduling thread, through the inbox; waits at most ``timeout``
    seconds (``TimeoutError``). ``ExplainError`` is raised here as it was there."""
    return s.run_in_loop(lambda: explain(s, pod, profile), timeout)


@dataclass
class Listing:
    """What the one-shot mode lists from the API: plain API objects."""

    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    persistentvolumeclaims: list[dict[str, Any]] = field(default_factory=list)
    persistentvolumes: list[dict[str, Any]] = field(default_factory=list)
    storageclasses: list[dict[str, Any]] = field(default_factory=list)
    csinodes: list[dict[str, Any]] = field(default_factory=list)
    csidrivers: list[dict[str, Any]] = field(default_factory=list)
    csistoragecapacities: list[dict[str, Any]] = field(default_factory=list)


def scheduler_from_listing(
    config: SchedulerConfig, registry: Registry, listing: Listing
) -> tuple[Scheduler, Intake]:
    """A scheduler that binds and evicts nothing, its cache filled from ``listing`` through
    the intake the watches use. It is never started: call :func:`explain` on it directly."""
    ports = NullPorts()
    s = Scheduler(config, registry, binder=ports, reporter=ports, binding_workers=1)
    intake = Intake(s)
    intake.resync(PRIORITY_CLASSES, listing.priority_classes)
    intake.resync(NAMESPACES, listing.namespaces)
    intake.resync(PDBS, listing.pdbs)
    intake.resync_nodes(listing.nodes)
    intake.resync_pods(listing.pods)
    for kind in VOLUME_KINDS:
        intake.resync_volume_objects(kind, getattr(listing, kind))
    s.refresh()
    return s, intake


# -- the work ---------------------------------------------------------------------------------
class _Explainer:
    def __init__(self, s: Scheduler, profile: str, pod: PodInfo) -> None:
        self.s = s
        self.profile = profile
        self.framework = s.profiles[profile]
        self.pod = pod
        self.snapshot = s.snapshot
        self.table = self.snapshot.nodes
        self.state = CycleState()
        self.order = self.snapshot.order()

    def run(self) -> Explanation:
        framework, pod = self.framework, self.pod
        order = self.order
        out = Explanation(
            pod=pod.key, scheduler_name=pod.scheduler_name, profile=self.profile,
            priority=pod.priority, outcome="unschedulable", message="",
            nodes_total=int(order.size),
            filter_plugins=[p.name for p in framework.plugins.filter],
            score_plugins=[(p.name, w) for p, w in framework.plugins.score], nodes=[],
        )
        out.notes += self._pod_notes()
        if order.size == 0:
            out.message = NO_NODES_AVAILABLE
            return out
        diagnosis = Diagnosis(
            codes=np.zeros(self.table.capacity, dtype=np.uint8), num_all_nodes=int(order.size)
        )
        try:
            feasible = self._filter(diagnosis)
        except SchedulingError as err:
            out.outcome, out.message = "error", str(err)
            return out
        if diagnosis.pre_filter_msg:
            # PreFilter stopped the cycle: no Filter ran, and some lack their PreFilter state.
            out.notes.append(f"PreFilter rejected the pod ({diagnosis.pre_filter_msg}): "
                             "no Filter plugin runs")
            verdicts: dict[str, list[FilterVerdict]] = {}
        else:
            verdicts = self._every_filter(order)
        counted = _counted(diagnosis)
        reports = {
            int(row): NodeReport(
                node=self.table.names[int(row)],
                counted=counted.get(int(row), ([], ""))[0],
                counted_plugin=counted.get(int(row), ([], ""))[1],
                filters=[per_row[i] for per_row in verdicts.values()],
            )
            for i, row in enumerate(order)
        }
        from_nominated = sum(
            1 for r in reports.values()
            if r.counted and r.filters and all(v.code in ("Success", SKIPPED) for v in r.filters)
        )
        if from_nominated:
            out.notes.append(
                f"{nodes_phrase(from_nominated)} pass every filter as they are, but not with the "
                "pods nominated there (of the same or higher priority) counted as placed"
            )
        if feasible.size:
            self._score(feasible, reports, out)
        else:
            out.preemption = self._preempt(diagnosis, out)
            out.message = fit_error_message(diagnosis)
        out.nodes = _sorted_reports(reports.values())
        out.hints = self._hints(order, verdicts, reports)
        return out

    def _pod_notes(self) -> list[str]:
        """What about the pod itself keeps a scheduler from trying it as explained."""
        pod, notes = self.pod, []
        if pod.scheduler_name not in self.s.profiles:
            notes.append(f"the pod's schedulerName is {pod.scheduler_name!r}, not one of "
                         f"this scheduler's: shown is what profile {self.profile!r} would do")
        gates = (pod.raw.get("spec") or {}).get("schedulingGates")
        if gates:
            names = ", ".join(str(g.get("name")) for g in gates)
            notes.append(f"the pod has scheduling gates ({names}): no scheduler tries it "
                         "until they are removed")
        for plugin in self.framework.instances.values():
            if isinstance(plugin, ExplainsPod):
                notes += plugin.explain_pod(pod)
        return notes

    # -- Filter -----------------------------------------------------------------------------
    def _filter(self, diagnosis: Diagnosis) -> IntArray:
        """The cycle's PreFilter and Filter over every node: the feasible rows."""
        candidates = pre_filter_candidates(self.s, self.framework, self.state, self.pod,
                                           diagnosis)
        if candidates is None or candidates.size == 0:
            return np.zeros(0, dtype=np.int64)
        outcome = self.framework.run_filters_with_nominated(
            self.state, self.pod, self._view(candidates), self.s.queue.nominator.all()
        )
        if outcome.error is not None:
            raise SchedulingError(outcome.error.message)
        record_rejections(diagnosis, candidates, outcome, int(candidates.size))
        return candidates[outcome.feasible]

    def _view(self, rows: IntArray) -> NodeView:
        return NodeView.of(self.snapshot, rows)

    def _every_filter(self, order: IntArray) -> dict[str, list[FilterVerdict]]:
        """Per Filter plugin, its verdict on each node of ``order`` (the nodes as they are,
        without nominated pods). Nodes a plugin passes share one verdict object: at 5,000
        nodes most of them pass most plugins."""
        view = self._view(order)
        n = int(order.size)
        out: dict[str, list[FilterVerdict]] = {}
        for plugin in self.framework.plugins.filter:
            name = plugin.name
            if name in self.state.skip_filter:
                out[name] = [FilterVerdict(name, SKIPPED)] * n
                continue
            try:
                result = plugin.filter(self.state, self.pod, view)
            except Exception as exc:  # one plugin's failure must not hide the others
                message = str(exc) or type(exc).__name__
                out[name] = [FilterVerdict(name, _CODE_NAMES[Code.ERROR], [message])] * n
                continue
            verdicts = [FilterVerdict(name, _CODE_NAMES[Code.SUCCESS])] * n
            codes = result.codes.tolist()
            rejected = np.flatnonzero(result.codes != np.uint8(Code.SUCCESS))
            details = self._details(plugin, order[rejected])
            for pos, why in zip(rejected.tolist(), details, strict=True):
                verdicts[pos] = FilterVerdict(name, _CODE_NAMES[Code(codes[pos])], details=why)
            for mask, reason in result.reasons:
                for pos in np.flatnonzero(mask).tolist():
                    if codes[pos] != Code.SUCCESS:
                        verdicts[pos].reasons.append(reason)
            out[name] = verdicts
        return out

    def _details(self, plugin: object, rows: IntArray) -> list[list[str]]:
        """The numbers behind the plugin's rejection of each of ``rows``, if it gives them."""
        if not isinstance(plugin, ExplainsNodes) or rows.size == 0:
            return [[] for _ in range(rows.size)]
        return plugin.explain_nodes(self.state, self.pod, self._view(rows))

    # -- Score ------------------------------------------------------------------------------
    def _score(self, feasible: IntArray, reports: dict[int, NodeReport], out: Explanation) -> None:
        out.outcome = "schedulable"
        nominated = self.snapshot.row_of(self.pod.nominated_node_name or "")
        framework = self.framework
        if framework.plugins.score:
            view = self._view(feasible)
            status = framework.run_pre_score(self.state, self.pod, view)
            if not status.is_success():
                out.outcome, out.message = "error", status.message
                return
            totals, status, per_plugin = framework.run_score(self.state, self.pod, view)
            if not status.is_success():
                out.outcome, out.message = "error", status.message
                return
            for i, row in enumerate(feasible.tolist()):
                report = reports[row]
                report.scores = {name: int(scores[i]) for name, scores in per_plugin.items()}
                report.total = int(totals[i])
            best = [reports[r].node for r, t in zip(feasible.tolist(), totals.tolist(),
                                                    strict=True) if t == int(totals.max())]
        else:
            best = [reports[r].node for r in feasible.tolist()]
        if nominated is not None and nominated in set(feasible.tolist()):
            out.message = (f"would be bound to its nominated node {self.pod.nominated_node_name} "
                           "(tried first, without scoring)")
        elif not framework.plugins.score and feasible.size > 1:
            out.message = ("would be bound to the first feasible node found from a rotating "
                           "start (the profile has no Score plugin)")
        elif feasible.size == 1:
            out.message = f"would be bound to {best[0]}, the only feasible node"
        elif len(best) == 1:
            out.message = f"would be bound to {best[0]} (highest score)"
        else:
            out.message = (f"would be bound to one of {', '.join(sorted(best))} (same highest "
                           "score, picked at random)")
        n = int(self.snapshot.order().size)
        to_find = num_feasible_nodes_to_find(
            framework.percentage_of_nodes_to_score, self.s.config.percentage_of_nodes_to_score, n
        )
        if feasible.size > to_find:
            out.notes.append(
                f"the scheduler scores only the first {to_find} feasible nodes it finds "
                "(percentageOfNodesToScore), from a rotating start: its pick may be a lower "
                "total than the best shown"
            )

    # -- PostFilter -------------------------------------------------------------------------
    def _preempt(self, diagnosis: Diagnosis, out: Explanation) -> PreemptionPreview | None:
        plugins = self.framework.plugins.post_filter
        preemption = next((p for p in plugins if isinstance(p, DefaultPreemption)), None)
        others = [p.name for p in plugins if p is not preemption]
        if others:
            out.notes.append(f"PostFilter plugin(s) {', '.join(others)} not previewed")
        if preemption is None:
            return None
        plan = preemption.plan(self.state, self.pod, diagnosis)
        diagnosis.post_filter_msg = prefixed(plan.status).message
        preview = PreemptionPreview(message=diagnosis.post_filter_msg)
        names = self.table.names
        for rows, reason in plan.rejected:
            for row in rows.tolist():
                preview.not_candidates.setdefault(names[int(row)], reason)
        best = plan.best
        if best is None:
            return preview
        preview.nominate = best.node
        preview.tied = select_candidate(list(reversed(plan.candidates))) is not best
        ranked = [best, *(c for c in plan.candidates if c is not best)]
        preview.candidates = [self._candidate(c) for c in ranked]
        return preview

    def _candidate(self, candidate: Candidate) -> PreemptionCandidate:
        pdbs = list(self.snapshot.pdbs())
        victims = []
        violated = set(candidate.violated_budgets)
        for v in candidate.victims:
            covering = sorted(
                p.key for p in pdbs
                if p.namespace == v.namespace and v.labels and p.selector.matches(v.labels)
            )
            breaks = next((k for k in covering if k in violated), "")
            victims.append(Victim(v.key, v.priority, covering, breaks))
        return PreemptionCandidate(candidate.node, victims, candidate.num_pdb_violations)

    # -- what would help --------------------------------------------------------------------
    def _hints(
        self,
        order: IntArray,
        verdicts: Mapping[str, list[FilterVerdict]],
        reports: Mapping[int, NodeReport],
    ) -> list[str]:
        failing: list[list[FilterVerdict]] = [
            [v[i] for v in verdicts.values() if v[i].code not in ("Success", SKIPPED)]
            for i in range(order.size)
        ]
        if not any(failing):
            return []
        only: dict[str, list[int]] = defaultdict(list)
        for i, fails in enumerate(failing):
            if len(fails) == 1:
                only[fails[0].plugin].append(int(order[i]))
        hints: list[str] = []
        view = self._view(order)
        for plugin in self.framework.plugins.filter:
            if not isinstance(plugin, ExplainsHints) or plugin.name not in verdicts:
                continue
            name = plugin.name
            rejected = np.fromiter((v.code not in ("Success", SKIPPED) for v in verdicts[name]),
                                   dtype=np.bool_, count=int(order.size))
            others_pass = np.fromiter((all(v.plugin == name for v in fails) for fails in failing),
                                      dtype=np.bool_, count=int(order.size))
            hints += plugin.explain_hints(self.state, self.pod, view, rejected, others_pass)
            only.pop(name, None)
        for plugin_name, rows in only.items():
            reasons = Counter(r for row in rows for v in reports[row].filters
                              if v.plugin == plugin_name for r in v.reasons)
            verb = "fails" if len(rows) == 1 else "fail"
            hints.append(f"{nodes_phrase(len(rows))} {verb} only {plugin_name} "
                         f"({', '.join(sorted(reasons))})")
        return hints


# -- helpers ----------------------------------------------------------------------------------
def _counted(diagnosis: Diagnosis) -> dict[int, tuple[list[str], str]]:
    """Per node row, the reasons the FailedScheduling message counts and their plugin."""
    out: dict[int, tuple[list[str], str]] = {}
    for rows, reason, plugin in diagnosis.reasons:
        for row in rows.tolist():
            reasons, _ = out.setdefault(int(row), ([], plugin))
            if reason not in reasons:
                reasons.append(reason)
    return out


def _sorted_reports(reports: Iterable[NodeReport]) -> list[NodeReport]:
    """Feasible nodes first, highest total first; then the others by name."""
    return sorted(reports, key=lambda r: (not r.feasible, -(r.total or 0), r.node))
