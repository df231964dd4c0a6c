"""DynamicResourcesArgs (``pkg/scheduler/apis/config/types_pluginargs.go``) and their
validation (``ValidateDynamicResourcesArgs``), with v1.37.2's gates: DRASchedulerFilterTimeout
(beta, on) and DRADeviceBindingConditions with DRAResourceClaimDeviceStatus (on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugin_api import ConfigError, parse_duration

# DynamicResourcesFilterTimeoutDefault, DynamicResourcesBindingTimeoutDefault
DEFAULT_ARGS: Mapping[str, Any] = {"filterTimeout": "10s", "bindingTimeout": "10m0s"}


def seconds(value: Any) -> float:
    """A validated duration's seconds."""
    parsed = parse_duration(value)
    assert parsed is not None, value
    return parsed


def validate_args(args: Mapping[str, Any], path: str) -> None:
    """Every problem at once, as a ConfigError."""
    errors = [f"{path}.{key}: Invalid value: unknown field"
              for key in sorted(set(args) - set(DEFAULT_ARGS))]
    merged = {**DEFAULT_ARGS, **args}
    checks = (("filterTimeout", 0.0, "must be zero or positive"),
              ("bindingTimeout", 1.0, "must be at least 1 second"))
    for key, minimum, message in checks:
        value = parse_duration(merged[key])
        if value is None:
            errors.append(f"{path}.{key}: Invalid value: {merged[key]!r}: "
                          "must be a duration such as 10s")
        elif value < minimum:
            errors.append(f'{path}.{key}: Invalid value: "{merged[key]}": {message}')
    if errors:
        raise ConfigError("; ".join(errors))
