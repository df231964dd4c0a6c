"""DynamicResourcesArgs as a typed dataclass (``scheduler.framework.args``): upstream's v1
defaults (``SetDefaults_DynamicResourcesArgs``: DynamicResourcesFilterTimeoutDefault and
DynamicResourcesBindingTimeoutDefault) and ``ValidateDynamicResourcesArgs``, with v1.37.2's
gates: DRASchedulerFilterTimeout (beta, on) and DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus (on), so both fields are taken and neither is Forbidden."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from scheduler.plugin_api import parse_duration

_NOT_A_DURATION = "Invalid value: {value!r}: must be a duration such as 10s"


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """Durations as Go spells them (``10s``, ``10m0s``, ``-1s``)."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    filter_timeout: str = field(default="10s", metadata={"type_error": _NOT_A_DURATION})
    binding_timeout: str = field(default="10m0s", metadata={"type_error": _NOT_A_DURATION})

    @property
    def filter_timeout_seconds(self) -> float:
        return _seconds(self.filter_timeout)

    @property
    def binding_timeout_seconds(self) -> float:
        return _seconds(self.binding_timeout)

    def field_errors(self, path: str) -> Iterator[str]:
        """ValidateDynamicResourcesArgs: filterTimeout zero or positive, bindingTimeout at
        least one second; a value that is no duration is what decoding upstream refuses."""
        checks = (("filterTimeout", self.filter_timeout, 0.0, "must be zero or positive"),
                  ("bindingTimeout", self.binding_timeout, 1.0, "must be at least 1 second"))
        for key, value, minimum, message in checks:
            parsed = _signed_duration(value)
            if parsed is None:
                yield f"{path}.{key}: {_NOT_A_DURATION.format(value=value)}"
            elif parsed < minimum:
                yield f'{path}.{key}: Invalid value: "{value}": {message}'


def _seconds(value: str) -> float:
    """A validated duration's seconds."""
    parsed = _signed_duration(value)
    assert parsed is not None, value
    return parsed


def _signed_duration(value: str) -> float | None:
    """Go's time.ParseDuration, sign included ("-1s")."""
    if value[:1] in ("-", "+"):
        parsed = parse_duration(value[1:])
        return None if parsed is None else (-parsed if value[0] == "-" else parsed)
    return parse_duration(value)
