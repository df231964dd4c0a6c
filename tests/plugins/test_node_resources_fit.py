"""NodeResourcesFit tables, ported from upstream's fit_test.go, least/most_allocated_test.go and
requested_to_capacity_ratio_test.go (v1.37)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import Action, QueueingHint, Resource
from scheduler.framework.interface import Code, CycleState, IntArray, NodeView
from scheduler.framework.registry import ConfigError
from scheduler.model.pod import PodInfo
from scheduler.plugins import balanced_allocation as balanced
from scheduler.plugins import node_resources_fit as fit
from scheduler.plugins.helper.row_memo import RowMemo
from scheduler.plugins.helper.shape_score import build_shape
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.plugins.node_resources_fit import fit as fit_plugin
from scheduler.testing import (
    cache_of,
    container,
    full_view,
    node,
    pod,
    pod_info,
    rejected_reasons,
    snapshot_of,
    summary,
    view_with,
)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK = Code.SUCCESS


def validate(args: dict[str, Any], path: str) -> None:
    assert fit.SPEC.validate is not None
    fit.SPEC.validate(args, path)


def built(args: Mapping[str, Any] | None = None) -> NodeResourcesFit:
    """The plugin as a profile builds it: args over the defaults, decoded."""
    plugin = fit.SPEC.build({**fit.SPEC.default_args, **(args or {})}, None)  # type: ignore[arg-type]
    assert isinstance(plugin, NodeResourcesFit)
    return plugin


def c(cpu_m: int = 0, mem: int = 0, *, eph: int = 0, ext: Mapping[str, int] | None = None
      ) -> dict[str, Any]:
    """A container requesting ``cpu_m`` millicores, ``mem`` bytes and scalar resources."""
    extra = {k: str(v) for k, v in (ext or {}).items()}
    if eph:
        extra["ephemeral-storage"] = str(eph)
    return container(cpu=f"{cpu_m}m", memory=str(mem), extra=extra)


def rpod(
    name: str,
    containers: Sequence[Mapping[str, Any]] = (),
    *,
    init: Sequence[Mapping[str, Any]] = (),
    node_name: str = "",
    overhead: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"overhead": dict(overhead)} if overhead else {}
    named = [{**ct, "name": f"c{i}"} for i, ct in enumerate(containers or [container()])]
    named_init = [{**ct, "name": f"i{i}"} for i, ct in enumerate(init)]
    return pod(name, containers=named, init_containers=named_init, node_name=node_name,
               spec=spec)


def upstream_node(name: str = "n1", pods: int = 32) -> dict[str, Any]:
    """makeAllocatableResources(10, 20, pods, 5, 20, 5)."""
    return node(
        name,
        cpu="10m",
        memory="20",
        pods=pods,
        extra={EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"},
    )


def info_of(raw: Mapping[str, Any]) -> PodInfo:
    info = PodInfo.from_pod(raw)
    assert info.parse_error is None, info.parse_error
    return info


def run_filter(
    plugin: NodeResourcesFit, incoming: Mapping[str, Any], existing: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> tuple[list[Code], dict[str, list[str]]]:
    snapshot = snapshot_of(nodes, existing)
    view = full_view(snapshot)
    p = info_of(incoming)
    state = CycleState()
    _, status = plugin.pre_filter(state, p, snapshot)
    assert status.is_success()
    result = plugin.filter(state, p, view)
    names = view.names()
    return [Code(int(x)) for x in result.codes], rejected_reasons(result, names)


ENOUGH = [
    pytest.param(rpod("p", [container()]), [c(10, 20)], {}, OK, [],
                 id="no resources requested always fits"),
    pytest.param(rpod("p", [c(1, 1)]), [c(10, 20)], {}, U,
                 ["Insufficient cpu", "Insufficient memory"], id="too many resources fails"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(3, 1)]), [c(8, 19)], {}, U, ["Insufficient cpu"],
                 id="too many resources fails due to init container cpu"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(3, 1), c(2, 1)]), [c(8, 19)], {}, U,
                 ["Insufficient cpu"],
                 id="too many resources fails due to highest init container cpu"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(1, 3)]), [c(9, 19)], {}, U,
                 ["Insufficient memory"],
                 id="too many resources fails due to init container memory"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(1, 3), c(1, 2)]), [c(9, 19)], {}, U,
                 ["Insufficient memory"],
                 id="too many resources fails due to highest init container memory"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(1, 1)]), [c(9, 19)], {}, OK, [],
                 id="init container fits because it's the max, not sum, of containers and init"),
    pytest.param(rpod("p", [c(1, 1)], init=[c(1, 1), c(1, 1)]), [c(9, 19)], {}, OK, [],
                 id="multiple init containers fit because it's the max, not sum"),
    pytest.param(rpod("p", [c(1, 1)]), [c(5, 5)], {}, OK, [], id="both resources fit"),
    pytest.param(rpod("p", [c(2, 1)]), [c(9, 5)], {}, U, ["Insufficient cpu"],
                 id="one resource memory fits"),
    pytest.param(rpod("p", [c(1, 2)]), [c(5, 19)], {}, U, ["Insufficient memory"],
                 id="one resource cpu fits"),
    pytest.param(rpod("p", [c(5, 1)]), [c(5, 19)], {}, OK, [], id="equal edge case"),
    pytest.param(rpod("p", [c(4, 1)], init=[c(5, 1)]), [c(5, 19)], {}, OK, [],
                 id="equal edge case for init container"),
    pytest.param(rpod("p", [c(ext={EXT_A: 1})]), [c()], {}, OK, [],
                 id="extended resource fits"),
    pytest.param(rpod("p", [c()], init=[c(ext={EXT_A: 1})]), [c()], {}, OK, [],
                 id="extended resource fits for init container"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_A: 10})]), [c(ext={EXT_A: 0})], {}, UU,
                 [f"Insufficient {EXT_A}"],
                 id="extended resource capacity enforced: a request above allocatable is UU"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={EXT_A: 10})]),
                 [c(ext={EXT_A: 0})], {}, UU, [f"Insufficient {EXT_A}"],
                 id="extended resource capacity enforced for init container"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_A: 1})]), [c(ext={EXT_A: 5})], {}, U,
                 [f"Insufficient {EXT_A}"],
                 id="extended resource allocatable enforced: used up is plain Unschedulable"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_A: 3}), c(1, 1, ext={EXT_A: 3})]),
                 [c(ext={EXT_A: 2})], {}, UU, [f"Insufficient {EXT_A}"],
                 id="extended resource allocatable enforced for multiple containers"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={EXT_A: 3}), c(1, 1, ext={EXT_A: 3})]),
                 [c(ext={EXT_A: 2})], {}, OK, [],
                 id="extended resource allocatable admits multiple init containers"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={EXT_A: 6}), c(1, 1, ext={EXT_A: 3})]),
                 [c(ext={EXT_A: 2})], {}, UU, [f"Insufficient {EXT_A}"],
                 id="extended resource allocatable enforced for multiple init containers"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_B: 1})]), [c()], {}, UU,
                 [f"Insufficient {EXT_B}"],
                 id="extended resource allocatable enforced for unknown resource"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={EXT_B: 1})]), [c()], {}, UU,
                 [f"Insufficient {EXT_B}"],
                 id="extended resource allocatable enforced for unknown resource, init container"),
    pytest.param(rpod("p", [c(1, 1, ext={K8S_IO_A: 10})]), [c()], {}, UU,
                 [f"Insufficient {K8S_IO_A}"], id="kubernetes.io resource capacity enforced"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={K8S_IO_B: 10})]), [c()],
                 {}, UU, [f"Insufficient {K8S_IO_B}"],
                 id="kubernetes.io resource capacity enforced for init container"),
    pytest.param(rpod("p", [c(1, 1, ext={HUGE_A: 10})]), [c(ext={HUGE_A: 0})], {}, UU,
                 [f"Insufficient {HUGE_A}"], id="hugepages resource capacity enforced"),
    pytest.param(rpod("p", [c()], init=[c(1, 1, ext={HUGE_A: 10})]), [c(ext={HUGE_A: 0})], {}, UU,
                 [f"Insufficient {HUGE_A}"],
                 id="hugepages resource capacity enforced for init container"),
    pytest.param(rpod("p", [c(1, 1, ext={HUGE_A: 3}), c(1, 1, ext={HUGE_A: 3})]),
                 [c(ext={HUGE_A: 2})], {}, UU, [f"Insufficient {HUGE_A}"],
                 id="hugepages resource allocatable enforced for multiple containers"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_B: 1})]), [c()],
                 {"ignoredResources": [EXT_B]}, OK, [],
                 id="skip checking ignored extended resource"),
    pytest.param(rpod("p", [c(1, 1)], overhead={"cpu": "3m", "memory": "13"}), [c(5, 5)], {},
                 OK, [], id="resources + pod overhead fits"),
    pytest.param(rpod("p", [c(1, 1)], overhead={"cpu": "1m", "memory": "15"}), [c(5, 5)], {},
                 U, ["Insufficient memory"], id="requests + overhead does not fit for memory"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_B: 1, K8S_IO_A: 1})]), [c()],
                 {"ignoredResourceGroups": ["example.com"]}, UU, [f"Insufficient {K8S_IO_A}"],
                 id="skip checking ignored extended resource via resource groups"),
    pytest.param(rpod("p", [c(1, 1, ext={EXT_A: 0})]), [c(ext={EXT_A: 6})], {}, OK, [],
                 id="skip checking extended resource request with quantity zero"),
    pytest.param(rpod("p", [c(1, 1)]), [c(2, 10)], {}, OK, [],
                 id="empty storage requested, and pod fits"),
    pytest.param(rpod("p", [c(eph=25)]), [c(2, 2)], {}, UU, ["Insufficient ephemeral-storage"],
                 id="ephemeral local storage request exceeds allocatable"),
    pytest.param(rpod("p", [c()], init=[c(eph=5)]), [c(2, 2, eph=10)], {}, OK, [],
                 id="ephemeral local storage is sufficient"),
    pytest.param(rpod("p", [c(eph=10)]), [c(2, 2)], {}, OK, [], id="ephemeral storage pod fits"),
]


@pytest.mark.parametrize(("incoming", "existing", "args", "code", "reasons"), ENOUGH)
def test_filter_enough_requests(
    incoming: dict[str, Any], existing: list[dict[str, Any]], args: dict[str, Any], code: Code,
    reasons: list[str],
) -> None:
    existing_pods = [rpod(f"e{i}", [ct], node_name="n1") for i, ct in enumerate(existing)]
    plugin = built(args)
    codes, got = run_filter(plugin, incoming, existing_pods, [upstream_node()])
    assert codes == [code]
    assert got["n1"] == reasons


NOT_ENOUGH = [
    pytest.param(rpod("p", [container()]), [c(10, 20)], U, ["Too many pods"],
                 id="even without specified resources, fails when there's no space for a pod"),
    pytest.param(rpod("p", [c(1, 1)]), [c(5, 5)], U, ["Too many pods"],
                 id="even if both resources fit, fails when there's no space for a pod"),
    pytest.param(rpod("p", [c(5, 1)]), [c(5, 19)], U, ["Too many pods"],
                 id="even for equal edge case, fails when there's no space for a pod"),
    pytest.param(rpod("p", [c(5, 1)], init=[c(5, 1)]), [c(5, 19)], U, ["Too many pods"],
                 id="even for equal edge case with init container, no space for a pod"),
    pytest.param(rpod("p", [c(1, 1)]), [c(10, 20)], U,
                 ["Too many pods", "Insufficient cpu", "Insufficient memory"],
                 id="every shortage is reported, the pod count first"),
    pytest.param(rpod("p", [c(11, 1)]), [c(0, 0)], UU, ["Too many pods", "Insufficient cpu"],
                 id="a request above allocatable makes the node unresolvable, pods full or not"),
]


@pytest.mark.parametrize(("incoming", "existing", "code", "reasons"), NOT_ENOUGH)
def test_filter_not_enough_pods(
    incoming: dict[str, Any], existing: list[dict[str, Any]], code: Code, reasons: list[str]
) -> None:
    existing_pods = [rpod(f"e{i}", [ct], node_name="n1") for i, ct in enumerate(existing)]
    plugin = built()
    codes, got = run_filter(plugin, incoming, existing_pods, [upstream_node(pods=1)])
    assert codes == [code]
    assert got["n1"] == reasons


SIDECAR = [
    pytest.param(None, None, OK, [], id="allow pod with restartable init containers"),
    pytest.param("1m", "1m", OK, [],
                 id="allow pod if the total requested resources do not exceed allocatable"),
    pytest.param("1m", "2m", UU, ["Insufficient cpu"],
                 id="not allow pod if the total requested resources do exceed allocatable"),
]


@pytest.mark.parametrize(("request_cpu", "sidecar_cpu", "code", "reasons"), SIDECAR)
def test_filter_restartable_init_containers(
    request_cpu: str | None, sidecar_cpu: str | None, code: Code, reasons: list[str]
) -> None:
    incoming = pod(
        "p",
        containers=[container("regular", cpu=request_cpu)],
        init_containers=[container("sidecar", cpu=sidecar_cpu, restart_policy="Always")],
    )
    plugin = built()
    nodes = [node("n1", cpu="2m", memory="0", pods=1)]
    codes, got = run_filter(plugin, incoming, [], nodes)
    assert codes == [code]
    assert got["n1"] == reasons


def test_filter_batches_rows_independently() -> None:
    nodes = [upstream_node("a"), upstream_node("b"), upstream_node("c", pods=1)]
    existing = [
        rpod("on-a", [c(9, 1)], node_name="a"),
        rpod("on-c", [c(1, 1)], node_name="c"),
    ]
    plugin = built()
    codes, got = run_filter(plugin, rpod("p", [c(2, 1)]), existing, nodes)
    assert codes == [U, OK, U]
    assert got == {"a": ["Insufficient cpu"], "b": [], "c": ["Too many pods"]}


HYPOTHETICAL = [
    pytest.param("removed", OK, [],
                 id="removing the victim from a full node makes the pod fit"),
    pytest.param("added", U, ["Too many pods", "Insufficient cpu"],
                 id="a nominated pod added to the node takes its room and its pod slot"),
]


@pytest.mark.parametrize(("delta", "code", "reasons"), HYPOTHETICAL)
def test_filter_counts_hypothetical_pods(delta: str, code: Code, reasons: list[str]) -> None:
    victim = rpod("victim", [c(6, 1)], node_name="n1")
    snapshot = snapshot_of([upstream_node("n1", pods=2)], [victim])
    incoming = info_of(rpod("p", [c(5, 1)]))
    other = info_of(rpod("other", [c(6, 1)]))
    if delta == "removed":
        view = view_with(snapshot, "n1", removed=[info_of(victim)])
    else:
        view = view_with(snapshot, "n1", added=[other])
    plugin = built()
    result = plugin.filter(CycleState(), incoming, view)
    assert Code(int(result.codes[0])) is code
    assert rejected_reasons(result, ["n1"])["n1"] == reasons


# -- Score ----------------------------------------------------------------------------------
def strategy(kind: str, resources: Sequence[tuple[str, int]] = (("cpu", 1), ("memory", 1)),
             shape: Sequence[tuple[int, int]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "resources": [{"name": n, "weight": w} for n, w in resources],
    }
    if shape is not None:
        out["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": s} for u, s in shape]
        }
    return {"scoringStrategy": out}


def cm(cpu: str, mem: str, **extra: str) -> dict[str, Any]:
    """A container with cpu in cores (as upstream's st.MakePod().Req) and memory in bytes."""
    return container(cpu=cpu, memory=mem, extra=extra)


LEAST = strategy("LeastAllocated")
MOST = strategy("MostAllocated")
RTCR_DOWN = strategy("RequestedToCapacityRatio", shape=[(0, 10), (100, 0)])
RTCR_UP = strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)])

