"""NodeAffinity tables, ported from upstream's node_affinity_test.go (v1.37)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import Code, CycleState
from scheduler.framework.registry import ConfigError
from scheduler.plugins import node_affinity as na
from scheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from scheduler.testing import (
    cache_of,
    full_view,
    node,
    pod_info,
    rejected_reasons,
    snapshot_of,
    summary,
)

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK = Code.SUCCESS
SKIP = Code.SKIP


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def term(*expressions: Mapping[str, Any], fields: Sequence[Mapping[str, Any]] = ()
         ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expressions:
        out["matchExpressions"] = [dict(e) for e in expressions]
    if fields:
        out["matchFields"] = [dict(f) for f in fields]
    return out


def required(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": [dict(t) for t in terms]}


def affinity_spec(
    *terms: Mapping[str, Any],
    selector: Mapping[str, str] | None = None,
    preferred: Sequence[tuple[int, Mapping[str, Any]]] = (),
    empty_required: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = dict(selector)
    node_affinity: dict[str, Any] = {}
    if terms or empty_required:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required(*terms)
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": dict(t)} for w, t in preferred
        ]
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return spec


def built(args: Mapping[str, Any]) -> NodeAffinity:
    """The plugin as a profile builds it: args over the defaults, decoded."""
    plugin = na.SPEC.build({**na.SPEC.default_args, **args}, None)  # type: ignore[arg-type]
    assert isinstance(plugin, NodeAffinity)
    return plugin


def added(
    *terms: Mapping[str, Any], preferred: Sequence[tuple[int, Mapping[str, Any]]] = ()
) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if terms:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required(*terms)
    if preferred:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": dict(t)} for w, t in preferred
        ]
    return {"addedAffinity": affinity}


FILTER = [
    pytest.param(affinity_spec(selector={"foo": "bar"}), {}, "node1", {}, OK, UU, ERR_REASON_POD,
                 id="missing labels"),
    pytest.param(affinity_spec(selector={"foo": "bar"}), {"foo": "bar"}, "node1", {}, OK, OK,
                 None, id="same labels"),
    pytest.param(affinity_spec(selector={"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node1",
                 {}, OK, OK, None, id="node labels are superset"),
    pytest.param(affinity_spec(selector={"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "node1",
                 {}, OK, UU, ERR_REASON_POD, id="node labels are subset"),
    pytest.param(affinity_spec(term(expr("foo", "In", "bar", "value2"))), {"foo": "bar"},
                 "node1", {}, OK, OK, None,
                 id="matchExpressions using In operator that matches the existing node"),
    pytest.param(affinity_spec(term(expr("kernel-version", "Gt", "0204"))),
                 {"kernel-version": "0206"}, "node1", {}, OK, OK, None,
                 id="matchExpressions using Gt operator that matches the existing node"),
    pytest.param(affinity_spec(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
                 {"mem-type": "DDR3"}, "node1", {}, OK, OK, None,
                 id="matchExpressions using NotIn operator that matches the existing node"),
    pytest.param(affinity_spec(term(expr("GPU", "Exists"))), {"GPU": "NVIDIA-GRID-K1"}, "node1",
                 {}, OK, OK, None,
                 id="matchExpressions using Exists operator that matches the existing node"),
    pytest.param(affinity_spec(term(expr("foo", "In", "value1", "value2"))), {"foo": "bar"},
                 "node1", {}, OK, UU, ERR_REASON_POD,
                 id="affinity that doesn't match node's labels won't schedule onto the node"),
    pytest.param(affinity_spec(term()), {"foo": "bar"}, "node1", {}, OK, UU, ERR_REASON_POD,
                 id="an empty term is not valid: it matches no objects"),
    pytest.param({}, {"foo": "bar"}, "node1", {}, SKIP, OK, None,
                 id="pod with no affinity will schedule onto a node, PreFilter skips"),
    pytest.param({"affinity": {"nodeAffinity": {}}}, {"foo": "bar"}, "node1", {}, SKIP, OK,
                 None, id="affinity but nil required node selector: PreFilter skips"),
    pytest.param(affinity_spec(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
                 {"GPU": "NVIDIA-GRID-K1"}, "node1", {}, OK, OK, None,
                 id="multiple matchExpressions ANDed that match the existing node"),
    pytest.param(affinity_spec(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
                 {"GPU": "NVIDIA-GRID-K1"}, "node1", {}, OK, UU, ERR_REASON_POD,
                 id="multiple matchExpressions ANDed that don't match the existing node"),
    pytest.param(affinity_spec(term(expr("foo", "In", "bar", "value2")),
                               term(expr("diffkey", "In", "wrong", "value2"))),
                 {"foo": "bar"}, "node1", {}, OK, OK, None,
                 id="multiple NodeSelectorTerms ORed, one matches the node's labels"),
    pytest.param(affinity_spec(term(expr("foo", "Exists")), selector={"foo": "bar"}),
                 {"foo": "bar"}, "node1", {}, OK, OK, None,
                 id="affinity and nodeSelector both satisfied"),
    pytest.param(affinity_spec(term(expr("foo", "Exists")), selector={"foo": "bar"}),
                 {"foo": "barrrrrr"}, "node1", {}, OK, UU, ERR_REASON_POD,
                 id="affinity matches but the nodeSelector is not satisfied"),
    pytest.param(affinity_spec(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
                 {"foo": "bar"}, "node1", {}, OK, UU, ERR_REASON_POD,
                 id="an invalid value in an affinity term never matches"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")])), {}, "node1", {}, OK, OK, None,
                 id="matchFields using In operator that matches the existing node"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")])), {}, "node2", {}, OK, UU,
                 ERR_REASON_POD, id="matchFields using In operator that does not match the node"),
    pytest.param(affinity_spec(term(fields=[name_in("node1"), name_in("node2")]),
                               term(expr("foo", "In", "bar"))),
                 {"foo": "bar"}, "node2", {}, OK, OK, None,
                 id="two terms: matchFields does not match, but matchExpressions matches"),
    pytest.param(affinity_spec(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
                 {"foo": "bar"}, "node2", {}, OK, UU, ERR_REASON_POD,
                 id="one term: matchFields does not match, but matchExpressions matches"),
    pytest.param(affinity_spec(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
                 {"foo": "bar"}, "node1", {}, OK, OK, None,
                 id="one term: both matchFields and matchExpressions match"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")]),
                               term(expr("foo", "In", "not-match-to-bar"))),
                 {"foo": "bar"}, "node2", {}, OK, UU, ERR_REASON_POD,
                 id="two terms: both matchFields and matchExpressions do not match"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
                 {}, "node2", {}, OK, OK, None, id="two terms of node.Name affinity"),
    pytest.param(affinity_spec(term(fields=[name_in("node1"), name_in("node2")])),
                 {"foo": "bar"}, "node2", {}, UU, UU, ERR_REASON_POD,
                 id="two conflicting match field requirements"),
    pytest.param(affinity_spec(term(expr("zone", "In", "foo"))), {"zone": "foo"}, "node2",
                 added(term(fields=[name_in("node2")])), OK, OK, None,
                 id="matches added affinity and pod's node affinity"),
    pytest.param(affinity_spec(term(expr("zone", "In", "bar"))), {"zone": "foo"}, "node2",
                 added(term(fields=[name_in("node2")])), OK, UU, ERR_REASON_POD,
                 id="matches added affinity but not pod's node affinity"),
    pytest.param({}, {"zone": "foo"}, "node2", added(term(expr("zone", "In", "bar"))), OK, UU,
                 ERR_REASON_ENFORCED, id="doesn't match added affinity"),
    pytest.param(affinity_spec(term(expr("zone", "In", "bar"))), {"zone": "foo"}, "node2",
                 added(term(expr("zone", "In", "bar"))), OK, UU, ERR_REASON_ENFORCED,
                 id="the scheduler-enforced reason wins when both fail"),
]


@pytest.mark.parametrize(
    ("spec", "labels", "node_name", "args", "pre_filter_code", "code", "reason"), FILTER
)
def test_filter(
    spec: dict[str, Any], labels: dict[str, str], node_name: str, args: dict[str, Any],
    pre_filter_code: Code, code: Code, reason: str | None,
) -> None:
    snapshot = snapshot_of([node(node_name, labels=labels)])
    view = full_view(snapshot)
    pod = pod_info("p", spec=spec)
    plugin = built(args)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snapshot)
    assert status.code is pre_filter_code
    if pre_filter_code is UU:
        assert status.reasons == (ERR_REASON_CONFLICT,)
    # Filter answers the same whether or not PreFilter ran.
    for s in (state, CycleState()):
        result = plugin.filter(s, pod, view)
        assert Code(int(result.codes[0])) is code
        assert rejected_reasons(result, view.names())[node_name] == ([reason] if reason else [])


PRE_FILTER_RESULT = [
    pytest.param(affinity_spec(term(fields=[name_in("node1")])), frozenset({"node1"}),
                 id="matchFields In restricts the cycle to that node"),
    pytest.param(affinity_spec(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
                 frozenset({"node1"}), id="a term with matchExpressions still pins its names"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
                 frozenset({"node1", "node2"}), id="names of ORed terms are united"),
    pytest.param(affinity_spec(term(fields=[name_in("node1", "node2"), name_in("node2")])),
                 frozenset({"node2"}), id="names within a term are intersected"),
    pytest.param(affinity_spec(term(fields=[name_in("node1")]), term(expr("foo", "In", "bar"))),
                 None, id="a term without node names leaves every node eligible"),
    pytest.param(affinity_spec(term(fields=[{"key": "metadata.name", "operator": "NotIn",
                                             "values": ["node1"]}])),
                 None, id="NotIn on the node name does not restrict"),
    pytest.param(affinity_spec(selector={"foo": "bar"}), None,
                 id="a nodeSelector alone does not restrict"),
]


@pytest.mark.parametrize(("spec", "names"), PRE_FILTER_RESULT)
def test_pre_filter_result(spec: dict[str, Any], names: frozenset[str] | None) -> None:
    snapshot = snapshot_of([node("node1"), node("node2")])
    result, status = built({}).pre_filter(CycleState(), pod_info("p", spec=spec), snapshot)
    assert status.is_success()
    assert (result.node_names if result is not None else None) == names


def test_pre_filter_does_not_skip_with_added_affinity() -> None:
    snapshot = snapshot_of([node("node1")])
    plugin = built(added(term(expr("zone", "In", "a"))))
    _, status = plugin.pre_filter(CycleState(), pod_info("p"), snapshot)
    assert status.is_success()


def test_filter_batch_and_cache_follow_label_changes() -> None:
    cache = cache_of(
        [node("a", labels={"disk": "ssd"}), node("b"), node("c", labels={"disk": "hdd"})]
    )
    pod = pod_info("p", spec=affinity_spec(term(expr("disk", "In", "ssd"))))
    plugin = built({})
    view = full_view(Snapshot(cache))
    result = plugin.filter(CycleState(), pod, view)
    assert rejected_reasons(result, view.names()) == {
        "a": [], "b": [ERR_REASON_POD], "c": [ERR_REASON_POD]
    }
    cache.upsert_node(node("c", labels={"disk": "ssd"}))
    view = full_view(Snapshot(cache))
    result = plugin.filter(CycleState(), pod, view)
    assert rejected_reasons(result, view.names()) == {"a": [], "b": [ERR_REASON_POD], "c": []}


# -- Score ----------------------------------------------------------------------------------
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = [(2, term(expr("foo", "In", "bar")))]
AFFINITY2 = [
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
]

SCORES = [
    pytest.param({}, [LABEL1, LABEL2, LABEL3], {}, None,
                 id="PreScore skips when the pod has no preferred terms and none are added"),
    pytest.param(affinity_spec(preferred=AFFINITY1), [LABEL4, LABEL2, LABEL3], {}, [0, 0, 0],
                 id="no node matches the preferred terms so all nodes' priority is zero"),
    pytest.param(affinity_spec(preferred=AFFINITY1), [LABEL1, LABEL2, LABEL3], {}, [100, 0, 0],
                 id="only node1 matches the preferred scheduling requirements of pod"),
    pytest.param(affinity_spec(preferred=AFFINITY2), [LABEL1, LABEL5, LABEL2], {}, [18, 100, 36],
                 id="all nodes match the preferred terms but with different priorities"),
    pytest.param({}, [LABEL1, LABEL2], added(preferred=AFFINITY1), [100, 0], id="added affinity"),
    pytest.param(affinity_spec(preferred=AFFINITY1), [LABEL1, LABEL2, LABEL5],
                 added(preferred=[(3, term(expr("key", "In", "value")))]), [40, 60, 100],
                 id="added affinity and pod has default affinity"),
    pytest.param(affinity_spec(preferred=[(0, term(expr("foo", "In", "bar"))), (3, term())]),
                 [LABEL1, LABEL2], {}, [0, 0],
                 id="weight-0 and empty preferred terms are dropped, but the pod is scored"),
]


@pytest.mark.parametrize(("spec", "labels", "args", "want"), SCORES)
def test_score(
    spec: dict[str, Any], labels: list[dict[str, str]], args: dict[str, Any],
    want: list[int] | None,
) -> None:
    nodes = [node(f"node{i + 1}", labels=lab) for i, lab in enumerate(labels)]
    snapshot = snapshot_of(nodes)
    view = full_view(snapshot)
    pod = pod_info("p", spec=spec)
    plugin = built(args)
    state = CycleState()
    status = plugin.pre_score(state, pod, view)
    if want is None:
        assert status.code is SKIP
        return
    assert status.is_success()
    assert plugin.normalize(state, pod, plugin.score(state, pod, view)).tolist() == want
    # The priorities are the same even if PreScore is not called.
    fallback = plugin.score(CycleState(), pod, view)
    assert plugin.normalize(state, pod, fallback).tolist() == want


# -- arguments ------------------------------------------------------------------------------
def validate(args: dict[str, Any], path: str) -> None:
    assert na.SPEC.validate is not None
    na.SPEC.validate(args, path)


BAD_ARGS = [
    pytest.param(added(term(expr("foo", "Equals", "bar"))),
                 "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                 ".nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value",
                 id="an invalid operator in the added required terms"),
    pytest.param(added(preferred=[(2, term(expr("invalid key", "In", "bar")))]),
                 "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]",
                 id="an invalid key in the added preferred terms"),
    pytest.param({"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
                 "addedAffinity.requiredDuringSchedulingRequiredDuringExecution: Invalid value: "
                 "unknown field", id="an unknown addedAffinity field"),
    pytest.param({"addedAfinity": {}}, "addedAfinity: Invalid value: unknown field",
                 id="a misspelt argument"),
    pytest.param({"addedAffinity": "zone"},
                 "addedAffinity: Invalid value: 'zone': must be a mapping",
                 id="addedAffinity is a mapping"),
]


@pytest.mark.parametrize(("args", "message"), BAD_ARGS)
def test_validate_args_refuses(args: dict[str, Any], message: str) -> None:
    path = "profiles[0].pluginConfig[2].args"
    with pytest.raises(ConfigError) as err:
        validate({**na.SPEC.default_args, **args}, path)
    assert f"{path}.{message}" in str(err.value)


def test_validate_args_accepts_defaults_and_valid_added_affinity() -> None:
    validate(dict(na.SPEC.default_args), "args")
    validate(added(term(expr("zone", "In", "a")), preferred=AFFINITY1), "args")


# -- events ---------------------------------------------------------------------------------
POD_AFFINITY = affinity_spec(term(expr("foo", "In", "bar")))
ENFORCED = added(term(expr("foo", "In", "bar")))

HINTS = [
    pytest.param({}, None, node("n"), QueueingHint.SKIP, id="skip queue on add"),
    pytest.param({}, None, node("n", labels={"foo": "bar"}), QueueingHint.QUEUE,
                 id="queue on add"),
    pytest.param({}, node("n"), node("n", cpu="8"), QueueingHint.SKIP,
                 id="skip unrelated changes"),
    pytest.param({}, node("n"), node("n", labels={"k": "v"}), QueueingHint.SKIP,
                 id="skip unrelated changes on labels"),
    pytest.param({}, node("n", labels={"foo": "bar"}), node("n", labels={"k": "v"}),
                 QueueingHint.SKIP, id="skip label changes from suitable to unsuitable"),
    pytest.param({}, node("n"), node("n", labels={"foo": "bar"}), QueueingHint.QUEUE,
                 id="queue on labels change that makes the pod schedulable"),
    pytest.param({}, node("n", labels={"foo": "bar"}), node("n", cpu="8", labels={"foo": "bar"}),
                 QueueingHint.SKIP, id="skip unrelated change that keeps the pod schedulable"),
    pytest.param(ENFORCED, None, node("n"), QueueingHint.SKIP,
                 id="skip queue on add with scheduler-enforced node affinity"),
    pytest.param(ENFORCED, None, node("n", labels={"foo": "bar"}), QueueingHint.QUEUE,
                 id="queue on add with scheduler-enforced node affinity"),
]


@pytest.mark.parametrize(("args", "old", "new", "want"), HINTS)
def test_node_change_hint(args: dict[str, Any], old: Any, new: Any, want: QueueingHint) -> None:
    plugin = built(args)
    (registered,) = plugin.events_to_register()
    assert registered.hint is not None
    assert registered.hint(pod_info("p", spec=POD_AFFINITY), summary(old), summary(new)) is want
