"""PreBind's API writes: a claim gets the finalizer, its allocation and the pod in
``reservedFor`` (upstream's ``bindClaim`` in ``dynamicresources.go``).

Each claim is written with its resourceVersion as precondition; on a conflict the claim is
read again from the API server and the write retried, five attempts 10 ms apart
(``retry.RetryOnConflict(retry.DefaultRetry, ...)``). A written claim is assumed in the DRA
manager at once, so the next cycle sees it allocated before the watch delivers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.plugin_api import AllocationResult, Handle, PodInfo, ResourceClaim
from scheduler.plugins.dynamic_resources.claim_writes import (
    FINALIZER,
    allocation_to_api,
    claim_path,
    consumer_reference,
    mutable_copy,
    rfc3339,
)
from scheduler.plugins.dynamic_resources.view import claim_ref

# retry.DefaultRetry: Steps 5, Duration 10ms.
RETRY_STEPS = 5
RETRY_SECONDS = 0.01


class BindError(Exception):
    """The claim could not be written; the message is upstream's error."""


class _ConflictError(Exception):
    """A write answered 409: read the claim again and retry."""


@dataclass
class _Attempt:
    raw: dict[str, Any]
    written: bool = False


def bind_claim(
    handle: Handle, claim: ResourceClaim, allocation: AllocationResult | None, pod: PodInfo
) -> ResourceClaim:
    """The claim as written with this pod reserved (and ``allocation``, when the scheduler
    allocated it); BindError with upstream's message otherwise."""
    attempt = _Attempt(mutable_copy(claim))
    try:
        for step in range(RETRY_STEPS):
            if step:
                handle.sleep(RETRY_SECONDS)
                attempt.raw = _refetched(handle, claim)
            try:
                _write_once(handle, attempt, allocation, pod)
                break
            except _ConflictError as conflict:
                if step == RETRY_STEPS - 1:
                    raise BindError(str(conflict)) from None
    finally:
        if attempt.written:
            handle.dra.assume_after_api_call(ResourceClaim.parse(attempt.raw))
    return ResourceClaim.parse(attempt.raw)


def _refetched(handle: Handle, claim: ResourceClaim) -> dict[str, Any]:
    result = handle.writer.get(claim_path(claim.namespace, claim.name))
    if not result.ok or result.obj is None:
        raise BindError(f"get updated claim {claim_ref(claim)} after conflict: {result.message}")
    return dict(result.obj)


def _write_once(
    handle: Handle, attempt: _Attempt, allocation: AllocationResult | None, pod: PodInfo
) -> None:
    raw = attempt.raw
    meta, status = raw.setdefault("metadata", {}), raw.setdefault("status", {})
    ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    if meta.get("deletionTimestamp") is not None:
        raise BindError(f"claim {ref} got deleted in the meantime")
    if allocation is not None:
        if status.get("allocation") is not None:
            raise BindError(f"claim {ref} got allocated elsewhere in the meantime")
        finalizers = meta.get("finalizers") or []
        if FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, FINALIZER]
            raw = attempt.raw = _put(handle, claim_path(meta.get("namespace", ""),
                                                        meta.get("name", "")), raw,
                                     lambda m: f"add finalizer to claim {ref}: {m}")
            status = raw.setdefault("status", {})
        status["allocation"] = allocation_to_api(allocation, None)
    status["reservedFor"] = [*(status.get("reservedFor") or []), consumer_reference(pod)]
    # DRADeviceBindingConditions (beta, on) stamps every allocation with its time.
    if status.get("allocation") is None:
        raise BindError(f"claim {ref} got deallocated elsewhere in the meantime")
    status["allocation"].setdefault("allocationTimestamp", rfc3339(handle.wall_clock()))
    what = "add allocation and reservation to" if allocation is not None else "add reservation to"
    attempt.raw = _put(handle, claim_path(meta.get("namespace", ""), meta.get("name", ""),
                                          status=True),
                       raw, lambda m: f"{what} claim {ref}: {m}")
    attempt.written = True


def _put(handle: Handle, path: str, raw: dict[str, Any], wrap: Callable[[str], str]
         ) -> dict[str, Any]:
    result = handle.writer.replace(path, raw)
    if result.conflict:
        raise _ConflictError(wrap(result.message))
    if not result.ok:
        raise BindError(wrap(result.message))
    return dict(result.obj) if result.obj is not None else raw


def create_extended_claim(handle: Handle, node_claim: ResourceClaim) -> ResourceClaim:
    """``createExtendedResourceClaimInAPI``: the in-memory claim, with this node's requests,
    created under its ``generateName``."""
    raw = mutable_copy(node_claim)
    raw.pop("status", None)
    meta = raw["metadata"]
    meta.pop("name", None)
    meta.pop("uid", None)
    namespace = meta.get("namespace", "")
    created = handle.writer.create(
        f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", raw)
    ok = created.ok and created.obj is not None
    # Not admin access, owned by a Pod (of the core group).
    handle.metrics.resource_claim_creates.labels(
        "success" if ok else "failure", "false", "", "Pod").inc()
    if not ok or created.obj is None:
        # klog.KObj of a claim without a name.
        raise BindError(f"create claim for extended resources {namespace}/: {created.message}")
    return ResourceClaim.parse(created.obj)


def record_extended_claim(
    handle: Handle, pod: PodInfo, claim: ResourceClaim, mappings: list[dict[str, str]]
) -> None:
    """``patchPodExtendedResourceClaimStatus``: the pod's
    ``status.extendedResourceClaimStatus`` names the claim and which request serves which
    container's resource."""
    where = f"{pod.namespace}/{pod.name}"
    if not mappings:
        raise BindError(f"nil or empty request mappings, no update of pod {where} "
                        "ExtendedResourceClaimStatus")
    patched = handle.writer.patch(
        f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
        {"status": {"extendedResourceClaimStatus": {
            "requestMappings": mappings, "resourceClaimName": claim.name}}})
    if not patched.ok:
        raise BindError(f"update pod {where} ExtendedResourceClaimStatus: {patched.message}")


def delete_claim(handle: Handle, claim: ResourceClaim) -> None:
    """``deleteClaim``: the finalizer removed (retried on conflicts as ``bindClaim``), then
    the claim deleted; one already gone is fine."""
    path = claim_path(claim.namespace, claim.name)
    raw = mutable_copy(claim)
    for step in range(RETRY_STEPS):
        if step:
            handle.sleep(RETRY_SECONDS)
            fetched = handle.writer.get(path)
            if not fetched.ok or fetched.obj is None:
                raise BindError(f"get resourceclaim {claim_ref(claim)}: {fetched.message}")
            raw = dict(fetched.obj)
        meta = raw.setdefault("metadata", {})
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        result = handle.writer.replace(path, raw)
        if result.ok:
            break
        if not result.conflict or step == RETRY_STEPS - 1:
            raise BindError(f"update resourceclaim {claim_ref(claim)}: {result.message}")
    deleted = handle.writer.delete_object(path)
    if not deleted.ok:
        raise BindError(deleted.message)
