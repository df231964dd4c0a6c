"""Volume-aware scheduling on the local control plane, where kube-controller-manager's PV
controller binds claims and its StatefulSet controller creates pods: local PVs with node
affinity and a StatefulSet of WaitForFirstConsumer claims, a zonal PV, a ReadWriteOncePod
claim, a CSINode limit. Run against kube-scheduler too (E2E_SCHEDULER=kube-scheduler): the
same pods land on the same nodes and the pending ones read the same reasons.

A pod VolumeBinding rejects at PreFilter (its claim missing, an Immediate claim unbound, a
claim Lost to a deleted PV) reads upstream's message word for word, ending in " not found":
in kube-scheduler's default profile DynamicResources runs at PostFilter before
DefaultPreemption, finds no cycle state of its own (its PreFilter never ran), and its error
ends PostFilter (README, "Known upstream quirks").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Env
from e2e.kube import wait_until

PVS = "/api/v1/persistentvolumes"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
CSI_NODES = "/apis/storage.k8s.io/v1/csinodes"
NO_PV = "node(s) didn't find available persistent volumes to bind"
NO_ZONE = "node(s) had no available volume zone"
RWOP = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod")
MAX_COUNT = "node(s) exceed max volume count"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# What upstream's DynamicResources.PostFilter answers for a pod whose PreFilter it never ran:
# CycleState.Read's ErrNotFound, as an Error status that ends PostFilter.
DRA_NO_STATE = "not found"


class Storage:
    """Cluster-scoped objects a test creates (PVs, StorageClasses, CSINodes), deleted after."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.created: list[str] = []

    def create(self, path: str, obj: dict[str, Any]) -> str:
        self.env.kube.create(path, obj)
        self.created.append(f"{path}/{obj['metadata']['name']}")
        return str(obj["metadata"]["name"])

    def storage_class(self, name: str, *, wffc: bool = True) -> str:
        return self.create(CLASSES, {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": f"{self.env.id}-{name}"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer" if wffc else "Immediate"})

    def volume(self, name: str, storage_class: str, *, node: str | None = None,
               labels: dict[str, str] | None = None, size: str = "1Gi",
               modes: tuple[str, ...] = ("ReadWriteOnce",),
               csi: tuple[str, str] | None = None) -> str:
        spec: dict[str, Any] = {
            "capacity": {"storage": size}, "accessModes": list(modes),
            "storageClassName": storage_class, "persistentVolumeReclaimPolicy": "Retain"}
        if csi is not None:
            spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
        else:
            spec["local"] = {"path": f"/mnt/{name}"}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In" if node else "Exists",
                 **({"values": [node]} if node else {})}]}]}}
        full = f"{self.env.id}-{name}"
        self.create(PVS, {"apiVersion": "v1", "kind": "PersistentVolume",
                          "metadata": {"name": full, "labels": labels or {}}, "spec": spec})
        wait_until(lambda: (self.env.kube.get(f"{PVS}/{full}") or {}).get("status", {})
                   .get("phase") == "Available", 30, f"PV {full} Available")
        return full

    def cleanup(self) -> None:
        for path in reversed(self.created):
            self.env.kube.delete(path)


@pytest.fixture
def storage(env: Env) -> Iterator[Storage]:
    s = Storage(env)
    yield s
    # The pods go first (pvc-protection), then the namespace with its claims.
    env.kube.request("DELETE", f"/api/v1/namespaces/{env.ns}/pods",
                     query={"gracePeriodSeconds": 0})
    s.cleanup()


def claim(env: Env, name: str, storage_class: str, *, modes: tuple[str, ...] = (
        "ReadWriteOnce",), volume: str | None = None) -> None:
    spec: dict[str, Any] = {"accessModes": list(modes), "storageClassName": storage_class,
                            "resources": {"requests": {"storage": "1Gi"}}}
    if volume is not None:
        spec["volumeName"] = volume
    env.kube.create(f"/api/v1/namespaces/{env.ns}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": spec})


def pod_with_claim(env: Env, name: str, claim_name: str, **kw: Any) -> None:
    from e2e.kube import pod_manifest, pods_path

    obj = pod_manifest(name, cpu="100m", node_selector=env.selector(), **kw)
    obj["spec"]["volumes"] = [{"name": "data",
                               "persistentVolumeClaim": {"claimName": claim_name}}]
    env.kube.create(pods_path(env.ns), obj)


def wait_claim_bound(env: Env, name: str) -> None:
    path = f"/api/v1/namespaces/{env.ns}/persistentvolumeclaims/{name}"
    wait_until(lambda: (env.kube.get(path) or {}).get("status", {}).get("phase") == "Bound",
               60, f"claim {name} Bound", diagnose=env.diagnose)


@pytest.mark.timeout(240)
def test_a_statefulset_on_local_volumes(env: Env, storage: Storage) -> None:
    """Two local PVs on two of three nodes, three replicas with WaitForFirstConsumer claims:
    two bind where the PVs are, the third waits with upstream's reason."""
    a, b, _ = env.nodes("local", 3)
    local = storage.storage_class("local")
    pv_a = storage.volume("pv-a", local, node=a)
    pv_b = storage.volume("pv-b", local, node=b)
    env.kube.create(f"/apis/apps/v1/namespaces/{env.ns}/statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db", "replicas": 3, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                "schedulerName": "secondary-scheduler", "nodeSelector": env.selector(),
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "db", "image": "registry.invalid/db:1",
                                "resources": {"requests": {"cpu": "100m"}},
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": local,
                "resources": {"requests": {"storage": "1Gi"}}}}],
        }})

    def placed() -> dict[str, str] | None:
        pods = env.pods()
        bound = {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in pods}
        return bound if len(bound) == 3 and sum(1 for n in bound.values() if n) == 2 else None

    bound = wait_until(placed, 90, "two of three replicas bound", diagnose=env.diagnose)
    assert sorted(n for n in bound.values() if n) == sorted([a, b])
    # While PreBind waited for the PV controller, nominatedNodeName said where it was going.
    for name, node in bound.items():
        if node:
            assert env.rec.ever(name, lambda p, node=node: (p.get("status") or {}).get(
                "nominatedNodeName") == node), name
    (waiting,) = [name for name, node in bound.items() if not node]
    condition = env.wait_unschedulable(waiting, timeout=30)
    assert f"3 {NO_PV}" in condition["message"], condition
    volumes = {storage.env.kube.get(f"{PVS}/{pv}")["spec"]["claimRef"]["name"]
               for pv in (pv_a, pv_b)}
    assert volumes == {f"data-{name}" for name, node in bound.items() if node}


