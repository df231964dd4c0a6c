"""TaintToleration tables, ported from upstream's taint_toleration_test.go (v1.37)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import QueueingHint, Resource
from scheduler.framework.interface import Code, CycleState
from scheduler.plugins.helper.normalize_score import default_normalize_score
from scheduler.plugins.taint_toleration import ERR_REASON_UNTOLERATED, TaintToleration
from scheduler.testing import (
    cache_of,
    full_view,
    node,
    pod_info,
    rejected_reasons,
    snapshot_of,
    summary,
)

Taints = Sequence[dict[str, str]]
Tolerations = Sequence[dict[str, str]]


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, value: str = "", effect: str = "", operator: str = "") -> dict[str, str]:
    out = {"key": key, "value": value, "effect": effect}
    if operator:
        out["operator"] = operator
    return {k: v for k, v in out.items() if v}


PREFER = "PreferNoSchedule"

SCORES = [
    pytest.param([tol("foo", "bar", PREFER, "Equal")],
                 [[taint("foo", "bar", PREFER)], [taint("foo", "blah", PREFER)]], [100, 0],
                 id="node with taints tolerated by the pod gets a higher score than one with "
                    "intolerable taints"),
    pytest.param([tol("cpu-type", "arm64", PREFER, "Equal"),
                  tol("disk-type", "ssd", PREFER, "Equal")],
                 [[], [taint("cpu-type", "arm64", PREFER)],
                  [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
                 [100, 100, 100],
                 id="nodes whose taints are all tolerated get the same score, however many"),
    pytest.param([tol("foo", "bar", PREFER, "Equal")],
                 [[], [taint("cpu-type", "arm64", PREFER)],
                  [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
                 [100, 50, 0],
                 id="the more intolerable taints a node has, the lower score it gets"),
    pytest.param([tol("cpu-type", "arm64", "NoSchedule", "Equal"),
                  tol("disk-type", "ssd", "NoSchedule", "Equal")],
                 [[], [taint("cpu-type", "arm64", "NoSchedule")],
                  [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]],
                 [100, 100, 0],
                 id="only taints and tolerations with effect PreferNoSchedule are scored"),
    pytest.param([], [[], [taint("cpu-type", "arm64", PREFER)]], [100, 0],
                 id="no taints and tolerations: lands on the node with no taints"),
    pytest.param([tol("cpu-type", "arm64")],
                 [[taint("cpu-type", "arm64", PREFER)], [taint("cpu-type", "x86", PREFER)]],
                 [100, 0], id="a toleration with empty effect tolerates PreferNoSchedule taints"),
    pytest.param([], [[], []], [100, 100],
                 id="no taint anywhere: every node gets the maximum score"),
]


@pytest.mark.parametrize(("tolerations", "node_taints", "want"), SCORES)
def test_score(tolerations: Tolerations, node_taints: list[Taints], want: list[int]) -> None:
    nodes = [node(f"node{i}", taints=t) for i, t in enumerate(node_taints)]
    snapshot = snapshot_of(nodes)
    view = full_view(snapshot)
    pod = pod_info("p", spec={"tolerations": list(tolerations)})
    plugin = TaintToleration()
    state = CycleState()
    assert plugin.pre_score(state, pod, view).is_success()
    scores = plugin.normalize(state, pod, plugin.score(state, pod, view))
    assert scores.tolist() == want
    # Without PreScore the scores are the same.
    fallback = plugin.normalize(state, pod, plugin.score(CycleState(), pod, view))
    assert fallback.tolist() == want


UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

FILTER = [
    pytest.param([], [taint("dedicated", "user1", "NoSchedule")], UU,
                 id="a pod having no tolerations can't be scheduled onto a node with taints"),
    pytest.param([tol("dedicated", "user1", "NoSchedule")],
                 [taint("dedicated", "user1", "NoSchedule")], Code.SUCCESS,
                 id="a pod can be scheduled on a dedicated node assigned to user1"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")],
                 [taint("dedicated", "user1", "NoSchedule")], UU,
                 id="a pod can't be scheduled on a dedicated node assigned to user2"),
    pytest.param([tol("foo", "", "NoSchedule", "Exists")], [taint("foo", "bar", "NoSchedule")],
                 Code.SUCCESS, id="a toleration with operator Exists tolerates the taint"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal"),
                  tol("foo", "", "NoSchedule", "Exists")],
                 [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
                 Code.SUCCESS, id="all of the node's several taints are tolerated"),
    pytest.param([tol("foo", "bar", PREFER, "Equal")], [taint("foo", "bar", "NoSchedule")], UU,
                 id="keys and values match but the non-empty effect doesn't"),
    pytest.param([tol("foo", "bar", "", "Equal")], [taint("foo", "bar", "NoSchedule")],
                 Code.SUCCESS, id="the effect of the toleration is empty and matches any"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")],
                 [taint("dedicated", "user1", PREFER)], Code.SUCCESS,
                 id="an untolerated PreferNoSchedule taint does not filter"),
    pytest.param([], [taint("dedicated", "user1", PREFER)], Code.SUCCESS,
                 id="no toleration, but the taint on the node is only PreferNoSchedule"),
    pytest.param([], [taint("evict", "now", "NoExecute")], UU,
                 id="an untolerated NoExecute taint filters too"),
    pytest.param([tol("node.example.com/priority-level", "950", "NoSchedule", "Gt")],
                 [taint("node.example.com/priority-level", "800", "NoSchedule")], UU,
                 id="Gt tolerations are off with the comparison operators gate at its default"),
]


@pytest.mark.parametrize(("tolerations", "node_taints", "code"), FILTER)
def test_filter(tolerations: Tolerations, node_taints: Taints, code: Code) -> None:
    snapshot = snapshot_of([node("nodeA", taints=node_taints), node("clean")])
    view = full_view(snapshot)
    pod = pod_info("p", spec={"tolerations": list(tolerations)})
    result = TaintToleration().filter(CycleState(), pod, view)
    assert [Code(int(c)) for c in result.codes] == [code, Code.SUCCESS]
    want = [ERR_REASON_UNTOLERATED] if code is not Code.SUCCESS else []
    assert rejected_reasons(result, view.names()) == {"nodeA": want, "clean": []}


def test_filter_mask_follows_taint_changes() -> None:
    """The cached per-toleration-set mask is recomputed when a node's taints change."""
    cache = cache_of([node("a"), node("b")])
    pod = pod_info("p")
    plugin = TaintToleration()
    first = plugin.filter(CycleState(), pod, full_view(Snapshot(cache)))
    assert not first.codes.any()
    cache.upsert_node(node("b", taints=[taint("k", "v", "NoSchedule")]))
    view = full_view(Snapshot(cache))
    second = plugin.filter(CycleState(), pod, view)
    assert rejected_reasons(second, view.names()) == {"a": [], "b": [ERR_REASON_UNTOLERATED]}


