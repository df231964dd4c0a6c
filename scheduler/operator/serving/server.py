"""The secure port's HTTP server: a fixed pool of workers behind one accepting thread.

A connection goes to a worker only once it has sent something: the accepting thread holds
idle ones in a selector (at most ``MAX_PENDING``, each for ``header_timeout``), so any number
of half-open connections costs no worker and ``/healthz`` keeps answering. A worker then has
``header_timeout`` in all (not per read) for the TLS handshake and the request head, and
``write_timeout`` for the answer; one request per connection. Requests are authenticated and
authorized (the non-resource path, the method as verb) before the handler sees them, as
apiserver's filters do. Every request is logged at debug level. An address opening more than
``connection_rate`` connections a second (burst twice that) has the others closed at accept,
before any TLS work.
"""

from __future__ import annotations

import collections
import http.client
import io
import json
import queue
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

import structlog

from scheduler.operator.serving.auth import (
    ANONYMOUS,
    Attributes,
    Authenticator,
    Authorizer,
    UnauthenticatedError,
    User,
)

log = structlog.get_logger("scheduler.serving")

WORKERS = 8
# Connections accepted but not yet readable, and readable ones waiting for a worker.
MAX_PENDING = 1024
MAX_QUEUED = 64
HEADER_TIMEOUT = 10.0
WRITE_TIMEOUT = 30.0
# net/http's DefaultMaxHeaderBytes, which kube's secure serving keeps.
MAX_HEADER_BYTES = 1 << 20
# New connections a second from one address (burst twice that): the probes, a Prometheus
# and a few developers stay far below; a flood from one pod is closed at accept, before the
# TLS handshake that would cost the scheduler's CPU (bench/explain_flood.py).
CONNECTIONS_PER_SECOND = 5.0
# After refusing some, the accepting thread waits this long before it accepts again.
FLOOD_PAUSE = 0.05
# What Go's server writes when a TLS port receives plain HTTP.
PLAIN_HTTP_ON_TLS = (b"HTTP/1.0 400 Bad Request\r\n\r\n"
                     b"Client sent an HTTP request to an HTTPS server.\n")
_METHODS = (b"GET ", b"HEAD ", b"POST ", b"PUT ", b"PATCH ", b"DELETE ", b"OPTIONS ",
            b"CONNECT ", b"TRACE ")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Message
    user: User = ANONYMOUS
    peer: str = ""
    # The client certificate TLS verified against the client CA, if one was sent.
    peer_cert: dict[str, Any] | None = None


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


def json_reply(status: int, body: Any) -> Reply:
    return Reply(status, json.dumps(body).encode())


def status_reply(code: int, reason: str, message: str) -> Reply:
    """A ``metav1.Status`` failure, as apiserver answers a refused request."""
    return json_reply(code, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "message": message, "reason": reason,
                             "details": {}, "code": code})


Handler = Callable[[Request], Reply]


