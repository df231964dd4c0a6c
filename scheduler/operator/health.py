"""Liveness and readiness endpoints, the Prometheus ``/metrics``, and ``/debug/explain``.

``/healthz`` answers 200 while the scheduling thread and the watches are running, the
scheduling loop keeps coming round, and a leader keeps renewing its lease (the app's checks:
operator/liveness.py and the elector's watchdog). ``/readyz`` answers 200 once the initial
listing of every watched resource has been applied to the cache, so a rollout does not route
work to a scheduler that would decide on a partial view of the cluster; it runs the
leader-election watchdog too, as kube-scheduler's. ``/metrics`` serves the text exposition
format. ``/debug/explain`` answers why a pod is pending (see explain_endpoint), to callers
who may read the pod.

All of it is on the secure port (serving/): HTTPS, and every path but the always-allowed
ones (``/healthz``, ``/readyz``, ``/livez`` by default) needs a caller the API server
authorizes to ``get`` it, as kube-scheduler's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from scheduler.operator.serving.auth import Caller
from scheduler.operator.serving.server import Handler, Reply, Request, SecureServer, json_reply

Check = Callable[[], tuple[bool, dict[str, object]]]
Explain = Callable[[Mapping[str, Sequence[str]], Caller], tuple[int, dict[str, Any]]]


class HealthServer:
    def __init__(
        self,
        serve: Callable[[Handler], SecureServer],
        *,
        live: Check,
        ready: Check,
        metrics: Callable[[], bytes] | None = None,
        explain: Explain | None = None,
    ) -> None:
        self.checks = {"/healthz": live, "/livez": live, "/readyz": ready}
        self.metrics = metrics
        self.explain = explain
        # serving.options.secure_server with the flags' options, or a test's own server.
        self._server = serve(self.route)
        self.port = self._server.port

    def route(self, request: Request) -> Reply:
        if request.method not in ("GET", "HEAD"):
            return Reply(405, b"", headers={"Allow": "GET, HEAD"})
        if request.path == "/metrics" and self.metrics is not None:
            return Reply(200, self.metrics(), CONTENT_TYPE_LATEST)
        if request.path == "/debug/explain" and self.explain is not None:
            code, body = self.explain(request.query,
                                      Caller(request.user, self._server.authorizer))
            retry = body.get("retryAfterSeconds")
            return Reply(code, json.dumps(body).encode(),
                         headers={"Retry-After": str(retry)} if retry else {})
        check = self.checks.get(request.path)
        if check is None:
            return Reply(404, b"404 page not found\n", "text/plain; charset=utf-8")
        ok, detail = check()
        return json_reply(200 if ok else 503, {"ok": ok, **detail})

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()
