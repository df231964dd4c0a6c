"""Intake, ordering, update/delete, activate and the leftover flush."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from tests.queue.fakes import (
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_RESOURCES_FIT,
    SCHEDULING_GATES,
    TAINT_TOLERATION,
    FakeClock,
    FakePod,
    fail,
    make_pod,
    make_queue,
    park,
    pop_now,
    revised,
    where,
)


def test_active_queue_pops_by_priority_then_fifo() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in (("a", 0), ("b", 10), ("c", 0), ("d", 10), ("e", 5)):
        queue.add(make_pod(name, priority=priority))
        clock.advance(0.1)
    assert queue.pending_pods()[ACTIVE] == ["default/" + n for n in "bdeac"]
    assert [pop_now(queue).pod.name for _ in range(5)] == list("bdeac")
    assert queue.pop(timeout=0) is None


def test_a_retried_pod_goes_behind_newer_pods_of_equal_priority() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("a"))
    clock.advance(1)
    queue.add(make_pod("b"))
    a = pop_now(queue)
    clock.advance(1)
    queue.add(make_pod("c"))
    clock.advance(1)
    fail(queue, a, [NODE_RESOURCES_FIT])  # parked, timestamp refreshed
    assert a.timestamp == clock.now
    queue.activate([a.uid])
    assert [pop_now(queue).pod.name for _ in range(3)] == ["b", "c", "a"]


def test_pop_bookkeeping() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("a"))
    clock.advance(2)
    qpi = pop_now(queue)
    assert qpi.attempts == 1
    assert qpi.initial_attempt_timestamp == 1000.0  # when it first entered activeQ
    assert queue.in_flight() == ["uid-a"] and len(queue) == 0
    fail(queue, qpi, [NODE_RESOURCES_FIT], pending=[TAINT_TOLERATION])
    assert queue.in_flight() == [] and len(queue) == 1
    queue.activate([qpi.uid])
    again = pop_now(queue)
    assert again is qpi and qpi.attempts == 2
    assert qpi.unschedulable_plugins == set() and qpi.pending_plugins == set()
    assert qpi.initial_attempt_timestamp == 1000.0
    queue.done(qpi.uid)
    assert queue.in_flight() == []


def test_add_ignores_a_pod_already_queued_or_in_flight() -> None:
    queue = make_queue()
    pod = make_pod("a")
    queue.add(pod)
    queue.add(pod)
    assert len(queue) == 1
    pop_now(queue)
    queue.add(pod)
    assert len(queue) == 0


# -- update ------------------------------------------------------------------------------------
def _labels(raw: dict[str, Any]) -> None:
    raw["metadata"]["labels"]["app"] = "new"


def _tolerations(raw: dict[str, Any]) -> None:
    raw["spec"]["tolerations"].append({"key": "k", "operator": "Exists"})


def _status(raw: dict[str, Any]) -> None:
    raw["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]


def _annotation(raw: dict[str, Any]) -> None:
    raw["metadata"]["annotations"] = {"note": "x"}


@pytest.mark.parametrize(
    ("rejectors", "change", "expected"),
    [
        pytest.param(
            [NODE_RESOURCES_FIT],
            _status,
            UNSCHEDULABLE,
            id="a status-only update leaves a pooled pod in the pool",
        ),
        pytest.param(
            [INTER_POD_AFFINITY],
            _labels,
            BACKOFF,
            id="a label change moves a pod whose rejector registered pod label changes",
        ),
        pytest.param(
            [NODE_AFFINITY],
            _labels,
            UNSCHEDULABLE,
            id="a label change does not move a pod whose rejector did not register it",
        ),
        pytest.param(
            [TAINT_TOLERATION],
            _tolerations,
            BACKOFF,
            id="a toleration change moves a TaintToleration-rejected pod",
        ),
        pytest.param(
            [SCHEDULING_GATES],
            _annotation,
            BACKOFF,
            id="another spec or metadata change is a general update (UPDATE_POD_SPEC)",
        ),
        pytest.param(
            [NODE_RESOURCES_FIT],
            _annotation,
            UNSCHEDULABLE,
            id="which does not concern NodeResourcesFit",
        ),
    ],
)
def test_update_of_a_pooled_pod(
    rejectors: list[str], change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    queue = make_queue()
    old = make_pod("a", labels={"app": "old"})
    qpi = park(queue, old, rejectors)
    new = revised(old, change)
    queue.update(old, new)
    assert where(queue, new) == expected
    assert qpi.pod is new  # updated in place wherever it is


def test_update_with_the_same_resource_version_is_ignored() -> None:
    queue = make_queue()
    old = make_pod("a")
    qpi = park(queue, old, [INTER_POD_AFFINITY])
    same_rv = revised(old, _labels, resource_version=old.resource_version)
    queue.update(old, same_rv)
    assert where(queue, old) == UNSCHEDULABLE and qpi.pod is old


def test_update_in_active_queue_is_in_place_and_reorders() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    a, b = make_pod("a"), make_pod("b")
    queue.add(a)
    clock.advance(1)
    queue.add(b)
    b2 = revised(b, priority=100)
    queue.update(b, b2)
    assert queue.pending_pods()[ACTIVE] == ["default/b", "default/a"]
    qpi = queue.get(b.uid)
    assert qpi is not None and qpi.pod is b2 and qpi.timestamp == 1001.0


def test_update_in_backoff_queue_is_in_place() -> None:
    queue = make_queue()
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    fail(queue, qpi, [INTER_POD_AFFINITY, NODE_RESOURCES_FIT])
    assert where(queue, qpi.pod) == BACKOFF
    new = revised(qpi.pod, _labels)
    queue.update(qpi.pod, new)
    assert where(queue, new) == BACKOFF and qpi.pod is new


def test_update_of_an_unknown_pod_adds_it_but_not_of_a_deleted_one() -> None:
    queue = make_queue()
    old = make_pod("a")
    queue.update(old, revised(old))
    assert where(queue, old) == ACTIVE
    queue.delete(old.uid)
    queue.update(old, revised(old, resource_version="7"))
    assert len(queue) == 0
    queue.add(old)  # a fresh add clears the tombstone
    assert where(queue, old) == ACTIVE


# -- delete ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "place",
    [
        pytest.param(ACTIVE, id="from activeQ"),
        pytest.param(BACKOFF, id="from backoffQ"),
        pytest.param(UNSCHEDULABLE, id="from the unschedulable pool"),
    ],
)
def test_delete_removes_the_pod_and_its_nomination(place: str) -> None:
    queue = make_queue()
    pod = make_pod("a", nominated="n1")
    queue.add(pod)
    if place != ACTIVE:
        qpi = pop_now(queue)
        if place == BACKOFF:
            queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
        fail(queue, qpi, [NODE_RESOURCES_FIT])
    assert where(queue, pod) == place
    assert queue.nominator.node_of(pod.uid) == "n1"
    queue.delete(pod.uid)
    assert len(queue) == 0 and queue.nominator.node_of(pod.uid) is None


@pytest.mark.parametrize(
    "done_first",
    [
        pytest.param(False, id="deleted during the scheduling cycle"),
        pytest.param(True, id="deleted during the binding cycle, after done"),
    ],
)
def test_a_pod_deleted_while_in_flight_is_not_requeued(done_first: bool) -> None:
    queue = make_queue()
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    if done_first:
        queue.done(qpi.uid)
    queue.delete(qpi.uid)
    assert fail(queue, qpi, [NODE_RESOURCES_FIT]) is False
    assert len(queue) == 0 and queue.in_flight() == []


def test_requeueing_a_pod_that_is_already_queued_is_refused() -> None:
    queue = make_queue()
    pod = make_pod("a")
    queue.add(pod)
    qpi = pop_now(queue)
    queue.done(qpi.uid)
    queue.add(pod)  # e.g. a re-list after the attempt ended
    assert fail(queue, qpi, [NODE_RESOURCES_FIT]) is False
    assert len(queue) == 1


# -- nominator -----------------------------------------------------------------------------
def test_queue_keeps_the_nominator_in_step() -> None:
    queue = make_queue()
    pod = make_pod("a", nominated="n1")
    queue.add(pod)
    assert [p.name for p in queue.nominator.pods_for_node("n1")] == ["a"]
    # The failure path nominates in memory before the status patch lands ...
    qpi = pop_now(queue)
    queue.nominator.add(qpi.pod, "n2")
    fail(queue, qpi, [NODE_RESOURCES_FIT])
    # ... and a stale update without status.nominatedNodeName keeps it.
    plain = make_pod("a")
    queue.update(plain, revised(plain, _status))
    assert queue.nominator.node_of(pod.uid) == "n2"
    latest = queue.get(pod.uid)
    assert latest is not None
    assert queue.nominator.pods_for_node("n2") == [latest.pod]


# -- activate ------------------------------------------------------------------------------
def test_activate_moves_pods_from_the_pool_and_backoff_to_active() -> None:
    queue = make_queue()
    parked = park(queue, make_pod("parked"), [NODE_RESOURCES_FIT])
    queue.add(make_pod("backing"))
    backing = pop_now(queue)
    fail(queue, backing, error=True)
    assert (where(queue, parked.pod), where(queue, backing.pod)) == (UNSCHEDULABLE, BACKOFF)
    queue.activate([parked.uid, backing.uid, "uid-unknown"])
    assert queue.pending_pods()[ACTIVE] == ["default/parked", "default/backing"]


def test_activate_of_an_in_flight_pod_keeps_it_out_of_the_pool() -> None:
    queue = make_queue()
    queue.add(make_pod("a"))
    queue.add(make_pod("b"))
    a, b = pop_now(queue), pop_now(queue)
    queue.activate([a.uid])  # only a is targeted
    fail(queue, a, [NODE_RESOURCES_FIT])
    fail(queue, b, [NODE_RESOURCES_FIT])
    assert (where(queue, a.pod), where(queue, b.pod)) == (BACKOFF, UNSCHEDULABLE)


# -- leftover flush --------------------------------------------------------------------------
def test_leftover_flush_moves_pods_pooled_longer_than_five_minutes() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    old = park(queue, make_pod("old"), [NODE_RESOURCES_FIT])
    clock.advance(100)
    recent = park(queue, make_pod("recent"), [NODE_RESOURCES_FIT])
    clock.advance(200)  # old: exactly 300 s, not more
    queue.flush_unschedulable_leftover()
    assert queue.pending_pods()[UNSCHEDULABLE] == ["default/old", "default/recent"]
    clock.advance(0.5)
    queue.flush_unschedulable_leftover()
    assert (where(queue, old.pod), where(queue, recent.pod)) == (ACTIVE, UNSCHEDULABLE)


def test_leftover_flush_sends_a_pod_still_backing_off_to_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock, initial_backoff=400.0, max_backoff=1000.0)
    qpi = park(queue, make_pod("a"), [NODE_RESOURCES_FIT])
    clock.advance(301)
    queue.flush_unschedulable_leftover()
    assert where(queue, qpi.pod) == BACKOFF


def test_leftover_flush_is_an_event_for_pods_in_flight() -> None:
    # Upstream logs UnschedulableTimeout (a wildcard event) for in-flight pods whenever the
    # flush moved something, so such a pod is not parked when its attempt fails.
    clock = FakeClock()
    queue = make_queue(clock)
    park(queue, make_pod("stale"), [NODE_RESOURCES_FIT])
    clock.advance(301)
    queue.add(make_pod("busy"))
    busy = pop_now(queue)
    queue.flush_unschedulable_leftover()
    fail(queue, busy, [NODE_RESOURCES_FIT])
    assert where(queue, busy.pod) == BACKOFF


@pytest.mark.parametrize("first_done", ["a", "c"], ids=["oldest done first", "newest done first"])
def test_events_are_kept_while_a_pod_that_saw_them_is_in_flight(first_done: str) -> None:
    # a and b are in flight when a pod is deleted, c starts after; whichever ends first, b
    # must still see the deletion when it fails, and is not parked.
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("a"))
    queue.add(make_pod("b"))
    a, b = pop_now(queue), pop_now(queue)
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    queue.add(make_pod("c"))
    c = pop_now(queue)
    queue.done((a if first_done == "a" else c).uid)
    fail(queue, b, [NODE_RESOURCES_FIT])
    assert where(queue, b.pod) == BACKOFF
    fail(queue, c if first_done == "a" else a, [NODE_RESOURCES_FIT])
    assert where(queue, (c if first_done == "a" else a).pod) == (
        UNSCHEDULABLE if first_done == "a" else BACKOFF)


# -- gating (PreEnqueue) -----------------------------------------------------------------------
def _gates(pod: FakePod) -> str | None:
    return SCHEDULING_GATES if pod.raw["spec"]["schedulingGates"] else None


def _ungate(raw: dict[str, Any]) -> None:
    raw["spec"]["schedulingGates"] = []


def test_a_gated_pod_waits_in_the_pool_until_its_gates_are_removed() -> None:
    clock = FakeClock()
    queue = make_queue(clock, pre_enqueue=_gates)
    gated = make_pod("a", gates=["example.com/wait"])
    queue.add(gated)
    qpi = queue.get(gated.uid)
    assert qpi is not None and qpi.gated and qpi.gating_plugin == SCHEDULING_GATES
    assert where(queue, gated) == UNSCHEDULABLE and queue.pop(timeout=0) is None
    # Neither unrelated events nor the leftover flush release it.
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
    clock.advance(400)
    queue.flush_unschedulable_leftover()
    assert where(queue, gated) == UNSCHEDULABLE
    # Another update that keeps the gate leaves it gated.
    relabelled = revised(gated, _labels)
    queue.update(gated, relabelled)
    assert where(queue, gated) == UNSCHEDULABLE and qpi.gated
    ungated = revised(relabelled, _ungate)
    queue.update(relabelled, ungated)
    assert where(queue, gated) == ACTIVE and not qpi.gated
    assert pop_now(queue).pod is ungated


def test_the_leftover_flush_looks_at_gated_pods_again() -> None:
    """Upstream re-evaluates gated pods on wildcard events: a gate that lifted without any
    event of its plugin does not keep the pod forever."""
    clock = FakeClock()
    gate_closed = [True]
    queue = make_queue(clock, pre_enqueue=lambda pod: SCHEDULING_GATES if gate_closed[0] else None)
    pod = make_pod("a")
    queue.add(pod)
    assert where(queue, pod) == UNSCHEDULABLE
    gate_closed[0] = False
    clock.advance(301)
    queue.flush_unschedulable_leftover()
    assert where(queue, pod) == ACTIVE


def test_take_pops_a_groups_other_members_from_every_queue_but_gated_or_in_flight() -> None:
    """Upstream queues a pod group as one entity (QueuedPodGroupInfo): the members popped
    with the first come from activeQ, backoffQ and the unschedulable pool alike."""
    clock = FakeClock()
    queue = make_queue(clock, pre_enqueue=lambda p: SCHEDULING_GATES if p.name == "gated" else None)
    backoff = make_pod("backoff")
    park(queue, backoff, [NODE_RESOURCES_FIT])
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, None, None)
    pooled = make_pod("pooled")
    park(queue, pooled, [NODE_RESOURCES_FIT])
    assert where(queue, backoff) == BACKOFF and where(queue, pooled) == UNSCHEDULABLE
    active, gated, flying = make_pod("active"), make_pod("gated"), make_pod("flying")
    queue.add(flying)
    pop_now(queue)
    queue.add(active)
    queue.add(gated)
    taken = queue.take([p.uid for p in (pooled, backoff, active, gated, flying)])
    assert sorted(q.pod.name for q in taken) == ["active", "backoff", "pooled"]
    assert where(queue, gated) == UNSCHEDULABLE
    assert all(q.attempts >= 1 for q in taken)
    assert sorted(queue.in_flight()) == sorted(p.uid for p in (pooled, backoff, active, flying))
