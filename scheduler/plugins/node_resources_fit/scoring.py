"""NodeResourcesFit's scoring strategies over every node of a view at once: upstream
``least_allocated.go``, ``most_allocated.go`` and ``requested_to_capacity_ratio.go``."""


from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    BoolArray,
    IntArray,
)
from scheduler.plugins.helper.resource_allocation import (
    AllocationInputs,
    ResourceSpec,
)
from scheduler.plugins.helper.shape_score import (
    MAX_UTILIZATION,
    BrokenLinear,
)


def weights_column(resources: Sequence[ResourceSpec]) -> IntArray:
    """The resources' weights as a column, against the (resource, node) inputs."""
    return np.asarray([spec.weight for spec in resources], dtype=np.int64)[:, None]


def least_allocated_score(inputs: AllocationInputs, weights: IntArray) -> IntArray:
    req, alloc = inputs.requested, inputs.allocatable
    score = np.where(req > alloc, 0, (alloc - req) * MAX_NODE_SCORE // inputs.divisor)
    return _weighted(score, inputs.present, weights)


def most_allocated_score(inputs: AllocationInputs, weights: IntArray) -> IntArray:
    req, alloc = inputs.requested, inputs.allocatable
    score = np.minimum(req, alloc) * MAX_NODE_SCORE // inputs.divisor
    return _weighted(score, inputs.present, weights)


def _weighted(score: IntArray, counted: BoolArray | None, weights: IntArray) -> IntArray:
    """Per node, the weighted mean (rounded down) of the counted resources' scores
    (``counted`` None: every resource on every node); ``weights`` is a column."""
    if weights.size == 0:
        raise ValueError("resources not found")
    if counted is None:
        # np.dot: the weighted sums in one operation (integers, so exactly the same).
        total: IntArray = np.dot(weights[:, 0], score) // int(weights.sum())
        return total
    node_score = np.where(counted, score * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    return np.where(weight_sum == 0, 0, node_score // np.where(weight_sum == 0, 1, weight_sum))



def requested_to_capacity_ratio_score(
    inputs: AllocationInputs, weights: IntArray, shape: BrokenLinear
) -> IntArray:
    req, alloc, present = inputs.requested, inputs.allocatable, inputs.present
    if weights.size == 0:
        raise ValueError("resources not found")
    utilization = np.where(req > alloc, MAX_UTILIZATION, req * MAX_UTILIZATION // inputs.divisor)
    score = shape(utilization)
    counted = score > 0 if present is None else present & (score > 0)
    node_score = np.where(counted, score * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    # math.Round(ns / ws), half away from zero, exactly in integers (both are >= 0).
    safe_ws = np.where(weight_sum == 0, 1, weight_sum)
    return np.where(weight_sum == 0, 0, (2 * node_score + safe_ws) // (2 * safe_ws))

