"""Consumable capacity arithmetic against upstream's tables (``structured/internal/incubating/
consumable_capacity_test.go``: ``testViolateCapacityRequestPolicy`` and
``testCalculateConsumedCapacity``), case names kept. The fractional-step cases are left out:
DRAFractionalCapacityRange is effectively off in v1.37.2 (docs/dra.md)."""

from __future__ import annotations

import pytest

from scheduler.model.dra import CapacityRequestPolicy, DeviceCapacity
from scheduler.plugins.dynamic_resources.capacity import (
    CapacityError,
    consumed_for,
    violates_policy,
)

N = 10**9
ONE, TWO, THREE = N, 2 * N, 3 * N
MAX_INT64 = 2**63 - 1


def ranged(default: int | None, low: int, step: int | None = None, high: int | None = None
           ) -> CapacityRequestPolicy:
    return CapacityRequestPolicy(default=default, valid_range_min=low, valid_range_step=step,
                                 valid_range_max=high, has_valid_range=True)


def values(default: int, *valid: int) -> CapacityRequestPolicy:
    return CapacityRequestPolicy(default=default, valid_values=valid)


VIOLATE = {
    "no constraint": (ONE, None, False),
    "less than maximum": (ONE, ranged(ONE, ONE, high=TWO), False),
    "more than maximum": (TWO, ranged(ONE, ONE, high=ONE), True),
    "in set": (ONE, values(ONE, ONE), False),
    "not in set": (TWO, values(ONE, ONE), True),
}


@pytest.mark.parametrize("name", sorted(VIOLATE))
def test_violate_capacity_request_policy(name: str) -> None:
    requested, policy, want = VIOLATE[name]
    assert violates_policy(requested, policy) is want


CALCULATE: dict[str, tuple[int | None, int, CapacityRequestPolicy | None, int | None]] = {
    "empty": (None, ONE, CapacityRequestPolicy(), ONE),
    "request-above-maxint64-is-rejected": (
        (2**64 + 3) * N, (2**64 + 3) * N, ranged(0, 0, THREE), None),
    "rounded-value-above-maxint64-is-rejected": (
        MAX_INT64 * N, (MAX_INT64 + 1) * N, ranged(0, 0, TWO), None),
    "max-safe-boundary-rounds-to-maxint64": (
        (MAX_INT64 - 1) * N, MAX_INT64 * N, ranged(ONE, ONE, TWO), MAX_INT64 * N),
    "min in range": (None, TWO, ranged(ONE, ONE), ONE),
    "default in set": (None, TWO, values(ONE, ONE), ONE),
    "more than min in range": (TWO, TWO, ranged(ONE, ONE), TWO),
    "less than min in range": (ONE, TWO, ranged(ONE, TWO), TWO),
    "with step (round up)": (TWO, THREE, ranged(ONE, ONE, TWO), THREE),
    "with step (no remaining)": (TWO, TWO, ranged(ONE, ONE, ONE), TWO),
    "valid value in set": (TWO, THREE, values(ONE, ONE, TWO, THREE), TWO),
    "set (round up)": (TWO, THREE, values(ONE, ONE, THREE), THREE),
    "larger than set": (THREE, THREE, values(ONE, ONE, TWO), THREE),
}


@pytest.mark.parametrize("name", sorted(CALCULATE))
def test_calculate_consumed_capacity(name: str) -> None:
    requested, value, policy, want = CALCULATE[name]
    capacity = DeviceCapacity(value, policy)
    if want is None:
        with pytest.raises(CapacityError, match="cannot be represented"):
            consumed_for(requested, capacity)
        return
    assert consumed_for(requested, capacity) == want
