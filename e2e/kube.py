"""Small helpers for the e2e tests and the demo: a JSON client, manifests, waiting, events,
a namespace recorder, and kube-scheduler's "0/N nodes are available" message.

Everything is plain dicts as the API serves them (no typed models): the tests assert on the
exact JSON the scheduler wrote.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes import config as k8s_config
from kubernetes.utils.quantity import parse_quantity

SCHEDULER_NAME = "secondary-scheduler"
REPORTING_CONTROLLER = "secondary-scheduler"
TEST_LABEL = "e2e.secondary-scheduler.io/test"
GROUP_LABEL = "e2e.secondary-scheduler.io/group"
KWOK_TYPE_LABEL = "type"  # type=kwok on every fake node (the harness's node_objects)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"

# kube-scheduler v1.37 reason strings (pkg/scheduler/framework/plugins/...).
NODE_SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
INSUFFICIENT_CPU = "Insufficient cpu"
INSUFFICIENT_MEMORY = "Insufficient memory"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER_PREEMPT = "not eligible due to preemptionPolicy=Never."


# ----------------------------------------------------------------------------- client
class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        message = body.get("message") if isinstance(body, Mapping) else body
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status
        self.body = body


class Kube:
    """A thin JSON client over the ``kubernetes`` package's configuration and transport."""

    def __init__(self, kubeconfig: str | Path) -> None:
        self.kubeconfig = str(kubeconfig)
        self.client = k8s_config.new_client_from_config(config_file=self.kubeconfig)

    def clone(self) -> Kube:
        """Another client with its own connection pool (for long-running watches)."""
        return Kube(self.kubeconfig)

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = 30.0,
        accept: str = JSON,
    ) -> Any:
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        headers = {"Accept": accept, "Content-Type": content_type}
        _, url, headers, serialized, _ = self.client.param_serialize(
            method, path, query_params=params, header_params=headers, body=body,
            auth_settings=["BearerToken"],
        )
        return self.client.call_api(method, url, headers, serialized, _request_timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> tuple[int, Any]:
        """(status, parsed body); never raises for an HTTP error status."""
        raw = self._call(method, path, body, query, content_type, accept=accept)
        data = raw.read()
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = data.decode(errors="replace")
        return raw.status, parsed

    def _ok(self, method: str, path: str, status: int, body: Any) -> Any:
        if not 200 <= status < 300:
            raise ApiError(method, path, status, body)
        return body

    def get(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        """The object, or None if it does not exist."""
        status, body = self.request("GET", path, query=query)
        if status == 404:
            return None
        return self._ok("GET", path, status, body)

    def list(
        self, path: str, label_selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        status, body = self.request("GET", path, query=query)
        return list(self._ok("GET", path, status, body).get("items") or [])

    def ensure_namespace(self, name: str) -> None:
        """Create the namespace unless it exists (the scheduler's lease lives in one)."""
        status, body = self.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status != 409:
            self._ok("POST", "/api/v1/namespaces", status, body)

    def create(self, path: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        status, body = self.request("POST", path, obj)
        return dict(self._ok("POST", path, status, body))

    def patch(
        self, path: str, patch: Mapping[str, Any], content_type: str = MERGE_PATCH
    ) -> dict[str, Any]:
        status, body = self.request("PATCH", path, patch, content_type=content_type)
        return dict(self._ok("PATCH", path, status, body))

    def delete(self, path: str, grace: int | None = None, missing_ok: bool = True) -> None:
        query = {"gracePeriodSeconds": grace} if grace is not None else None
        status, body = self.request("DELETE", path, query=query)
        if status == 404 and missing_ok:
            return
        self._ok("DELETE", path, status, body)

    def watch(
        self, path: str, resource_version: str, timeout_seconds: int = 30,
        on_response: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        query = {"watch": "true", "resourceVersion": resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_seconds)}
        raw = self._call("GET", path, None, query, JSON, (10.0, timeout_seconds + 15.0))
        if raw.status != 200:
            yield {"type": "ERROR", "object": {"code": raw.status, "message": raw.read()[:300]}}
            return
        if on_response is not None:
            on_response(raw)
        buffer = b""
        try:
            for chunk in raw.response.stream(64 * 1024, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            raw.response.release_conn()


# ----------------------------------------------------------------------------- paths
def ns_path(ns: str, plural: str, name: str = "", group: str = "") -> str:
    base = f"/apis/{group}" if group else "/api/v1"
    path = f"{base}/namespaces/{ns}/{plural}"
    return f"{path}/{name}" if name else path


def pods_path(ns: str, name: str = "") -> str:
    return ns_path(ns, "pods", name)


NODES = "/api/v1/nodes"
NAMESPACES = "/api/v1/namespaces"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
PDBS_GROUP = "policy/v1"
EVENTS_GROUP = "events.k8s.io/v1"


# ----------------------------------------------------------------------------- waiting
def wait_until(
    predicate: Callable[[], Any],
    timeout: float = 30.0,
    what: str = "a condition",
    interval: float = 0.2,
    diagnose: Callable[[], str] | None = None,
) -> Any:
    """Poll until ``predicate()`` is truthy and return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = ""
            if diagnose is not None:
                try:
                    detail = "\n" + diagnose()
                except Exception as exc:  # diagnosis is best effort
                    detail = f"\n(diagnosis failed: {exc!r})"
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


# ----------------------------------------------------------------------------- manifests
def pod_manifest(
    name: str,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    scheduler: str | None = SCHEDULER_NAME,
    priority_class: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    spread: Sequence[Mapping[str, Any]] | None = None,
    grace: int = 0,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "app", "image": "registry.invalid/e2e/app:1"}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {
        "containers": [container],
        "terminationGracePeriodSeconds": grace,
        "automountServiceAccountToken": False,
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    optional = {
        "priorityClassName": priority_class,
        "nodeSelector": dict(node_selector) if node_selector else None,
        "nodeName": node_name,
        "tolerations": [dict(t) for t in tolerations] if tolerations else None,
        "affinity": dict(affinity) if affinity else None,
        "topologySpreadConstraints": [dict(s) for s in spread] if spread else None,
    }
    spec.update({k: v for k, v in optional.items() if v is not None})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def priority_class_manifest(
    name: str,
    value: int,
    preemption_policy: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    pc: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "value": value,
        "description": "e2e test priority class",
    }
    if preemption_policy:
        pc["preemptionPolicy"] = preemption_policy
    return pc


def pdb_manifest(
    name: str, match_labels: Mapping[str, str], min_available: int | None = None,
    max_unavailable: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name}, "spec": spec}


# ----------------------------------------------------------------------------- pods / nodes
def condition(obj: Mapping[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def node_of(pod: Mapping[str, Any] | None) -> str:
    return str(((pod or {}).get("spec") or {}).get("nodeName") or "")


def nominated(pod: Mapping[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("nominatedNodeName") or "")


def terminating(pod: Mapping[str, Any] | None) -> bool:
    return bool(((pod or {}).get("metadata") or {}).get("deletionTimestamp"))


def node_ready(node: Mapping[str, Any]) -> bool:
    """Ready=True and no longer carrying the not-ready/unreachable taints admission adds."""
    ready = condition(node, "Ready")
    taints = (node.get("spec") or {}).get("taints") or []
    lifecycle = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    return bool(ready and ready.get("status") == "True") and not any(
        t.get("key") in lifecycle for t in taints
    )


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """Effective requests (containers summed, init containers as a max, plus overhead)."""
    spec = pod.get("spec") or {}
    total: Counter[str] = Counter()
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] += parse_quantity(v)
    for c in spec.get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total[k], parse_quantity(v))
    for k, v in (spec.get("overhead") or {}).items():
        total[k] += parse_quantity(v)
    return dict(total)


def allocatable(node: Mapping[str, Any]) -> dict[str, Decimal]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return {k: parse_quantity(v) for k, v in alloc.items()}


def overcommitted(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Nodes whose non-terminal bound pods request more cpu/memory/pods than allocatable."""
    used: dict[str, Counter[str]] = {}
    for p in pods:
        name = node_of(p)
        if not name or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        u = used.setdefault(name, Counter())
        u.update(pod_requests(p))
        u["pods"] += 1
    out = []
    for n in nodes:
        alloc = allocatable(n)
        u = used.get(n["metadata"]["name"], Counter())
        for res in ("cpu", "memory", "pods"):
            if res in alloc and u[res] > alloc[res]:
                out.append(f"{n['metadata']['name']}: {res} {u[res]} > {alloc[res]}")
    return out


# ----------------------------------------------------------------------------- events
def events(kube: Kube, ns: str) -> list[dict[str, Any]]:
    items = kube.list(ns_path(ns, "events", group=EVENTS_GROUP))
    return sorted(items, key=_event_time)


def _event_time(event: Mapping[str, Any]) -> str:
    return str(event.get("eventTime") or event["metadata"].get("creationTimestamp") or "")


def events_for(
    kube: Kube, ns: str, pod: str, reason: str | None = None, uid: str | None = None
) -> list[dict[str, Any]]:
    out = []
    for e in events(kube, ns):
        regarding = e.get("regarding") or {}
        if regarding.get("kind") != "Pod" or regarding.get("name") != pod:
            continue
        if uid is not None and regarding.get("uid") != uid:
            continue
        if reason is not None and e.get("reason") != reason:
            continue
        out.append(e)
    return out


# ----------------------------------------------------------------------------- messages
def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def foreign_node_reason(
    node: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]] = ()
) -> str:
    """Why a node the test did not create rejects a pod whose nodeSelector targets the test's
    nodes: the first failing filter in kube-scheduler's order (NodeUnschedulable,
    TaintToleration, NodeAffinity)."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not tolerates(
        tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        return NODE_UNSCHEDULABLE
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return UNTOLERATED_TAINT
    return NODE_SELECTOR_MISMATCH


def fit_error(num_all: int, reasons: Mapping[str, int]) -> str:
    """framework.FitError.Error(): "0/N nodes are available: <sorted 'count reason'>."."""
    entries = sorted(f"{count} {reason}" for reason, count in reasons.items() if count)
    message = f"0/{num_all} nodes are available:"
    if entries:
        message += " " + ", ".join(entries) + "."
    return message


def unschedulable_message(
    all_nodes: Sequence[Mapping[str, Any]],
    filter_reasons: Mapping[str, str],
    preemption: Mapping[str, str] | str | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The FailedScheduling message kube-scheduler writes for a pod whose nodeSelector
    targets the test's nodes.

    ``filter_reasons``: node name -> reason, for the test's nodes; every other node gets
    :func:`foreign_node_reason`. ``preemption``: a PostFilter message (str), or node name ->
    dry-run reason (nodes not listed: "Preemption is not helpful for scheduling"), or None
    when DefaultPreemption wrote nothing.
    """
    counts: Counter[str] = Counter()
    for n in all_nodes:
        name = n["metadata"]["name"]
        counts[filter_reasons.get(name) or foreign_node_reason(n, tolerations)] += 1
    message = fit_error(len(all_nodes), counts)
    if isinstance(preemption, str):
        message += f" preemption: {preemption}"
    elif preemption is not None:
        pcounts = Counter(preemption.get(n["metadata"]["name"], NOT_HELPFUL) for n in all_nodes)
        message += f" preemption: {fit_error(len(all_nodes), pcounts)}"
    return message


# ----------------------------------------------------------------------------- recorder
class Recorder:
    """Watches the pods and Events of one namespace in a background thread and keeps every
    version seen, so tests can assert on states too short-lived to poll for (a victim's
    DisruptionTarget condition, a nomination that is later cleared, a pod's only binding)."""

    def __init__(self, kube: Kube, ns: str) -> None:
        self.kube = kube.clone()
        self.ns = ns
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._pods: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
        self._events: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._synced = {"pods": threading.Event(), "events": threading.Event()}

    def start(self) -> Recorder:
        for kind, path in (("pods", pods_path(self.ns)),
                           ("events", ns_path(self.ns, "events", group=EVENTS_GROUP))):
            th = threading.Thread(target=self._run, args=(kind, path), daemon=True,
                                  name=f"recorder-{kind}-{self.ns}")
            th.start()
            self._threads.append(th)
        for ev in self._synced.values():
            ev.wait(15)
        return self

    def stop(self) -> None:
        self._stop.set()

    def _store(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        with self._lock:
            if kind == "pods":
                self._pods.setdefault(obj["metadata"]["name"], []).append((now, etype, obj))
            elif etype != "DELETED":
                self._events[obj["metadata"]["name"]] = obj

    def _run(self, kind: str, path: str) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    status, body = self.kube.request("GET", path)
                    if status != 200:
                        time.sleep(0.5)
                        continue
                    for item in body.get("items") or []:
                        self._store(kind, "LISTED", item)
                    rv = body["metadata"]["resourceVersion"]
                    self._synced[kind].set()
                for event in self.kube.watch(path, rv, timeout_seconds=20):
                    if self._stop.is_set():
                        return
                    etype, obj = event.get("type"), event.get("object") or {}
                    if etype == "ERROR":
                        rv = ""  # 410 Gone or similar: relist
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion") or rv
                    if etype != "BOOKMARK":
                        self._store(kind, str(etype), obj)
            except Exception:
                if self._stop.is_set():
                    return
                time.sleep(0.5)

    # -- queries --------------------------------------------------------------------------
    def history(self, name: str) -> list[tuple[float, str, dict[str, Any]]]:
        with self._lock:
            return list(self._pods.get(name, []))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._pods)

    def first(self, name: str, predicate: Callable[[dict[str, Any]], Any]) -> float | None:
        """Monotonic time at which a version of the pod first satisfied the predicate."""
        for t, etype, obj in self.history(name):
            if etype != "DELETED" and predicate(obj):
                return t
        return None

    def ever(self, name: str, predicate: Callable[[dict[str, Any]], Any]) -> bool:
        return self.first(name, predicate) is not None

    def deleted_at(self, name: str) -> float | None:
        for t, etype, _ in self.history(name):
            if etype == "DELETED":
                return t
        return None

    def bound_at(self, name: str) -> float | None:
        return self.first(name, node_of)

    def nodes_seen(self, name: str) -> list[str]:
        """Distinct spec.nodeName values the pod had, in order (a pod is bound once: <= 1)."""
        seen: list[str] = []
        for _, _etype, obj in self.history(name):
            n = node_of(obj)
            if n and (not seen or seen[-1] != n):
                seen.append(n)
        return seen

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._events.values())
        return sorted(items, key=_event_time)

    def events_for(self, pod: str, reason: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events()
                if (e.get("regarding") or {}).get("name") == pod
                and (reason is None or e.get("reason") == reason)]


# ----------------------------------------------------------------------------- diagnosis
def describe_namespace(kube: Kube, ns: str, node_names: Iterable[str] = ()) -> str:
    """Pods (node, phase, nomination, conditions), the test's nodes, and Events: for failures."""
    lines = [f"--- namespace {ns}"]
    try:
        for p in kube.list(pods_path(ns)):
            meta, st = p["metadata"], p.get("status") or {}
            conds = "; ".join(
                f"{c['type']}={c['status']}"
                + (f" ({c.get('reason')}: {c.get('message')})" if c.get("reason") else "")
                for c in st.get("conditions") or [])
            req = {k: str(v) for k, v in pod_requests(p).items()}
            lines.append(
                f"pod {meta['name']} prio={p['spec'].get('priority')} node={node_of(p) or '-'} "
                f"phase={st.get('phase')} nominated={nominated(p) or '-'}"
                f"{' TERMINATING' if terminating(p) else ''} req={req} [{conds}]")
        for name in node_names:
            n = kube.get(f"{NODES}/{name}")
            if n is None:
                lines.append(f"node {name}: (gone)")
                continue
            lines.append(
                f"node {name}: ready={node_ready(n)} alloc={n['status'].get('allocatable')} "
                f"taints={n['spec'].get('taints')} unschedulable={n['spec'].get('unschedulable')}")
        for e in events(kube, ns):
            lines.append(
                f"event {e.get('type')} {e.get('reason')} {(e.get('regarding') or {}).get('name')} "
                f"by {e.get('reportingController')}: {e.get('note')}")
    except Exception as exc:
        lines.append(f"(could not describe: {exc!r})")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- secure port
def secure_get(url: str, *, token: str | None = None, kube: Kube | None = None,
               timeout: float = 10) -> tuple[int, bytes]:
    """GET on a scheduler's secure port (HTTPS, its certificate not verified: self-signed),
    as the bearer ``token``, or as ``kube``'s user by its client certificate, or anonymous."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl._create_unverified_context()
    if kube is not None:
        configuration = kube.client.configuration
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def service_account_token(kube: Kube, namespace: str, name: str) -> str:
    """A bound token of the ServiceAccount (TokenRequest), created if it does not exist."""
    accounts = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    status, body = kube.request("POST", accounts, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    if status not in (201, 409):
        raise ApiError("POST", accounts, status, body)
    answer = kube.create(f"{accounts}/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})
    return str(answer["status"]["token"])
