"""PodTopologySpread tables, ported from upstream's filtering_test.go and scoring_test.go."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.framework.events import Action, QueueingHint, Resource
from scheduler.framework.interface import Code, CycleState, NodeView
from scheduler.framework.registry import ConfigError
from scheduler.model.pod import PodInfo
from scheduler.plugins import pod_topology_spread as pts
from scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from scheduler.testing import (
    full_view,
    node,
    pod,
    rejected_reasons,
    snapshot_of,
    summary,
    view_with,
)

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
NULL = object()  # a constraint without labelSelector
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
HOSTNAME = "kubernetes.io/hostname"
CODE_NAMES = {
    Code.SUCCESS: "ok",
    Code.UNSCHEDULABLE: "unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "unresolvable",
}


# -- builders -------------------------------------------------------------------------------
def built(args: Mapping[str, Any]) -> PodTopologySpread:
    """The plugin as a profile builds it: args over the defaults, decoded."""
    plugin = pts.SPEC.build({**pts.SPEC.default_args, **args}, None)  # type: ignore[arg-type]
    assert isinstance(plugin, PodTopologySpread)
    return plugin


def validate(args: Mapping[str, Any], path: str) -> None:
    assert pts.SPEC.validate is not None
    pts.SPEC.validate({**pts.SPEC.default_args, **args}, path)


def spread(
    skew: int,
    key: str,
    when: str = "DoNotSchedule",
    selector: Any = FOO,
    *,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when}
    if match_label_keys:
        c["matchLabelKeys"] = list(match_label_keys)
    if selector is not NULL:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    return c


def raw_pod(
    name: str,
    *,
    on: str = "",
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    constraints: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    node_in: tuple[str, Sequence[str]] | None = None,
    node_not_in: tuple[str, Sequence[str]] | None = None,
    terminating: bool = False,
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if constraints:
        spec["topologySpreadConstraints"] = [dict(c) for c in constraints]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    expressions = []
    if node_in:
        expressions.append({"key": node_in[0], "operator": "In", "values": list(node_in[1])})
    if node_not_in:
        expressions.append(
            {"key": node_not_in[0], "operator": "NotIn", "values": list(node_not_in[1])}
        )
    if expressions:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        }
    out = pod(
        name,
        node_name=on,
        labels={"foo": ""} if labels is None else labels,
        namespace=namespace,
        spec=spec,
        deletion_timestamp="2026-01-01T00:00:00Z" if terminating else None,
    )
    if owner is not None:
        out["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}",
             "controller": True}
        ]
    return out


def info(raw: Mapping[str, Any]) -> PodInfo:
    out = PodInfo.from_pod(raw)
    assert out.parse_error is None, out.parse_error
    return out


def foo_pods(*placements: tuple[str, str], labels: Mapping[str, str] | None = None,
             **kwargs: Any) -> list[dict[str, Any]]:
    return [raw_pod(name, on=where, labels=labels, **kwargs) for name, where in placements]


def zone_nodes(*, without: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """node-a, node-b in zone1 and node-x, node-y in zone2, each with a "node" label."""
    out = []
    for name, zone in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"),
                       ("node-y", "zone2")):
        labels = {"zone": zone, "node": name}
        if without is not None and without[0] == name:
            del labels[without[1]]
        out.append(node(name, labels=labels))
    return out


def plain_nodes(*names: str, **labels_by_name: Mapping[str, str]) -> list[dict[str, Any]]:
    return [node(n, labels={"node": n, **labels_by_name.get(n.replace("-", "_"), {})})
            for n in names]


def without_hostname(n: dict[str, Any]) -> dict[str, Any]:
    del n["metadata"]["labels"][HOSTNAME]
    return n


def view_of(snapshot: Any, names: Sequence[str]) -> NodeView:
    rows = np.asarray([snapshot.nodes.index[n] for n in names], dtype=np.int64)
    return NodeView(snapshot, rows, snapshot.nodes.requested[rows], snapshot.nodes.pod_count[rows])


def list_defaulting() -> PodTopologySpread:
    return built({"defaultingType": "List"})


def run_filter(
    plugin: PodTopologySpread, incoming: PodInfo, snapshot: Any, view: NodeView | None = None
) -> dict[str, str]:
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot)
    assert status.is_success(), status
    view = full_view(snapshot) if view is None else view
    result = plugin.filter(state, incoming, view)
    names = view.names()
    reasons = rejected_reasons(result, names)
    out = {}
    for i, name in enumerate(names):
        code = Code(int(result.codes[i]))
        out[name] = CODE_NAMES[code]
        want_reason = {
            Code.SUCCESS: [],
            Code.UNSCHEDULABLE: [ERR_REASON_CONSTRAINTS_NOT_MATCH],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE: [ERR_REASON_NODE_LABEL_NOT_MATCH],
        }[code]
        assert reasons[name] == want_reason, (name, reasons[name])
    return out


OK, UN, UU = "ok", "unschedulable", "unresolvable"
A2_B1_Y3 = (("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"),
            ("p-y2", "node-y"), ("p-y3", "node-y"))


# -- Filter -----------------------------------------------------------------------------------
FILTER_CASES = [
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(), [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="with no existing pods every node fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", selector=BAR)]), zone_nodes(), [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="with no existing pods every node fits even when the pod does not match itself",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(),
        [raw_pod("p-a1", on="node-a", namespace="ns1"),
         raw_pod("p-b1", on="node-a", namespace="ns2"),
         raw_pod("p-x1", on="node-x"), raw_pod("p-y1", on="node-y")],
        {"node-a": OK, "node-b": OK, "node-x": UN, "node-y": UN},
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", selector=NULL)]), zone_nodes(),
        foo_pods(("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="existing pods do not match a null selector",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", selector={})]), zone_nodes(),
        foo_pods(("p-x1", "node-x"), ("p-y1", "node-y"), ("p-y2", "node-y")),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="an empty selector counts no existing pod although the pod matches itself",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(), foo_pods(*A2_B1_Y3),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="pods spread across zones as 3/3 so all nodes fit",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(without=("node-b", "zone")),
        foo_pods(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": OK, "node-b": UU, "node-x": UN, "node-y": UN},
        id="pods spread across zones as 1/2 because node-b lacks the zone label (unresolvable)",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "rack")]), zone_nodes(), [],
        {"node-a": UU, "node-b": UU, "node-x": UU, "node-y": UU},
        id="no node has the rack label so every node misses the required label",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), zone_nodes(), foo_pods(*A2_B1_Y3),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="pods spread across nodes as 2/1/0/3 so only node-x fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "node")]), zone_nodes(), foo_pods(*A2_B1_Y3),
        {"node-a": UN, "node-b": OK, "node-x": OK, "node-y": UN},
        id="pods spread across nodes as 2/1/0/3 with maxSkew 2 so node-b and node-x fit",
    ),
    pytest.param(
        raw_pod("p", labels={"bar": ""}, constraints=[spread(1, "node")]), zone_nodes(),
        foo_pods(*A2_B1_Y3),
        {"node-a": UN, "node-b": OK, "node-x": OK, "node-y": UN},
        id="pods spread across nodes as 2/1/0/3 but the pod does not match itself",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")], node_in=("node", ["node-a", "node-y"])),
        zone_nodes(), foo_pods(*A2_B1_Y3),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": UN},
        id="node affinity limits the counted nodes to node-a and node-y so node-a fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        [raw_pod("p-a", on="node-a", terminating=True), raw_pod("p-b", on="node-b")],
        {"node-a": OK, "node-b": UN},
        id="terminating pods are excluded from the counts",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone")], node_not_in=("node", ["node-b"])),
        zone_nodes(), foo_pods(("p-b1", "node-b"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": OK, "node-b": OK, "node-x": UN, "node-y": UN},
        id="node affinity excludes node-b so zones count 0/1 and only zone1 fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "node", min_domains=4)]),
        plain_nodes("node-a", "node-b", "node-c"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-b2", "node-b"),
                 ("p-c1", "node-c")),
        {"node-a": UN, "node-b": UN, "node-c": OK},
        id="with fewer domains than minDomains the global minimum is 0 so only the third node fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "node", min_domains=2)]),
        plain_nodes("node-a", "node-b", "node-c"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-b2", "node-b"),
                 ("p-c1", "node-c")),
        {"node-a": OK, "node-b": OK, "node-c": OK},
        id="with more domains than minDomains the real global minimum applies and all nodes fit",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "zone", min_domains=3)]), zone_nodes(),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": OK},
        id="zones spread as 2/1 with minDomains 3 so only zone2 fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "zone", min_domains=1)]), zone_nodes(),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="zones spread as 2/1 with minDomains 1 so all nodes fit",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")], node_selector={"foo": ""}),
        plain_nodes("node-a", "node-b", "node-x", "node-y", node_a={"foo": ""},
                    node_b={"foo": ""}, node_x={"foo": ""}),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": OK},
        id="nodeAffinityPolicy Honor with a nodeSelector does not count the pod on node-y",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", affinity_policy="Ignore")],
                node_selector={"foo": ""}),
        plain_nodes("node-a", "node-b", "node-x", "node-y", node_a={"foo": ""},
                    node_b={"foo": ""}, node_x={"foo": ""}),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="nodeAffinityPolicy Ignore with a nodeSelector counts the pod on node-y",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")], node_in=("foo", [""])),
        plain_nodes("node-a", "node-b", "node-x", "node-y", node_a={"foo": ""},
                    node_b={"foo": ""}, node_x={"foo": ""}),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": OK},
        id="nodeAffinityPolicy Honor with required node affinity does not count the pod on node-y",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", affinity_policy="Ignore")],
                node_in=("foo", [""])),
        plain_nodes("node-a", "node-b", "node-x", "node-y", node_a={"foo": ""},
                    node_b={"foo": ""}, node_x={"foo": ""}),
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="nodeAffinityPolicy Ignore with required node affinity counts the pod on node-y",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", taints_policy="Honor")]),
        [*plain_nodes("node-a", "node-b", "node-x"),
         node("node-y", labels={"node": "node-y"}, taints=[UNSCHEDULABLE_TAINT])],
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": OK},
        id="nodeTaintsPolicy Honor does not count pods on a node with an untolerated taint",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]),
        [*plain_nodes("node-a", "node-b", "node-x"),
         node("node-y", labels={"node": "node-y"}, taints=[UNSCHEDULABLE_TAINT])],
        foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="nodeTaintsPolicy defaults to Ignore and counts pods on tainted nodes",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone"), spread(1, "node")]), zone_nodes(),
        foo_pods(*A2_B1_Y3),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="two constraints on zone and node with spreads 3/3 and 2/1/0/3",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone"), spread(1, "node")]), zone_nodes(),
        foo_pods(*A2_B1_Y3, ("p-y4", "node-y")),
        {"node-a": UN, "node-b": UN, "node-x": UN, "node-y": UN},
        id="two constraints on zone and node with spreads 3/4 and 2/1/0/4 reject every node",
    ),
    pytest.param(
        raw_pod("p", labels={"foo": "", "bar": ""},
                constraints=[spread(1, "zone"), spread(1, "node", selector=BAR)]),
        zone_nodes(),
        [raw_pod("p-a1", on="node-a", labels={"foo": ""}),
         raw_pod("p-a2", on="node-a", labels={"foo": "", "bar": ""}),
         raw_pod("p-y1", on="node-y", labels={"foo": ""}),
         raw_pod("p-y2", on="node-y", labels={"foo": "", "bar": ""}),
         raw_pod("p-y3", on="node-y", labels={"foo": ""})],
        {"node-a": UN, "node-b": OK, "node-x": UN, "node-y": UN},
        id="constraints with different selectors spreading as 2/3 and 1/0/0/1",
    ),
    pytest.param(
        raw_pod("p", labels={"bar": ""},
                constraints=[spread(1, "zone"), spread(1, "node", selector=BAR)]),
        zone_nodes(),
        [raw_pod("p-a1", on="node-a", labels={"foo": ""}),
         raw_pod("p-x1", on="node-x", labels={"bar": ""}),
         raw_pod("p-y1", on="node-y", labels={"bar": ""})],
        {"node-a": OK, "node-b": OK, "node-x": UN, "node-y": UN},
        id="constraints with different selectors where the pod does not match the zone one",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone"), spread(1, "node")]),
        zone_nodes(without=("node-x", "node")),
        foo_pods(("p-a1", "node-a"), ("p-y3", "node-y")),
        {"node-a": UN, "node-b": OK, "node-x": UU, "node-y": UN},
        id="node-x lacks the node label: it is unresolvable and does not count for the zone",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node"), spread(1, "zone")]),
        zone_nodes(without=("node-y", "zone")),
        foo_pods(("p-y1", "node-y"), ("p-y2", "node-y")),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": UU},
        id="pods on a node missing one of the keys are not counted and the node is unresolvable",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone"), spread(1, "rack")]),
        [node("node-a", labels={"zone": "zone1", "rack": "r1"}),
         node("node-b", labels={"zone": "zone1"}),
         node("node-x", labels={"zone": "zone2", "rack": "r2"})],
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a")),
        {"node-a": UN, "node-b": UN, "node-x": OK},
        id="the first failing constraint decides: skew on zone before node-b's missing rack label",
    ),
    pytest.param(
        raw_pod("p", labels={"foo": "", "hash": "v2"},
                constraints=[spread(1, "node", match_label_keys=["hash"])]),
        zone_nodes(),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), labels={"foo": "", "hash": "v1"})
        + foo_pods(("p-b1", "node-b"), labels={"foo": "", "hash": "v2"}),
        {"node-a": OK, "node-b": UN, "node-x": OK, "node-y": OK},
        id="matchLabelKeys only counts pods sharing the incoming pod's label values",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", when="ScheduleAnyway"), spread(1, "node")]),
        zone_nodes(), foo_pods(*A2_B1_Y3),
        {"node-a": UN, "node-b": UN, "node-x": OK, "node-y": UN},
        id="ScheduleAnyway constraints are ignored by the filter",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "want"), FILTER_CASES)
def test_filter(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    want: dict[str, str],
) -> None:
    snapshot = snapshot_of(nodes, pods)
    assert run_filter(list_defaulting(), info(incoming), snapshot) == want


@pytest.mark.parametrize(
    ("incoming", "args"),
    [
        pytest.param(raw_pod("p"), {"defaultingType": "List"},
                     id="a pod without constraints and no default constraints is skipped"),
        pytest.param(raw_pod("p", constraints=[spread(1, "zone", when="ScheduleAnyway")]),
                     {"defaultingType": "List"},
                     id="a pod with only ScheduleAnyway constraints is skipped"),
        pytest.param(raw_pod("p", owner=("ReplicaSet", "rs")), {},
                     id="system default constraints are ScheduleAnyway and skip the filter"),
    ],
)
def test_pre_filter_skips(incoming: dict[str, Any], args: dict[str, Any]) -> None:
    snapshot = snapshot_of(zone_nodes(), foo_pods(*A2_B1_Y3))
    _, status = built(args).pre_filter(CycleState(), info(incoming), snapshot)
    assert status.is_skip()


# -- hypothetical pods ----------------------------------------------------------------------
HYPOTHETICAL_CASES = [
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a")), "node-b", ["n1", "n2"], [], UN,
        id="two nominated matching pods on node-b make it the most loaded node",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a")), "node-b", ["n1"], [], OK,
        id="one nominated matching pod on node-b evens the spread and still fits",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b")), "node-a", [],
        ["p-a1"], OK,
        id="removing a victim on node-a lets the pod fit there",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "node")]), plain_nodes("node-a", "node-b", "node-c"),
        foo_pods(("p-b1", "node-b"), ("p-b2", "node-b"), ("p-c1", "node-c"), ("p-c2", "node-c")),
        "node-a", ["n1", "n2", "n3"], [], OK,
        id="adding to the emptiest domain takes the global minimum from the second lowest domain",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a")), "node-b", ["other-ns-1", "other-ns-2"], [], OK,
        id="nominated pods in another namespace do not count",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")]), plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a")), "node-b", ["bar-1", "bar-2"], [], OK,
        id="nominated pods that do not match the selector do not count",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node")], node_selector={"pool": "x"}),
        plain_nodes("node-a", "node-b", "node-c", node_a={"pool": "x"}, node_b={"pool": "x"}),
        foo_pods(("p-a1", "node-a")), "node-c", ["n1", "n2"], [], OK,
        id="nominated pods on a node excluded by nodeAffinityPolicy do not count",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone"), spread(1, "node")]), zone_nodes(),
        foo_pods(("p-a1", "node-a"), ("p-x1", "node-x")), "node-b", [], [], OK,
        id="a row with empty delta lists gives the fast path answer",
    ),
]

NOMINATED = {
    "n1": raw_pod("n1"), "n2": raw_pod("n2"), "n3": raw_pod("n3"),
    "other-ns-1": raw_pod("other-ns-1", namespace="other"),
    "other-ns-2": raw_pod("other-ns-2", namespace="other"),
    "bar-1": raw_pod("bar-1", labels={"bar": ""}), "bar-2": raw_pod("bar-2", labels={"bar": ""}),
}


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "target", "added", "removed", "want"), HYPOTHETICAL_CASES
)
def test_filter_with_hypothetical_pods(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    target: str,
    added: list[str],
    removed: list[str],
    want: str,
) -> None:
    snapshot = snapshot_of(nodes, pods)
    by_name = {p["metadata"]["name"]: p for p in pods}
    view = view_with(
        snapshot,
        target,
        added=[info(NOMINATED[n]) for n in added],
        removed=[info(by_name[n]) for n in removed],
    )
    assert run_filter(list_defaulting(), info(incoming), snapshot, view) == {target: want}


def test_hypothetical_rows_mix_with_plain_rows() -> None:
    """Only the row carrying the pods sees them; the other rows keep PreFilter's counts."""
    snapshot = snapshot_of(plain_nodes("node-a", "node-b", "node-c"),
                           foo_pods(("p-a1", "node-a"), ("p-b1", "node-b")))
    view = full_view(snapshot)
    view.added = [[], [], [info(raw_pod("n1")), info(raw_pod("n2"))]]
    view.removed = [[info(foo_pods(("p-a1", "node-a"))[0])], [], []]
    incoming = info(raw_pod("p", constraints=[spread(1, "node")]))
    got = run_filter(list_defaulting(), incoming, snapshot, view)
    # node-a without its pod: 0+1-0; node-b (no deltas): 1+1-0 > 1 as node-c is empty;
    # node-c with two nominated pods: 2+1-1 > 1, the minimum now being node-a's and node-b's 1.
    assert got == {"node-a": OK, "node-b": UN, "node-c": UN}


