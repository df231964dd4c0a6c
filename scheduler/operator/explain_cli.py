"""``secondary-scheduler explain NAMESPACE/POD`` and ``kubectl why pod NAME -n NS``.

Where the answer comes from, in order:

1. ``--scheduler-url URL``: that scheduler's ``/debug/explain`` (its live cache);
2. else a Ready scheduler pod (``--scheduler-namespace``, label
   ``app.kubernetes.io/name=secondary-scheduler``), through ``kubectl port-forward``;
3. else, or with ``--one-shot``: the cluster is listed (nodes, pods, namespaces,
   PodDisruptionBudgets, PriorityClasses) and the same framework runs in this process, with
   the configuration of ``--config`` (default: the default profile).

Both ask as the user of the kubeconfig (its bearer token or client certificate): the
scheduler answers only a user the API server allows to get the pod (manifests/
developer-rbac.yaml has a ClusterRole for it).

A pod that cannot be explained (unknown, already bound, no permission, API unreachable) gets
one line on stderr and exit status 1; bad usage exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from scheduler.config import default_config, load_config_file
from scheduler.explain import (
    ExplainError,
    Listing,
    as_dict,
    explain,
    from_dict,
    scheduler_from_listing,
    to_text,
)
from scheduler.framework.events import CONFIG_MAP_UPDATE
from scheduler.framework.registry import ConfigError
from scheduler.operator.app import VOLUME_PATHS
from scheduler.operator.explain_endpoint import PATH, pod_path
from scheduler.operator.kubeapi import KubeApi, KubeconfigError, api_client_from
from scheduler.operator.reflector import ListError, list_all
from scheduler.operator.serving.options import SECURE_PORT
from scheduler.plugins.registry import installed_registry
from scheduler.scheduler import Scheduler

SCHEDULER_NAMESPACE = "secondary-scheduler"
SCHEDULER_SELECTOR = "app.kubernetes.io/name=secondary-scheduler"
SERVING_PORT_NAME = "https"
LISTS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
    "pdbs": "/apis/policy/v1/poddisruptionbudgets",
    "priority_classes": "/apis/scheduling.k8s.io/v1/priorityclasses",
    **VOLUME_PATHS,
}
# Without these the answer would be wrong, not just less detailed.
REQUIRED_LISTS = ("nodes", "pods")


class ExplainFailedError(Exception):
    """One line for stderr, then exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    """``secondary-scheduler explain NAMESPACE/POD``."""
    parser = _parser("secondary-scheduler explain", "NAMESPACE/POD")
    parser.add_argument("target", metavar="NAMESPACE/POD")
    args = parser.parse_args(argv)
    namespace, slash, name = args.target.partition("/")
    if not slash or not namespace or not name:
        parser.error(f"expected NAMESPACE/POD, got {args.target!r}")
    return run(args, namespace, name)


def kubectl_why(argv: Sequence[str] | None = None) -> int:
    """``kubectl why pod NAME [-n NAMESPACE]`` (kubectl runs ``kubectl-why`` from the PATH)."""
    parser = _parser("kubectl why", "pod NAME")
    parser.add_argument("kind", metavar="pod", choices=("pod", "pods", "po"))
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("-n", "--namespace", help="default: the kubeconfig context's, else "
                        "'default'")
    args = parser.parse_args(argv)
    name = args.name.removeprefix("pod/").removeprefix("pods/")
    return run(args, args.namespace or _context_namespace(args.kubeconfig), name)


def _parser(prog: str, target: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"Why is {target} pending? Every Filter plugin on every node, the scores, "
                    "the preemption it would cause, and what would help.")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--profile", help="the scheduler profile to ask (default: the pod's "
                        "schedulerName if it is one of ours, else the first profile)")
    parser.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config, or "
                        "in-cluster credentials")
    parser.add_argument("--scheduler-url", help="a running scheduler's secure port, e.g. "
                        "https://127.0.0.1:10259 (after kubectl port-forward)")
    parser.add_argument("--scheduler-ca-file", help="CA that signed the scheduler's serving "
                        "certificate (default: not verified on 127.0.0.1/localhost, refused "
                        "elsewhere)")
    parser.add_argument("--insecure-skip-tls-verify", action="store_true",
                        help="do not verify the scheduler's certificate on any host")
    parser.add_argument("--kubectl", default="kubectl",
                        help="kubectl used to port-forward to a scheduler pod (default: "
                             "kubectl on the PATH)")
    parser.add_argument("--scheduler-namespace", default=SCHEDULER_NAMESPACE,
                        help=f"where to look for scheduler pods (default {SCHEDULER_NAMESPACE})")
    parser.add_argument("--one-shot", action="store_true",
                        help="do not ask a running scheduler: list the cluster and compute here")
    parser.add_argument("--config", help="scheduler configuration for --one-shot (default: "
                        "the default profile)")
    parser.add_argument("--max-nodes", type=int, default=50,
                        help="nodes shown in the text tables (0: all; default 50)")
    parser.add_argument("--timeout", type=float, default=15.0,
                        help="seconds to wait for a running scheduler (default 15)")
    return parser


