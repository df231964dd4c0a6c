"""Upstream ``helper.DefaultNormalizeScore``, shared by TaintToleration and NodeAffinity."""

from __future__ import annotations

import numpy as np

from scheduler.plugin_api import MAX_NODE_SCORE, IntArray


def default_normalize_score(scores: IntArray, *, reverse: bool) -> IntArray:
    """Upstream ``helper.DefaultNormalizeScore``: scale to [0, 100] by the maximum."""
    # Every score 0 (a pod and nodes without PreferNoSchedule taints): count_nonzero is a
    # fraction of a max reduction's cost, and the answer is the same as for a maximum of 0.
    if not np.count_nonzero(scores):
        return np.full(scores.shape, MAX_NODE_SCORE, dtype=scores.dtype) if reverse else scores
    top = int(scores.max())
    if top <= 0:
        if reverse:
            return np.full(scores.shape, MAX_NODE_SCORE, dtype=scores.dtype)
        return scores
    out = MAX_NODE_SCORE * scores // top
    if reverse:
        out = MAX_NODE_SCORE - out
    return out.astype(np.int64, copy=False)
