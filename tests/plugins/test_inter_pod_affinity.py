"""InterPodAffinity tables, ported from upstream's filtering_test.go and scoring_test.go."""

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
from scheduler.plugins import inter_pod_affinity as ipa
from scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from scheduler.testing import (
    full_view,
    namespace,
    node,
    pod,
    rejected_reasons,
    snapshot_of,
    view_with,
)

OK = "ok"
AFFINITY = "affinity"
ANTI = "anti-affinity"
EXISTING = "existing anti-affinity"
SKIPPED = "skipped"
RESULT_OF = {
    (Code.SUCCESS, None): OK,
    (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH): AFFINITY,
    (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH): ANTI,
    (Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH): EXISTING,
}

NAMESPACES = [
    namespace("subteam1.team1", {"team": "team1"}),
    namespace("subteam2.team1", {"team": "team1"}),
    namespace("subteam1.team2", {"team": "team2"}),
    namespace("subteam2.team2", {"team": "team2"}),
]


# -- builders -------------------------------------------------------------------------------
def built(args: dict[str, Any]) -> ipa.InterPodAffinity:
    """The plugin as a profile builds it: args over the defaults, decoded."""
    plugin = ipa.SPEC.build({**ipa.SPEC.default_args, **args}, None)  # type: ignore[arg-type]
    assert isinstance(plugin, ipa.InterPodAffinity)
    return plugin


def in_(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def not_in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "NotIn", "values": list(values)}


def exists(key: str) -> dict[str, Any]:
    return {"key": key, "operator": "Exists"}


def absent(key: str) -> dict[str, Any]:
    return {"key": key, "operator": "DoesNotExist"}


def term(
    topology_key: str,
    *expressions: dict[str, Any],
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "labelSelector": {"matchExpressions": list(expressions)},
        "topologyKey": topology_key,
    }
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = dict(namespace_selector)
    return out


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def team_selector(op: str = "In") -> dict[str, Any]:
    return {"matchExpressions": [{"key": "team", "operator": op, "values": ["team1"]}]}


def apod(
    name: str,
    *,
    on: str = "",
    labels: Mapping[str, str] | None = None,
    ns: str = "default",
    affinity: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    preferred_anti: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    spec_affinity: dict[str, Any] = {}
    if affinity or preferred:
        spec_affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(affinity),
            "preferredDuringSchedulingIgnoredDuringExecution": list(preferred),
        }
    if anti or preferred_anti:
        spec_affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": list(preferred_anti),
        }
    spec = {"affinity": spec_affinity} if spec_affinity else {}
    return pod(name, node_name=on, labels=labels or {}, namespace=ns, spec=spec)


def info(raw: Mapping[str, Any]) -> PodInfo:
    out = PodInfo.from_pod(raw)
    assert out.parse_error is None, out.parse_error
    return out


def anode(name: str, **labels: str) -> dict[str, Any]:
    return node(name, labels=labels)


def run_filter(
    incoming: PodInfo, snapshot: Any, view: NodeView | None = None
) -> dict[str, str] | str:
    plugin = built({})
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot)
    if status.is_skip():
        return SKIPPED
    assert status.is_success(), status
    view = full_view(snapshot) if view is None else view
    result = plugin.filter(state, incoming, view)
    names = view.names()
    reasons = rejected_reasons(result, names)
    out = {}
    for i, name in enumerate(names):
        assert len(reasons[name]) <= 1
        reason = reasons[name][0] if reasons[name] else None
        out[name] = RESULT_OF[(Code(int(result.codes[i])), reason)]
    return out


S1 = {"security": "S1"}
SCAN = {"service": "securityscan"}
NODE1 = anode("node1", region="r1", zone="z11")
EXISTING_SCAN = apod("existing", on="node1", labels=SCAN)


