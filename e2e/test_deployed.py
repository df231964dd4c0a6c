"""The Deployment as shipped: admission, the running pod, its permissions (issue 16).

The admission case runs everywhere (it needs only an API server). The others need the
scheduler running as the Deployment (E2E_SCHEDULER=deployed, as `make deploy-e2e` and the kind
workflow run the suite).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import yaml

from e2e.conftest import DEPLOYED_NS, REPO, DeployedScheduler, Env
from e2e.kube import condition, node_of, ns_path, pods_path, wait_until
from e2e.test_ha import burst, check_outcome, figure, first_bind_after

CLUSTER_ROLE = "/apis/rbac.authorization.k8s.io/v1/clusterroles/secondary-scheduler"
deployed_only = pytest.mark.skipif(os.environ.get("E2E_SCHEDULER") != "deployed",
                                   reason="needs the scheduler running as the Deployment")


def shipped_pod(name: str) -> dict[str, Any]:
    """manifests/deployment.yaml's pod, exactly as shipped."""
    deployment = yaml.safe_load((REPO / "manifests" / "deployment.yaml").read_text())
    template = deployment["spec"]["template"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": template["metadata"]["labels"]},
            "spec": template["spec"]}


def test_the_shipped_pod_passes_restricted_admission(env: Env) -> None:
    """A server-side dry run of the shipped pod in a namespace that enforces the restricted
    Pod Security level (as manifests/namespace.yaml does); the host-network variant of the
    e2e overlay is refused there, which shows the level is enforced."""
    env.kube.patch(f"/api/v1/namespaces/{env.ns}", {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}})
    env.kube.create(ns_path(env.ns, "serviceaccounts"), {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "secondary-scheduler"}})
    dry_run = {"dryRun": "All"}
    status, body = env.kube.request("POST", pods_path(env.ns), shipped_pod("shipped"), dry_run)
    assert status == 201, body
    host = shipped_pod("host-network")
    host["spec"] = {**host["spec"], "hostNetwork": True}
    status, body = env.kube.request("POST", pods_path(env.ns), host, dry_run)
    assert status == 403 and 'violates PodSecurity "restricted' in body["message"], body


@deployed_only
def test_the_running_pod_is_the_shipped_one(env: Env) -> None:
    """Non-root 65532, read-only root, no capabilities, probes passing on the health port, no
    restart; the configuration is the ConfigMap's (its Lease is in the scheduler's namespace,
    where only that file puts it); the ServiceAccount token is what it runs with."""
    scheduler = env.scheduler
    assert isinstance(scheduler, DeployedScheduler)
    scheduler.wait_ready()
    pods = [p for p in scheduler.pods() if not p["metadata"].get("deletionTimestamp")]
    assert pods
    for pod in pods:
        spec = pod["spec"]
        (container,) = spec["containers"]
        assert spec["securityContext"]["runAsUser"] == 65532
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https",
                                                         "scheme": "HTTPS"}
        assert spec["serviceAccountName"] == "secondary-scheduler"
        statuses = pod["status"]["containerStatuses"]
        assert [s["restartCount"] for s in statuses] == [0], statuses
        # Leader or standby: ready once synced, as kube-scheduler.
        assert (condition(pod, "Ready") or {}).get("status") == "True"
    lease = env.kube.get(ns_path(DEPLOYED_NS, "leases", "secondary-scheduler",
                                 group="coordination.k8s.io/v1"))
    assert lease is not None and lease["spec"].get("holderIdentity")


@deployed_only
@pytest.mark.timeout(420)
def test_the_standby_takes_over_when_the_leaders_pod_is_deleted(env: Env) -> None:
    """Two replicas: the leader's pod deleted (grace 0) mid-burst of 300; the standby takes the
    lease once it lapses and binds the rest: nothing lost, nothing bound twice, no node over
    allocatable."""
    scheduler = env.scheduler
    assert isinstance(scheduler, DeployedScheduler)
    wait_until(lambda: len([p for p in scheduler.pods()
                            if (condition(p, "Ready") or {}).get("status") == "True"]) >= 2,
               180, "two Ready replicas", interval=1.0, diagnose=scheduler.describe)
    leader = wait_until(scheduler.leader, 60, "a leading replica", interval=0.5)
    names, node_names, bound, _ = burst(env, 300, 15)
    wait_until(lambda: bound() >= 60, 120, "60 pods bound before the deletion", interval=0.05)
    at_deletion = bound()
    scheduler.killed.add(leader["metadata"]["uid"])
    env.kube.delete(pods_path(DEPLOYED_NS, leader["metadata"]["name"]), grace=0)
    deleted_at = time.monotonic()
    check_outcome(env, names, node_names, timeout=240)
    resumed = first_bind_after(env, names, deleted_at + 0.5)
    assert resumed is not None, "nothing bound after the deletion"
    taken_over = resumed - deleted_at
    assert taken_over < 60, f"the standby's first bind came {taken_over:.1f} s after"
    figure(f"the leader's pod deleted with {at_deletion}/300 bound: the standby's first bind "
           f"{taken_over:.1f} s after (lease 15 s)")


@deployed_only
@pytest.mark.timeout(180)
def test_a_missing_permission_is_named_and_the_scheduler_keeps_running(env: Env) -> None:
    """pods/binding taken out of the ClusterRole: the pod is reported with the API server's
    Forbidden message (which names the verb and resource) and retried; the scheduler pod does
    not restart; once the permission is back the pod is bound."""
    scheduler = env.scheduler
    assert isinstance(scheduler, DeployedScheduler)
    role = env.kube.get(CLUSTER_ROLE)
    restarts = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["restartCount"]
                for p in scheduler.pods()}
    without = [{**rule, "resources": [r for r in rule["resources"] if r != "pods/binding"]}
               for rule in role["rules"]]
    env.kube.patch(CLUSTER_ROLE, {"rules": [r for r in without if r["resources"]]})
    try:
        env.nodes("n", 1)
        env.create_pod("blocked", cpu="100m")
        cond = wait_until(
            lambda: (c := condition(env.pod("blocked"), "PodScheduled"))
            and c.get("status") == "False" and "forbidden" in c.get("message", "") and c,
            60, "the pod reported with the Forbidden error", diagnose=env.diagnose)
        assert 'cannot create resource "pods/binding"' in cond["message"], cond
        events = env.rec.events_for("blocked", "FailedScheduling")
        assert any("pods/binding" in e.get("note", "") for e in events), events
    finally:
        env.kube.patch(CLUSTER_ROLE, {"rules": role["rules"]})
    assert node_of(env.pod("blocked")) == ""
    env.wait_bound("blocked", timeout=60)
    scheduler.wait_ready()
    after = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["restartCount"]
             for p in scheduler.pods()}
    assert after == restarts
