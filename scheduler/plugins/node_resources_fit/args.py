"""NodeResourcesFit's arguments as a typed dataclass (``scheduler.framework.args``): upstream's
v1 defaults (``SetDefaults_NodeResourcesFitArgs``) and checks
(``ValidateNodeResourcesFitArgs``), messages word for word."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from scheduler.plugin_api import label_key_error
from scheduler.plugins.helper.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    parse_resources,
)
from scheduler.plugins.helper.shape_score import SHAPE_TYPE_ERROR, ShapePoint, shape_errors

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

_UNKNOWN_FIELD = "Invalid value: unknown field"
_NOT_A_LIST = "Invalid value: {value!r}: must be a list"
_NAME_REQUIRED = "Required value: must be a non-empty string"
_UNSUPPORTED_TYPE = "Unsupported value: {value!r}: supported values: " + ", ".join(
    f'"{s}"' for s in STRATEGIES)


@dataclass(frozen=True)
class FitResource:
    """One of the scoring strategy's resources (upstream's ResourceSpec); a weight of 0 or
    none is 1 (SetDefaults)."""

    unknown_field_reason: ClassVar[str] = _UNKNOWN_FIELD
    mapping_reason: ClassVar[str] = "must be a mapping with name and weight"

    name: str = field(default="", metadata={"type_error": _NAME_REQUIRED})
    weight: int | None = None

    def errors(self, path: str) -> Iterator[str]:
        """validateResources' weight in (0, 100], once defaulted; a name is required."""
        if not self.name:
            yield f"{path}.name: {_NAME_REQUIRED}"
        weight = self.weight or 1
        if not 0 < weight <= 100:
            yield (f"{path}.weight: Invalid value: {weight!r}: resource weight of {self.name} "
                   "not in valid range (0, 100]")


@dataclass(frozen=True)
class RequestedToCapacityRatio:
    """RequestedToCapacityRatioParam: the broken-linear shape of a node's utilisation."""

    unknown_field_reason: ClassVar[str] = _UNKNOWN_FIELD

    shape: list[ShapePoint] = field(default_factory=list,
                                    metadata={"type_error": SHAPE_TYPE_ERROR})


@dataclass(frozen=True)
class ScoringStrategy:
    """ScoringStrategy: its type has no default (an empty one is refused, as upstream's);
    no resources or an empty list is cpu and memory."""

    unknown_field_reason: ClassVar[str] = _UNKNOWN_FIELD

    type: str | None = field(default=None, metadata={"type_error": _UNSUPPORTED_TYPE})
    resources: list[FitResource] | None = field(default=None,
                                                metadata={"type_error": _NOT_A_LIST})
    # Left out of the defaults while None: upstream writes no requestedToCapacityRatio for
    # the other strategies.
    requested_to_capacity_ratio: RequestedToCapacityRatio | None = field(
        default=None, metadata={"omitempty": True})

    def errors(self, path: str) -> Iterator[str]:
        """ValidateNodeResourcesFitArgs of the strategy at ``path``."""
        if self.type not in STRATEGIES:
            yield f"{path}.type: {_UNSUPPORTED_TYPE.format(value=self.type)}"
        for i, resource in enumerate(self.resources or ()):
            yield from resource.errors(f"{path}.resources[{i}]")
        ratio, at = self.requested_to_capacity_ratio, f"{path}.requestedToCapacityRatio"
        if self.type == REQUESTED_TO_CAPACITY_RATIO and ratio is None:
            yield (f"{at}: Required value: must be specified when type is "
                   f"{REQUESTED_TO_CAPACITY_RATIO}")
        elif self.type == REQUESTED_TO_CAPACITY_RATIO and ratio is not None:
            yield from shape_errors(ratio.shape, f"{at}.shape")
        elif ratio is not None:
            yield f"{at}: Forbidden: must be nil when type is not {REQUESTED_TO_CAPACITY_RATIO}"

    def resource_specs(self) -> tuple[ResourceSpec, ...]:
        """The resources as SetDefaults leaves them: cpu and memory when none; weight 0 → 1."""
        if not self.resources:
            return parse_resources(DEFAULT_RESOURCES)
        return tuple(ResourceSpec(r.name, r.weight or 1) for r in self.resources)


def _default_strategy() -> ScoringStrategy:
    return ScoringStrategy(LEAST_ALLOCATED, [FitResource(str(r["name"]), int(r["weight"]))
                                             for r in DEFAULT_RESOURCES])


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """NodeResourcesFitArgs with upstream's v1 defaults (LeastAllocated over cpu and memory,
    weight 1; no strategy is that one); ValidateNodeResourcesFitArgs through field_errors."""

    unknown_field_reason: ClassVar[str] = _UNKNOWN_FIELD

    ignored_resources: list[str] | None = field(default_factory=list,
                                                metadata={"type_error": _NOT_A_LIST})
    ignored_resource_groups: list[str] | None = field(default_factory=list,
                                                      metadata={"type_error": _NOT_A_LIST})
    scoring_strategy: ScoringStrategy | None = field(default_factory=_default_strategy)

    def field_errors(self, path: str) -> Iterator[str]:
        """Every check, the strategy's and its resources' too: theirs as their own
        field_errors would hide these (a dataclass's run only when all below it are valid),
        where upstream reports them all."""
        for i, name in enumerate(self.ignored_resources or ()):
            if (why := label_key_error(name)) is not None:
                yield f"{path}.ignoredResources[{i}]: Invalid value: {name!r}: {why}"
        for i, group in enumerate(self.ignored_resource_groups or ()):
            p = f"{path}.ignoredResourceGroups[{i}]"
            if "/" in group:
                yield f"{p}: Invalid value: {group!r}: resource group name can't contain '/'"
            if (why := label_key_error(group)) is not None:
                yield f"{p}: Invalid value: {group!r}: {why}"
        yield from self.strategy.errors(f"{path}.scoringStrategy")

    @property
    def strategy(self) -> ScoringStrategy:
        """The scoring strategy, SetDefaults' when none is given."""
        return self.scoring_strategy or _default_strategy()