# -- Filter: one node (TestRequiredAffinitySingleNode) ---------------------------------------
SINGLE_NODE_CASES = [
    pytest.param(
        apod("p"), [], SKIPPED,
        id="a pod without required terms and no existing anti-affinity skips the plugin",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan", "value2"))]),
        [EXISTING_SCAN], OK,
        id="affinity with the In operator matches the existing pod",
    ),
    pytest.param(
        apod("p", labels=S1,
             affinity=[term("region", not_in("service", "securityscan3", "value3"))]),
        [EXISTING_SCAN], OK,
        id="affinity with the NotIn operator matches the existing pod",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan", "value2"),
                                            namespaces=["DiffNameSpace"])]),
        [apod("existing", on="node1", ns="ns", labels=SCAN)], AFFINITY,
        id="affinity does not match a pod in another namespace than the term names",
    ),
    pytest.param(
        apod("p", labels=SCAN, affinity=[term("region", in_("service", "antivirusscan"))]),
        [EXISTING_SCAN], AFFINITY,
        id="affinity whose selector matches no existing pod is unresolvable",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[
            term("region", exists("service"), absent("wrongkey")),
            term("region", in_("service", "securityscan"), not_in("service", "WrongValue")),
        ]),
        [EXISTING_SCAN], OK,
        id="several affinity terms with different operators all match the existing pod",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[
            term("region", exists("service"), absent("wrongkey")),
            term("region", in_("service", "securityscan2"), not_in("service", "WrongValue")),
        ]),
        [EXISTING_SCAN], AFFINITY,
        id="the requirements of a selector are ANDed so one mismatching expression fails",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan"))],
             anti=[term("node", in_("service", "antivirusscan"))]),
        [EXISTING_SCAN], OK,
        id="affinity and anti-affinity are both satisfied by the existing pod",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan"))],
             anti=[term("node", in_("service", "antivirusscan"))]),
        [apod("existing", on="node1", labels=SCAN,
              anti=[term("node", in_("service", "antivirusscan"))])],
        OK,
        id="affinity, anti-affinity and the existing pod's anti-affinity are all satisfied",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan"))],
             anti=[term("zone", in_("service", "securityscan"))]),
        [EXISTING_SCAN], ANTI,
        id="affinity is satisfied but the anti-affinity is not",
    ),
    pytest.param(
        apod("p", labels=SCAN, affinity=[term("region", in_("service", "securityscan"))],
             anti=[term("node", in_("service", "antivirusscan"))]),
        [apod("existing", on="node1", labels=SCAN,
              anti=[term("zone", in_("service", "securityscan"))])],
        EXISTING,
        id="the existing pod's anti-affinity rejects the incoming pod (symmetry)",
    ),
    pytest.param(
        apod("p", labels=SCAN, affinity=[term("region", not_in("service", "securityscan"))]),
        [apod("elsewhere", on="node2", labels=SCAN)], AFFINITY,
        id="a pod that does not match its own affinity is not the first of its group",
    ),
    pytest.param(
        apod("p", labels=SCAN),
        [apod("existing", on="node1", labels=SCAN,
              anti=[term("zone", in_("service", "securityscan"))])],
        EXISTING,
        id="existing anti-affinity is enforced on a pod without terms of its own",
    ),
    pytest.param(
        apod("p", labels=SCAN),
        [apod("existing", on="node1", labels=SCAN,
              anti=[term("zone", not_in("service", "securityscan"))])],
        SKIPPED,
        id="existing anti-affinity that does not match the pod lets PreFilter skip",
    ),
    pytest.param(
        apod("p", labels=SCAN, anti=[term("region", exists("service")),
                                     term("region", exists("security"))]),
        [apod("existing", on="node1", labels=S1, anti=[term("zone", exists("security"))])],
        ANTI,
        id="the incoming pod's anti-affinity is checked before the existing pod's",
    ),
    pytest.param(
        apod("p", labels=SCAN, anti=[term("zone", exists("service")),
                                     term("zone", exists("security"))]),
        [apod("existing", on="node1", labels=S1, anti=[term("zone", exists("security"))])],
        ANTI,
        id="symmetry check a1: the pods partially match each other's terms",
    ),
    pytest.param(
        apod("p", labels=S1, anti=[term("zone", exists("security"))]),
        [apod("existing", on="node1", labels=SCAN,
              anti=[term("zone", exists("service")), term("zone", exists("security"))])],
        EXISTING,
        id="symmetry check a2: the pods partially match each other's terms",
    ),
    pytest.param(
        apod("p", labels={"abc": "", "xyz": ""},
             anti=[term("zone", exists("abc")), term("zone", exists("def"))]),
        [apod("existing", on="node1", labels={"def": "", "xyz": ""},
              anti=[term("zone", exists("abc")), term("zone", exists("def"))])],
        ANTI,
        id="symmetry check b1: the pods partially match each other's terms",
    ),
    pytest.param(
        apod("p", labels={"def": "", "xyz": ""},
             anti=[term("zone", exists("abc")), term("zone", exists("def"))]),
        [apod("existing", on="node1", labels={"abc": "", "xyz": ""},
              anti=[term("zone", exists("abc")), term("zone", exists("def"))])],
        ANTI,
        id="symmetry check b2: the pods partially match each other's terms",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan"),
                                            namespace_selector=team_selector())]),
        [apod("existing", on="node1", ns="subteam1.team1", labels=SCAN)], OK,
        id="affinity with a namespaceSelector matches a pod in a selected namespace",
    ),
    pytest.param(
        apod("p", labels=S1, affinity=[term("region", in_("service", "securityscan"),
                                            namespace_selector=team_selector())]),
        [apod("existing", on="node1", ns="subteam1.team2", labels=SCAN)], AFFINITY,
        id="affinity with a namespaceSelector ignores pods in other namespaces",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1,
             anti=[term("zone", in_("service", "securityscan"),
                        namespace_selector=team_selector())]),
        [apod("existing", on="node1", ns="subteam2.team1", labels=SCAN)], ANTI,
        id="anti-affinity with a namespaceSelector matches a pod in a selected namespace",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1,
             anti=[term("zone", in_("service", "securityscan"), namespace_selector={})]),
        [apod("existing", on="node1", ns="subteam2.team1", labels=SCAN)], ANTI,
        id="anti-affinity with an empty namespaceSelector matches pods in every namespace",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1,
             anti=[term("zone", in_("service", "securityscan"),
                        namespace_selector=team_selector())]),
        [apod("existing", on="node1", ns="subteam1.team2", labels=SCAN)], OK,
        id="anti-affinity with a namespaceSelector ignores pods in other namespaces",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1),
        [apod("existing", on="node1", ns="default", labels=SCAN,
              anti=[term("zone", exists("security"), namespace_selector=team_selector())])],
        EXISTING,
        id="an existing pod's anti-affinity namespaceSelector is matched against the "
        "incoming pod's namespace labels",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "want"), SINGLE_NODE_CASES)
