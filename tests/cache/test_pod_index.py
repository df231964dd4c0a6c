"""The pod index by controller owner: the siblings default topology spreading counts."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache.pod_index import PodLabelIndex
from scheduler.model.pod import PodInfo
from scheduler.testing import pod


def owned(name: str, owner: str | None, namespace: str = "default") -> PodInfo:
    obj: dict[str, Any] = pod(name, namespace=namespace)
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": f"rs-{owner}",
             "controller": True}]
    return PodInfo.from_pod(obj)


def siblings(index: PodLabelIndex) -> dict[tuple[str, str, str], list[str]]:
    return {key: sorted(p.name for p in group.values()) for key, group in index.by_owner.items()}


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([("add", owned("a", "web")), ("add", owned("b", "web"))],
                     {("default", "ReplicaSet", "web"): ["a", "b"]},
                     id="replicas of one ReplicaSet are grouped"),
        pytest.param([("add", owned("a", "web")), ("add", owned("a2", "web", "other"))],
                     {("default", "ReplicaSet", "web"): ["a"],
                      ("other", "ReplicaSet", "web"): ["a2"]},
                     id="the same owner name in another namespace is another group"),
        pytest.param([("add", owned("a", None))], {}, id="a pod without an owner is in none"),
        pytest.param([("add", owned("a", "web")), ("remove", owned("a", "web"))], {},
                     id="the last replica gone removes the group"),
        pytest.param([("add", owned("a", "web")), ("add", owned("a", "api"))],
                     {("default", "ReplicaSet", "api"): ["a"]},
                     id="a pod adopted by another owner moves"),
    ],
)
def test_pods_are_indexed_by_controller_owner(
    steps: list[tuple[str, PodInfo]], expected: dict[tuple[str, str, str], list[str]]
) -> None:
    index = PodLabelIndex()
    for action, info in steps:
        if action == "add":
            index.add(info)
        else:
            index.remove(info.uid)
    assert siblings(index) == expected
