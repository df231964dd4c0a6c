"""DefaultBinder: binds the pod through the Binder port (``POST pods/{name}/binding``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.framework.interface import SUCCESS, CycleState, Status
from scheduler.framework.registry import Handle, PluginSpec
from scheduler.ports import Binder, BindOutcome

if TYPE_CHECKING:
    from scheduler.metrics import Metrics
    from scheduler.model.pod import PodInfo

NAME = "DefaultBinder"
# CycleState key under which the binder leaves the outcome for the binding cycle.
OUTCOME_KEY = "bind_outcome"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        binder: Binder = self._handle.binder  # type: ignore[attr-defined]
        result = binder.bind(pod, node)
        state.write(OUTCOME_KEY, result.outcome)
        metrics: Metrics = self._handle.scheduler.metrics  # type: ignore[attr-defined]
        metrics.bindings.labels(result.outcome.value).inc()
        if result.outcome is BindOutcome.BOUND:
            return SUCCESS
        return Status.error(result.message or result.outcome.value)


def new(args: Mapping[str, Any], handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)


SPEC = PluginSpec(name=NAME, factory=new, points=frozenset({"bind"}))