NODE_HINTS = [
    pytest.param(None, node("n", taints=[taint("k", "v", "NoSchedule")]), QueueingHint.SKIP,
                 id="skip when an added node has a taint the pod does not tolerate"),
    pytest.param(None, node("n"), QueueingHint.QUEUE,
                 id="queue when a node without taints is added"),
    pytest.param(node("n", taints=[taint("k", "v", "NoSchedule")]), node("n"), QueueingHint.QUEUE,
                 id="queue when the untolerated taint is removed"),
    pytest.param(node("n"), node("n", taints=[taint("k", "v", "NoSchedule")]), QueueingHint.SKIP,
                 id="skip when a taint is added"),
    pytest.param(node("n", taints=[taint("k", "v", "NoSchedule")]),
                 node("n", taints=[taint("k", "v", "NoSchedule"), taint("x", "y", PREFER)]),
                 QueueingHint.SKIP, id="skip when the node stays untolerated"),
]


@pytest.mark.parametrize(("old", "new", "want"), NODE_HINTS)
def test_node_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    events = TaintToleration().events_to_register()
    hint = next(e.hint for e in events if e.event.resource is Resource.NODE)
    assert hint is not None
    assert hint(pod_info("p"), summary(old), summary(new)) is want


def test_registers_pod_toleration_updates() -> None:
    events = TaintToleration().events_to_register()
    assert any(e.event.resource is Resource.UNSCHEDULED_POD for e in events)


def test_default_normalize_score() -> None:
    """Upstream helper.DefaultNormalizeScore."""
    scores = np.asarray([0, 1, 3], dtype=np.int64)
    assert default_normalize_score(scores, reverse=False).tolist() == [0, 33, 100]
    assert default_normalize_score(scores, reverse=True).tolist() == [100, 67, 0]
    zeros = np.zeros(2, dtype=np.int64)
    assert default_normalize_score(zeros, reverse=True).tolist() == [100, 100]
    assert default_normalize_score(zeros, reverse=False).tolist() == [0, 0]
    empty = np.zeros(0, dtype=np.int64)
    assert default_normalize_score(empty, reverse=True).tolist() == []
    negative = np.asarray([-2, 0], dtype=np.int64)  # a maximum of 0: left as it is, as upstream
    assert default_normalize_score(negative, reverse=False).tolist() == [-2, 0]
