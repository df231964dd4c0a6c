"""Start-up: time from the scheduler's process start to its first bind, repeated, median.

What every failover and restart costs before the first pod is placed. Each run is one of
bench/e2e.py's (its Bench and run_one, on the same ``.cluster-bench`` control plane): the DRA
shape of scheduler_perf's SchedulingWithResourceClaimTemplate on N kwok nodes, half the
devices allocated beforehand, then a few pending pods with claims from the template, and the
scheduler started cold. ``first_bind_s`` is bench/e2e.py's figure; the rest of each run's
summary is left out.

    flock /tmp/e2e.lock .venv/bin/python bench/startup.py                # 500 nodes, 5 runs each
    flock /tmp/e2e.lock .venv/bin/python bench/startup.py --schedulers ours --repeats 3

Where PYTHONDONTWRITEBYTECODE is set (as in some sandboxes), every start of ours compiles
its modules from source, some 0.4 s of CPU that the image, compiled at build
(Dockerfile: compileall), does not spend: ``env -u PYTHONDONTWRITEBYTECODE`` in front
measures that case (the first run writes the bytecode).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from dra_allocator import ROOT, bench_e2e


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=50, help="pending pods with claims")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--schedulers", default="kube-scheduler,ours")
    parser.add_argument("--keep-cluster", action="store_true")
    args = parser.parse_args(argv)
    e2e = bench_e2e()
    devices = args.nodes * e2e.DRA_DEVICES_PER_NODE
    workload = e2e.Workload(f"startup/{args.pods}pods_{args.nodes}nodes",
                            lambda _: e2e._many(e2e.dra_pod, "p", args.pods),
                            init_claims=devices // 2, dra=e2e.BASIC)
    cluster = e2e.Cluster(os.environ.get("BENCH_CLUSTER_DIR") or ROOT / ".cluster-bench")
    cluster.up(node_lease_seconds=e2e.lease_seconds_for(args.nodes))
    workdir = cluster.state_dir / "bench"
    workdir.mkdir(exist_ok=True)
    schedulers = args.schedulers.split(",")
    first_binds: dict[str, list[float]] = {name: [] for name in schedulers}
    try:
        bench = e2e.Bench(cluster, workdir)
        bench.setup(args.nodes, dra=True)
        for repeat in range(args.repeats):
            # Alternate who goes first, as bench/e2e.py does.
            for scheduler in schedulers if repeat % 2 == 0 else schedulers[::-1]:
                result = bench.run_one(workload, scheduler, 1000, 1000, repeat)
                print(f"{scheduler}: first bind {result['first_bind_s']} s "
                      f"(load {result['load_before']})", flush=True)
                if result["first_bind_s"] is not None:
                    first_binds[scheduler].append(result["first_bind_s"])
        bench.clean()
    finally:
        if not args.keep_cluster:
            cluster.down()
    for scheduler, values in first_binds.items():
        if values:
            print(f"{scheduler}: median first bind {statistics.median(values):.3f} s of "
                  f"{len(values)} runs: {sorted(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
