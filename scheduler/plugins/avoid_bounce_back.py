"""AvoidBounceBack: keep a controller's new pods off the nodes it was just moved or thrown from.

Not an upstream plugin: what upstream's NodePreferAvoidPods was for (a node annotation naming
a controller, written when a rescheduler evicted its pod; removed in v1.23), without the
annotation. The records live in the scheduler (``Handle.avoided_nodes``): the rescheduler
writes one when it evicts a pod to move it, the intake when a kubelet rejected or evicted a
pod (``OutOfcpu`` and the like). A node with a record for the pod's controller scores 0, every
other node 100. Its default weight, 100, outweighs every default score (at most 1,200
together), so a replacement goes back only when no other node fits.

A pod no record concerns (all of them unless the rescheduler is on) is skipped at PreScore:
decisions are kube-scheduler's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    Status,
)

NAME = "AvoidBounceBack"
# The score weight of the default profile.
DEFAULT_WEIGHT = 100
_STATE_KEY = "AvoidBounceBack/nodes"


class AvoidBounceBack:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        avoided = self.handle.avoided_nodes(pod)
        if not avoided:
            return SKIP
        state.write(_STATE_KEY, frozenset(avoided))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        avoided: frozenset[str] = state.read(_STATE_KEY)
        index = nodes.snapshot.nodes.index
        rows = [index[name] for name in avoided if name in index]
        hit = np.isin(nodes.idx, np.asarray(rows, dtype=np.int64))
        return np.where(hit, 0, MAX_NODE_SCORE).astype(np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


def new(args: Mapping[str, Any], handle: Handle) -> AvoidBounceBack:
    return AvoidBounceBack(handle)


SPEC = PluginSpec(name=NAME, factory=new)