def test_filter_single_node(
    incoming: dict[str, Any], pods: list[dict[str, Any]], want: str
) -> None:
    snapshot = snapshot_of([NODE1], pods, NAMESPACES)
    got = run_filter(info(incoming), snapshot)
    assert got == (want if want == SKIPPED else {"node1": want})


# -- Filter: several nodes (TestRequiredAffinityMultipleNodes) -------------------------------
CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}

MULTI_NODE_CASES = [
    pytest.param(
        apod("p", affinity=[term("region", in_("foo", "bar"))]),
        [apod("p1", on="node1", labels={"foo": "bar"})],
        [anode("node1", **CHINA), anode("node2", **CHINA_AZ1), anode("node3", **INDIA)],
        {"node1": OK, "node2": OK, "node3": AFFINITY},
        id="all nodes in the region of a matching pod fit, the other region does not",
    ),
    pytest.param(
        apod("p", labels={"foo": "bar", "service": "securityscan"},
             affinity=[term("zone", in_("foo", "bar")),
                       term("zone", in_("service", "securityscan"))]),
        [apod("p1", on="nodeA", labels={"foo": "bar"})],
        [anode("nodeA", zone="az1"), anode("nodeB", zone="az2")],
        {"nodeA": OK, "nodeB": OK},
        id="the first pod of a self-affine group may go anywhere when no pod matches all terms",
    ),
    pytest.param(
        apod("p", labels={"foo": "bar", "service": "securityscan"},
             affinity=[term("zone", in_("foo", "bar")),
                       term("zone", in_("service", "securityscan"))]),
        [apod("p1", on="nodeA", labels={"foo": "bar"})],
        [anode("nodeA", zoneLabel="az1"), anode("nodeB", zoneLabel="az2")],
        {"nodeA": AFFINITY, "nodeB": AFFINITY},
        id="the first pod of a group still needs nodes carrying the topology keys",
    ),
    pytest.param(
        apod("p", anti=[term("region", in_("foo", "abc"))]),
        [apod("p1", on="nodeA", labels={"foo": "abc"})],
        [anode("nodeA", region="r1"), anode("nodeB", region="r1")],
        {"nodeA": ANTI, "nodeB": ANTI},
        id="anti-affinity rejects every node of the region holding a matching pod",
    ),
    pytest.param(
        apod("p", anti=[term("region", in_("foo", "abc")),
                        term("zone", in_("service", "securityscan"))]),
        [apod("p1", on="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z2")],
        {"nodeA": ANTI, "nodeB": ANTI},
        id="anti-affinity rejects a node when any of its terms matches",
    ),
    pytest.param(
        apod("p", anti=[term("region", in_("foo", "abc"))]),
        [apod("p1", on="nodeA", labels={"foo": "abc"})],
        [anode("nodeA", **CHINA), anode("nodeB", **CHINA_AZ1), anode("nodeC", **INDIA)],
        {"nodeA": ANTI, "nodeB": ANTI, "nodeC": OK},
        id="anti-affinity leaves the other region feasible",
    ),
    pytest.param(
        apod("p", ns="NS1", labels={"foo": "123"}, anti=[term("region", in_("foo", "bar"))]),
        [apod("p1", on="nodeA", ns="NS1", labels={"foo": "bar"}),
         apod("p2", on="nodeC", ns="NS2", anti=[term("region", in_("foo", "123"))])],
        [anode("nodeA", **CHINA), anode("nodeB", **CHINA_AZ1), anode("nodeC", **INDIA)],
        {"nodeA": ANTI, "nodeB": ANTI, "nodeC": OK},
        id="an existing pod's anti-affinity only covers its own namespace by default",
    ),
    pytest.param(
        apod("p", labels={"foo": ""}),
        [apod("p1", on="nodeA", anti=[term("invalid-node-label", exists("foo"))])],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z1")],
        SKIPPED,
        id="an existing pod's anti-affinity on a key no node has never applies",
    ),
    pytest.param(
        apod("p", anti=[term("invalid-node-label", exists("foo"))]),
        [apod("p1", on="nodeA", labels={"foo": ""})],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z1")],
        {"nodeA": OK, "nodeB": OK},
        id="the incoming pod's anti-affinity needs the topology key on the node as well",
    ),
    pytest.param(
        apod("p", labels={"foo": "", "bar": ""}),
        [apod("p1", on="nodeA", anti=[term("zone", exists("foo"))]),
         apod("p2", on="nodeA", anti=[term("region", exists("bar"))])],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z2")],
        {"nodeA": EXISTING, "nodeB": EXISTING},
        id="the pod violates existing pods' anti-affinity terms on every node",
    ),
    pytest.param(
        apod("p", affinity=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [apod("p1", on="nodeA", labels={"foo": "", "bar": ""})],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z1")],
        {"nodeA": OK, "nodeB": OK},
        id="affinity terms are matched first, then every term's topology domain is checked",
    ),
    pytest.param(
        apod("p", affinity=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [apod("p1", on="nodeA", labels={"foo": ""}), apod("p2", on="nodeB", labels={"bar": ""})],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z2")],
        {"nodeA": AFFINITY, "nodeB": AFFINITY},
        id="affinity needs a single existing pod matching all terms",
    ),
    pytest.param(
        apod("p", affinity=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [apod("p1", on="nodeA", labels={"foo": "", "bar": ""})],
        [anode("nodeA", region="r1", zone="z1"), anode("nodeB", region="r1", zone="z2")],
        {"nodeA": OK, "nodeB": AFFINITY},
        id="affinity to a pod matching all terms needs every term's domain to hold it",
    ),
    pytest.param(
        apod("p", affinity=[term("kubernetes.io/hostname", exists("foo"))]),
        [apod("p1", on="nodeA", labels={"foo": ""})],
        [anode("nodeA"), anode("nodeB")],
        {"nodeA": OK, "nodeB": AFFINITY},
        id="hostname affinity only admits the node of the matching pod",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), MULTI_NODE_CASES)
def test_filter_multiple_nodes(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want: dict[str, str] | str,
) -> None:
    snapshot = snapshot_of(nodes, pods, NAMESPACES)
    assert run_filter(info(incoming), snapshot) == want


# -- Filter with hypothetical pods (AddPod / RemovePod) -------------------------------------
HYPOTHETICAL_CASES = [
    pytest.param(
        apod("p", affinity=[term("zone", in_("foo", "bar"))]),
        [], [anode("a", zone="z1"), anode("b", zone="z2")],
        "a", [apod("n1", labels={"foo": "bar"})], [], OK,
        id="a nominated pod matching the affinity makes its node feasible",
    ),
    pytest.param(
        apod("p", affinity=[term("zone", in_("foo", "bar"))]),
        [apod("x", on="a", labels={"foo": "bar"})], [anode("a", zone="z1"), anode("b", zone="z2")],
        "a", [], ["x"], AFFINITY,
        id="removing the only pod matching the affinity of a pod not matching itself rejects",
    ),
    pytest.param(
        apod("p", anti=[term("kubernetes.io/hostname", in_("foo", "bar"))]),
        [apod("x", on="a", labels={"foo": "bar"}), apod("y", on="a", labels={"foo": "bar"})],
        [anode("a"), anode("b")],
        "a", [], ["x"], ANTI,
        id="removing one of two pods matching the anti-affinity still rejects the node",
    ),
    pytest.param(
        apod("p", anti=[term("kubernetes.io/hostname", in_("foo", "bar"))]),
        [apod("x", on="a", labels={"foo": "bar"})], [anode("a"), anode("b")],
        "a", [], ["x"], OK,
        id="removing a victim matching the anti-affinity makes its node feasible",
    ),
    pytest.param(
        apod("p", anti=[term("kubernetes.io/hostname", in_("foo", "bar"))]),
        [], [anode("a"), anode("b")],
        "b", [apod("n1", labels={"foo": "bar"})], [], ANTI,
        id="a nominated pod matching the anti-affinity rejects its node",
    ),
    pytest.param(
        apod("p", labels={"app": "web"}),
        [apod("x", on="a", anti=[term("zone", in_("app", "web"))])],
        [anode("a", zone="z1"), anode("b", zone="z2")],
        "a", [], ["x"], OK,
        id="removing the victim whose anti-affinity rejects the pod makes the node feasible",
    ),
    pytest.param(
        apod("p", labels={"app": "web"}, anti=[term("zone", in_("app", "db"))]),
        [], [anode("a", zone="z1"), anode("b", zone="z2")],
        "b", [apod("n1", anti=[term("zone", in_("app", "web"))])], [], EXISTING,
        id="a nominated pod whose anti-affinity matches the pod rejects its node",
    ),
    pytest.param(
        apod("p", labels={"app": "web"}, anti=[term("zone", in_("app", "db"))]),
        [], [anode("a", zone="z1"), anode("b", zone="z2")],
        "b", [apod("n1", ns="other", labels={"app": "db"})], [], OK,
        id="a nominated pod in another namespace does not match the anti-affinity",
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "target", "added", "removed", "want"), HYPOTHETICAL_CASES
)
def test_filter_with_hypothetical_pods(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    target: str,
    added: list[dict[str, Any]],
    removed: list[str],
    want: str,
) -> None:
    snapshot = snapshot_of(nodes, pods, NAMESPACES)
    by_name = {p["metadata"]["name"]: p for p in pods}
    view = view_with(snapshot, target, added=[info(p) for p in added],
                     removed=[info(by_name[n]) for n in removed])
    assert run_filter(info(incoming), snapshot, view) == {target: want}


@pytest.mark.parametrize(
    ("incoming", "pods", "elsewhere", "want"),
    [
        pytest.param(
            apod("p", anti=[term("zone", in_("foo", "bar"))]),
            [apod("y", on="b", labels={"foo": "bar"})], ["y"], OK,
            id="a pod removed on another node of the zone no longer rejects the node",
        ),
        pytest.param(
            apod("p", anti=[term("zone", in_("foo", "bar"))]),
            [apod("y", on="b", labels={"foo": "bar"}), apod("z", on="b", labels={"foo": "bar"})],
            ["y"], ANTI,
            id="removing one of two matching pods elsewhere in the zone still rejects",
        ),
        pytest.param(
            apod("p", labels={"app": "web"}),
            [apod("y", on="b", anti=[term("zone", in_("app", "web"))])], ["y"], OK,
            id="a pod whose anti-affinity rejects the pod, removed on another node",
        ),
        pytest.param(
            apod("p", anti=[term("kubernetes.io/hostname", in_("foo", "bar"))]),
            [apod("x", on="a", labels={"foo": "bar"}), apod("y", on="b", labels={"foo": "bar"})],
            ["y"], ANTI,
            id="a pod removed on another host does not change this host's count",
        ),
    ],
)
def test_filter_with_pods_removed_on_other_nodes(
    incoming: dict[str, Any], pods: list[dict[str, Any]], elsewhere: list[str], want: str,
) -> None:
    """Upstream's RemovePod with the removed pod's own node (SelectVictimsOnNode for a pod
    group's members on other nodes than the candidate): the pod counts in its node's
    domains, node ``a`` is the one filtered."""
    nodes = [anode("a", zone="z1"), anode("b", zone="z1"), anode("c", zone="z2")]
    snapshot = snapshot_of(nodes, pods, NAMESPACES)
    by_name = {p["metadata"]["name"]: p for p in pods}
    view = view_with(snapshot, "a", removed_elsewhere=[info(by_name[n]) for n in elsewhere])
    assert run_filter(info(incoming), snapshot, view) == {"a": want}


def test_hypothetical_pods_only_change_their_own_row() -> None:
    snapshot = snapshot_of(
        [anode("a", zone="z1"), anode("b", zone="z1"), anode("c", zone="z2")],
        [apod("x", on="c", labels={"foo": "bar"})],
    )
    incoming = info(apod("p", anti=[term("zone", in_("foo", "bar"))]))
    view = full_view(snapshot)
    view.added = [[info(apod("n1", labels={"foo": "bar"}))], [], []]
    view.removed = [[], [], [info(apod("x", on="c", labels={"foo": "bar"}))]]
    assert run_filter(incoming, snapshot, view) == {"a": ANTI, "b": OK, "c": OK}


# -- Score (TestPreferredAffinity) ----------------------------------------------------------
S2 = {"security": "S2"}
STAY_S1_REGION = weighted(5, term("region", in_("security", "S1")))
STAY_S2_REGION = weighted(6, term("region", in_("security", "S2")))
AWAY_S1_AZ = weighted(5, term("az", in_("security", "S1")))
AWAY_S2_AZ = weighted(5, term("az", in_("security", "S2")))
STAY_S1_REGION_8 = weighted(8, term("region", in_("security", "S1")))
AFFINITY3 = [
    weighted(8, term("region", not_in("security", "S1"), in_("security", "S2"))),
    weighted(2, term("region", exists("security"), absent("wrongkey"))),
]
HARD_AFFINITY = [
    term("region", in_("security", "S1", "value2")),
    term("region", exists("security"), absent("wrongkey")),
]
NS_SELECTOR_TERM = weighted(5, term("region", in_("security", "S1"), namespaces=["subteam2.team2"],
                                    namespace_selector=team_selector()))
NEGATIVE_NS_TERM = weighted(5, term("region", in_("security", "S1"),
                                    namespace_selector=team_selector("NotIn")))
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}


def nodes_(*labels: Mapping[str, str]) -> list[dict[str, Any]]:
    return [anode(f"node{i + 1}", **lab) for i, lab in enumerate(labels)]


SCORE_CASES = [
    pytest.param(
        apod("p", labels=S1), [], nodes_(CHINA, INDIA, AZ1), {}, SKIPPED,
        id="all nodes are the same when there is no affinity at all",
    ),
    pytest.param(
        apod("p", labels=S1, preferred=[STAY_S1_REGION]),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node2", labels=S2),
         apod("e3", on="node3", labels=S1)],
        nodes_(CHINA, INDIA, AZ1), {}, [100, 0, 0],
        id="a node matching the topology key and holding matching pods scores highest",
    ),
    pytest.param(
        apod("p", preferred=[STAY_S1_REGION]), [apod("e1", on="node1", labels=S1)],
        nodes_(CHINA, CHINA_AZ1, INDIA), {}, [100, 100, 0],
        id="all nodes of the region of a matching pod score the same",
    ),
    pytest.param(
        apod("p", labels=S1, preferred=[STAY_S2_REGION]),
        [apod("e1", on="node1", labels=S2), apod("e2", on="node1", labels=S2),
         apod("e3", on="node2", labels=S2), apod("e4", on="node3", labels=S2),
         apod("e5", on="node4", labels=S2), apod("e6", on="node5", labels=S2)],
        nodes_(CHINA, INDIA, CHINA, CHINA, INDIA), {}, [100, 0, 100, 100, 0],
        id="the region with more matching pods scores higher",
    ),
    pytest.param(
        apod("p", labels=S1, preferred=AFFINITY3),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node2", labels=S2),
         apod("e3", on="node3", labels=S1)],
        nodes_(CHINA, INDIA, AZ1), {}, [20, 100, 0],
        id="different operators in preferred terms with some match failures",
    ),
    pytest.param(
        apod("p", labels=S2),
        [apod("e1", on="node1", labels=S1, preferred=[STAY_S1_REGION]),
         apod("e2", on="node2", labels=S2, preferred=[STAY_S2_REGION])],
        nodes_(CHINA, INDIA, AZ1), {}, [0, 100, 0],
        id="existing pods' preferred affinity matching the pod counts (symmetry)",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1),
        [apod("e1", on="node1", labels=S1, preferred=[NS_SELECTOR_TERM]),
         apod("e2", on="node2", labels=S2, preferred=[STAY_S2_REGION])],
        nodes_(CHINA, INDIA, AZ1), {}, [100, 0, 0],
        id="existing preferred affinity with a namespaceSelector selecting the pod's namespace",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1),
        [apod("e1", on="node1", labels=S1, preferred_anti=[NS_SELECTOR_TERM]),
         apod("e2", on="node2", labels=S2, preferred=[STAY_S2_REGION])],
        nodes_(CHINA, INDIA, AZ1), {}, [0, 100, 100],
        id="existing preferred anti-affinity with a namespaceSelector selecting the pod",
    ),
    pytest.param(
        apod("p", labels=S1),
        [apod("e1", on="node1", labels=S1, affinity=HARD_AFFINITY),
         apod("e2", on="node2", labels=S2, affinity=HARD_AFFINITY)],
        nodes_(CHINA, INDIA, AZ1), {}, [100, 100, 0],
        id="existing pods' required affinity matching the pod counts with hardPodAffinityWeight",
    ),
    pytest.param(
        apod("p", labels=S1, preferred_anti=[AWAY_S1_AZ]),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node2", labels=S2)],
        nodes_(AZ1, CHINA), {}, [0, 100],
        id="preferred anti-affinity: the node with a matching pod scores lowest",
    ),
    pytest.param(
        apod("p", labels=S1, preferred_anti=[AWAY_S1_AZ]),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node2", labels=S1)],
        nodes_(AZ1, CHINA), {}, [0, 100],
        id="preferred anti-affinity ignores matching pods on nodes without the key",
    ),
    pytest.param(
        apod("p", labels=S1, preferred_anti=[AWAY_S1_AZ]),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node1", labels=S1),
         apod("e3", on="node2", labels=S2)],
        nodes_(AZ1, INDIA), {}, [0, 100],
        id="preferred anti-affinity: more matching pods score lower",
    ),
    pytest.param(
        apod("p", labels=S2),
        [apod("e1", on="node1", labels=S1, preferred_anti=[AWAY_S2_AZ]),
         apod("e2", on="node2", labels=S2, preferred_anti=[AWAY_S1_AZ])],
        nodes_(AZ1, AZ2), {}, [0, 100],
        id="existing pods' preferred anti-affinity matching the pod counts negatively",
    ),
    pytest.param(
        apod("p", labels=S1, preferred=[STAY_S1_REGION_8], preferred_anti=[AWAY_S2_AZ]),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node2", labels=S1)],
        nodes_(CHINA, AZ1), {}, [100, 0],
        id="preferred affinity and anti-affinity together",
    ),
    pytest.param(
        apod("p", labels=S1, preferred=[STAY_S1_REGION_8], preferred_anti=[AWAY_S2_AZ]),
        [apod("e1", on="node1", labels=S1),
         apod("e2", on="node2", labels=S2),
         apod("e3", on="node3", preferred=[STAY_S1_REGION_8], preferred_anti=[AWAY_S2_AZ]),
         apod("e4", on="node4", preferred_anti=[AWAY_S1_AZ])],
        nodes_(CHINA, AZ1, INDIA, AZ2), {}, [100, 0, 100, 0],
        id="preferred affinity, anti-affinity and symmetry together",
    ),
    pytest.param(
        apod("p", labels=S1),
        [apod("e1", on="node1", labels=S1),
         apod("e2", on="node2", preferred=[STAY_S1_REGION_8], preferred_anti=[AWAY_S2_AZ])],
        nodes_(CHINA, CHINA), {}, [0, 0],
        id="nodes of a topology without pods with affinity get the topology's score",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1, preferred=[NS_SELECTOR_TERM]),
        [apod("e1", on="node1", ns="subteam1.team1", labels=S1),
         apod("e2", on="node1", ns="subteam1.team1", labels=S1),
         apod("e3", on="node1", ns="subteam2.team2", labels=S1),
         apod("e4", on="node2", ns="subteam2.team1", labels=S1)],
        nodes_(CHINA, INDIA), {}, [100, 0],
        id="preferred affinity matching pods in namespaces and namespaceSelector",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1, preferred_anti=[NS_SELECTOR_TERM]),
        [apod("e1", on="node1", ns="subteam1.team1", labels=S1),
         apod("e2", on="node1", ns="subteam1.team1", labels=S1),
         apod("e3", on="node1", ns="subteam1.team2", labels=S1),
         apod("e4", on="node2", ns="subteam2.team1", labels=S1)],
        nodes_(CHINA, INDIA), {}, [0, 100],
        id="preferred anti-affinity matching pods in the namespaceSelector",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels=S1, preferred=[NEGATIVE_NS_TERM]),
        [apod("e1", on="node1", ns="subteam1.team1", labels=S1),
         apod("e2", on="node1", ns="subteam1.team1", labels=S1),
         apod("e3", on="node2", ns="subteam1.team2", labels=S1)],
        nodes_(CHINA, INDIA), {}, [0, 100],
        id="preferred affinity enforces a negative namespaceSelector",
    ),
    pytest.param(
        apod("p", labels=S2),
        [apod("e1", on="node1", labels=S1, preferred=[STAY_S1_REGION_8],
              preferred_anti=[AWAY_S2_AZ]),
         apod("e2", on="node2", labels=S2, preferred=[STAY_S2_REGION])],
        nodes_(CHINA, INDIA), {"ignorePreferredTermsOfExistingPods": True}, SKIPPED,
        id="ignorePreferredTermsOfExistingPods skips a pod without preferred terms",
    ),
    pytest.param(
        apod("p", labels=S2),
        [apod("e1", on="node1", labels=S1, preferred=[STAY_S1_REGION_8],
              preferred_anti=[AWAY_S2_AZ]),
         apod("e2", on="node2", labels=S2, preferred=[STAY_S2_REGION])],
        nodes_(CHINA, INDIA), {"ignorePreferredTermsOfExistingPods": False}, [0, 100],
        id="existing pods' preferred terms count by default",
    ),
    pytest.param(
        apod("p", labels={"service": "S1"}),
        [apod("e1", on="node1", affinity=[term("region", in_("service", "S1"),
                                               namespaces=["default", "subteam2.team2"],
                                               namespace_selector=team_selector())]),
         apod("e2", on="node2", affinity=[term("region", in_("service", "S1"),
                                               namespaces=["default", "subteam2.team2"],
                                               namespace_selector=team_selector())])],
        nodes_(CHINA, INDIA, AZ1), {"hardPodAffinityWeight": 0}, SKIPPED,
        id="a zero hardPodAffinityWeight ignores existing pods' required affinity",
    ),
    pytest.param(
        apod("p", ns="subteam1.team2", labels={"service": "S1"}),
        [apod("e1", on="node1", affinity=[term("region", in_("service", "S1"),
                                               namespaces=["default", "subteam2.team2"],
                                               namespace_selector=team_selector())])],
        nodes_(CHINA, INDIA, AZ1), {}, SKIPPED,
        id="existing required affinity in no matching namespace is ignored",
    ),
    pytest.param(
        apod("p", ns="subteam1.team1", labels={"service": "S1"}),
        [apod("e1", on="node1", affinity=[term("region", in_("service", "S1"),
                                               namespaces=["default", "subteam2.team2"],
                                               namespace_selector=team_selector())]),
         apod("e2", on="node2", affinity=[term("region", in_("service", "S1"),
                                               namespaces=["default", "subteam2.team2"],
                                               namespace_selector=team_selector())])],
        nodes_(CHINA, INDIA, AZ1), {}, [100, 100, 0],
        id="existing required affinity whose namespaceSelector selects the pod's namespace",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "args", "want"), SCORE_CASES)
