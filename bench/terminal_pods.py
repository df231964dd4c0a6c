"""Memory held for completed pods: 50,000 Succeeded Job pods through the watch intake.

Upstream's pod informer never sees terminal pods (a field selector excludes them); we watch
every pod, so what a completed pod costs is what the intake and the cache keep of it. Each pod
is delivered running, then Succeeded, one at a time as the watch does, and dropped by the
caller at once, so the growth of RSS is what the scheduler keeps.
Result: bench/results/terminal-pods.json.

    python bench/terminal_pods.py [--pods 50000]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import RESULTS, new_scheduler, node, pod, realistic

from scheduler import logs
from scheduler.intake import Intake

NODES = 500


def job_pod(i: int, *, completed: bool) -> dict[str, Any]:
    obj = realistic(pod(f"job-{i}-x7k2p", node_name=f"node-{i % NODES:05d}"), i)
    meta = obj["metadata"]
    meta["generateName"] = f"job-{i}-"
    meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{i}",
                                "uid": f"job-uid-{i}", "controller": True,
                                "blockOwnerDeletion": True}]
    meta["labels"] = {"batch.kubernetes.io/job-name": f"job-{i}",
                      "batch.kubernetes.io/controller-uid": f"job-uid-{i}"}
    meta["resourceVersion"] = str(1000 + 2 * i + completed)
    obj["spec"]["restartPolicy"] = "Never"
    if not completed:
        return obj
    status = obj["status"]
    status["phase"] = "Succeeded"
    status["containerStatuses"][0].update({"ready": False, "started": False, "state": {
        "terminated": {"exitCode": 0, "reason": "Completed",
                       "startedAt": "2026-01-01T00:00:01Z",
                       "finishedAt": "2026-01-01T00:01:01Z"}}})
    return obj


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=50_000)
    args = parser.parse_args()
    logs.configure("warning")
    s = new_scheduler()
    intake = Intake(s)
    for i in range(NODES):
        intake.on_node(None, node(i))
    s.refresh()
    job_pod(0, completed=True)  # warm the builders up before the baseline
    gc.collect()
    before = rss_mib()
    for i in range(args.pods):
        # What the watch shows of a Job pod: running, then Succeeded.
        intake.on_pod(None, job_pod(i, completed=False))
        intake.on_pod("MODIFIED", job_pod(i, completed=True))
        if i % 100 == 99:
            s.refresh()  # the scheduling thread drains the inbox as it goes
    s.refresh()
    gc.collect()
    after = rss_mib()
    result = {
        "scenario": "terminal-pods",
        "pods": args.pods,
        "rss_before_mib": round(before, 1),
        "rss_after_mib": round(after, 1),
        "held_mib": round(after - before, 1),
        "held_bytes_per_pod": round((after - before) * 1024 * 1024 / args.pods),
        "pods_accounted": len(s.cache.pod_uids()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "terminal-pods.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
