"""Where the CPU of a scheduling cycle went, on two trees: cProfile over the same pods of one
in-process scenario, the functions whose own time grew most listed first.

    .venv/bin/python bench/profile_compare.py 7475aab            # HEAD's working tree against it
    .venv/bin/python bench/profile_compare.py 7475aab --pods 2000

``bench/ab.py`` says whether one tree is slower; this says where.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

from ab import ROOT, checked_out, settle_heap_of_the_tree

WARM_UP = 300


def profile(tree: str, scenario: str, pods: int, out: str) -> None:
    """One side, in its own process: the tree's own scheduler and benchmark scenario."""
    sys.path[:0] = [tree, f"{tree}/bench"]
    import run  # the tree's own benchmark module

    from scheduler.cycle import schedule_one

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
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(pods):
        schedule_one(s, timeout=0)
    profiler.disable()
    # The interpreter's files under one name on both sides (the venv may be under a tree).
    rows = {f"{f.replace(sys.prefix, '<venv>').replace(tree, '')}:{name}": (calls, own, cum)
            for (f, _, name), (_, calls, own, cum, _) in pstats.Stats(profiler).stats.items()}
    Path(out).write_text(json.dumps(rows))


def side(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, list[float]]:
    subprocess.run([sys.executable, __file__, "--side", str(tree), "--scenario", args.scenario,
                    "--pods", str(args.pods), "--out", str(out)], check=True)
    rows: dict[str, list[float]] = json.loads(out.read_text())
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("--scenario", default="replicaset-pods-5000x50000")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--side")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.side:
        profile(args.side, args.scenario, args.pods, args.out)
        return 0
    if not args.base:
        parser.error("a base revision is needed")
    with tempfile.TemporaryDirectory(prefix="profile-") as tmp:
        base_tree = Path(tmp) / "base"
        with checked_out(args.base, base_tree):
            base = side(base_tree, args, Path(tmp) / "base.json")
        head = side(ROOT, args, Path(tmp) / "head.json")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
