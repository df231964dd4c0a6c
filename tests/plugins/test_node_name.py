"""NodeName tables, ported from upstream's node_name_test.go."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import Code, CycleState
from scheduler.plugins import node_name
from scheduler.plugins.node_name import ERR_REASON, NodeName
from scheduler.testing import full_view, node, pod_info, rejected_reasons, snapshot_of

FILTER = [
    pytest.param("", {"node1": [], "node2": []}, id="no host specified"),
    pytest.param("node1", {"node1": [], "node2": [ERR_REASON]},
                 id="host matches, the other node is rejected"),
    pytest.param("node3", {"node1": [ERR_REASON], "node2": [ERR_REASON]},
                 id="host doesn't match any node, not even one missing from the snapshot"),
]


@pytest.mark.parametrize(("wanted", "reasons"), FILTER)
def test_filter(wanted: str, reasons: dict[str, list[str]]) -> None:
    snapshot = snapshot_of([node("node1"), node("node2")])
    view = full_view(snapshot)
    # A pod naming its node is a bound pod for PodInfo; the plugin only reads node_name.
    pod = pod_info("p", node_name=wanted)
    result = NodeName().filter(CycleState(), pod, view)
    assert rejected_reasons(result, view.names()) == reasons
    for name, want in reasons.items():
        code = Code(int(result.codes[view.names().index(name)]))
        assert code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if want else Code.SUCCESS)


PRE_FILTER = [
    pytest.param("node1", frozenset({"node1"}), Code.SUCCESS,
                 id="assigned pod with nodeName set, prefilter restricts to assigned node"),
    pytest.param("", None, Code.SKIP,
                 id="unassigned pod without nodeName set, prefilter has nothing to restrict"),
]


@pytest.mark.parametrize(("wanted", "names", "code"), PRE_FILTER)
def test_pre_filter(wanted: str, names: frozenset[str] | None, code: Code) -> None:
    snapshot = snapshot_of([node("node1")])
    result, status = NodeName().pre_filter(CycleState(), pod_info("p", node_name=wanted), snapshot)
    assert status.code is code
    assert (result.node_names if result is not None else None) == names


def test_registers_node_add() -> None:
    events = node_name.new({}, None).events_to_register()  # type: ignore[arg-type]
    assert [str(e.event.resource.value) for e in events] == ["Node"]
    assert events[0].hint is None