def run(args: argparse.Namespace, namespace: str, name: str) -> int:
    try:
        answer, source = _explain(args, namespace, name)
    except ExplainFailedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(answer, indent=2))
    else:
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(to_text(from_dict(answer), source, colour=colour, max_nodes=args.max_nodes),
              end="")
    return 0


def _explain(args: argparse.Namespace, namespace: str, name: str) -> tuple[dict[str, Any], str]:
    try:
        api = KubeApi(api_client_from(args.kubeconfig))
    except KubeconfigError as exc:
        raise ExplainFailedError(str(exc)) from exc
    pod = _get_pod(api, namespace, name)
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        raise ExplainFailedError(f"pod {namespace}/{name} is already bound to {bound}")
    tried: list[str] = []
    if not args.one_shot:
        for url, fetch in _live_sources(api, args):
            answer = fetch(namespace, name, args.profile)
            if isinstance(answer, str):
                tried.append(f"{url}: {answer}")
                continue
            return answer, answer.get("source", url)
    source = "one-shot: computed in this process from a listing of the cluster"
    if tried:
        source += " (no scheduler answered: " + "; ".join(tried) + ")"
    elif not args.one_shot:
        source += " (no running scheduler found)"
    return _one_shot(api, args, pod, source), source


def _get_pod(api: KubeApi, namespace: str, name: str) -> dict[str, Any]:
    response = api.get(pod_path(namespace, name))
    if response.status == 404:
        raise ExplainFailedError(f"pod {namespace}/{name} not found")
    if response.status in (401, 403):
        raise ExplainFailedError(
            f"no permission to read pod {namespace}/{name}: {response.message()}")
    if response.status == 503:
        raise ExplainFailedError(f"cannot reach the API server: {response.message()}")
    if not response.ok:
        raise ExplainFailedError(
            f"reading pod {namespace}/{name}: {response.status} {response.message()}")
    body: dict[str, Any] = response.body
    return body


# -- a running scheduler ----------------------------------------------------------------------
class _Fetch:
    """Ask one scheduler; a dict is its answer, a string why it could not answer. A
    scheduler's refusal (unknown profile, bound pod) is final: :class:`ExplainFailedError`."""

    def __call__(self, namespace: str, name: str, profile: str | None) -> dict[str, Any] | str:
        query = {"namespace": namespace, "name": name}
        if profile:
            query["profile"] = profile
        status, body = self.get(query)
        if status == 200 and isinstance(body, dict):
            return body
        message = body.get("message") if isinstance(body, dict) else None
        if status in (400, 409) and message:
            raise ExplainFailedError(str(message))
        return f"HTTP {status} {message or ''}".strip()

    def get(self, query: dict[str, str]) -> tuple[int, Any]:
        raise NotImplementedError


class _Direct(_Fetch):
    """The scheduler's secure port, as the user: their bearer token or client certificate
    from the kubeconfig (the scheduler has the API server review them)."""

    def __init__(self, url: str, timeout: float, api: KubeApi, args: argparse.Namespace
                 ) -> None:
        self.url = url.rstrip("/") + PATH
        self.timeout = timeout
        configuration = api.client.configuration
        token = configuration.auth_settings().get("BearerToken")
        self.headers = {"Authorization": token["value"]} if token and token["value"] else {}
        self.context = _tls_context(url, args, configuration)

    def get(self, query: dict[str, str]) -> tuple[int, Any]:
        """The answer; a 429 (the scheduler keeps explains to a share of its time) is asked
        again after its Retry-After while that is within the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            status, body = self._get_once(query)
            retry = body.get("retryAfterSeconds") if isinstance(body, dict) else None
            if status != 429 or not isinstance(retry, int | float) or (
                    time.monotonic() + retry > deadline):
                return status, body
            time.sleep(retry)

    def _get_once(self, query: dict[str, str]) -> tuple[int, Any]:
        request = urllib.request.Request(f"{self.url}?{urlencode(query)}", headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout,
                                        context=self.context) as r:
                return int(r.status), json.loads(r.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read())
            except ValueError:
                return exc.code, None
        except (OSError, ValueError) as exc:
            return 0, {"message": str(exc)}


def _tls_context(url: str, args: argparse.Namespace, configuration: Any) -> ssl.SSLContext:
    """Verified against ``--scheduler-ca-file``; else unverified, which is allowed only on
    the loopback (a port-forward: the tunnel is the API server's) or when asked: the user's
    credentials go to that server."""
    if args.scheduler_ca_file:
        context = ssl.create_default_context(cafile=args.scheduler_ca_file)
    elif args.insecure_skip_tls_verify or _loopback(url):
        context = ssl._create_unverified_context()
    else:
        raise ExplainFailedError(f"{url}: pass --scheduler-ca-file (the scheduler's serving "
                                 "CA) or --insecure-skip-tls-verify")
    if configuration.cert_file and configuration.key_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


class _PortForwarded(_Fetch):
    """Through ``kubectl port-forward`` to one scheduler pod: the API server's pod proxy
    would not carry the user's identity, a port-forward tunnel does not touch it."""

    def __init__(self, api: KubeApi, args: argparse.Namespace, namespace: str, pod: str,
                 port: int) -> None:
        self.api = api
        self.args = args
        self.argv = [args.kubectl, "port-forward", "-n", namespace, f"pod/{pod}", f":{port}"]
        if args.kubeconfig:
            self.argv[1:1] = ["--kubeconfig", args.kubeconfig]

    def __call__(self, namespace: str, name: str, profile: str | None) -> dict[str, Any] | str:
        try:
            proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, text=True)
        except OSError as exc:
            return f"cannot run {self.args.kubectl}: {exc}"
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) ", first)
            if match is None:
                error = proc.stderr.read().strip() if proc.stderr else ""
                return f"kubectl port-forward: {error or first.strip()}"
            url = f"https://127.0.0.1:{match.group(1)}"
            return _Direct(url, self.args.timeout, self.api, self.args)(namespace, name, profile)
        finally:
            proc.terminate()
            proc.wait(10)