def test_score(
    incoming: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    args: dict[str, Any],
    want: list[int] | str,
) -> None:
    snapshot = snapshot_of(nodes, pods, NAMESPACES)
    plugin = built(args)
    state = CycleState()
    pod_info = info(incoming)
    view = full_view(snapshot)
    status = plugin.pre_score(state, pod_info, view)
    if want == SKIPPED:
        assert status.is_skip()
        return
    assert status.is_success(), status
    raw = plugin.score(state, pod_info, view)
    assert plugin.normalize(state, pod_info, raw).tolist() == want


def test_score_raw_values_are_sums_of_domain_weights() -> None:
    snapshot = snapshot_of(
        nodes_(CHINA_AZ1, CHINA, INDIA),
        [apod("e1", on="node1", labels=S1), apod("e2", on="node3", labels=S2)],
    )
    incoming = info(apod("p", preferred=[STAY_S1_REGION], preferred_anti=[AWAY_S2_AZ,
                                                                           STAY_S2_REGION]))
    plugin = built({})
    state = CycleState()
    view = full_view(snapshot)
    assert plugin.pre_score(state, incoming, view).is_success()
    # node1 and node2 share China (+5), India gets -6 from the S2 pod on node3; that pod's
    # node has no "az" label, so the az term adds nothing.
    assert plugin.score(state, incoming, view).tolist() == [5, 5, -6]


