#!/usr/bin/env python3
"""`make demo`: watch the secondary scheduler place pods, explain a pending one, and preempt.

    python3 e2e/demo.py [--keep] [--grace SECONDS] [--config FILE|none]

1. Brings up the local control plane (e2e/cluster/cluster.py; reuses it if it is already up)
   with four kwok nodes of 4 cpu in two zones, and PriorityClasses `demo-low` and `demo-high`.
2. Starts the scheduler (python -m scheduler) against it.
3. Deployment `batch` (demo-low, 9 replicas x 2 cpu): eight fill the four nodes, the ninth stays
   pending, and the scheduler says why (the FailedScheduling Event and PodScheduled=False).
4. Deployment `web` (demo-high, 2 replicas x 2 cpu): nothing fits, so each web pod preempts
   one batch pod (the fewest victims that make room): the victim is marked DisruptionTarget,
   evicted, and gets a `Preempted` Event; the web pod waits with status.nominatedNodeName
   for the victim's graceful termination, then binds. The ReplicaSet recreates the victims,
   and they stay pending, with the explanation.
5. Cleans up: stops the scheduler, deletes what it created, and stops the control plane if
   it started it. --keep leaves the cluster and the objects up (KUBECONFIG is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from e2e.cluster.cluster import Cluster  # noqa: E402
from e2e.kube import (  # noqa: E402
    EVENTS_GROUP,
    NAMESPACES,
    NODES,
    PRIORITY_CLASSES,
    SCHEDULER_NAME,
    Kube,
    condition,
    node_of,
    nominated,
    ns_path,
    pod_requests,
    pods_path,
    priority_class_manifest,
    terminating,
    wait_until,
)

NS = "demo"
DEMO_LABEL = "secondary-scheduler.demo"
ZONE = "topology.kubernetes.io/zone"
NODE_SPEC = {"groups": [
    {"count": 2, "namePrefix": "demo-a", "zone": "zone-a", "cpu": "4", "memory": "8Gi",
     "labels": {DEMO_LABEL: "true"}},
    {"count": 2, "namePrefix": "demo-b", "zone": "zone-b", "cpu": "4", "memory": "8Gi",
     "labels": {DEMO_LABEL: "true"}},
]}

BOLD, DIM, RED, GREEN, YELLOW, CYAN, RESET = (
    ("\033[1m", "\033[2m", "\033[31m", "\033[32m", "\033[33m", "\033[36m", "\033[0m")
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else ("",) * 7)


# ----------------------------------------------------------------------------- output
class Timeline:
    """Prints what happens to the demo's pods and Events, as it happens."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube.clone()
        self.events_kube = kube.clone()
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.pod_state: dict[str, tuple[Any, ...]] = {}
        self.seen_events: set[str] = set()

    def say(self, text: str, color: str = "") -> None:
        if self.stop.is_set():
            return
        with self.lock:
            print(f"{DIM}[{time.monotonic() - self.t0:6.1f}s]{RESET} {color}{text}{RESET}",
                  flush=True)

    def banner(self, text: str) -> None:
        with self.lock:
            print(f"\n{BOLD}== {text}{RESET}", flush=True)

    def start(self) -> None:
        self.t0 = time.monotonic()
        for target, kube, path in (
            (self._on_pod, self.kube, pods_path(NS)),
            (self._on_event, self.events_kube, ns_path(NS, "events", group=EVENTS_GROUP)),
        ):
            threading.Thread(target=self._watch, args=(kube, path, target), daemon=True).start()

    def _watch(self, kube: Kube, path: str, handle: Any) -> None:
        rv = ""
        while not self.stop.is_set():
            try:
                if not rv:
                    status, body = kube.request("GET", path)
                    if status != 200:
                        time.sleep(0.5)
                        continue
                    for item in body.get("items") or []:
                        handle("ADDED", item)
                    rv = body["metadata"]["resourceVersion"]
                for ev in kube.watch(path, rv, timeout_seconds=20):
                    if ev.get("type") == "ERROR":
                        rv = ""
                        break
                    obj = ev.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if ev.get("type") != "BOOKMARK":
                        handle(ev["type"], obj)
            except Exception:
                time.sleep(0.5)

    def _on_pod(self, etype: str, pod: dict[str, Any]) -> None:
        """What the scheduler's Events do not say: nominations, victims, terminations."""
        name = pod["metadata"]["name"]
        if etype == "DELETED":
            if self.pod_state.pop(name, None) is not None:
                self.say(f"pod {name}: gone", DIM)
            return
        target = condition(pod, "DisruptionTarget") or {}
        state = (nominated(pod), terminating(pod), target.get("reason"))
        old = self.pod_state.get(name)
        self.pod_state[name] = state
        if old is None or old == state:
            return
        nom, term, disrupted = state
        o_nom, o_term, o_disrupted = old
        if nom != o_nom and not node_of(pod):
            self.say(f"pod {name}: status.nominatedNodeName={nom or '(cleared)'}", CYAN)
        if disrupted and not o_disrupted:
            self.say(f"pod {name}: condition DisruptionTarget=True ({disrupted})", RED)
        if term and not o_term:
            grace = pod["spec"].get("terminationGracePeriodSeconds")
            self.say(f"pod {name}: terminating (grace period {grace}s)", RED)

    def _on_event(self, etype: str, event: dict[str, Any]) -> None:
        key = event["metadata"]["name"]
        if etype != "ADDED" or key in self.seen_events:
            return
        self.seen_events.add(key)
        if event.get("reportingController") != SCHEDULER_NAME:
            return  # the ReplicaSet's and Deployment's events: not the story here
        who = (event.get("regarding") or {}).get("name")
        reason = str(event.get("reason"))
        color = {"Preempted": RED, "FailedScheduling": YELLOW, "Scheduled": GREEN}.get(reason, "")
        self.say(f"{reason} {who}: {event.get('note')}", color)