SCORES = [
    pytest.param(RTCR_DOWN, [cm("3000", "5000")], [("4000", "10000"), ("6000", "10000")],
                 [[cm("2000", "4000")], [cm("1000", "2000")]], [10, 32],
                 id="RequestedToCapacityRatio case1: falling shape"),
    pytest.param(RTCR_UP, [cm("3000", "5000")], [("4000", "10000"), ("6000", "10000")],
                 [[cm("2000", "4000")], [cm("1000", "2000")]], [95, 68],
                 id="RequestedToCapacityRatio case2: rising shape"),
    pytest.param(MOST, [cm("1000", "2000")], [("4000", "10000"), ("6000", "10000")],
                 [[cm("2000", "4000")], [cm("1000", "2000")]], [67, 36],
                 id="MostAllocated favours the fuller node"),
    pytest.param(LEAST, [cm("1000", "2000")], [("4000", "10000"), ("6000", "10000")],
                 [[cm("2000", "4000")], [cm("1000", "2000")]], [32, 63],
                 id="LeastAllocated favours the emptier node"),
    pytest.param(LEAST, [cm("1000", "2000"), cm("2000", "3000")],
                 [("4000", "10000"), ("6000", "10000")], [[], []], [37, 50],
                 id="least: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param(LEAST, [cm("1000", "2000"), cm("2000", "3000")],
                 [("10000", "20000"), ("10000", "20000")],
                 [[cm("3000", "0")], [cm("3000", "5000")]], [57, 45],
                 id="least: resources requested, pods scheduled with resources"),
    pytest.param(LEAST, [cm("1000", "2000"), cm("2000", "3000")],
                 [("10000", "20000"), ("10000", "50000")],
                 [[cm("3000", "0")], [cm("3000", "5000")]], [57, 60],
                 id="least: resources requested, pods scheduled, differently sized nodes"),
    pytest.param(LEAST, [cm("3000", "0")], [("4000", "10000"), ("4000", "10000")],
                 [[cm("3000", "0")], [cm("3000", "5000")]], [50, 25],
                 id="least: requested resources exceed node capacity score 0 for that resource"),
    pytest.param(strategy("LeastAllocated", [("memory", 2), ("cpu", 1)]),
                 [cm("1000", "2000"), cm("2000", "3000")],
                 [("4000", "10000"), ("6000", "10000")], [[], []], [41, 50],
                 id="least: different weights on cpu and memory"),
    pytest.param(MOST, [cm("1000", "2000"), cm("2000", "3000")],
                 [("4000", "10000"), ("6000", "10000")], [[], []], [62, 50],
                 id="most: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param(MOST, [cm("1000", "2000"), cm("2000", "3000")],
                 [("10000", "20000"), ("10000", "20000")],
                 [[cm("3000", "0")], [cm("3000", "5000")]], [42, 55],
                 id="most: resources requested, pods scheduled with resources"),
    pytest.param(MOST, [cm("5000", "0")], [("4000", "10000"), ("4000", "10000")],
                 [[], []], [50, 50],
                 id="most: a request above capacity counts as full, not more"),
    pytest.param(strategy("MostAllocated", [("memory", 2), ("cpu", 1)]),
                 [cm("1000", "2000"), cm("2000", "3000")],
                 [("4000", "10000"), ("6000", "10000")], [[], []], [58, 50],
                 id="most: different weights on cpu and memory"),
]


