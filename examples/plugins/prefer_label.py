"""An out-of-tree plugin, as small as one can be: a Score plugin that prefers nodes carrying a
label, e.g. spot capacity for batch pods.

It imports the framework and the model only, as every in-tree plugin does; the scheduler
reaches it through its :data:`SPEC`, registered in the registry the scheduler is built with,
and a configuration file enables it and gives its arguments::

    profiles:
      - schedulerName: secondary-scheduler
        plugins:
          score:
            enabled: [{name: PreferLabel, weight: 5}]
        pluginConfig:
          - name: PreferLabel
            args: {label: node.example.com/spot, value: "true"}

``tests/test_example_plugin.py`` does exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    BoolArray,
    ConfigError,
    CycleState,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    label_key_error,
)

NAME = "PreferLabel"
DEFAULT_ARGS: Mapping[str, Any] = {"label": "", "value": ""}


class PreferLabel:
    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.label = str(args["label"])
        self.value = str(args["value"])
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

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


def validate(args: Mapping[str, Any], path: str) -> None:
    unknown = sorted(set(args) - set(DEFAULT_ARGS))
    if unknown:
        raise ConfigError(f"{path}.{unknown[0]}: Invalid value: unknown field")
    label = args.get("label")
    why = label_key_error(label) if isinstance(label, str) else "must be a string"
    if why is not None:
        raise ConfigError(f"{path}.label: Invalid value: {label!r}: {why}")


def new(args: Mapping[str, Any], handle: Handle) -> PreferLabel:
    validate(args, f"{NAME}Args")
    return PreferLabel({**DEFAULT_ARGS, **args}, handle)


SPEC = PluginSpec(name=NAME, factory=new, default_args=DEFAULT_ARGS, validate=validate,
                  points=frozenset({"score"}))
