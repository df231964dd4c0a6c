"""A scripted HTTP server on loopback standing in for the API server in operator unit tests.

Each route answers from a queue of scripted responses (the last one repeats); every request is
recorded. Only unit tests use it: the e2e suite runs against a real kube-apiserver.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes import client as k8s

from scheduler.operator.kubeapi import KubeApi


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # For watches: newline-delimited events streamed before the connection closes.
    lines: list[dict[str, Any]] | None = None
    # The connection breaks after the payload, short of the length announced (mid-stream).
    cut: bool = False


@dataclass
class Request:
    method: str
    path: str
    query: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeApi:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], deque[Reply]] = defaultdict(deque)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                kind = "WATCH" if "watch=true" in query else self.command
                with api._lock:
                    api.requests.append(Request(self.command, path, query, body,
                                                {k.lower(): v for k, v in self.headers.items()}))
                    queue = api.routes.get((kind, path))
                    reply = (queue.popleft() if len(queue) > 1 else queue[0]) if queue else Reply(
                        404, {"kind": "Status", "code": 404, "message": "not found"})
                if reply.lines is not None:
                    payload = b"".join(json.dumps(line).encode() + b"\n" for line in reply.lines)
                else:
                    payload = json.dumps(reply.body).encode() if reply.body is not None else b""
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.cut:
                    self._send_cut(payload)
                    return
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_cut(self, payload: bytes) -> None:
                """Chunked, as a watch is sent, then closed without the last chunk."""
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for line in payload.splitlines(keepends=True):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                self.close_connection = True

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.routes[(method, path)] = deque(replies)

    def calls(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def kube_api(self, qps: float = 0.0) -> KubeApi:
        configuration = k8s.Configuration()
        configuration.host = self.url
        return KubeApi(k8s.ApiClient(configuration), qps=qps, burst=100)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def fake_api() -> Iterator[FakeApi]:
    api = FakeApi()
    try:
        yield api
    finally:
        api.close()
