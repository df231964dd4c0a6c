"""How many rescheduler passes an imbalance takes to settle, in process, on the cache.

Each pass is settled as the API would settle it: the evicted pods go, their ReplicaSets'
replacements are scheduled by the scheduler itself and run where it bound them. Passes run
until one moves nothing. Reported per scenario and limits: passes, evictions, the final
imbalance (most minus fewest CPU requested per node, in pods of 1 CPU) and the ideal (the
fewest moves that end within one pod of balanced; for the label, the pods that fit on the
labelled pool).

- ``scale-up``: 70 full 4-CPU nodes (4 pods of 1 CPU each, 20 ReplicaSets in 10 namespaces),
  then 30 empty nodes join: 100 nodes.
- ``label``: 100 4-CPU nodes at 3 pods each; 40 pods of one ReplicaSet prefer ``pool=fast``;
  a pool of 10 nodes, holding none of them, gains the label (also with PreferredTerms as the
  only objective).
- ``idle-pass``: the wall time of one pass on a small idle cluster (3,3,3 and 3 empty nodes)
  with the scheduling loop running: each of the pass's steps is a wake-up of that loop.

Result: bench/results/rescheduler-convergence.json.

    python bench/rescheduler_convergence.py
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import RESULTS

from scheduler import logs
from scheduler.config import UNDERUTILIZED_NODES
from scheduler.framework.ports import EvictionOutcome, EvictionResult
from scheduler.intake import DELETED, MODIFIED, Intake
from scheduler.model.pod import PodInfo
from scheduler.rescheduling.rescheduler import PassReport, Rescheduler
from scheduler.testing import ManualClock, node, pod, run_cycles, scheduler_of

MAX_PASSES = 200
PREFERS_FAST = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["fast"]}]}}]}}
# The rescheduler section each scenario runs with: the defaults (limits 1/2/5), and limits an
# admin in a hurry might set.
SECTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "generous": {"limits": {"perNode": 2, "perNamespace": 20, "perPass": 50}},
}
PREFERRED_ONLY = {"objectives": ["PreferredTerms"]}


def owned(name: str, owner: str, namespace: str, node_name: str,
          spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = pod(name, namespace=namespace, cpu="1", node_name=node_name,
              labels={"app": owner}, spec=spec)
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
        "uid": f"uid-{namespace}-{owner}", "controller": True}]
    return obj


class Cluster:
    """The scheduler with the rescheduler on, and the API and controllers played in process."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                 section: dict[str, Any]) -> None:
        self.clock = ManualClock()
        self.s, self.ports = scheduler_of(
            {"rescheduler": {"enabled": True, **section}}, nodes=nodes, pods=pods,
            clock=self.clock)
        self.s.allow_scheduling()
        self.intake = Intake(self.s)
        self.evicted: list[PodInfo] = []
        self.r = Rescheduler(self.s, self.s.config.rescheduler, evictor=self,
                             reporter=self)  # type: ignore[arg-type]
        self.made = 0

    # The Evictor and MoveReporter the rescheduler calls.
    def evict(self, victim: PodInfo) -> EvictionResult:
        self.evicted.append(victim)
        return EvictionResult(EvictionOutcome.EVICTED, "")

    def rescheduled(self, pod: PodInfo, reason: str, note: str) -> None:
        return None

    def settle(self, report: PassReport) -> None:
        bound_before = len(self.ports.bound)
        pending: dict[str, dict[str, Any]] = {}
        for move in report.moves:
            self.intake.on_pod(DELETED, move.pod.raw)
            self.made += 1
            raw = copy.deepcopy(move.pod.raw)
            name = f"{move.pod.owner_name}-r{self.made}"
            raw["metadata"].update(name=name, uid=f"uid-r{self.made}")
            raw["spec"].pop("nodeName", None)
            raw["status"] = {"phase": "Pending"}
            pending[f"{move.pod.namespace}/{name}"] = raw
            self.intake.on_pod(MODIFIED, raw)
        self.s.refresh()
        run_cycles(self.s)
        for key, node_name in self.ports.bound[bound_before:]:
            raw = copy.deepcopy(pending[key])
            raw["metadata"]["resourceVersion"] = "2"
            raw["spec"]["nodeName"] = node_name
            raw["status"] = {"phase": "Running"}
            self.intake.on_pod(MODIFIED, raw)
        self.s.refresh()

    def converge(self) -> list[PassReport]:
        reports: list[PassReport] = []
        while len(reports) < MAX_PASSES:
            reports.append(self.r.run_once())
            if not reports[-1].moves:
                break
            self.settle(reports[-1])
        return reports

    def per_node(self) -> Counter[str]:
        counts: Counter[str] = Counter(dict.fromkeys(self.s.cache.nodes.index, 0))
        counts.update(p.node_name for p in self.s.cache.pods.by_uid.values())
        return counts