class _BadRequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SecureServer:
    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        context: ssl.SSLContext | None,
        authenticator: Authenticator,
        authorizer: Authorizer,
        workers: int = WORKERS,
        header_timeout: float = HEADER_TIMEOUT,
        write_timeout: float = WRITE_TIMEOUT,
        connection_rate: float = CONNECTIONS_PER_SECOND,
    ) -> None:
        self.handler = handler
        self.context = context
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.header_timeout = header_timeout
        self.write_timeout = write_timeout
        self.connection_rate = connection_rate
        # Per client address: (tokens, when counted).
        self._buckets: dict[str, tuple[float, float]] = {}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=512,
                                              reuse_port=False)
        self._listener.setblocking(False)
        self.port = int(self._listener.getsockname()[1])
        self._queue: queue.Queue[tuple[socket.socket, str, float] | None] = queue.Queue(
            MAX_QUEUED)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept_loop, name="serving-accept",
                                          daemon=True)]
        self._threads += [threading.Thread(target=self._work, name=f"serving-{i}", daemon=True)
                          for i in range(workers)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for _ in self._threads[1:]:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(5)
        self._listener.close()

    # -- accepting ------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        # Accepted connections not yet readable, oldest first, with their deadlines.
        idle: collections.OrderedDict[socket.socket, tuple[str, float]] = (
            collections.OrderedDict())
        try:
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.25):
                    conn = key.fileobj
                    assert isinstance(conn, socket.socket)
                    if conn is not self._listener:
                        selector.unregister(conn)
                        self._dispatch(conn, idle.pop(conn)[0])
                    elif self._accept(selector, idle):
                        # A flood: let the next connections wait in the kernel's backlog
                        # (and past it, in their own SYN retries) rather than wake this
                        # thread, and take the interpreter lock, for each.
                        self._stop.wait(FLOOD_PAUSE)
                self._expire(selector, idle, time.monotonic())
        finally:
            for conn in idle:
                conn.close()
            selector.close()

    def _accept(self, selector: selectors.BaseSelector,
                idle: collections.OrderedDict[socket.socket, tuple[str, float]]) -> int:
        """Every connection waiting, not one a wake: under a flood each wake of this thread
        takes the interpreter lock from the scheduling thread. How many were refused."""
        refused = 0
        for _ in range(MAX_QUEUED):
            try:
                conn, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                log.warning("Accepting a connection failed", exc_info=True)
                break
            if not self._admit(address[0]):
                conn.close()
                refused += 1
                continue
            if len(idle) >= MAX_PENDING:
                # The oldest idle connection makes room: it has had the longest to speak.
                oldest, _ = idle.popitem(last=False)
                selector.unregister(oldest)
                oldest.close()
            conn.setblocking(False)
            idle[conn] = (f"{address[0]}:{address[1]}",
                          time.monotonic() + self.header_timeout)
            selector.register(conn, selectors.EVENT_READ)
        return refused

    def _admit(self, host: str) -> bool:
        """A token of this address's bucket, if it has one (only the accepting thread calls
        this)."""
        now = time.monotonic()
        rate, burst = self.connection_rate, 2 * self.connection_rate
        if len(self._buckets) > MAX_PENDING:
            # Addresses whose bucket is full again need no entry.
            self._buckets = {h: (t, at) for h, (t, at) in self._buckets.items()
                             if t + (now - at) * rate < burst}
        tokens, updated = self._buckets.get(host, (burst, now))
        tokens = min(burst, tokens + (now - updated) * rate)
        admitted = tokens >= 1
        self._buckets[host] = (tokens - 1 if admitted else tokens, now)
        if not admitted:
            log.debug("Connection refused: too many from one address", peer=host)
        return admitted

    @staticmethod
    def _expire(selector: selectors.BaseSelector,
                idle: collections.OrderedDict[socket.socket, tuple[str, float]],
                now: float) -> None:
        while idle:
            conn, (_, deadline) = next(iter(idle.items()))
            if deadline > now:
                return
            idle.popitem(last=False)
            selector.unregister(conn)
            conn.close()

    def _dispatch(self, conn: socket.socket, peer: str) -> None:
        try:
            self._queue.put_nowait((conn, peer, time.monotonic() + self.header_timeout))
        except queue.Full:
            log.warning("Every serving worker is busy: connection closed", peer=peer)
            conn.close()

    # -- serving --------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            conn, peer, deadline = item
            try:
                self._serve(conn, peer, deadline)
            except Exception:
                log.exception("Serving a request failed", peer=peer)
            finally:
                conn.close()

    def _serve(self, raw: socket.socket, peer: str, deadline: float) -> None:
        raw.setblocking(True)
        started = time.monotonic()
        try:
            conn = self._secure(raw, deadline)
            if conn is None:
                return
            head = _read_head(conn, deadline)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            log.debug("Connection dropped before a request", peer=peer, reason=str(exc))
            return
        try:
            request = _parse(head, peer)
            request.peer_cert = _peer_certificate(conn)
            reply = self._answer(request)
        except _BadRequestError as exc:
            request, reply = None, Reply(exc.status, f"{exc}\n".encode(), "text/plain")
        try:
            conn.settimeout(self.write_timeout)
            conn.sendall(_encode(reply, head_only=request is not None
                                 and request.method == "HEAD"))
        except (OSError, TimeoutError):
            pass
        log.debug("HTTP", peer=peer, method=request.method if request else "",
                  path=request.path if request else "", status=reply.status,
                  user=request.user.name if request else "", bytes=len(reply.body),
                  seconds=round(time.monotonic() - started, 4))

    def _secure(self, raw: socket.socket, deadline: float) -> socket.socket | None:
        """The TLS connection, or None when plain HTTP came to the TLS port (answered 400
        as Go's server does)."""
        if self.context is None:
            return raw
        raw.settimeout(_remaining(deadline))
        if raw.recv(8, socket.MSG_PEEK).startswith(_METHODS):
            raw.sendall(PLAIN_HTTP_ON_TLS)
            return None
        conn = self.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        conn.settimeout(_remaining(deadline))
        conn.do_handshake()
        return conn

    def _answer(self, request: Request) -> Reply:
        try:
            request.user = self.authenticator.authenticate(
                request.headers.get("Authorization", ""), request.peer_cert)
        except UnauthenticatedError:
            return status_reply(401, "Unauthorized", "Unauthorized")
        attributes = Attributes(verb=request.method.lower(), path=request.path)
        allowed, reason = self.authorizer.authorize(request.user, attributes)
        if not allowed:
            message = attributes.forbidden_message(request.user)
            return status_reply(403, "Forbidden",
                                f"forbidden: {message}" + (f": {reason}" if reason else ""))
        return self.handler(request)


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("header timeout")
    return left


def _read_head(conn: socket.socket, deadline: float) -> bytes:
    """The request line and headers, within the deadline in all."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEADER_BYTES:
            raise _BadRequestError(431, "Request Header Fields Too Large")
        conn.settimeout(_remaining(deadline))
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the end of the request head")
        buffer += chunk
    return buffer.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"


def _parse(head: bytes, peer: str) -> Request:
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequestError(400, "Bad Request")
    method, target, _ = parts
    path, _, query = target.partition("?")
    headers = http.client.parse_headers(io.BytesIO(rest))
    return Request(method, unquote(path), parse_qs(query), headers, peer=peer)


def _peer_certificate(conn: socket.socket) -> dict[str, Any] | None:
    if isinstance(conn, ssl.SSLSocket):
        cert = conn.getpeercert()
        return dict(cert) if cert else None
    return None


def _encode(reply: Reply, *, head_only: bool) -> bytes:
    try:
        phrase = HTTPStatus(reply.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP/1.1 {reply.status} {phrase}", f"Content-Type: {reply.content_type}",
             f"Content-Length: {len(reply.body)}", "Connection: close",
             "X-Content-Type-Options: nosniff",
             *(f"{k}: {v}" for k, v in reply.headers.items())]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + reply.body
