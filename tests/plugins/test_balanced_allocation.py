"""NodeResourcesBalancedAllocation tables, ported from upstream's balanced_allocation_test.go
(v1.37: the score rewards the balance the pod improves)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.framework.interface import Code, CycleState
from scheduler.framework.registry import ConfigError
from scheduler.plugins import balanced_allocation as ba
from scheduler.plugins.balanced_allocation import (
    BalancedAllocation,
    BalancedAllocationArgs,
    balanced_resource_score,
    balanced_resource_scorer,
)
from scheduler.testing import (
    container,
    full_view,
    node,
    pod,
    pod_info,
    scheduler_of,
    snapshot_of,
    view_with,
)
from tests.plugins import test_node_resources_fit_dra as dra_cases

GPU = "nvidia.com/gpu"
CPU_MEM_GPU = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                             {"name": GPU, "weight": 1}]}


def validate(args: dict[str, Any], path: str) -> None:
    assert ba.SPEC.validate is not None
    ba.SPEC.validate(args, path)


def built(args: dict[str, Any]) -> BalancedAllocation:
    """The plugin as a profile builds it: args over the defaults, decoded."""
    plugin = ba.SPEC.build({**ba.SPEC.default_args, **args}, None)  # type: ignore[arg-type]
    assert isinstance(plugin, BalancedAllocation)
    return plugin


def cm(cpu: str | None, mem: str | None = None, gpu: str | None = None) -> dict[str, Any]:
    return container(cpu=cpu, memory=mem, extra={GPU: gpu} if gpu is not None else None)


def mk_node(name: str, milli_cpu: int, memory: int, gpu: int | None = None) -> dict[str, Any]:
    return node(name, cpu=f"{milli_cpu}m", memory=str(memory),
                extra={GPU: str(gpu)} if gpu is not None else None)


def with_names(containers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**ct, "name": f"c{i}"} for i, ct in enumerate(containers)]


CASES = [
    pytest.param([cm("1000m", "2000"), cm("2000m", "3000")],
                 [mk_node("node1", 4000, 10000), mk_node("node2", 6000, 10000)], [[], []], {},
                 [68, 75], id="nothing scheduled, resources requested, differently sized nodes"),
    pytest.param([cm("1000m", "2000"), cm("2000m", "3000")],
                 [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 20000)],
                 [[cm("1000m"), cm("2000m")], [cm("1000m", "2000"), cm("2000m", "3000")]], {},
                 [73, 74], id="resources requested, pods scheduled with resources"),
    pytest.param([cm("1000m", "2000"), cm("2000m", "3000")],
                 [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 50000)],
                 [[cm("1000m"), cm("2000m")], [cm("1000m", "2000"), cm("2000m", "3000")]], {},
                 [73, 70],
                 id="resources requested, pods scheduled with resources, differently sized nodes"),
    pytest.param([cm(None, "2000"), cm(None, "3000")],
                 [mk_node("node1", 3000, 5000), mk_node("node2", 3000, 5000)],
                 [[cm("1000m"), cm("2000m")], []], {}, [100, 50],
                 id="pods scheduled with resources, nodes to reach min/max score"),
    pytest.param([cm("1000m"), cm("2000m")],
                 [mk_node("node1", 6000, 10000), mk_node("node2", 6000, 10000)],
                 [[cm("1000m"), cm("2000m")], [cm("1000m", "2000"), cm("2000m", "3000")]], {},
                 [62, 62], id="requested resources at node capacity"),
    pytest.param([cm("0", "0", "1")],
                 [mk_node("node1", 3500, 40000, 8), mk_node("node2", 3500, 40000, 8)],
                 [[cm("1000m", "2000"), cm("2000m", "3000", "3")],
                  [cm("1000m", "2000"), cm("2000m", "3000")]], CPU_MEM_GPU, [75, 76],
                 id="scalar resource is included in the score if the pod requests it"),
    pytest.param([cm("1000m", "2000"), cm("2000m", "3000")],
                 [mk_node("node1", 3500, 40000, 8), mk_node("node2", 3500, 40000)], [[], []],
                 CPU_MEM_GPU, [56, 56],
                 id="scalar resource is not included in the score if the pod doesn't request it"),
]


@pytest.mark.parametrize(("containers", "nodes", "existing", "args", "want"), CASES)
def test_score(
    containers: list[dict[str, Any]], nodes: list[dict[str, Any]],
    existing: list[list[dict[str, Any]]], args: dict[str, Any], want: list[int],
) -> None:
    pods = [
        pod(f"e{i}", containers=with_names(cts), node_name=f"node{i + 1}")
        for i, cts in enumerate(existing)
        if cts
    ]
    snapshot = snapshot_of(nodes, pods)
    view = full_view(snapshot)
    incoming = pod_info("p", containers=with_names(containers))
    plugin = built(args)
    state = CycleState()
    assert plugin.pre_score(state, incoming, view).is_success()
    scores = plugin.normalize(state, incoming, plugin.score(state, incoming, view))
    assert scores.tolist() == want
    # Whether or not PreScore ran, the result is the same.
    assert plugin.score(CycleState(), incoming, view).tolist() == want


BEST_EFFORT = [
    pytest.param([container()], id="nothing requested: skip in PreScore"),
    pytest.param([cm("0", "0")], id="explicit zero requests are best-effort too"),
]


@pytest.mark.parametrize("containers", BEST_EFFORT)
def test_pre_score_skips_best_effort_pods(containers: list[dict[str, Any]]) -> None:
    snapshot = snapshot_of([mk_node("node1", 4000, 10000)])
    incoming = pod_info("p", containers=with_names(containers))
    status = BalancedAllocation(BalancedAllocationArgs()).pre_score(
        CycleState(), incoming, full_view(snapshot)
    )
    assert status.code is Code.SKIP


def test_pre_score_does_not_skip_a_pod_requesting_only_a_configured_scalar() -> None:
    snapshot = snapshot_of([mk_node("node1", 4000, 10000, 8)])
    incoming = pod_info("p", containers=with_names([cm(None, None, "1")]))
    plugin = built(CPU_MEM_GPU)
    assert plugin.pre_score(CycleState(), incoming, full_view(snapshot)).is_success()


def test_score_counts_hypothetical_pods() -> None:
    # node2 as in "resources requested, pods scheduled with resources" scores 74. With a
    # nominated pod of 10000 bytes counted on it: without the pod cpu 0.3, memory 0.75 (77);
    # with it cpu 0.6, memory 1.0 (80): 50 + (50 + 80 - 77) / 2 = 76. Taking the nominated pod
    # out again restores 74.
    existing = pod("e", containers=with_names([cm("1000m", "2000"), cm("2000m", "3000")]),
                   node_name="node2")
    snapshot = snapshot_of([mk_node("node2", 10000, 20000)], [existing])
    incoming = pod_info("p", containers=with_names([cm("1000m", "2000"), cm("2000m", "3000")]))
    nominated = pod_info("nominated", containers=with_names([cm(None, "10000")]))
    plugin = BalancedAllocation(BalancedAllocationArgs())
    assert plugin.score(CycleState(), incoming, full_view(snapshot)).tolist() == [74]
    added = view_with(snapshot, "node2", added=[nominated])
    assert plugin.score(CycleState(), incoming, added).tolist() == [76]
    both = view_with(snapshot, "node2", added=[nominated], removed=[nominated])
    assert plugin.score(CycleState(), incoming, both).tolist() == [74]


BAD_ARGS = [
    pytest.param({"resources": [{"name": "cpu", "weight": 2}]},
                 "resources[0].weight: Invalid value: 2: must be 1", id="weights must be 1"),
    pytest.param({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
                 'resources[1].name: Duplicate value: "cpu"', id="duplicate resources"),
    pytest.param({"resource": []}, "resource: Invalid value: unknown field",
                 id="a misspelt field is refused"),
    pytest.param({"resources": [{"name": "cpu", "weight": True}]},
                 "resources[0].weight: Invalid value: True: must be 1", id="a boolean weight"),
    pytest.param({"resources": [{"weight": 1}]},
                 "resources[0].name: Required value: must be a non-empty string",
                 id="a resource needs a name"),
    pytest.param({"resources": ["cpu"]},
                 "resources[0]: Invalid value: 'cpu': must be a mapping with name and weight",
                 id="a resource is a mapping"),
    pytest.param({"resources": "cpu"}, "resources: Invalid value: 'cpu': must be a list",
                 id="resources is a list"),
]


@pytest.mark.parametrize(("args", "message"), BAD_ARGS)
def test_validate_args_refuses(args: dict[str, Any], message: str) -> None:
    path = "profiles[0].pluginConfig[0].args"
    with pytest.raises(ConfigError) as err:
        validate({**ba.SPEC.default_args, **args}, path)
    assert f"{path}.{message}" in str(err.value)


def test_args_defaulting() -> None:
    validate({"resources": []}, "args")
    validate({"resources": [{"name": "cpu", "weight": 0}]}, "args")
    validate({"resources": None}, "args")
    plugin = built({"resources": []})
    assert [(r.name, r.weight) for r in plugin.resources] == [("cpu", 1), ("memory", 1)]


def _upstream_score(requested: list[int], allocatable: list[int]) -> int:
    """balancedResourceScore for one node, as upstream writes it (Go float64 arithmetic)."""
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a != 0]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * 100)


@pytest.mark.parametrize("zeros", [False, True])
def test_every_row_scores_as_upstreams_formula(zeros: bool) -> None:
    # Both paths: nodes that all have cpu and memory, and nodes missing one of them.
    rng = np.random.default_rng(7)
    n = 2000
    allocatable = [rng.integers(1, 64_000, n), rng.integers(1, 2**36, n)]
    if zeros:
        allocatable[1][::3] = 0
    requested = [rng.integers(0, 80_000, n), rng.integers(0, 2**37, n)]
    got = balanced_resource_score(requested, allocatable)
    want = [_upstream_score([int(r[i]) for r in requested], [int(a[i]) for a in allocatable])
            for i in range(n)]
    assert got.tolist() == want


def test_the_two_resource_pass_gives_the_per_resource_scores() -> None:
    # (resource, node) arrays with cpu and memory on every node take the one-pass path; the
    # same values as lists take the general one.
    rng = np.random.default_rng(11)
    n = 2000
    allocatable = np.stack([rng.integers(1, 64_000, n), rng.integers(1, 2**36, n)])
    allocated = np.stack([rng.integers(0, 64_000, n), rng.integers(0, 2**36, n)])
    requested = allocated + np.asarray([[rng.integers(0, 8_000)], [rng.integers(0, 2**33)]])
    got = balanced_resource_scorer(requested, allocated, allocatable)
    want = balanced_resource_scorer(list(requested), list(allocated), list(allocatable))
    assert got.tolist() == want.tolist()


def test_every_resource_problem_is_reported_one_a_line() -> None:
    """validation_pluginargs.go ValidateNodeResourcesBalancedAllocationArgs."""
    with pytest.raises(ConfigError) as err:
        validate({"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]}, "A")
    assert str(err.value).splitlines() == [
        "A.resources[0].weight: Invalid value: 2: must be 1",
        'A.resources[1].name: Duplicate value: "cpu"',
    ]


def test_default_args_are_upstreams_v1_defaults() -> None:
    assert ba.SPEC.default_args == {"resources": [{"name": "cpu", "weight": 1},
                                                  {"name": "memory", "weight": 1}]}


# -- DRA-backed extended resources (DRAExtendedResource, GA in v1.37) -------------------------
def _with_dra_resource(run_pre_score: bool) -> list[int]:
    """Upstream's case: cpu, memory and a DRA-backed resource listed; eight devices on node1
    only, so node2 leaves the resource out (cpu 86%, memory 12%: 75) and node1 gains a
    balance of 2 (60 -> 62: 76)."""
    config = {"profiles": [{"pluginConfig": [
        {"name": ba.NAME, "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
            {"name": dra_cases.EXTENDED, "weight": 1}]}}]}]}
    existing = [pod("e1", node_name="node1", containers=with_names([cm("1000m"), cm("2000m")])),
                pod("e2", node_name="node2",
                    containers=with_names([cm("1000m", "2000"), cm("2000m", "3000")]))]
    devices = [f"device-{i}" for i in range(1, 9)]
    s, _ = scheduler_of(config, nodes=[mk_node("node1", 3500, 40000),
                                       mk_node("node2", 3500, 40000)],
                        pods=existing,
                        storage=[dra_cases._class(), dra_cases._slice("node1", *devices)])
    plugin = s.profiles["secondary-scheduler"].instances[ba.NAME]
    assert isinstance(plugin, BalancedAllocation)
    incoming = pod_info("p", containers=[container(extra={dra_cases.EXTENDED: "1"})])
    view, state = full_view(s.snapshot), CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, incoming, view).is_success()
    return plugin.score(state, incoming, view).tolist()


@pytest.mark.parametrize("run_pre_score", [True, False], ids=[
    "include DRA resource on a node for balanced resource allocation",
    "include DRA resource on a node for balanced resource allocation if PreScore not called"])
def test_score_dra_backed_extended_resource(run_pre_score: bool) -> None:
    """TestNodeResourcesBalancedAllocation's DRA cases (balanced_allocation.go's PreScore and
    Score with getDRAPreScoredParams)."""
    assert _with_dra_resource(run_pre_score) == [76, 75]
