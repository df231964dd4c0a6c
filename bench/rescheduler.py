"""What one rescheduler pass costs the scheduling thread.

A realistic cluster (pods as the API returns them, 500 ReplicaSets, through the intake), then
empty nodes join, and one dry-run pass decides what to move. Reported: the pass's wall time,
candidates and evaluations, and the longest slice, which is the longest the scheduling loop
waits for the rescheduler between two cycles. Result: bench/results/rescheduler-pass.json
(rescheduler-pass-worst-case.json with ``--worst-case``: nothing qualifies, every
candidate is evaluated).

    python bench/rescheduler.py [--nodes 1000] [--pods 10000] [--new-nodes 50] [--worst-case]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import RESULTS, build_realistic, new_scheduler, node

from scheduler import logs
from scheduler.intake import Intake
from scheduler.rescheduling.rescheduler import Rescheduler
from scheduler.rescheduling.simulation import BUDGET, CONTROLLER_BUSY, LIMIT
from scheduler.scheduler import settle_heap


class _Quiet:
    def evict(self, victim: Any) -> Any:
        raise AssertionError("a dry run evicts nothing")

    def rescheduled(self, pod: Any, reason: str, note: str) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--new-nodes", type=int, default=50)
    parser.add_argument("--worst-case", action="store_true",
                        help="no move qualifies (minScoreGain out of reach), so every "
                             "candidate is evaluated")
    args = parser.parse_args()
    logs.configure("warning")
    section: dict[str, Any] = {"enabled": True, "dryRun": True}
    if args.worst_case:
        section["minScoreGain"] = 1_000_000
    s = new_scheduler({"rescheduler": section})
    build_realistic(s, args.nodes, args.pods, 0)
    intake = Intake(s)
    for i in range(args.nodes, args.nodes + args.new_nodes):
        intake.on_node(None, node(i))
    s.refresh()
    s.snapshot.order()
    settle_heap()
    quiet = _Quiet()
    rescheduler = Rescheduler(s, s.config.rescheduler, evictor=quiet,  # type: ignore[arg-type]
                              reporter=quiet)
    slices: list[float] = []
    plan_slice = rescheduler._plan_slice

    def timed(*a: Any) -> None:
        t0 = time.perf_counter()
        plan_slice(*a)
        slices.append(time.perf_counter() - t0)

    rescheduler._plan_slice = timed  # type: ignore[method-assign]
    start = time.perf_counter()
    report = rescheduler.run_once()
    elapsed = time.perf_counter() - start
    evaluated = sum(1 for v in report.verdicts
                    if v.reason not in (LIMIT, CONTROLLER_BUSY, BUDGET))
    result = {
        "nodes": args.nodes + args.new_nodes, "pods": args.pods,
        "pass_seconds": round(elapsed, 3),
        "candidates": len(report.verdicts), "evaluated": evaluated,
        "moves": len(report.moves),
        "ms_per_evaluation": round(sum(slices) * 1000 / max(evaluated, 1), 2),
        "slices": len(slices), "longest_slice_ms": round(max(slices, default=0) * 1000, 1),
        "python": sys.version.split()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    result["worst_case"] = args.worst_case
    name = "rescheduler-pass-worst-case" if args.worst_case else "rescheduler-pass"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    s.stop(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