# -- Score ----------------------------------------------------------------------------------
def hostnames(*names: str) -> list[dict[str, Any]]:
    return [node(n) for n in names]


SCORE_CASES = [
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b"), [], ["node-a", "node-b"],
        {"node-a": 100, "node-b": 100},
        id="one constraint on node with no existing pods",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b")), ["node-a"],
        {"node-a": 100},
        id="a single candidate node scores 100",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-d1", "node-d"),
                 ("p-d2", "node-d"), ("p-d3", "node-d")),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="one constraint on node with matching pods spread as 2/1/0/3",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway", selector=NULL)]),
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-b1", "node-b")),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="a null selector matches no pod and every node scores 100",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-d1", "node-d"),
                 ("p-d2", "node-d"), ("p-d3", "node-d")),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        id="maxSkew 2 waters the differences down",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(3, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),
                 ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-b3", "node-b"), ("p-c1", "node-c"),
                 ("p-c2", "node-c"), ("p-d1", "node-d")),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="maxSkew 3 with matching pods spread as 4/3/2/1",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b", "node-x", "node-y"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),
                 ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y"),
                 ("p-y2", "node-y"), ("p-y3", "node-y")),
        ["node-a", "node-b", "node-x"],
        {"node-a": 33, "node-b": 83, "node-x": 100},
        id="three out of four nodes are candidates",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        [node("node-a"), without_hostname(node("node-b", labels={"n": "node-b"})), node("node-x"),
         node("node-y")],
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),
                 ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y"),
                 ("p-y2", "node-y"), ("p-y3", "node-y")),
        ["node-a", "node-b", "node-x"],
        {"node-a": 16, "node-b": 0, "node-x": 100},
        id="a candidate without the topology key is ignored and scores 0",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", "ScheduleAnyway")]),
        [node("node-a", labels={"zone": "zone1"}),
         node("node-b", labels={"zone": "zone1"}), node("node-x", labels={"zone": "zone2"}),
         node("node-y", labels={"zone": "zone2"})],
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),
                 ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y"),
                 ("p-y2", "node-y"), ("p-y3", "node-y")),
        ["node-a", "node-b", "node-x"],
        {"node-a": 75, "node-b": 75, "node-x": 100},
        id="one constraint on zone counts pods on non-candidate nodes of the zone",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "zone", "ScheduleAnyway"),
                                  spread(1, HOSTNAME, "ScheduleAnyway")]),
        [node("node-a", labels={"zone": "zone1"}), node("node-b", labels={"zone": "zone1"}),
         node("node-x", labels={"zone": "zone2"}), node("node-y", labels={"zone": "zone2"})],
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"),
                 ("p-x2", "node-x"), ("p-y1", "node-y"), ("p-y2", "node-y"), ("p-y3", "node-y"),
                 ("p-y4", "node-y")),
        ["node-a", "node-x"],
        {"node-a": 100, "node-x": 63},
        id="two constraints on zone and node with two of four nodes candidates",
    ),
    pytest.param(
        raw_pod("p", labels={"foo": "", "bar": ""},
                constraints=[spread(1, "zone", "ScheduleAnyway"),
                             spread(1, HOSTNAME, "ScheduleAnyway", selector=BAR)]),
        [node("node-a", labels={"zone": "zone1"}), node("node-b", labels={"zone": "zone1"}),
         node("node-x", labels={"zone": "zone2"}), node("node-y", labels={"zone": "zone2"})],
        [raw_pod("p-a1", on="node-a"), raw_pod("p-b1", on="node-b", labels={"foo": "", "bar": ""}),
         raw_pod("p-y1", on="node-y"), raw_pod("p-y2", on="node-y", labels={"bar": ""})],
        ["node-a", "node-b", "node-x", "node-y"],
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
        id="two constraints on zone and node with different selectors",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b"),
        [raw_pod("p-a1", on="node-a", namespace="ns1"), raw_pod("p-a2", on="node-a"),
         raw_pod("p-b1", on="node-b"), raw_pod("p-b2", on="node-b")],
        ["node-a", "node-b"], {"node-a": 100, "node-b": 33},
        id="existing pods in a different namespace do not count for the score",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]),
        hostnames("node-a", "node-b"),
        [raw_pod("p-a", on="node-a", terminating=True), raw_pod("p-b", on="node-b")],
        ["node-a", "node-b"], {"node-a": 100, "node-b": 0},
        id="terminating pods are excluded from the score",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(2, "node", "ScheduleAnyway", min_domains=10)]),
        plain_nodes("node-a", "node-b", "node-c"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-b2", "node-b"),
                 ("p-c1", "node-c")),
        ["node-a", "node-b", "node-c"], {"node-a": 75, "node-b": 75, "node-c": 100},
        id="minDomains has no effect on ScheduleAnyway constraints",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", "ScheduleAnyway")], node_selector={"foo": ""}),
        plain_nodes("node-a", "node-b", "node-c", node_a={"foo": ""}, node_b={"foo": ""}),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        ["node-a", "node-b", "node-c"], {"node-a": 0, "node-b": 33, "node-c": 100},
        id="nodeAffinityPolicy Honor leaves pods on non-matching nodes out of the score",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", "ScheduleAnyway", affinity_policy="Ignore")],
                node_selector={"foo": ""}),
        plain_nodes("node-a", "node-b", "node-c", node_a={"foo": ""}, node_b={"foo": ""}),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        ["node-a", "node-b", "node-c"], {"node-a": 66, "node-b": 100, "node-c": 100},
        id="nodeAffinityPolicy Ignore counts pods on every node for the score",
    ),
    pytest.param(
        raw_pod("p", constraints=[spread(1, "node", "ScheduleAnyway", taints_policy="Honor")]),
        [*plain_nodes("node-a", "node-b"),
         node("node-c", labels={"node": "node-c"}, taints=[UNSCHEDULABLE_TAINT])],
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        ["node-a", "node-b", "node-c"], {"node-a": 0, "node-b": 33, "node-c": 100},
        id="nodeTaintsPolicy Honor leaves pods on untolerated tainted nodes out of the score",
    ),
    pytest.param(
        raw_pod("p", owner=("ReplicaSet", "rs")),
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),
                 ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-b3", "node-b"), ("p-c1", "node-c"),
                 ("p-c2", "node-c"), ("p-d1", "node-d"), owner=("ReplicaSet", "rs"))
        + foo_pods(("q-d1", "node-d"), ("q-d2", "node-d"), ("q-d3", "node-d"),
                   owner=("ReplicaSet", "other")),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="system defaulting spreads pods of the same ReplicaSet by hostname on zone-less nodes",
    ),
]


