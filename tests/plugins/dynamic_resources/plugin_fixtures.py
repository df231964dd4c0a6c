"""The objects of upstream's ``dynamicresources_test.go`` (``pendingClaim``,
``allocatedClaim``, ``workerNodeSlice``...) as API dicts, and a harness that runs the
DynamicResources plugin's extension points one by one as upstream's ``testPlugin`` does."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework.interface import Code, CycleState, Diagnosis, NodeView, Status
from scheduler.model.dra import ResourceClaim
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamic_resources.claim_writes import FINALIZER
from scheduler.plugins.dynamic_resources.plugin import DynamicResources
from scheduler.testing import ManualClock, full_view, node, pod, scheduler_of

NODE_NAME, NODE2_NAME, NODE3_NAME = "worker", "worker-2", "worker-3"
DRIVER = "some-driver"
POD_NAME, POD_UID = "my-pod", "1234"
RESOURCE_NAME = "my-resource"
CLAIM_NAME = f"{POD_NAME}-{RESOURCE_NAME}"
CLASS_NAME = "my-resource-class"
NAMESPACE = "default"
ATTR_NAME = "healthy"

WORKER = node(NODE_NAME)
WORKER2 = node(NODE2_NAME)
WORKER3 = node(NODE3_NAME)


def device_class(name: str = CLASS_NAME, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": dict(spec)}


def request(index: int, cls: str = CLASS_NAME, **fields: Any) -> dict[str, Any]:
    """``ResourceClaimWrapper.Request``: ``req-<n>``, ExactCount 1."""
    return {"name": f"req-{index}", "exactly": {
        "allocationMode": "ExactCount", "count": 1, "deviceClassName": cls, **fields}}


def resource_claim(
    name: str = CLAIM_NAME, *requests: dict[str, Any], owner: bool = True,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE,
                            "uid": uid or f"uid-{name}", "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": POD_NAME,
                                    "uid": POD_UID, "controller": True}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": list(requests) or [request(1)]}}}


def allocation(device: str = "instance-1", node_name: str = NODE_NAME,
               request_name: str = "req-1", driver: str = DRIVER) -> dict[str, Any]:
    return {"devices": {"results": [{"request": request_name, "driver": driver,
                                     "pool": node_name, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}


def allocated(claim: dict[str, Any], result: dict[str, Any] | None = None) -> dict[str, Any]:
    """``allocatedClaim``: the finalizer and the allocation of instance-1 on the worker."""
    out = copy.deepcopy(claim)
    out["metadata"]["finalizers"] = [FINALIZER]
    out.setdefault("status", {})["allocation"] = result or allocation()
    return out


def reserved(claim: dict[str, Any], *pod_uids_names: tuple[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(claim)
    out.setdefault("status", {})["reservedFor"] = [
        {"resource": "pods", "name": name, "uid": uid} for uid, name in pod_uids_names]
    return out


def deleting(claim: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(claim)
    out["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return out


def resource_slice(node_name: str, *devices: str | dict[str, Any],
                   driver: str = DRIVER) -> dict[str, Any]:
    """``MakeResourceSlice(node, driver).Device(...)``."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{driver}"},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
                     "devices": [{"name": d} if isinstance(d, str) else d
                                 for d in devices]}}


def pod_with_claim_name(claim_name: str = CLAIM_NAME, **kwargs: Any) -> dict[str, Any]:
    return pod(POD_NAME, uid=POD_UID, spec={"resourceClaims": [
        {"name": RESOURCE_NAME, "resourceClaimName": claim_name}]}, **kwargs)


def pod_with_claim_template(in_status: bool) -> dict[str, Any]:
    status = {"resourceClaimStatuses": [
        {"name": RESOURCE_NAME, "resourceClaimName": CLAIM_NAME}]} if in_status else None
    return pod(POD_NAME, uid=POD_UID, spec={"resourceClaims": [
        {"name": RESOURCE_NAME, "resourceClaimTemplateName": CLAIM_NAME}]}, status=status)


PENDING_CLAIM = resource_claim()
ALLOCATED_CLAIM = allocated(PENDING_CLAIM)
OTHER_CLAIM = resource_claim("not-my-claim", owner=False)
OTHER_ALLOCATED_CLAIM = allocated(OTHER_CLAIM)
WORKER_NODE_SLICE = resource_slice(NODE_NAME, "instance-1")
DEVICE_CLASS = device_class()


class TickingClock(ManualClock):
    """A manual clock that moves one second on at every read: time passes as a search runs."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += 1.0
        return self.now - 1.0


class Run:
    """One pod through the plugin's points, on a scheduler fed these objects."""

    def __init__(self, incoming: Mapping[str, Any], *, claims: Sequence[Mapping[str, Any]] = (),
                 classes: Sequence[Mapping[str, Any]] = (),
                 objs: Sequence[Mapping[str, Any]] = (),
                 nodes: Sequence[Mapping[str, Any]] = (WORKER,),
                 in_flight: Sequence[Mapping[str, Any]] = (),
                 args: Mapping[str, Any] | None = None,
                 clock: ManualClock | None = None) -> None:
        config = None if args is None else {"profiles": [{"pluginConfig": [
            {"name": "DynamicResources", "args": dict(args)}]}]}
        self.s, self.ports = scheduler_of(config, nodes=nodes, clock=clock,
                                          storage=[*claims, *classes, *objs])
        plugin = self.s.profiles["secondary-scheduler"].instances["DynamicResources"]
        assert isinstance(plugin, DynamicResources)
        self.plugin = plugin
        self.pod = PodInfo.from_pod(dict(incoming))
        self.state = CycleState()
        for c in in_flight:
            self.s.dra.signal_pending_allocation(ResourceClaim.parse(c))

    def pre_enqueue(self) -> Status:
        return self.plugin.pre_enqueue(self.pod)

    def pre_filter(self) -> Status:
        _, status = self.plugin.pre_filter(self.state, self.pod, self.s.snapshot)
        return status

    def filter(self) -> dict[str, tuple[Code, str]]:
        """Per node: (code, reason), ``(SUCCESS, "")`` where it passes."""
        view: NodeView = full_view(self.s.snapshot)
        result = self.plugin.filter(self.state, self.pod, view)
        names = view.names()
        out = {n: (Code(int(result.codes[i])), "") for i, n in enumerate(names)}
        for mask, reason in result.reasons:
            for i in np.flatnonzero(mask):
                out[names[int(i)]] = (out[names[int(i)]][0], reason)
        return out

    def post_filter(self) -> Status:
        diagnosis = Diagnosis(codes=np.zeros(1, dtype=np.uint8))
        _, status = self.plugin.post_filter(self.state, self.pod, diagnosis)
        return status

    def claim(self, name: str = CLAIM_NAME) -> ResourceClaim | None:
        return self.s.dra.claim(NAMESPACE, name)

    def in_flight(self, claim: Mapping[str, Any]) -> bool:
        return self.s.dra.pending_allocation(claim["metadata"]["uid"]) is not None
