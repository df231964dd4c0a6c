"""DRA-backed extended resources (DRAExtendedResource, GA in v1.37): a plain
``example.com/gpu: 1`` request served by the devices of the DeviceClass that names it (or
``deviceclass.resource.kubernetes.io/<class>``) on nodes that do not offer it themselves.

Upstream: ``extendeddynamicresources.go``. The pod gets a claim the scheduler writes: in
memory until PreBind (``<extended-resources>``), one request per container and resource
(``container-<i>-request-<j>``), created in PreBind with ``generateName``, and recorded in
the pod's ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugin_api import (
    DraManager,
    PodInfo,
    ResourceClaim,
    is_dra_extended_resource_name,
)

# resourceapi.ExtendedResourceClaimAnnotation
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# specialClaimInMemName
IN_MEMORY_NAME = "<extended-resources>"

# One entry of status.extendedResourceClaimStatus.requestMappings.
RequestMapping = dict[str, str]


def dra_backed_requests(pod: PodInfo, dra: DraManager) -> dict[str, int]:
    """The pod's DRA extended resource requests, when a DeviceClass serves one of them
    (``hasDeviceClassMappedExtendedResource``); empty otherwise."""
    requests = pod.requests
    # Every pod scheduled asks, and nearly every pod's requests (cpu, memory) have no domain,
    # so none is extended: one join of the names tells, where a loop over them costs more.
    if "/" not in "".join(requests):
        return {}
    named: dict[str, int] = {}
    for name, value in requests.items():
        if value and "/" in name and is_dra_extended_resource_name(name):
            named[name] = int(value)
    for name in named:
        if dra.class_for_extended_resource(name) is not None:
            return named
    return {}


def find_extended_claim(pod: PodInfo, claims: Sequence[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: a claim the scheduler created for this pod before."""
    for claim in claims:
        if (claim.namespace == pod.namespace
                and claim.annotations.get(EXTENDED_CLAIM_ANNOTATION) == "true"
                and pod.uid in claim.owner_uids):
            return claim
    return None


def in_memory_claim(pod: PodInfo, uid: str) -> ResourceClaim:
    """The claim PreFilter makes for a pod without one yet: no requests, no name."""
    return ResourceClaim.parse({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace, "name": IN_MEMORY_NAME, "uid": uid,
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                                 "uid": pod.uid, "controller": True}],
            "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"}},
        "spec": {}})


def claim_for_node(
    claim: ResourceClaim, pod: PodInfo, needed: Mapping[str, int], dra: DraManager
) -> tuple[ResourceClaim, list[RequestMapping]]:
    """The claim with the requests this node needs, and the pod's request mappings."""
    requests, mappings = requests_and_mappings(pod, needed, dra)
    raw = copy.deepcopy(dict(claim.raw))
    raw["spec"] = {"devices": {"requests": requests}} if requests else {}
    return ResourceClaim.parse(raw), mappings


def _containers(pod: PodInfo) -> tuple[list[Mapping[str, Any]], int]:
    spec = pod.raw.get("spec") or {}
    init = list(spec.get("initContainers") or [])
    return init + list(spec.get("containers") or []), len(init)


def _count(container: Mapping[str, Any], name: str) -> int:
    """``Quantity.AsInt64`` of the container's request, 0 when absent or not an integer."""
    value = ((container.get("resources") or {}).get("requests") or {}).get(name)
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def _container_request(
    index: int, container: Mapping[str, Any], name: str, class_name: str,
    reusable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[RequestMapping]]:
    """``createResourceRequestAndMappings``."""
    wanted = _count(container, name)
    if wanted == 0:
        return None, []
    mappings: list[RequestMapping] = []
    total = 0
    for request in reusable:
        if request is not None:
            total += request["exactly"]["count"]
            mappings.append({"containerName": container.get("name", ""), "resourceName": name,
                             "requestName": request["name"]})
            if total >= wanted:
                return None, mappings
    keys = sorted((container.get("resources") or {}).get("requests") or {})
    request_name = f"container-{index}-request-{keys.index(name)}"
    mappings.append({"containerName": container.get("name", ""), "resourceName": name,
                     "requestName": request_name})
    return {"name": request_name, "exactly": {
        "deviceClassName": class_name, "allocationMode": "ExactCount",
        "count": wanted - total}}, mappings


def requests_and_mappings(
    pod: PodInfo, needed: Mapping[str, int], dra: DraManager
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    """``createRequestsAndMappings``: app containers and sidecars each get their devices;
    init containers reuse them where they suffice, and share the largest extra request."""
    containers, n_init = _containers(pod)
    restartable = [c.get("restartPolicy") == "Always" for c in containers]
    long_lived = [i for i in range(len(containers)) if i >= n_init or restartable[i]]
    short_lived = [i for i in range(n_init) if not restartable[i]]
    requests: list[dict[str, Any]] = []
    mappings: list[RequestMapping] = []
    for name in sorted(needed):
        device_class = dra.class_for_extended_resource(name)
        if device_class is None:
            continue
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[RequestMapping] = []
        for i in long_lived:
            long_requests[i], found = _container_request(
                i, containers[i], name, device_class.name, ())
            long_mappings.extend(found)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for i in short_lived:
            request, found = _container_request(
                i, containers[i], name, device_class.name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            short_mappings = [{**m, "requestName": largest["name"]}
                              if m["requestName"] in short_names else m for m in short_mappings]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings + short_mappings)
    requests.sort(key=lambda r: r["name"])
    return requests, mappings
