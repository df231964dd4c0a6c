"""Watch events to cache deltas and queue calls (upstream ``eventhandlers.go``).

Facts from upstream's ``eventhandlers_test.go`` (TestAddPod, TestUpdatePod, TestDeletePod,
TestEventHandlers_MoveToActiveOnNominatedNodeUpdate) and the Priority admission plugin (how a
pod's priority is resolved), plus this scheduler's relist reconciliation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from scheduler.framework.interface import Code, CycleState, FilterResult, NodeView, Status
from scheduler.intake import ADDED, DELETED, MODIFIED, NAMESPACES, PDBS, PRIORITY_CLASSES
from scheduler.model.node import NodeSummary
from scheduler.model.pod import PodInfo
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.testing import namespace, node, pod
from tests.test_cycle import NO_PREEMPTION, FakePermit, Harness, only

MOVED = (ACTIVE, BACKOFF)


def priority_class(name: str, value: int, *, default: bool = False,
                   policy: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


def pdb(name: str, ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}}},
            "status": {"disruptionsAllowed": 1}}


# == which pods are queued ===================================================================
@pytest.mark.parametrize(
    ("obj", "queued", "accounted_on"),
    [
        pytest.param(pod("p"), True, None, id="a pending pod of our profile is queued"),
        pytest.param(pod("p", scheduler_name="default-scheduler"), False, None,
                     id="a pending pod of another scheduler is ignored"),
        pytest.param(pod("p", node_name="n1"), False, "n1",
                     id="a bound pod of our profile is only accounted"),
        pytest.param(pod("p", node_name="n1", scheduler_name="default-scheduler"), False, "n1",
                     id="a bound pod of another scheduler is accounted too"),
        pytest.param(pod("p", deletion_timestamp="2026-01-01T00:00:00Z"), False, None,
                     id="a terminating pending pod is not queued"),
        pytest.param(pod("p", spec={"schedulingGates": [{"name": "example.com/wait"}]}),
                     False, None, id="a pod with scheduling gates is not queued"),
        pytest.param(pod("p", node_name="n1", status={"phase": "Succeeded"}), False, None,
                     id="a finished pod uses nothing"),
        pytest.param(pod("p", node_name="n1", deletion_timestamp="2026-01-01T00:00:00Z"),
                     False, "n1", id="a terminating bound pod counts until it is gone"),
    ],
)
def test_which_pods_are_queued_and_which_are_only_accounted(
    obj: dict[str, Any], queued: bool, accounted_on: str | None
) -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(obj)
    assert (h.where("p") == ACTIVE) is queued
    assert h.accounted_node("p") == accounted_on
    assert h.ports.failures == []


def test_a_queued_pod_deleted_leaves_the_queue_and_the_nominator() -> None:
    h = Harness(NO_PREEMPTION)
    h.add(pod("p", nominated_node_name="n1"))
    uid = h.uid("p")
    assert h.where("p") == ACTIVE and h.s.queue.nominator.node_of(uid) == "n1"
    h.delete("p")
    assert h.where("p") is None and h.s.queue.nominator.node_of(uid) is None
    assert h.cycle() is False


def test_a_queued_pod_bound_by_someone_else_leaves_the_queue_and_is_accounted() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.observe_bound("p", "n1")
    assert h.where("p") is None
    assert h.accounted_node("p") == "n1"
    assert h.cycle() is False


def test_a_pod_deleted_while_being_scheduled_is_not_requeued() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="1"))
    h.add(pod("p", cpu="2"))
    pop = h.s.queue.pop

    def pop_then_delete(timeout: float | None = None) -> Any:
        qpi = pop(timeout)
        h.delete("p")
        return qpi

    h.s.queue.pop = pop_then_delete  # type: ignore[method-assign]
    h.cycle()
    assert h.where("p") is None and len(h.s.queue) == 0 and h.s.queue.in_flight() == []


def test_an_update_of_a_pending_pod_replaces_it_in_the_queue() -> None:
    h = Harness(NO_PREEMPTION)
    h.add(pod("p", labels={"v": "1"}))
    h.update("p", lambda o: o["metadata"]["labels"].update(v="2"))
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None and queued.pod.labels == {"v": "2"}
    assert len(h.s.queue) == 1


# == gates and invalid specs =================================================================
def test_a_pod_whose_scheduling_gates_are_removed_is_queued() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(pod("p", spec={"schedulingGates": [{"name": "a"}, {"name": "b"}]}))
    assert h.where("p") is None
    h.update("p", lambda o: o["spec"].update(schedulingGates=[{"name": "b"}]))
    assert h.where("p") is None
    h.update("p", lambda o: o["spec"].pop("schedulingGates"))
    assert h.where("p") == ACTIVE
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]


INVALID_CPU = ("invalid pod spec: spec.containers[0].resources.requests.cpu: Invalid value: "
               "\"lots\": quantities must match the regular expression "
               "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_an_invalid_pod_is_reported_once_per_spec_and_queued_once_fixed() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(pod("p", cpu="lots"))
    assert h.where("p") is None
    assert h.ports.failures_of("p") == [("SchedulerError", INVALID_CPU, None)]

    # Our own condition patch comes back as an update: no second report, no hot retry.
    h.update("p", lambda o: o["status"].update(conditions=[{"type": "PodScheduled"}]))
    h.update("p", lambda o: o["metadata"]["labels"].update(touched="yes"))
    assert len(h.ports.failures_of("p")) == 1
    assert h.cycle() is False

    # Another problem is another report.
    def tolerations(o: dict[str, Any]) -> None:
        o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        o["spec"]["tolerations"] = "all"
    h.update("p", tolerations)
    assert h.ports.failures_of("p")[-1] == (
        "SchedulerError", "invalid pod spec: spec.tolerations: must be a list", None)

    # Fixed: queued and scheduled.
    h.update("p", lambda o: o["spec"].pop("tolerations"))
    assert h.where("p") == ACTIVE
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]
    assert len(h.ports.failures_of("p")) == 2


def test_an_invalid_pod_is_reported_again_after_being_recreated() -> None:
    h = Harness(NO_PREEMPTION)
    h.add(pod("p", cpu="lots"))
    h.delete("p")
    h.add(pod("p", cpu="lots"))
    assert len(h.ports.failures_of("p")) == 2


def test_an_invalid_pod_of_another_scheduler_is_none_of_our_business() -> None:
    h = Harness(NO_PREEMPTION)
    h.add(pod("p", cpu="lots", scheduler_name="default-scheduler"))
    assert h.ports.failures == []


# == priority ================================================================================
CLASSES = [priority_class("high", 1000, policy="Never"), priority_class("low", 10)]


@pytest.mark.parametrize(
    ("classes", "spec", "priority", "policy"),
    [
        pytest.param(CLASSES, {"priority": 5, "priorityClassName": "high"}, 5,
                     "PreemptLowerPriority", id="spec.priority as admission set it wins"),
        pytest.param(CLASSES, {"priorityClassName": "high"}, 1000, "Never",
                     id="else the PriorityClass gives value and preemption policy"),
        pytest.param(CLASSES, {"priorityClassName": "high",
                               "preemptionPolicy": "PreemptLowerPriority"},
                     1000, "PreemptLowerPriority",
                     id="the pod's own preemptionPolicy wins over the class's"),
        pytest.param([*CLASSES, priority_class("default", 100, default=True)], {}, 100,
                     "PreemptLowerPriority", id="else the globalDefault class"),
        pytest.param([priority_class("d1", 300, default=True),
                      priority_class("d2", 200, default=True)], {}, 200,
                     "PreemptLowerPriority", id="of several global defaults the lowest value"),
        pytest.param(CLASSES, {}, 0, "PreemptLowerPriority", id="else zero"),
    ],
)
def test_priority_resolution(
    classes: list[dict[str, Any]], spec: dict[str, Any], priority: int, policy: str
) -> None:
    h = Harness(NO_PREEMPTION)
    h.intake.resync(PRIORITY_CLASSES, classes)
    h.add(pod("p", spec=spec))
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None
    assert queued.pod.priority == priority
    assert queued.pod.preemption_policy == policy


def test_an_unknown_priority_class_is_a_scheduler_error_naming_the_field() -> None:
    h = Harness(NO_PREEMPTION)
    h.intake.resync(PRIORITY_CLASSES, CLASSES)
    h.add(pod("p", spec={"priorityClassName": "gold"}))
    assert h.where("p") is None
    assert h.ports.failures_of("p") == [(
        "SchedulerError",
        "invalid pod spec: spec.priorityClassName: no PriorityClass with name gold was found",
        None)]
    # Once the class exists, the next event of the pod queues it.
    h.intake.on_priority_class(MODIFIED, priority_class("gold", 500))
    h.update("p", lambda o: o["metadata"]["labels"].update(retry="1"))
    queued = h.s.queue.get(h.uid("p"))
    assert queued is not None and queued.pod.priority == 500


def test_a_bound_pod_with_an_unknown_class_is_still_accounted() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    h.add(pod("p", node_name="n1", spec={"priorityClassName": "gold"}))
    assert h.accounted_node("p") == "n1" and h.ports.failures == []


# == node events move only the pods they may help ============================================
def parked(h: Harness, name: str, **kwargs: Any) -> None:
    h.add(pod(name, **kwargs))
    h.cycle()
    assert h.where(name) == UNSCHEDULABLE, h.ports.failures_of(name)


def grow(cpu: str) -> Any:
    def change(obj: dict[str, Any]) -> None:
        obj["status"]["allocatable"]["cpu"] = cpu
    return change


@pytest.mark.parametrize(
    ("change", "cpu_pod_moves", "affinity_pod_moves"),
    [
        pytest.param(lambda o: None, False, False, id="an identical update (a resync) moves none"),
        pytest.param(lambda o: o["metadata"]["labels"].update(team="x"), False, False,
                     id="an unrelated label moves none"),
        pytest.param(lambda o: o["metadata"]["labels"].update(disk="ssd"), False, True,
                     id="the label the affinity asks for moves only the affinity pod"),
        pytest.param(grow("8"), True, False,
                     id="allocatable growing enough moves only the resource pod"),
        pytest.param(grow("2500m"), False, False,
                     id="allocatable growing too little moves none"),
        pytest.param(lambda o: o["spec"].update(
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]), False, False,
            id="a new taint moves none"),
    ],
)
def test_a_node_update_moves_only_the_pods_it_may_help(
    change: Any, cpu_pod_moves: bool, affinity_pod_moves: bool
) -> None:
    h = Harness(NO_PREEMPTION)
    base = node("n1", cpu="2")
    h.nodes(base)
    parked(h, "needs-cpu", cpu="4")
    parked(h, "needs-ssd", spec={"nodeSelector": {"disk": "ssd"}})
    updated = dict(base, metadata=dict(base["metadata"], labels=dict(base["metadata"]["labels"])),
                   spec=dict(base["spec"]), status=dict(base["status"],
                                                         allocatable=dict(base["status"]["allocatable"])))
    change(updated)
    h.intake.on_node(MODIFIED, updated)
    assert (h.where("needs-cpu") in MOVED) is cpu_pod_moves
    assert (h.where("needs-ssd") in MOVED) is affinity_pod_moves


class AnnotationGate:
    """Refuses nodes annotated ``example.com/closed``; only that annotation going away can
    help, which its hint reads from the nodes' annotations."""

    name = "AnnotationGate"
    KEY = "example.com/closed"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        raw = nodes.snapshot.nodes.raw
        closed = np.asarray([self.KEY in (raw[row]["metadata"].get("annotations") or {})
                             for row in nodes.idx.tolist()], dtype=np.bool_)
        result = FilterResult.all_pass(len(nodes))
        result.reject(closed, Code.UNSCHEDULABLE, "node(s) are closed")
        return result

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(
            ClusterEvent(Resource.NODE, Action.UPDATE_NODE_ANNOTATION), self._reopened)]

    def _reopened(self, pod: PodInfo, old: NodeSummary, new: NodeSummary) -> QueueingHint:
        reopened = self.KEY in old.annotations and self.KEY not in new.annotations
        return QueueingHint.QUEUE if reopened else QueueingHint.SKIP


