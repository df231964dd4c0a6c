"""What a pod group's users read on the group object, written through ApiPorts: the Workload
API's PodGroupInitiallyScheduled condition as kube-scheduler's updatePodGroupCondition
(pkg/scheduler/schedule_one_podgroup.go) patches it, and a Coscheduling PodGroup's status as
scheduler-plugins' PodGroup controller writes it (pkg/controllers/podgroup_controller.go)."""

from __future__ import annotations

from dataclasses import replace

from scheduler.model.coscheduling import CoschedulingStatus
from scheduler.model.pod_group import COSCHEDULING, PodGroup
from scheduler.operator.api_ports import ApiPorts
from tests.operator.fake_api import FakeApi, Reply

STATUS = "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/train/status"
X_STATUS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/train/status"
UNSCHEDULABLE = "minCount (8) cannot be satisfied: 0 scheduled, 6 remaining"


def group(**kw: object) -> PodGroup:
    return replace(PodGroup(namespace="ml", name="train", uid="u1", generation=2, min_count=8),
                   **kw)


def conditions(api: FakeApi, path: str = STATUS) -> list[dict[str, object]]:
    return [call.body["status"]["conditions"][0] for call in api.calls("PATCH", path)]


def test_the_condition_is_patched_with_the_groups_generation(api: FakeApi) -> None:
    api.on("PATCH", STATUS, Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    ports.pod_group_condition(group(), False, "Unschedulable", UNSCHEDULABLE)
    ports.pod_group_condition(group(), True, "Scheduled", "")
    ports.close()
    unschedulable, scheduled = conditions(api)
    assert {k: v for k, v in unschedulable.items() if k != "lastTransitionTime"} == {
        "type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
        "message": UNSCHEDULABLE, "observedGeneration": 2}
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == \
        ("True", "Scheduled", "")
    assert api.calls("PATCH", STATUS)[0].headers["content-type"] == \
        "application/strategic-merge-patch+json"


def test_an_unchanged_condition_is_not_written_again(api: FakeApi) -> None:
    api.on("PATCH", STATUS, Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    for _ in range(3):
        ports.pod_group_condition(group(), False, "Unschedulable", UNSCHEDULABLE)
    ports.pod_group_condition(group(generation=3), False, "Unschedulable", UNSCHEDULABLE)
    ports.close()
    first, second = conditions(api)
    assert (first["observedGeneration"], second["observedGeneration"]) == (2, 3)
    # SetStatusCondition: the status did not change, nor does its transition time.
    assert second["lastTransitionTime"] == first["lastTransitionTime"]


def test_a_scheduled_group_is_never_set_back_to_false(api: FakeApi) -> None:
    api.on("PATCH", STATUS, Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    ports.pod_group_condition(group(initially_scheduled=True), False, "Unschedulable",
                              UNSCHEDULABLE)
    ports.pod_group_condition(group(initially_scheduled=True), True, "Scheduled", "")
    ports.close()
    assert api.calls("PATCH", STATUS) == []


def test_coscheduling_groups_get_no_condition_but_their_status(api: FakeApi) -> None:
    api.on("PATCH", X_STATUS, Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    cosched = group(source=COSCHEDULING)
    ports.pod_group_condition(cosched, True, "Scheduled", "")
    running = CoschedulingStatus("Running", running=8, occupied_by="ml/trainer")
    ports.coscheduling_status(cosched, running)
    ports.coscheduling_status(cosched, running)
    ports.close()
    (patch,) = api.calls("PATCH", X_STATUS)
    assert patch.body == {"status": {"phase": "Running", "running": 8, "succeeded": 0,
                                     "failed": 0, "occupiedBy": "ml/trainer"}}
    assert patch.headers["content-type"] == "application/merge-patch+json"
    assert api.calls("PATCH", STATUS) == []
