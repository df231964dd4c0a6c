"""DynamicResources in the default profile, whole scheduling cycles through
``scheduler.testing``: what kube-scheduler v1.37.2 does with pods that claim devices."""

from __future__ import annotations

from typing import Any

from scheduler.plugins.dynamic_resources.claim_writes import claim_path
from scheduler.testing import (
    node,
    pod,
    run_cycles,
    scheduler_of,
    set_pod,
    set_storage_object,
    with_claims,
)
from tests.plugins.dynamic_resources.plugin_fixtures import (
    ALLOCATED_CLAIM,
    CLAIM_NAME,
    DEVICE_CLASS,
    NAMESPACE,
    NODE_NAME,
    PENDING_CLAIM,
    POD_UID,
    Run,
    allocated,
    allocation,
    pod_with_claim_name,
    pod_with_claim_template,
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


def test_a_pod_with_a_claim_template_waits_until_the_controller_created_its_claim() -> None:
    """PreEnqueue gates it; the claim's creation alone does not help (the pod's status does
    not name it yet); the pod's status update does (UpdatePodGeneratedResourceClaim)."""
    created = pod_with_claim_template(in_status=False)
    s, ports = scheduler_of(nodes=[node(NODE_NAME)], pods=[created],
                            storage=[DEVICE_CLASS, resource_slice(NODE_NAME, "instance-1")])
    try:
        run_cycles(s)
        assert ports.bound == [] and ports.failures == []
        set_storage_object(s, PENDING_CLAIM)
        run_cycles(s)
        assert ports.bound == []
        updated = pod_with_claim_template(in_status=True)
        updated["metadata"]["resourceVersion"] = "2"
        set_pod(s, updated)
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert ports.bound == [("default/my-pod", NODE_NAME)]


def test_a_pod_whose_status_names_a_claim_not_yet_watched_stays_gated_without_a_report(
) -> None:
    """The resourceclaim controller creates the claim, then writes the pod's status, but the
    two come through separate watches: the pod's update may arrive first. PreEnqueue holds
    the pod silently (upstream's runPreEnqueuePlugins: no Event, no condition for a gated
    pod) and the claim's arrival (isSchedulableAfterClaimChange) lets it through."""
    s, ports = scheduler_of(nodes=[node(NODE_NAME)],
                            pods=[pod_with_claim_template(in_status=True)],
                            storage=[DEVICE_CLASS, resource_slice(NODE_NAME, "instance-1")])
    try:
        run_cycles(s)
        assert ports.bound == [] and ports.failures == []
        set_storage_object(s, PENDING_CLAIM)
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    assert ports.bound == [("default/my-pod", NODE_NAME)] and ports.failures == []


def test_pre_bind_reads_the_claim_again_after_a_conflict_and_retries() -> None:
    """retry.RetryOnConflict in bindClaim: the 409 of a stale claim is answered by a GET and
    the write is made again on the fresh object."""
    run = Run(pod_with_claim_name(), claims=[ALLOCATED_CLAIM])
    assert run.pre_filter().is_success()
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    fresh = {**ALLOCATED_CLAIM, "metadata": {**ALLOCATED_CLAIM["metadata"],
                                              "resourceVersion": "7"}}
    run.ports.objects[claim_path(NAMESPACE, CLAIM_NAME)] = fresh
    run.ports.conflicts.add(claim_path(NAMESPACE, CLAIM_NAME, status=True))
    assert run.plugin.pre_bind(run.state, run.pod, NODE_NAME).is_success()
    (_, written), = run.ports.written
    assert written["metadata"]["resourceVersion"] == "7"
    assert [r["uid"] for r in written["status"]["reservedFor"]] == [POD_UID]


def test_pre_bind_fails_with_upstreams_words_when_the_claim_got_allocated_elsewhere() -> None:
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM], classes=[DEVICE_CLASS],
              objs=[resource_slice(NODE_NAME, "instance-1")])
    assert run.pre_filter().is_success()
    assert run.filter()[NODE_NAME][1] == ""
    assert run.plugin.reserve(run.state, run.pod, NODE_NAME).is_success()
    taken = allocated(PENDING_CLAIM, allocation("instance-9"))
    taken["metadata"]["resourceVersion"] = "5"
    run.ports.objects[claim_path(NAMESPACE, CLAIM_NAME)] = taken
    run.ports.conflicts.add(claim_path(NAMESPACE, CLAIM_NAME))
    status = run.plugin.pre_bind(run.state, run.pod, NODE_NAME)
    assert status.message == (
        "claim default/my-pod-my-resource got allocated elsewhere in the meantime")
    # The allocation stays in flight until Unreserve.
    assert run.in_flight(PENDING_CLAIM)
    run.plugin.unreserve(run.state, run.pod, NODE_NAME)
    assert not run.in_flight(PENDING_CLAIM)
