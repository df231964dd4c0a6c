"""kube-scheduler's HTTP extenders: a small extender server on loopback filters, scores and
binds; the scheduler under test (ours, or upstream kube-scheduler with the same
``extenders`` section when E2E_SCHEDULER=kube-scheduler) must place the same pods on the
same nodes, let the extender bind them, and fail an attempt with upstream's message when a
non-ignorable extender cannot be reached.

Each test starts its own scheduler with a profile of its own, beside the session's one.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Env, LocalScheduler, start_own_scheduler
from e2e.kube import Kube

BACKEND = os.environ.get("E2E_SCHEDULER", "")
pytestmark = pytest.mark.skipif(BACKEND == "deployed",
                                reason="starts its own scheduler next to the test")

PROFILE = "e2e-extender"
RANK = "e2e.example.com/rank"
BLOCKED = "e2e.example.com/blocked"
REFUSE = "e2e.example.com/refuse"
BLOCKED_MESSAGE = "blocked by the e2e extender"
REFUSED_MESSAGE = "the e2e extender refuses this pod"


class ExtenderServer:
    """filter: drops nodes labelled BLOCKED, and every node for a pod labelled REFUSE;
    prioritize: the node's RANK label (0..10); bind: POSTs the pod's binding itself."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.calls: list[tuple[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                verb = self.path.rsplit("/", 1)[-1]
                reply = getattr(server, verb)(body)
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/extender"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        pod = args["Pod"]
        nodes = args["Nodes"]["items"]
        refused = (pod["metadata"].get("labels") or {}).get(REFUSE) == "true"
        self.calls.append(("filter", (pod["metadata"]["name"],
                                      [n["metadata"]["name"] for n in nodes])))
        kept, failed = [], {}
        for node in nodes:
            labels = node["metadata"].get("labels") or {}
            if refused:
                failed[node["metadata"]["name"]] = REFUSED_MESSAGE
            elif labels.get(BLOCKED) == "true":
                failed[node["metadata"]["name"]] = BLOCKED_MESSAGE
            else:
                kept.append(node)
        return {"Nodes": {"items": kept}, "NodeNames": None, "FailedNodes": failed,
                "FailedAndUnresolvableNodes": {}, "Error": ""}

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        nodes = args["Nodes"]["items"]
        return [{"Host": n["metadata"]["name"],
                 "Score": int((n["metadata"].get("labels") or {}).get(RANK, "0"))}
                for n in nodes]

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("bind", (args["PodName"], args["Node"])))
        path = f"/api/v1/namespaces/{args['PodNamespace']}/pods/{args['PodName']}/binding"
        try:
            self.kube.create(path, {
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": args["PodName"], "uid": args["PodUID"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}})
        except Exception as exc:
            return {"Error": str(exc)}
        return {"Error": ""}

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def extender(env: Env) -> Iterator[ExtenderServer]:
    server = ExtenderServer(env.kube)
    yield server
    server.close()


def extenders_yaml(entries: str) -> str:
    return f"extenders:\n{entries}"


def start_scheduler(kubeconfig: Path, tmp_path: Path, extenders: str) -> LocalScheduler:
    return start_own_scheduler(kubeconfig, tmp_path / "extender-scheduler.log", PROFILE,
                               shared=extenders)


@pytest.mark.timeout(180)
def test_extender_filters_scores_and_binds_as_with_kube_scheduler(
    env: Env, extender: ExtenderServer, kubeconfig: Path, tmp_path: Path
) -> None:
    (blocked,) = env.nodes("blocked", labels={BLOCKED: "true", RANK: "10"})
    env.nodes("low", labels={RANK: "2"})
    (high,) = env.nodes("high", labels={RANK: "9"})
    env.nodes("mid", labels={RANK: "5"})
    scheduler = start_scheduler(kubeconfig, tmp_path, extenders_yaml(
        f"  - {{urlPrefix: '{extender.url}', filterVerb: filter, prioritizeVerb: prioritize,"
        f" bindVerb: bind, weight: 5}}\n"))
    try:
        names = [f"web-{i}" for i in range(3)]
        for name in names:
            env.create_pod(name, cpu="100m", scheduler=PROFILE)
        placed = env.wait_all_bound(names, timeout=60)
        # The blocked node ranks highest but is filtered out; rank 9 x weight 5 x 10 = 450
        # outweighs what the plugins' scores differ by.
        assert {placed[n] for n in names} == {high}, placed
        binds = sorted(args for verb, args in extender.calls if verb == "bind")
        assert binds == sorted((n, high) for n in names)
        for name in names:
            assert env.rec.events_for(name, "Scheduled"), name
        filtered = [args for verb, args in extender.calls if verb == "filter"]
        assert all(blocked in nodes for _, nodes in filtered)

        env.create_pod("refused", cpu="100m", scheduler=PROFILE, labels={REFUSE: "true"})
        condition = env.wait_unschedulable("refused", timeout=30)
        assert f"4 {REFUSED_MESSAGE}" in condition["message"], condition
        assert env.pod("refused")["spec"].get("nodeName") is None
    finally:
        scheduler.stop()


@pytest.mark.timeout(180)
def test_an_unreachable_extender_fails_the_attempt_with_upstreams_message(
    env: Env, kubeconfig: Path, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/extender"
    env.nodes("any", 2)
    scheduler = start_scheduler(kubeconfig, tmp_path, extenders_yaml(
        f"  - {{urlPrefix: '{url}', filterVerb: filter}}\n"))
    try:
        env.create_pod("stuck", cpu="100m", scheduler=PROFILE)
        message = (f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: '
                   "connect: connection refused")
        env.wait_unschedulable("stuck", message=message, reason="SchedulerError", timeout=30)
        assert env.pod("stuck")["spec"].get("nodeName") is None
    finally:
        scheduler.stop()