# -- arguments and events -------------------------------------------------------------------
def validate(args: dict[str, Any], path: str) -> None:
    assert ipa.SPEC.validate is not None
    ipa.SPEC.validate({**ipa.SPEC.default_args, **args}, path)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param({"hardPodAffinityWeight": -1}, "hardPodAffinityWeight",
                     id="a negative hardPodAffinityWeight is rejected"),
        pytest.param({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight",
                     id="a hardPodAffinityWeight above 100 is rejected"),
        pytest.param({"hardPodAffinityWeight": "1"}, "hardPodAffinityWeight",
                     id="a hardPodAffinityWeight that is not an integer is rejected"),
        pytest.param({"ignorePreferredTermsOfExistingPods": "yes"},
                     "ignorePreferredTermsOfExistingPods",
                     id="ignorePreferredTermsOfExistingPods must be a boolean"),
        pytest.param({"ignorePreferredTermsOfExistingPods": 1},
                     "ignorePreferredTermsOfExistingPods",
                     id="an integer ignorePreferredTermsOfExistingPods is not a boolean"),
        pytest.param({"hardPodAffinityWeight": True}, "hardPodAffinityWeight",
                     id="a boolean hardPodAffinityWeight is not an integer"),
    ],
)
def test_validate_args_names_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"args.{field}")):
        validate(args, "args")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({}, id="empty args take the defaults"),
        pytest.param({"hardPodAffinityWeight": 0}, id="a zero weight is allowed"),
        pytest.param({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True},
                     id="the upper bound is allowed"),
    ],
)
def test_validate_args_accepts(args: dict[str, Any]) -> None:
    validate(args, "args")


