"""The pod-group store: objects of the three kinds, and members by state (upstream's
``backend/cache/podgroupstate_test.go``: add, assume, forget, bind, delete)."""

from __future__ import annotations

from scheduler.cache.pod_groups import (
    COSCHEDULING_POD_GROUPS,
    POD_GROUPS,
    WORKLOADS,
    PodGroups,
)
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import COSCHEDULING, PodGroup, Workload
from scheduler.testing import pod


def member(name: str, *, node_name: str = "", group: str = "pg") -> PodInfo:
    return PodInfo.from_pod(pod(name, uid=name, node_name=node_name,
                                spec={"schedulingGroup": {"podGroupName": group}}))


def test_objects_are_kept_by_kind_and_key() -> None:
    store = PodGroups()
    store.upsert(POD_GROUPS, "ns/pg", PodGroup("ns", "pg", min_count=2))
    store.upsert(COSCHEDULING_POD_GROUPS, "ns/pg", PodGroup("ns", "pg", source=COSCHEDULING))
    store.upsert(WORKLOADS, "ns/w", Workload("ns", "w"))
    assert list(store.keys(POD_GROUPS)) == ["ns/pg"]
    assert list(store.keys(COSCHEDULING_POD_GROUPS)) == ["ns/pg"]
    assert list(store.keys(WORKLOADS)) == ["ns/w"]
    store.remove(POD_GROUPS, "ns/pg")
    assert list(store.keys(POD_GROUPS)) == [] and store.get(COSCHEDULING_POD_GROUPS, "ns/pg")


def test_members_move_from_unscheduled_to_assumed_to_assigned() -> None:
    store = PodGroups()
    a, b = member("a"), member("b")
    store.pod_changed(None, a)
    store.pod_changed(None, b)
    state = store.state_of(a)
    assert state is not None and state.group is None
    assert (state.all_count(), state.scheduled_count(), state.unscheduled) == (2, 0, {"a", "b"})
    store.assume(a.replace(node_name="n1"))
    state = store.state_of(a)
    assert state is not None and (set(state.assumed), state.unscheduled) == ({"a"}, {"b"})
    store.forget(a)
    state = store.state_of(a)
    assert state is not None and (state.assumed, state.unscheduled) == ({}, {"a", "b"})
    store.assume(a)
    store.pod_changed(a, member("a", node_name="n1"))
    state = store.state_of(a)
    assert state is not None and (state.assumed, state.assigned) == ({}, {"a"})
    assert state.scheduled_count() == 1


def test_a_deleted_member_leaves_and_an_empty_group_goes() -> None:
    store = PodGroups()
    a = member("a")
    store.pod_changed(None, a)
    store.pod_deleted(a)
    assert store.state_of(a) is None
    store.assume(a)  # deleted meanwhile: ignored, as upstream's assumePod
    assert store.state_of(a) is None


def test_the_group_object_and_its_members_meet_whichever_comes_first() -> None:
    store = PodGroups()
    a = member("a")
    store.pod_changed(None, a)
    store.upsert(POD_GROUPS, "default/pg", PodGroup("default", "pg", min_count=3))
    assert store.group_of(a) == PodGroup("default", "pg", min_count=3)
    store.pod_deleted(a)
    state = store.state_of(a)
    assert state is not None and state.all_count() == 0  # the group stays while it exists
