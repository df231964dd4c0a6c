"""Time the structured allocator on scheduler_perf's DRA workloads (docs/dra.md, "Speed").

The workloads are ``bench/e2e.py``'s (``dra_workloads`` at 500 nodes: each shape's slices,
classes, template claim and init claims, placed as there): upstream's
``dra/performance-config.yaml`` (SchedulingWithResourceClaimTemplate: one slice of 10 devices
of 13 attributes per node, the class ``device.driver == "test-driver.cdi.k8s.io"``, a claim per
pod asking for one device; ``selector_*`` adds a CEL selector, ``match_*`` five requests under
a ``matchAttribute``), FirstAvailable (dra/prioritizedlist), ConsumableCapacity
(dra/consumablecapacity: shares of shareable devices), Partitionable and
PartitionableBacktracking (dra/partitionabledevices: shared counters).

Each pod is one scheduling cycle: the plugin's per-cycle allocator is taken from one
long-lived ``AllocatorCache``; Filter calls ``allocate`` node after node from where the last
cycle stopped until 230 feasible nodes are found (percentageOfNodesToScore's adaptive 46 %
of 500) or every node was tried; the pod goes to a random feasible node. A burst workload
(5000pods_500nodes: 2,500 allocated, 2,500 pods) keeps the pods' allocations; a steady state
(empty, half, full) releases them. Times are CPU time of this process (the 2-core machine is
shared), in µs per ``allocate`` call; "first" is one pass over every node before the first
pod, with new slice objects (CEL inputs, verdicts and node views built), "warm" the pods'
cycles after it. ``search`` runs the same without the fast path (``Allocator.search``), for
comparison. JSON: bench/results/dra-allocator.json.

    .venv/bin/python bench/dra_allocator.py [--pods 200] [--burst-pods 2500]
    .venv/bin/python bench/dra_allocator.py --workloads PartitionableBacktracking/full_500nodes
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from scheduler.cache.dra_objects import RESOURCE_CLAIMS, DraObjects
from scheduler.model.dra import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    Allocator,
    AllocatorCache,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def bench_e2e() -> Any:
    """bench/e2e.py, whose DRA shapes are used here (its name is the e2e package's too)."""
    found = sys.modules.get("bench_e2e")
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location("bench_e2e", ROOT / "bench" / "e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_e2e"] = module
    spec.loader.exec_module(module)
    return module


E2E = bench_e2e()
NODES = 500
TO_FIND = 230
WORKLOADS = E2E.dra_workloads(NODES)
Allocate = Callable[[Allocator, str, ResourceClaim], "list[AllocationResult] | None"]


def node_name(i: int) -> str:
    return f"scheduler-perf-dra-{i}"


class Cluster:
    """One workload's slices, classes and claims in use, as the plugin reads them."""

    def __init__(self, shape: Any, init_claims: int) -> None:
        self.shape = shape
        names = [node_name(i) for i in range(NODES)]
        self.slices = [ResourceSlice.parse(s) for n in names for s in shape.slices(n)]
        self.classes = {c.name: c for c in map(DeviceClass.parse, shape.classes)}
        self.objects = DraObjects()
        for i, (n, k) in enumerate(E2E.init_units(names, shape)[:init_claims]):
            self.objects.upsert(RESOURCE_CLAIMS, f"init/test-claim-{i}", ResourceClaim.parse({
                "metadata": {"namespace": "init", "name": f"test-claim-{i}", "uid": f"i-{i}"},
                "spec": shape.init_claim, "status": {"allocation": shape.allocation(n, k)}}))

    def state(self) -> AllocatedState:
        """What PreFilter reads (``DraObjects.allocated``)."""
        held = self.objects.allocated()
        return AllocatedState(held.devices, held.shared_devices, held.consumed)

    def pod_claim(self, i: int) -> ResourceClaim:
        return ResourceClaim.parse({"metadata": {"namespace": "test", "name": f"test-dra-{i}",
                                                 "uid": f"p-{i}"}, "spec": self.shape.template})

    def keep(self, claim: ResourceClaim, allocation: AllocationResult) -> None:
        self.objects.upsert(RESOURCE_CLAIMS, claim.key, replace(claim, allocation=allocation))


def one_cycle(
    cache: AllocatorCache, cluster: Cluster, state: AllocatedState, claim: ResourceClaim,
    start: int, fn: Allocate,
) -> tuple[float, int, int, list[AllocationResult] | None]:
    """PreFilter + Filter of one pod: (CPU seconds, nodes tried, next start, a chosen result)."""
    began = time.process_time()
    allocator = cache.allocator(state, cluster.classes, cluster.slices,
                                slices_key=id(cluster.slices))
    feasible: list[list[AllocationResult]] = []
    tried = 0
    for k in range(NODES):
        tried += 1
        got = fn(allocator, node_name((start + k) % NODES), claim)
        if got is not None:
            feasible.append(got)
            if len(feasible) == TO_FIND:
                break
    spent = time.process_time() - began
    return spent, tried, (start + tried) % NODES, (random.choice(feasible) if feasible else None)


def fast(allocator: Allocator, node: str, claim: ResourceClaim) -> list[AllocationResult] | None:
    return allocator.allocate(node, {}, [claim])


def full_search(
    allocator: Allocator, node: str, claim: ResourceClaim
) -> list[AllocationResult] | None:
    return allocator.search(allocator.view.node(node, {}), [claim])


def first_pass(cache: AllocatorCache, cluster: Cluster, claim: ResourceClaim,
               fn: Allocate) -> float:
    """CPU seconds per node of one pass over every node with new slices (nothing kept)."""
    began = time.process_time()
    allocator = cache.allocator(cluster.state(), cluster.classes, cluster.slices,
                                slices_key=id(cluster.slices))
    for k in range(NODES):
        fn(allocator, node_name(k), claim)
    return (time.process_time() - began) / NODES


def scenario(name: str, pods: int, fn: Allocate) -> dict[str, Any]:
    workload = WORKLOADS[name]
    burst = workload.stream is None
    random.seed(2)
    cluster = Cluster(workload.dra, workload.init_claims)
    cache = AllocatorCache()
    first = first_pass(cache, cluster, cluster.pod_claim(-1), fn)
    start, cpu, state_cpu, tried_total, scheduled = 0, 0.0, 0.0, 0, 0
    for p in range(pods):
        began = time.process_time()
        state = cluster.state()
        state_cpu += time.process_time() - began
        claim = cluster.pod_claim(p)
        spent, tried, start, chosen = one_cycle(cache, cluster, state, claim, start, fn)
        cpu += spent
        tried_total += tried
        if chosen is not None:
            scheduled += 1
            if burst:
                cluster.keep(claim, chosen[0])
    return {
        "scenario": name, "path": fn.__name__, "allocated_at_start": workload.init_claims,
        "pods": pods, "scheduled": scheduled, "nodes_tried_per_pod": tried_total / pods,
        "first_pass_us_per_node": first * 1e6,
        "warm_us_per_node": cpu / tried_total * 1e6,
        "warm_ms_per_pod": cpu / pods * 1e3,
        "allocator_pods_per_s": pods / cpu,
        "allocated_state_ms_per_pod": state_cpu / pods * 1e3,
    }


TEMPLATE = "SchedulingWithResourceClaimTemplate"
SCENARIOS = (
    f"{TEMPLATE}/5000pods_500nodes", f"{TEMPLATE}/empty_500nodes", f"{TEMPLATE}/half_500nodes",
    f"{TEMPLATE}/full_500nodes", f"{TEMPLATE}/selector_empty_500nodes",
    f"{TEMPLATE}/match_empty_500nodes", "FirstAvailable/empty_500nodes",
    "Partitionable/half_500nodes", "PartitionableBacktracking/full_500nodes",
    "ConsumableCapacity/half_500nodes",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=200, help="pods per steady-state case")
    parser.add_argument("--burst-pods", type=int, default=2500)
    parser.add_argument("--no-search", action="store_true", help="skip the full-search rows")
    parser.add_argument("--workloads", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(sorted(WORKLOADS))}")
    args = parser.parse_args()
    rows = []
    paths: list[Allocate] = [fast] if args.no_search else [fast, full_search]
    for name in args.workloads.split(","):
        for fn in paths:
            pods = args.pods if WORKLOADS[name].stream is not None else args.burst_pods
            if fn is full_search:
                pods = min(pods, 20)
            row = scenario(name, pods, fn)
            rows.append(row)
            print(f"{name:56s} {fn.__name__:11s} "
                  f"first {row['first_pass_us_per_node']:7.1f} us/node  "
                  f"warm {row['warm_us_per_node']:6.1f} us/node x "
                  f"{row['nodes_tried_per_pod']:5.1f} nodes = {row['warm_ms_per_pod']:6.2f} ms/pod "
                  f"({row['allocator_pods_per_s']:6.1f} pods/s; state "
                  f"{row['allocated_state_ms_per_pod']:.2f} ms)", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "dra-allocator.json"
    out.write_text(json.dumps({"argv": sys.argv[1:], "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
