"""A node as queueing hints see it: what scheduling reads of a Node object, parsed once per
watch event (upstream hands hints typed ``*v1.Node`` objects, old and new alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.declared_features import declared_features
from scheduler.model.resources import node_allocatable
from scheduler.model.taints import Taint, parse_taints


@dataclass(frozen=True, slots=True)
class NodeSummary:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int]
    unschedulable: bool
    # API 1.6: a change of these alone is its own event (Action.UPDATE_NODE_ANNOTATION).
    annotations: Mapping[str, str]
    # API 2.2: status.declaredFeatures, sorted; a change is Action.UPDATE_NODE_DECLARED_FEATURE.
    declared_features: tuple[str, ...] = ()

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NodeSummary:
        """Raises :class:`~scheduler.model.errors.InvalidSpecError` for malformed taints or
        quantities."""
        meta = obj.get("metadata") or {}
        return cls(
            name=str(meta.get("name") or ""),
            labels=dict(meta.get("labels") or {}),
            taints=parse_taints(obj),
            allocatable=node_allocatable(obj),
            unschedulable=bool((obj.get("spec") or {}).get("unschedulable", False)),
            annotations=dict(meta.get("annotations") or {}),
            declared_features=declared_features(obj),
        )
