"""Facts from apimachinery labels/selector.go and metav1 LabelSelectorAsSelector, and from
component-helpers nodeaffinity_test.go (TestNodeSelectorMatch, TestPreferredSchedulingTermsScore,
TestPodMatchesNodeSelectorAndAffinityTerms)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.selectors import (
    EVERYTHING,
    NOTHING,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    parse_node_selector,
    parse_preferred_terms,
)

R = Requirement


@pytest.mark.parametrize(
    ("req", "labels", "matches"),
    [
        pytest.param(R("a", "In", ("x", "y")), {"a": "y"}, True, id="In matches a listed value"),
        pytest.param(R("a", "In", ("x",)), {"a": "z"}, False, id="In rejects an unlisted value"),
        pytest.param(R("a", "In", ("x",)), {}, False, id="In rejects a missing key"),
        pytest.param(R("a", "NotIn", ("x",)), {"a": "z"}, True,
                     id="NotIn matches an unlisted value"),
        pytest.param(R("a", "NotIn", ("x",)), {"a": "x"}, False,
                     id="NotIn rejects a listed value"),
        pytest.param(R("a", "NotIn", ("x",)), {}, True, id="NotIn matches a missing key"),
        pytest.param(R("a", "Exists"), {"a": ""}, True, id="Exists matches an empty value"),
        pytest.param(R("a", "Exists"), {"b": "x"}, False, id="Exists rejects a missing key"),
        pytest.param(R("a", "DoesNotExist"), {}, True, id="DoesNotExist matches a missing key"),
        pytest.param(R("a", "DoesNotExist"), {"a": "x"}, False,
                     id="DoesNotExist rejects a present key"),
        pytest.param(R("n", "Gt", ("5",)), {"n": "6"}, True, id="Gt compares integers"),
        pytest.param(R("n", "Gt", ("5",)), {"n": "5"}, False, id="Gt is strict"),
        pytest.param(R("n", "Gt", ("5",)), {"n": "10"}, True,
                     id="Gt compares numerically not lexically"),
        pytest.param(R("n", "Lt", ("5",)), {"n": "-3"}, True,
                     id="Lt accepts a negative label value"),
        pytest.param(R("n", "Lt", ("5",)), {"n": "007"}, False,
                     id="Lt reads leading zeros like ParseInt"),
        pytest.param(R("n", "Gt", ("5",)), {"n": "abc"}, False,
                     id="Gt rejects a label value that is not an integer"),
        pytest.param(R("n", "Gt", ("5",)), {}, False, id="Gt rejects a missing key"),
        pytest.param(R("n", "Gt", ("5", "6")), {"n": "9"}, False,
                     id="Gt with two values matches nothing"),
        pytest.param(R("n", "Lt", ("x",)), {"n": "1"}, False,
                     id="Lt with a value that is not an integer matches nothing"),
        pytest.param(R("a", "Equals", ("x",)), {"a": "x"}, False,
                     id="an unknown operator matches nothing"),
    ],
)
def test_requirement_matches(req: Requirement, labels: dict[str, str], matches: bool) -> None:
    assert req.matches(labels) is matches


PARSE_CASES = [
    pytest.param(None, {}, False, id="a nil selector matches nothing, not even no labels"),
    pytest.param({}, {"any": "thing"}, True, id="an empty selector matches everything"),
    pytest.param({"matchLabels": {}, "matchExpressions": []}, {}, True,
                 id="empty matchLabels and matchExpressions match everything"),
    pytest.param({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True,
                 id="matchLabels match a superset of labels"),
    pytest.param({"matchLabels": {"app": "web"}}, {"app": "db"}, False,
                 id="matchLabels reject a different value"),
    pytest.param({"matchLabels": {"app": "web"},
                  "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
                 {"app": "web"}, True, id="matchLabels and matchExpressions are ANDed"),
    pytest.param({"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                 {"tier": "b"}, True, id="an Exists expression needs no values"),
    pytest.param({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist",
                                        "values": None}]},
                 {"app": "x"}, True, id="a null values list counts as empty"),
]


@pytest.mark.parametrize(("raw", "labels", "matches"), PARSE_CASES)
def test_label_selector_parse_and_match(
    raw: dict[str, Any] | None, labels: dict[str, str], matches: bool
) -> None:
    assert LabelSelector.parse(raw, "spec.selector").matches(labels) is matches


def test_nil_and_empty_selectors_are_the_shared_constants() -> None:
    assert LabelSelector.parse(None, "f") is LabelSelector.NOTHING is NOTHING
    assert LabelSelector.parse({}, "f") is LabelSelector.EVERYTHING is EVERYTHING
    assert NOTHING.matches_nothing and not NOTHING.matches_everything
    assert EVERYTHING.matches_everything and not EVERYTHING.requirements


def test_match_labels_become_in_requirements() -> None:
    selector = LabelSelector.parse({"matchLabels": {"app": "web"}}, "f")
    assert selector.requirements == (R("app", "In", ("web",)),)


def test_equal_selectors_are_equal_keys_whatever_the_order() -> None:
    a = LabelSelector.parse({"matchLabels": {"b": "2", "a": "1"},
                             "matchExpressions": [{"key": "c", "operator": "In",
                                                   "values": ["y", "x", "x"]}]}, "f")
    b = LabelSelector.parse({"matchExpressions": [{"key": "c", "operator": "In",
                                                   "values": ["x", "y"]}],
                             "matchLabels": {"a": "1", "b": "2"}}, "f")
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
                     "sel.matchExpressions[0].operator",
                     id="Gt is not a label selector operator"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]},
                     "sel.matchExpressions[0].operator",
                     id="operators are case sensitive"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In"}]},
                     "sel.matchExpressions[0].values", id="In needs at least one value"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
                     "sel.matchExpressions[0].values", id="NotIn needs at least one value"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                     "sel.matchExpressions[0].values", id="Exists takes no values"),
        pytest.param({"matchExpressions": [{"key": "a b", "operator": "Exists"}]},
                     "sel.matchExpressions[0].key", id="an invalid key is rejected"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok",
                                                                                   "no way"]}]},
                     "sel.matchExpressions[0].values[1]", id="an invalid value is rejected"),
        pytest.param({"matchLabels": {"app": "-web"}}, "sel.matchLabels.app",
                     id="an invalid matchLabels value is rejected"),
        pytest.param({"matchLabels": {"bad key": "x"}}, "sel.matchLabels.bad key",
                     id="an invalid matchLabels key is rejected"),
        pytest.param({"matchLabels": {"n": 5}}, "sel.matchLabels.n",
                     id="a matchLabels value that is not a string is rejected"),
        pytest.param({"matchExpressions": {"key": "a"}}, "sel.matchExpressions",
                     id="matchExpressions that are not a list are rejected"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
                     "sel.matchExpressions[0].values",
                     id="values that are a string instead of a list are rejected"),
        pytest.param(["app"], "sel", id="a selector that is not an object is rejected"),
    ],
)
def test_invalid_label_selectors_raise_with_the_field(raw: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        LabelSelector.parse(raw, "sel")
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("selector", "pod_labels", "keys", "expected"),
    [
        pytest.param(LabelSelector((R("app", "In", ("web",)),)), {"hash": "abc"}, ["hash"],
                     LabelSelector((R("app", "In", ("web",)), R("hash", "In", ("abc",)))),
                     id="a key on the pod adds an In requirement with its value"),
        pytest.param(LabelSelector((R("app", "In", ("web",)),)), {}, ["hash"],
                     LabelSelector((R("app", "In", ("web",)),)),
                     id="a key the pod lacks is ignored"),
        pytest.param(EVERYTHING, {"hash": "abc"}, ["hash"],
                     LabelSelector((R("hash", "In", ("abc",)),)),
                     id="an empty selector becomes the pod's label set"),
        pytest.param(NOTHING, {"hash": "abc"}, ["hash"], NOTHING,
                     id="a nil selector stays match-nothing"),
    ],
)
def test_with_match_label_keys(
    selector: LabelSelector, pod_labels: dict[str, str], keys: list[str],
    expected: LabelSelector,
) -> None:
    assert selector.with_match_label_keys(pod_labels, keys) == expected


def term(*, exprs: tuple[Requirement, ...] = (), fields: tuple[Requirement, ...] = ()
         ) -> NodeSelectorTerm:
    return NodeSelectorTerm(exprs, fields)


NAME_IN_HOST_1 = R("metadata.name", "In", ("host_1",))
LABEL_1 = R("label_1", "In", ("label_1_val",))

TERM_CASES = [
    pytest.param(term(exprs=(LABEL_1,), fields=(NAME_IN_HOST_1,)), {}, "host_1", False,
                 id="the node matches the field selector but not the labels"),
    pytest.param(term(exprs=(LABEL_1,), fields=(NAME_IN_HOST_1,)),
                 {"label_1": "label_1_val"}, "host_1", True,
                 id="the node matches both the field selector and the labels"),
    pytest.param(term(fields=(NAME_IN_HOST_1,)), {}, "host_2", False,
                 id="matchFields In rejects another node"),
    pytest.param(term(fields=(R("metadata.name", "NotIn", ("host_1",)),)), {}, "host_2", True,
                 id="matchFields NotIn accepts another node"),
    pytest.param(term(fields=(R("metadata.name", "NotIn", ("host_1",)),)), {}, "host_1", False,
                 id="matchFields NotIn rejects the named node"),
    pytest.param(term(fields=(NAME_IN_HOST_1,)), {}, "", True,
                 id="matchFields are skipped for a node without a name"),
    pytest.param(term(fields=(R("metadata.uid", "In", ("x",)),)), {}, "host_1", False,
                 id="a field other than metadata.name reads as empty"),
    pytest.param(term(fields=(R("metadata.name", "In", ("host_1", "host_2")),)), {}, "host_1",
                 False, id="matchFields with two values is invalid and matches nothing"),
    pytest.param(term(fields=(R("metadata.name", "Exists"),)), {}, "host_1", False,
                 id="matchFields with Exists is invalid and matches nothing"),
    pytest.param(term(exprs=(R("invalid key", "In", ("label_value",)),)),
                 {"invalid key": "label_value"}, "n", False,
                 id="an invalid label key makes the term match nothing"),
    pytest.param(term(exprs=(R("foo", "In", ("bar baz",)),)), {"foo": "bar baz"}, "n", False,
                 id="an invalid label value makes the term match nothing"),
    pytest.param(term(exprs=(R("foo", "Gt", ("abc",)),)), {"foo": "1"}, "n", False,
                 id="Gt with a value that is not an integer makes the term match nothing"),
    pytest.param(term(exprs=(R("foo", "Gt", ("-1",)),)), {"foo": "1"}, "n", False,
                 id="Gt with a negative value is not a valid label value so matches nothing"),
    pytest.param(term(exprs=(R("foo", "Gt", ("0",)),)), {"foo": "1"}, "n", True,
                 id="Gt matches a larger integer label"),
    pytest.param(term(exprs=(R("foo", "In"),)), {}, "n", False,
                 id="In without values makes the term match nothing"),
    pytest.param(term(exprs=(R("foo", "NotIn"),)), {}, "n", False,
                 id="NotIn without values makes the term match nothing"),
    pytest.param(term(exprs=(R("foo", "Bogus", ("x",)),)), {"foo": "x"}, "n", False,
                 id="an unsupported operator makes the term match nothing"),
    pytest.param(term(), {}, "n", False, id="an empty term matches nothing"),
    pytest.param(term(exprs=(R("a", "In", ("1",)), R("b", "Exists"))), {"a": "1", "b": ""},
                 "n", True, id="expressions in one term are ANDed"),
    pytest.param(term(exprs=(R("a", "In", ("1",)), R("b", "Exists"))), {"a": "1"}, "n", False,
                 id="one failing expression fails the term"),
]


@pytest.mark.parametrize(("t", "labels", "node_name", "matches"), TERM_CASES)
def test_node_selector_term_matches(
    t: NodeSelectorTerm, labels: dict[str, str], node_name: str, matches: bool
) -> None:
    assert t.matches(labels, node_name) is matches


@pytest.mark.parametrize(
    ("t", "error"),
    [
        pytest.param(term(exprs=(LABEL_1,), fields=(NAME_IN_HOST_1,)), None,
                     id="a valid term has no error"),
        pytest.param(term(fields=(R("metadata.name", "In", ("a", "b")),)),
                     "matchFields[0].values: must have one element",
                     id="the error of a two-value field requirement is upstream's"),
        pytest.param(term(exprs=(R("k", "Bogus"),)),
                     'matchExpressions[0].operator: Unsupported value: "Bogus"',
                     id="the error names an unsupported operator"),
        pytest.param(term(), "an empty term matches no objects", id="an empty term says so"),
    ],
)
def test_node_selector_term_error(t: NodeSelectorTerm, error: str | None) -> None:
    assert t.error == error


@pytest.mark.parametrize(
    ("selector", "labels", "node_name", "matches"),
    [
        pytest.param(NodeSelector(()), {}, "n", False, id="no terms match nothing"),
        pytest.param(
            NodeSelector((term(exprs=(LABEL_1,)), term(fields=(NAME_IN_HOST_1,)))),
            {}, "host_1", True, id="the second term matches"),
        pytest.param(
            NodeSelector((term(fields=(R("metadata.name", "In", ("host_1", "host_2")),)),
                          term(exprs=(R("invalid key", "In", ("v",)),)),
                          term(fields=(NAME_IN_HOST_1,)))),
            {}, "host_1", True, id="a valid term matches beside invalid ones"),
        pytest.param(
            NodeSelector((term(exprs=(R("invalid key", "In", ("v",)),)),)),
            {"invalid key": "v"}, "host_1", False, id="only an invalid term matches nothing"),
    ],
)
def test_node_selector_ors_its_terms(
    selector: NodeSelector, labels: dict[str, str], node_name: str, matches: bool
) -> None:
    assert selector.matches(labels, node_name) is matches


def test_parse_node_selector_drops_empty_terms_and_keeps_invalid_ones() -> None:
    raw = {"nodeSelectorTerms": [
        {},
        {"matchExpressions": []},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]},
    ]}
    selector = parse_node_selector(raw, "f")
    assert selector is not None
    assert [t.error is None for t in selector.terms] == [True, False]
    assert selector.terms[0].match_expressions == (R("zone", "In", ("a", "b")),)
    assert selector.matches({"zone": "b"}, "n9")
    assert not selector.matches({}, "n1")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, None, id="no node selector is None"),
        pytest.param({}, NodeSelector(()), id="no terms is a selector that matches nothing"),
        pytest.param({"nodeSelectorTerms": [{}]}, NodeSelector(()),
                     id="only empty terms leave a selector that matches nothing"),
    ],
)
def test_parse_node_selector_edges(raw: dict[str, Any] | None,
                                   expected: NodeSelector | None) -> None:
    assert parse_node_selector(raw, "f") == expected


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"nodeSelectorTerms": {"a": 1}}, "na.nodeSelectorTerms",
                     id="terms that are not a list are rejected"),
        pytest.param({"nodeSelectorTerms": ["x"]}, "na.nodeSelectorTerms[0]",
                     id="a term that is not an object is rejected"),
        pytest.param({"nodeSelectorTerms": [{"matchExpressions": [{"key": 1}]}]},
                     "na.nodeSelectorTerms[0].matchExpressions[0].key",
                     id="a key that is not a string is rejected"),
        pytest.param({"nodeSelectorTerms": [{"matchFields": [{"key": "k", "values": [1]}]}]},
                     "na.nodeSelectorTerms[0].matchFields[0].values",
                     id="values that are not strings are rejected"),
    ],
)
def test_parse_node_selector_rejects_malformed_shapes(raw: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_node_selector(raw, "na")
    assert raised.value.field == field


def _pref(weight: int, **term: Any) -> dict[str, Any]:
    return {"weight": weight, "preference": term}


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("raw", "labels", "node_name", "score"),
    [
        pytest.param(
            [_pref(5, matchFields=[_expr("metadata.name", "In", "host_1")]),
             _pref(7, matchExpressions=[_expr("unknown_label", "In", "unknown_label_val")]),
             _pref(11, matchExpressions=[_expr("label_1", "In", "label_1_val")])],
            {"label_1": "label_1_val"}, "host_1", 16,
            id="the first and third terms match so their weights add up",
        ),
        pytest.param(
            [_pref(0, matchFields=[_expr("metadata.name", "In", "host_1", "host_2")])],
            {}, "host_1", 0,
            id="an invalid term with no weight is skipped without an error",
        ),
        pytest.param([_pref(3)], {}, "host_1", 0, id="an empty preference is skipped"),
        pytest.param(None, {}, "n", 0, id="no preferred terms score nothing"),
    ],
)
def test_parse_preferred_terms(
    raw: list[Any] | None, labels: dict[str, str], node_name: str, score: int
) -> None:
    terms = parse_preferred_terms(raw, "f")
    assert sum(t.weight for t in terms if t.term.matches(labels, node_name)) == score
    assert all(t.weight != 0 for t in terms)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param([_pref(1, matchFields=[_expr("metadata.name", "In", "host_1", "host_2")])],
                     "pref[0].preference", id="matchFields with two values is an error"),
        pytest.param([_pref(1, matchExpressions=[_expr("label_1", "In", "v")]),
                      _pref(1, matchExpressions=[_expr("invalid key", "In", "v")])],
                     "pref[1].preference", id="an invalid key in a later term is an error"),
        pytest.param([{"weight": "1", "preference": {}}], "pref[0].weight",
                     id="a weight that is not an integer is an error"),
    ],
)
def test_invalid_preferred_terms_raise(raw: list[Any], field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_preferred_terms(raw, "pref")
    assert raised.value.field == field