def test_events_to_register() -> None:
    events = built({}).events_to_register()
    got = {(e.event.resource, e.event.action) for e in events}
    assert got == {
        (Resource.ASSIGNED_POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
        (Resource.UNSCHEDULED_POD, Action.UPDATE_POD_LABEL),
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
    }


TARGET = apod("p", affinity=[term("region", in_("service", "securityscan", "value2"))])


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, apod("other", on="n", labels={"aaa": "a"}), QueueingHint.SKIP,
                     id="an added pod not matching the affinity does not requeue"),
        pytest.param(None, apod("other", on="n", labels=SCAN), QueueingHint.QUEUE,
                     id="an added pod matching the affinity requeues"),
        pytest.param(apod("other", on="n", labels={"aaa": "a"}),
                     apod("other", on="n", labels=SCAN), QueueingHint.QUEUE,
                     id="a pod updated to match the affinity requeues"),
        pytest.param(apod("other", on="n", labels={"service": "value2"}),
                     apod("other", on="n", labels=SCAN), QueueingHint.SKIP,
                     id="a pod matching before and after its label change does not requeue"),
        pytest.param(None, apod("other", labels=SCAN), QueueingHint.SKIP,
                     id="an unassigned pod does not requeue"),
    ],
)
def test_assigned_pod_hint(old: Any, new: Any, want: QueueingHint) -> None:
    plugin = built({})
    hint = plugin.events_to_register()[0].hint
    assert hint is not None
    got = hint(info(TARGET), None if old is None else info(old),
               None if new is None else info(new))
    assert got is want