@pytest.mark.parametrize(
    ("annotations", "labels", "moves"),
    [
        pytest.param({}, {}, True, id="the annotation removed moves the pod"),
        pytest.param({AnnotationGate.KEY: "yes", "other": "x"}, {}, False,
                     id="another annotation changing is an event its hint skips"),
        pytest.param({AnnotationGate.KEY: "yes"}, {"team": "x"}, False,
                     id="a label changing is no annotation event"),
    ],
)
def test_a_node_update_of_annotations_alone_is_its_own_event(
    annotations: dict[str, str], labels: dict[str, str], moves: bool
) -> None:
    """Upstream's UpdateNodeAnnotation (NodeSchedulingPropertiesChange,
    pkg/scheduler/framework/events.go): an update that changes only a node's annotations
    reaches the plugins registered for it, with the annotations in old and new."""
    h = Harness(only(AnnotationGate()), plugins=[AnnotationGate()])
    h.nodes(node("n1", annotations={AnnotationGate.KEY: "yes"}))
    parked(h, "p")
    h.intake.on_node(MODIFIED, node("n1", annotations=annotations, labels=labels))
    assert (h.where("p") in MOVED) is moves


def test_a_new_node_moves_the_pods_it_may_help() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="2"))
    parked(h, "needs-cpu", cpu="4")
    parked(h, "needs-ssd", spec={"nodeSelector": {"disk": "ssd"}})
    h.nodes(node("n2", cpu="1", labels={"disk": "ssd"}))
    assert h.where("needs-cpu") == UNSCHEDULABLE
    assert h.where("needs-ssd") in MOVED


