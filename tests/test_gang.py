"""Gangs through the whole scheduler: the intake counts members, GangScheduling holds them at
PreEnqueue and Permit, and the group's members are bound together or not at all."""

from __future__ import annotations

from typing import Any

from scheduler.cache.pod_groups import POD_GROUPS
from scheduler.config.scheduler_config import default_config
from scheduler.framework.profile_config import GANG_SCHEDULING
from scheduler.intake import ADDED
from scheduler.plugins.registry import default_registry
from scheduler.queue.scheduling_queue import UNSCHEDULABLE
from scheduler.testing import node, pod
from tests.test_cycle import Harness

WITH_GANGS = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
                  "multiPoint": {"enabled": [{"name": GANG_SCHEDULING}]}}}]}


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def member(name: str, group: str = "pg", cpu: str = "1") -> dict[str, Any]:
    return pod(name, uid=name, cpu=cpu, spec={"schedulingGroup": {"podGroupName": group}})


def test_the_default_profile_has_gang_scheduling_only_where_the_cluster_serves_pod_groups(
) -> None:
    """default_plugins.go: applyGangScheduling appends GangScheduling with the gate on."""
    def permit_plugins(gangs: bool) -> list[str]:
        config = default_config(default_registry(), gang_scheduling=gangs)
        return [ref.name for ref in config.profiles[0].points["permit"]]

    assert permit_plugins(False) == []
    assert permit_plugins(True) == [GANG_SCHEDULING]


def test_members_are_held_until_their_group_and_min_count_exist_then_bound_together() -> None:
    h = Harness(config=WITH_GANGS, binding="deferred")
    h.nodes(node("n1", cpu="8"))
    h.add(member("a"), member("b"))
    assert h.drain() == 0 and h.where("a") == UNSCHEDULABLE  # no PodGroup yet
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, pod_group("pg", 3))
    assert h.drain() == 0  # 2 of 3 members
    h.add(member("c"))
    assert h.drain() == 3
    h.run_bindings()
    assert sorted(key for key, _ in h.ports.binds) == ["default/a", "default/b", "default/c"]
