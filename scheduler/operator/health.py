"""Liveness and readiness endpoints, and the Prometheus ``/metrics``.

``/healthz`` answers 200 while the scheduling thread and the watches are running.
``/readyz`` answers 200 once the initial listing of every watched resource has been applied
to the cache, so a rollout does not route work to a scheduler that would decide on a partial
view of the cluster. ``/metrics`` serves the text exposition format, over plain HTTP like the
health checks. ``/debug/explain`` answers why a pod is pending (see explain_endpoint).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST

Check = Callable[[], tuple[bool, dict[str, object]]]
Explain = Callable[[Mapping[str, Sequence[str]]], tuple[int, dict[str, Any]]]


class HealthServer:
    def __init__(
        self,
        port: int,
        *,
        live: Check,
        ready: Check,
        metrics: Callable[[], bytes] | None = None,
        explain: Explain | None = None,
        host: str = "0.0.0.0",
    ) -> None:
        checks = {"/healthz": live, "/livez": live, "/readyz": ready}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path == "/metrics" and metrics is not None:
                    self._reply(200, CONTENT_TYPE_LATEST, metrics())
                    return
                if path == "/debug/explain" and explain is not None:
                    self._json(*explain(parse_qs(query)))
                    return
                check = checks.get(path)
                if check is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                ok, detail = check()
                self._json(200 if ok else 503, {"ok": ok, **detail})

            def _json(self, code: int, body: Mapping[str, Any]) -> None:
                self._reply(code, "application/json", json.dumps(body).encode())

            def _reply(self, code: int, content_type: str, payload: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="health",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
