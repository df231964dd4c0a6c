"""The plugins' shared machinery (upstream's framework/plugins/helper) and the contract that
keeps the plugins independent of one another."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from scheduler.cache.node_table import NodeTable
from scheduler.model.pod import PodInfo
from scheduler.model.resources import CPU, MEMORY
from scheduler.plugin_api import NodeTableView
from scheduler.plugins.helper.resource_allocation import ResourceSpec, pod_request, requests_reader
from scheduler.plugins.helper.row_memo import TableFacts
from scheduler.plugins.registry import PLUGIN_MODULES
from scheduler.testing import container, pod
from scheduler.testing import node as make_node

REPO = Path(__file__).resolve().parents[2]


def _contract(name: str) -> dict[str, Any]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"] == name)


def test_the_independence_contract_lists_every_built_in_plugin() -> None:
    """A plugin left out of the list could import another unnoticed."""
    listed = set(_contract("Plugins are independent of one another")["modules"])
    assert listed == {m.__name__ for m in PLUGIN_MODULES}
    forbidden = set(_contract("The plugins' shared machinery imports no plugin")[
        "forbidden_modules"])
    # default_preemption is DefaultPreemption's single-pod half, under pod_group_preemption.
    assert forbidden == listed | {"scheduler.plugins.registry",
                                  "scheduler.plugins.default_preemption"}


def _taints(table: NodeTableView, row: int) -> object:
    return table.names[row], table.taints[row]


def test_table_facts_see_a_changed_fact_of_a_changed_row_and_nothing_else() -> None:
    table = NodeTable()
    table.upsert_node(make_node("a"))
    facts = TableFacts(_taints)
    assert facts.changed(table)  # the first look
    assert not facts.changed(table)
    table.upsert_node(make_node("a", cpu="8"))  # the row changed, its taints did not
    assert not facts.changed(table)
    table.upsert_node(make_node("a", taints=[{"key": "k", "effect": "NoSchedule"}]))
    assert facts.changed(table)
    assert not facts.changed(table)
    table.upsert_node(make_node("b"))  # a new node
    assert facts.changed(table)
    table.remove_node("a")
    assert facts.changed(table)
    assert facts.changed(NodeTable())  # another table


def test_requests_reader_reads_as_pod_request_for_any_resources() -> None:
    """The reader chosen once per plugin (cpu and memory without a loop) gives what
    pod_request gives for each resource, with and without the non-zero defaults."""
    pods = [PodInfo.from_pod(pod("empty", cpu=None, memory=None)),
            PodInfo.from_pod(pod("sized", cpu="250m", memory="1Gi")),
            PodInfo.from_pod(pod("gpu", containers=[
                container(cpu="1", extra={"example.com/gpu": "2"})]))]
    for names in ((CPU, MEMORY), (MEMORY, CPU), (CPU, MEMORY, "example.com/gpu"), (CPU,)):
        specs = [ResourceSpec(name, 1) for name in names]
        for use_requested in (True, False):
            read = requests_reader(specs, use_requested=use_requested)
            for p in pods:
                assert read(p) == tuple(pod_request(p, n, use_requested) for n in names)