def node_table(kube: Kube) -> str:
    nodes = kube.list(NODES, label_selector=f"{DEMO_LABEL}=true")
    pods = [p for p in kube.list(pods_path(NS)) if node_of(p)]
    rows = [f"{'NODE':<10} {'ZONE':<7} {'CPU':>9}  PODS (priority, phase)"]
    for n in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = n["metadata"]["name"]
        here = sorted((p for p in pods if node_of(p) == name), key=lambda p: p["metadata"]["name"])
        used = sum(pod_requests(p).get("cpu", 0) for p in here if not terminating(p))
        alloc = n["status"]["allocatable"]["cpu"]
        listed = ", ".join(
            f"{p['metadata']['name']} ({p['spec'].get('priority')}, "
            f"{'Terminating' if terminating(p) else p['status'].get('phase')})" for p in here)
        rows.append(f"{name:<10} {n['metadata']['labels'].get(ZONE, ''):<7} "
                    f"{f'{used}/{alloc}':>9}  {listed}")
    pending = [p for p in kube.list(pods_path(NS)) if not node_of(p)]
    for p in pending:
        c = condition(p, "PodScheduled") or {}
        rows.append(f"pending: {p['metadata']['name']} (priority {p['spec'].get('priority')})"
                    + (f" nominated to {nominated(p)}" if nominated(p) else "")
                    + (f"\n    {c.get('message')}" if c.get("message") else ""))
    return "\n".join(rows)


