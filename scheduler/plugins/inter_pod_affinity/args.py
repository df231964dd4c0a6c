"""InterPodAffinity's name and arguments: upstream's defaults and
``ValidateInterPodAffinityArgs``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugin_api import (
    ConfigError,
)

NAME = "InterPodAffinity"

DEFAULT_ARGS: Mapping[str, Any] = {
    "hardPodAffinityWeight": 1,
    "ignorePreferredTermsOfExistingPods": False,
}

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def validate_args(args: Mapping[str, Any], path: str) -> None:
    """ValidateInterPodAffinityArgs; raises :class:`ConfigError` naming the bad field."""
    errors: list[str] = []
    for key in sorted(set(args) - set(DEFAULT_ARGS)):
        errors.append(f"{path}.{key}: Invalid value: unknown field")
    merged = {**DEFAULT_ARGS, **args}
    weight = merged["hardPodAffinityWeight"]
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int)
        or not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT
    ):
        errors.append(
            f"{path}.hardPodAffinityWeight: Invalid value: {weight!r}: not in valid range "
            f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
        )
    ignore = merged["ignorePreferredTermsOfExistingPods"]
    if not isinstance(ignore, bool):
        errors.append(
            f"{path}.ignorePreferredTermsOfExistingPods: Invalid value: {ignore!r}: "
            "must be a boolean"
        )
    if errors:
        raise ConfigError("; ".join(errors))
