"""Time the structured allocator on scheduler_perf's DRA workloads (docs/dra.md, "Speed").

``test/integration/scheduler_perf/dra/performance-config.yaml``: 500 nodes, each with one
ResourceSlice of 10 devices (``resourceslice-basic-devices.yaml``: 13 attributes, two
capacities, PCI roots alternating), the class ``device.driver == "test-driver.cdi.k8s.io"``,
and a claim per pod from a template asking for one device. Initial claims are allocated as
upstream's ``allocResourceClaims`` does (a random node, its first free device).

Each pod is one scheduling cycle: the plugin's per-cycle allocator is taken from one
long-lived ``AllocatorCache``; Filter calls ``allocate`` node after node from where the last
cycle stopped until 230 feasible nodes are found (percentageOfNodesToScore's adaptive 46 %
of 500) or every node was tried; the pod goes to a random feasible node. ``burst`` keeps the
pods' devices allocated (SchedulingWithResourceClaimTemplate 5000pods_500nodes: 2,500
allocated, 2,500 pods); ``steady`` releases them (SteadyStateClusterResourceClaimTemplate:
empty 0, half 2,500, full 4,990 allocated). Times are
CPU time of this process (the 2-core machine is shared), in µs per ``allocate`` call;
"first" is one pass over every node before the first pod, with new slice objects (CEL inputs,
verdicts and node views built), "warm" the pods' cycles after it.
``search`` runs the same without the fast path (``Allocator.search``), for comparison.
JSON: bench/results/dra-allocator.json.

    .venv/bin/python bench/dra_allocator.py [--pods 200] [--burst-pods 2500]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler.model.dra import (
    AllocationResult,
    DeviceClass,
    DeviceID,
    ResourceClaim,
    ResourceSlice,
)
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    Allocator,
    AllocatorCache,
)

RESULTS = Path(__file__).resolve().parent / "results"
DRIVER = "test-driver.cdi.k8s.io"
NODES = 500
DEVICES = 10
TO_FIND = 230
SELECTOR = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)
Allocate = Callable[[Allocator, str, ResourceClaim], "list[AllocationResult] | None"]


def node_name(i: int) -> str:
    return f"scheduler-perf-dra-{i}"


def slice_object(i: int, node: str) -> dict[str, Any]:
    """The ResourceSlice of node ``i`` (``resourceslice-basic-devices.yaml``), as the API
    serves it."""
    def device(d: int) -> dict[str, Any]:
        root = d % 2
        return {"name": f"basic-device-{d}", "attributes": {
            "driver": {"string": "xe"}, "driverVersion": {"version": "1.2.3"},
            "resource.k8s.io/pciRoot": {"string": str(root)},
            "family": {"string": "Arc Pro B-Series"}, "health": {"string": "Healthy"},
            "model": {"string": "B60"}, "pciAddress": {"string": f"0000:0{d}:00.0"},
            "pciId": {"string": "0xe211"}, "pciRoot": {"string": f"0{root}"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:0{d}:00.0"},
            "resource.kubernetes.io/pciRoot": {"string": f"pci0000:0{root}"},
            "sriov": {"bool": True}, "type": {"string": "gpu"}},
            "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}}

    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"resourceslice-{i}"}, "spec": {
                "driver": DRIVER, "nodeName": node,
                "pool": {"name": f"resourceslice-{i}", "generation": 1, "resourceSliceCount": 1},
                "devices": [device(d) for d in range(DEVICES)]}}


DEVICE_CLASS_OBJECT = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "test-class"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def node_slice(i: int) -> ResourceSlice:
    return ResourceSlice.parse(slice_object(i, node_name(i)))


def device_class() -> DeviceClass:
    return DeviceClass.parse(DEVICE_CLASS_OBJECT)


def pod_claim(i: int, shape: str) -> ResourceClaim:
    exactly: dict[str, Any] = {"deviceClassName": "test-class"}
    if shape == "selector":
        exactly["selectors"] = [{"cel": {"expression": SELECTOR}}]
    requests = 5 if shape == "match" else 1
    devices: dict[str, Any] = {
        "requests": [{"name": f"req-{r}", "exactly": exactly} for r in range(requests)]}
    if shape == "match":
        devices["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pciRoot"}]
    return ResourceClaim.parse({"metadata": {"namespace": "test", "name": f"test-dra-{i}"},
                                "spec": {"devices": devices}})


def initial_allocation(count: int, rng: random.Random) -> set[DeviceID]:
    """``allocResourceClaims``: one device each, a random node with a free device, its first."""
    allocated: set[DeviceID] = set()
    free = {i: list(range(DEVICES)) for i in range(NODES)}
    with_free = list(range(NODES))
    for _ in range(count):
        n = rng.choice(with_free)
        d = free[n].pop(0)
        if not free[n]:
            with_free.remove(n)
        allocated.add((DRIVER, f"resourceslice-{n}", f"basic-device-{d}"))
    return allocated


def one_cycle(
    cache: AllocatorCache, state: AllocatedState, classes: dict[str, DeviceClass],
    slices: list[ResourceSlice], claim: ResourceClaim, start: int, fn: Allocate,
) -> tuple[float, int, int, list[AllocationResult] | None]:
    """PreFilter + Filter of one pod: (CPU seconds, nodes tried, next start, a chosen result)."""
    began = time.process_time()
    allocator = cache.allocator(state, classes, slices, slices_key=id(slices))
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


def first_pass(
    cache: AllocatorCache, state: AllocatedState, classes: dict[str, DeviceClass],
    slices: list[ResourceSlice], claim: ResourceClaim, fn: Allocate,
) -> float:
    """CPU seconds per node of one pass over every node with new slices (nothing kept)."""
    began = time.process_time()
    allocator = cache.allocator(state, classes, slices, slices_key=id(slices))
    for k in range(NODES):
        fn(allocator, node_name(k), claim)
    return (time.process_time() - began) / NODES


def scenario(name: str, allocated: int, pods: int, burst: bool, shape: str,
             fn: Allocate) -> dict[str, Any]:
    rng = random.Random(1)
    random.seed(2)
    in_use = initial_allocation(allocated, rng)
    slices = [node_slice(i) for i in range(NODES)]
    classes = {"test-class": device_class()}
    cache = AllocatorCache()
    first = first_pass(cache, AllocatedState(devices=frozenset(in_use)), classes, slices,
                       pod_claim(-1, shape), fn)
    start, cpu, tried_total, scheduled = 0, 0.0, 0, 0
    for p in range(pods):
        state = AllocatedState(devices=frozenset(in_use))
        spent, tried, start, chosen = one_cycle(
            cache, state, classes, slices, pod_claim(p, shape), start, fn)
        cpu += spent
        tried_total += tried
        if chosen is not None:
            scheduled += 1
            if burst:
                in_use.update((r.driver, r.pool, r.device) for r in chosen[0].results)
    return {
        "scenario": name, "shape": shape, "path": fn.__name__, "allocated_at_start": allocated,
        "pods": pods, "scheduled": scheduled, "nodes_tried_per_pod": tried_total / pods,
        "first_pass_us_per_node": first * 1e6,
        "warm_us_per_node": cpu / tried_total * 1e6,
        "warm_ms_per_pod": cpu / pods * 1e3,
        "allocator_pods_per_s": pods / cpu,
    }


SCENARIOS = (
    # name, allocated at start, burst, shape
    ("5000pods_500nodes", 2500, True, "plain"),
    ("empty_500nodes", 0, False, "plain"),
    ("half_500nodes", 2500, False, "plain"),
    ("full_500nodes", 4990, False, "plain"),
    ("selector_empty_500nodes", 0, False, "selector"),
    ("match_empty_500nodes", 0, False, "match"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=200, help="pods per steady-state case")
    parser.add_argument("--burst-pods", type=int, default=2500)
    parser.add_argument("--no-search", action="store_true", help="skip the full-search rows")
    args = parser.parse_args()
    rows = []
    paths: list[Allocate] = [fast] if args.no_search else [fast, full_search]
    for name, allocated, burst, shape in SCENARIOS:
        for fn in paths:
            pods = args.burst_pods if burst else args.pods
            if fn is full_search:
                pods = min(pods, 20)
            row = scenario(name, allocated, pods, burst, shape, fn)
            rows.append(row)
            print(f"{name:24s} {fn.__name__:11s} "
                  f"first {row['first_pass_us_per_node']:7.1f} us/node  "
                  f"warm {row['warm_us_per_node']:6.1f} us/node x "
                  f"{row['nodes_tried_per_pod']:5.1f} nodes = {row['warm_ms_per_pod']:6.2f} ms/pod "
                  f"({row['allocator_pods_per_s']:6.1f} pods/s)", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "dra-allocator.json"
    out.write_text(json.dumps({"argv": sys.argv[1:], "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
