"""Optional hooks through which a Filter plugin explains itself (``secondary-scheduler
explain``, ``kubectl why``): the explanation runs every Filter plugin on every node, then asks
each plugin that has these methods for the numbers behind its verdicts and for what would
help. The scheduling cycle never calls them. A plugin without them is still explained by its
Filter's codes and reasons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from scheduler.framework.interface import BoolArray, CycleState, NodeView
    from scheduler.model.pod import PodInfo


@runtime_checkable
class ExplainsNodes(Protocol):
    """A Filter plugin that says why it rejects a node, with the numbers behind the reason."""

    def explain_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> list[list[str]]:
        """For each row of ``nodes`` (rows this plugin's Filter rejected, as the node table
        has them, after PreFilter ran in ``state``), the lines that say why, e.g. ``cpu: the
        pod requests 3, 1 free (4 allocatable, 3 requested)``; one list per row, in order."""
        ...


@runtime_checkable
class ExplainsHints(Protocol):
    """A Filter plugin that says what would let the pod past it."""

    def explain_hints(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeView,
        rejected: BoolArray,
        others_pass: BoolArray,
    ) -> list[str]:
        """What would help, one sentence each, e.g. ``2 nodes would fit with 1 less cpu``.

        ``nodes`` are every node of the explanation; per row, ``rejected`` says this plugin's
        Filter rejects it and ``others_pass`` that no other Filter plugin does. A plugin with
        this hook speaks for the nodes it alone rejects: the explanation adds no ``N nodes
        fail only <plugin>`` line for it."""
        ...


@runtime_checkable
class ExplainsPod(Protocol):
    """A plugin that says what, beyond the nodes, the pod waits for (GangScheduling: its
    pod group's members)."""

    def explain_pod(self, pod: PodInfo) -> list[str]:
        """Lines about the pod, e.g. ``pod group default/train (gang, minCount 8): 5 of 8
        members exist``; none when the plugin has nothing to say of it."""
        ...