def run_score(plugin: PodTopologySpread, incoming: PodInfo, snapshot: Any,
              candidates: Sequence[str]) -> dict[str, int]:
    state = CycleState()
    view = view_of(snapshot, candidates)
    status = plugin.pre_score(state, incoming, view)
    assert status.is_success(), status
    raw = plugin.score(state, incoming, view)
    scores = plugin.normalize(state, incoming, raw)
    return dict(zip(candidates, (int(s) for s in scores), strict=True))


@pytest.mark.parametrize(("incoming", "nodes", "pods", "candidates", "want"), SCORE_CASES)
def test_score(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    candidates: list[str],
    want: dict[str, int],
) -> None:
    snapshot = snapshot_of(nodes, pods)
    plugin = built({}) if "ownerReferences" in incoming["metadata"] \
        else list_defaulting()
    assert run_score(plugin, info(incoming), snapshot, candidates) == want


def test_score_in_batches_matches_one_batch() -> None:
    snapshot = snapshot_of(
        hostnames("node-a", "node-b", "node-c", "node-d"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-d1", "node-d")),
    )
    incoming = info(raw_pod("p", constraints=[spread(1, HOSTNAME, "ScheduleAnyway")]))
    plugin = list_defaulting()
    state = CycleState()
    view = full_view(snapshot)
    assert plugin.pre_score(state, incoming, view).is_success()
    whole = plugin.score(state, incoming, view)
    parts = np.concatenate([
        plugin.score(state, incoming, view.subset(np.asarray([0, 1]))),
        plugin.score(state, incoming, view.subset(np.asarray([2, 3]))),
    ])
    assert whole.tolist() == parts.tolist()


@pytest.mark.parametrize(
    ("incoming", "args"),
    [
        pytest.param(raw_pod("p", constraints=[spread(1, "zone")]), {"defaultingType": "List"},
                     id="a pod with only DoNotSchedule constraints skips scoring"),
        pytest.param(raw_pod("p"), {},
                     id="system defaulting without a controller owner skips scoring"),
        pytest.param(raw_pod("p", owner=("Job", "j")), {},
                     id="system defaulting ignores owners upstream has no selector for"),
        pytest.param(raw_pod("p", owner=("ReplicaSet", "rs")), {"defaultingType": "List"},
                     id="list defaulting without default constraints skips scoring"),
    ],
)
def test_pre_score_skips(incoming: dict[str, Any], args: dict[str, Any]) -> None:
    snapshot = snapshot_of(hostnames("node-a", "node-b"))
    status = built(args).pre_score(CycleState(), info(incoming),
                                               full_view(snapshot))
    assert status.is_skip()


def test_list_default_constraints_filter_pods_of_the_same_owner() -> None:
    plugin = built({
        "defaultingType": "List",
        "defaultConstraints": [spread(1, "node", selector=NULL)],
    })
    snapshot = snapshot_of(
        plain_nodes("node-a", "node-b"),
        foo_pods(("p-a1", "node-a"), owner=("StatefulSet", "db"))
        + foo_pods(("q-b1", "node-b"), ("q-b2", "node-b"), owner=("StatefulSet", "web")),
    )
    incoming = info(raw_pod("p", owner=("StatefulSet", "db")))
    assert run_filter(plugin, incoming, snapshot) == {"node-a": UN, "node-b": OK}


# -- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param({"defaultingType": "Magic"}, "defaultingType",
                     id="an unknown defaultingType is rejected"),
        pytest.param({"defaultingType": "System",
                      "defaultConstraints": [spread(1, "zone", selector=NULL)]},
                     "defaultingType", id="System defaulting with default constraints is rejected"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(0, "zone", selector=NULL)]},
                     "defaultConstraints[0].maxSkew", id="maxSkew must be positive"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(1, "", selector=NULL)]},
                     "defaultConstraints[0].topologyKey", id="topologyKey is required"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(1, "-bad-", selector=NULL)]},
                     "defaultConstraints[0].topologyKey", id="topologyKey must be a label name"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(1, "zone", when="Sometimes", selector=NULL)]},
                     "defaultConstraints[0].whenUnsatisfiable",
                     id="whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"),
        pytest.param({"defaultingType": "List", "defaultConstraints": [spread(1, "zone")]},
                     "defaultConstraints[0].labelSelector",
                     id="default constraints must not carry a selector"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(1, "zone", selector=NULL),
                                             spread(2, "zone", selector=NULL)]},
                     "defaultConstraints[1]",
                     id="two default constraints with the same key and action are duplicates"),
    ],
)
def test_validate_args_names_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"args.{field}")):
        validate(args, "args")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({}, id="empty args mean System defaulting"),
        pytest.param(dict(pts.SPEC.default_args), id="the defaults are valid"),
        pytest.param({"defaultingType": "List",
                      "defaultConstraints": [spread(1, "zone", selector=NULL),
                                             spread(1, "zone", "ScheduleAnyway", selector=NULL)]},
                     id="the same key with different actions is allowed"),
    ],
)
def test_validate_args_accepts(args: dict[str, Any]) -> None:
    validate(args, "args")