def fewest_moves(counts: list[int]) -> int:
    """Moves that end within one pod of balanced, at the fewest: the fullest nodes keep one
    more than the others."""
    total, n = sum(counts), len(counts)
    targets = [total // n + (1 if i < total % n else 0) for i in range(n)]
    return sum(max(0, c - t) for c, t in zip(sorted(counts, reverse=True), targets,
                                               strict=True))


def scale_up(section: dict[str, Any]) -> dict[str, Any]:
    full, joining = 70, 30
    nodes = [node(f"n{i:03d}") for i in range(full + joining)]
    pods = [owned(f"web{i % 20}-{i}", f"web{i % 20}", f"ns{i % 10}", f"n{i // 4:03d}")
            for i in range(full * 4)]
    cluster = Cluster(nodes[:full], pods, section)
    for obj in nodes[full:]:
        cluster.intake.on_node(None, obj)
    cluster.s.refresh()
    ideal = fewest_moves(list(cluster.per_node().values()))
    return report(cluster, cluster.converge(), ideal)


def label(section: dict[str, Any]) -> dict[str, Any]:
    nodes = [node(f"n{i:03d}") for i in range(100)]
    pool = nodes[90:]
    pods = []
    for i in range(300):
        where = f"n{i // 3:03d}"
        # The api pods: 40, one on each of 40 nodes outside the pool.
        if i % 3 == 0 and i // 3 < 40:
            pods.append(owned(f"api-{i}", "api", "api", where, spec={"affinity": PREFERS_FAST}))
        else:
            pods.append(owned(f"web{i % 20}-{i}", f"web{i % 20}", f"ns{i % 10}", where))
    cluster = Cluster(nodes, pods, section)
    for obj in pool:
        cluster.intake.on_node(MODIFIED, {**obj, "metadata": {
            **obj["metadata"], "labels": {**obj["metadata"]["labels"], "pool": "fast"}}})
    cluster.s.refresh()
    names = {n["metadata"]["name"] for n in pool}
    # Into the room there is, one api pod fits on each node of the pool (3 of 4 CPU used):
    # 10 moves. With UnderutilizedNodes on too, a full pool node then sheds a web pod to a
    # node an api pod left, which makes room for the next: all 40 api pods end on the pool,
    # and the 30 web pods that were there had to move: 70 moves.
    reports = cluster.converge()
    ends_all_on_pool = UNDERUTILIZED_NODES in cluster.s.config.rescheduler.objectives
    result = report(cluster, reports, 70 if ends_all_on_pool else len(pool))
    moved = [m for r in reports for m in r.moves]
    result["api_on_pool"] = sum(1 for p in cluster.s.cache.pods.by_uid.values()
                                if p.owner_name == "api" and p.node_name in names)
    result["moved_not_api"] = sum(1 for m in moved if m.pod.owner_name != "api")
    result["moved_api_off_pool"] = sum(1 for m in moved if m.pod.owner_name == "api"
                                       and m.target not in names)
    return result


def report(cluster: Cluster, reports: list[PassReport], ideal: int) -> dict[str, Any]:
    counts = list(cluster.per_node().values())
    landed = Counter(w for r in reports for w in r.landed.values())
    return {
        "passes": len(reports) - 1 if reports and not reports[-1].moves else len(reports),
        "evictions": len(cluster.evicted),
        "ideal_evictions": ideal,
        "final_imbalance_pods": max(counts) - min(counts),
        "final_stdev_pods": round(statistics.pstdev(counts), 3),
        "landed_back_on_source": landed.get("source", 0),
        "skips": dict(Counter(v.reason for r in reports for v in r.verdicts
                              if v.target is None)),
    }


def idle_pass_ms(*, wake: bool = True) -> float:
    """The median of five dry-run passes; ``wake=False``: as before the inbox woke the loop,
    each step waiting for the loop's idle poll."""
    nodes = [node(n) for n in "abcdef"]
    pods = [owned(f"web-{n}{i}", "web", "default", n) for n in "abc" for i in range(3)]
    cluster = Cluster(nodes, pods, {"dryRun": True})
    if not wake:
        cluster.s.inbox._wake = lambda: None
    cluster.s.start()
    try:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            cluster.r.run_once()
            times.append((time.perf_counter() - start) * 1000)
        return round(statistics.median(times), 2)
    finally:
        cluster.s.stop(timeout=5)


def main() -> int:
    logs.configure("warning")
    result: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        result[f"scale-up/{name}"] = scale_up(section)
        result[f"label/{name}"] = label(section)
    result["label/preferred-terms-only"] = label(PREFERRED_ONLY)
    result["idle_pass_ms"] = idle_pass_ms()
    result["idle_pass_ms_without_the_wake_up"] = idle_pass_ms(wake=False)
    result["python"] = sys.version.split()[0]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rescheduler-convergence.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