@pytest.mark.timeout(180)
def test_a_zonal_volume_keeps_its_pod_in_its_zone(env: Env, storage: Storage) -> None:
    env.nodes("a", 1, zone="zone-a")
    (b,) = env.nodes("b", 1, zone="zone-b")
    immediate = storage.storage_class("zonal", wffc=False)
    pv = storage.volume("pv-zonal", immediate,
                        labels={"topology.kubernetes.io/zone": "zone-b"})
    claim(env, "data", immediate, volume=pv)
    wait_claim_bound(env, "data")
    pod_with_claim(env, "app", "data")
    assert env.wait_bound("app", timeout=30) == b


@pytest.mark.timeout(180)
def test_a_read_write_once_pod_claim_admits_one_pod(env: Env, storage: Storage) -> None:
    env.nodes("n", 2)
    immediate = storage.storage_class("rwop", wffc=False)
    pv = storage.volume("pv-rwop", immediate, modes=("ReadWriteOncePod",))
    claim(env, "data", immediate, modes=("ReadWriteOncePod",), volume=pv)
    wait_claim_bound(env, "data")
    pod_with_claim(env, "first", "data")
    env.wait_bound("first", timeout=30)
    pod_with_claim(env, "second", "data")
    condition = env.wait_unschedulable("second", timeout=30)
    assert f"2 {RWOP}" in condition["message"], condition


@pytest.mark.timeout(180)
def test_a_csinode_limit_of_one(env: Env, storage: Storage) -> None:
    (a,) = env.nodes("a", 1)
    driver = f"{env.id}.csi.example.com"
    storage.create(CSI_NODES, {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                               "metadata": {"name": a}, "spec": {"drivers": [
                                   {"name": driver, "nodeID": a,
                                    "allocatable": {"count": 1}}]}})
    immediate = storage.storage_class("csi", wffc=False)
    for i in (1, 2):
        pv = storage.volume(f"pv-csi-{i}", immediate, csi=(driver, f"h{i}"))
        claim(env, f"data-{i}", immediate, volume=pv)
        wait_claim_bound(env, f"data-{i}")
    pod_with_claim(env, "first", "data-1")
    assert env.wait_bound("first", timeout=30) == a
    pod_with_claim(env, "second", "data-2")
    condition = env.wait_unschedulable("second", timeout=30)
    assert f"1 {MAX_COUNT}" in condition["message"], condition


def prefilter_rejection(env: Env, prefilter_message: str) -> str:
    """kube-scheduler's message when a PreFilter rejects the pod as unresolvable and the
    PostFilter that follows ends in DynamicResources' error (FitError.Error: the PreFilter
    message, then the PostFilter message)."""
    return (f"0/{len(env.all_nodes())} nodes are available: {prefilter_message}. "
            f"{DRA_NO_STATE}")


@pytest.mark.timeout(120)
def test_a_missing_claim_reads_upstreams_message(env: Env, storage: Storage) -> None:
    env.nodes("n", 2)
    pod_with_claim(env, "app", "nope")
    env.wait_unschedulable("app", prefilter_rejection(
        env, 'persistentvolumeclaim "nope" not found'), timeout=30)


@pytest.mark.timeout(120)
def test_an_unbound_immediate_claim_reads_upstreams_message(env: Env, storage: Storage) -> None:
    env.nodes("n", 2)
    immediate = storage.storage_class("unbound", wffc=False)
    claim(env, "data", immediate)  # no PV matches: the PV controller leaves it Pending
    pod_with_claim(env, "app", "data")
    env.wait_unschedulable("app", prefilter_rejection(env, UNBOUND_IMMEDIATE), timeout=30)


@pytest.mark.timeout(180)
def test_a_claim_bound_to_a_missing_volume_reads_upstreams_message(
        env: Env, storage: Storage) -> None:
    env.nodes("n", 2)
    immediate = storage.storage_class("lost", wffc=False)
    pv = storage.volume("pv-lost", immediate)
    claim(env, "data", immediate, volume=pv)
    wait_claim_bound(env, "data")
    # pv-protection keeps a bound PV; its finalizer goes so the PV does, and the PV
    # controller marks the claim Lost.
    env.kube.delete(f"{PVS}/{pv}")
    env.kube.patch(f"{PVS}/{pv}", {"metadata": {"finalizers": None}})
    path = f"/api/v1/namespaces/{env.ns}/persistentvolumeclaims/data"
    wait_until(lambda: (env.kube.get(path) or {}).get("status", {}).get("phase") == "Lost",
               60, "claim data Lost", diagnose=env.diagnose)
    pod_with_claim(env, "app", "data")
    env.wait_unschedulable("app", prefilter_rejection(
        env, f'persistentvolumeclaim "data" bound to non-existent persistentvolume "{pv}"'),
        timeout=30)
