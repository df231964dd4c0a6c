"""Pods with claims per second, in process: whole scheduling cycles through ``scheduler.testing``.

500 nodes, each with one ResourceSlice of 10 devices (13 attributes, two capacities, as in
``bench/dra_allocator.py``: scheduler_perf's ``resourceslice-basic-devices.yaml``), the class
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

    .venv/bin/python bench/dra_burst.py [--pods 1000] [--runs 3] [--allocated 4900]
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

from dra_allocator import DEVICE_CLASS_OBJECT, DEVICES, NODES, slice_object  # noqa: E402

from scheduler.testing import node, pod, run_cycles, scheduler_of  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def template_claim(i: int) -> dict[str, Any]:
    """The claim the resourceclaim controller made from the pod's template."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
        "name": f"pod-{i}-gpu", "namespace": "default", "uid": f"claim-uid-{i}",
        "resourceVersion": "1", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{i}", "uid": f"pod-uid-{i}",
             "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
            "deviceClassName": "test-class", "allocationMode": "ExactCount", "count": 1}}]}}}


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


def one_run(pods: int, allocated: int) -> dict[str, Any]:
    nodes = [node(f"node-{i}", cpu="64", memory="256Gi") for i in range(NODES)]
    slices = [slice_object(i, f"node-{i}") for i in range(NODES)]
    storage = [DEVICE_CLASS_OBJECT, *slices, *allocated_claims(allocated, slices),
               *(template_claim(i) for i in range(pods))]
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
    parser.add_argument("--label", default="", help="stored with the figures (e.g. a commit)")
    args = parser.parse_args()
    runs = [one_run(args.pods, args.allocated) for _ in range(args.runs)]
    result = {"nodes": NODES, "devices_per_node": DEVICES, "pods": args.pods,
              "allocated": args.allocated,
              "label": args.label, "runs": runs,
              "pods_per_second_median": statistics.median(r["pods_per_second"] for r in runs),
              "pods_per_cpu_second_median": statistics.median(
                  r["pods_per_cpu_second"] for r in runs)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"dra-burst-{args.label}.json" if args.label else "dra-burst.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
