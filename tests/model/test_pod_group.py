"""Workload, PodGroup (scheduling.k8s.io/v1beta1) and Coscheduling's PodGroup
(scheduling.x-k8s.io/v1alpha1) parsed into one model, and a pod's group reference
(``k8s.io/api/scheduling/v1beta1/types.go``, ``core/v1`` PodSchedulingGroup)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import (
    BASIC,
    COSCHEDULING,
    DISRUPTION_ALL,
    DISRUPTION_SINGLE,
    GANG,
    WORKLOAD_API,
    PodGroup,
    PodGroupRef,
    Workload,
)
from scheduler.testing import pod


def pod_group(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pg", "namespace": "ns", "uid": "u1", **meta}, "spec": spec}


def test_a_gang_podgroup_parses_with_its_policy_priority_and_workload() -> None:
    group = PodGroup.parse(pod_group(
        {"schedulingPolicy": {"gang": {"minCount": 8}}, "priority": 100,
         "priorityClassName": "high", "disruptionMode": {"all": {}},
         "workloadRef": {"workloadName": "w", "templateName": "workers"}},
        generation=3, creationTimestamp="2026-01-01T00:00:00Z"))
    assert (group.key, group.source, group.policy, group.min_count) == ("ns/pg", WORKLOAD_API,
                                                                      GANG, 8)
    assert (group.priority, group.priority_class_name, group.disruption_mode) == (
        100, "high", DISRUPTION_ALL)
    assert (group.workload_name, group.template_name, group.generation) == ("w", "workers", 3)
    assert group.created is not None and group.schedule_timeout_seconds is None


def test_a_basic_podgroup_counts_as_a_group_of_one() -> None:
    group = PodGroup.parse(pod_group({"schedulingPolicy": {"basic": {}}}))
    assert (group.policy, group.min_count, group.is_gang) == (BASIC, 1, False)
    assert group.disruption_mode == DISRUPTION_SINGLE and group.priority is None


def test_the_initially_scheduled_condition_is_read() -> None:
    obj = pod_group({"schedulingPolicy": {"basic": {}}})
    obj["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]}
    assert PodGroup.parse(obj).initially_scheduled


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"schedulingPolicy": {}}, InvalidSpecError(
            "spec.schedulingPolicy", "must specify exactly one of: `basic`, `gang`")),
        ({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}}, InvalidSpecError(
            "spec.schedulingPolicy", "must specify exactly one of: `basic`, `gang`")),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, InvalidSpecError(
            "spec.schedulingPolicy.gang.minCount", "must be greater than or equal to 1")),
        ({"schedulingPolicy": {"gang": {"minCount": "3"}}}, InvalidSpecError(
            "spec.schedulingPolicy.gang.minCount", "must be an integer")),
        ({"schedulingPolicy": {"basic": {}}, "priority": "x"}, InvalidSpecError(
            "spec.priority", "must be an integer")),
        ({"schedulingPolicy": {"basic": {}}, "disruptionMode": []}, InvalidSpecError(
            "spec.disruptionMode", "must be an object")),
    ],
)
def test_a_malformed_podgroup_names_its_field(spec: dict[str, Any], error: InvalidSpecError,
                                              ) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        PodGroup.parse(pod_group(spec))
    assert raised.value == error


def test_a_coscheduling_podgroup_is_a_gang_of_min_member_with_its_timeout_and_resources() -> None:
    group = PodGroup.parse_coscheduling(pod_group(
        {"minMember": 3, "scheduleTimeoutSeconds": 10, "minResources": {"cpu": "3"}}))
    assert (group.source, group.policy, group.min_count) == (COSCHEDULING, GANG, 3)
    assert group.schedule_timeout_seconds == 10
    assert group.min_resources == {"cpu": 3000}


def test_a_coscheduling_min_member_below_one_is_refused() -> None:
    with pytest.raises(InvalidSpecError) as raised:
        PodGroup.parse_coscheduling(pod_group({"minMember": 0}))
    assert raised.value.field == "spec.minMember"


def test_a_workload_keeps_its_templates() -> None:
    workload = Workload.parse({
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
                 "podGroupTemplates": [{"name": "workers",
                                        "schedulingPolicy": {"gang": {"minCount": 4}}}]}})
    assert (workload.key, workload.controller_kind, workload.controller_name) == ("ns/w",
                                                                                "Job", "j")
    assert [(t.name, t.policy, t.min_count) for t in workload.templates] == [("workers", GANG, 4)]


def test_a_workload_template_without_a_policy_names_its_path() -> None:
    with pytest.raises(InvalidSpecError) as raised:
        Workload.parse({"metadata": {"name": "w"},
                        "spec": {"podGroupTemplates": [{"name": "a", "schedulingPolicy": {}}]}})
    assert raised.value.field == "spec.podGroupTemplates[0].schedulingPolicy"


@pytest.mark.parametrize(
    ("spec", "labels", "ref"),
    [
        ({}, {}, None),
        ({"schedulingGroup": {"podGroupName": "pg"}}, {}, PodGroupRef(WORKLOAD_API, "pg")),
        ({}, {"scheduling.x-k8s.io/pod-group": "cg"}, PodGroupRef(COSCHEDULING, "cg")),
        ({"schedulingGroup": {"podGroupName": "pg"}}, {"scheduling.x-k8s.io/pod-group": "cg"},
         PodGroupRef(WORKLOAD_API, "pg")),
    ],
    ids=["no group", "schedulingGroup", "coscheduling label", "the spec field wins"],
)
def test_a_pods_group(spec: dict[str, Any], labels: dict[str, str],
                      ref: PodGroupRef | None) -> None:
    info = PodInfo.from_pod(pod("p", labels=labels, spec=spec))
    assert info.pod_group == ref and info.parse_error is None


@pytest.mark.parametrize(
    ("spec", "labels", "member"),
    [
        ({}, {}, False),
        ({"schedulingGroup": {"podGroupName": "pg"}}, {}, True),
        ({}, {"scheduling.x-k8s.io/pod-group": "cg"}, False),
    ],
    ids=["no group", "schedulingGroup", "coscheduling label"],
)
def test_only_a_workload_api_groups_pod_is_in_a_workload_group(
        spec: dict[str, Any], labels: dict[str, str], member: bool) -> None:
    """A Coscheduling group's pod has no group priority nor disruption mode: it is not."""
    assert PodInfo.from_pod(pod("p", labels=labels, spec=spec)).in_workload_group is member


def test_a_malformed_scheduling_group_is_the_pods_parse_error() -> None:
    info = PodInfo.from_pod(pod("p", spec={"schedulingGroup": {"podGroupName": 3}}))
    assert info.parse_error == InvalidSpecError(
        "spec.schedulingGroup.podGroupName", "must be a string")
