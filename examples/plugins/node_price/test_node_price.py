"""NodePrice, tested with the testing kit only (scheduler.testing)."""

from __future__ import annotations

from typing import Any

import pytest
from node_price import SPEC

from scheduler.plugin_api import ConfigError
from scheduler.testing import node, pod, schedule, score_nodes

KEY = "node.example.com/hourly-price"


def priced(name: str, price: str | None, *, annotation: bool = False, **kw: Any) -> dict[str, Any]:
    labels = {KEY: price} if price is not None and not annotation else {}
    obj = node(name, labels=labels, **kw)
    if annotation and price is not None:
        obj["metadata"]["annotations"] = {KEY: price}
    return obj


@pytest.mark.parametrize(
    ("case", "args", "nodes", "want"),
    [
        ("cheapest 100, dearest 0, linear between", {},
         [priced("a", "0.10"), priced("b", "0.30"), priced("c", "0.20")],
         {"a": 100, "b": 0, "c": 50}),
        ("no price, or not a number, counts as dearest", {},
         [priced("a", "1"), priced("b", None), priced("c", "cheap"), priced("d", "2")],
         {"a": 100, "b": 0, "c": 0, "d": 0}),
        ("a negative price is not a price", {},
         [priced("a", "-1"), priced("b", "3")], {"a": 0, "b": 100}),
        ("all the same price", {}, [priced("a", "5"), priced("b", "5")], {"a": 100, "b": 100}),
        ("nothing priced", {}, [priced("a", None), priced("b", None)], {"a": 0, "b": 0}),
        ("from annotations", {"source": "Annotation"},
         [priced("a", "0.5", annotation=True), priced("b", "0.25", annotation=True)],
         {"a": 0, "b": 100}),
        ("annotations asked for, labels ignored", {"source": "Annotation"},
         [priced("a", "0.5"), priced("b", "0.25", annotation=True)], {"a": 0, "b": 100}),
    ],
)
def test_scores(case: str, args: dict[str, Any], nodes: list[dict[str, Any]],
                want: dict[str, int]) -> None:
    assert score_nodes(SPEC, args, pod("p"), nodes) == want, case


def test_with_the_default_plugins_pods_go_to_the_cheapest_node_that_fits() -> None:
    config = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
        "score": {"enabled": [{"name": "NodePrice", "weight": 10}]}}}]}
    nodes = [priced("dear", "3.0", cpu="16"), priced("cheap", "0.5", cpu="2"),
             priced("mid", "1.0", cpu="4")]
    pods = [pod("small", cpu="1"), pod("big", cpu="3")]
    # big does not fit on "cheap" next to small, so it takes the next cheapest.
    assert schedule(config, nodes, pods, plugins=[SPEC]) == {"small": "cheap", "big": "mid"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"key": "no good/key/x"}, r"args\.key: Invalid value: 'no good/key/x'"),
        ({"source": "Env"}, r"args\.source: Unsupported value: 'Env': supported values: "
                            "'Label', 'Annotation'"),
    ],
)
def test_bad_arguments_are_refused(args: dict[str, Any], message: str) -> None:
    config = {"profiles": [{"schedulerName": "s", "pluginConfig": [
        {"name": "NodePrice", "args": args}], "plugins": {
        "score": {"enabled": [{"name": "NodePrice"}]}}}]}
    with pytest.raises(ConfigError, match=message):
        schedule(config, [node("n")], [], plugins=[SPEC])
