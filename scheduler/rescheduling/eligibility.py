"""Which running pods the rescheduler may move at all, and why not the others.

Protections, each with the reason the dry-run report and the logs give (descheduler's
DefaultEvictor protections, all on, and stricter about controllers):

- a pod of another scheduler: where it would go is that scheduler's business;
- a pod no ReplicaSet, ReplicationController, StatefulSet or Job controls: nothing would
  recreate it (bare pods), or something would put it straight back (DaemonSet pods, static
  and mirror pods);
- a terminating pod, or one not Running;
- a system-critical pod (priority 2,000,000,000 and up);
- a pod with local storage (emptyDir, hostPath) unless ``allowLocalStorage``: its data would
  go with it;
- a pod with ResourceClaims (``spec.resourceClaims``, or the claim the scheduler made for a
  DRA-backed extended resource): a running pod's claims hold devices allocated on its node.
  The simulation would ask DynamicResources about the pod as it is, whose allocated claims
  pin it to that node and whose own devices count as taken there, while its replacement
  would come with new claims from the template (or share the named claim, which stays where
  it is while other pods use it). descheduler's DefaultEvictor has this protection
  (``PodsWithResourceClaims``, off there; descheduler does not simulate DRA at all);
- a pod annotated ``secondary-scheduler.io/rescheduling: "never"``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from scheduler.model.pod import PodInfo

MOVABLE_CONTROLLERS = frozenset({"ReplicaSet", "ReplicationController", "StatefulSet", "Job"})
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
OPT_OUT_ANNOTATION = "secondary-scheduler.io/rescheduling"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RUNNING = "Running"
_LOCAL_STORAGE = ("emptyDir", "hostPath")


def protection(pod: PodInfo, scheduler_names: Collection[str], *,
               allow_local_storage: bool) -> str:
    """Why ``pod`` may not be moved; ``""`` when it may."""
    if pod.scheduler_name not in scheduler_names:
        return f"scheduled by {pod.scheduler_name!r}, not by this scheduler"
    meta: Mapping[str, Any] = pod.raw.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if MIRROR_ANNOTATION in annotations:
        return "a mirror pod"
    if pod.owner_kind not in MOVABLE_CONTROLLERS:
        return (f"controlled by a {pod.owner_kind}" if pod.owner_kind
                else "no controller would recreate it")
    if pod.is_terminating or pod.phase != RUNNING or not pod.node_name:
        return "not running"
    if pod.priority >= SYSTEM_CRITICAL_PRIORITY:
        return "system-critical"
    if annotations.get(OPT_OUT_ANNOTATION) == "never":
        return f"annotated {OPT_OUT_ANNOTATION}: never"
    if not allow_local_storage and _has_local_storage(pod):
        return "has local storage (emptyDir or hostPath)"
    if _has_resource_claims(pod):
        return "holds devices through ResourceClaims"
    return ""


def _has_resource_claims(pod: PodInfo) -> bool:
    spec: Mapping[str, Any] = pod.raw.get("spec") or {}
    status: Mapping[str, Any] = pod.raw.get("status") or {}
    return bool(spec.get("resourceClaims") or status.get("extendedResourceClaimStatus"))


def _has_local_storage(pod: PodInfo) -> bool:
    spec: Mapping[str, Any] = pod.raw.get("spec") or {}
    return any(
        isinstance(volume, Mapping) and any(kind in volume for kind in _LOCAL_STORAGE)
        for volume in spec.get("volumes") or ()
    )
