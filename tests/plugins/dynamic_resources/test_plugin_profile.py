"""DynamicResources in the default profile, whole scheduling cycles through
``scheduler.testing``: what kube-scheduler v1.37.2 does with pods that claim devices."""

from __future__ import annotations

from typing import Any

from scheduler.plugins.dynamic_resources.claim_writes import claim_path
from scheduler.testing import node, pod, run_cycles, scheduler_of, with_claims
from tests.plugins.dynamic_resources.plugin_fixtures import (
    DEVICE_CLASS,
    NAMESPACE,
    resource_claim,
    resource_slice,
)


def _pod_with_own_claim(i: int) -> dict[str, Any]:
    return pod(f"p{i}", spec={"resourceClaims": [
        {"name": "gpu", "resourceClaimName": f"claim-{i}"}]})


def _allocated_devices(written: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    devices = []
    for path, obj in written:
        if path.endswith("/status"):
            for r in obj["status"]["allocation"]["devices"]["results"]:
                devices.append((r["pool"], r["device"]))
    return devices


def test_a_burst_of_pods_with_their_own_claims_never_gets_one_device_twice() -> None:
    """Reserve holds each allocation in flight until PreBind has written it, and the
    written claim is assumed: every later cycle counts the device as taken."""
    nodes = [node(f"n{i}") for i in range(3)]
    slices = [resource_slice(f"n{i}", "gpu-0", "gpu-1") for i in range(3)]
    claims = [resource_claim(f"claim-{i}", owner=False) for i in range(8)]
    pods = [_pod_with_own_claim(i) for i in range(8)]
    s, ports = scheduler_of(nodes=nodes, pods=pods, storage=[DEVICE_CLASS, *slices, *claims])
    try:
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert len(ports.bound) == 6
    devices = _allocated_devices(ports.written)
    assert len(devices) == 6 and len(set(devices)) == 6
    # Each pod is bound to the node of its device.
    by_claim = {path.split("/")[-2]: obj for path, obj in ports.written
                if path.endswith("/status")}
    for key, node_name in ports.bound:
        i = key.split("/p")[-1]
        pool = by_claim[f"claim-{i}"]["status"]["allocation"]["devices"]["results"][0]["pool"]
        assert pool == node_name
    failed = {key: message for key, _, message in ports.failures}
    assert len(failed) == 2
    # UnschedulableAndUnresolvable: DefaultPreemption finds no node where evicting helps.
    assert set(failed.values()) == {
        "0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."}


def test_a_shared_claim_is_allocated_once_and_reserved_for_both_pods() -> None:
    claim = resource_claim("shared", owner=False)
    pods = [pod(f"p{i}", spec={"resourceClaims": [
        {"name": "gpu", "resourceClaimName": "shared"}]}) for i in range(2)]
    s, ports = scheduler_of(nodes=[node("n0"), node("n1")], pods=pods,
                            storage=[DEVICE_CLASS, resource_slice("n1", "gpu-0"), claim])
    try:
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    # The second pod waits while the allocation is in flight, then (after the write, which
    # the assume cache holds) joins the allocated claim on its node.
    assert sorted(ports.bound)[0] == ("default/p0", "n1")
    statuses = [obj["status"] for path, obj in ports.written
                if path == claim_path(NAMESPACE, "shared", status=True)]
    assert statuses[0]["reservedFor"][0]["name"] == "p0"


def test_post_filter_of_a_pod_an_earlier_pre_filter_rejected_says_not_found() -> None:
    """kube-scheduler's message: VolumeBinding's PreFilter rejects, DynamicResources'
    PostFilter finds no state of its own and answers fwk.ErrNotFound (issue 38, item 1)."""
    nodes = [node(f"n{i}") for i in range(3)]
    s, ports = scheduler_of(nodes=nodes, pods=[with_claims(pod("p"), "nope")])
    try:
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert [m for _, _, m in ports.failures] == [
        '0/3 nodes are available: persistentvolumeclaim "nope" not found. not found']
