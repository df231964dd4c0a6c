"""DefaultBinder: binds the pod through the Binder port (``POST pods/{name}/binding``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugin_api import (
    SUCCESS,
    BindOutcome,
    Code,
    CycleState,
    Handle,
    PluginSpec,
    PodInfo,
    Status,
)

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # scheduler_bindings_total's child per outcome, looked up once.
        self._counted = {outcome: handle.metrics.bindings.labels(outcome.value)
                         for outcome in BindOutcome}

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        result = self._handle.binder.bind(pod, node)
        self._counted[result.outcome].inc()
        message = result.message or result.outcome.value
        if result.outcome is BindOutcome.BOUND:
            return SUCCESS
        if result.outcome in (BindOutcome.GONE, BindOutcome.CONFLICT):
            # Deleted meanwhile (404), or bound by someone else (409): no retry can help.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))
        return Status.error(message)


def new(args: Mapping[str, Any], handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)


SPEC = PluginSpec(name=NAME, factory=new, points=frozenset({"bind"}))
