"""Score with prioritized lists: upstream's TestPlugin case
``single-claim-prioritized-list-scoring`` and ``Test_computesScore``'s mixed case."""

from __future__ import annotations

import numpy as np

from scheduler.framework.interface import Code
from scheduler.model.dra import ResourceClaim
from scheduler.plugins.dynamic_resources.scoring import prioritized_list_score
from scheduler.testing import full_view, pod
from tests.plugins.dynamic_resources.plugin_fixtures import (
    ALLOCATED_CLAIM,
    CLAIM_NAME,
    DEVICE_CLASS,
    DRIVER,
    NODE2_NAME,
    NODE3_NAME,
    NODE_NAME,
    WORKER,
    WORKER2,
    WORKER3,
    Run,
    pod_with_claim_name,
    resource_claim,
    resource_slice,
)

CLASS = str(DEVICE_CLASS["metadata"]["name"])


def _healthy(node_name: str, healthy: bool) -> dict[str, object]:
    return resource_slice(node_name, {"name": "instance-1",
                                      "attributes": {"healthy": {"bool": healthy}}})


def test_single_claim_prioritized_list_scoring() -> None:
    claim = resource_claim(CLAIM_NAME, {"name": "req-1", "firstAvailable": [
        {"name": "subreq-1", "deviceClassName": DEVICE_CLASS["metadata"]["name"],
         "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}]},
        {"name": "subreq-2", "deviceClassName": DEVICE_CLASS["metadata"]["name"],
         "count": 1}]})
    run = Run(pod_with_claim_name(), claims=[claim], classes=[DEVICE_CLASS],
              nodes=[WORKER, WORKER2],
              objs=[_healthy(NODE_NAME, True), _healthy(NODE2_NAME, False)])
    assert run.pre_filter().is_success()
    assert all(reason == "" for _, reason in run.filter().values())
    view = full_view(run.s.snapshot)
    assert run.plugin.pre_score(run.state, run.pod, view).is_success()
    scores = run.plugin.score(run.state, run.pod, view)
    assert dict(zip(view.names(), scores.tolist(), strict=True)) == {NODE_NAME: 8,
                                                                    NODE2_NAME: 7}
    normalized = run.plugin.normalize(run.state, run.pod, scores)
    assert normalized.tolist() == [100, 87]


def test_pods_without_a_prioritized_list_skip_score() -> None:
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM])
    assert run.pre_filter().is_success()
    assert run.plugin.pre_score(run.state, run.pod, full_view(run.s.snapshot)).is_skip()


def test_mix_of_allocated_and_unallocated_claims() -> None:
    """Test_computesScore: an allocated claim counts with its own allocation, exact
    requests score nothing."""
    claims = [ResourceClaim.parse(ALLOCATED_CLAIM), ResourceClaim.parse(
        resource_claim("other"))]
    allocations = [ResourceClaim.parse(ALLOCATED_CLAIM).allocation]
    assert prioritized_list_score(claims, [a for a in allocations if a is not None]) == 0
    assert np.int64(prioritized_list_score(claims, None)) == 0


def test_multiple_claims_prioritized_list_scoring() -> None:
    def listed(name: str, *counts: int) -> dict[str, object]:
        return resource_claim(name, {"name": "req-1", "firstAvailable": [
            {"name": f"subreq-{i + 1}", "deviceClassName": CLASS, "count": count}
            for i, count in enumerate(counts)]})

    incoming = pod("my-pod", uid="1234", spec={"resourceClaims": [
        {"name": "my-resource", "resourceClaimName": CLAIM_NAME},
        {"name": "my-resource-2", "resourceClaimName": f"{CLAIM_NAME}-2"}]})
    run = Run(incoming, claims=[listed(CLAIM_NAME, 1), listed(f"{CLAIM_NAME}-2", 4, 3, 2, 1)],
              classes=[DEVICE_CLASS], nodes=[WORKER, WORKER2, WORKER3],
              objs=[resource_slice(NODE_NAME, *[f"instance-{i}" for i in range(1, 5)]),
                    resource_slice(NODE2_NAME, "instance-1", "instance-2"),
                    resource_slice(NODE3_NAME, "instance-1")])
    assert run.pre_filter().is_success()
    assert run.filter()[NODE3_NAME] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                        "cannot allocate all claims")
    view = full_view(run.s.snapshot).subset(np.asarray([0, 1]))
    scores = run.plugin.score(run.state, run.pod, view)
    assert scores.tolist() == [15, 13]
    assert run.plugin.normalize(run.state, run.pod, scores).tolist() == [100, 86]
