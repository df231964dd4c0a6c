"""VolumeRestrictions: ReadWriteOncePod claims and inline disks (upstream
volume_restrictions_test.go cases that apply)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.pod import PodInfo
from scheduler.plugins import volume_restrictions
from scheduler.plugins.volume_restrictions import ERR_DISK_CONFLICT, ERR_RWOP_CONFLICT, SPEC
from scheduler.testing import (
    claim,
    filter_nodes,
    node,
    pod,
    pod_info,
    rejected_reasons,
    run_cycles,
    scheduler_of,
    view_with,
    volume,
    with_claims,
)

NODES = [node("a"), node("b")]
RWOP = claim("data", access_modes=["ReadWriteOncePod"], bound=True, volume_name="pv")
RWO = claim("shared", bound=True, volume_name="pv2")


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "disk", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def with_volumes(obj: dict[str, Any], *volumes: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["volumes"] = list(volumes)
    return obj


@pytest.mark.parametrize(
    ("case", "incoming", "bound", "storage", "want"),
    [
        ("an RWOP claim in use refuses every node",
         with_claims(pod("p"), "data"), [with_claims(pod("q", node_name="a"), "data")], [RWOP],
         {"a": [ERR_RWOP_CONFLICT], "b": [ERR_RWOP_CONFLICT]}),
        ("an RWOP claim unused: nothing to check",
         with_claims(pod("p"), "data"), [], [RWOP], {"a": [], "b": []}),
        ("a ReadWriteOnce claim may be shared",
         with_claims(pod("p"), "shared"), [with_claims(pod("q", node_name="a"), "shared")],
         [RWO], {"a": [], "b": []}),
        ("the same GCE disk, read-write, on a node",
         with_volumes(pod("p"), gce("d1")), [with_volumes(pod("q", node_name="a"), gce("d1"))],
         [], {"a": [ERR_DISK_CONFLICT], "b": []}),
        ("the same GCE disk read-only on both",
         with_volumes(pod("p"), gce("d1", True)),
         [with_volumes(pod("q", node_name="a"), gce("d1", True))], [], {"a": [], "b": []}),
        ("another GCE disk",
         with_volumes(pod("p"), gce("d1")), [with_volumes(pod("q", node_name="a"), gce("d2"))],
         [], {"a": [], "b": []}),
    ],
)
def test_filter(case: str, incoming: dict[str, Any], bound: list[dict[str, Any]],
                storage: list[dict[str, Any]], want: dict[str, list[str]]) -> None:
    assert filter_nodes(SPEC, None, incoming, NODES, bound, storage=storage) == want, case


def test_a_missing_claim_is_unresolvable_in_pre_filter() -> None:
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "nope"), NODES)
    assert got == {"a": ['persistentvolumeclaim "nope" not found'],
                   "b": ['persistentvolumeclaim "nope" not found']}


def test_a_higher_priority_pod_preempts_the_rwop_holder() -> None:
    """Unschedulable, not unresolvable: the dry run removes the holder, and p is nominated
    to its node (upstream moved RWOP to Unschedulable for this, #103132)."""
    holder = with_claims(pod("holder", node_name="b", priority=0), "data")
    incoming = with_claims(pod("p", priority=100), "data")
    s, ports = scheduler_of(None, nodes=NODES, pods=[holder, incoming],
                            storage=[RWOP, volume("pv", claim_ref={"namespace": "default",
                                                                   "name": "data"})])
    run_cycles(s)
    assert s.queue.nominator.node_of(pod_info("p").uid) == "b"
    assert ports.bound == []


def test_a_deleted_pod_sharing_the_claim_requeues() -> None:
    mine = PodInfo.from_pod(with_claims(pod("p"), "data"))
    sharer = PodInfo.from_pod(with_claims(pod("q", node_name="a"), "data"))
    stranger = PodInfo.from_pod(with_claims(pod("r", node_name="a"), "other"))
    hint = volume_restrictions._after_pod_deleted
    assert hint(mine, sharer, None).name == "QUEUE"
    assert hint(mine, stranger, None).name == "SKIP"


@pytest.mark.parametrize(
    ("elsewhere", "want"),
    [
        pytest.param(False, [ERR_RWOP_CONFLICT], id="the RWOP claim's user on node b"),
        pytest.param(True, [], id="the RWOP claim's user removed from node b frees the claim"),
    ],
)
def test_an_rwop_user_removed_on_another_node(elsewhere: bool, want: list[str]) -> None:
    """Upstream's RemovePod with the removed pod's own node (SelectVictimsOnNode for a pod
    group's member on another node than the candidate): the claim's user count drops."""
    holder = with_claims(pod("holder", node_name="b"), "data")
    s, _ = scheduler_of(None, nodes=NODES, pods=[holder],
                        storage=[RWOP, volume("pv", claim_ref={"namespace": "default",
                                                               "name": "data"})])
    plugin = volume_restrictions.VolumeRestrictions()
    state = CycleState()
    incoming = PodInfo.from_pod(with_claims(pod("p"), "data"))
    _, status = plugin.pre_filter(state, incoming, s.snapshot)
    assert status.is_success(), status
    view = view_with(s.snapshot, "a",
                     removed_elsewhere=[PodInfo.from_pod(holder)] if elsewhere else ())
    assert rejected_reasons(plugin.filter(state, incoming, view), ["a"]) == {"a": want}
