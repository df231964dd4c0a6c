"""What a plugin author pays for the style of a Score plugin, at 5,000 nodes.

The same rule (prefer nodes labelled ``node.example.com/spot=true``) written two ways:

- ``per-node``: a Python loop over the batch, one dict lookup per node, as a kube-scheduler
  plugin's Score(node) reads;
- ``arrays``: examples/plugins/prefer_label (PreferLabel), a per-row mask cached by the
  snapshot until node labels change, then one numpy index over the batch.

Each is enabled beside the default plugins, and the cycle of a plain pod is timed (pop to
assume, bound by a no-op port), plus the plugin's own score call. JSON in bench/results/.

    python bench/plugin_styles.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import prefer_label  # noqa: E402  (make install installs the example packages)
from run import RESULTS, SyncPorts, node, pod  # noqa: E402

from scheduler import logs  # noqa: E402
from scheduler.config import parse_config  # noqa: E402
from scheduler.cycle import schedule_one  # noqa: E402
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, IntArray, NodeView  # noqa: E402
from scheduler.framework.registry import PluginSpec  # noqa: E402
from scheduler.model.pod import PodInfo  # noqa: E402
from scheduler.plugins.registry import default_registry  # noqa: E402
from scheduler.scheduler import Scheduler  # noqa: E402

NODES = 5000
PODS = 2000
LABEL = "node.example.com/spot"


class PerNodeLabel(prefer_label.PreferLabel):
    """The same rule, one node at a time."""

    name = "PerNodeLabel"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        labels = self.handle.snapshot.nodes.labels
        return np.fromiter(
            (MAX_NODE_SCORE if labels[int(row)].get(self.label) == self.value else 0
             for row in nodes.idx), dtype=np.int64, count=len(nodes))


PER_NODE = PluginSpec(name="PerNodeLabel", factory=PerNodeLabel,
                      args=prefer_label.PreferLabelArgs, points=frozenset({"score"}))


def measure(plugin: str) -> dict[str, Any]:
    registry = default_registry()
    registry.register(prefer_label.SPEC)
    registry.register(PER_NODE)
    config = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "score": {"enabled": [{"name": plugin, "weight": 5}]}},
        "pluginConfig": [{"name": plugin, "args": {"label": LABEL, "value": "true"}}]}]}
    ports = SyncPorts()
    s = Scheduler(parse_config(config, registry), registry, binder=ports, reporter=ports, seed=1)
    for i in range(NODES):
        obj = node(i)
        if i % 10 == 0:
            obj["metadata"]["labels"][LABEL] = "true"
        s.cache.upsert_node(obj)
        s.known_nodes.add(obj["metadata"]["name"])
    s.snapshot.order()
    framework = s.profiles["secondary-scheduler"]
    instance = framework.instances[plugin]
    view = NodeView(s.snapshot, s.snapshot.order(), s.cache.nodes.requested[s.snapshot.order()],
                    s.cache.nodes.pod_count[s.snapshot.order()])
    score_times = []
    for _ in range(200):
        t0 = time.perf_counter()
        instance.score(CycleState(), PodInfo.from_pod(pod("x")), view)
        score_times.append(time.perf_counter() - t0)
    cycles = []
    for i in range(PODS):
        info = PodInfo.from_pod(pod(f"p-{i}"))
        s.pods[info.uid] = info
        s.queue.add(info)
        t0 = time.perf_counter()
        schedule_one(s, timeout=0)
        cycles.append(time.perf_counter() - t0)
    s.stop(timeout=5)
    return {
        "plugin_style": "arrays" if plugin == prefer_label.NAME else "per-node",
        "nodes": NODES,
        "score_call_ms_over_all_nodes": round(statistics.median(score_times) * 1000, 3),
        "cycle_p50_ms": round(statistics.median(cycles) * 1000, 3),
        "pods_per_second": round(len(cycles) / sum(cycles), 1),
    }


def main() -> int:
    logs.configure("warning")
    results = [measure(prefer_label.NAME), measure(PER_NODE.name)]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "plugin-styles.json").write_text(json.dumps(results, indent=2) + "\n")
    for result in results:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
