"""Pods with claims per second, in process: whole scheduling cycles through ``scheduler.testing``.

500 nodes, each with one ResourceSlice of 10 devices (13 attributes, two capacities, as in
``bench/e2e.py``'s BASIC: scheduler_perf's ``resourceslice-basic-devices.yaml``), the class
``device.driver == "test-driver.cdi.k8s.io"``, and ``--pods`` pending pods, each with a claim
from a template asking for one device (the claim exists, is owned by the pod and named in the
pod's ``status.resourceClaimStatuses``, as the resourceclaim controller leaves it), with
``--allocated`` devices already held by claims of no pending pod (scheduler_perf's
allocResourceClaims: half_500nodes holds 2,500, full_500nodes 4,990). Every
cycle runs the default profile: PreFilter, Filter over the nodes, Score, Reserve, PreBind
(the claim's allocation written through recording ports) and the binding. Each run times
``run_cycles`` in wall time and in CPU time of this process; on the shared 2-core machine
the CPU figure (pods per CPU second) is the one to compare, the median of ``--runs``.
JSON: bench/results/dra-burst.json.

``--shape`` picks another of ``bench/e2e.py``'s scheduler_perf setups instead (slices, classes,
the template's claim spec, and ``--allocated`` init claims placed as there, ``per_node`` on
each node of a shuffled order): ``partitionable`` and ``backtracking``
(dra/partitionabledevices: counters), ``consumable`` (dra/consumablecapacity: shares).

    .venv/bin/python bench/dra_burst.py [--pods 1000] [--runs 3] [--allocated 4900]
    .venv/bin/python bench/dra_burst.py --shape backtracking --pods 100 --allocated 400
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dra_allocator import NODES, bench_e2e  # noqa: E402

from scheduler.testing import node, pod, run_cycles, scheduler_of  # noqa: E402

RESULTS = ROOT / "bench" / "results"
_E2E = bench_e2e()
DraShape = _E2E.DraShape
SHAPES = {"basic": None, "partitionable": _E2E.PARTITIONABLE, "backtracking": _E2E.BACKTRACKING,
          "consumable": _E2E.CONSUMABLE}


def template_claim(i: int, shape: DraShape | None = None) -> dict[str, Any]:
    """The claim the resourceclaim controller made from the pod's template."""
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
        "name": f"pod-{i}-gpu", "namespace": "default", "uid": f"claim-uid-{i}",
        "resourceVersion": "1", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{i}", "uid": f"pod-uid-{i}",
             "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
            "deviceClassName": "test-class", "allocationMode": "ExactCount", "count": 1}}]}}}
    if shape is not None:
        claim["spec"] = shape.template
    return claim


def shape_claims(shape: DraShape, count: int, nodes: list[str]) -> list[dict[str, Any]]:
    """``count`` init claims in namespace ``init``: ``shape.per_node`` on each node of a
    shuffled order, the k-th of a node allocated ``shape.allocation(node, k)``."""
    order = list(nodes)
    random.Random(1).shuffle(order)
    placed = [(n, k) for n in order for k in range(shape.per_node)][:count]
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
        "name": f"test-claim-{i}", "namespace": "init", "uid": f"init-uid-{i}",
        "resourceVersion": "1"}, "spec": shape.init_claim,
        "status": {"allocation": shape.allocation(n, k)}} for i, (n, k) in enumerate(placed)]


def claiming_pod(i: int) -> dict[str, Any]:
    return pod(f"pod-{i}", uid=f"pod-uid-{i}", cpu="100m", spec={"resourceClaims": [
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]},
        status={"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"pod-{i}-gpu"}]})


def allocated_claims(count: int, slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``count`` claims in namespace ``init``, each allocated one device of a random node
    (the same devices for the same count)."""
    units = [(s["spec"]["nodeName"], s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
             for s in slices for d in s["spec"]["devices"]]
    random.Random(1).shuffle(units)

    def claim(i: int, node_name: str, driver: str, pool: str, device: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
            "name": f"test-claim-{i}", "namespace": "init", "uid": f"init-uid-{i}",
            "resourceVersion": "1"},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
                "deviceClassName": "test-class", "allocationMode": "ExactCount", "count": 1}}]}},
            "status": {"allocation": {"devices": {"results": [{
                "request": "req-0", "driver": driver, "pool": pool, "device": device}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
                    "key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}}

    return [claim(i, *unit) for i, unit in enumerate(units[:count])]


def dra_objects(shape: DraShape | None, allocated: int) -> list[dict[str, Any]]:
    """Classes, slices and init claims of the shape (None: the basic devices above)."""
    names = [f"node-{i}" for i in range(NODES)]
    if shape is None:
        slices = [s for n in names for s in _E2E.basic_slices(n)]
        return [*_E2E.BASIC.classes, *slices, *allocated_claims(allocated, slices)]
    return [*shape.classes, *(s for n in names for s in shape.slices(n)),
            *shape_claims(shape, allocated, names)]


def one_run(pods: int, allocated: int, shape: DraShape | None = None) -> dict[str, Any]:
    nodes = [node(f"node-{i}", cpu="64", memory="256Gi") for i in range(NODES)]
    storage = [*dra_objects(shape, allocated), *(template_claim(i, shape) for i in range(pods))]
    s, ports = scheduler_of(nodes=nodes, pods=[claiming_pod(i) for i in range(pods)],
                            storage=storage)
    try:
        gc.collect()
        started, cpu_started = time.perf_counter(), time.process_time()
        run_cycles(s)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    finally:
        s.stop(timeout=5)
    bound = len(ports.bound)
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "bound": bound,
            "pods_per_second": round(bound / seconds, 1),
            "pods_per_cpu_second": round(bound / cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--allocated", type=int, default=0,
                        help="devices held beforehand by claims of no pending pod")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="basic",
                        help="bench/e2e.py's DRA setup (basic: the devices above)")
    parser.add_argument("--label", default="", help="stored with the figures (e.g. a commit)")
    args = parser.parse_args()
    runs = [one_run(args.pods, args.allocated, SHAPES[args.shape]) for _ in range(args.runs)]
    result = {"nodes": NODES, "shape": args.shape, "pods": args.pods,
              "allocated": args.allocated,
              "label": args.label, "runs": runs,
              "pods_per_second_median": statistics.median(r["pods_per_second"] for r in runs),
              "pods_per_cpu_second_median": statistics.median(
                  r["pods_per_cpu_second"] for r in runs)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "-".join(["dra-burst", *([args.shape] if args.shape != "basic" else []),
                     *([args.label] if args.label else [])]) + ".json"
    (RESULTS / name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
