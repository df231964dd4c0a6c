"""How long an explanation holds the scheduling thread, and how big its answer is.

5,000 nodes in three zones, 50,000 bound pods, a pending pod with a zone spread constraint;
the cache is filled as the one-shot mode fills it and frozen out of the collector as the
running scheduler does after its first listing. Results: bench/results/explain.json.

    python bench/explain.py
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scheduler.config import default_config  # noqa: E402
from scheduler.explain import Listing, explain, scheduler_from_listing, to_json, to_text  # noqa: E402
from scheduler.plugins.registry import default_registry  # noqa: E402
from scheduler.testing import node, pod  # noqa: E402

NODES, PODS, RUNS = 5000, 50_000, 7
SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a1"}}}]}


def main() -> None:
    registry = default_registry()
    nodes = [node(f"n{i}", cpu="32", memory="128Gi", zone=f"zone-{i % 3}") for i in range(NODES)]
    pods = [pod(f"p{j}", cpu="500m", memory="1Gi", node_name=f"n{j % NODES}",
                labels={"app": f"a{j % 50}"}) for j in range(PODS)]
    pending = pod("web", cpu="2", memory="1Gi", labels={"app": "a1"}, spec=SPREAD)
    s, intake = scheduler_from_listing(default_config(registry), registry,
                                       Listing(nodes, [*pods, pending]))
    gc.collect()
    gc.freeze()
    info = intake.pod_info(pending)
    durations = []
    for _ in range(RUNS):
        start = time.perf_counter()
        explanation = explain(s, info)
        durations.append(time.perf_counter() - start)
    start = time.perf_counter()
    answer = to_json(explanation, "bench")
    json_seconds = time.perf_counter() - start
    result = {
        "nodes": NODES, "pods": PODS, "runs": RUNS,
        "explain_ms_median": round(statistics.median(durations) * 1000, 1),
        "explain_ms_max": round(max(durations) * 1000, 1),
        "json_ms": round(json_seconds * 1000, 1),
        "json_bytes": len(answer),
        "text_bytes": len(to_text(explanation, "bench")),
    }
    out = ROOT / "bench" / "results" / "explain.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
