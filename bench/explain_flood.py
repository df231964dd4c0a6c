"""What a flood of /debug/explain requests costs the scheduling loop (issue 33: at most 10%).

In one process, as the app runs: the ReplicaSet scenario of bench/run.py (5,000 nodes,
50,000 bound pods, pods that are one more replica of a ReplicaSet) scheduled on this thread,
every thread on one CPU (--cpu-affinity=single); the real secure server (TLS, a self-signed
certificate) and the real ExplainEndpoint in front of the live scheduler; CLIENTS threads
(in another process) sending explain requests for a pending 5,000-node pod as fast as they
are answered. Blocks
of BLOCK pods alternate without and with the flood, so both halves of a pair see the host
at the same speed; the figure is the median over pairs of (pods/s with the flood) / (pods/s
without). The endpoint's rate limit and its one-at-a-time rule decide how many explains get
through, and the per-address connection limit how many reach TLS: the answers by status
are reported too (0: the connection was closed at accept).

    python bench/explain_flood.py [--pairs 6] [--block 1000]

Results: bench/results/explain-flood.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from run import RESULTS, SCENARIOS, new_scheduler, pod, realistic  # noqa: E402

from scheduler import logs  # noqa: E402
from scheduler.cycle import schedule_one  # noqa: E402
from scheduler.intake import Intake  # noqa: E402
from scheduler.model.pod import PodInfo  # noqa: E402
from scheduler.operator.cpu_affinity import single_cpu  # noqa: E402
from scheduler.operator.explain_endpoint import ExplainEndpoint  # noqa: E402
from scheduler.operator.health import HealthServer  # noqa: E402
from scheduler.operator.kubeapi import Response  # noqa: E402
from scheduler.operator.serving.auth import Authenticator, Authorizer  # noqa: E402
from scheduler.operator.serving.certs import server_context  # noqa: E402
from scheduler.operator.serving.server import Handler, SecureServer  # noqa: E402
from scheduler.scheduler import settle_heap  # noqa: E402

CLIENTS = 4
SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a1"}}}]}


class PodApi:
    """The one read the endpoint makes of the API: the pod to explain."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def get(self, path: str) -> Response:
        return Response(200, self.obj, {})


def serve(handler: Handler) -> SecureServer:
    # Every caller authorized (the reviews are cached 10 s in the app: not what is measured).
    return SecureServer("127.0.0.1", 0, handler, context=server_context(None, None, None),
                        authenticator=Authenticator(None),
                        authorizer=Authorizer(None, allow_all=True))


def flood(port: int, cpus: set[int], on: Any, stop: Any, out: Any) -> None:
    """The clients: another process on other CPUs (a caller's CPU is not the scheduler's: on
    its own CPU a busy client would take the scheduler's share of it, which says nothing of
    the endpoint), CLIENTS threads each sending the next request when the last is answered,
    while ``on`` is set."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    answers: Counter[int] = Counter()
    lock = threading.Lock()

    def client() -> None:
        context = ssl._create_unverified_context()
        while not stop.is_set():
            if not on.wait(0.05):
                continue
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=context)
            try:
                conn.request("GET", "/debug/explain?namespace=default&name=flood")
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 0  # closed at accept: too many connections from this address
            finally:
                conn.close()
            with lock:
                answers[status] += 1

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    out.put("started")
    for thread in threads:
        thread.join()
    out.put(dict(answers))


def block(s: Any, pending: list[PodInfo]) -> float:
    for info in pending:
        s.pods[info.uid] = info
        s.queue.add(info)
    start = time.perf_counter()
    for _ in pending:
        schedule_one(s, timeout=0)
    return len(pending) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--block", type=int, default=1000)
    args = parser.parse_args()
    logs.configure("warning")
    pinned = single_cpu()
    scenario = SCENARIOS["replicaset-pods-5000x50000"]
    s = new_scheduler()
    scenario.build(s, scenario.nodes, scenario.init_pods, 0)
    pending = [PodInfo.from_pod(realistic(pod(f"p-{i}"), i))
               for i in range(2 * args.pairs * args.block)]
    target = pod("flood", cpu="2", memory="1Gi")
    target["metadata"]["labels"] = {"app": "a1"}
    target["spec"].update(SPREAD)
    s.snapshot.order()
    settle_heap()
    endpoint = ExplainEndpoint(PodApi(target), s, Intake(s))  # type: ignore[arg-type]
    server = HealthServer(serve, live=lambda: (True, {}), ready=lambda: (True, {}),
                          explain=endpoint)
    server.start()
    spawn = multiprocessing.get_context("spawn")
    on, stop, out = spawn.Event(), spawn.Event(), spawn.Queue()
    others = set(range(os.cpu_count() or 1)) - ({pinned.cpu} if pinned is not None else set())
    clients = spawn.Process(target=flood, args=(server.port, others, on, stop, out),
                            daemon=True)
    clients.start()
    assert out.get(timeout=300) == "started"
    quiet, flooded, ratios = [], [], []
    flood_seconds = 0.0
    try:
        for i in range(args.pairs):
            chunk = pending[2 * i * args.block:(2 * i + 2) * args.block]
            # Which half goes first alternates: neither is always the warmer one.
            order = (False, True) if i % 2 == 0 else (True, False)
            rates = {}
            for flooding, part in zip(order, (chunk[:args.block], chunk[args.block:]),
                                      strict=True):
                (on.set if flooding else on.clear)()
                started = time.perf_counter()
                rates[flooding] = block(s, part)
                if flooding:
                    flood_seconds += time.perf_counter() - started
            on.clear()
            quiet.append(rates[False])
            flooded.append(rates[True])
            ratios.append(rates[True] / rates[False])
    finally:
        stop.set()
        on.set()
        answers: Counter[int] = Counter(out.get(timeout=120))
        clients.join(60)
        server.stop()
        s.stop(timeout=5)
    result = {
        "scenario": scenario.name, "nodes": scenario.nodes, "pods": scenario.init_pods,
        "block_pods": args.block, "pairs": args.pairs, "clients": CLIENTS,
        "pods_per_second_without": round(statistics.median(quiet), 1),
        "pods_per_second_with_flood": round(statistics.median(flooded), 1),
        "throughput_ratio_median": round(statistics.median(ratios), 3),
        "throughput_ratios": [round(r, 3) for r in ratios],
        "explains_answered_per_second": round(answers[200] / flood_seconds, 2),
        "flood_seconds": round(flood_seconds, 1),
        # What the explains took of the scheduling thread; the rest of the loss is the
        # connections' (TLS, refusals, the interpreter lock handed back and forth).
        "explain_seconds_on_scheduling_thread": round(endpoint.limit.total, 2),
        "answers": {str(k): v for k, v in sorted(answers.items())},
        "cpu_affinity": f"cpu {pinned.cpu}" if pinned is not None else "all",
        "clients_cpus": sorted(others),
        "python": sys.version.split()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "explain-flood.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
