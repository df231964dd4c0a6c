"""Builders for the rescheduler's tests: pods with a controller, and ports that record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.ports import EvictionOutcome, EvictionResult
from scheduler.intake import Intake
from scheduler.model.pod import PodInfo
from scheduler.rescheduling.rescheduler import Rescheduler
from scheduler.scheduler import Scheduler
from scheduler.testing import ManualClock, pod, scheduler_of


def owned(name: str, owner: str, *, kind: str = "ReplicaSet", node: str = "",
          cpu: str = "1", **kw: Any) -> dict[str, Any]:
    """A pod of controller ``kind``/``owner`` (labelled app=owner), bound to ``node``."""
    obj = pod(name, cpu=cpu, node_name=node, labels={"app": owner, **kw.pop("labels", {})},
              **kw)
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": kind, "name": owner, "uid": f"uid-{owner}",
        "controller": True}]
    return obj


class Ports:
    """Evictor and MoveReporter that record; evictions answer ``outcome``."""

    def __init__(self) -> None:
        self.evicted: list[str] = []
        self.events: list[tuple[str, str, str]] = []
        self.outcome = EvictionOutcome.EVICTED

    def evict(self, victim: PodInfo) -> EvictionResult:
        self.evicted.append(victim.key)
        return EvictionResult(self.outcome, "" if self.outcome is EvictionOutcome.EVICTED
                              else "Cannot evict pod as it would violate the pod's "
                                   "disruption budget.")

    def mark_disruption_target(self, victim: PodInfo, message: str) -> bool:
        return True

    def delete(self, victim: PodInfo) -> EvictionOutcome:
        return EvictionOutcome.EVICTED

    def preempted_event(self, victim: PodInfo, preemptor: PodInfo, node: str) -> None:
        return None

    def set_nominated_node(self, pod: PodInfo, node: str) -> bool:
        return True

    def rescheduled(self, pod: PodInfo, reason: str, note: str) -> None:
        self.events.append((pod.key, reason, note))


class World:
    """A scheduler with the rescheduler on, a manual clock, and the intake to play the API."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                 rescheduler: Mapping[str, Any] | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        self.clock = ManualClock()
        section = {"enabled": True, **(rescheduler or {})}
        self.s, self.null = scheduler_of({**(config or {}), "rescheduler": section},
                                         nodes=nodes, pods=pods, clock=self.clock)
        self.s.allow_scheduling()
        self.intake = Intake(self.s)
        self.ports = Ports()
        self.r = Rescheduler(self.s, self.s.config.rescheduler, evictor=self.ports,
                             reporter=self.ports)

    @property
    def scheduler(self) -> Scheduler:
        return self.s

    def placement(self) -> dict[str, str]:
        return {p.name: p.node_name for p in self.s.cache.pods.by_uid.values()}

    def deliver(self, event: str, obj: dict[str, Any]) -> None:
        self.intake.on_pod(event, obj)
        self.s.refresh()


@pytest.fixture
def world_of() -> Any:
    worlds: list[World] = []

    def make(*args: Any, **kw: Any) -> World:
        world = World(*args, **kw)
        worlds.append(world)
        return world

    yield make
    for world in worlds:
        world.s.stop(timeout=5)
