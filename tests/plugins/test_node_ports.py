"""NodePorts tables, ported from upstream's node_ports_test.go."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.framework.events import QueueingHint, Resource
from scheduler.framework.interface import Code, CycleState
from scheduler.plugins import node_ports
from scheduler.plugins.node_ports import ERR_REASON, NodePorts
from scheduler.testing import (
    container,
    full_view,
    node,
    pod,
    pod_info,
    rejected_reasons,
    snapshot_of,
    view_with,
)


def ports(*specs: str) -> list[dict[str, Any]]:
    """``"UDP/127.0.0.1/8080"`` → container ports (containerPort = hostPort)."""
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip,
                    "protocol": protocol})
    return out


def port_pod(name: str, *specs: str, node_name: str = "") -> dict[str, Any]:
    return pod(name, containers=[container(ports=ports(*specs))], node_name=node_name)


U = Code.UNSCHEDULABLE
OK = Code.SUCCESS

CASES = [
    pytest.param(port_pod("p", "UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/9090"], OK, id="other port"),
    pytest.param(port_pod("p", "UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/8080"], U,
                 id="same udp port"),
    pytest.param(port_pod("p", "TCP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], U,
                 id="same tcp port"),
    pytest.param(port_pod("p", "TCP/127.0.0.1/8080"), ["TCP/127.0.0.2/8080"], OK,
                 id="different host ip"),
    pytest.param(port_pod("p", "UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], OK,
                 id="different protocol"),
    pytest.param(port_pod("p", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
                 ["UDP/127.0.0.1/8080"], U, id="second udp port conflict"),
    pytest.param(port_pod("p", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
                 ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], U, id="first tcp port conflict"),
    pytest.param(port_pod("p", "TCP/0.0.0.0/8001"), ["TCP/127.0.0.1/8001"], U,
                 id="first tcp port conflict due to 0.0.0.0 hostIP"),
    pytest.param(port_pod("p", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
                 ["TCP/127.0.0.1/8001"], U, id="TCP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(port_pod("p", "TCP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001"], U,
                 id="second tcp port conflict to 0.0.0.0 hostIP"),
    pytest.param(port_pod("p", "UDP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001"], OK,
                 id="second different protocol"),
    pytest.param(port_pod("p", "UDP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], U,
                 id="UDP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(
        pod("p", containers=[container()],
            init_containers=[container("sidecar", restart_policy="Always",
                                       ports=[{"containerPort": 8001, "hostPort": 8001,
                                               "protocol": "TCP"}])]),
        ["TCP/0.0.0.0/8001"], U, id="TCP hostPort conflict from sidecar initContainer"),
]


@pytest.mark.parametrize(("incoming", "used", "code"), CASES)
def test_filter(incoming: dict[str, Any], used: Sequence[str], code: Code) -> None:
    snapshot = snapshot_of([node("m1"), node("free")], [port_pod("p1", *used, node_name="m1")])
    view = full_view(snapshot)
    p = pod_info("p", containers=incoming["spec"]["containers"],
                 init_containers=incoming["spec"].get("initContainers", ()))
    plugin = NodePorts()
    state = CycleState()
    _, status = plugin.pre_filter(state, p, snapshot)
    assert status.is_success()
    result = plugin.filter(state, p, view)
    assert [Code(int(c)) for c in result.codes] == [code, OK]
    assert rejected_reasons(result, view.names()) == {
        "m1": [ERR_REASON] if code is U else [],
        "free": [],
    }


SKIPPED = [
    pytest.param(pod("p"), id="skip filter for a pod without ports"),
    pytest.param(
        pod("p", containers=[container()],
            init_containers=[container("init", ports=[{"containerPort": 8001, "hostPort": 8001,
                                                       "protocol": "TCP"}])]),
        id="non-sidecar initContainer using hostPort is skipped"),
    pytest.param(pod("p", containers=[container(ports=[{"containerPort": 80}])]),
                 id="a container port without hostPort is skipped"),
]


@pytest.mark.parametrize("incoming", SKIPPED)
def test_pre_filter_skips_pods_without_host_ports(incoming: dict[str, Any]) -> None:
    snapshot = snapshot_of([node("m1")])
    p = pod_info("p", containers=incoming["spec"]["containers"],
                 init_containers=incoming["spec"].get("initContainers", ()))
    _, status = NodePorts().pre_filter(CycleState(), p, snapshot)
    assert status.code is Code.SKIP


HYPOTHETICAL = [
    pytest.param([], ["holder"], OK, id="removing the pod that holds the port frees it"),
    pytest.param(["nominated"], [], U, id="a nominated pod added to the node takes the port"),
    pytest.param(["nominated"], ["nominated"], OK,
                 id="a pod added and removed again leaves the port free"),
]


@pytest.mark.parametrize(("added", "removed", "code"), HYPOTHETICAL)
def test_filter_counts_hypothetical_pods(added: list[str], removed: list[str], code: Code) -> None:
    holder = port_pod("holder", "TCP/0.0.0.0/8080", node_name="m1")
    snapshot = snapshot_of([node("m1"), node("m2")], [holder])
    infos = {
        "holder": pod_info("holder", containers=holder["spec"]["containers"], node_name="m1"),
        "nominated": pod_info("nominated", containers=[container(ports=ports("TCP/0.0.0.0/8080"))]),
    }
    incoming = pod_info("p", containers=[container(ports=ports("TCP/127.0.0.1/8080"))])
    if "holder" in removed:
        view = view_with(snapshot, "m1", removed=[infos["holder"]])
    else:
        view = view_with(
            snapshot, "m2", added=[infos[a] for a in added], removed=[infos[r] for r in removed]
        )
    plugin = NodePorts()
    state = CycleState()
    plugin.pre_filter(state, incoming, snapshot)
    result = plugin.filter(state, incoming, view)
    assert Code(int(result.codes[0])) is code


def test_deleted_pod_hint() -> None:
    events = NodePorts().events_to_register()
    hint = next(e.hint for e in events if e.event.resource is Resource.ASSIGNED_POD)
    assert hint is not None
    wants_8080 = pod_info("p", containers=[container(ports=ports("TCP/0.0.0.0/8080"))])
    holder = pod_info("h", containers=[container(ports=ports("TCP/127.0.0.1/8080"))],
                      node_name="n1")
    other = pod_info("o", containers=[container(ports=ports("TCP/127.0.0.1/9090"))],
                     node_name="n1")
    no_ports = pod_info("x", node_name="n1")
    unbound = pod_info("u", containers=[container(ports=ports("TCP/127.0.0.1/8080"))])
    assert hint(wants_8080, holder, None) is QueueingHint.QUEUE
    assert hint(wants_8080, other, None) is QueueingHint.SKIP
    assert hint(wants_8080, no_ports, None) is QueueingHint.SKIP
    assert hint(wants_8080, unbound, None) is QueueingHint.SKIP


def test_spec() -> None:
    assert node_ports.SPEC.name == "NodePorts"