def _live_sources(api: KubeApi, args: argparse.Namespace) -> list[tuple[str, _Fetch]]:
    if args.scheduler_url:
        return [(args.scheduler_url, _Direct(args.scheduler_url, args.timeout, api, args))]
    namespace = args.scheduler_namespace
    response = api.get(f"/api/v1/namespaces/{quote(namespace, safe='')}/pods",
                       {"labelSelector": SCHEDULER_SELECTOR})
    if not response.ok:
        return []
    sources: list[tuple[str, _Fetch]] = []
    for pod in response.body.get("items") or []:
        if not _ready(pod):
            continue
        name = pod["metadata"]["name"]
        sources.append((f"pod {namespace}/{name}",
                        _PortForwarded(api, args, namespace, name, _serving_port(pod))))
    return sources


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _serving_port(pod: dict[str, Any]) -> int:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == SERVING_PORT_NAME:
                return int(port.get("containerPort") or SECURE_PORT)
    return SECURE_PORT


# -- one-shot ---------------------------------------------------------------------------------
def _one_shot(
    api: KubeApi, args: argparse.Namespace, pod: dict[str, Any], source: str
) -> dict[str, Any]:
    try:
        registry = installed_registry()
        config = load_config_file(args.config, registry) if args.config else default_config(
            registry)
    except ConfigError as exc:
        problems = "; ".join(str(exc).splitlines())
        raise ExplainFailedError(f"invalid configuration: {problems}") from exc
    listed: dict[str, list[dict[str, Any]]] = {}
    notes = []
    for key, path in LISTS.items():
        try:
            listed[key], _ = list_all(api, path, page_size=500)
        except ListError as exc:
            if key in REQUIRED_LISTS:
                what = "no permission to list" if exc.status in (401, 403) else "cannot list"
                raise ExplainFailedError(f"{what} {key}: {exc.message}") from exc
            listed[key] = []
            notes.append(f"{key} could not be listed ({exc.status} {exc.message}): the answer "
                         "ignores them")
    s, intake = scheduler_from_listing(config, registry, Listing(**listed))
    notes += _read_watched_config_maps(api, s)
    try:
        explanation = explain(s, intake.pod_info(pod), args.profile)
    except ExplainError as exc:
        raise ExplainFailedError(str(exc)) from exc
    explanation.notes += notes
    return as_dict(explanation, source)


def _read_watched_config_maps(api: KubeApi, s: Scheduler) -> list[str]:
    """Give plugins the ConfigMaps they watch, as the running scheduler has them; notes for
    those that could not be read."""
    notes = []
    for namespace, name in s.config_map_watches:
        response = api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        if response.ok or response.status == 404:
            data = dict(response.body.get("data") or {}) if response.ok else None
            s.config_map_changed(namespace, name, data, CONFIG_MAP_UPDATE)
        else:
            notes.append(f"ConfigMap {namespace}/{name} could not be read ({response.status} "
                         f"{response.message()}): the plugins watching it see none")
    s.refresh()
    return notes


def _context_namespace(kubeconfig: str | None) -> str:
    from kubernetes import config

    try:
        _, active = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except Exception:  # no kubeconfig: in-cluster or a later error says what is wrong
        return "default"
    return str(((active or {}).get("context") or {}).get("namespace") or "default")