def test_events_to_register() -> None:
    events = list_defaulting().events_to_register()
    got = {(e.event.resource, e.event.action) for e in events}
    assert got == {
        (Resource.ASSIGNED_POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
        (Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATION | Action.UPDATE_POD_LABEL),
        (Resource.NODE,
         Action.ADD | Action.DELETE | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT),
    }
    assert all(e.hint is not None for e in events)


def test_default_owner_groups_follow_the_cache_between_cycles() -> None:
    snapshot = snapshot_of(
        hostnames("node-a", "node-b"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), owner=("ReplicaSet", "rs")),
    )
    plugin = built({})
    incoming = info(raw_pod("p", owner=("ReplicaSet", "rs")))
    # hostname maxSkew 3: raw round(2·ln 4 + 2) = 5 against 2, normalised 100·(5+2-s)/5.
    assert run_score(plugin, incoming, snapshot, ["node-a", "node-b"]) == {
        "node-a": 40, "node-b": 100,
    }
    snapshot.cache.remove_pod("uid-default-p-a1")
    snapshot.cache.remove_pod("uid-default-p-a2")
    for name in ("p-b1", "p-b2"):
        snapshot.cache.upsert_pod(info(raw_pod(name, on="node-b", owner=("ReplicaSet", "rs"))))
    assert run_score(plugin, incoming, snapshot, ["node-a", "node-b"]) == {
        "node-a": 100, "node-b": 40,
    }


