"""Broken-linear function shapes (upstream ``helper.BuildBrokenLinearFunction``) and their
validation, shared by NodeResourcesFit's RequestedToCapacityRatio and VolumeBinding."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from scheduler.plugin_api import MAX_NODE_SCORE, IntArray

# config.MaxCustomPriorityScore: shape scores are 0..10, scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


@dataclass(frozen=True)
class ShapePoint:
    """UtilizationShapePoint, typed (``scheduler.framework.args``); its ranges and order are
    checked over the whole shape by :func:`shape_errors`, worded as upstream's."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    utilization: int = field(default=0, metadata={
        "type_error": f"Invalid value: {{value!r}}: not in valid range [0, {MAX_UTILIZATION}]"})
    score: int = field(default=0, metadata={
        "type_error": "Invalid value: {value!r}: "
                      f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"})


# A shape's type_error: what upstream says of an empty one.
SHAPE_TYPE_ERROR = "Required value: at least one point must be specified"


def _as_mapping(point: Any) -> Any:
    """A typed ShapePoint as its configuration mapping; anything else as it is."""
    return dataclasses.asdict(point) if isinstance(point, ShapePoint) else point


def shape_errors(shape: Sequence[ShapePoint], path: str) -> list[str]:
    """validateFunctionShape over decoded ShapePoints."""
    if not shape:
        return [f"{path}: {SHAPE_TYPE_ERROR}"]
    errors: list[str] = []
    for i in range(1, len(shape)):
        cur = shape[i].utilization
        if shape[i - 1].utilization >= cur:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {cur}: "
                "values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {point.utilization!r}: "
                f"not in valid range [0, {MAX_UTILIZATION}]"
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{path}[{i}].score: Invalid value: {point.score!r}: "
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return errors


def _go_div(a: IntArray, b: IntArray | int) -> IntArray:
    """Go's integer division (truncates towards zero); ``b`` is never 0 where it matters."""
    b_arr = np.asarray(b, dtype=np.int64)
    safe = np.where(b_arr == 0, 1, b_arr)
    q = np.abs(a) // np.abs(safe)
    return np.where((a < 0) != (safe < 0), -q, q).astype(np.int64)


@dataclass(frozen=True)
class BrokenLinear:
    """``helper.BuildBrokenLinearFunction`` over arrays (utilizations strictly increasing)."""

    utilization: tuple[int, ...]
    score: tuple[int, ...]

    def __call__(self, p: IntArray) -> IntArray:
        u, s = self.utilization, self.score
        out = np.full(p.shape, s[-1], dtype=np.int64)
        # Later points first, so the first point with p <= u[i] wins.
        for i in range(len(u) - 1, -1, -1):
            if i == 0:
                value: IntArray = np.full(p.shape, s[0], dtype=np.int64)
            else:
                value = s[i - 1] + _go_div((s[i] - s[i - 1]) * (p - u[i - 1]), u[i] - u[i - 1])
            out = np.where(p <= u[i], value, out)
        return out


def build_shape(shape: Sequence[Mapping[str, Any]] | Sequence[ShapePoint]) -> BrokenLinear:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = [_as_mapping(p) for p in shape]
    return BrokenLinear(
        tuple(int(p.get("utilization", 0)) for p in raw),
        tuple(int(p.get("score", 0)) * scale for p in raw),
    )

