"""The secure port as kube-scheduler serves it (issue 33), with real ServiceAccounts and
tokens: anonymous callers get the health paths only, plain HTTP is refused, a token gets what
the API server authorizes. The metrics cases run against upstream kube-scheduler too
(E2E_SCHEDULER=kube-scheduler) and must answer the same; /debug/explain is ours only: a
developer of one namespace sees other namespaces' victims as a count, and ``kubectl why``
works with their own identity."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from e2e.conftest import REPO, Env, ReferenceScheduler
from e2e.kube import (
    NAMESPACES,
    ApiError,
    Kube,
    pod_manifest,
    pods_path,
    secure_get,
    service_account_token,
    wait_until,
)
from e2e.test_explain import GATE

RBAC = "/apis/rbac.authorization.k8s.io/v1"
METRICS_READER = "secondary-scheduler:metrics-reader"
EXPLAIN = "secondary-scheduler:explain"
ours_only = pytest.mark.skipif(os.environ.get("E2E_SCHEDULER") == "kube-scheduler",
                               reason="/debug/explain is ours only")


def base_url(env: Env) -> str:
    url = env.scheduler.url
    if url is None:
        pytest.skip("the deployed scheduler's port is not reachable from the test")
    return str(url)


def shipped_cluster_role(kube: Kube, name: str) -> None:
    """The ClusterRole as manifests/ ships it (already there when deployed)."""
    for path in (REPO / "manifests").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if (isinstance(doc, dict) and doc.get("kind") == "ClusterRole"
                    and doc["metadata"]["name"] == name):
                status, body = kube.request("POST", f"{RBAC}/clusterroles", doc)
                if status not in (201, 409):
                    raise ApiError("POST", "clusterroles", status, body)
                return
    raise AssertionError(f"no ClusterRole {name} in manifests/")


@pytest.fixture
def bindings(env: Env) -> Iterator[list[str]]:
    """ClusterRoleBindings a test makes, deleted after it."""
    made: list[str] = []
    yield made
    for name in made:
        env.kube.delete(f"{RBAC}/clusterrolebindings/{name}")


def bind_cluster_role(env: Env, made: list[str], role: str, namespace: str, account: str
                      ) -> None:
    name = f"{env.id}-{account}-{role.replace(':', '-')}"
    env.kube.create(f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]})
    made.append(name)


def test_anonymous_gets_health_only(env: Env) -> None:
    url = base_url(env)
    assert secure_get(f"{url}/healthz")[0] == 200
    status, body = secure_get(f"{url}/metrics")
    assert status == 403, body
    assert json.loads(body)["message"] == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"')
    if not isinstance(env.scheduler, ReferenceScheduler):
        status, body = secure_get(f"{url}/debug/explain?namespace={env.ns}&name=x")
        assert status == 403, body


def test_plain_http_on_the_secure_port_is_refused(env: Env) -> None:
    address = urlsplit(base_url(env))
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: scheduler\r\n\r\n")
        answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.0 400 Bad Request\r\n"), answer
    assert b"Client sent an HTTP request to an HTTPS server." in answer


def test_metrics_need_a_token_allowed_to_get_them(env: Env, bindings: list[str]) -> None:
    """healthz 200 with any token, /metrics 403 for a ServiceAccount without rights, 200
    once bound to the shipped metrics-reader ClusterRole (the authorization cache: 10 s)."""
    url = base_url(env)
    shipped_cluster_role(env.kube, METRICS_READER)
    token = service_account_token(env.kube, env.ns, "scraper")
    assert secure_get(f"{url}/healthz", token=token)[0] == 200
    status, body = secure_get(f"{url}/metrics", token=token)
    assert status == 403, body
    assert json.loads(body)["message"] == (
        f'forbidden: User "system:serviceaccount:{env.ns}:scraper" cannot get path "/metrics"')
    bind_cluster_role(env, bindings, METRICS_READER, env.ns, "scraper")
    status, body = wait_until(
        lambda: (answer := secure_get(f"{url}/metrics", token=token))[0] == 200 and answer,
        30, "/metrics 200 once the ClusterRole is bound", interval=1.0)
    assert b"scheduler_schedule_attempts_total" in body or b"# HELP" in body
    assert secure_get(f"{url}/metrics", token="not-a-token")[0] == 401


# -- /debug/explain ---------------------------------------------------------------------------
def developer(env: Env, made: list[str]) -> str:
    """A ServiceAccount of the test's namespace that may read pods there, and may get
    /debug/explain (the shipped ClusterRole); its token."""
    shipped_cluster_role(env.kube, EXPLAIN)
    token = service_account_token(env.kube, env.ns, "dev")
    roles = f"{RBAC}/namespaces/{env.ns}"
    env.kube.create(f"{roles}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
    env.kube.create(f"{roles}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dev-pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "dev", "namespace": env.ns}]})
    bind_cluster_role(env, made, EXPLAIN, env.ns, "dev")
    return token


@pytest.fixture
def other_namespace(env: Env) -> Iterator[str]:
    name = f"{env.ns}-b"
    env.kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": name}})
    wait_until(lambda: env.kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 30,
               f"the default ServiceAccount in {name}")
    yield name
    env.kube.request("DELETE", pods_path(name), query={"gracePeriodSeconds": 0})
    env.kube.delete(f"{NAMESPACES}/{name}")


def kubeconfig_for(env: Env, token: str, path: Path) -> Path:
    """The suite's kubeconfig with the developer's token as its only user."""
    config = yaml.safe_load(Path(env.kube.kubeconfig).read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    context["context"] = {**context["context"], "user": "dev", "namespace": env.ns}
    config["contexts"] = [context]
    config["users"] = [{"name": "dev", "user": {"token": token}}]
    path.write_text(yaml.safe_dump(config))
    return path


@ours_only
def test_a_developer_sees_other_namespaces_victims_as_a_count(
    env: Env, bindings: list[str], other_namespace: str, tmp_path: Path
) -> None:
    """The pending pod in A would preempt a pod of B: the admin sees B's pod named, the
    developer of A sees "1 more victim(s)" and nothing of B; a pod of B is a 403 to them,
    exactly as a pod that does not exist; `kubectl why` with their kubeconfig says the same."""
    url = base_url(env)
    (node,) = env.nodes("n", 1, cpu="2")
    low, high = env.priority_class("low", 0), env.priority_class("high", 100)
    env.kube.create(pods_path(other_namespace), pod_manifest(
        "payroll", cpu="1500m", node_name=node, priority_class=low))
    manifest = pod_manifest("urgent", cpu="1500m", priority_class=high,
                            node_selector=env.selector())
    manifest["spec"]["schedulingGates"] = [{"name": GATE}]
    env.kube.create(pods_path(env.ns), manifest)
    token = developer(env, bindings)
    query = f"{url}/debug/explain?namespace={env.ns}&name=urgent"

    def victims(answer: dict[str, Any]) -> list[str]:
        return [v["pod"] for c in answer["preemption"]["candidates"] for v in c["victims"]]

    def answered(**who: Any) -> tuple[int, bytes]:
        """Past the 429s of explains' share of the scheduling thread (and, for the
        developer, the 403s until the bindings reach the authorizer)."""
        return wait_until(lambda: (a := secure_get(query, **who))[0] not in (403, 429) and a,
                          30, "an explain answered", interval=1.0)

    status, body = answered(kube=env.kube)
    assert status == 200, body
    assert victims(json.loads(body)) == [f"{other_namespace}/payroll"]

    status, body = answered(token=token)
    assert status == 200, body
    answer = json.loads(body)
    assert victims(answer) == []
    assert f"node {node}: 1 more victim(s) in namespaces where you may not list pods" in (
        answer["notes"])
    assert other_namespace.encode() not in body and b"payroll" not in body

    theirs = secure_get(f"{url}/debug/explain?namespace={other_namespace}&name=payroll",
                        token=token)
    missing = secure_get(f"{url}/debug/explain?namespace={other_namespace}&name=nope",
                         token=token)
    assert theirs[0] == missing[0] == 403
    assert json.loads(theirs[1])["message"].replace("payroll", "nope") == (
        json.loads(missing[1])["message"])

    why = Path(sys.executable).parent / "kubectl-why"
    done = subprocess.run(
        [str(why), "pod", "urgent", "--kubeconfig", str(kubeconfig_for(env, token,
                                                                       tmp_path / "dev")),
         "-o", "json", "--scheduler-url", url],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    from_cli = json.loads(done.stdout)
    assert from_cli["source"].startswith("live cache of the scheduler on ")
    assert victims(from_cli) == [] and "payroll" not in done.stdout


def test_the_service_monitors_credentials_scrape_metrics(env: Env) -> None:
    """The metrics component as shipped: its ServiceMonitor scrapes HTTPS with the token of
    the Secret it names, which the token controller fills for a ServiceAccount bound to the
    metrics-reader ClusterRole; that token gets /metrics."""
    url = base_url(env)
    component = REPO / "manifests" / "components" / "metrics"
    (monitor,) = yaml.safe_load_all((component / "servicemonitor.yaml").read_text())
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["authorization"]["type"] == "Bearer"
    secret = endpoint["authorization"]["credentials"]
    collections = {"ClusterRole": f"{RBAC}/clusterroles",
                   "ClusterRoleBinding": f"{RBAC}/clusterrolebindings",
                   "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
                   "Secret": "/api/v1/namespaces/{ns}/secrets"}
    for doc in yaml.safe_load_all((component / "metrics-reader.yaml").read_text()):
        path = collections[doc["kind"]].format(ns=doc["metadata"].get("namespace"))
        status, body = env.kube.request("POST", path, doc)
        assert status in (201, 409), body
    secret_path = f"/api/v1/namespaces/{monitor['metadata']['namespace']}/secrets/{secret['name']}"
    token = wait_until(
        lambda: ((env.kube.get(secret_path) or {}).get("data") or {}).get(secret["key"]), 60,
        "the token controller to fill the Secret")
    status, body = wait_until(
        lambda: (a := secure_get(f"{url}/metrics", token=base64.b64decode(token).decode())
                 )[0] == 200 and a, 30, "/metrics with the ServiceMonitor's token", interval=1.0)
    assert b"# HELP" in body
