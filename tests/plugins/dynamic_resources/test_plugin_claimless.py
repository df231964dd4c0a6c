"""A pod DynamicResources skips at PreFilter: what ``idle_when_pre_filter_skips`` promises.

The runtime leaves the plugin out of PreScore, Score, Reserve, Unreserve, PreBindPreFlight and
PreBind for such a pod (upstream's dynamicresources.go calls them and they do nothing): this
holds only while each of them is a no-op after the Skip, whichever way PreFilter got there.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import Code
from scheduler.plugins.dynamic_resources.plugin import DynamicResources
from scheduler.testing import container, full_view, pod
from tests.plugins.dynamic_resources.plugin_fixtures import (
    CLAIM_NAME,
    DEVICE_CLASS,
    NODE_NAME,
    POD_NAME,
    POD_UID,
    RESOURCE_NAME,
    Run,
)

CLAIMLESS = [
    pytest.param(pod(POD_NAME, uid=POD_UID, cpu="100m"), id="no claims"),
    pytest.param(pod(POD_NAME, uid=POD_UID, spec={"resourceClaims": [
        {"name": RESOURCE_NAME, "resourceClaimTemplateName": CLAIM_NAME}]},
        status={"resourceClaimStatuses": [{"name": RESOURCE_NAME}]}),
        id="a template whose claim the controller decided is not needed"),
    pytest.param(pod(POD_NAME, uid=POD_UID, containers=[
        container(cpu="100m", extra={"example.com/gpu": "1"})]),
        id="an extended resource no DeviceClass serves"),
]


def test_the_plugin_declares_the_points_it_is_idle_at() -> None:
    assert DynamicResources.idle_when_pre_filter_skips == {"preScore", "reserve", "preBind"}


@pytest.mark.parametrize("incoming", CLAIMLESS)
def test_after_a_pre_filter_skip_every_later_point_is_a_no_op(incoming: dict[str, Any]) -> None:
    run = Run(incoming, classes=[DEVICE_CLASS])
    assert run.pre_filter().code is Code.SKIP
    assert run.plugin.pre_score(run.state, run.pod, full_view(run.s.snapshot)).is_skip()
    in_flight_before = run.s.dra.allocated()
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert run.plugin.pre_bind_pre_flight(run.state, run.pod, NODE_NAME).is_skip()
    assert run.s.dra.allocated() == in_flight_before
    assert run.ports.written == []
