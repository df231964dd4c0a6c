"""DynamicResources explains each rejected node with the numbers: per request of a claim
to allocate, how many devices the node has, of the class, matching the request, without an
untolerated taint, and free."""

from __future__ import annotations

from typing import Any

from scheduler.explain.core import explain
from scheduler.framework.interface import NodeView
from scheduler.model.pod import PodInfo
from scheduler.testing import full_view, scheduler_of
from tests.plugins.dynamic_resources.plugin_fixtures import (
    DEVICE_CLASS,
    NODE_NAME,
    OTHER_ALLOCATED_CLAIM,
    PENDING_CLAIM,
    WORKER,
    WORKER2,
    WORKER_NODE_SLICE,
    Run,
    allocated,
    pod_with_claim_name,
    request,
    resource_claim,
    resource_slice,
)


def _details(storage: list[dict[str, Any]]) -> dict[str, list[str]]:
    s, _ = scheduler_of(nodes=[WORKER, WORKER2], storage=storage)
    try:
        explained = explain(s, PodInfo.from_pod(pod_with_claim_name()))
    finally:
        s.stop(timeout=5)
    return {n.node: [d for f in n.filters if f.plugin == "DynamicResources" for d in f.details]
            for n in explained.nodes}


def test_a_device_held_by_another_claim_is_counted_as_not_free() -> None:
    details = _details([PENDING_CLAIM, OTHER_ALLOCATED_CLAIM, DEVICE_CLASS, WORKER_NODE_SLICE])
    where = "claim default/my-pod-my-resource, request req-1 (class my-resource-class): wants 1; "
    assert details == {
        "worker": [where + "1 device(s) on the node, 1 of the class, 1 match the request's "
                   "selectors, 1 without an untolerated taint, 0 free"],
        "worker-2": [where + "0 device(s) on the node, 0 of the class, 0 match the request's "
                     "selectors, 0 without an untolerated taint, 0 free"],
    }


def test_a_tainted_device_and_a_selector_narrow_the_count() -> None:
    def gpu(name: str, model: str, **more: Any) -> dict[str, Any]:
        return {"name": name, "attributes": {"model": {"string": model}}, **more}

    claim = resource_claim("my-pod-my-resource", request(1, count=3, selectors=[
        {"cel": {"expression": 'device.attributes["some-driver"].model != "t4"'}}]))
    slices = [resource_slice(NODE_NAME, gpu("instance-1", "a100"), gpu(
        "instance-2", "a100", taints=[{"key": "broken", "effect": "NoSchedule"}]),
        gpu("instance-3", "a100"), gpu("instance-4", "t4"))]
    details = _details([claim, DEVICE_CLASS, *slices])
    assert details["worker"] == [
        "claim default/my-pod-my-resource, request req-1 (class my-resource-class): wants 3; "
        "4 device(s) on the node, 4 of the class, 3 match the request's selectors, 2 without "
        "an untolerated taint, 2 free"]


def test_requests_that_fit_alone_but_not_together_say_so() -> None:
    claim = resource_claim("my-pod-my-resource", request(1), request(2))
    claim["spec"]["devices"]["constraints"] = [{"matchAttribute": "some-driver/model"}]
    slices = [resource_slice(NODE_NAME,
                             {"name": "a", "attributes": {"model": {"string": "x"}}},
                             {"name": "b", "attributes": {"model": {"string": "y"}}})]
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS], objs=slices)
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME][1] == "cannot allocate all claims"
    lines = run.plugin.explain_nodes(run.state, run.pod, _worker_view(run))[0]
    assert lines[-1] == (
        "claim default/my-pod-my-resource: every request has enough free devices alone, but "
        "not together (constraints on some-driver/model), or their counters or capacity are "
        "used up")


def test_a_claim_allocated_for_other_nodes_says_so() -> None:
    claim = allocated(PENDING_CLAIM)
    run = Run(pod_with_claim_name(), claims=[claim], nodes=[WORKER2])
    assert run.pre_filter().is_success()
    lines = run.plugin.explain_nodes(run.state, run.pod, _worker_view(run))
    assert lines == [["claim default/my-pod-my-resource: allocated for other nodes (its "
                      "allocation's node selector does not match this node)"]]


def _worker_view(run: Run) -> NodeView:
    return full_view(run.s.snapshot)
