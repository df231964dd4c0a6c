"""NodeVolumeLimits for CSI volumes (upstream csi_test.go cases that apply)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.node_volume_limits import ERR_MAX_VOLUME_COUNT, SPEC, not_installed
from scheduler.testing import (
    claim,
    csi_driver,
    csi_node,
    filter_nodes,
    node,
    pod,
    storage_class,
    volume,
    with_claims,
)

DRIVER = "example.com/fake"
NODES = [node("a"), node("b")]


def csi_claim(name: str, handle: str) -> list[dict[str, Any]]:
    return [claim(name, volume_name=f"pv-{handle}", bound=True),
            volume(f"pv-{handle}", csi=(DRIVER, handle))]


STORAGE = [*csi_claim("c1", "h1"), *csi_claim("c2", "h2"),
           claim("new", storage_class="fake-class"),
           storage_class("fake-class", provisioner=DRIVER)]


@pytest.mark.parametrize(
    ("case", "claims", "bound", "limits", "want"),
    [
        ("a limit of 1 used by another volume", ["c2"],
         [with_claims(pod("q", node_name="a"), "c1")], {"a": 1, "b": 1},
         {"a": [ERR_MAX_VOLUME_COUNT], "b": []}),
        ("the same volume is not counted twice", ["c1"],
         [with_claims(pod("q", node_name="a"), "c1")], {"a": 1, "b": 1}, {"a": [], "b": []}),
        ("an unbound claim counts under its class's provisioner", ["new"],
         [with_claims(pod("q", node_name="a"), "c1")], {"a": 1, "b": 1},
         {"a": [ERR_MAX_VOLUME_COUNT], "b": []}),
        ("no CSINode: no limit", ["c2"], [with_claims(pod("q", node_name="a"), "c1")], {},
         {"a": [], "b": []}),
        ("a limit of 0 refuses any new volume", ["c1"], [], {"a": 0, "b": 2},
         {"a": [ERR_MAX_VOLUME_COUNT], "b": []}),
    ],
)
def test_filter(case: str, claims: list[str], bound: list[dict[str, Any]],
                limits: dict[str, int], want: dict[str, list[str]]) -> None:
    storage = [*STORAGE, *(csi_node(n, {DRIVER: c}) for n, c in limits.items())]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), *claims), NODES, bound, storage=storage)
    assert got == want, case


def test_a_driver_that_must_be_installed_refuses_nodes_without_it() -> None:
    storage = [*STORAGE, csi_node("a", {DRIVER: None}),
               csi_driver(DRIVER, prevent_if_missing=True)]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "c1"), NODES, storage=storage)
    assert got == {"a": [], "b": [not_installed(DRIVER)]}
