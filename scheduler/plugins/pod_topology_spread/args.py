"""PodTopologySpread's name and arguments: upstream's defaults and
``ValidatePodTopologySpreadArgs``, as a typed dataclass (``scheduler.framework.args``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from scheduler.plugin_api import label_key_error

NAME = "PodTopologySpread"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

_SUPPORTED_DEFAULTING = (f'Unsupported value: {{value!r}}: '
                         f'supported values: "{LIST_DEFAULTING}", "{SYSTEM_DEFAULTING}"')


# -- arguments ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """PodTopologySpreadArgs with upstream's v1 defaults (System, no listed constraints);
    ValidatePodTopologySpreadArgs through field_errors. The constraints are core/v1
    TopologySpreadConstraints, checked as validateDefaultConstraints words it."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    defaulting_type: Literal["System", "List"] = field(
        default="System", metadata={"type_error": _SUPPORTED_DEFAULTING})
    default_constraints: list[Any] | None = field(
        default_factory=list, metadata={"type_error": "Invalid value: must be a list"})

    def field_errors(self, path: str) -> Iterator[str]:
        constraints = self.default_constraints or []
        if self.defaulting_type == SYSTEM_DEFAULTING and constraints:
            yield (f"{path}.defaultingType: Invalid value: {self.defaulting_type!r}: "
                   "when .defaultConstraints are not empty")
        seen: set[tuple[Any, Any]] = set()
        for i, c in enumerate(constraints):
            p = f"{path}.defaultConstraints[{i}]"
            if not isinstance(c, Mapping):
                yield f"{p}: Invalid value: must be a mapping"
                continue
            yield from _constraint_errors(c, p)
            pair = (c.get("topologyKey"), c.get("whenUnsatisfiable"))
            if pair in seen:
                yield f'{p}: Duplicate value: "{{{pair[0]}, {pair[1]}}}"'
            seen.add(pair)


def _constraint_errors(c: Mapping[str, Any], p: str) -> list[str]:
    """validateDefaultConstraints for one constraint at path ``p`` (duplicates aside)."""
    errors: list[str] = []
    skew = c.get("maxSkew")
    if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
        errors.append(f"{p}.maxSkew: Invalid value: {skew!r}: not in valid range (0, inf)")
    topology_key = c.get("topologyKey")
    if not topology_key:
        errors.append(f"{p}.topologyKey: Required value: can not be empty")
    elif not isinstance(topology_key, str):
        errors.append(f"{p}.topologyKey: Invalid value: {topology_key!r}: must be a string")
    elif (why := label_key_error(topology_key)) is not None:
        errors.append(f"{p}.topologyKey: Invalid value: {topology_key!r}: {why}")
    action = c.get("whenUnsatisfiable")
    if not action:
        errors.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
    elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        errors.append(
            f"{p}.whenUnsatisfiable: Unsupported value: {action!r}: "
            f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
        )
    if c.get("labelSelector") is not None:
        errors.append(
            f"{p}.labelSelector: Forbidden: constraint must not define a selector, "
            "as they deduced for each pod"
        )
    min_domains = c.get("minDomains")
    if min_domains is not None and (
        isinstance(min_domains, bool) or not isinstance(min_domains, int) or min_domains <= 0
    ):
        errors.append(f"{p}.minDomains: Invalid value: {min_domains!r}: must be > 0")
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        value = c.get(policy)
        if value is not None and value not in (HONOR, IGNORE):
            errors.append(
                f'{p}.{policy}: Unsupported value: {value!r}: supported values: '
                f'"{HONOR}", "{IGNORE}"'
            )
    return errors