def test_filter_answers_large_batches_without_a_python_loop_per_node() -> None:
    """A smoke check of the vectorised path: 300 nodes, alternating zones."""
    nodes = [anode(f"n{i}", zone=f"z{i % 3}") for i in range(300)]
    pods = [apod(f"e{i}", on=f"n{i}", labels={"app": "web"}) for i in range(0, 300, 3)]
    snapshot = snapshot_of(nodes, pods)
    incoming = info(apod("p", labels={"app": "web"},
                         anti=[term("kubernetes.io/hostname", in_("app", "web"))]))
    got = run_filter(incoming, snapshot)
    assert isinstance(got, dict)
    rejected = [n for n, v in got.items() if v == ANTI]
    assert rejected == [f"n{i}" for i in range(0, 300, 3)]
    assert np.all(np.asarray([v in (OK, ANTI) for v in got.values()]))


def test_existing_anti_affinity_groups_follow_the_cache_between_cycles() -> None:
    """The plugin keeps its grouping of existing pods across cycles; it must see changes."""
    snapshot = snapshot_of(
        [anode("a", zone="z1"), anode("b", zone="z2"), anode("c", zone="z3")],
        [apod("x", on="a", anti=[term("zone", in_("app", "web"))]),
         apod("y", on="b", anti=[term("zone", in_("app", "web"))])],
    )
    plugin = built({})
    incoming = info(apod("p", labels={"app": "web"}))

    def verdicts() -> dict[str, str]:
        state = CycleState()
        _, status = plugin.pre_filter(state, incoming, snapshot)
        if status.is_skip():
            return {n: OK for n in full_view(snapshot).names()}
        result = plugin.filter(state, incoming, full_view(snapshot))
        return {n: OK if c == 0 else EXISTING
                for n, c in zip(full_view(snapshot).names(), result.codes, strict=True)}

    assert verdicts() == {"a": EXISTING, "b": EXISTING, "c": OK}
    snapshot.cache.remove_pod("uid-default-x")
    assert verdicts() == {"a": OK, "b": EXISTING, "c": OK}
    # y changes its terms (a new PodInfo for the same uid) and z arrives on c.
    snapshot.cache.upsert_pod(info(apod("y", on="b", anti=[term("zone", in_("app", "db"))])))
    snapshot.cache.upsert_pod(info(apod("z", on="c", anti=[term("zone", in_("app", "web"))])))
    assert verdicts() == {"a": OK, "b": OK, "c": EXISTING}
    # A plugin reused with another cache starts over.
    other = snapshot_of([anode("a", zone="z1")], [])
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, other)
    assert status.is_skip()


def test_validate_args_words_every_problem_as_upstream() -> None:
    """validation_pluginargs.go ValidateInterPodAffinityArgs; defaults are v1's."""
    assert ipa.SPEC.default_args == {"hardPodAffinityWeight": 1,
                                     "ignorePreferredTermsOfExistingPods": False}
    with pytest.raises(ConfigError) as excinfo:
        validate({"hardPodAffinityWeight": True, "ignorePreferredTermsOfExistingPods": 1,
                  "extra": 1}, "A")
    assert str(excinfo.value).splitlines() == [
        "A.extra: Invalid value: unknown field",
        "A.hardPodAffinityWeight: Invalid value: True: not in valid range [0, 100]",
        "A.ignorePreferredTermsOfExistingPods: Invalid value: 1: must be a boolean",
    ]
