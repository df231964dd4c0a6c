from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from scheduler.queue import Nominator
from tests.queue.fakes import FakePod


def pod(name: str, nominated: str = "", node: str = "") -> FakePod:
    return FakePod(name, nominated_node_name=nominated, node_name=node)


@pytest.mark.parametrize(
    ("added", "node_arg", "expected_node"),
    [
        pytest.param(
            pod("a", nominated="n1"), None, "n1", id="None takes the pod's own nomination"
        ),
        pytest.param(
            pod("a", nominated="n1"), "n2", "n2", id="an explicit node overrides the pod's"
        ),
        pytest.param(pod("a", nominated="n1"), "", None, id="an empty node name clears it"),
        pytest.param(pod("a"), None, None, id="a pod without a nomination is not nominated"),
        pytest.param(pod("a", node="n9"), "n1", None, id="a bound pod is never nominated"),
    ],
)
def test_add(added: FakePod, node_arg: str | None, expected_node: str | None) -> None:
    nominator: Nominator[FakePod] = Nominator()
    nominator.add(pod("a", nominated="old"))
    nominator.add(added, node_arg)
    assert nominator.node_of("uid-a") == expected_node
    assert nominator.pods_for_node("old") == []
    if expected_node is None:
        assert nominator.all() == {} and len(nominator) == 0
    else:
        assert nominator.pods_for_node(expected_node) == [added]


@pytest.mark.parametrize(
    ("in_memory", "old", "new", "expected_node"),
    [
        pytest.param(
            "n1",
            "",
            "",
            "n1",
            id="keeps the in-memory nomination when neither object carries one",
        ),
        pytest.param("n1", "", "n2", "n2", id="a nomination added by the API wins"),
        pytest.param("n1", "n1", "n3", "n3", id="a nomination changed by the API wins"),
        pytest.param("n1", "n1", "", None, id="a nomination removed by the API clears it"),
        pytest.param(None, "", "", None, id="nothing to keep when nothing was nominated"),
    ],
)
def test_update(in_memory: str | None, old: str, new: str, expected_node: str | None) -> None:
    nominator: Nominator[FakePod] = Nominator()
    old_pod = pod("a", nominated=old)
    if in_memory is not None:
        nominator.add(old_pod, in_memory)
    new_pod = replace(old_pod, nominated_node_name=new, resource_version="2")
    nominator.update(old_pod, new_pod)
    assert nominator.node_of("uid-a") == expected_node
    if expected_node is not None:
        # The stored object is the new version.
        assert nominator.pods_for_node(expected_node)[0].resource_version == "2"


def test_pods_by_node_and_delete() -> None:
    nominator: Nominator[FakePod] = Nominator()
    a, b, c = pod("a", "n1"), pod("b", "n1"), pod("c", "n2")
    for p in (a, b, c):
        nominator.add(p)
    assert nominator.all() == {"n1": [a, b], "n2": [c]}
    nominator.delete(a.uid)
    nominator.delete("uid-unknown")
    assert nominator.pods_for_node("n1") == [b]
    nominator.delete("uid-b")
    assert nominator.all() == {"n2": [c]}
    assert nominator.node_of("uid-b") is None


def test_concurrent_adds_and_deletes_stay_consistent() -> None:
    nominator: Nominator[FakePod] = Nominator()

    def churn(worker: int) -> None:
        for i in range(300):
            p = pod(f"w{worker}-{i}", nominated=f"n{i % 5}")
            nominator.add(p)
            if i % 2:
                nominator.delete(p.uid)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert len(nominator) == 4 * 150
    assert sum(len(pods) for pods in nominator.all().values()) == 4 * 150


def test_all_is_one_copy_until_a_nomination_changes() -> None:
    nominator: Nominator[FakePod] = Nominator()
    a, b = pod("a", nominated="n1"), pod("b", nominated="n2")
    nominator.add(a)
    first = nominator.all()
    assert nominator.all() is first
    nominator.add(b)
    second = nominator.all()
    assert second is not first and second == {"n1": [a], "n2": [b]}
    assert first == {"n1": [a]}  # a copy handed out earlier does not change under its reader
    nominator.delete(a.uid)
    assert nominator.all() == {"n2": [b]}
    nominator.delete("uid-unknown")
    assert nominator.all() == {"n2": [b]}
