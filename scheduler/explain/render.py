"""An :class:`~scheduler.explain.core.Explanation` for people (plain text within 100 columns,
colour only when asked) and for tools (JSON)."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Sequence
from typing import Any

from scheduler.explain.core import (
    SKIPPED,
    Explanation,
    FilterVerdict,
    NodeReport,
    PreemptionCandidate,
    PreemptionPreview,
    Victim,
)

WIDTH = 100
NODE_COLUMN = 30
# Column headings of the in-tree plugins; any other plugin is headed by its first letters.
SHORT = {
    "NodeName": "Name",
    "NodeUnschedulable": "Unsch",
    "TaintToleration": "Taint",
    "NodeAffinity": "NAff",
    "NodePorts": "Ports",
    "NodeResourcesFit": "Fit",
    "VolumeRestrictions": "VRst",
    "NodeVolumeLimits": "VLim",
    "VolumeBinding": "VBnd",
    "VolumeZone": "VZone",
    "PodTopologySpread": "Sprd",
    "InterPodAffinity": "PAff",
    "NodeResourcesBalancedAllocation": "Bal",
    "ImageLocality": "Img",
    "AvoidBounceBack": "Avoid",
    "NodeDeclaredFeatures": "Feat",
}
_RED, _YELLOW, _GREEN, _BOLD, _RESET = "\033[31m", "\033[33m", "\033[32m", "\033[1m", "\033[0m"


def to_json(explanation: Explanation, source: str) -> str:
    return json.dumps(as_dict(explanation, source), indent=2)


def as_dict(explanation: Explanation, source: str) -> dict[str, Any]:
    out = dataclasses.asdict(explanation)
    out["score_plugins"] = [{"name": n, "weight": w} for n, w in explanation.score_plugins]
    for node, report in zip(out["nodes"], explanation.nodes, strict=True):
        node["feasible"] = report.feasible
    return {"source": source, **out}


def from_dict(data: dict[str, Any]) -> Explanation:
    """The inverse of :func:`as_dict` (for answers that came as JSON)."""
    fields = {f.name for f in dataclasses.fields(Explanation)}
    out = Explanation(**{k: v for k, v in data.items() if k in fields})
    out.score_plugins = [(p["name"], int(p["weight"])) for p in data["score_plugins"]]
    out.nodes = [
        NodeReport(
            node=n["node"], counted=n["counted"], counted_plugin=n["counted_plugin"],
            filters=[FilterVerdict(**v) for v in n["filters"]], scores=n["scores"],
            total=n["total"],
        )
        for n in data["nodes"]
    ]
    preview = data.get("preemption")
    if preview is not None:
        out.preemption = PreemptionPreview(**preview)
        out.preemption.candidates = [
            PreemptionCandidate(c["node"], [Victim(**v) for v in c["victims"]],
                                c["pdb_violations"])
            for c in preview["candidates"]
        ]
    return out


def to_text(
    explanation: Explanation, source: str, *, colour: bool = False, max_nodes: int = 50
) -> str:
    paint = _Paint(colour)
    e = explanation
    lines = [
        paint.bold(f"Pod {e.pod}"),
        *_wrap(f"schedulerName {e.scheduler_name}, priority {e.priority}; explained with "
               f"profile {e.profile}; {source}", "  "),
        "",
        paint.bold(e.outcome.capitalize()),
        *_wrap(e.message, "  "),
    ]
    if e.nodes and e.nodes[0].filters:
        lines += ["", *_filter_table(e, paint, max_nodes)]
    if any(r.total is not None for r in e.nodes):
        lines += ["", *_score_table(e, paint, max_nodes)]
    if e.preemption is not None:
        lines += ["", *_preemption(e.preemption, paint)]
    for title, items in (("What would help", e.hints), ("Notes", e.notes)):
        if items:
            lines += ["", paint.bold(title)]
            for item in items:
                lines += _wrap(item, "  - ", "    ")
    return "\n".join(lines) + "\n"


def _filter_table(e: Explanation, paint: _Paint, max_nodes: int) -> list[str]:
    heads = [_short(p) for p in e.filter_plugins]
    widths = [max(len(h), 4) + 1 for h in heads]
    lines = [
        paint.bold("Filters: every plugin on every node"),
        *_wrap("FAIL: the reason FailedScheduling counts for the node; fail: fails as well; "
               "skip: PreFilter skipped the plugin for this pod. " + _legend(e.filter_plugins),
               "  "),
        _row("NODE", heads, widths),
    ]
    shown = e.nodes if max_nodes <= 0 else e.nodes[:max_nodes]
    for report in shown:
        cells = [_cell(report, i) for i in range(len(report.filters))]
        painted = [paint.verdict(c, w) for c, w in zip(cells, widths, strict=True)]
        lines.append(_node(report.node) + "".join(painted).rstrip())
        lines += _node_reasons(report)
    lines += _more(len(e.nodes) - len(shown))
    return lines


def _cell(report: NodeReport, i: int) -> str:
    verdict = report.filters[i]
    if verdict.code == "Success":
        return "ok"
    if verdict.code == SKIPPED:
        return "skip"
    return "FAIL" if verdict.plugin == report.counted_plugin else "fail"


def _node_reasons(report: NodeReport) -> list[str]:
    lines: list[str] = []
    failing = [v for v in report.filters if v.code not in ("Success", SKIPPED)]
    for verdict in failing:
        lines += _wrap(f"{verdict.plugin}: {', '.join(verdict.reasons)}", "    ", "      ")
        for detail in verdict.details:
            lines += _wrap(detail, "      ", "        ")
    if report.counted and report.counted_plugin not in {v.plugin for v in failing}:
        # Counted from a verdict the plain table does not show: nominated pods, or PreFilter.
        lines += _wrap(f"counted: {', '.join(report.counted)}", "    ", "      ")
    return lines


def _score_table(e: Explanation, paint: _Paint, max_nodes: int) -> list[str]:
    plugins = [(n, w) for n, w in e.score_plugins if any(n in r.scores for r in e.nodes)]
    heads = [f"{_short(n)}x{w}" for n, w in plugins]
    widths = [max(len(h), 3) + 1 for h in heads]
    feasible = [r for r in e.nodes if r.total is not None]
    shown = feasible if max_nodes <= 0 else feasible[:max_nodes]
    lines = [
        paint.bold("Scores of the feasible nodes"),
        *_wrap("Each plugin's normalised score (0-100), headed by its weight; TOTAL = sum of "
               "score x weight. " + _legend([n for n, _ in plugins]), "  "),
        _row("NODE", ["TOTAL", *heads], [7, *widths], right=True),
    ]
    for report in shown:
        cells = [str(report.total), *(str(report.scores.get(n, "-")) for n, _ in plugins)]
        lines.append(_row(report.node, cells, [7, *widths], right=True))
    lines += _more(len(feasible) - len(shown))
    return lines


def _preemption(p: PreemptionPreview, paint: _Paint) -> list[str]:
    lines = [paint.bold("Preemption (DefaultPreemption's dry run: nothing is evicted)")]
    if p.nominate is None:
        lines += _wrap(p.message, "  ")
    for i, candidate in enumerate(p.candidates):
        if i == 0:
            head = f"would nominate {candidate.node}"
            if p.tied:
                head += " (others are as good: the scheduler's pick among them is random)"
            head += ", evicting:"
        else:
            head = f"candidate {candidate.node}, would evict:"
        if candidate.pdb_violations:
            head += f" ({candidate.pdb_violations} PodDisruptionBudget violation(s))"
        lines += _wrap(head, "  ")
        for v in candidate.victims:
            text = f"{v.pod} (priority {v.priority})"
            if v.violates:
                text += f": would violate PodDisruptionBudget {v.violates}"
            elif v.budgets:
                text += f": within PodDisruptionBudget {', '.join(v.budgets)}"
            lines += _wrap(text, "    - ", "      ")
    if p.not_candidates:
        lines.append("  not candidates:")
        for node, reason in sorted(p.not_candidates.items()):
            lines += _wrap(f"{node}: {reason}", "    - ", "      ")
    return lines


# -- layout -----------------------------------------------------------------------------------
class _Paint:
    def __init__(self, on: bool) -> None:
        self.on = on

    def bold(self, text: str) -> str:
        return f"{_BOLD}{text}{_RESET}" if self.on else text

    def verdict(self, cell: str, width: int) -> str:
        padded = cell.ljust(width)
        if not self.on:
            return padded
        colour = {"FAIL": _RED, "fail": _YELLOW, "ok": _GREEN}.get(cell)
        return f"{colour}{padded}{_RESET}" if colour else padded


def _short(plugin: str) -> str:
    return SHORT.get(plugin, plugin[:5])


def _legend(plugins: Sequence[str]) -> str:
    return "Columns: " + ", ".join(f"{_short(p)} {p}" for p in plugins) + "."


def _node(name: str) -> str:
    if len(name) >= NODE_COLUMN:
        name = name[: NODE_COLUMN - 2] + "~"
    return name.ljust(NODE_COLUMN)


def _row(first: str, cells: Sequence[str], widths: Sequence[int], right: bool = False) -> str:
    body = "".join(
        (c.rjust(w - 1) + " ") if right else c.ljust(w) for c, w in zip(cells, widths, strict=True)
    )
    return (_node(first) + body).rstrip()


def _wrap(text: str, first: str, rest: str | None = None) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=first,
                         subsequent_indent=rest if rest is not None else first,
                         break_on_hyphens=False) or [first.rstrip()]


def _more(hidden: int) -> list[str]:
    if hidden <= 0:
        return []
    return [f"  ... and {hidden} more (--max-nodes 0 shows all; -o json lists every node)"]
