"""PreferLabel: an out-of-tree Score plugin, as small as one can be. It prefers nodes that
carry a label, e.g. spot capacity for batch pods.

It imports the public plugin API only, as every in-tree plugin does. Installed with pip
(``pyproject.toml`` registers :data:`SPEC` under the ``secondary_scheduler.plugins`` entry
point), it is enabled and configured like a built-in plugin::

    profiles:
      - schedulerName: secondary-scheduler
        plugins:
          score:
            enabled: [{name: PreferLabel, weight: 5}]
        pluginConfig:
          - name: PreferLabel
            args: {label: node.example.com/spot, value: "true"}
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    BoolArray,
    CycleState,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    ScorePlugin,
    label_key_error,
)

NAME = "PreferLabel"


@dataclass(frozen=True)
class PreferLabelArgs:
    """``label`` is required; the node must carry it with ``value``."""

    label: str
    value: str = "true"

    def problems(self) -> Iterator[tuple[str, str]]:
        why = label_key_error(self.label)
        if why is not None:
            yield "label", why


class PreferLabel(ScorePlugin):
    """No ``normalize``: the protocol's, the identity, stands (scores are 0 or 100)."""

    name = NAME

    def __init__(self, args: PreferLabelArgs, handle: Handle) -> None:
        self.label = args.label
        self.value = args.value
        self.handle = handle

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        # One boolean per node row of the snapshot, cached until node labels change; the
        # batch's rows are then picked out of it (no Python loop over the batch).
        snapshot = self.handle.snapshot
        mask = snapshot.node_mask((NAME, self.label, self.value), self._labelled_rows)
        return np.where(mask[nodes.idx], MAX_NODE_SCORE, 0).astype(np.int64)

    def _labelled_rows(self) -> BoolArray:
        table = self.handle.snapshot.nodes
        mask = np.zeros(table.capacity, dtype=np.bool_)
        for row in table.index.values():
            mask[row] = table.labels[row].get(self.label) == self.value
        return mask


SPEC = PluginSpec(name=NAME, factory=PreferLabel, args=PreferLabelArgs,
                  points=frozenset({"score"}))
