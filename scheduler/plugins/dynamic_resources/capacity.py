"""Consumable capacity: what a request takes of a device's capacities, and whether it fits.

Upstream: ``structured/internal/incubating/consumable_capacity.go`` with
DRAFractionalCapacityRange off (kube-scheduler v1.37's effective default), so range steps
are whole units. Quantities are nano-units (``int``).
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.plugin_api import CapacityRequestPolicy, DeviceCapacity

NANO = 10**9
INT64_MAX = 2**63 - 1
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"

Capacities = dict[str, int]


class CapacityError(Exception):
    """A capacity request the range arithmetic cannot handle, or a negative one: upstream
    aborts the allocation (an error), it does not skip the device."""


def _text(nanos: int) -> str:
    """The quantity as ``Quantity.String`` prints a whole or milli value."""
    if nanos % NANO == 0:
        return str(nanos // NANO)
    return f"{-(-nanos // 10**6)}m"


def _ceil_units(nanos: int) -> int:
    """``Quantity.Value``: whole units rounded up."""
    return -(-nanos // NANO)


def _round_up_range(requested: int, policy: CapacityRequestPolicy) -> int:
    """``roundUpRange`` without fractional steps."""
    assert policy.valid_range_min is not None
    if requested < policy.valid_range_min:
        return policy.valid_range_min
    if policy.valid_range_step is None:
        return requested
    if requested > INT64_MAX * NANO:
        raise CapacityError(f"{NOT_REPRESENTABLE}: request {_text(requested)} exceeds MaxInt64")
    req, step = _ceil_units(requested), _ceil_units(policy.valid_range_step)
    low = _ceil_units(policy.valid_range_min)
    steps = -(-(req - low) // step)
    if low >= 0 and steps > (INT64_MAX - low) // step:
        raise CapacityError(
            f"{NOT_REPRESENTABLE}: rounding request {_text(requested)} up to the next step "
            "passes MaxInt64"
        )
    return (low + step * steps) * NANO


def consumed_for(requested: int | None, capacity: DeviceCapacity) -> int:
    """``calculateConsumedCapacity``: no request takes the default, else the whole capacity."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.has_valid_range and policy.valid_range_min is not None:
        return _round_up_range(requested, policy)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested)
    return requested


def violates_policy(consumed: int, policy: CapacityRequestPolicy | None) -> bool:
    """``violatesPolicy``: above ``max``, off a step, or not one of ``validValues``."""
    if policy is None or (policy.default is not None and consumed == policy.default):
        return False
    if policy.has_valid_range:
        if policy.valid_range_max is not None and consumed > policy.valid_range_max:
            return True
        if policy.valid_range_step is not None:
            low = _ceil_units(policy.valid_range_min or 0)
            step = _ceil_units(policy.valid_range_step)
            return (_ceil_units(consumed) - low) % step != 0
        return False
    if policy.valid_values:
        return consumed not in policy.valid_values
    return False


def consumed_capacity(
    requests: Mapping[str, int] | None, capacities: Mapping[str, DeviceCapacity]
) -> Capacities:
    """``GetConsumedCapacityFromRequest``: per capacity of the device, what the request takes."""
    consumed = {}
    for name, cap in capacities.items():
        try:
            consumed[name] = consumed_for(None if requests is None else requests.get(name), cap)
        except CapacityError as err:
            raise CapacityError(f'capacity "{name}": {err}') from err
    return consumed


def fits(
    allocated: Mapping[str, int],
    requests: Mapping[str, int] | None,
    capacities: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, int],
) -> bool:
    """``CmpRequestOverCapacity``: the request fits next to what is allocated and allocating."""
    if requests and any(name not in capacities for name in requests):
        return False
    consumed = consumed_capacity(requests, capacities)
    for name, value in consumed.items():
        if value < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
    for name, cap in capacities.items():
        if violates_policy(consumed[name], cap.request_policy):
            return False
        if allocated.get(name, 0) + consumed[name] + allocating.get(name, 0) > cap.value:
            return False
    return True