def test_one_plugin_spreads_the_pods_of_each_controller_by_their_own_siblings() -> None:
    # The default constraints are kept per controller between cycles: a pod of another
    # ReplicaSet, scored by the same plugin, counts its own siblings.
    snapshot = snapshot_of(
        hostnames("node-a", "node-b"),
        foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), owner=("ReplicaSet", "rs")),
    )
    plugin = built({})
    names = ["node-a", "node-b"]
    assert run_score(plugin, info(raw_pod("p", owner=("ReplicaSet", "rs"))), snapshot,
                     names) == {"node-a": 40, "node-b": 100}
    assert run_score(plugin, info(raw_pod("q", owner=("ReplicaSet", "other"))), snapshot,
                     names) == {"node-a": 100, "node-b": 100}


def test_node_zones_follow_the_cache_between_cycles() -> None:
    # System defaulting spreads by zone too; the plugin keeps node-only arrays between
    # cycles, which must follow a relabelled node as a fresh plugin does.
    zone = "topology.kubernetes.io/zone"
    names = ["node-a", "node-b", "node-c"]
    zoned = [node(n, labels={HOSTNAME: n, zone: z})
             for n, z in zip(names, ("z1", "z2", "z3"), strict=True)]
    snapshot = snapshot_of(zoned, foo_pods(("p-a1", "node-a"), ("p-c1", "node-c"),
                                           owner=("ReplicaSet", "rs")))
    plugin = built({})
    incoming = info(raw_pod("p", owner=("ReplicaSet", "rs")))
    before = run_score(plugin, incoming, snapshot, names)
    snapshot.cache.upsert_node(node("node-b", labels={HOSTNAME: "node-b", zone: "z1"}))
    after = run_score(plugin, incoming, snapshot, names)
    assert after == run_score(built({}), incoming, snapshot, names)
    assert after != before, "node-b now shares a zone with a sibling"


