"""What the scheduler writes into a ResourceClaim, as the API server takes it.

Upstream writes typed objects (``bindClaim``, ``PostFilter``'s deallocation and
``Unreserve``'s patch in ``dynamicresources.go``); we write the claim's API dict, starting
from the object as the watch delivered it, so that fields we do not model survive.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.plugin_api import (
    AllocationResult,
    DeviceRequestAllocationResult,
    NodeSelector,
    PodInfo,
    ResourceClaim,
)

# resourceapi.Finalizer
FINALIZER = "resource.kubernetes.io/delete-protection"


def claim_path(namespace: str, name: str, status: bool = False) -> str:
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
    return f"{path}/status" if status else path


def mutable_copy(claim: ResourceClaim) -> dict[str, Any]:
    raw = copy.deepcopy(dict(claim.raw))
    raw.setdefault("metadata", {})
    raw.setdefault("status", {})
    return raw


def consumer_reference(pod: PodInfo) -> dict[str, str]:
    """``claimStore.getBinding``: the pod, in the core API group (written without one)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def quantity_text(nanos: int) -> str:
    """A quantity in nano-units as the API server reads it back exactly."""
    if nanos % 1_000_000_000 == 0:
        return str(nanos // 1_000_000_000)
    if nanos % 1_000_000 == 0:
        return f"{nanos // 1_000_000}m"
    return f"{nanos}n"


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_selector(selector: NodeSelector) -> dict[str, Any]:
    terms = []
    for term in selector.terms:
        out: dict[str, Any] = {}
        for key, requirements in (("matchExpressions", term.match_expressions),
                                  ("matchFields", term.match_fields)):
            if requirements:
                out[key] = [{"key": r.key, "operator": r.operator, "values": list(r.values)}
                            for r in requirements]
        terms.append(out)
    return {"nodeSelectorTerms": terms}


def _device_result(r: DeviceRequestAllocationResult) -> dict[str, Any]:
    out: dict[str, Any] = {"request": r.request, "driver": r.driver, "pool": r.pool,
                           "device": r.device}
    if r.admin_access is not None:
        out["adminAccess"] = r.admin_access
    if r.tolerations:
        out["tolerations"] = [_toleration(t) for t in r.tolerations]
    if r.binding_conditions:
        out["bindingConditions"] = list(r.binding_conditions)
    if r.binding_failure_conditions:
        out["bindingFailureConditions"] = list(r.binding_failure_conditions)
    if r.share_id is not None:
        out["shareID"] = r.share_id
    if r.consumed_capacity is not None:
        out["consumedCapacity"] = {k: quantity_text(v) for k, v in r.consumed_capacity.items()}
    return out


def _toleration(t: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": t.operator}
    for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def allocation_to_api(allocation: AllocationResult, timestamp: str | None) -> dict[str, Any]:
    """``status.allocation`` as ``resourceapi.AllocationResult`` serialises."""
    devices: dict[str, Any] = {"results": [_device_result(r) for r in allocation.results]}
    if allocation.config:
        devices["config"] = [_config(c.source, c.requests, c.opaque) for c in allocation.config]
    out: dict[str, Any] = {"devices": devices}
    if allocation.node_selector is not None:
        out["nodeSelector"] = _node_selector(allocation.node_selector)
    stamp = allocation.allocation_timestamp or timestamp
    if stamp is not None:
        out["allocationTimestamp"] = stamp
    return out


def _config(
    source: str, requests: tuple[str, ...] | None, opaque: Mapping[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source, "opaque": copy.deepcopy(dict(opaque))}
    if requests:
        out["requests"] = list(requests)
    return out


def deallocated(claim: ResourceClaim) -> dict[str, Any]:
    """The claim with ``reservedFor``, ``allocation`` and ``devices`` cleared (PostFilter)."""
    raw = mutable_copy(claim)
    for key in ("reservedFor", "allocation", "devices"):
        raw["status"].pop(key, None)
    return raw


def unreserve_patch(claim: ResourceClaim, pod: PodInfo) -> dict[str, Any]:
    """``Unreserve``'s strategic merge patch: drop the pod from ``reservedFor``, only if the
    claim is still the one read (its UID)."""
    return {"metadata": {"uid": claim.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
