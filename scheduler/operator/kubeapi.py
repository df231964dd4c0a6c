"""A thin JSON layer over the connection pool of the ``kubernetes`` client.

The client's typed models cost ~6x more per object than ``json.loads`` on large lists and
choke on some responses (a binding answers with a ``Status``), and its request path (parameter
sanitising, header and URL assembly, then the pool manager's per-request lookups) took more CPU
than the HTTP exchange itself: ~450 µs per binding on this project's benchmark host. So we keep
its configuration, authentication (refreshed tokens included) and urllib3 pool, and send plain
JSON through the pool ourselves. Every write of one instance goes
through its token bucket (kube-scheduler's client defaults: 50 QPS, burst 100; Events use an
instance of their own) and retries only what is transient: connection errors, 429 (honouring
Retry-After) and 5xx.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import structlog
import urllib3
from kubernetes import client as k8s
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from scheduler.metrics import Metrics

log = structlog.get_logger("scheduler.api")

JSON = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
# The answer to a write this replica did not send: it does not hold the leader lease.
FENCED = "not sent: this replica is not the leader"
FENCED_STATUS = 503


@dataclass
class Response:
    status: int
    body: Any
    headers: Mapping[str, str]
    # How many times the request was sent: an answer to a retry may describe what an earlier
    # attempt, whose answer was lost, already did (a bind answered 409, say).
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        if isinstance(self.body, Mapping):
            return str(self.body.get("message") or self.body.get("reason") or self.status)
        return str(self.status)


class TransientError(Exception):
    """A failure worth retrying; carries the server's Retry-After when it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TokenBucket:
    """Client-side rate limit shared by one client's writes (client-go's flowcontrol)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = qps
        self.capacity = max(burst, 1)
        self.tokens = float(self.capacity)
        self._clock = clock
        self._sleep = sleep
        self.updated = clock()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Take a token, waiting for it if none is left.

        As golang.org/x/time/rate's Wait, which client-go uses: each caller reserves the
        next token at once (the count may go below zero) and sleeps until its own turn, so
        writes leave in the order they asked. Racing for each refill instead lets some
        callers lose many times in a row: bindings then leave seconds out of order.
        """
        if self.qps <= 0:
            return
        with self._lock:
            now = self._clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.qps) - 1
            self.updated = now
            wait = -self.tokens / self.qps
        if wait > 0:
            self._sleep(wait)


def _wait_for_retry(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, TransientError) and exc.retry_after is not None:
        return min(exc.retry_after, 30.0)
    return float(wait_exponential(multiplier=0.2, max=5)(state))


