"""InterPodAffinity's name and arguments: upstream's v1 defaults and
``ValidateInterPodAffinityArgs``, as a typed dataclass (``scheduler.framework.args``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

NAME = "InterPodAffinity"

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_WEIGHT_RANGE = ("Invalid value: {value!r}: not in valid range "
                 f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]")


@dataclass(frozen=True)
class InterPodAffinityArgs:
    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    hard_pod_affinity_weight: int = field(default=1, metadata={"type_error": _WEIGHT_RANGE})
    ignore_preferred_terms_of_existing_pods: bool = field(
        default=False, metadata={"type_error": "Invalid value: {value!r}: must be a boolean"})

    def field_errors(self, path: str) -> Iterator[str]:
        weight = self.hard_pod_affinity_weight
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            yield f"{path}.hardPodAffinityWeight: {_WEIGHT_RANGE.format(value=weight)}"