def test_node_facts_are_kept_per_snapshot() -> None:
    # Two clusters whose tables changed as often, zoned differently: one plugin scoring in
    # both answers each as a fresh plugin does.
    zone = "topology.kubernetes.io/zone"
    names = ["node-a", "node-b", "node-c"]
    siblings = foo_pods(("p-a1", "node-a"), ("p-c1", "node-c"), owner=("ReplicaSet", "rs"))
    incoming = info(raw_pod("p", owner=("ReplicaSet", "rs")))
    plugin = built({})
    for zones in (("z1", "z2", "z3"), ("z1", "z1", "z2")):
        snapshot = snapshot_of([node(n, labels={HOSTNAME: n, zone: z})
                                for n, z in zip(names, zones, strict=True)], siblings)
        assert run_score(plugin, incoming, snapshot, names) == run_score(
            built({}), incoming, snapshot, names), zones


SPREAD_ON_FOO = raw_pod("p", constraints=[spread(1, "zone")])


@pytest.mark.parametrize(
    ("hint_index", "old", "new", "want"),
    [
        pytest.param(0, None, raw_pod("q", on="node-a"), QueueingHint.QUEUE,
                     id="an added pod matching the selector requeues"),
        pytest.param(0, None, raw_pod("q", on="node-a", labels={"bar": ""}), QueueingHint.SKIP,
                     id="an added pod not matching the selector does not requeue"),
        pytest.param(0, None, raw_pod("q", on="node-a", namespace="other"), QueueingHint.SKIP,
                     id="an added pod in another namespace does not requeue"),
        pytest.param(0, raw_pod("q", on="node-a"), None, QueueingHint.QUEUE,
                     id="a deleted matching pod requeues"),
        pytest.param(0, raw_pod("q", on="node-a", labels={"bar": ""}),
                     raw_pod("q", on="node-a"), QueueingHint.QUEUE,
                     id="a label update that makes a pod match requeues"),
        pytest.param(0, raw_pod("q", on="node-a", labels={"foo": "", "x": "1"}),
                     raw_pod("q", on="node-a", labels={"foo": "", "x": "2"}), QueueingHint.SKIP,
                     id="a label update that keeps the match does not requeue"),
        pytest.param(2, None, node("n", labels={"zone": "z"}), QueueingHint.QUEUE,
                     id="an added node with the topology key requeues"),
        pytest.param(2, None, node("n"), QueueingHint.SKIP,
                     id="an added node without the topology key does not requeue"),
        pytest.param(2, node("n", labels={"zone": "z1"}), node("n", labels={"zone": "z2"}),
                     QueueingHint.QUEUE, id="a node moving to another zone requeues"),
        pytest.param(2, node("n", labels={"zone": "z1"}),
                     node("n", labels={"zone": "z1", "other": "x"}), QueueingHint.SKIP,
                     id="an unrelated node label change does not requeue"),
    ],
)
def test_queueing_hints(hint_index: int, old: Any, new: Any, want: QueueingHint) -> None:
    hint = list_defaulting().events_to_register()[hint_index].hint
    assert hint is not None

    def convert(obj: Any) -> Any:
        if obj is None or obj.get("kind") == "Node":
            return summary(obj)
        return info(obj)

    assert hint(info(SPREAD_ON_FOO), convert(old), convert(new)) is want


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        pytest.param({"defaultingType": "Sometimes", "extra": 1},
                     ["A.extra: Invalid value: unknown field",
                      "A.defaultingType: Unsupported value: 'Sometimes': supported values: "
                      '"List", "System"'], id="unknown field and defaulting, both reported"),
        pytest.param({"defaultingType": "List", "defaultConstraints": "zone"},
                     ["A.defaultConstraints: Invalid value: must be a list"],
                     id="defaultConstraints is a list"),
        pytest.param({"defaultConstraints": [5]},
                     ["A.defaultingType: Invalid value: 'System': when .defaultConstraints are "
                      "not empty", "A.defaultConstraints[0]: Invalid value: must be a mapping"],
                     id="System with constraints, and a constraint that is not a mapping"),
    ],
)
def test_validate_args_words_as_upstream(args: dict[str, Any], lines: list[str]) -> None:
    """validation_pluginargs.go ValidatePodTopologySpreadArgs; defaults are v1's."""
    assert pts.SPEC.default_args == {"defaultingType": "System", "defaultConstraints": []}
    with pytest.raises(ConfigError) as excinfo:
        validate(args, "A")
    assert str(excinfo.value).splitlines() == lines