class KubeApi:
    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        qps: float = 50.0,
        burst: int = 100,
        metrics: Metrics | None = None,
    ) -> None:
        self.client = api_client
        # Leader election's fence: checked right before every write leaves the process, after
        # any wait for a token, so a replica that lost its lease sends nothing more.
        self.may_write: Callable[[], bool] | None = None
        self.bucket = TokenBucket(qps, burst)
        self.metrics = metrics or Metrics()
        configuration = api_client.configuration
        # The rest_client_* host label, as client-go: the server's host:port.
        self.host = urlsplit(str(configuration.host)).netloc
        self._base_url = str(configuration.host)
        # The client's own headers (its User-Agent, any configured ones) on every request.
        self._headers = {**api_client.default_headers, "Accept": JSON}
        self._pools = api_client.rest_client.pool_manager
        # Through a proxy the pool manager writes the request line: it gets absolute URLs.
        self._via_proxy = isinstance(self._pools, urllib3.ProxyManager)
        self._pool: urllib3.HTTPConnectionPool | None = None
        # Shared by every thread: tenacity keeps each call's state thread-local.
        self._retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            wait=_wait_for_retry,
            stop=stop_after_attempt(5),
            reraise=True,
        )

    # -- plain requests -------------------------------------------------------------------
    def writable(self) -> bool:
        """False on a replica that may not write now: a standby, or a leader fenced."""
        return self.may_write is None or self.may_write()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = 30.0,
        limited: bool = True,
    ) -> Response:
        """One request with transient failures retried; the final answer is returned as is."""
        sent = 0

        def attempt() -> Response:
            nonlocal sent
            if limited:
                waited = time.perf_counter()
                self.bucket.acquire()
                self.metrics.rate_limited(method, self.host, time.perf_counter() - waited)
            if method != "GET" and not self.writable():
                return Response(FENCED_STATUS, {"message": FENCED}, {})
            sent += 1
            try:
                raw = self._call(method, path, body, query, content_type, timeout)
            except (urllib3.exceptions.HTTPError, OSError, k8s.ApiException) as exc:
                raise TransientError(f"{method} {path}: {exc}") from exc
            data = raw.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data.decode(errors="replace")
            response = Response(raw.status, parsed, dict(raw.headers or {}), sent)
            if raw.status == 429 and not _is_pdb_refusal(response):
                raise TransientError(response.message(), _retry_after(response))
            if raw.status >= 500 and not _is_multiple_pdbs(response):
                raise TransientError(response.message(), _retry_after(response))
            return response

        try:
            return self._retrying(attempt)
        except TransientError as exc:
            return Response(503, {"message": str(exc)}, {}, sent)

    def _call(
        self,
        method: str,
        path: str,
        body: Any,
        query: Mapping[str, Any] | None,
        content_type: str,
        timeout: float | tuple[float, float] | None,
    ) -> urllib3.BaseHTTPResponse:
        headers = {**self._headers, "Content-Type": content_type}
        # Read on every request: the client's hook refreshes expiring tokens (in-cluster ones).
        token = self.client.configuration.auth_settings().get("BearerToken")
        if token and token["value"]:
            headers[token["key"]] = token["value"]
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = f"{path}?{urlencode(params)}" if params else path
        data = None if body is None else json.dumps(body).encode()
        start = time.perf_counter()
        code = "<error>"  # client-go's code label when no response arrived
        try:
            opener: urllib3.PoolManager | urllib3.HTTPConnectionPool = (
                self._pools if self._via_proxy else self._connection_pool())
            target = self._base_url + url if self._via_proxy else url
            raw = opener.urlopen(method, target, body=data, headers=headers,
                                 timeout=_timeout(timeout), preload_content=False)
            code = str(raw.status)
            return raw
        finally:
            self.metrics.rest_request(method, self.host, code, time.perf_counter() - start)

    def _connection_pool(self) -> urllib3.HTTPConnectionPool:
        """The server's pool, looked up once (the pool manager's lookup costs more than the
        rest of a request's preparation) and again only if someone closed it."""
        pool = self._pool
        if pool is None or pool.pool is None:
            pool = self._pool = self._pools.connection_from_url(self._base_url)
        return pool

    def get(self, path: str, query: Mapping[str, Any] | None = None) -> Response:
        return self.request("GET", path, query=query, limited=False, timeout=(10.0, 120.0))

    # -- watch ----------------------------------------------------------------------------
    def watch(
        self, path: str, resource_version: str, timeout_seconds: int = 300, *,
        field_selector: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Yield watch events (``{"type", "object"}``) until the server ends the stream."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if field_selector is not None:
            query["fieldSelector"] = field_selector
        raw = self._call("GET", path, None, query, JSON, (10.0, timeout_seconds + 30.0))
        if raw.status != 200:
            body = raw.read()
            yield {"type": "ERROR", "object": _json_or_status(body, raw.status)}
            return
        buffer = b""
        try:
            for chunk in raw.stream(64 * 1024, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            raw.release_conn()


def _timeout(timeout: float | tuple[float, float] | None) -> urllib3.Timeout | None:
    """A total timeout, or (connect, read) ones, as the kubernetes client reads them."""
    if timeout is None:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


def _json_or_status(body: bytes, status: int) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict):
            return parsed
    except ValueError:
        pass
    return {"kind": "Status", "code": status, "message": body.decode(errors="replace")}


def _retry_after(response: Response) -> float | None:
    value = response.headers.get("Retry-After") or response.headers.get("retry-after")
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _is_pdb_refusal(response: Response) -> bool:
    """An eviction refused by a PodDisruptionBudget (429 with a DisruptionBudget cause)."""
    body = response.body if isinstance(response.body, Mapping) else {}
    causes = (body.get("details") or {}).get("causes") or []
    return any(c.get("reason") == "DisruptionBudget" for c in causes) or (
        "disruption budget" in str(body.get("message", "")).lower()
    )


def _is_multiple_pdbs(response: Response) -> bool:
    body = response.body if isinstance(response.body, Mapping) else {}
    return "more than one PodDisruptionBudget" in str(body.get("message", ""))


class KubeconfigError(Exception):
    """No credentials: not in a pod, and the kubeconfig is missing, unreadable or wrong."""


def api_client_from(kubeconfig: str | None, *, connections: int = 32) -> k8s.ApiClient:
    """In-cluster credentials when running in a pod, else the kubeconfig.

    ``connections`` is the kept-alive pool size: a thread that finds the pool empty opens a
    connection (a TLS handshake) and throws it away afterwards, so it should cover every
    thread that makes requests.
    """
    from kubernetes import config

    configuration = k8s.Configuration()
    configuration.connection_pool_maxsize = connections
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return k8s.ApiClient(configuration)
        except config.ConfigException:
            pass
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration
        )
    except Exception as exc:  # the client raises a few unrelated types for a bad file
        problem = " ".join(str(exc).split())
        raise KubeconfigError(f"no usable kubeconfig: {problem}") from exc
    return k8s.ApiClient(configuration)
