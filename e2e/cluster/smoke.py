#!/usr/bin/env python3
"""End-to-end smoke check of the local control plane (run by hand, ~1-2 min):

    python3 e2e/cluster/smoke.py [--keep]

up with 3 kwok nodes -> PriorityClass + pod bound to a kwok node becomes Running with
spec.priority resolved -> graceful delete (20 s) really takes ~20 s -> PDB status kept
by the disruption controller -> Eviction API (201, then 429 once the budget is spent)
-> down, and no process of ours is left.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import Cluster

SPEC = {
    "groups": [
        {
            "count": 3,
            "namePrefix": "node-a",
            "zone": "zone-a",
            "cpu": "4",
            "memory": "8Gi",
            "pods": 110,
            "labels": {"tier": "gold"},
            "taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
        }
    ]
}


def wait(what, cond, timeout=60.0, every=0.2):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = cond()
        if v:
            return time.monotonic() - t0
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def pod(name, node, labels=None, pc=None, grace=30):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "nodeName": node,
            "priorityClassName": pc,
            "terminationGracePeriodSeconds": grace,
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.invalid/fake:1"}],
        },
    }


def main() -> int:
    keep = "--keep" in sys.argv
    state = Path(tempfile.mkdtemp(prefix="cluster-smoke-"))
    c = Cluster(state)
    t0 = time.monotonic()
    c.up(nodes=SPEC)
    print(f"up + 3 nodes Ready: {time.monotonic() - t0:.1f}s")
    bins = c._state()["bin_dir"]
    try:
        from kubernetes import client, config
        from kubernetes.client.rest import ApiException

        api_client = config.new_client_from_config(config_file=str(c.kubeconfig_path))
        core = client.CoreV1Api(api_client)
        sched = client.SchedulingV1Api(api_client)
        policy = client.PolicyV1Api(api_client)
        ns = "default"

        nodes = core.list_node().items
        for n in nodes:
            ready = [x.status for x in n.status.conditions if x.type == "Ready"]
            print(
                f"node {n.metadata.name} Ready={ready}"
                f" zone={n.metadata.labels.get('topology.kubernetes.io/zone')}"
                f" taints={[t.key for t in (n.spec.taints or [])]}"
                f" cpu={n.status.allocatable['cpu']}"
            )
        assert len(nodes) == 3

        # 1. PriorityClass -> spec.priority via the Priority admission plugin; kwok runs it
        sched.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "e2e-high"},
                "value": 1000,
            }
        )
        core.create_namespaced_pod(ns, pod("p1", "node-a-0", pc="e2e-high"))
        dt_ = wait(
            "p1 Running", lambda: core.read_namespaced_pod("p1", ns).status.phase == "Running"
        )
        p = core.read_namespaced_pod("p1", ns)
        print(f"p1 Running after {dt_:.1f}s, priority={p.spec.priority}, podIP={p.status.pod_ip}")
        assert p.spec.priority == 1000, p.spec.priority

        # 2. graceful delete honours the grace period
        t = time.monotonic()
        core.delete_namespaced_pod("p1", ns, grace_period_seconds=20)

        def gone():
            try:
                core.read_namespaced_pod("p1", ns)
                return False
            except ApiException as e:
                return e.status == 404

        wait("p1 gone", gone, timeout=60)
        took = time.monotonic() - t
        print(f"p1 deleted with grace 20s: gone after {took:.1f}s")
        assert 18 <= took <= 30, took

        # 3. PDB maintained by the disruption controller
        for i in range(2):
            core.create_namespaced_pod(
                ns, pod(f"web-{i}", f"node-a-{i + 1}", {"app": "web"}, grace=3)
            )
        policy.create_namespaced_pod_disruption_budget(
            ns,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            },
        )

        def pdb_ok():
            s = policy.read_namespaced_pod_disruption_budget("web", ns).status
            return (
                s
                and s.observed_generation
                and s.current_healthy == 2
                and s.disruptions_allowed == 1
            )

        dt_ = wait("PDB status", pdb_ok, timeout=60)
        s = policy.read_namespaced_pod_disruption_budget("web", ns).status
        print(
            f"PDB status after {dt_:.1f}s: currentHealthy={s.current_healthy}"
            f" desiredHealthy={s.desired_healthy}"
            f" disruptionsAllowed={s.disruptions_allowed}"
        )

        # 4. Eviction API
        ev = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "web-0", "namespace": ns},
        }
        r = core.create_namespaced_pod_eviction("web-0", ns, ev)
        print(f"evict web-0: accepted (HTTP 201, {r.kind})")
        ev["metadata"]["name"] = "web-1"
        try:
            core.create_namespaced_pod_eviction("web-1", ns, ev)
            print("evict web-1: accepted (UNEXPECTED)")
            raise AssertionError("second eviction should be refused by the PDB")
        except ApiException as e:
            print(f"evict web-1: refused with HTTP {e.status} (PDB budget spent)")
            assert e.status == 429, e.status
    finally:
        if not keep:
            t = time.monotonic()
            c.down()
            print(f"down: {time.monotonic() - t:.1f}s")
            # only processes of THIS cluster (other clusters may share the machine)
            left = subprocess.run(
                ["pgrep", "-af", str(state)], capture_output=True, text=True
            ).stdout.strip()
            print(f"processes of this cluster left ({bins} with {state}): {left or 'none'}")
            assert not left
            assert not state.exists()
    print("SMOKE OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