POOL_X = {"pool": "x"}
B2_Y1 = foo_pods(("p-b1", "node-b"), ("p-b2", "node-b"), ("p-y1", "node-y"))


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "target", "elsewhere", "want"),
    [
        pytest.param(
            raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(), B2_Y1, "node-a", [],
            UN, id="with nothing removed zone1 is two over zone2",
        ),
        pytest.param(
            raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(), B2_Y1, "node-a",
            ["p-b1"], OK, id="a pod removed on another node of the zone lowers its count",
        ),
        pytest.param(
            raw_pod("p", constraints=[spread(1, "zone")]), zone_nodes(), B2_Y1, "node-a",
            ["p-y1"], UN, id="a pod removed in the other zone lowers the global minimum",
        ),
        pytest.param(
            raw_pod("p", constraints=[spread(1, "zone")], node_selector=POOL_X),
            [node(n["metadata"]["name"], labels={**n["metadata"]["labels"], **(
                {} if n["metadata"]["name"] == "node-b" else POOL_X)}) for n in zone_nodes()],
            foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),
                     ("p-y1", "node-y")),
            "node-a", ["p-b1"], UN,
            id="a pod removed on a node excluded by nodeAffinityPolicy does not count",
        ),
    ],
)
def test_filter_with_pods_removed_on_other_nodes(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
    target: str, elsewhere: list[str], want: str,
) -> None:
    """Upstream's RemovePod with the removed pod's own node (SelectVictimsOnNode for a pod
    group's members on other nodes than the candidate): zone1 is node-a and node-b, zone2
    node-x and node-y."""
    snapshot = snapshot_of(nodes, pods)
    by_name = {p["metadata"]["name"]: p for p in pods}
    view = view_with(snapshot, target, removed_elsewhere=[info(by_name[n]) for n in elsewhere])
    assert run_filter(list_defaulting(), info(incoming), snapshot, view) == {target: want}
