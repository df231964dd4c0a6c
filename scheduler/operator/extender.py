"""kube-scheduler's HTTP extender client (upstream's ``HTTPExtender``, pkg/scheduler/extender.go).

Each call POSTs JSON to ``urlPrefix/verb`` with the extender's own timeout and TLS settings,
in upstream's wire format (``k8s.io/kube-scheduler/extender/v1``: Go field names, decoded
case-insensitively as Go's encoding/json does). Errors carry upstream's wording, so the
pod's condition reads as it would under kube-scheduler.

``httpTimeout`` bounds the whole call, as Go's ``http.Client.Timeout`` does: connecting,
sending, the headers and the body together, not each socket operation (a server dripping a
byte a second would otherwise hold the scheduling thread for as long as it likes). The reply
may be at most :data:`REPLY_LIMIT_BYTES` more than the request: a filter reply repeats at most
the nodes it was sent, the other replies are smaller, so anything beyond is a broken or
hostile extender, refused before it takes the memory. A reply of the wrong shape is an
extender error, which ``ignorable`` skips, worded as Go's decoder words it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from scheduler.config import ExtenderConfig, ExtenderTLS
from scheduler.framework.extender import (
    ExtenderError,
    ExtenderFilterResult,
    Victims,
    interested,
)
from scheduler.framework.snapshot import ClusterSnapshot
from scheduler.model.pod import PodInfo

# How much larger than its request an extender's reply may be (16 MiB): room for the failure
# messages of a filter reply that also repeats every node object it was sent.
REPLY_LIMIT_BYTES = 16 * 1024 * 1024
_READ_BYTES = 64 * 1024
_TIMEOUT_AWAITING_HEADERS = (
    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
_TIMEOUT_READING_BODY = (
    "context deadline exceeded (Client.Timeout or context cancellation while reading body)")


class HTTPExtender:
    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self._managed = frozenset(config.managed_resources)
        self._context = _tls_context(config)

    # -- what it does ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def weight(self) -> int:
        return self.config.weight

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        return interested(self._managed, pod)

    # -- calls ----------------------------------------------------------------------------
    def filter(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> ExtenderFilterResult:
        if not self.config.filter_verb:
            return ExtenderFilterResult(list(nodes))
        result = _object(self._send(self.config.filter_verb,
                                    self._args(pod, nodes, snapshot)),
                         "v1.ExtenderFilterResult")
        error = _string(_field(result, "Error"), "ExtenderFilterResult.Error")
        if error:
            raise ExtenderError(error)
        names = _strings(_field(result, "NodeNames"), "ExtenderFilterResult.NodeNames")
        listed = _object(_field(result, "Nodes"), "ExtenderFilterResult.Nodes")
        passed: list[str] = []
        if self.config.node_cache_capable and names is not None:
            given = set(nodes)
            for name in names:
                if name not in given:
                    raise ExtenderError(f"extender {self.name!r} claims a filtered node "
                                        f"{name!r} which is not found in the input node list")
                passed.append(name)
        elif listed is not None:
            items = _array(_field(listed, "Items"), "NodeList.Items") or []
            passed = [_node_name(item) for item in items]
        return ExtenderFilterResult(
            passed,
            failed=_string_map(_field(result, "FailedNodes"), "ExtenderFilterResult.FailedNodes"),
            failed_and_unresolvable=_string_map(_field(result, "FailedAndUnresolvableNodes"),
                                                "ExtenderFilterResult.FailedAndUnresolvableNodes"),
        )

    def prioritize(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> Mapping[str, int]:
        if not self.config.prioritize_verb:
            return dict.fromkeys(nodes, 0)
        result = self._send(self.config.prioritize_verb, self._args(pod, nodes, snapshot))
        scores: dict[str, int] = {}
        for entry in _array(result, "v1.HostPriorityList") or []:
            entry = _object(entry, "v1.HostPriority") or {}
            host = _string(_field(entry, "Host"), "HostPriority.Host")
            scores[host] = _integer(_field(entry, "Score"), "HostPriority.Score")
        return scores

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], snapshot: ClusterSnapshot
    ) -> Mapping[str, Victims]:
        if not self.config.preempt_verb:
            raise ExtenderError(f"preempt verb is not defined for extender {self.name} but "
                                "run into ProcessPreemption")
        args: dict[str, Any] = {"Pod": pod.raw}
        if self.config.node_cache_capable:
            args["NodeNameToMetaVictims"] = {
                node: {"Pods": [{"UID": p.uid} for p in v.pods],
                       "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                node: {"Pods": [p.raw for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        result = _object(self._send(self.config.preempt_verb, args),
                         "v1.ExtenderPreemptionResult") or {}
        out: dict[str, Victims] = {}
        chosen = _object(_field(result, "NodeNameToMetaVictims"),
                         "ExtenderPreemptionResult.NodeNameToMetaVictims") or {}
        for node, meta in chosen.items():
            row = snapshot.row_of(node)
            if row is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            meta = _object(meta, "v1.MetaVictims") or {}
            on_node = {p.uid: p for p in snapshot.pods_on(row)}
            pods: list[PodInfo] = []
            for meta_pod in _array(_field(meta, "Pods"), "MetaVictims.Pods") or []:
                uid = _string(_field(_object(meta_pod, "v1.MetaPod"), "UID"), "MetaPod.UID")
                if uid not in on_node:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: "
                        f"{node}, but the pod is not found on that node")
                pods.append(on_node[uid])
            violations = _integer(_field(meta, "NumPDBViolations"), "MetaVictims.NumPDBViolations")
            out[node] = Victims(pods, violations)
        return out

    def bind(self, pod: PodInfo, node: str) -> None:
        result = _object(self._send(self.config.bind_verb, {
            "PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node,
        }), "v1.ExtenderBindingResult")
        error = _string(_field(result, "Error"), "ExtenderBindingResult.Error")
        if error:
            raise ExtenderError(error)

    # -- the wire -------------------------------------------------------------------------
    def _args(self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot) -> Any:
        if self.config.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": list(nodes)}
        table = snapshot.nodes
        objects = [table.raw[table.index[name]] for name in nodes]
        return {"Pod": pod.raw, "Nodes": {"metadata": {}, "items": objects}, "NodeNames": None}

    def _send(self, verb: str, args: Any) -> Any:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        data = json.dumps(args).encode()
        request = urllib.request.Request(
            url, data=data, method="POST", headers={"Content-Type": "application/json"})
        deadline = _Deadline(self.config.http_timeout)
        opener = urllib.request.build_opener(*deadline.handlers(self._context))
        try:
            with deadline, opener.open(request, timeout=self.config.http_timeout) as response:
                deadline.headers_read = True
                body = _read_limited(response, len(data) + REPLY_LIMIT_BYTES, verb, url)
        except urllib.error.HTTPError as exc:
            raise ExtenderError(
                f"failed {verb} with extender at URL {url}, code {exc.code}") from exc
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = deadline.timeout_reason() or _transport_error(url, exc)
            raise ExtenderError(f'Post "{url}": {reason}') from exc
        if deadline.expired:
            # The deadline shut the socket: what was read may be a cut-off reply.
            raise ExtenderError(f'Post "{url}": {deadline.timeout_reason()}')
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ExtenderError(f"{verb} with extender at URL {url}: invalid JSON: {exc}") from exc


class _Deadline:
    """One deadline for a whole call, as Go's ``http.Client.Timeout``: when it passes, the
    call's sockets are shut down, which ends whatever read or write is blocked on them."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self.headers_read = False
        self._lock = threading.Lock()
        # Duplicates of the call's sockets: shutting one down ends the connection for the
        # socket the HTTP client holds too, even after TLS took that one over.
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def handlers(self, context: ssl.SSLContext | None) -> list[urllib.request.BaseHandler]:
        """urllib handlers whose connections put their sockets under this deadline."""
        deadline = self

        class Http(http.client.HTTPConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._create_connection = deadline._connect

        class Https(http.client.HTTPSConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._create_connection = deadline._connect

        class HttpHandler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(Http, req)

        class HttpsHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(Https, req, context=context)

        return [HttpHandler(), HttpsHandler(context=context)]

    def _connect(self, address: tuple[str, int], timeout: float, *args: Any) -> socket.socket:
        sock = socket.create_connection(address, timeout, *args)
        with self._lock:
            if self.expired:
                sock.close()
                raise TimeoutError("deadline exceeded while connecting")
            self._sockets.append(sock.dup())
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):  # the other side closed it already
                    sock.shutdown(socket.SHUT_RDWR)

    def timeout_reason(self) -> str | None:
        """Go's words for a call its deadline ended, else None."""
        if not self.expired:
            return None
        return _TIMEOUT_READING_BODY if self.headers_read else _TIMEOUT_AWAITING_HEADERS


def _read_limited(response: http.client.HTTPResponse, limit: int, verb: str, url: str) -> bytes:
    """The reply's body, refused as soon as it is known to exceed ``limit`` bytes."""
    declared = response.headers.get("Content-Length")
    too_large = ExtenderError(
        f"{verb} with extender at URL {url}: reply larger than {limit} bytes, refused")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(_READ_BYTES):
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


# -- decoding as Go's encoding/json: a value of the wrong JSON type is an error -------------
def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _wrong_type(value: Any, go_type: str) -> ExtenderError:
    return ExtenderError(f"json: cannot unmarshal {_json_type(value)} into Go value of type "
                         f"{go_type}")


def _object(value: Any, go_type: str) -> Mapping[str, Any] | None:
    """A JSON object, or None for null (Go leaves the zero value)."""
    if value is None or isinstance(value, Mapping):
        return value
    raise _wrong_type(value, go_type)


def _array(value: Any, go_type: str) -> list[Any] | None:
    if value is None or isinstance(value, list):
        return value
    raise _wrong_type(value, go_type)


def _string(value: Any, go_type: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise _wrong_type(value, go_type)


def _integer(value: Any, go_type: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _wrong_type(value, go_type)


def _strings(value: Any, go_type: str) -> list[str] | None:
    items = _array(value, go_type)
    return None if items is None else [_string(item, go_type) for item in items]


def _string_map(value: Any, go_type: str) -> dict[str, str]:
    return {key: _string(item, go_type)
            for key, item in (_object(value, go_type) or {}).items()}


def _node_name(item: Any) -> str:
    meta = _object(_field(_object(item, "v1.Node"), "metadata"), "v1.ObjectMeta")
    return _string(_field(meta, "name"), "ObjectMeta.Name")


def _field(obj: Any, name: str) -> Any:
    """A field of a decoded JSON object, matched case-insensitively like Go's decoder."""
    if not isinstance(obj, Mapping):
        return None
    if name in obj:
        return obj[name]
    lowered = name.lower()
    return next((v for k, v in obj.items() if k.lower() == lowered), None)


def _transport_error(url: str, exc: BaseException) -> str:
    """The transport failure as Go's net/http words the common ones."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError | socket.timeout):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    if isinstance(reason, ConnectionRefusedError):
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"dial tcp {parts.hostname}:{port}: connect: connection refused"
    return str(reason) or type(reason).__name__


def _tls_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    """upstream's makeTransport: TLS when the URL is https; with enableHTTPS and no CA the
    server's certificate is not verified."""
    if urlsplit(config.url_prefix).scheme != "https":
        return None
    tls = config.tls or ExtenderTLS()
    has_ca = bool(tls.ca_file or tls.ca_data)
    context = ssl.create_default_context(
        cafile=tls.ca_file or None, cadata=tls.ca_data.decode() if tls.ca_data else None
    )
    if tls.insecure or (config.enable_https and not has_ca):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls.cert_file or tls.cert_data:
        context.load_cert_chain(*_cert_files(tls))
    if tls.server_name:
        original = context.wrap_socket

        def wrap(sock: socket.socket, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
            kwargs["server_hostname"] = tls.server_name
            return original(sock, *args, **kwargs)

        context.wrap_socket = wrap  # type: ignore[method-assign]
    return context


def _cert_files(tls: ExtenderTLS) -> tuple[str, str]:
    """Client certificate and key as files (``ssl`` reads only files), written once."""
    if tls.cert_file:
        return tls.cert_file, tls.key_file or tls.cert_file
    paths = []
    for data in (tls.cert_data, tls.key_data):
        handle, path = tempfile.mkstemp(prefix="extender-", suffix=".pem")
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths[0], paths[1]