def test_an_uncordoned_node_moves_the_pods_it_rejected() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", unschedulable=True))
    parked(h, "p")
    h.intake.on_node(MODIFIED, node("n1"))
    assert h.where("p") in MOVED
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]


def test_a_bound_pod_resized_down_moves_the_pods_waiting_for_room() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="2"))
    h.add(pod("big", cpu="2", node_name="n1"))
    parked(h, "p", cpu="1")

    def relabel(o: dict[str, Any]) -> None:
        o["metadata"]["labels"]["v"] = "2"
    h.update("big", relabel)
    assert h.where("p") == UNSCHEDULABLE, "a label change frees no cpu"

    def shrink(o: dict[str, Any]) -> None:
        o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    h.update("big", shrink)
    assert h.where("p") in MOVED
    h.cycle()
    assert h.ports.binds == [("default/p", "n1")]


# == nominated pods: their room frees lower-or-equal priority pods ===========================
@pytest.fixture
def nominated_setup() -> Harness:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="1"))
    parked(h, "hpp", cpu="2", priority=300)
    parked(h, "mpp", cpu="2", priority=200, nominated_node_name="n1")
    parked(h, "smpp", cpu="2", priority=200)
    parked(h, "lpp", cpu="2", priority=100)
    return h


def set_nominated(name: str) -> Any:
    def change(o: dict[str, Any]) -> None:
        o["status"]["nominatedNodeName"] = name
    return change


