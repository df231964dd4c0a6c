"""NodeUnschedulable tables, ported from upstream's node_unschedulable_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.events import QueueingHint, Resource
from scheduler.framework.interface import Code, CycleState
from scheduler.plugins import node_unschedulable
from scheduler.plugins.node_unschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from scheduler.testing import full_view, node, pod_info, rejected_reasons, snapshot_of, summary

UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

FILTER = [
    pytest.param([], True, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE],
                 id="does not schedule pod to unschedulable node"),
    pytest.param([], False, Code.SUCCESS, [], id="schedules pod to normal node"),
    pytest.param([UNSCHEDULABLE_TOLERATION], True, Code.SUCCESS, [],
                 id="schedules pod with toleration to unschedulable node"),
    pytest.param([{"operator": "Exists"}], True, Code.SUCCESS, [],
                 id="a wildcard toleration tolerates the cordon too"),
    pytest.param([{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}], True,
                 Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE],
                 id="a toleration for another effect does not tolerate the cordon"),
]


@pytest.mark.parametrize(("tolerations", "cordoned", "code", "reasons"), FILTER)
def test_filter(
    tolerations: list[dict[str, str]], cordoned: bool, code: Code, reasons: list[str]
) -> None:
    snapshot = snapshot_of([node("n1", unschedulable=cordoned), node("n2")])
    view = full_view(snapshot)
    pod = pod_info("p", spec={"tolerations": tolerations})
    result = NodeUnschedulable().filter(CycleState(), pod, view)
    assert [Code(int(c)) for c in result.codes] == [code, Code.SUCCESS]
    assert rejected_reasons(result, view.names()) == {"n1": reasons, "n2": []}


NODE_HINTS = [
    pytest.param(None, node("n", unschedulable=True), QueueingHint.SKIP,
                 id="skip queue on unschedulable node added"),
    pytest.param(None, node("n"), QueueingHint.QUEUE, id="queue on schedulable node added"),
    pytest.param(node("n", unschedulable=True), node("n"), QueueingHint.QUEUE,
                 id="queue on unschedulable node changed to schedulable"),
    pytest.param(node("n"), node("n"), QueueingHint.SKIP,
                 id="skip queue on node unschedulable field unchanged"),
]


@pytest.mark.parametrize(("old", "new", "want"), NODE_HINTS)
def test_node_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    events = NodeUnschedulable().events_to_register()
    hint = next(e.hint for e in events if e.event.resource is Resource.NODE)
    assert hint is not None
    assert hint(pod_info("p"), summary(old), summary(new)) is want


def test_pod_toleration_hint() -> None:
    events = NodeUnschedulable().events_to_register()
    hint = next(e.hint for e in events if e.event.resource is Resource.UNSCHEDULED_POD)
    assert hint is not None
    before = pod_info("p")
    unrelated = pod_info("p", spec={"tolerations": [{"key": "foo", "operator": "Exists"}]})
    tolerating = pod_info("p", spec={"tolerations": [UNSCHEDULABLE_TOLERATION]})
    assert hint(before, before, unrelated) is QueueingHint.SKIP
    assert hint(before, before, tolerating) is QueueingHint.QUEUE


def test_spec() -> None:
    assert node_unschedulable.SPEC.name == "NodeUnschedulable"
