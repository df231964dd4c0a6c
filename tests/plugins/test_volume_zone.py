"""VolumeZone (upstream volume_zone_test.go cases that apply)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.volume_zone import ERR_REASON, NO_NAME_NO_CLASS, NO_PV_NAME, SPEC
from scheduler.testing import (
    claim,
    filter_nodes,
    node,
    pod,
    storage_class,
    volume,
    with_claims,
)

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
NODES = [node("a", zone="zone-a"), node("b", zone="zone-b"), node("x"),
         node("beta", labels={BETA_ZONE: "zone-a"})]
BOUND = claim("data", volume_name="pv", bound=True)


def pv(labels: dict[str, str]) -> dict[str, Any]:
    return volume("pv", labels=labels)


@pytest.mark.parametrize(
    ("case", "storage", "want"),
    [
        ("zone a only: other zones refused, a zoneless node passes", [BOUND, pv({ZONE: "zone-a"})],
         {"a": [], "b": [ERR_REASON], "x": [], "beta": [ERR_REASON]}),
        ("a__b lists both zones", [BOUND, pv({ZONE: "zone-a__zone-b"})],
         {"a": [], "b": [], "x": [], "beta": [ERR_REASON]}),
        ("a beta PV key falls back to the node's GA label", [BOUND, pv({BETA_ZONE: "zone-b"})],
         {"a": [ERR_REASON], "b": [], "x": [], "beta": [ERR_REASON]}),
        ("a value with an empty part is ignored", [BOUND, pv({ZONE: "zone-a__"})],
         {"a": [], "b": [], "x": [], "beta": []}),
        ("no zone labels on the PV", [BOUND, pv({})], {"a": [], "b": [], "x": [], "beta": []}),
        ("an unbound WaitForFirstConsumer claim is VolumeBinding's",
         [claim("data", storage_class="local"), storage_class("local")],
         {"a": [], "b": [], "x": [], "beta": []}),
        ("an unbound claim without a class", [claim("data")],
         {n: [NO_NAME_NO_CLASS] for n in ("a", "b", "x", "beta")}),
        ("an unbound Immediate claim", [claim("data", storage_class="fast"),
                                        storage_class("fast", wait_for_first_consumer=False)],
         {n: [NO_PV_NAME] for n in ("a", "b", "x", "beta")}),
        ("the PV is missing", [BOUND],
         {n: ['persistentvolume "pv" not found'] for n in ("a", "b", "x", "beta")}),
        ("the class is missing", [claim("data", storage_class="gone")],
         {n: ['storageclass.storage.k8s.io "gone" not found'] for n in ("a", "b", "x", "beta")}),
    ],
)
def test_filter(case: str, storage: list[dict[str, Any]], want: dict[str, list[str]]) -> None:
    incoming = with_claims(pod("p"), "data")
    assert filter_nodes(SPEC, None, incoming, NODES, storage=storage) == want, case