@pytest.mark.parametrize(
    ("action", "moved"),
    [
        pytest.param(lambda h: h.update("mpp", set_nominated("n2")), {"lpp", "smpp", "mpp"},
                     id="an update of a nominated node name moves lower priority pods"),
        pytest.param(lambda h: h.update("mpp", set_nominated("")), {"lpp", "smpp", "mpp"},
                     id="removal of a nominated node name moves lower priority pods"),
        pytest.param(lambda h: h.delete("mpp"), {"lpp", "smpp"},
                     id="removal of a pod that had a nominated node moves lower priority pods"),
        pytest.param(lambda h: h.update("hpp", set_nominated("n2")), set(),
                     id="a new nomination of a pod that had none moves nothing"),
    ],
)
def test_a_nomination_that_goes_away_moves_lower_or_equal_priority_pods(
    nominated_setup: Harness, action: Any, moved: set[str]
) -> None:
    h = nominated_setup
    action(h)
    got = {n for n in ("hpp", "mpp", "smpp", "lpp") if h.where(n) in MOVED}
    assert got == moved


# == pods at Permit ==========================================================================
def test_deleting_a_pod_waiting_at_permit_rejects_it_and_frees_its_room() -> None:
    permit = FakePermit(status=Status(Code.WAIT), timeout=60)
    h = Harness(only(permit), plugins=[permit], binding="threads")
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    uid = h.uid("p")
    assert uid in h.s.waiting
    h.delete("p")
    # Permit would hold it for 60 s: only the rejection ends the binding cycle this soon.
    h.s.stop(timeout=5)
    assert h.s.bindings.in_flight() == 0, "the binding thread was left waiting at Permit"
    assert h.ports.binds == [] and h.ports.scheduled_calls == []
    h.s.refresh()
    assert h.s.cache.assumed_uids() == set() and h.s.cache.get_pod(uid) is None
    assert h.s.queue.get(uid) is None and h.s.queue.in_flight() == []


