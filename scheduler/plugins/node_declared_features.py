"""NodeDeclaredFeatures: a pod goes only to nodes that declare every feature it needs.

Upstream ``nodedeclaredfeatures/nodedeclaredfeatures.go`` (v1.37.2; the gate is GA and
locked on, so the plugin is always enabled and sits last in the default profile). PreFilter
infers the pod's required features from its spec with the feature registry
(``k8s.io/component-helpers/nodedeclaredfeatures``) and skips the pod when there are none,
as almost every pod has. Filter tests the set against each node's ``status.declaredFeatures``
(a bitmask per node-table row), one vector operation per batch; a node that lacks one is
UnschedulableAndUnresolvable, since preempting pods cannot give a node a feature.

Not ported: the deferred-resize skip (``InPlacePodVerticalScalingSchedulerPreemption`` is
alpha and off in v1.37), and ``SignPod``, as this scheduler does not sign pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    DEFAULT_FEATURES,
    SKIP,
    SUCCESS,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    FeatureRegistry,
    FilterResult,
    Handle,
    NodeSummary,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Version,
)

NAME = "NodeDeclaredFeatures"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

# The kube-scheduler version this scheduler behaves as: upstream compares the binary's own
# version with each feature's MaxVersion.
COMPONENT_VERSION = Version.parse("1.37.2")


class NodeDeclaredFeatures:
    name = NAME
    filter_reads_pod_lists = False

    def __init__(
        self, registry: FeatureRegistry = DEFAULT_FEATURES, version: Version = COMPONENT_VERSION
    ) -> None:
        self.registry = registry
        self.version = version
        self._inference = registry.inference_for(version)
        self._flags_alone = self._inference.flags_alone

    def required_features(self, pod: PodInfo) -> int:
        """The features the pod needs, as a set over the registry (``InferForPodScheduling``:
        upstream passes the spec alone, the status not being written yet)."""
        return self._inference.infer(pod.raw.get("spec") or {})

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        # required_features, inline: every pod scheduled comes here, and nearly every one
        # needs no feature (as the registry is, one walk of the spec tells).
        spec = pod.raw.get("spec") or {}
        flags_alone = self._flags_alone
        if flags_alone is not None and not flags_alone(spec):
            return None, SKIP
        required = self._inference.infer(spec)
        if not required:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, required)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        required: int | None = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            everything = np.ones(len(nodes), dtype=np.bool_)
            message = f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found'
            result.reject(everything, Code.ERROR, message)
            return result
        declared = nodes.snapshot.nodes.declared_features.take(nodes.idx)
        lacking = (declared & required) != required
        result.reject(lacking, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      ERR_REASON_UNSATISFIED_REQUIREMENTS)
        return result

    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """The features the pod needs that the node does not declare (upstream's
        ``MatchNodeFeatureSet`` difference, which the Filter does not pay for)."""
        required = self.required_features(pod)
        declared = nodes.snapshot.nodes.declared_features.take(nodes.idx).tolist()
        return [
            [f"the node does not declare {name}, which the pod needs"
             for name in self.registry.unmap(required & ~mask)]
            for mask in declared
        ]

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE),
                _after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE),
                self._after_target_pod_update,
            ),
        ]

    def _after_target_pod_update(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """Queue only when the update changed the features the pod needs."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        if self.required_features(old) == self.required_features(new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def _after_node_change(
    pod: PodInfo, old: NodeSummary | None, new: NodeSummary | None
) -> QueueingHint:
    """Queue for a new node, or a node whose declared features changed."""
    if old is not None and new is not None and old.declared_features == new.declared_features:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Mapping[str, Any], handle: Handle) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures()


SPEC = PluginSpec(name=NAME, factory=new)
