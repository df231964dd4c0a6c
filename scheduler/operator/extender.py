"""kube-scheduler's HTTP extender client (upstream's ``HTTPExtender``, pkg/scheduler/extender.go).

Each call POSTs JSON to ``urlPrefix/verb`` with the extender's own timeout and TLS settings,
in upstream's wire format (``k8s.io/kube-scheduler/extender/v1``: Go field names, decoded
case-insensitively as Go's encoding/json does). Errors carry upstream's wording, so the
pod's condition reads as it would under kube-scheduler.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import tempfile
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
        result = self._send(self.config.filter_verb, self._args(pod, nodes, snapshot))
        error = _field(result, "Error")
        if error:
            raise ExtenderError(str(error))
        names = _field(result, "NodeNames")
        listed = _field(result, "Nodes")
        passed: list[str] = []
        if self.config.node_cache_capable and names is not None:
            given = set(nodes)
            for name in names:
                if name not in given:
                    raise ExtenderError(f"extender {self.name!r} claims a filtered node "
                                        f"{name!r} which is not found in the input node list")
                passed.append(name)
        elif listed is not None:
            items = _field(listed, "Items") or []
            passed = [((item.get("metadata") or {}).get("name") or "") for item in items]
        return ExtenderFilterResult(
            passed,
            failed=dict(_field(result, "FailedNodes") or {}),
            failed_and_unresolvable=dict(_field(result, "FailedAndUnresolvableNodes") or {}),
        )

    def prioritize(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> Mapping[str, int]:
        if not self.config.prioritize_verb:
            return dict.fromkeys(nodes, 0)
        result = self._send(self.config.prioritize_verb, self._args(pod, nodes, snapshot))
        scores: dict[str, int] = {}
        for entry in result or []:
            scores[str(_field(entry, "Host"))] = int(_field(entry, "Score") or 0)
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
        result = self._send(self.config.preempt_verb, args)
        out: dict[str, Victims] = {}
        for node, meta in (_field(result, "NodeNameToMetaVictims") or {}).items():
            row = snapshot.row_of(node)
            if row is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            on_node = {p.uid: p for p in snapshot.pods_on(row)}
            pods: list[PodInfo] = []
            for meta_pod in _field(meta, "Pods") or []:
                uid = str(_field(meta_pod, "UID"))
                if uid not in on_node:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: "
                        f"{node}, but the pod is not found on that node")
                pods.append(on_node[uid])
            out[node] = Victims(pods, int(_field(meta, "NumPDBViolations") or 0))
        return out

    def bind(self, pod: PodInfo, node: str) -> None:
        result = self._send(self.config.bind_verb, {
            "PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node,
        })
        error = _field(result, "Error")
        if error:
            raise ExtenderError(str(error))

    # -- the wire -------------------------------------------------------------------------
    def _args(self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot) -> Any:
        if self.config.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": list(nodes)}
        table = snapshot.nodes
        objects = [table.raw[table.index[name]] for name in nodes]
        return {"Pod": pod.raw, "Nodes": {"metadata": {}, "items": objects}, "NodeNames": None}

    def _send(self, verb: str, args: Any) -> Any:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        request = urllib.request.Request(
            url, data=json.dumps(args).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.config.http_timeout, context=self._context
            ) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise ExtenderError(
                f"failed {verb} with extender at URL {url}, code {exc.code}") from exc
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise ExtenderError(f'Post "{url}": {_transport_error(url, exc)}') from exc
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ExtenderError(f"{verb} with extender at URL {url}: invalid JSON: {exc}") from exc


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