# == relist reconciliation ===================================================================
def test_a_pod_and_a_node_deleted_while_the_watch_was_down_leave_the_cache() -> None:
    h = Harness(NO_PREEMPTION)
    n1, n2 = node("n1"), node("n2")
    h.nodes(n1, n2)
    h.add(pod("a", node_name="n1"), pod("b", node_name="n2"), pod("c"), pod("d"))
    h.s.refresh()
    assert h.s.cache.node_names() == {"n1", "n2"}
    assert {h.uid("a"), h.uid("b")} <= h.s.cache.pod_uids()

    # The watch is down: n2, a and b are deleted, c gets bound to n1 by someone else, d is
    # deleted too. Nobody tells us. Then both watches relist.
    b_uid, a_uid, d_uid = h.uid("b"), h.uid("a"), h.uid("d")
    c_bound = dict(h.objects["c"], spec=dict(h.objects["c"]["spec"], nodeName="n1"))
    assert h.intake.resync_nodes([n1]) == ["n2"]
    assert sorted(h.intake.resync_pods([c_bound])) == sorted([a_uid, b_uid, d_uid])

    h.s.refresh()
    assert h.s.cache.node_names() == {"n1"}
    assert h.s.cache.pod_uids() == {h.uid("c")}
    assert h.s.cache.get_pod(h.uid("c")).node_name == "n1"  # type: ignore[union-attr]
    assert len(h.s.queue) == 0, "c is bound, d is gone"
    assert "n2" not in h.s.known_nodes
    # A second relist with nothing missed removes nothing.
    assert h.intake.resync_nodes([n1]) == [] and h.intake.resync_pods([c_bound]) == []


def test_a_relist_after_an_assumed_pod_was_deleted_drops_the_assumption() -> None:
    h = Harness(NO_PREEMPTION, binding="deferred")
    h.nodes(node("n1"))
    h.add(pod("p"))
    h.cycle()
    assert h.s.cache.is_assumed(h.uid("p"))
    h.intake.resync_pods([])
    h.s.refresh()
    assert h.s.cache.assumed_uids() == set() and h.s.cache.get_pod(h.uid("p")) is None


def test_namespaces_pdbs_and_priority_classes_are_reconciled_against_a_listing() -> None:
    h = Harness(NO_PREEMPTION)
    assert h.intake.resync(NAMESPACES, [namespace("a", {"team": "x"}), namespace("b")]) == []
    assert h.intake.resync(PDBS, [pdb("web"), pdb("db", "prod")]) == []
    assert h.intake.resync(PRIORITY_CLASSES, CLASSES) == []
    h.s.refresh()
    assert h.s.cache.namespaces == {"a": {"team": "x"}, "b": {}}
    assert set(h.s.cache.pdbs) == {"default/web", "prod/db"}

    assert h.intake.resync(NAMESPACES, [namespace("a", {"team": "y"})]) == ["/b"]
    assert h.intake.resync(PDBS, [pdb("web")]) == ["prod/db"]
    assert h.intake.resync(PRIORITY_CLASSES, [CLASSES[1]]) == ["/high"]
    h.s.refresh()
    assert h.s.cache.namespaces == {"a": {"team": "y"}}
    assert set(h.s.cache.pdbs) == {"default/web"}
    # The intake's own view follows: a pod naming the removed class is now invalid.
    h.add(pod("p", spec={"priorityClassName": "high"}))
    assert h.ports.failures_of("p")[0][0] == "SchedulerError"


def test_a_watch_delete_of_a_low_volume_object_is_applied() -> None:
    h = Harness(NO_PREEMPTION)
    h.intake.on_namespace(MODIFIED, namespace("a"))
    h.intake.on_pdb(MODIFIED, pdb("web"))
    h.intake.on_namespace(DELETED, namespace("a"))
    h.intake.on_pdb(DELETED, pdb("web"))
    h.s.refresh()
    assert h.s.cache.namespaces == {} and h.s.cache.pdbs == {}
    assert h.intake.resync(NAMESPACES, []) == [] and h.intake.resync(PDBS, []) == []


def test_managed_fields_are_dropped_before_the_cache_keeps_a_pod() -> None:
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1"))
    obj = pod("p", node_name="n1")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    h.add(obj)
    h.s.refresh()
    kept = h.s.cache.get_pod(h.uid("p"))
    assert kept is not None and "managedFields" not in kept.raw["metadata"]


def versioned(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}


