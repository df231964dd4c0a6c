"""Two versions of the scheduler measured in lockstep, on the same host at the same time.

This machine's speed moves by half from one minute to the next, so two benchmark runs one
after the other compare the hours they ran in more than the code. Here each version builds
the scenario in a process of its own, warms up, and then the two take turns on blocks of
pods (A B, B A, A B...): both see the same host, and each pair of adjacent blocks gives a
speed ratio. The answer is the median of those ratios and how many pairs each side won.

    python bench/ab.py BASE_REF [--head REF] [--blocks 40] [--block-pods 128]

``BASE_REF`` (and ``--head``, else the working tree) is checked out in a temporary
``git worktree``; each side runs its own ``bench/run.py`` scenario builder, settles its
heap and places its threads as its own benchmark does. The result goes to
bench/results/ab-<base>-<head>.json (ab-<scenario>-<base>-<head>.json for another
``--scenario``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SCENARIO = "replicaset-pods-5000x50000"
WARM_UP_PODS = 200


def worker(tree: str, scenario: str, block_pods: int, blocks: int, cpu: int) -> None:
    """One side: build and warm up, then run a block of pods per line read on stdin and
    answer with the block's process CPU and wall time per pod, in microseconds. Its threads
    run on ``cpu``, the other side's CPU: the sides take turns, so they share one CPU's
    neighbours too (pinned where each happened to start, three runs of the same two trees
    on the shared host gave CPU-time ratios of 0.86, 0.96 and 0.74)."""
    sys.path[:0] = [tree, f"{tree}/bench"]
    import run  # the tree's own benchmark module

    from scheduler.cycle import schedule_one

    run.logs.configure("warning")
    sc = run.SCENARIOS[scenario]
    s = run.new_scheduler(sc.config)
    pending = sc.build(s, sc.nodes, sc.init_pods, WARM_UP_PODS + block_pods * blocks)
    s.snapshot.order()
    settle_heap_of_the_tree()
    single_cpu = _single_cpu_of_the_tree()
    if single_cpu is not None:
        single_cpu()  # as its app and its benchmark do
        _pin_all_threads(cpu)
    for info in pending:
        s.pods[info.uid] = info
        s.queue.add(info)
    for _ in range(WARM_UP_PODS):
        schedule_one(s, timeout=0)
    _release_bindings(s, wait=False)
    print("ready", flush=True)
    for _ in sys.stdin:
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(block_pods):
            schedule_one(s, timeout=0)
        _release_bindings(s, wait=True)  # the block's bindings are its own
        print(f"{(time.process_time() - cpu) / block_pods * 1e6:.2f} "
              f"{(time.perf_counter() - wall) / block_pods * 1e6:.2f}", flush=True)


def settle_heap_of_the_tree() -> None:
    """The tree's ``settle_heap`` once its cluster is built, or what its benchmark did
    before that existed."""
    from scheduler import scheduler as scheduler_module

    settle = getattr(scheduler_module, "settle_heap", None)
    if settle is not None:
        settle()
    else:
        gc.collect()
        gc.freeze()


def _pin_all_threads(cpu: int) -> None:
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), {cpu})


def _single_cpu_of_the_tree() -> Any:
    """The tree's ``single_cpu``, wherever its version keeps it; None before it existed (the
    kernel placed the threads)."""
    for module in ("scheduler.operator.cpu_affinity", "scheduler.cpu_affinity"):
        try:
            return importlib.import_module(module).single_cpu
        except ImportError:
            continue
    return None


def _release_bindings(s: Any, *, wait: bool) -> None:
    """Hand the held binding cycles over and, with ``wait``, wait for them to end."""
    bindings = getattr(s, "bindings", None)
    if bindings is None:  # versions before BindingBatch
        s.release_bindings(now=True)
        if wait:
            s._binding_workers.wait_idle(10)
        return
    bindings.release(now=True)
    if wait:
        bindings.wait_idle(10)


@contextlib.contextmanager
def checked_out(ref: str, into: Path) -> Iterator[str]:
    """``ref`` as a detached worktree at ``into`` while the block runs; its short hash."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(into), ref],
                   check=True)
    try:
        yield subprocess.run(["git", "-C", str(into), "rev-parse", "--short", "HEAD"],
                             check=True, capture_output=True, text=True).stdout.strip()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(into)],
                       check=False)


def _side(tree: Path, args: argparse.Namespace) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", str(tree),
         "--scenario", args.scenario, "--block-pods", str(args.block_pods),
         "--blocks", str(args.blocks), "--cpu", str(args.cpu)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"},
    )


def compare(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp, contextlib.ExitStack() as trees:
        base_tree = Path(tmp) / "base"
        base = trees.enter_context(checked_out(args.base, base_tree))
        if args.head:
            head_tree = Path(tmp) / "head"
            head = trees.enter_context(checked_out(args.head, head_tree))
        else:
            head_tree, head = ROOT, "working-tree"
        sides = {"base": _side(base_tree, args), "head": _side(head_tree, args)}
        for name, proc in sides.items():
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"the {name} side did not start")
        times: dict[str, list[tuple[float, float]]] = {"base": [], "head": []}
        for k in range(args.blocks):
            for name in ("base", "head") if k % 2 == 0 else ("head", "base"):
                proc = sides[name]
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
                cpu, wall = (float(v) for v in proc.stdout.readline().split())
                times[name].append((cpu, wall))
        for proc in sides.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)
    ratios = [b[1] / h[1] for b, h in zip(times["base"], times["head"], strict=True)]
    # The same from process CPU time: a side's wall time also counts the moments its pinned
    # CPU ran somebody else (an A/A run on a shared host gave 1.10 by wall time, 1.00 by CPU).
    cpu_ratios = [b[0] / h[0] for b, h in zip(times["base"], times["head"], strict=True)]
    return {
        "scenario": args.scenario,
        "base": base,
        "head": head,
        "blocks": args.blocks,
        "block_pods": args.block_pods,
        "head_speed_over_base_median": round(statistics.median(ratios), 3),
        "head_faster_blocks": sum(1 for r in ratios if r > 1),
        "head_cpu_speed_over_base_median": round(statistics.median(cpu_ratios), 3),
        **{f"{name}_pods_per_second": round(1e6 / statistics.mean(w for _, w in v), 1)
           for name, v in times.items()},
        **{f"{name}_cpu_us_per_pod_median": round(statistics.median(c for c, _ in v), 1)
           for name, v in times.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("--head")
    parser.add_argument("--scenario", default=SCENARIO)
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--block-pods", type=int, default=128)
    parser.add_argument("--worker")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                        help="the CPU both sides run on")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.scenario, args.block_pods, args.blocks, args.cpu)
        return 0
    if not args.base:
        parser.error("a base ref is required")
    result = compare(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    # The default scenario keeps its old name; another one does not overwrite it.
    scenario = "" if args.scenario == SCENARIO else f"{args.scenario}-"
    out = RESULTS / f"ab-{scenario}{result['base']}-{result['head']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
