"""/debug/explain leaks nothing (issue 33): who may ask, what they see, what it costs."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from scheduler.explain import (
    Explanation,
    NodeReport,
    PreemptionCandidate,
    PreemptionPreview,
    Victim,
)
from scheduler.operator.explain_endpoint import (
    DutyCycle,
    ExplainEndpoint,
    first_nodes,
    redact,
)
from scheduler.operator.serving.auth import Authorizer, Caller, User
from tests.operator.serving_kit import FakeReviews


def caller(rule: Any) -> tuple[Caller, FakeReviews]:
    reviews = FakeReviews(rule=rule)
    return Caller(User("dev", ("system:authenticated",)), Authorizer(reviews)), reviews


def may(verb: str, namespaces: set[str]) -> Any:
    def rule(spec: dict[str, Any]) -> bool:
        attrs = spec.get("resourceAttributes") or {}
        return attrs.get("verb") == verb and attrs.get("namespace") in namespaces
    return rule


class NoApi:
    def get(self, path: str) -> Any:
        raise AssertionError(f"the API was asked for {path} before the caller was checked")


def test_a_forbidden_pod_and_a_missing_one_get_the_same_403() -> None:
    """The pod is not read before the caller is authorized to get it, so the answer cannot
    depend on whether it exists."""
    who, reviews = caller(may("get", {"mine"}))
    endpoint = ExplainEndpoint(NoApi(), None, None)  # type: ignore[arg-type]
    answers = [endpoint({"namespace": ["theirs"], "name": [name]}, who)
               for name in ("exists", "missing")]
    message = ('pods "{}" is forbidden: User "dev" cannot get resource "pods" in API group "" '
               'in the namespace "theirs"')
    assert answers == [(403, {"message": message.format("exists")}),
                       (403, {"message": message.format("missing")})]
    spec = reviews.posted[0][1]["resourceAttributes"]
    assert spec == {"namespace": "theirs", "verb": "get", "group": "", "version": "v1",
                    "resource": "pods", "name": "exists"}


def explanation(victims: list[Victim], nodes: int = 1) -> Explanation:
    return Explanation(
        pod="a/web", scheduler_name="s", profile="s", priority=100, outcome="unschedulable",
        message="m", nodes_total=nodes, filter_plugins=[], score_plugins=[],
        nodes=[NodeReport(f"n{i}", ["x"], "P", []) for i in range(nodes)],
        preemption=PreemptionPreview("p", [PreemptionCandidate("n0", victims, 0)], "n0"))


def test_victims_in_namespaces_the_caller_may_not_list_are_a_count() -> None:
    who, _ = caller(may("list", {"b"}))
    victims = [Victim("a/own", 1, ["a/pdb"]), Victim("b/listed", 1, ["b/pdb"], "b/pdb"),
               Victim("finance/payroll", 5, ["finance/pdb"], "finance/pdb"),
               Victim("finance/ledger", 5, [])]
    shown = redact(explanation(victims), "a", who)
    assert shown.preemption is not None
    (candidate,) = shown.preemption.candidates
    assert [v.pod for v in candidate.victims] == ["a/own", "b/listed"]
    assert candidate.victims[1].violates == "b/pdb"
    assert "node n0: 2 more victim(s) in namespaces where you may not list pods" in shown.notes
    assert "finance" not in repr(shown)


def test_the_first_nodes_unless_all_are_asked() -> None:
    e = explanation([], nodes=50)
    assert [n.node for n in first_nodes(e, 20).nodes] == [f"n{i}" for i in range(20)]
    assert "showing 20 of 50 nodes (nodes=all for every one)" in first_nodes(e, 20).notes
    assert first_nodes(e, 0) is e


def test_an_explain_is_followed_by_a_pause_that_keeps_them_to_their_share() -> None:
    """5%: 50 ms of the scheduling thread, then 950 ms in which others are refused."""
    now = [0.0]
    limit = DutyCycle(0.05, clock=lambda: now[0])
    assert limit.wait() == 0.0
    limit.spent(0.05)
    assert limit.wait() == pytest.approx(0.95)
    now[0] += 0.95
    assert limit.wait() == 0.0


def test_a_second_explain_meanwhile_is_refused_not_queued() -> None:
    who, _ = caller(lambda spec: True)
    started, release = threading.Event(), threading.Event()

    class SlowApi:
        def get(self, path: str) -> Any:
            started.set()
            release.wait(10)
            raise RuntimeError("stop here")

    endpoint = ExplainEndpoint(SlowApi(), None, None)  # type: ignore[arg-type]
    query = {"namespace": ["a"], "name": ["web"]}
    first = threading.Thread(target=lambda: _swallow(endpoint, query, who))
    first.start()
    started.wait(10)
    try:
        status, body = endpoint(query, who)
    finally:
        release.set()
        first.join()
    assert status == 429 and body["message"] == "another explain request is being answered"


def _swallow(endpoint: ExplainEndpoint, query: Any, who: Caller) -> None:
    with contextlib.suppress(RuntimeError):
        endpoint(query, who)
