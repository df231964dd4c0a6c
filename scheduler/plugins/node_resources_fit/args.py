"""NodeResourcesFit's arguments: upstream's defaults (``SetDefaults_NodeResourcesFitArgs``)
and checks (``ValidateNodeResourcesFitArgs``), messages word for word."""


from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugin_api import (
    ConfigError,
    label_key_error,
)
from scheduler.plugins.helper.resource_allocation import (
    DEFAULT_RESOURCES,
    default_resources,
    resources_errors,
)
from scheduler.plugins.helper.shape_score import (
    shape_errors,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

DEFAULT_ARGS: Mapping[str, Any] = {
    "ignoredResources": [],
    "ignoredResourceGroups": [],
    "scoringStrategy": {
        "type": LEAST_ALLOCATED,
        "resources": [dict(r) for r in DEFAULT_RESOURCES],
    },
}



def defaulted_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream ``SetDefaults_NodeResourcesFitArgs`` over the (shallowly merged) args."""
    out = {**DEFAULT_ARGS, **args}
    strategy = out.get("scoringStrategy")
    if strategy is None:
        strategy = DEFAULT_ARGS["scoringStrategy"]
    if isinstance(strategy, Mapping):
        strategy = dict(strategy)
        strategy["resources"] = default_resources(strategy.get("resources"))
    out["scoringStrategy"] = strategy
    for key in ("ignoredResources", "ignoredResourceGroups"):
        if out.get(key) is None:
            out[key] = []
    return out



def validate_args(args: Mapping[str, Any], path: str) -> None:
    """ValidateNodeResourcesFitArgs, after defaulting; raises :class:`ConfigError`."""
    errors: list[str] = [
        f"{path}.{key}: Invalid value: unknown field"
        for key in sorted(set(args) - set(DEFAULT_ARGS))
    ]
    merged = defaulted_args(args)
    for key in ("ignoredResources", "ignoredResourceGroups"):
        values = merged[key]
        if not isinstance(values, list):
            errors.append(f"{path}.{key}: Invalid value: {values!r}: must be a list")
            continue
        for i, value in enumerate(values):
            p = f"{path}.{key}[{i}]"
            if key == "ignoredResourceGroups" and isinstance(value, str) and "/" in value:
                errors.append(
                    f"{p}: Invalid value: {value!r}: resource group name can't contain '/'"
                )
            why = label_key_error(value) if isinstance(value, str) else "must be a string"
            if why is not None:
                errors.append(f"{p}: Invalid value: {value!r}: {why}")
    strategy = merged["scoringStrategy"]
    sp = f"{path}.scoringStrategy"
    if not isinstance(strategy, Mapping):
        errors.append(f"{sp}: Invalid value: {strategy!r}: must be a mapping")
    else:
        errors.extend(
            f"{sp}.{k}: Invalid value: unknown field"
            for k in strategy
            if k not in ("type", "resources", "requestedToCapacityRatio")
        )
        kind = strategy.get("type")
        if kind not in STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in STRATEGIES)
            errors.append(
                f"{sp}.type: Unsupported value: {kind!r}: supported values: {supported}"
            )
        errors.extend(resources_errors(strategy.get("resources"), f"{sp}.resources"))
        ratio = strategy.get("requestedToCapacityRatio")
        rp = f"{sp}.requestedToCapacityRatio"
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            if ratio is None:
                errors.append(
                    f"{rp}: Required value: must be specified when type is "
                    "RequestedToCapacityRatio"
                )
            elif not isinstance(ratio, Mapping):
                errors.append(f"{rp}: Invalid value: {ratio!r}: must be a mapping")
            else:
                errors.extend(f"{rp}.{k}: Invalid value: unknown field" for k in ratio
                              if k != "shape")
                errors.extend(shape_errors(ratio.get("shape"), f"{rp}.shape"))
        elif ratio is not None:
            errors.append(f"{rp}: Forbidden: must be nil when type is not RequestedToCapacityRatio")
    if errors:
        raise ConfigError("; ".join(errors))

