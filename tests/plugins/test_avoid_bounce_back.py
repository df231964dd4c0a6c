"""AvoidBounceBack: a node with a record for the pod's controller scores 0, the others 100;
no record, no score (PreScore skips)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.avoidance import owner_key
from scheduler.framework.interface import Code, CycleState
from scheduler.intake import Intake
from scheduler.model.pod import PodInfo
from scheduler.plugins.avoid_bounce_back import NAME
from scheduler.testing import ManualClock, full_view, node, run_cycles, scheduler_of
from scheduler.testing import pod as bare_pod
from tests.rescheduling.conftest import owned

NODES = [node("a"), node("b"), node("c")]


@pytest.mark.parametrize(("records", "pod_owner", "scores"), [
    ({}, "web", None),
    ({("default", "ReplicaSet", "web"): ["a"]}, "web", [0, 100, 100]),
    ({("default", "ReplicaSet", "web"): ["a", "c"]}, "web", [0, 100, 0]),
    ({("default", "ReplicaSet", "other"): ["a"]}, "web", None),
    ({("default", "ReplicaSet", "web"): ["gone-node"]}, "web", [100, 100, 100]),
    ({("default", "ReplicaSet", "web"): ["a"]}, "", None),
])
def test_scores(records: dict[Any, list[str]], pod_owner: str,
                scores: list[int] | None) -> None:
    s, _ = scheduler_of(nodes=NODES)
    for owner, nodes in records.items():
        for name in nodes:
            s.avoidance.avoid(owner, name, 60, "test")
    pod = PodInfo.from_pod(owned("p", pod_owner) if pod_owner else bare_pod("p"))
    plugin = s.profiles["secondary-scheduler"].instances[NAME]
    state = CycleState()
    view = full_view(s.snapshot)
    status = plugin.pre_score(state, pod, view)
    if scores is None:
        assert status.code is Code.SKIP
        return
    assert status.is_success()
    by_node = dict(zip((s.snapshot.nodes.names[int(r)] for r in view.idx),
                       plugin.score(state, pod, view).tolist(), strict=True))
    assert [by_node[n] for n in "abc"] == scores


def test_records_expire_on_the_schedulers_clock() -> None:
    clock = ManualClock()
    s, _ = scheduler_of(nodes=NODES, clock=clock)
    pod = PodInfo.from_pod(owned("p", "web"))
    s.avoidance.avoid(owner_key(pod), "a", 60, "moved")
    s.avoidance.avoid(owner_key(pod), "a", 30, "shorter: the longer record stays")
    clock.advance(59)
    assert s.avoidance.nodes_for(owner_key(pod)) == {"a": "moved"}
    clock.advance(1)
    assert s.avoidance.nodes_for(owner_key(pod)) == {}


@pytest.mark.parametrize(("nodes", "expected"), [
    # The avoided node would win (emptier) but another fits: the pod goes there.
    ([node("a", cpu="8"), node("b")], "b"),
    # Only the avoided node fits: the pod goes back rather than stay pending.
    ([node("a"), node("b", cpu="500m")], "a"),
])
def test_a_controllers_new_pod_stays_off_the_avoided_node_while_another_fits(
        nodes: list[dict[str, Any]], expected: str) -> None:
    s, ports = scheduler_of(nodes=nodes)
    new = owned("web-new", "web")
    s.avoidance.avoid(owner_key(PodInfo.from_pod(new)), "a", 60, "moved")
    Intake(s).on_pod(None, new)
    s.refresh()
    run_cycles(s)
    assert ports.bound == [("default/web-new", expected)]
    s.stop(timeout=5)
