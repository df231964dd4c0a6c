"""HTTP extenders in the scheduling cycle and in preemption (upstream's schedule_one.go and
preemption.go extender paths), with in-memory extenders in place of HTTP."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.cycle import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    extender_scores,
    schedule_one,
)
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.framework.extender import (
    EXTENDER_NAME,
    ExtenderError,
    ExtenderFilterResult,
    Victims,
    interested,
)
from scheduler.framework.snapshot import ClusterSnapshot
from scheduler.model.pod import PodInfo
from scheduler.testing import (
    container,
    full_view,
    node,
    pod,
    pod_info,
    schedule,
    scheduler_of,
)


@dataclass
class FakeExtender:
    """An extender answering from functions; records what it was asked."""

    name: str = "http://extender"
    weight: int = 1
    ignorable: bool = False
    managed: frozenset[str] = frozenset()
    filter_fn: Callable[[Sequence[str]], ExtenderFilterResult] | None = None
    scores: Mapping[str, int] | None = None
    preempt_fn: Callable[[Mapping[str, Victims]], Mapping[str, Victims]] | None = None
    binds: bool = False
    error: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def is_filter(self) -> bool:
        return self.filter_fn is not None

    @property
    def is_prioritizer(self) -> bool:
        return self.scores is not None

    @property
    def is_binder(self) -> bool:
        return self.binds

    @property
    def supports_preemption(self) -> bool:
        return self.preempt_fn is not None

    def is_interested(self, pod: PodInfo) -> bool:
        return interested(self.managed, pod)

    def _maybe_fail(self) -> None:
        if self.error:
            raise ExtenderError(self.error)

    def filter(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> ExtenderFilterResult:
        if self.filter_fn is None:  # no filterVerb: the nodes pass, nothing is sent
            return ExtenderFilterResult(list(nodes))
        self.calls.append(("filter", list(nodes)))
        self._maybe_fail()
        return self.filter_fn(nodes)

    def prioritize(
        self, pod: PodInfo, nodes: Sequence[str], snapshot: ClusterSnapshot
    ) -> Mapping[str, int]:
        if self.scores is None:
            return dict.fromkeys(nodes, 0)
        self.calls.append(("prioritize", list(nodes)))
        self._maybe_fail()
        return dict(self.scores)

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], snapshot: ClusterSnapshot
    ) -> Mapping[str, Victims]:
        self.calls.append(("preempt", {n: [p.name for p in v.pods] for n, v in victims.items()}))
        self._maybe_fail()
        assert self.preempt_fn is not None
        return self.preempt_fn(victims)

    def bind(self, pod: PodInfo, node: str) -> None:
        self.calls.append(("bind", (pod.key, node)))
        self._maybe_fail()


NODES = [node("a"), node("b"), node("c")]


def only(*names: str) -> Callable[[Sequence[str]], ExtenderFilterResult]:
    def answer(nodes: Sequence[str]) -> ExtenderFilterResult:
        return ExtenderFilterResult(
            [n for n in nodes if n in names],
            failed={n: "node(s) not on the list" for n in nodes if n not in names},
        )
    return answer


def run(extenders: Sequence[FakeExtender], pods: Sequence[Mapping[str, Any]],
        nodes: Sequence[Mapping[str, Any]] = NODES, config: Mapping[str, Any] | None = None,
        bound: Sequence[Mapping[str, Any]] = ()) -> tuple[Any, Any]:
    s, ports = scheduler_of(config, nodes=nodes, pods=[*bound, *pods], extenders=extenders)
    while schedule_one(s, timeout=0):
        pass
    return s, ports


@pytest.mark.parametrize(
    ("case", "extenders", "want"),
    [
        ("filter keeps one node", [FakeExtender(filter_fn=only("b"))], "b"),
        ("extenders filter in turn",
         [FakeExtender(filter_fn=only("b", "c")), FakeExtender(filter_fn=only("c"))], "c"),
        ("ignorable error skipped",
         [FakeExtender(filter_fn=only("a"), error="boom", ignorable=True),
          FakeExtender(filter_fn=only("c"))], "c"),
        ("not interested: managed resource not requested",
         [FakeExtender(filter_fn=only("a"), managed=frozenset({"example.com/gpu"})),
          FakeExtender(filter_fn=only("b"))], "b"),
        ("prioritize x weight x 10 beats the plugins",
         [FakeExtender(scores={"c": 10}, weight=2)], "c"),
        ("a failing prioritizer gives no score",
         [FakeExtender(scores={"a": 10}, error="down"), FakeExtender(scores={"b": 10})], "b"),
    ],
)
def test_filter_and_prioritize(case: str, extenders: list[FakeExtender], want: str) -> None:
    assert schedule(None, NODES, [pod("p", cpu="100m")], extenders=extenders) == {"p": want}, case


def test_interested_when_a_container_requests_or_limits_a_managed_resource() -> None:
    gpu = {"example.com/gpu": "1"}
    limited = container(cpu="1")
    limited["resources"]["limits"] = gpu
    init = pod_info("q", init_containers=[container(cpu="1", extra=gpu)])
    plain = pod_info("r", cpu="1")
    managed = {"example.com/gpu"}
    assert interested(managed, pod_info("p", containers=[limited]))
    assert interested(managed, init)
    assert not interested(managed, plain)
    assert interested(set(), plain)


def test_filtered_out_nodes_give_the_extenders_reasons_and_the_extender_rejector() -> None:
    def answer(nodes: Sequence[str]) -> ExtenderFilterResult:
        return ExtenderFilterResult(
            [], failed={"a": "team quota", "b": "team quota"},
            failed_and_unresolvable={"b": "wrong rack", "c": "wrong rack"})

    s, ports = run([FakeExtender(filter_fn=answer)], [pod("p", cpu="100m")])
    assert ports.failures == [
        ("default/p", REASON_UNSCHEDULABLE,
         "0/3 nodes are available: 1 team quota, 2 wrong rack. "
         "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
         "pod, 2 Preemption is not helpful for scheduling."),
    ]
    qpi = s.queue.get(pod_info("p").uid)
    assert qpi is not None and qpi.unschedulable_plugins == {EXTENDER_NAME}


def test_an_error_of_a_non_ignorable_extender_fails_the_attempt_with_its_message() -> None:
    message = 'Post "http://127.0.0.1:1/filter": connect: connection refused'
    _, ports = run([FakeExtender(filter_fn=only("a"), error=message)], [pod("p", cpu="1")])
    assert ports.failures == [("default/p", REASON_SCHEDULER_ERROR, message)]
    assert ports.bound == []


def test_the_binder_extender_binds_instead_of_the_bind_plugins() -> None:
    binder = FakeExtender(binds=True, filter_fn=only("a"))
    s, ports = run([binder], [pod("p", cpu="1")])
    assert ("bind", ("default/p", "a")) in binder.calls
    assert ports.bound == []
    assert s.cache.get_pod(pod_info("p").uid) is not None


def test_a_failed_extender_bind_requeues_with_its_error_and_binds_nothing() -> None:
    binder = FakeExtender(binds=True, error="quota service unavailable")
    _, ports = run([binder], [pod("p", cpu="1")])
    assert ports.bound == []
    assert ports.failures[0][1:] == (REASON_SCHEDULER_ERROR, "quota service unavailable")


def test_an_ignorable_binder_that_fails_leaves_the_bind_to_the_plugins() -> None:
    binder = FakeExtender(binds=True, error="down", ignorable=True)
    _, ports = run([binder], [pod("p", cpu="1")])
    assert [n for _, n in ports.bound] and not ports.failures


def test_single_feasible_node_is_taken_without_asking_prioritizers() -> None:
    ext = FakeExtender(filter_fn=only("a"), scores={"a": 1})
    assert schedule(None, NODES, [pod("p", cpu="1")], extenders=[ext]) == {"p": "a"}
    assert [c for c, _ in ext.calls] == ["filter"]


# -- preemption ------------------------------------------------------------------------------
SMALL = [node("a", cpu="1"), node("b", cpu="1")]
LOW = [pod("low-a", cpu="1", node_name="a", priority=0),
       pod("low-b", cpu="1", node_name="b", priority=0)]


def keep_node(name: str) -> Callable[[Mapping[str, Victims]], Mapping[str, Victims]]:
    return lambda victims: {n: v for n, v in victims.items() if n == name}


@pytest.mark.parametrize(
    ("case", "extender", "nominated", "failure"),
    [
        ("the extender keeps node b", FakeExtender(preempt_fn=keep_node("b")), "b", None),
        ("the extender keeps no node", FakeExtender(preempt_fn=lambda v: {}), None,
         "preemption: no candidate node for preemption"),
        ("an error stops preemption", FakeExtender(preempt_fn=keep_node("b"), error="nope"),
         None, None),
        ("an ignorable error is skipped",
         FakeExtender(preempt_fn=keep_node("a"), error="nope", ignorable=True), "*", None),
        ("no victims on a node is an error",
         FakeExtender(preempt_fn=lambda v: {n: Victims([]) for n in v}), None, None),
    ],
)
def test_extenders_confirm_preemption_victims(
    case: str, extender: FakeExtender, nominated: str | None, failure: str | None
) -> None:
    s, ports = run([extender], [pod("high", cpu="1", priority=100)], nodes=SMALL, bound=LOW)
    assert extender.calls[0] == ("preempt", {"a": ["low-a"], "b": ["low-b"]}), case
    got = s.queue.nominator.node_of(pod_info("high", cpu="1", priority=100).uid)
    if nominated == "*":
        assert got in ("a", "b"), case
    else:
        assert got == nominated, case
    if failure is not None:
        assert failure in ports.failures[0][2], case


def test_pods_rejected_by_an_extender_retry_on_any_event() -> None:
    s, _ = run([FakeExtender(filter_fn=only())], [pod("p", cpu="1")])
    assert s.queue.pending_pods()["unschedulable"] == ["default/p"]
    s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, None, None)
    assert s.queue.pending_pods()["unschedulable"] == []


def test_extender_scores_are_score_times_weight_times_ten_summed_over_extenders() -> None:
    s, _ = scheduler_of(nodes=NODES, extenders=[
        FakeExtender(scores={"a": 3, "c": 10}, weight=2),
        FakeExtender(scores={"a": 1, "elsewhere": 10}, weight=5),
        FakeExtender(scores={"b": 10}, managed=frozenset({"example.com/gpu"})),
    ])
    totals = extender_scores(s, pod_info("p", cpu="1"), full_view(s.snapshot))
    assert totals.tolist() == [3 * 2 * 10 + 1 * 5 * 10, 0, 10 * 2 * 10]


def test_a_nominated_node_the_extender_refuses_is_counted_once() -> None:
    nominated = pod("p", cpu="100m", nominated_node_name="a")
    _, ports = run([FakeExtender(filter_fn=only())], [nominated])
    assert ports.failures[0][2].startswith(
        "0/3 nodes are available: 3 node(s) not on the list."), ports.failures
