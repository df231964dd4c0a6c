"""Builders for the rescheduler's tests: pods with a controller, and ports that record."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.ports import EvictionOutcome, EvictionResult
from scheduler.intake import DELETED, MODIFIED, Intake
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import PodGroup
from scheduler.rescheduling.rescheduler import PassReport, Rescheduler
from scheduler.scheduler import Scheduler
from scheduler.testing import ManualClock, pod, run_cycles, scheduler_of


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

    def preempted_event(
        self, victim: PodInfo, preemptor: PodInfo, node: str, group: PodGroup | None = None
    ) -> None:
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
        self.replacements = 0

    @property
    def scheduler(self) -> Scheduler:
        return self.s

    def placement(self) -> dict[str, str]:
        return {p.name: p.node_name for p in self.s.cache.pods.by_uid.values()}

    def deliver(self, event: str, obj: dict[str, Any]) -> None:
        self.intake.on_pod(event, obj)
        self.s.refresh()

    def pods_per_node(self, owner: str | None = None) -> Counter[str]:
        return Counter(p.node_name for p in self.s.cache.pods.by_uid.values()
                       if owner is None or p.owner_name == owner)

    def settle(self, report: PassReport) -> None:
        """Play the API, the controllers and the kubelet after a pass: each evicted pod goes,
        its controller creates a replacement from its spec, the scheduler places it, and it
        runs there."""
        bound_before = len(self.null.bound)
        pending: dict[str, dict[str, Any]] = {}
        for move in report.moves:
            if report.outcomes.get(move.pod.key) != "Evicted":
                continue
            self.deliver(DELETED, move.pod.raw)
            self.replacements += 1
            raw = copy.deepcopy(move.pod.raw)
            name = f"{move.pod.owner_name}-r{self.replacements}"
            raw["metadata"].update(name=name, uid=f"uid-{name}")
            raw["spec"].pop("nodeName", None)
            raw["status"] = {"phase": "Pending"}
            pending[f"{move.pod.namespace}/{name}"] = raw
            self.deliver(MODIFIED, raw)
        run_cycles(self.s)
        for key, node_name in self.null.bound[bound_before:]:
            raw = copy.deepcopy(pending[key])
            raw["metadata"]["resourceVersion"] = "2"
            raw["spec"]["nodeName"] = node_name
            raw["status"] = {"phase": "Running"}
            self.deliver(MODIFIED, raw)

    def converge(self, passes: int) -> list[PassReport]:
        """Passes, each settled, until one moves nothing (or ``passes`` ran)."""
        reports: list[PassReport] = []
        while len(reports) < passes:
            reports.append(self.r.run_once())
            if not reports[-1].moves:
                break
            self.settle(reports[-1])
        return reports


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