def test_a_stale_listing_does_not_overwrite_what_the_watch_delivered_since() -> None:
    """Issue 14 item 5: the resync listing was taken at version 9; kopf delivered version 12
    of the class meanwhile. The listing's older copy must not win."""
    h = Harness(NO_PREEMPTION)
    high = {"metadata": {"name": "high"}, "value": 1000}
    h.intake.on_priority_class(MODIFIED, versioned({**high, "value": 2000}, 12))
    h.intake.on_namespace(MODIFIED, versioned(namespace("a", {"team": "new"}), 13))
    assert h.intake.resync(PRIORITY_CLASSES, [versioned(high, 8)], "9") == []
    assert h.intake.resync(NAMESPACES, [versioned(namespace("a", {"team": "old"}), 7)], "9") == []
    h.add(pod("p", spec={"priorityClassName": "high"}))
    assert h.s.pods[h.uid("p")].priority == 2000
    h.s.refresh()
    assert h.s.cache.namespaces == {"a": {"team": "new"}}


def test_an_object_created_after_the_listing_was_taken_is_not_swept() -> None:
    h = Harness(NO_PREEMPTION)
    h.intake.on_namespace(ADDED, versioned(namespace("old"), 3))
    h.intake.on_namespace(ADDED, versioned(namespace("new"), 10))
    h.intake.on_pdb(ADDED, versioned(pdb("web"), 11))
    # Listed at version 9: "old" was deleted unobserved before it, "new" came after it.
    assert h.intake.resync(NAMESPACES, [], "9") == ["/old"]
    assert h.intake.resync(PDBS, [], "9") == []
    h.s.refresh()
    assert h.s.cache.namespaces == {"new": {}}
    assert set(h.s.cache.pdbs) == {"default/web"}
    # A later listing that covers them proves them gone.
    assert h.intake.resync(NAMESPACES, [], "20") == ["/new"]
    assert h.intake.resync(PDBS, [], "20") == ["default/web"]


def test_a_stale_listing_does_not_bring_back_an_object_deleted_since() -> None:
    h = Harness(NO_PREEMPTION)
    h.intake.on_pdb(ADDED, versioned(pdb("web"), 5))
    h.intake.on_pdb(DELETED, versioned(pdb("web"), 8))
    assert h.intake.resync(PDBS, [versioned(pdb("web"), 5)], "7") == []
    h.s.refresh()
    assert h.s.cache.pdbs == {}
    # Recreated later: the new object is applied.
    h.intake.on_pdb(ADDED, versioned(pdb("web"), 15))
    h.s.refresh()
    assert set(h.s.cache.pdbs) == {"default/web"}


def test_a_finished_pod_is_forgotten_and_its_deletion_moves_nobody() -> None:
    """Issue 14 item 6: Succeeded and Failed pods are handled as gone when they finish (as
    upstream's informer never lists them) and nothing of them is kept."""
    h = Harness(NO_PREEMPTION)
    h.nodes(node("n1", cpu="2"))
    h.add(pod("job", cpu="2", node_name="n1"))
    h.add(pod("waiting", cpu="2"))
    h.cycle()
    assert h.where("waiting") == UNSCHEDULABLE
    h.update("job", lambda o: o["status"].update(phase="Succeeded"))
    assert h.uid("job") not in h.s.pods, "a finished pod is not kept"
    assert h.where("waiting") in (ACTIVE, BACKOFF), "its room is free"
    assert h.accounted_node("job") is None
    h.clock.advance(10)
    h.s.queue.flush_backoff_completed()
    h.cycle()
    assert h.ports.binds == [("default/waiting", "n1")]

    h.add(pod("late", cpu="2"))
    h.cycle()
    assert h.where("late") == UNSCHEDULABLE
    h.update("job", lambda o: o["metadata"].update(labels={"done": "yes"}))
    h.delete("job")
    assert h.where("late") == UNSCHEDULABLE, "the room was freed once, when the job finished"
    assert h.uid("late") in h.s.pods and "job" not in {p.name for p in h.s.pods.values()}


