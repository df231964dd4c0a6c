"""Coscheduling PodGroups' status kept current from the pod and PodGroup watches, written
when it changes (scheduler.operator.coscheduling_status)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.ports import NullPorts
from scheduler.model.coscheduling import CoschedulingStatus
from scheduler.operator.coscheduling_status import CoschedulingStatusWriter


def group(status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": "ml", "name": "train", "uid": "g1"},
            "spec": {"minMember": 2}, "status": status or {}}


def member(uid: str, phase: str = "Pending", group_name: str | None = "train") -> dict[str, Any]:
    labels = {"scheduling.x-k8s.io/pod-group": group_name} if group_name else {}
    return {"metadata": {"namespace": "ml", "name": uid, "uid": uid, "labels": labels,
                         "ownerReferences": [{"name": "trainer"}]},
            "status": {"phase": phase}}


def test_members_running_make_the_group_running_and_nothing_is_written_twice() -> None:
    ports = NullPorts()
    writer = CoschedulingStatusWriter(ports)
    writer.on_groups_listed([group()])
    assert ports.group_statuses == []  # not before the pods are listed
    writer.on_pods_listed([member("a"), member("b"), member("c", group_name=None)])
    assert ports.group_statuses == [
        ("ml/train", CoschedulingStatus("Scheduling", occupied_by="ml/trainer"))]
    writer.on_pod("MODIFIED", member("a", "Running"))
    writer.on_pod("MODIFIED", member("b", "Running"))
    assert ports.group_statuses[-1] == (
        "ml/train", CoschedulingStatus("Running", running=2, occupied_by="ml/trainer"))
    # The watch brings the written status back: nothing new to write.
    written = len(ports.group_statuses)
    writer.on_group("MODIFIED", group({"phase": "Running", "running": 2,
                                       "occupiedBy": "ml/trainer"}))
    assert len(ports.group_statuses) == written


def test_a_deleted_member_takes_the_group_back_to_pending() -> None:
    ports = NullPorts()
    writer = CoschedulingStatusWriter(ports)
    writer.on_group(None, group({"phase": "Running", "running": 2}))
    writer.on_pods_listed([member("a", "Running"), member("b", "Running")])
    assert ports.group_statuses == []
    writer.on_pod("DELETED", member("b", "Running"))
    assert ports.group_statuses == [("ml/train", CoschedulingStatus("Pending", running=1))]


def test_pods_without_the_label_are_not_kept() -> None:
    writer = CoschedulingStatusWriter(NullPorts())
    writer.on_pod("ADDED", member("x", group_name=None))
    assert writer._group_of_pod == {}
