"""Devices with binding conditions (DRADeviceBindingConditions, beta and on in v1.37.2):
the pod is bound only once the driver reports every condition of its devices True, and
given up when one of their failure conditions turns True or the binding timeout passes
(upstream's ``isClaimReadyForBinding``, ``isClaimTimeout``, ``isPodReadyForBinding`` in
``dynamicresources.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scheduler.plugin_api import DeviceRequestAllocationResult, Metrics, ResourceClaim

# ErrDeviceBindingTimeout, ErrDeviceBindingFailed
ERR_TIMEOUT = "device binding timeout"
ERR_FAILED = "device binding failed"
# PreBind polls the claims this often (wait.PollUntilContextTimeout's interval).
POLL_SECONDS = 5.0
# The status label of the wait's metrics (BindingConditionsStatus*).
STATUS_SUCCESS, STATUS_FAILED, STATUS_TIMEOUT, STATUS_ERROR = (
    "success", "failure", "timeout", "error")


class BindingFailedError(Exception):
    """A failure condition of a device is True, or the claim timed out."""


def has_binding_conditions(claims: Sequence[ResourceClaim]) -> bool:
    """``hasBindingConditions``."""
    return any(r.binding_conditions for c in claims if c.allocation is not None
               for r in c.allocation.results)


def _device_status(claim: ResourceClaim, r: DeviceRequestAllocationResult
                   ) -> Mapping[str, Any] | None:
    status = claim.raw.get("status")
    for device in (status.get("devices") if isinstance(status, Mapping) else None) or ():
        if (isinstance(device, Mapping) and device.get("device") == r.device
                and device.get("driver") == r.driver and device.get("pool") == r.pool):
            return device
    return None


def _condition(device: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in device.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def ready_for_binding(claim: ResourceClaim) -> bool:
    """``isClaimReadyForBinding``: every binding condition True; BindingFailedError when a
    failure condition is True."""
    if claim.allocation is None:
        return False
    for r in claim.allocation.results:
        if not r.binding_conditions:
            continue
        device = _device_status(claim, r)
        if device is None:
            return False
        for kind in r.binding_failure_conditions:
            failed = _condition(device, kind)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailedError(
                    f'{ERR_FAILED}: claim={claim.name}, reason={failed.get("reason", "")}, '
                    f'message="{failed.get("message", "")}"')
        for kind in r.binding_conditions:
            met = _condition(device, kind)
            if met is None or met.get("status") != "True":
                return False
    return True


def timed_out(claim: ResourceClaim, binding_timeout: float, now: float) -> bool:
    """``isClaimTimeout``: a device with binding conditions, allocated longer ago than the
    binding timeout."""
    allocation = claim.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    if not any(r.binding_conditions for r in allocation.results):
        return False
    stamp = datetime.fromisoformat(allocation.allocation_timestamp.replace("Z", "+00:00"))
    return stamp.timestamp() + binding_timeout < now


def unavailable(claim: ResourceClaim, binding_timeout: float, now: float) -> bool:
    """Filter's check of an allocated claim: failed, or not ready and timed out."""
    try:
        return not ready_for_binding(claim) and timed_out(claim, binding_timeout, now)
    except BindingFailedError:
        return True


def wait_status(problem: str | None) -> str:
    """The metrics' status of a wait that ended with ``problem`` (None: every condition
    met): which of upstream's errors it is (``ErrDeviceBindingTimeout``,
    ``ErrDeviceBindingFailed``), else ``error``."""
    if problem is None:
        return STATUS_SUCCESS
    if problem.startswith(ERR_TIMEOUT):
        return STATUS_TIMEOUT
    return STATUS_FAILED if problem.startswith(ERR_FAILED) else STATUS_ERROR


def record_wait(metrics: Metrics, profile: str, claims: Sequence[ResourceClaim],
                status: str, seconds: float) -> None:
    """PreBind's metrics after the wait: its duration once per allocated device, and an
    allocation counted per device with binding conditions."""
    for claim in claims:
        if claim.allocation is None:
            continue
        for r in claim.allocation.results:
            metrics.dra_binding_conditions_wait.labels(profile, r.driver, status).observe(
                seconds)
        for r in claim.allocation.results:
            if r.binding_conditions:
                metrics.dra_binding_conditions_allocations.labels(
                    profile, r.driver, status).inc()
