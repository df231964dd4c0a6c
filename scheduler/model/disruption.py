"""A PodDisruptionBudget as preemption reads it: which pods it covers and how many of them may
still be disrupted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.selectors import LabelSelector


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> DisruptionBudget:
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        raw_selector = spec.get("selector")
        try:
            selector = LabelSelector.parse(raw_selector, "spec.selector")
        except ValueError:
            selector = LabelSelector.NOTHING
        # Upstream: a PDB with an empty selector matches no pod for preemption purposes.
        if not raw_selector or (
            not raw_selector.get("matchLabels") and not raw_selector.get("matchExpressions")
        ):
            selector = LabelSelector.NOTHING
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            selector=selector,
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset((status.get("disruptedPods") or {}).keys()),
        )