def score_nodes(
    args: Mapping[str, Any],
    containers: Sequence[Mapping[str, Any]],
    capacities: Sequence[tuple[str, str]],
    existing: Sequence[Sequence[Mapping[str, Any]]],
    extra: Sequence[Mapping[str, str]] | None = None,
) -> list[int]:
    nodes = [
        node(f"node{i + 1}", cpu=cpu, memory=mem, extra=(extra[i] if extra else None))
        for i, (cpu, mem) in enumerate(capacities)
    ]
    pods = [
        pod(f"e{i}-{j}", containers=[ct], node_name=f"node{i + 1}")
        for i, cts in enumerate(existing)
        for j, ct in enumerate(cts)
    ]
    snapshot = snapshot_of(nodes, pods)
    named = [{**ct, "name": f"c{i}"} for i, ct in enumerate(containers)]
    incoming = pod_info("p", containers=named)
    plugin = built(args)
    state = CycleState()
    view = full_view(snapshot)
    assert plugin.pre_score(state, incoming, view).is_success()
    scores = plugin.normalize(state, incoming, plugin.score(state, incoming, view))
    without_pre_score = plugin.score(CycleState(), incoming, view)
    assert scores.tolist() == without_pre_score.tolist()
    return [int(s) for s in scores]


@pytest.mark.parametrize(("args", "containers", "capacities", "existing", "want"), SCORES)
def test_score(
    args: dict[str, Any], containers: list[dict[str, Any]], capacities: list[tuple[str, str]],
    existing: list[list[dict[str, Any]]], want: list[int],
) -> None:
    assert score_nodes(args, containers, capacities, existing) == want


