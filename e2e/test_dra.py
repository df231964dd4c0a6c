"""Dynamic Resource Allocation on the local control plane: hand-made ResourceSlices publish
devices on kwok nodes (no driver is needed to schedule), kube-controller-manager's
resourceclaim controller makes claims from templates, and the scheduler allocates devices,
writes each claim's allocation and reservedFor, and binds. Every case runs against
kube-scheduler too (E2E_SCHEDULER=kube-scheduler), which shows that the expectations are
upstream's: the same devices on the same nodes, the same pending reasons.

Upstream: pkg/scheduler/framework/plugins/dynamicresources (Filter: "cannot allocate all
claims", UnschedulableAndUnresolvable, so DefaultPreemption finds nobody to preempt for a
device) and k8s.io/dynamic-resource-allocation/structured (the allocator).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Env, start_own_scheduler
from e2e.kube import node_of, pod_manifest, pods_path, wait_until

RESOURCE = "/apis/resource.k8s.io/v1"
SLICES = f"{RESOURCE}/resourceslices"
CLASSES = f"{RESOURCE}/deviceclasses"
TAINT_RULES = f"{RESOURCE}/devicetaintrules"
CANNOT_ALLOCATE = "cannot allocate all claims"
OURS = os.environ.get("E2E_SCHEDULER") != "kube-scheduler"


def claims_path(ns: str, name: str = "") -> str:
    return f"{RESOURCE}/namespaces/{ns}/resourceclaims" + (f"/{name}" if name else "")


def templates_path(ns: str) -> str:
    return f"{RESOURCE}/namespaces/{ns}/resourceclaimtemplates"


def device(name: str, *, attributes: Mapping[str, Any] | None = None,
           capacity: Mapping[str, str] | None = None,
           taints: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """A device of a slice; attributes as {name: value}, typed by their Python type."""
    out: dict[str, Any] = {"name": name}
    if attributes:
        out["attributes"] = {k: {"bool" if isinstance(v, bool) else "int" if isinstance(v, int)
                                 else "string": v} for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if taints:
        out["taints"] = [dict(t) for t in taints]
    return out


class Dra:
    """This test's driver, and the cluster-scoped objects it creates (slices, classes, taint
    rules), deleted after it."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.driver = f"{env.id}.example.com"
        self.created: list[str] = []

    def _create(self, path: str, obj: dict[str, Any]) -> str:
        self.env.kube.create(path, obj)
        self.created.append(f"{path}/{obj['metadata']['name']}")
        return str(obj["metadata"]["name"])

    def device_class(self, name: str = "gpu", *, extended_resource: str | None = None,
                     by_driver: bool = True) -> str:
        """A class of this driver's devices (by a CEL selector), or of every device."""
        spec: dict[str, Any] = {"selectors": [{"cel": {
            "expression": f'device.driver == "{self.driver}"'}}] if by_driver else []}
        if extended_resource is not None:
            spec["extendedResourceName"] = extended_resource
        return self._create(CLASSES, {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": f"{self.env.id}-{name}"},
                                      "spec": spec})

    def slice(self, node: str, devices: Sequence[dict[str, Any]]) -> str:
        """One slice, the whole pool named after the node."""
        return self._create(SLICES, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-devices"},
            "spec": {"driver": self.driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}})

    def gpus(self, nodes: Sequence[str], per_node: int = 1) -> None:
        for node in nodes:
            self.slice(node, [device(f"gpu-{i}") for i in range(per_node)])

    def taint_rule(self, name: str, pool: str, device_name: str,
                   taint: Mapping[str, str]) -> str:
        return self._create(TAINT_RULES, {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": {"name": f"{self.env.id}-{name}"},
            "spec": {"deviceSelector": {"driver": self.driver, "pool": pool,
                                        "device": device_name},
                     "taint": dict(taint)}})

    def attribute(self, name: str) -> str:
        """A selector's reference to one of this driver's attributes or capacities."""
        return f'["{self.driver}"].{name}'

    def cleanup(self) -> None:
        for path in reversed(self.created):
            self.env.kube.delete(path)


@pytest.fixture
def dra(env: Env) -> Iterator[Dra]:
    d = Dra(env)
    yield d
    env.kube.request("DELETE", pods_path(env.ns), query={"gracePeriodSeconds": 0})
    d.cleanup()


