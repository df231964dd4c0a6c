"""Where the CPU of a scheduling cycle went, on two trees: cProfile over the same pods of one
in-process scenario, the functions whose own time grew most listed first.

    .venv/bin/python bench/profile_compare.py 7475aab            # HEAD's working tree against it
    .venv/bin/python bench/profile_compare.py 7475aab --pods 2000
    .venv/bin/python bench/profile_compare.py 7475aab --count-bytecodes --pods 300

``bench/ab.py`` says whether one tree is slower; this says where. Timings on this host move
by several percent from one run to the next; ``--count-bytecodes`` does not: it counts the
bytecodes the interpreter runs per pod (sys.settrace with opcode events, on the scheduling
thread and the binding threads), in total, per module and per function (own and inclusive),
and apart, what the intake pays for the same pods (``PodInfo.from_pod``).
The threads' hand-off (threading.py, scheduler/binding_workers.py) depends on timing and is
left out of the total; its callees (the binding cycles) are counted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from ab import ROOT, _release_bindings, checked_out, settle_heap_of_the_tree

WARM_UP = 300
# Code whose bytecodes depend on when threads ran, not on the pods.
HAND_OFF_FILES = ("threading.py", "scheduler/binding_workers.py")
# The row that holds the intake's bytecodes (PodInfo.from_pod), apart from the cycle's.
INTAKE = "<intake: PodInfo.from_pod>"


class _ThreadCount:
    """One thread's bytecodes, per code object: own and inclusive (a recursive call counted
    once, at its outermost frame). Each thread keeps its own, so no count is lost when the
    interpreter switches threads inside the trace function."""

    def __init__(self) -> None:
        self.n = 0
        self.stack: list[list[int]] = []  # per traced frame: [count at entry, children's]
        self.own: Counter[CodeType] = Counter()
        self.inclusive: Counter[CodeType] = Counter()
        self.calls: Counter[CodeType] = Counter()
        self.active: Counter[CodeType] = Counter()

    def enter(self, frame: FrameType) -> Any:
        frame.f_trace_lines = False
        frame.f_trace_opcodes = True
        self.stack.append([self.n, 0])
        self.active[frame.f_code] += 1
        return self.local

    def local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            self.n += 1
        elif event == "return" and self.stack:
            entry, children = self.stack.pop()
            inclusive = self.n - entry
            code = frame.f_code
            self.own[code] += inclusive - children
            self.calls[code] += 1
            self.active[code] -= 1
            if not self.active[code]:
                self.inclusive[code] += inclusive
            if self.stack:
                self.stack[-1][1] += inclusive
        return self.local


class BytecodeCounter:
    """Counts while started; installed on every thread started after it is made."""

    def __init__(self) -> None:
        self.on = False
        self._local = threading.local()
        self._threads: list[_ThreadCount] = []
        threading.settrace(self.call)

    def call(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not self.on or frame.f_code.co_filename.endswith(HAND_OFF_FILES):
            return None
        thread: _ThreadCount | None = getattr(self._local, "count", None)
        if thread is None:
            thread = self._local.count = _ThreadCount()
            self._threads.append(thread)
        return thread.enter(frame)

    def start(self) -> None:
        self.on = True
        sys.settrace(self.call)

    def stop(self) -> None:
        sys.settrace(None)
        self.on = False

    def rows(self, tree: str) -> dict[str, tuple[int, int, int]]:
        """Per function: calls, own bytecodes, inclusive bytecodes."""
        rows: dict[str, tuple[int, int, int]] = {}
        for thread in self._threads:
            for code, own in thread.own.items():
                key = f"{_file_name(code.co_filename, tree)}:{code.co_qualname}"
                calls, mine, inclusive = rows.get(key, (0, 0, 0))
                rows[key] = (calls + thread.calls[code], mine + own,
                             inclusive + thread.inclusive[code])
        return rows


def _file_name(path: str, tree: str) -> str:
    """The interpreter's files under one name on both sides (the venv may be under a tree)."""
    return path.replace(sys.prefix, "<venv>").replace(tree + "/", "").replace(tree, "")


def profile(tree: str, scenario: str, pods: int, out: str, count_bytecodes: bool) -> None:
    """One side, in its own process: the tree's own scheduler and benchmark scenario."""
    sys.path[:0] = [tree, f"{tree}/bench"]
    import run  # the tree's own benchmark module

    from scheduler.cycle import schedule_one

    # Made before the scheduler, so that its binding threads are counted too.
    counter = BytecodeCounter() if count_bytecodes else None
    run.logs.configure("warning")
    sc = run.SCENARIOS[scenario]
    s = run.new_scheduler(sc.config)
    pending = sc.build(s, sc.nodes, sc.init_pods, WARM_UP + pods)
    s.snapshot.order()
    settle_heap_of_the_tree()  # as ab.py: collector pauses would land on whichever function ran
    for info in pending:
        s.pods[info.uid] = info
        s.queue.add(info)
    for _ in range(WARM_UP):
        schedule_one(s, timeout=0)
    _release_bindings(s, wait=True)
    if counter is not None:
        # The cycles sampled for per-plugin metrics are drawn from the random module.
        random.seed(0)
        counter.start()
        for _ in range(pods):
            schedule_one(s, timeout=0)
        _release_bindings(s, wait=True)
        counter.stop()
        rows = counter.rows(tree)
        # What the watch's intake pays for the same pods (work moved there from the cycle
        # shows): PodInfo.from_pod of each pod measured, on this thread alone.
        intake = BytecodeCounter()
        intake.start()
        for info in pending[WARM_UP:]:
            type(info).from_pod(info.raw)
        intake.stop()
        rows[INTAKE] = (pods, sum(r[1] for r in intake.rows(tree).values()), 0)
        Path(out).write_text(json.dumps(rows))
        return
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(pods):
        schedule_one(s, timeout=0)
    profiler.disable()
    rows = {f"{_file_name(f, tree)}:{name}": (calls, own, cum)
            for (f, _, name), (_, calls, own, cum, _) in pstats.Stats(profiler).stats.items()}
    Path(out).write_text(json.dumps(rows))


