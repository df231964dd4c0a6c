"""Typed plugin arguments: the dataclass is the schema, errors name the field's path."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import pytest

from scheduler.config import parse_config
from scheduler.framework.args import decode_args, default_args
from scheduler.framework.errors import ConfigError
from scheduler.plugin_api import (
    CycleState,
    FilterResult,
    Handle,
    NodeView,
    PluginSpec,
    PodInfo,
)
from scheduler.plugins.registry import default_registry


@dataclass(frozen=True)
class Tier:
    name: str
    weight: int = 1


@dataclass(frozen=True)
class Args:
    price_label: str = "node.example.com/price"
    max_per_zone: int = 10
    ratio: float = 0.5
    strict: bool = False
    mode: Literal["Label", "Annotation"] = "Label"
    teams: list[str] = field(default_factory=list)
    caps: dict[str, int] = field(default_factory=dict)
    tiers: tuple[Tier, ...] = ()
    fallback: int | None = None

    def problems(self) -> Iterator[tuple[str, str]]:
        if self.max_per_zone < 0:
            yield "max_per_zone", "must be >= 0"


@dataclass(frozen=True)
class NeedsLabel:
    label: str


def test_defaults_are_spelled_as_configuration_spells_them() -> None:
    assert default_args(Args) == {
        "priceLabel": "node.example.com/price", "maxPerZone": 10, "ratio": 0.5,
        "strict": False, "mode": "Label", "teams": [], "caps": {}, "tiers": [],
        "fallback": None,
    }


def test_configuration_is_decoded_into_the_dataclass() -> None:
    got = decode_args(Args, {
        "priceLabel": "p", "maxPerZone": 3, "ratio": 1, "strict": True, "mode": "Annotation",
        "teams": ["a"], "caps": {"a": 2}, "tiers": [{"name": "gold", "weight": 5}],
        "fallback": 7}, "XArgs")
    assert got == Args("p", 3, 1.0, True, "Annotation", ["a"], {"a": 2}, (Tier("gold", 5),), 7)
    assert decode_args(Args, {}, "XArgs") == Args()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"maxPerZone": "3"}, "P.maxPerZone: Invalid value: '3': must be an integer"),
        ({"maxPerZone": True}, "P.maxPerZone: Invalid value: True: must be an integer"),
        ({"ratio": "x"}, "P.ratio: Invalid value: 'x': must be a number"),
        ({"strict": "yes"}, "P.strict: Invalid value: 'yes': must be true or false"),
        ({"mode": "Env"}, "P.mode: Unsupported value: 'Env': supported values: 'Label', "
                          "'Annotation'"),
        ({"teams": "a"}, "P.teams: must be a list"),
        ({"teams": ["a", 1]}, "P.teams[1]: Invalid value: 1: must be a string"),
        ({"caps": {"a": "many"}}, "P.caps.a: Invalid value: 'many': must be an integer"),
        ({"tiers": [{"weight": 2}]}, "P.tiers[0].name: Required value"),
        ({"tiers": [{"name": "x", "colour": 1}]}, "P.tiers[0].colour: unknown field"),
        ({"fallback": "x"}, "P.fallback: Invalid value: 'x': must be an integer"),
        ({"maxPerZone": -1}, "P.maxPerZone: Invalid value: -1: must be >= 0"),
        ({"price_label": "x"}, "P.price_label: unknown field (known: caps, fallback,"),
    ],
)
def test_a_bad_value_names_its_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        decode_args(Args, raw, "P")
    assert str(excinfo.value).startswith(message), str(excinfo.value)


def test_a_field_without_default_is_required() -> None:
    with pytest.raises(ConfigError, match=r"^P\.label: Required value$"):
        decode_args(NeedsLabel, {}, "P")
    assert default_args(NeedsLabel) == {}


def test_every_error_is_reported_not_only_the_first() -> None:
    with pytest.raises(ConfigError) as excinfo:
        decode_args(Args, {"zz": 1, "maxPerZone": "x", "strict": 1,
                           "tiers": [{"name": 1}, {"weight": "w"}]}, "P")
    assert str(excinfo.value).splitlines() == [
        "P.zz: unknown field (known: caps, fallback, maxPerZone, mode, priceLabel, ratio, "
        "strict, teams, tiers)",
        "P.maxPerZone: Invalid value: 'x': must be an integer",
        "P.strict: Invalid value: 1: must be true or false",
        "P.tiers[0].name: Invalid value: 1: must be a string",
        "P.tiers[1].name: Required value",
        "P.tiers[1].weight: Invalid value: 'w': must be an integer",
    ]


@dataclass(frozen=True)
class Point:
    unknown_field_reason = "Invalid value: unknown field"

    at: int = field(default=0, metadata={"type_error": "Invalid value: {value!r}: not in "
                                                       "valid range [0, 100]"})

    def problems(self) -> Iterator[tuple[str, str]]:
        if not 0 <= self.at <= 100:
            yield "at", "not in valid range [0, 100]"


@dataclass(frozen=True)
class Shape:
    points: list[Point] = field(default_factory=list)

    def field_errors(self, path: str) -> Iterator[str]:
        if not self.points:
            yield f"{path}.points: Required value: at least one point must be specified"
        for i in range(1, len(self.points)):
            if self.points[i].at <= self.points[i - 1].at:
                yield f"{path}.points[{i}].at: Invalid value: {self.points[i].at}: unsorted"


@pytest.mark.parametrize(
    ("raw", "lines"),
    [
        pytest.param({}, ["S.points: Required value: at least one point must be specified"],
                     id="field_errors words a whole line"),
        pytest.param({"points": [{"at": 5}, {"at": 5}]},
                     ["S.points[1].at: Invalid value: 5: unsorted"],
                     id="field_errors sees the decoded nested values"),
        pytest.param({"points": [{"at": 101}, {"at": True}, {"on": 1}]},
                     ["S.points[0].at: Invalid value: 101: not in valid range [0, 100]",
                      "S.points[1].at: Invalid value: True: not in valid range [0, 100]",
                      "S.points[2].on: Invalid value: unknown field"],
                     id="nested problems, type_error and unknown_field_reason"),
        pytest.param({"points": ["x"]}, ["S.points[0]: Invalid value: 'x': must be a mapping"],
                     id="a nested dataclass that is not a mapping"),
    ],
)
def test_hooks_and_wording_of_nested_dataclasses(raw: dict[str, Any],
                                                  lines: list[str]) -> None:
    with pytest.raises(ConfigError) as excinfo:
        decode_args(Shape, raw, "S")
    assert str(excinfo.value).splitlines() == lines


@dataclass(frozen=True)
class Strategy:
    kind: str = "Least"
    ratio: Shape | None = field(default=None, metadata={"omitempty": True})


@dataclass(frozen=True)
class WithStrategy:
    added: Shape | None = None
    strategy: Strategy = field(default_factory=Strategy)


@dataclass(frozen=True)
class WithRatio:
    strategy: Strategy = field(default_factory=lambda: Strategy(ratio=Shape([Point(1)])))


def test_omitempty_leaves_a_none_field_out_of_the_defaults() -> None:
    """As Go's omitempty leaves a nil pointer out of the written configuration
    (NodeResourcesFit's scoringStrategy.requestedToCapacityRatio); a None field without it
    is written as null, and a field with it that has a value is written."""
    assert default_args(WithStrategy) == {"added": None, "strategy": {"kind": "Least"}}
    assert default_args(WithRatio) == {
        "strategy": {"kind": "Least", "ratio": {"points": [{"at": 1}]}}}


class Untyped:
    """A plugin of the untyped form: its factory gets the merged mapping."""

    name = "Untyped"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.args = dict(args)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        return FilterResult.all_pass(len(nodes))


def _check_limit(args: Mapping[str, Any], path: str) -> None:
    if args["limit"] < 0:
        raise ConfigError(f"{path}.limit: Invalid value: {args['limit']}: must be >= 0")


def test_the_untyped_form_is_still_taken_for_plugins_written_against_it() -> None:
    """PluginSpec's default_args + validate, part of plugin API 2.0 though no built-in uses
    it: the given args merged over the defaults, validate's error reported with the others'."""
    registry = default_registry()
    registry.register(PluginSpec("Untyped", Untyped, default_args={"limit": 1, "mode": "a"},
                                 validate=_check_limit, points=frozenset({"filter"})))

    def profile(args: dict[str, Any]) -> dict[str, Any]:
        return {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Untyped"}]}},
                              "pluginConfig": [{"name": "Untyped", "args": args}]}]}

    merged = parse_config(profile({"limit": 5}), registry).profiles[0].args["Untyped"]
    assert merged == {"limit": 5, "mode": "a"}
    spec = registry.get("Untyped")
    assert spec is not None
    plugin = spec.build(merged, cast(Handle, None))
    assert isinstance(plugin, Untyped) and plugin.args == merged
    with pytest.raises(ConfigError) as excinfo:
        parse_config(profile({"limit": -1}) | {"parallelism": 0}, registry)
    assert sorted(str(excinfo.value).splitlines()) == [
        "parallelism: Invalid value: 0: must be >= 1",
        "profiles[0].pluginConfig[0].args.limit: Invalid value: -1: must be >= 0",
    ]