# ----------------------------------------------------------------------------- claims
def request(name: str, device_class: str, *, count: int = 1, selectors: Sequence[str] = (),
            tolerations: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount",
                               "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if tolerations:
        exactly["tolerations"] = [dict(t) for t in tolerations]
    return {"name": name, "exactly": exactly}


def claim_spec(*requests: dict[str, Any],
               constraints: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    return {"devices": devices}


def create_claim(env: Env, name: str, spec: dict[str, Any]) -> None:
    env.kube.create(claims_path(env.ns), {"apiVersion": "resource.k8s.io/v1",
                                          "kind": "ResourceClaim", "metadata": {"name": name},
                                          "spec": spec})


def create_template(env: Env, name: str, spec: dict[str, Any]) -> None:
    env.kube.create(templates_path(env.ns), {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name}, "spec": {"spec": spec}})


def create_pod(env: Env, name: str, *, claim: str | None = None, template: str | None = None,
               limits: Mapping[str, str] | None = None, **kw: Any) -> None:
    """A pod of this test's nodes with one claim (by name or from a template) used by its
    container, or an extended-resource limit."""
    obj = pod_manifest(name, node_selector=env.selector(), **kw)
    container = obj["spec"]["containers"][0]
    if claim is not None or template is not None:
        source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
        obj["spec"]["resourceClaims"] = [{"name": "dev", **source}]
        container["resources"] = {"claims": [{"name": "dev"}]}
    if limits:
        container["resources"] = {"limits": dict(limits)}
    env.kube.create(pods_path(env.ns), obj)


def claim_of(env: Env, pod: str) -> dict[str, Any]:
    """The pod's claim: by name, or the one the resourceclaim controller made from its
    template (the pod's status names it)."""
    obj = env.pod(pod) or {}
    source = obj["spec"]["resourceClaims"][0]
    name = source.get("resourceClaimName")
    if name is None:
        (status,) = (obj.get("status") or {}).get("resourceClaimStatuses") or [{}]
        name = status["resourceClaimName"]
    return dict(env.kube.get(claims_path(env.ns, name)))


def allocated(claim: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(request, pool, device) of each allocated device."""
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get(
        "results") or []
    return [(r["request"], r["pool"], r["device"]) for r in results]


def reserved_for(claim: Mapping[str, Any]) -> list[str]:
    return sorted(r["name"] for r in (claim.get("status") or {}).get("reservedFor") or [])


def unschedulable(env: Env, pod: str, nodes: Sequence[str]) -> None:
    """Pending with upstream's message: this test's nodes fail on their devices (unresolvable,
    so preemption is not helpful anywhere)."""
    env.wait_unschedulable(pod, env.expected_message(
        dict.fromkeys(nodes, CANNOT_ALLOCATE), preemption={}))


# ----------------------------------------------------------------------------- cases
def test_claims_from_a_template_get_a_device_each_on_their_pods_node(env: Env, dra: Dra) -> None:
    nodes = env.nodes("gpu", 2)
    gpu = dra.device_class()
    dra.gpus(nodes)
    create_template(env, "one-gpu", claim_spec(request("gpu", gpu)))
    for name in ("a", "b"):
        create_pod(env, name, template="one-gpu")
    placed = env.wait_all_bound(["a", "b"])
    assert sorted(placed.values()) == sorted(nodes)
    for name in ("a", "b"):
        claim = claim_of(env, name)
        assert allocated(claim) == [("gpu", placed[name], "gpu-0")]
        assert reserved_for(claim) == [name]


def test_a_shared_claim_puts_its_two_pods_on_its_devices_node(env: Env, dra: Dra) -> None:
    env.nodes("gpu", 2)
    gpu = dra.device_class()
    dra.gpus(env.node_names)
    create_claim(env, "shared", claim_spec(request("gpu", gpu)))
    create_pod(env, "first", claim="shared")
    node = env.wait_bound("first")
    create_pod(env, "second", claim="shared")
    assert env.wait_bound("second") == node
    claim = claim_of(env, "second")
    assert allocated(claim) == [("gpu", node, "gpu-0")]
    wait_until(lambda: reserved_for(claim_of(env, "second")) == ["first", "second"], 30,
               "the claim reserved for both pods", diagnose=env.diagnose)


def test_exhausted_devices_leave_the_pod_pending_with_upstreams_message(env: Env,
                                                                        dra: Dra) -> None:
    nodes = env.nodes("gpu", 1)
    gpu = dra.device_class()
    dra.gpus(nodes)
    create_template(env, "one-gpu", claim_spec(request("gpu", gpu)))
    create_pod(env, "holder", template="one-gpu")
    env.wait_bound("holder")
    create_pod(env, "waiter", template="one-gpu")
    unschedulable(env, "waiter", nodes)


def test_cel_selectors_on_attributes_and_capacity(env: Env, dra: Dra) -> None:
    big, small = env.nodes("gpu", 2)
    gpu = dra.device_class()
    dra.slice(big, [device("gpu-0", attributes={"model": "a100"}, capacity={"memory": "40Gi"})])
    dra.slice(small, [device("gpu-0", attributes={"model": "t4"}, capacity={"memory": "16Gi"})])
    a100 = f'device.attributes{dra.attribute("model")} == "a100"'
    at_most_20 = f'device.capacity{dra.attribute("memory")}.compareTo(quantity("20Gi")) <= 0'
    create_claim(env, "a100", claim_spec(request("gpu", gpu, selectors=[a100])))
    create_claim(env, "small", claim_spec(request("gpu", gpu, selectors=[at_most_20])))
    create_pod(env, "on-a100", claim="a100")
    create_pod(env, "on-small", claim="small")
    assert env.wait_all_bound(["on-a100", "on-small"]) == {"on-a100": big, "on-small": small}


def test_a_prioritized_list_takes_the_first_subrequest_that_fits(env: Env, dra: Dra) -> None:
    (node,) = env.nodes("gpu", 1)
    gpu = dra.device_class()
    dra.slice(node, [device("gpu-0", capacity={"memory": "16Gi"})])
    at_least = f'device.capacity{dra.attribute("memory")}.compareTo(quantity("{{}}")) >= 0'
    create_claim(env, "best", {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "large", "deviceClassName": gpu,
         "selectors": [{"cel": {"expression": at_least.format("80Gi")}}]},
        {"name": "medium", "deviceClassName": gpu,
         "selectors": [{"cel": {"expression": at_least.format("16Gi")}}]},
        {"name": "any", "deviceClassName": gpu}]}]}})
    create_pod(env, "pod", claim="best")
    env.wait_bound("pod")
    assert allocated(claim_of(env, "pod")) == [("gpu/medium", node, "gpu-0")]


def test_match_attribute_picks_the_node_whose_devices_share_it(env: Env, dra: Dra) -> None:
    split, together = env.nodes("gpu", 2)
    gpu = dra.device_class()
    dra.slice(split, [device("gpu-0", attributes={"numa": 0}),
                      device("gpu-1", attributes={"numa": 1})])
    dra.slice(together, [device("gpu-0", attributes={"numa": 1}),
                         device("gpu-1", attributes={"numa": 1})])
    create_claim(env, "pair", claim_spec(
        request("gpu", gpu, count=2),
        constraints=[{"requests": ["gpu"], "matchAttribute": f"{dra.driver}/numa"}]))
    create_pod(env, "pod", claim="pair")
    assert env.wait_bound("pod") == together
    assert sorted(d for *_, d in allocated(claim_of(env, "pod"))) == ["gpu-0", "gpu-1"]


TAINT = {"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule"}
TOLERATION = {"key": "example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule"}


def assert_only_the_tolerating_pod_binds(env: Env, gpu: str, nodes: list[str]) -> None:
    """A pod whose request does not tolerate TAINT stays unschedulable; one that does binds."""
    create_template(env, "plain", claim_spec(request("gpu", gpu)))
    create_template(env, "tolerant", claim_spec(request("gpu", gpu, tolerations=[TOLERATION])))
    create_pod(env, "intolerant", template="plain")
    unschedulable(env, "intolerant", nodes)
    create_pod(env, "tolerating", template="tolerant")
    assert env.wait_bound("tolerating") == nodes[0]


def test_a_device_taint_keeps_pods_off_unless_their_request_tolerates_it(env: Env,
                                                                          dra: Dra) -> None:
    nodes = env.nodes("gpu", 1)
    gpu = dra.device_class()
    dra.slice(nodes[0], [device("gpu-0", taints=[TAINT])])
    assert_only_the_tolerating_pod_binds(env, gpu, nodes)


def test_a_device_taint_rule_taints_the_devices_it_selects(env: Env, dra: Dra) -> None:
    nodes = env.nodes("gpu", 1)
    gpu = dra.device_class()
    dra.gpus(nodes)
    dra.taint_rule("unhealthy", nodes[0], "gpu-0", TAINT)
    assert_only_the_tolerating_pod_binds(env, gpu, nodes)


def test_an_extended_resource_backed_by_dra_devices(env: Env, dra: Dra) -> None:
    """DRAExtendedResource (GA in 1.37): a plain extended-resource request on nodes that do
    not advertise it is served by the class's devices through a claim the scheduler makes."""
    nodes = env.nodes("gpu", 2)
    resource = f"{dra.driver}/gpu"
    dra.device_class(extended_resource=resource)
    dra.gpus(nodes[:1])
    create_pod(env, "pod", limits={resource: "1"})
    assert env.wait_bound("pod") == nodes[0]
    status = (env.pod("pod") or {}).get("status", {}).get("extendedResourceClaimStatus") or {}
    claim = env.kube.get(claims_path(env.ns, status["resourceClaimName"]))
    assert [(d, n) for _, n, d in allocated(claim)] == [("gpu-0", nodes[0])]
    assert reserved_for(claim) == ["pod"]


def test_node_resources_fit_scores_an_extended_resource_by_its_devices(
        env: Env, dra: Dra, kubeconfig: Path, tmp_path: Path) -> None:
    """NodeResourcesFit with the DRA-backed resource in scoringStrategy.resources
    (resource_allocation.go, calculateDRAResourceTotals): the node's devices are its
    allocatable, so LeastAllocated prefers the node with 3 devices (score 66) to the one
    with 2 (50); nothing else tells the two nodes apart."""
    nodes = env.nodes("gpu", 2)
    resource = f"{dra.driver}/gpu"
    dra.device_class(extended_resource=resource)
    dra.slice(nodes[0], [device(f"gpu-{i}") for i in range(2)])
    dra.slice(nodes[1], [device(f"gpu-{i}") for i in range(3)])
    profile = f"{env.id}-fit"
    scheduler = start_own_scheduler(
        kubeconfig, tmp_path / "fit-scheduler.log", profile, profile_config=(
            "pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
            f"{{type: LeastAllocated, resources: [{{name: {resource}, weight: 1}}]}}}}}}]"))
    try:
        create_pod(env, "pod", limits={resource: "1"}, scheduler=profile)
        assert env.wait_bound("pod") == nodes[1]
    finally:
        scheduler.stop()


def test_balanced_allocation_counts_an_extended_resource_by_its_devices(
        env: Env, dra: Dra, kubeconfig: Path, tmp_path: Path) -> None:
    """NodeResourcesBalancedAllocation with the DRA-backed resource in its resources
    (balanced_allocation.go through resource_allocation.go): one device of three moves the
    balance of the first node, which runs a 400m pod, less (score 70) than the only device of
    the second (51). Without the devices counted both score 75 and NodeResourcesFit's
    LeastAllocated prefers the empty second node (97 against 91). The class has no
    selector: kube-scheduler v1.37.2's NodeResourcesBalancedAllocation has no CEL cache
    (NewBalancedAllocation leaves resourceAllocationScorer.celCache nil) and panics on one."""
    nodes = env.nodes("gpu", 2)
    resource = f"{dra.driver}/gpu"
    dra.device_class(extended_resource=resource, by_driver=False)
    dra.slice(nodes[0], [device(f"gpu-{i}") for i in range(3)])
    dra.slice(nodes[1], [device("gpu-0")])
    create_pod(env, "busy", cpu="400m", node_name=nodes[0])
    profile = f"{env.id}-balanced"
    scheduler = start_own_scheduler(
        kubeconfig, tmp_path / "balanced-scheduler.log", profile, profile_config=(
            "pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resources: "
            f"[{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}, "
            f"{{name: {resource}, weight: 1}}]}}}}]"))
    try:
        create_pod(env, "pod", limits={resource: "1"}, scheduler=profile)
        assert env.wait_bound("pod") == nodes[0]
    finally:
        scheduler.stop()


def test_nobody_is_preempted_for_a_device(env: Env, dra: Dra) -> None:
    """A node failing on devices is UnschedulableAndUnresolvable: the high-priority pod waits,
    the low-priority holder of the only device keeps running."""
    nodes = env.nodes("gpu", 1)
    gpu = dra.device_class()
    dra.gpus(nodes)
    low, high = env.priority_class("low", 10), env.priority_class("high", 1000)
    create_template(env, "one-gpu", claim_spec(request("gpu", gpu)))
    create_pod(env, "holder", template="one-gpu", priority_class=low)
    env.wait_bound("holder")
    create_pod(env, "important", template="one-gpu", priority_class=high)
    unschedulable(env, "important", nodes)
    assert env.rec.deleted_at("holder") is None
    assert node_of(env.pod("holder")) == nodes[0]
    assert not env.rec.events_for("holder", "Preempted")


def test_a_burst_of_pods_with_their_own_claims_never_shares_a_device(env: Env,
                                                                     dra: Dra) -> None:
    nodes = env.nodes("gpu", 10)
    gpu = dra.device_class()
    dra.gpus(nodes, per_node=3)
    create_template(env, "one-gpu", claim_spec(request("gpu", gpu)))
    names = [f"p{i}" for i in range(30)]
    for name in names:
        create_pod(env, name, template="one-gpu")
    placed = env.wait_all_bound(names, timeout=120)
    devices = []
    for name in names:
        ((_, pool, dev),) = allocated(claim_of(env, name))
        assert pool == placed[name], name
        devices.append((pool, dev))
    assert len(set(devices)) == 30

