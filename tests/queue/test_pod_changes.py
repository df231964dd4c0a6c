from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scheduler.framework.events import Action, ClusterEvent, Resource
from scheduler.queue.pod_changes import (
    is_pod_updated,
    pod_scheduling_properties_change,
)
from tests.queue.fakes import make_pod, revised

Change = Callable[[dict[str, Any]], None]


def _set(path: tuple[str, ...], value: object) -> Change:
    def change(raw: dict[str, Any]) -> None:
        target = raw
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value

    return change


def _requests(cpu: str | None, memory: str | None = None) -> Change:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return _set(("spec", "containers"), [{"name": "c", "resources": {"requests": requests}}])


def _containers(*cpus: str) -> Change:
    return _set(("spec", "containers"), [
        {"name": f"c{i}", "resources": {"requests": {"cpu": cpu}}} for i, cpu in enumerate(cpus)])


def _both(*changes: Change) -> Change:
    def change(raw: dict[str, Any]) -> None:
        for c in changes:
            c(raw)

    return change


@pytest.mark.parametrize(
    ("change", "actions"),
    [
        pytest.param(
            _set(("metadata", "labels"), {"app": "b"}),
            [Action.UPDATE_POD_LABEL],
            id="a label change",
        ),
        pytest.param(_requests("500m"), [Action.UPDATE_POD_SCALE_DOWN], id="a smaller request"),
        pytest.param(
            _requests("2"), [Action.UPDATE_POD_SPEC], id="a larger request is no scale down"
        ),
        pytest.param(
            _requests(None), [Action.UPDATE_POD_SCALE_DOWN], id="a removed request is a scale down"
        ),

        pytest.param(
            _set(("spec", "tolerations"), [{"key": "k", "operator": "Exists"}]),
            [Action.UPDATE_POD_TOLERATION],
            id="a toleration added",
        ),
        pytest.param(
            _set(("spec", "schedulingGates"), []),
            [Action.UPDATE_POD_SPEC],
            id="the last scheduling gate removed",
        ),
        pytest.param(
            _both(_set(("metadata", "labels"), {"app": "b"}), _requests("100m")),
            [Action.UPDATE_POD_LABEL, Action.UPDATE_POD_SCALE_DOWN],
            id="several kinds of change at once, in upstream order",
        ),
        pytest.param(
            _set(("metadata", "annotations"), {"a": "b"}),
            [Action.UPDATE_POD_SPEC],
            id="anything else is a general update",
        ),
    ],
)
def test_pod_scheduling_properties_change(change: Change, actions: list[Action]) -> None:
    old = make_pod("p", labels={"app": "a"}, cpu="1", gates=["g"])
    new = revised(old, change)
    assert pod_scheduling_properties_change(old, new) == [
        ClusterEvent(Resource.UNSCHEDULED_POD, a) for a in actions
    ]


@pytest.mark.parametrize(
    ("change", "updated"),
    [
        pytest.param(_set(("status", "phase"), "Failed"), False, id="status only"),
        pytest.param(_set(("metadata", "resourceVersion"), "9"), False, id="resourceVersion only"),
        pytest.param(
            _set(("metadata", "managedFields"), [{"manager": "m"}]), False, id="managedFields only"
        ),
        pytest.param(_set(("metadata", "finalizers"), ["f"]), False, id="finalizers only"),
        pytest.param(_set(("metadata", "labels"), {"x": "y"}), True, id="labels"),
        pytest.param(_set(("spec", "priority"), 5), True, id="spec"),
    ],
)
def test_is_pod_updated(change: Change, updated: bool) -> None:
    old = make_pod("p")
    assert is_pod_updated(old.raw, revised(old, change).raw) is updated


@pytest.mark.parametrize(
    ("before", "after", "scaled_down"),
    [
        pytest.param(("1", "1", "1"), ("1", "1", "500m"), True, id="3 cpu to 2.5"),
        pytest.param(("1", "1", "1"), ("500m", "500m", "2"), False, id="3 cpu to 3"),
        pytest.param(("1", "2"), ("3",), False, id="the sum, not the containers, counts"),
    ],
)
def test_requests_of_several_containers_are_summed(
    before: tuple[str, ...], after: tuple[str, ...], scaled_down: bool
) -> None:
    old = revised(make_pod("p"), _containers(*before))
    events = pod_scheduling_properties_change(old, revised(old, _containers(*after)))
    assert (ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCALE_DOWN) in events) is (
        scaled_down)
