"""In-process scheduling benchmarks: no API server, synthetic clusters, results as JSON.

Each scenario runs in its own process (``--scenario NAME``) so that its peak RSS is its own;
without arguments every scenario runs and one JSON file per scenario lands in bench/results/.
Targets are checked by reading the JSON, never by a timed assertion in a test.

    python bench/run.py                   # all scenarios
    python bench/run.py --scenario basic-5000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scheduler import logs  # noqa: E402
from scheduler.config import default_config, parse_config  # noqa: E402
from scheduler.cycle import schedule_one  # noqa: E402
from scheduler.framework.ports import BindOutcome, BindResult, NullPorts  # noqa: E402
from scheduler.intake import Intake  # noqa: E402
from scheduler.model.pod import PodInfo  # noqa: E402
from scheduler.operator.cpu_affinity import single_cpu  # noqa: E402
from scheduler.plugins.registry import default_registry  # noqa: E402
from scheduler.scheduler import Scheduler, settle_heap  # noqa: E402

RESULTS = ROOT / "bench" / "results"
ZONES = ("zone-a", "zone-b", "zone-c")


def node(i: int, cpu: str = "32", memory: str = "128Gi", pods: int = 110) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            },
        },
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)}},
    }


def pod(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    node_name: str = "",
    priority: int = 0,
    labels: dict[str, str] | None = None,
    spread: bool = False,
    anti_affinity: bool = False,
    namespace: str = "bench",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "secondary-scheduler",
        "priority": priority,
        "containers": [{
            "name": "c",
            "image": "registry.example/app:1",
            "resources": {"requests": {"cpu": cpu, "memory": memory}},
        }],
    }
    if node_name:
        spec["nodeName"] = node_name
    selector = {"matchLabels": dict(labels or {})}
    if spread:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }]
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        ]}}
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                     "labels": dict(labels or {}), "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending",
                   "startTime": "2026-01-01T00:00:00Z"},
    }


class SyncPorts(NullPorts):
    """Binds at once; the benchmark measures scheduling, not an API server."""

    def bind(self, pod: PodInfo, node: str) -> BindResult:
        return BindResult(BindOutcome.BOUND)


@dataclass
class Scenario:
    name: str
    nodes: int
    init_pods: int
    measured_pods: int
    build: Callable[[Scheduler, int, int, int], list[PodInfo]]
    config: dict[str, Any] | None = None
    metric: str = "pods"


def new_scheduler(config: dict[str, Any] | None = None) -> Scheduler:
    registry = default_registry()
    cfg = parse_config(config, registry) if config else default_config(registry)
    ports = SyncPorts()
    return Scheduler(cfg, registry, binder=ports, reporter=ports, seed=1)


def add_nodes(s: Scheduler, n: int, **kwargs: Any) -> None:
    for i in range(n):
        obj = node(i, **kwargs)
        s.cache.upsert_node(obj)
        s.known_nodes.add(obj["metadata"]["name"])


def owner_reference(i: int) -> dict[str, Any]:
    """The ReplicaSet of pod ``i``: 500 of them, so 100 replicas each at 50,000 pods."""
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"web-{i % 500}-7d9f8b6c5d",
            "uid": f"rs-{i % 500}", "controller": True, "blockOwnerDeletion": True}


def realistic(obj: dict[str, Any], i: int) -> dict[str, Any]:
    """Dress a pod the way the API returns it: managedFields, status, token volume, owner."""
    meta = obj["metadata"]
    meta.update({
        "generateName": "web-7d9f8b6c5d-",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [owner_reference(i)],
        "labels": {**meta["labels"], "app": f"web-{i % 500}",
                   "pod-template-hash": "7d9f8b6c5d"},
        "managedFields": [
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
             "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {},
                          "f:app": {}, "f:pod-template-hash": {}}},
                          "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {},
                                     "f:name": {}, "f:resources": {".": {}, "f:requests": {}}}}}}},
            {"manager": "kwok", "operation": "Update", "apiVersion": "v1", "subresource": "status",
             "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {},
                                       "f:hostIP": {}, "f:phase": {}, "f:podIP": {}}}},
        ],
    })
    spec = obj["spec"]
    spec.update({
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30, "enableServiceLinks": True,
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300}],
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
    })
    spec["containers"][0].update({
        "env": [{"name": "MODE", "value": "production"}],
        "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"})
    obj["status"].update({
        "hostIP": "10.0.0.1", "podIP": f"10.244.{i // 250 % 256}.{i % 250}",
        "qosClass": "Burstable",
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": "2026-01-01T00:00:01Z"}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "started": True,
                               "image": "registry.example/app:1", "imageID": "",
                               "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}}}],
    })
    return obj


def build_realistic(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    """Pods as the API returns them, through the same intake as the watch."""
    intake = Intake(s)
    for i in range(nodes):
        intake.on_node(None, node(i))
    for i in range(init):
        intake.on_pod(None, realistic(pod(f"init-{i}", node_name=f"node-{i % nodes:05d}"), i))
    s.refresh()
    return [PodInfo.from_pod(pod(f"p-{i}")) for i in range(measured)]


def build_owned(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    """The realistic cluster; each measured pod is one more replica of one of its ReplicaSets,
    so the system default topology spreading counts its siblings (as for most real pods)."""
    build_realistic(s, nodes, init, 0)
    return [PodInfo.from_pod(realistic(pod(f"p-{i}"), i)) for i in range(measured)]


def build_basic(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    add_nodes(s, nodes)
    for i in range(init):
        s.cache.upsert_pod(PodInfo.from_pod(pod(f"init-{i}", node_name=f"node-{i % nodes:05d}")))
    return [PodInfo.from_pod(pod(f"p-{i}")) for i in range(measured)]


def build_spread(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    add_nodes(s, nodes)
    for i in range(init):
        labels = {"app": f"init-{i % 50}"}
        s.cache.upsert_pod(PodInfo.from_pod(
            pod(f"init-{i}", node_name=f"node-{i % nodes:05d}", labels=labels)))
    return [
        PodInfo.from_pod(pod(f"p-{i}", labels={"app": "spread"}, spread=True, anti_affinity=True))
        for i in range(measured)
    ]


def build_preemption(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    # Every node full: 4 low-priority pods of 1 cpu on 4-cpu nodes.
    for i in range(nodes):
        obj = node(i, cpu="4", memory="16Gi")
        s.cache.upsert_node(obj)
        s.known_nodes.add(obj["metadata"]["name"])
    per_node = max(init // nodes, 1)
    for i in range(nodes):
        for j in range(per_node):
            s.cache.upsert_pod(PodInfo.from_pod(pod(
                f"low-{i}-{j}", cpu=f"{4000 // per_node}m", memory="1Gi",
                node_name=f"node-{i:05d}", priority=j % 3)))
    return [PodInfo.from_pod(pod(f"high-{i}", cpu="2", memory="1Gi", priority=1000))
            for i in range(measured)]


def build_preemption_basic(s: Scheduler, nodes: int, init: int, measured: int) -> list[PodInfo]:
    """Upstream scheduler_perf's PreemptionBasic (default_preemption/performance-config.yaml):
    nodes of 4 cpu and 32Gi, four low-priority pods of 900m on each (3.6 of 4 cpu used), and
    preemptors of priority 10 asking 3 cpu, which each need three victims to fit."""
    add_nodes(s, nodes, cpu="4", memory="32Gi")
    for i in range(init):
        s.cache.upsert_pod(PodInfo.from_pod(pod(
            f"low-{i}", cpu="900m", memory="500Mi", node_name=f"node-{i % nodes:05d}")))
    return [PodInfo.from_pod(pod(f"high-{i}", cpu="3", memory="500Mi", priority=10))
            for i in range(measured)]


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("basic-500", 500, 500, 2000, build_basic),
        Scenario("basic-5000", 5000, 5000, 3000, build_basic),
        Scenario("spread-antiaffinity-5000", 5000, 10000, 1000, build_spread),
        Scenario("cache-memory-5000x50000", 5000, 50000, 200, build_realistic),
        Scenario("replicaset-pods-5000x50000", 5000, 50000, 1000, build_owned),
        Scenario("preemption-5000", 5000, 20000, 300, build_preemption, metric="preemptions"),
        Scenario("preemption-basic-1000", 1000, 4000, 1000, build_preemption_basic,
                 metric="preemptions"),
    )
}


def reference_loop_us() -> float:
    """How fast this host runs plain Python right now: the best of 20 runs of a fixed loop, in
    µs. Shared VMs swing by half or more from minute to minute; pods/s read beside this figure
    can be compared across runs and hosts."""
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        sum(range(10_000))
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


def run_scenario(
    scenario: Scenario, cpu_affinity: str = "single", dump: str | None = None
) -> dict[str, Any]:
    logs.configure("warning")
    # As the app starts (its --cpu-affinity): every thread on one CPU unless "all".
    pinned = single_cpu() if cpu_affinity == "single" else None
    s = new_scheduler(scenario.config)
    build_start = time.perf_counter()
    pending = scenario.build(s, scenario.nodes, scenario.init_pods, scenario.measured_pods)
    build_seconds = time.perf_counter() - build_start
    # Warm the derived snapshot data (zone order, domains) as a running scheduler would have,
    # and settle the heap as the app does once the cluster is cached.
    s.snapshot.order()
    settle_heap()
    latencies: list[float] = []
    # Every measured pod is pending at once, as after a scale-up (and in upstream's
    # scheduler_perf): the queue hands them out in creation order.
    for info in pending:
        # As the intake does: the newest version the watch delivered, which preemption and
        # failure handling read back (without it every preemptor counts as deleted).
        s.pods[info.uid] = info
        s.queue.add(info)
    reference = reference_loop_us()
    start = time.perf_counter()
    thread_start, process_start = time.thread_time(), time.process_time()
    for _ in pending:
        t0 = time.perf_counter()
        schedule_one(s, timeout=0)
        latencies.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    # The scheduling thread's own CPU, and what the binding threads took from the process.
    scheduling_cpu = time.thread_time() - thread_start
    binding_cpu = time.process_time() - process_start - scheduling_cpu
    preemptions = sum(1 for info in pending if s.queue.nominator.node_of(info.uid))
    s.stop(timeout=5)
    if dump:
        dump_decisions(s, pending, dump)
    latencies.sort()
    count = len(latencies)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "scenario": scenario.name,
        "nodes": scenario.nodes,
        "pods": scenario.init_pods,
        "measured_pods": count,
        "pods_per_second": round(count / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[min(count - 1, int(count * 0.99))] * 1000, 3),
        "scheduling_thread_cpu_us_per_pod": round(scheduling_cpu / count * 1e6),
        "binding_threads_cpu_us_per_pod": round(binding_cpu / count * 1e6),
        "reference_loop_us": round(reference, 1),
        "peak_rss_mib": round(rss_kib / 1024, 1),
        "setup_seconds": round(build_seconds, 2),
        "cpu_affinity": f"cpu {pinned.cpu}" if pinned is not None else "all",
        "python": sys.version.split()[0],
    }
    if scenario.metric == "preemptions":
        result["preemption_decisions"] = preemptions
        result["preemption_decisions_per_second"] = round(preemptions / elapsed, 1)
    return result


def dump_decisions(s: Scheduler, pending: list[PodInfo], path: str) -> None:
    """Each measured pod's node (bound, else nominated, else none), one line per pod: two
    runs with the same seed compare with diff."""
    lines = []
    for info in pending:
        placed = s.cache.get_pod(info.uid)
        node_name = placed.node_name if placed is not None else ""
        nominated = s.queue.nominator.node_of(info.uid) or ""
        lines.append(f"{info.name} {node_name or '-'} {nominated or '-'}\n")
    Path(path).write_text("".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--cpu-affinity", choices=("single", "all"), default="single",
                        help="as the scheduler's flag: every thread on one CPU, or the kernel's "
                             "choice")
    parser.add_argument("--dump-decisions", metavar="FILE",
                        help="with --scenario: write each measured pod's node to FILE")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.scenario:
        result = run_scenario(SCENARIOS[args.scenario], args.cpu_affinity,
                              args.dump_decisions)
        (RESULTS / f"{args.scenario}.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result))
        return 0
    failures = 0
    for name in SCENARIOS:
        proc = subprocess.run([sys.executable, __file__, "--scenario", name,
                               "--cpu-affinity", args.cpu_affinity],
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        failures += proc.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
