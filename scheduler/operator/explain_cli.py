"""``secondary-scheduler explain NAMESPACE/POD`` and ``kubectl why pod NAME -n NS``.

Where the answer comes from, in order:

1. ``--scheduler-url URL``: that scheduler's ``/debug/explain`` (its live cache);
2. else a Ready scheduler pod (``--scheduler-namespace``, label
   ``app.kubernetes.io/name=secondary-scheduler``), through the API server's pod proxy;
3. else, or with ``--one-shot``: the cluster is listed (nodes, pods, namespaces,
   PodDisruptionBudgets, PriorityClasses) and the same framework runs in this process, with
   the configuration of ``--config`` (default: the default profile).

A pod that cannot be explained (unknown, already bound, no permission, API unreachable) gets
one line on stderr and exit status 1; bad usage exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from scheduler.config import default_config, load_config_file
from scheduler.explain import ExplainError, Listing, explain, scheduler_from_listing
from scheduler.explain_render import as_dict, from_dict, to_text
from scheduler.framework.events import CONFIG_MAP_UPDATE
from scheduler.framework.registry import ConfigError
from scheduler.operator.app import VOLUME_PATHS
from scheduler.operator.explain_endpoint import PATH, pod_path
from scheduler.operator.kubeapi import KubeApi, KubeconfigError, api_client_from
from scheduler.operator.reflector import ListError, list_all
from scheduler.plugins.registry import installed_registry
from scheduler.scheduler import Scheduler

SCHEDULER_NAMESPACE = "secondary-scheduler"
SCHEDULER_SELECTOR = "app.kubernetes.io/name=secondary-scheduler"
HEALTH_PORT = 10259
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
    parser.add_argument("--scheduler-url", help="a running scheduler's health endpoint, e.g. "
                        "http://127.0.0.1:10259")
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
    def __init__(self, url: str, timeout: float) -> None:
        self.url = url.rstrip("/") + PATH
        self.timeout = timeout

    def get(self, query: dict[str, str]) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(f"{self.url}?{urlencode(query)}",
                                        timeout=self.timeout) as r:
                return int(r.status), json.loads(r.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read())
            except ValueError:
                return exc.code, None
        except (OSError, ValueError) as exc:
            return 0, {"message": str(exc)}


class _Proxied(_Fetch):
    """Through the API server's ``pods/proxy`` subresource."""

    def __init__(self, api: KubeApi, namespace: str, pod: str, port: int) -> None:
        self.api = api
        self.path = f"{pod_path(namespace, pod)}:{port}/proxy{PATH}"

    def get(self, query: dict[str, str]) -> tuple[int, Any]:
        response = self.api.get(self.path, query)
        return response.status, response.body


def _live_sources(api: KubeApi, args: argparse.Namespace) -> list[tuple[str, _Fetch]]:
    if args.scheduler_url:
        return [(args.scheduler_url, _Direct(args.scheduler_url, args.timeout))]
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
                        _Proxied(api, namespace, name, _health_port(pod))))
    return sources


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _health_port(pod: dict[str, Any]) -> int:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == "health":
                return int(port.get("containerPort") or HEALTH_PORT)
    return HEALTH_PORT


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