# ----------------------------------------------------------------------------- objects
def deployment(name: str, replicas: int, cpu: str, priority_class: str,
               grace: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "priorityClassName": priority_class,
        "terminationGracePeriodSeconds": grace,
        "automountServiceAccountToken": False,
        "nodeSelector": {DEMO_LABEL: "true"},
        "containers": [{"name": name, "image": f"registry.invalid/demo/{name}:1",
                        "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}],
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


def pods_of(kube: Kube, app: str) -> list[dict[str, Any]]:
    return kube.list(pods_path(NS), label_selector=f"app={app}")


def apply(kube: Kube, path: str, obj: Mapping[str, Any]) -> None:
    name = obj["metadata"]["name"]
    if kube.get(f"{path}/{name}") is not None:
        kube.delete(f"{path}/{name}")
        wait_until(lambda: kube.get(f"{path}/{name}") is None, 60, f"old {name} deleted")
    kube.create(path, obj)


def remove_namespace(kube: Kube, timeout: float = 120) -> None:
    """Delete the demo namespace (left by --keep), forcing its pods out so it goes quickly."""
    if kube.get(f"{NAMESPACES}/{NS}") is None:
        return
    kube.delete(f"{NAMESPACES}/{NS}")

    def gone() -> bool:
        kube.request("DELETE", pods_path(NS), query={"gracePeriodSeconds": 0})
        return kube.get(f"{NAMESPACES}/{NS}") is None

    wait_until(gone, timeout, f"namespace {NS} from an earlier run deleted", interval=1.0)


# ----------------------------------------------------------------------------- scheduler
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_scheduler(
    kubeconfig: Path, log_path: Path, config: Path | None
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    argv = [sys.executable, "-m", "scheduler", "--kubeconfig", str(kubeconfig),
            "--secure-port", str(port), "--authentication-kubeconfig", str(kubeconfig),
            "--authorization-kubeconfig", str(kubeconfig), "--log-format", "json"]
    if config is not None:
        argv += ["--config", str(config)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def ready() -> bool:
        if proc.poll() is not None:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"the scheduler exited with code {proc.returncode}:\n{tail}")
        try:
            # The scheduler's certificate is self-signed (made at its start).
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=2,
                                        context=ssl._create_unverified_context()) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    wait_until(ready, 90, "the scheduler's /readyz", interval=0.25)
    return proc, port


def stop_scheduler(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


# ----------------------------------------------------------------------------- the demo
def run(kube: Kube, timeline: Timeline, grace: int) -> None:
    timeline.banner("Deployment batch: priority demo-low, 9 replicas x 2 cpu on 4 nodes x 4 cpu")
    kube.create(ns_path(NS, "deployments", group="apps/v1"),
                deployment("batch", 9, "2", "demo-low", grace))

    def batch_settled() -> bool:
        pods = pods_of(kube, "batch")
        bound = [p for p in pods if node_of(p)]
        explained = [p for p in pods if not node_of(p) and condition(p, "PodScheduled")]
        return len(pods) == 9 and len(bound) == 8 and len(explained) == 1

    wait_until(batch_settled, 90, "8 batch pods bound and 1 explained")
    time.sleep(0.5)  # let the last lines of the timeline print before the table
    timeline.banner("The cluster is full: one batch pod is pending, and the scheduler says why")
    print(node_table(kube), flush=True)

    timeline.banner("Deployment web: priority demo-high, 2 replicas x 2 cpu")
    kube.create(ns_path(NS, "deployments", group="apps/v1"),
                deployment("web", 2, "2", "demo-high", grace))

    def web_nominated() -> bool:
        return sum(1 for p in pods_of(kube, "web") if nominated(p)) == 2

    wait_until(web_nominated, 60, "both web pods nominated")
    time.sleep(0.5)
    timeline.banner(f"Preemption: victims terminate gracefully ({grace}s); the nominated web "
                    "pods keep their room")
    print(node_table(kube), flush=True)

    def web_bound() -> bool:
        return sum(1 for p in pods_of(kube, "web") if node_of(p)) == 2

    wait_until(web_bound, grace + 60, "both web pods bound")

    def replacements_explained() -> bool:
        pending = [p for p in pods_of(kube, "batch") if not node_of(p)]
        return len(pending) == 3 and all(
            (condition(p, "PodScheduled") or {}).get("status") == "False" for p in pending)

    wait_until(replacements_explained, 60, "the recreated batch pods explained")
    time.sleep(0.5)
    timeline.banner("Done: web runs; the preempted batch pods were recreated and wait, "
                    "explained")
    print(node_table(kube), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true",
                    help="leave the cluster and the demo objects up at the end")
    ap.add_argument("--grace", type=int, default=5,
                    help="terminationGracePeriodSeconds of the pods (default 5)")
    ap.add_argument("--config", type=Path, default=REPO / "manifests" / "config.yaml",
                    help="the scheduler's --config (default: manifests/config.yaml); "
                    "'none' for the built-in defaults")
    args = ap.parse_args(argv)

    cluster = Cluster()
    started_cluster = not cluster.healthy()
    print(f"{BOLD}Starting the local control plane{RESET} (state in {cluster.state_dir}; the "
          "first run builds the binaries, which takes a few minutes)", flush=True)
    cluster.up(nodes=NODE_SPEC)
    kubeconfig = cluster.kubeconfig_path
    kube = Kube(kubeconfig)
    log_path = cluster.logs / "secondary-scheduler.log"
    proc = None
    timeline = Timeline(kube)
    try:
        remove_namespace(kube)
        kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": NS}})
        wait_until(lambda: kube.get(ns_path(NS, "serviceaccounts", "default")), 60,
                   "the default ServiceAccount")
        apply(kube, PRIORITY_CLASSES, priority_class_manifest("demo-low", 100))
        apply(kube, PRIORITY_CLASSES, priority_class_manifest("demo-high", 1000))
        print(f"{BOLD}Nodes{RESET}: 2 in zone-a, 2 in zone-b, 4 cpu each. PriorityClasses: "
              "demo-low (100), demo-high (1000).", flush=True)
        print(f"{BOLD}Starting the scheduler{RESET} (log: {log_path})", flush=True)
        config = None if str(args.config) == "none" else args.config
        kube.ensure_namespace("secondary-scheduler")  # manifests/config.yaml's lease is there
        proc, port = start_scheduler(kubeconfig, log_path, config)
        print(f"scheduler ready: https://127.0.0.1:{port}/readyz", flush=True)
        timeline.start()
        run(kube, timeline, args.grace)
        return 0
    except Exception as exc:
        print(f"\n{RED}demo failed: {exc}{RESET}", file=sys.stderr)
        if log_path.exists():
            tail = log_path.read_text(errors="replace").splitlines()[-20:]
            print("scheduler log tail:\n" + "\n".join(tail), file=sys.stderr)
        return 1
    finally:
        timeline.stop.set()
        if proc is not None:
            stop_scheduler(proc)
        if args.keep:
            print(f"\n--keep: the cluster is still up.\n  export KUBECONFIG={kubeconfig}\n"
                  f"  kubectl -n {NS} get pods -o wide\n  kubectl -n {NS} get events\n"
                  "  make run      # the scheduler again\n  make cluster-down")
            if shutil.which("kubectl") is None:
                print("  (kubectl is not installed here; any kubectl works with that file)")
        elif started_cluster:
            print("\nStopping the local control plane", flush=True)
            cluster.down()
        else:
            print("\nThe control plane was already up: removing only what the demo created",
                  flush=True)
            with contextlib.suppress(Exception):
                kube.delete(f"{NAMESPACES}/{NS}")
                kube.request("DELETE", pods_path(NS), query={"gracePeriodSeconds": 0})
                for pc in ("demo-low", "demo-high"):
                    kube.delete(f"{PRIORITY_CLASSES}/{pc}")
                kube.request("DELETE", NODES, query={"labelSelector": f"{DEMO_LABEL}=true"})


if __name__ == "__main__":
    sys.exit(main())