def side(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, list[float]]:
    subprocess.run([sys.executable, __file__, "--side", str(tree), "--scenario", args.scenario,
                    "--pods", str(args.pods), "--out", str(out),
                    *(["--count-bytecodes"] if args.count_bytecodes else [])],
                   check=True, env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"})
    rows: dict[str, list[float]] = json.loads(out.read_text())
    return rows


def base_side(args: argparse.Namespace, tmp: Path) -> dict[str, list[float]]:
    """The base revision's rows; with ``--keep-base``, kept in that directory by commit,
    scenario and pods, and read from there the next time (a commit does not change)."""
    base_tree = tmp / "base"
    with checked_out(args.base, base_tree) as commit:
        mode = "bytecodes" if args.count_bytecodes else "time"
        kept = (Path(args.keep_base) / f"{commit}-{args.scenario}-{args.pods}-{mode}.json"
                if args.keep_base else None)
        if kept is not None and kept.exists():
            rows: dict[str, list[float]] = json.loads(kept.read_text())
            return rows
        rows = side(base_tree, args, tmp / "base.json")
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(rows))
    return rows


def print_time(base: dict[str, list[float]], head: dict[str, list[float]],
               args: argparse.Namespace) -> None:
    zero = [0, 0.0, 0.0]
    per_pod = 1e6 / args.pods
    print(f"own time per pod (µs): base {sum(r[1] for r in base.values()) * per_pod:.0f}, "
          f"head {sum(r[1] for r in head.values()) * per_pod:.0f}")
    grown = sorted(set(base) | set(head),
                   key=lambda k: base.get(k, zero)[1] - head.get(k, zero)[1])
    for key in grown[:args.top]:
        b, h = base.get(key, zero), head.get(key, zero)
        print(f"{(h[1] - b[1]) * per_pod:+7.1f} µs/pod own  calls {b[0]}->{h[0]}  "
              f"cum {b[2] * per_pod:.1f}->{h[2] * per_pod:.1f}  {key[-100:]}")


def print_bytecodes(base: dict[str, list[float]], head: dict[str, list[float]],
                    args: argparse.Namespace) -> None:
    """Bytecodes per pod: the total, then per module and per function, the largest
    differences first (own: in the function itself; incl: with what it calls)."""
    pods: int = args.pods
    b_intake, h_intake = base.pop(INTAKE)[1] / pods, head.pop(INTAKE)[1] / pods

    def total(rows: dict[str, list[float]]) -> float:
        return float(sum(r[1] for r in rows.values())) / pods

    b_total, h_total = total(base), total(head)
    print(f"bytecodes per pod: base {b_total:,.0f}, head {h_total:,.0f} "
          f"({(h_total - b_total) / b_total:+.1%}), {pods} pods of {args.scenario}")
    print(f"intake (PodInfo.from_pod) per pod: base {b_intake:,.0f}, head {h_intake:,.0f}; "
          f"with the cycle: {(h_total + h_intake) / (b_total + b_intake) - 1:+.1%}")

    def by_module(rows: dict[str, list[float]]) -> dict[str, float]:
        modules: dict[str, float] = {}
        for key, (_, own, _) in rows.items():
            module = key.rsplit(":", 1)[0]
            modules[module] = modules.get(module, 0) + own
        return modules

    b_mod, h_mod = by_module(base), by_module(head)
    print("\nown bytecodes per pod, per module (head - base):")
    modules = sorted(set(b_mod) | set(h_mod),
                     key=lambda k: -abs(h_mod.get(k, 0) - b_mod.get(k, 0)))
    for key in modules[:args.top]:
        b_own, h_own = b_mod.get(key, 0), h_mod.get(key, 0)
        if h_own != b_own:
            print(f"{(h_own - b_own) / pods:+8.1f}  {b_own / pods:8.1f} -> "
                  f"{h_own / pods:8.1f}  {key}")
    zero = [0.0, 0.0, 0.0]
    print("\nper function (head - base), per pod: own, inclusive; calls per pod:")
    keys = sorted(set(base) | set(head),
                  key=lambda k: -abs(head.get(k, zero)[1] - base.get(k, zero)[1]))
    for key in keys[:args.top * 2]:
        b, h = base.get(key, zero), head.get(key, zero)
        if h[1] == b[1]:
            break
        print(f"{(h[1] - b[1]) / pods:+8.1f} own {(h[2] - b[2]) / pods:+8.1f} incl  "
              f"calls {b[0] / pods:.2f}->{h[0] / pods:.2f}  {key[-90:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("--scenario", default="replicaset-pods-5000x50000")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--count-bytecodes", action="store_true",
                        help="count bytecodes per pod (deterministic) instead of timing")
    parser.add_argument("--keep-base", metavar="DIR",
                        help="keep the base's rows in DIR and reuse them (e.g. /tmp/profile-base)")
    parser.add_argument("--side")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.side:
        profile(args.side, args.scenario, args.pods, args.out, args.count_bytecodes)
        return 0
    if not args.base:
        parser.error("a base revision is needed")
    with tempfile.TemporaryDirectory(prefix="profile-") as tmp:
        base = base_side(args, Path(tmp))
        head = side(ROOT, args, Path(tmp) / "head.json")
    (print_bytecodes if args.count_bytecodes else print_time)(base, head, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