# == the synced start =======================================================================
def test_listings_applied_before_any_pod_raise_no_queue_event_but_later_changes_do() -> None:
    """The synced start applies every other kind's listing before the pods' (as
    kube-scheduler's WaitForCacheSync precedes its first cycle): the queue holds no pod then,
    so thousands of listed claims and slices cost no queue work. Once a pod is known, a
    change is told to the queue as before."""
    from scheduler.cache.dra_objects import DEVICE_CLASSES, RESOURCE_SLICES

    def slice_of(node_name: str, version: str) -> dict[str, Any]:
        return {"metadata": {"name": f"{node_name}-gpu", "resourceVersion": version},
                "spec": {"driver": "gpu.example.com", "nodeName": node_name,
                         "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a"}}}]}}

    seen: list[str] = []
    h = Harness()
    original = h.s.queue.move_all_to_active_or_backoff

    def record(event: ClusterEvent, old: Any, new: Any, **kwargs: Any) -> None:
        seen.append(str(event))
        original(event, old, new, **kwargs)

    h.s.queue.move_all_to_active_or_backoff = record  # type: ignore[method-assign]
    h.nodes(node("n1"), node("n2"))
    h.intake.resync_dra_objects(RESOURCE_SLICES, [slice_of("n1", "1"), slice_of("n2", "2")])
    h.intake.resync_dra_objects(DEVICE_CLASSES, [
        {"metadata": {"name": "gpu", "resourceVersion": "3"}, "spec": {}}])
    assert seen == []
    assert sorted(s.name for s in h.s.dra.slices()) == ["n1-gpu", "n2-gpu"]
    assert list(h.s.dra.keys(DEVICE_CLASSES)) == ["gpu"]

    h.add(pod("pending", cpu="1"))
    h.intake.on_dra_object(RESOURCE_SLICES, MODIFIED, slice_of("n2", "4"))
    h.intake.on_dra_object(DEVICE_CLASSES, DELETED, {"metadata": {"name": "gpu"}})
    assert seen == ["ResourceSliceUPDATE", "DeviceClassDELETE"]


# == pod groups ============================================================================
def _pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def test_pod_group_events_reach_the_store_and_the_queue_with_parsed_groups() -> None:
    from scheduler.cache.pod_groups import POD_GROUPS

    seen: list[tuple[str, Any, Any]] = []
    h = Harness()
    original = h.s.queue.move_all_to_active_or_backoff

    def record(event: ClusterEvent, old: Any, new: Any, **kwargs: Any) -> None:
        seen.append((str(event), old, new))
        original(event, old, new, **kwargs)

    h.s.queue.move_all_to_active_or_backoff = record  # type: ignore[method-assign]
    h.add(pod("pending", cpu="1"))  # with no pod known, no event is raised
    h.intake.on_pod_group_object(POD_GROUPS, ADDED, _pod_group("pg", 3))
    h.intake.on_pod_group_object(POD_GROUPS, MODIFIED, _pod_group("pg", 2))
    h.intake.on_pod_group_object(POD_GROUPS, DELETED, _pod_group("pg", 2))
    assert [(event, getattr(old, "min_count", None), getattr(new, "min_count", None))
            for event, old, new in seen] == [
        ("PodGroupAdd", None, 3), ("PodGroupUpdate", 3, 2), ("PodGroupDelete", 2, None)]
    assert list(h.s.pod_groups.keys(POD_GROUPS)) == []


def test_a_relist_of_pod_groups_drops_the_unlisted() -> None:
    from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS

    h = Harness()
    h.intake.resync_pod_group_objects(COSCHEDULING_POD_GROUPS, [
        {"metadata": {"name": "a", "namespace": "default"}, "spec": {"minMember": 2}},
        {"metadata": {"name": "b", "namespace": "default"}, "spec": {"minMember": 2}}])
    h.intake.resync_pod_group_objects(COSCHEDULING_POD_GROUPS, [
        {"metadata": {"name": "b", "namespace": "default"}, "spec": {"minMember": 2}},
        {"metadata": {"name": "c", "namespace": "default"}, "spec": {"minMember": "x"}}])
    assert list(h.s.pod_groups.keys(COSCHEDULING_POD_GROUPS)) == ["default/b"]


def test_a_members_arrival_counts_before_the_queue_sees_it() -> None:
    h = Harness()
    h.add(pod("a", spec={"schedulingGroup": {"podGroupName": "pg"}}))
    state = h.s.pod_groups.state_of(h.info("a"))
    assert state is not None and state.unscheduled == {h.info("a").uid}
    h.delete("a")
    assert h.s.pod_groups.state_of(PodInfo.from_pod(
        pod("a", spec={"schedulingGroup": {"podGroupName": "pg"}}))) is None
