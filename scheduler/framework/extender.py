"""kube-scheduler's HTTP extenders, as the framework sees them (upstream's ``fwk.Extender``).

An extender is a web service the scheduler calls after its own plugins: it may filter the
nodes the plugins left, add to their scores, confirm preemption victims and bind the pod.
The cycle and DefaultPreemption use this protocol; the operator implements it over HTTP
(``scheduler.operator.extender``), and tests use small fakes. The semantics that do not
depend on the wire (which pods interest an extender, how scores are scaled, what an error
does) live here and in the cycle, so every implementation shares them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scheduler.framework.snapshot import ClusterSnapshot
    from scheduler.model.pod import PodInfo

# Upstream's extenderv1.MaxExtenderPriority: an extender scores 0..10, the scheduler scales
# it to MaxNodeScore (x10) and multiplies by the extender's weight.
MAX_EXTENDER_PRIORITY = 10
# The rejector recorded when an extender filtered nodes out (upstream's fwk.ExtenderName):
# extenders register no events, so such a pod is retried on any cluster event.
EXTENDER_NAME = "Extender"


class ExtenderError(Exception):
    """An extender call failed; the message is the one the pod's condition shows."""


@dataclass(frozen=True)
class ExtenderFilterResult:
    """Upstream's ExtenderFilterResult: the nodes that passed, and why the others failed."""

    nodes: Sequence[str]
    failed: Mapping[str, str] = field(default_factory=dict)
    failed_and_unresolvable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Victims:
    """The pods preemption would remove on one node (upstream's extenderv1.Victims)."""

    pods: Sequence[PodInfo]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """One configured extender; calls raise :class:`ExtenderError`."""

    @property
    def name(self) -> str:
        """Its urlPrefix, as upstream names extenders in logs and errors."""
        ...

    @property
    def weight(self) -> int: ...

    @property
    def ignorable(self) -> bool: ...

    @property
    def is_filter(self) -> bool: ...

    @property
    def is_prioritizer(self) -> bool: ...

    @property
    def is_binder(self) -> bool: ...

    @property
    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: PodInfo) -> bool: ...

    def filter(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> ExtenderFilterResult: ...

    def prioritize(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> Mapping[str, int]:
        """Scores 0..MAX_EXTENDER_PRIORITY by node name, before the weight."""
        ...

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], snapshot: ClusterSnapshot
    ) -> Mapping[str, Victims]: ...

    def bind(self, pod: PodInfo, node: str) -> None: ...


def interested(managed_resources: Collection[str], pod: PodInfo) -> bool:
    """Upstream's IsInterested: every pod when the extender manages no resource, otherwise a
    pod whose containers or init containers request or limit one of them."""
    if not managed_resources:
        return True
    spec = pod.raw.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = (container or {}).get("resources") or {}
            for kind in ("requests", "limits"):
                if any(name in managed_resources for name in resources.get(kind) or {}):
                    return True
    return False


def ordered(extenders: Sequence[Extender]) -> tuple[Extender, ...]:
    """As upstream's buildExtenders: ignorable extenders after the others, each group in
    configuration order."""
    return (
        *(e for e in extenders if not e.ignorable),
        *(e for e in extenders if e.ignorable),
    )