def test_score_uses_non_zero_defaults_for_containers_without_requests() -> None:
    # 1 core, 1 GiB nodes; an existing pod with no requests counts 100m and 200Mi, and so does
    # the incoming best-effort pod: cpu (1000-200)*100/1000 = 80, memory (1024-400)*100/1024 = 60.
    got = score_nodes(LEAST, [container()], [("1", "1Gi")], [[container()]])
    assert got == [70]


def test_score_skips_scalar_resources_the_pod_does_not_request() -> None:
    # cpu 50 and memory 50 on both; the GPU would change node1's score if it were counted.
    args = strategy("LeastAllocated", [("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1)])
    got = score_nodes(
        args, [cm("2", "4Gi")], [("4", "8Gi"), ("4", "8Gi")], [[], []],
        extra=[{"nvidia.com/gpu": "4"}, {}],
    )
    assert got == [50, 50]


def test_score_includes_requested_scalar_resources_on_nodes_that_have_them() -> None:
    # node1: cpu 50, memory 50, gpu (4-1)*100/4 = 75 → 175/3 = 58; node2 has no GPU: 50.
    args = strategy("LeastAllocated", [("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1)])
    got = score_nodes(
        args, [cm("2", "4Gi", **{"nvidia.com/gpu": "1"})], [("4", "8Gi"), ("4", "8Gi")], [[], []],
        extra=[{"nvidia.com/gpu": "4"}, {}],
    )
    assert got == [58, 50]


def test_score_zero_allocatable_gives_zero() -> None:
    assert score_nodes(LEAST, [container()], [("0", "0")], [[cm("3", "0")]]) == [0]


def test_score_counts_hypothetical_pods_with_non_zero_defaults() -> None:
    snapshot = snapshot_of([node("n1", cpu="1", memory="1Gi")])
    incoming = pod_info("p")
    plugin = built()
    plain = plugin.score(CycleState(), incoming, full_view(snapshot))
    nominated = pod_info("nominated")
    added = view_with(snapshot, "n1", added=[nominated])
    with_nominated = plugin.score(CycleState(), incoming, added)
    # Alone: cpu 90, memory (1024-200)*100/1024 = 80 → 85; with a second best-effort pod: 70.
    assert plain.tolist() == [85]
    assert with_nominated.tolist() == [70]
    removed = plugin.score(
        CycleState(), incoming, view_with(snapshot, "n1", added=[nominated], removed=[nominated])
    )
    assert removed.tolist() == [85]


SHAPE = [
    pytest.param([(0, 0), (100, 10)], [0, 10, 50, 100], [0, 10, 50, 100],
                 id="identity shape scaled by ten"),
    pytest.param([(0, 10), (100, 0)], [0, 10, 50, 100], [100, 90, 50, 0],
                 id="falling shape truncates like Go"),
    pytest.param([(10, 1), (50, 8), (90, 2)], [0, 10, 30, 50, 70, 90, 100],
                 [10, 10, 45, 80, 50, 20, 20],
                 id="broken line: flat before the first point and after the last"),
    pytest.param([(0, 10), (30, 3)], [10], [77],
                 id="negative slope rounds towards zero, not down"),
]


@pytest.mark.parametrize(("points", "utilization", "want"), SHAPE)
def test_broken_linear_function(
    points: list[tuple[int, int]], utilization: list[int], want: list[int]
) -> None:
    shape = build_shape([{"utilization": u, "score": s} for u, s in points])
    got = shape(np.asarray(utilization, dtype=np.int64))
    assert got.tolist() == want


# -- arguments ------------------------------------------------------------------------------
BAD_ARGS = [
    pytest.param({"scoringStrategy": {"type": "Foo"}}, "scoringStrategy.type: Unsupported value",
                 id="an unknown strategy is refused, naming the field"),
    pytest.param(strategy("LeastAllocated", [("memory", -1), ("cpu", 1)]),
                 "scoringStrategy.resources[0].weight: Invalid value",
                 id="resource with negative weight"),
    pytest.param(strategy("LeastAllocated", [("memory", 1), ("cpu", 101)]),
                 "scoringStrategy.resources[1].weight: Invalid value",
                 id="resource weight larger than MaxNodeScore"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
                 "scoringStrategy.requestedToCapacityRatio: Required value",
                 id="RequestedToCapacityRatio needs its shape"),
    pytest.param(strategy("RequestedToCapacityRatio", shape=[]),
                 "scoringStrategy.requestedToCapacityRatio.shape: Required value",
                 id="an empty shape is refused"),
    pytest.param(strategy("RequestedToCapacityRatio", shape=[(30, 1), (20, 2)]),
                 "requestedToCapacityRatio.shape[1].utilization: Invalid value: 20: "
                 "values must be sorted in increasing order",
                 id="shape points must be sorted by utilization"),
    pytest.param(strategy("RequestedToCapacityRatio", shape=[(0, 11)]),
                 "shape[0].score: Invalid value: 11: not in valid range [0, 10]",
                 id="shape scores are 0..10"),
    pytest.param(strategy("RequestedToCapacityRatio", shape=[(101, 1)]),
                 "shape[0].utilization: Invalid value: 101: not in valid range [0, 100]",
                 id="shape utilizations are 0..100"),
    pytest.param({"scoringStrategy": {"type": "LeastAllocated",
                                      "requestedToCapacityRatio": {"shape": []}}},
                 "scoringStrategy.requestedToCapacityRatio: Forbidden",
                 id="a shape is forbidden for other strategies"),
    pytest.param({"ignoredResourceGroups": ["example.com/aaa"]},
                 "ignoredResourceGroups[0]: Invalid value: 'example.com/aaa': "
                 "resource group name can't contain '/'",
                 id="resource groups have no slash"),
    pytest.param({"ignoredResources": ["-bad-"]}, "ignoredResources[0]: Invalid value",
                 id="ignored resources must be qualified names"),
    pytest.param({"scoringStrtegy": {}}, "scoringStrtegy: Invalid value: unknown field",
                 id="a misspelt field is refused"),
    pytest.param({"scoringStrategy": {"type": 5}},
                 'scoringStrategy.type: Unsupported value: 5: supported values: "LeastAllocated"',
                 id="a strategy type that is no string"),
    pytest.param({"scoringStrategy": {"resources": []}},
                 "scoringStrategy.type: Unsupported value: None", id="a strategy needs a type"),
    pytest.param({"scoringStrategy": "LeastAllocated"},
                 "scoringStrategy: Invalid value: 'LeastAllocated': must be a mapping",
                 id="the strategy is a mapping"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated", "resources": "cpu"}},
                 "scoringStrategy.resources: Invalid value: 'cpu': must be a list",
                 id="resources is a list"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated", "resources": ["cpu"]}},
                 "resources[0]: Invalid value: 'cpu': must be a mapping with name and weight",
                 id="a resource is a mapping"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated", "resources": [{"weight": 2}]}},
                 "resources[0].name: Required value: must be a non-empty string",
                 id="a resource needs a name"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated",
                                      "resources": [{"name": "cpu", "wieght": 2}]}},
                 "resources[0].wieght: Invalid value: unknown field",
                 id="a misspelt resource field is refused"),
    pytest.param({"scoringStrategy": {"type": "LeastAllocated", "x": 1}},
                 "scoringStrategy.x: Invalid value: unknown field",
                 id="a misspelt strategy field is refused"),
    pytest.param({"ignoredResources": "example.com/foo"},
                 "ignoredResources: Invalid value: 'example.com/foo': must be a list",
                 id="ignored resources are a list"),
    pytest.param({"ignoredResourceGroups": [5]},
                 "ignoredResourceGroups[0]: Invalid value: 5: must be a string",
                 id="ignored resource groups are strings"),
]


@pytest.mark.parametrize(("args", "message"), BAD_ARGS)
def test_validate_args_refuses(args: dict[str, Any], message: str) -> None:
    path = "profiles[0].pluginConfig[1].args"
    with pytest.raises(ConfigError) as err:
        validate({**fit.SPEC.default_args, **args}, path)
    assert f"{path}." in str(err.value)
    assert message in str(err.value)


def test_every_args_problem_is_reported_one_a_line() -> None:
    """validation_pluginargs.go ValidateNodeResourcesFitArgs: every problem, in its order,
    the strategy's with the others'."""
    with pytest.raises(ConfigError) as err:
        validate({**fit.SPEC.default_args, "ignoredResources": ["-bad-"],
                  "ignoredResourceGroups": ["example.com/aaa"],
                  "scoringStrategy": {"type": "Foo",
                                      "resources": [{"name": "cpu", "weight": 101}, {"weight": 1}],
                                      "requestedToCapacityRatio": {"shape": []}}}, "A")
    lines = str(err.value).splitlines()
    assert lines[0].startswith("A.ignoredResources[0]: Invalid value: '-bad-': name part must")
    assert lines[1:] == [
        "A.ignoredResourceGroups[0]: Invalid value: 'example.com/aaa': "
        "resource group name can't contain '/'",
        "A.scoringStrategy.type: Unsupported value: 'Foo': supported values: "
        '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        "A.scoringStrategy.resources[0].weight: Invalid value: 101: "
        "resource weight of cpu not in valid range (0, 100]",
        "A.scoringStrategy.resources[1].name: Required value: must be a non-empty string",
        "A.scoringStrategy.requestedToCapacityRatio: Forbidden: "
        "must be nil when type is not RequestedToCapacityRatio",
    ]


def test_default_args_are_upstreams_v1_defaults() -> None:
    assert fit.SPEC.default_args == {
        "ignoredResources": [], "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}


GOOD_ARGS = [
    pytest.param({}, "LeastAllocated", (("cpu", 1), ("memory", 1)), id="defaults"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated"}}, "MostAllocated",
                 (("cpu", 1), ("memory", 1)),
                 id="a strategy without resources gets cpu and memory"),
    pytest.param(strategy("LeastAllocated", [("memory", 0), ("cpu", 3)]), "LeastAllocated",
                 (("memory", 1), ("cpu", 3)), id="a zero weight defaults to 1"),
    pytest.param({"scoringStrategy": None, "ignoredResources": None}, "LeastAllocated",
                 (("cpu", 1), ("memory", 1)), id="no strategy is the default one"),
    pytest.param(strategy("RequestedToCapacityRatio", [("cpu", 2)], shape=[(0, 0), (100, 10)]),
                 "RequestedToCapacityRatio", (("cpu", 2),), id="RequestedToCapacityRatio"),
]


@pytest.mark.parametrize(("args", "kind", "resources"), GOOD_ARGS)
def test_args_defaulting(
    args: dict[str, Any], kind: str, resources: tuple[tuple[str, int], ...]
) -> None:
    validate({**fit.SPEC.default_args, **args}, "args")
    plugin = built(args)
    assert plugin.strategy == kind
    assert tuple((r.name, r.weight) for r in plugin.resources) == resources


# -- events ---------------------------------------------------------------------------------
def test_events_to_register() -> None:
    plugin = built()
    events = {(e.event.resource, e.event.action) for e in plugin.events_to_register()}
    assert (Resource.ASSIGNED_POD, Action.DELETE) in events
    assert (Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE) in events
    assert (Resource.ASSIGNED_POD, Action.UPDATE_POD_SCALE_DOWN) in events


NODE_HINTS = [
    pytest.param(None, node("n", cpu="4"), QueueingHint.QUEUE,
                 id="queue when a node that fits the pod is added"),
    pytest.param(None, node("n", cpu="1"), QueueingHint.SKIP,
                 id="skip when the added node is too small for the pod"),
    pytest.param(node("n", cpu="3"), node("n", cpu="4"), QueueingHint.QUEUE,
                 id="queue when the requested resource grew and now fits"),
    pytest.param(node("n", cpu="4", memory="8Gi"), node("n", cpu="4", memory="16Gi"),
                 QueueingHint.SKIP, id="skip when only an unrequested resource grew"),
    pytest.param(node("n", cpu="4", pods=10), node("n", cpu="4", pods=20), QueueingHint.QUEUE,
                 id="queue when the allowed pod number grew"),
]


@pytest.mark.parametrize(("old", "new_node", "want"), NODE_HINTS)
def test_node_change_hint(
    old: dict[str, Any] | None, new_node: dict[str, Any], want: QueueingHint
) -> None:
    incoming = pod_info("p", cpu="2")
    hint = next(
        e.hint for e in built().events_to_register()
        if e.event.resource is Resource.NODE
    )
    assert hint is not None
    assert hint(incoming, summary(old), summary(new_node)) is want


def test_assigned_pod_delete_hint() -> None:
    hint = fit_plugin._after_assigned_pod_delete
    incoming = pod_info("p", cpu="1")
    assert hint(incoming, pod_info("bound", node_name="n1"), None) is QueueingHint.QUEUE
    assert hint(incoming, pod_info("pending"), None) is QueueingHint.SKIP


# == scores kept between cycles (RowMemo) ==================================================
def _add_pod(cache: Cache) -> None:
    cache.upsert_pod(pod_info("landed", cpu="1", memory="12Gi", node_name="n2"))


def _remove_pod(cache: Cache) -> None:
    cache.remove_pod(pod_info("old", node_name="n1").uid)


def _resize_node(cache: Cache) -> None:
    cache.upsert_node(node("n3", cpu="16", memory="64Gi"))


def _replace_node(cache: Cache) -> None:
    # The freed row is reused by a node of another size.
    cache.remove_node("n1")
    cache.upsert_node(node("n9", cpu="32", memory="16Gi"))


def _new_resource(cache: Cache) -> None:
    cache.upsert_node(node("n2", cpu="8", memory="16Gi", extra={"example.com/gpu": "2"}))


def _assume(cache: Cache) -> None:
    cache.assume(pod_info("incoming-0", cpu="100m", memory="12Gi"), "n3")


CHANGES = [
    pytest.param(_add_pod, id="a pod lands on a node"),
    pytest.param(_remove_pod, id="a pod leaves a node"),
    pytest.param(_resize_node, id="a node's allocatable changes"),
    pytest.param(_replace_node, id="a node is deleted and its row reused"),
    pytest.param(_new_resource, id="a resource the table had no column for appears"),
    pytest.param(_assume, id="the scheduler assumes a pod"),
]
SCORERS = [
    pytest.param(lambda: built(LEAST), id="LeastAllocated"),
    pytest.param(lambda: built(MOST), id="MostAllocated"),
    pytest.param(lambda: built(RTCR_UP),
                 id="RequestedToCapacityRatio"),
    pytest.param(lambda: balanced.new(balanced.BalancedAllocationArgs(), None),
                 id="BalancedAllocation"),
]


def _three_nodes() -> Cache:
    """n1 and n3 with 3 of their 4 cpus taken, n2 with 8 free."""
    return cache_of(
        [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="8", memory="16Gi"),
         node("n3", cpu="4", memory="16Gi")],
        [pod("old", cpu="3", memory="1Gi", node_name="n1"),
         pod("other", cpu="3", memory="1Gi", node_name="n3")])


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("make", SCORERS)
def test_kept_scores_follow_the_table(make: Callable[[], Any], change: Callable[[Cache], None]
                                      ) -> None:
    cache = _three_nodes()
    snapshot = Snapshot(cache)
    incoming = pod_info("incoming", cpu="2", memory="1Gi")
    kept = make()
    before = kept.score(CycleState(), incoming, full_view(snapshot))
    assert before.tolist() == make().score(CycleState(), incoming, full_view(snapshot)).tolist()
    change(cache)
    after = kept.score(CycleState(), incoming, full_view(snapshot))
    assert after.tolist() == make().score(CycleState(), incoming, full_view(snapshot)).tolist()
    assert after.tolist() != before.tolist() or change is _new_resource


def _filter_answer(plugin: Any, pod: PodInfo, view: NodeView) -> tuple[Any, ...]:
    result = plugin.filter(CycleState(), pod, view)
    return result.codes.tolist(), [(mask.tolist(), reason) for mask, reason in result.reasons]


@pytest.mark.parametrize("change", CHANGES)
def test_kept_misfits_follow_the_table(change: Callable[[Cache], None]) -> None:
    cache = _three_nodes()
    snapshot = Snapshot(cache)
    # n1: short of cpu, and of memory beyond its allocatable; n3: short of cpu; n2 fits.
    incoming = pod_info("incoming", cpu="2", memory="10Gi")
    kept = built()
    before = _filter_answer(kept, incoming, full_view(snapshot))
    assert before[0] == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS, Code.UNSCHEDULABLE]
    assert before[1] == [([True, False, True], "Insufficient cpu"),
                         ([True, False, False], "Insufficient memory")]
    change(cache)
    for view in (full_view(snapshot), full_view(snapshot).subset(np.asarray([0, 1]))):
        fresh = built()
        assert _filter_answer(kept, incoming, view) == _filter_answer(fresh, incoming, view)


def test_kept_misfits_are_not_used_for_hypothetical_pods() -> None:
    snapshot = snapshot_of([node("n1", cpu="4", memory="8Gi")])
    incoming = pod_info("incoming", cpu="1", memory="1Gi")
    plugin = built()
    assert _filter_answer(plugin, incoming, full_view(snapshot))[0] == [Code.SUCCESS]
    view = full_view(snapshot)
    requested = view.requested + snapshot.resources.vector({"cpu": 3500})
    taken = NodeView(snapshot, view.idx, requested, view.pod_count)
    assert _filter_answer(plugin, incoming, taken) == (
        [Code.UNSCHEDULABLE], [([True], "Insufficient cpu")])
    assert _filter_answer(plugin, incoming, full_view(snapshot))[0] == [Code.SUCCESS]


def test_kept_scores_are_not_used_for_hypothetical_pods() -> None:
    # BalancedAllocation reads the view's requested numbers (NodeResourcesFit reads the pod
    # lists, covered above): a view with other numbers is scored from them.
    snapshot = snapshot_of([node("n1", cpu="4", memory="8Gi")])
    incoming = pod_info("incoming", cpu="1", memory="1Gi")
    plugin = balanced.new(balanced.BalancedAllocationArgs(), None)  # type: ignore[arg-type]
    plain = plugin.score(CycleState(), incoming, full_view(snapshot))
    view = full_view(snapshot)
    requested = view.requested + snapshot.resources.vector({"cpu": 2000, "memory": 1 << 30})
    taken = NodeView(snapshot, view.idx, requested, view.pod_count)
    assert plugin.score(CycleState(), incoming, taken).tolist() != plain.tolist()
    assert plugin.score(CycleState(), incoming, full_view(snapshot)).tolist() == plain.tolist()


def test_kept_scores_per_request_are_bounded() -> None:
    snapshot = snapshot_of([node("n1", cpu="64", memory="64Gi")])
    plugin = built()
    got = [int(plugin.score(CycleState(), pod_info(f"p{i}", cpu=f"{i + 1}"),
                            full_view(snapshot))[0]) for i in range(40)]
    # cpu (64 - i - 1)*100/64 and memory (64Gi - 200Mi)*100/64Gi = 99, halved.
    assert got == [((64 - i - 1) * 100 // 64 + 99) // 2 for i in range(40)]
    assert len(plugin._scores._kept) == 16


def test_kept_scores_compute_each_row_once_per_change() -> None:
    # What a memo saves is rows not computed: count the rows handed to the computation.
    cache = cache_of([node(f"n{i}") for i in range(8)])
    snapshot = Snapshot(cache)
    computed: list[int] = []

    def compute(view: NodeView, key: tuple[int, ...]) -> IntArray:
        computed.append(len(view))
        return view.idx * 0 + key[0]

    def rows(first: int, last: int) -> NodeView:
        return full_view(snapshot).subset(np.arange(first, last + 1))

    memo = RowMemo(compute)
    memo.values(rows(0, 3), (1,))
    memo.values(rows(3, 4), (1,))
    assert computed == [4, 1], "a new key: the view's rows only, not the table's"
    memo.values(rows(4, 7), (1,))
    memo.values(rows(0, 3), (1,))
    assert computed == [4, 1, 3], "then each row once"
    cache.upsert_pod(pod_info("landed", cpu="1", node_name="n5"))
    memo.values(rows(0, 3), (1,))
    assert computed == [4, 1, 3], "the changed row is not in the view: not computed yet"
    cache.upsert_pod(pod_info("landed-too", cpu="1", node_name="n1"))
    assert memo.values(rows(4, 7), (1,)).tolist() == [1, 1, 1, 1]
    assert computed == [4, 1, 3, 2], "both changed rows of the table, at once"
    memo.values(rows(0, 3), (1,))
    memo.values(rows(4, 7), (2,))
    assert computed == [4, 1, 3, 2, 4], "another key is another memo"


def test_kept_values_evict_the_least_recently_used_key() -> None:
    snapshot = Snapshot(cache_of([node("n1")]))
    computed: list[int] = []

    def compute(view: NodeView, key: int) -> IntArray:
        computed.append(key)
        return view.idx * 0 + key

    memo = RowMemo(compute, keys=2)
    for key in (1, 2, 1, 3, 1, 2):
        assert memo.values(full_view(snapshot), key).tolist() == [key]
    assert computed == [1, 2, 3, 2], "1 was used again after 2, so 3 evicted 2"
