"""Facts from k8s.io/api core/v1 toleration_test.go (TestTolerationToleratesTaint and the
numeric comparison table) at v0.36.3; Gt/Lt only tolerate with the alpha gate on."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
    parse_taints,
    parse_tolerations,
    tolerates_any,
)


def tol(key: str = "", op: str = "", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key=key, operator=op, value=value, effect=effect, toleration_seconds=None)


SLA = "node.kubernetes.io/sla"

TOLERATES = [
    pytest.param(tol("foo", "Exists", effect=NO_SCHEDULE), Taint("foo", "", NO_SCHEDULE), True,
                 id="same key and effect with Exists tolerates a taint without a value"),
    pytest.param(tol("foo", "Exists", effect=NO_SCHEDULE), Taint("foo", "bar", NO_SCHEDULE),
                 True, id="same key and effect with Exists tolerates a taint with a value"),
    pytest.param(tol("", "Exists", effect=NO_SCHEDULE), Taint("foo", "bar", NO_SCHEDULE), True,
                 id="an empty key with Exists tolerates every taint of that effect"),
    pytest.param(tol("foo", "Equal", "bar", NO_SCHEDULE), Taint("foo", "bar", NO_SCHEDULE), True,
                 id="same key effect and value with Equal tolerates"),
    pytest.param(tol("foo", "Equal", "value1", NO_SCHEDULE),
                 Taint("foo", "value2", NO_SCHEDULE), False,
                 id="Equal with a different value does not tolerate"),
    pytest.param(tol("foo", "Equal", "bar", NO_SCHEDULE), Taint("foo", "bar", NO_EXECUTE), False,
                 id="Equal with a different effect does not tolerate"),
    pytest.param(tol("foo", "", "bar"), Taint("foo", "bar", NO_EXECUTE), True,
                 id="an empty operator means Equal and an empty effect matches every effect"),
    pytest.param(tol("foo", "", ""), Taint("foo", "bar", NO_SCHEDULE), False,
                 id="an empty operator compares the empty value with the taint's value"),
    pytest.param(tol("", "Exists"), Taint("anything", "x", PREFER_NO_SCHEDULE), True,
                 id="an empty key and effect with Exists tolerates everything"),
    pytest.param(tol("", "Equal", "x"), Taint("k", "x", NO_SCHEDULE), True,
                 id="an empty key with Equal matches any key with that value as upstream does"),
    pytest.param(tol("other", "Exists"), Taint("foo", "", NO_SCHEDULE), False,
                 id="a different key does not tolerate"),
    pytest.param(tol(SLA, "Gt", "750", NO_SCHEDULE), Taint(SLA, "950", NO_SCHEDULE), False,
                 id="Gt does not tolerate while the comparison operators gate is off"),
    pytest.param(tol(SLA, "Lt", "950", NO_SCHEDULE), Taint(SLA, "800", NO_SCHEDULE), False,
                 id="Lt does not tolerate while the comparison operators gate is off"),
    pytest.param(tol("foo", "Bogus", "bar"), Taint("foo", "bar", NO_SCHEDULE), False,
                 id="an unknown operator tolerates nothing"),
]


@pytest.mark.parametrize(("t", "taint", "tolerated"), TOLERATES)
def test_tolerates_at_default_gates(t: Toleration, taint: Taint, tolerated: bool) -> None:
    assert t.tolerates(taint) is tolerated


@pytest.mark.parametrize(
    ("op", "toleration_value", "taint_value", "tolerated"),
    [
        pytest.param("Gt", "950", "800", False, id="Gt with a smaller taint value"),
        pytest.param("Gt", "750", "950", True, id="Gt with a larger taint value"),
        pytest.param("Lt", "800", "950", False, id="Lt with a larger taint value"),
        pytest.param("Lt", "950", "800", True, id="Lt with a smaller taint value"),
        pytest.param("Gt", "950", "950", False, id="Gt with an equal taint value"),
        pytest.param("Gt", "950", "high", False, id="Gt with a taint value that is not a number"),
        pytest.param("Gt", "-100", "-200", False, id="Gt with negative values, taint smaller"),
        pytest.param("Gt", "-200", "-100", True, id="Gt with negative values, taint larger"),
        pytest.param("Gt", "0", "1", True, id="Gt with zero and a positive taint value"),
        pytest.param("Lt", "0", "-1", True, id="Lt with zero and a negative taint value"),
        pytest.param("Gt", "0", "0", False, id="Gt with both zero"),
        pytest.param("Gt", "9223372036854775806", "9223372036854775807", True,
                     id="Gt with int64 max as the taint value"),
        pytest.param("Lt", "-9223372036854775807", "-9223372036854775808", True,
                     id="Lt with int64 min as the taint value"),
        pytest.param("Gt", "abc", "5", False, id="a toleration value that is not a number"),
        pytest.param("Gt", "", "5", False, id="an empty toleration value"),
        pytest.param("Gt", "0100", "500", False, id="a toleration value with a leading zero"),
        pytest.param("Gt", "+100", "500", False, id="a toleration value with a plus sign"),
        pytest.param("Gt", "1.5", "5", False, id="a floating point toleration value"),
        pytest.param("Gt", "-", "5", False, id="a toleration value that is only a minus sign"),
        pytest.param("Gt", "100", "0500", False, id="a taint value with a leading zero"),
        pytest.param("Lt", "100", "+50", False, id="a taint value with a plus sign"),
        pytest.param("Lt", "100", " 50", False, id="a taint value with a space"),
        pytest.param("Gt", "100", "9223372036854775808", False, id="a taint value past int64"),
    ],
)
def test_numeric_operators_with_the_gate_on(
    op: str, toleration_value: str, taint_value: str, tolerated: bool
) -> None:
    t = tol(SLA, op, toleration_value, NO_SCHEDULE)
    assert t.tolerates(Taint(SLA, taint_value, NO_SCHEDULE), True) is tolerated
    assert t.tolerates(Taint(SLA, taint_value, NO_SCHEDULE)) is False


GPU = Taint("gpu", "true", NO_SCHEDULE)
DRAIN = Taint("drain", "", NO_EXECUTE)


@pytest.mark.parametrize(
    ("tolerations", "tolerated"),
    [
        pytest.param((tol("x", "Exists"), tol("gpu", "Equal", "true")), True,
                     id="one matching toleration is enough"),
        pytest.param((tol("x", "Exists"),), False, id="no matching toleration"),
        pytest.param((), False, id="no tolerations tolerate nothing"),
    ],
)
def test_tolerates_any(tolerations: tuple[Toleration, ...], tolerated: bool) -> None:
    assert tolerates_any(tolerations, GPU) is tolerated


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param({"spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule",
                                           "timeAdded": "2024-01-01T00:00:00Z"}]}},
                     (GPU,), id="a taint keeps key value and effect"),
        pytest.param({"spec": {"taints": [{"key": "drain", "effect": "NoExecute"}]}},
                     (DRAIN,), id="a missing value is empty"),
        pytest.param({"spec": {}}, (), id="a node without taints"),
        pytest.param({}, (), id="a node without a spec"),
    ],
)
def test_parse_taints(node: dict[str, Any], expected: tuple[Taint, ...]) -> None:
    assert parse_taints(node) == expected


@pytest.mark.parametrize(
    ("node", "field"),
    [
        pytest.param({"spec": {"taints": {"key": "x"}}}, "spec.taints",
                     id="taints that are not a list"),
        pytest.param({"spec": {"taints": ["x"]}}, "spec.taints[0]", id="a taint that is a string"),
        pytest.param({"spec": {"taints": [{"key": 1}]}}, "spec.taints[0].key",
                     id="a key that is not a string"),
    ],
)
def test_parse_taints_rejects_malformed(node: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_taints(node)
    assert raised.value.field == field


def test_parse_tolerations_reads_every_field() -> None:
    raw = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "gpu", "value": "true"},
    ]
    assert parse_tolerations(raw, "spec.tolerations") == (
        Toleration("node.kubernetes.io/not-ready", "Exists", "", NO_EXECUTE, 300),
        Toleration("gpu", "", "true", "", None),
    )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param([{"key": "k", "operator": "Matches"}], "spec.tolerations[0].operator",
                     id="an unknown operator is invalid"),
        pytest.param([{"key": "k", "tolerationSeconds": "300"}],
                     "spec.tolerations[0].tolerationSeconds",
                     id="toleration seconds that are not an integer"),
        pytest.param({"key": "k"}, "spec.tolerations", id="tolerations that are not a list"),
        pytest.param([["k"]], "spec.tolerations[0]", id="a toleration that is not an object"),
    ],
)
def test_parse_tolerations_rejects_malformed(raw: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_tolerations(raw, "spec.tolerations")
    assert raised.value.field == field
