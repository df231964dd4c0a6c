"""VolumeBinding (upstream volume_binding_test.go and binder_test.go cases that apply): the
claim classes, per-node matching and provisioning, scoring, and Reserve -> PreBind -> the PV
controller's answer, with the poll's sleep and clock replaced."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.intake import Intake
from scheduler.plugins.volume_binding import (
    ERR_BIND_CONFLICT,
    ERR_NODE_CONFLICT,
    ERR_NOT_ENOUGH_SPACE,
    ERR_PV_NOT_EXIST,
    SPEC,
    UNBOUND_IMMEDIATE,
    VolumeBinding,
)
from scheduler.testing import (
    ManualClock,
    claim,
    csi_driver,
    filter_nodes,
    node,
    pod,
    pod_info,
    run_cycles,
    schedule,
    scheduler_of,
    score_nodes,
    storage_capacity,
    storage_class,
    volume,
    with_claims,
)

NODES = [node("a"), node("b"), node("c")]
LOCAL = storage_class("local")
DYNAMIC = storage_class("dynamic", provisioner="example.com/fake")
ZONED = storage_class("zoned", provisioner="example.com/fake", allowed_zones=["zone-a"])
IMMEDIATE = storage_class("immediate", wait_for_first_consumer=False)


def local_pv(name: str, host: str, size: str = "10Gi", **kw: Any) -> dict[str, Any]:
    return volume(name, storage=size, storage_class="local", hostnames=[host], **kw)


@pytest.mark.parametrize(
    ("case", "storage", "want"),
    [
        ("a local PV on a: only a fits",
         [claim("data", storage_class="local"), LOCAL, local_pv("pv-a", "a")],
         {"a": [], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}),
        ("too small a PV does not fit",
         [claim("data", storage_class="local", storage="20Gi"), LOCAL, local_pv("pv-a", "a")],
         {"a": [ERR_BIND_CONFLICT], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}),
        ("a PV bound to another claim does not fit",
         [claim("data", storage_class="local"), LOCAL,
          local_pv("pv-a", "a", claim_ref={"namespace": "default", "name": "other"})],
         {"a": [ERR_BIND_CONFLICT], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}),
        ("a PV that is not Available does not fit",
         [claim("data", storage_class="local"), LOCAL, local_pv("pv-a", "a", phase="Released")],
         {"a": [ERR_BIND_CONFLICT], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}),
        ("a selected node pins the claim",
         [claim("data", storage_class="dynamic", selected_node="b"), DYNAMIC],
         {"a": [ERR_BIND_CONFLICT], "b": [], "c": [ERR_BIND_CONFLICT]}),
        ("a provisioner provisions anywhere", [claim("data", storage_class="dynamic"), DYNAMIC],
         {"a": [], "b": [], "c": []}),
        ("allowedTopologies limit provisioning", [claim("data", storage_class="zoned"), ZONED],
         {"a": [], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}),
        ("a bound claim's PV node affinity",
         [claim("data", volume_name="pv-b", bound=True), local_pv("pv-b", "b", phase="Bound")],
         {"a": [ERR_NODE_CONFLICT], "b": [], "c": [ERR_NODE_CONFLICT]}),
        ("a bound claim's PV is missing", [claim("data", volume_name="gone", bound=True)],
         {"a": [ERR_PV_NOT_EXIST], "b": [ERR_PV_NOT_EXIST], "c": [ERR_PV_NOT_EXIST]}),
        ("an unbound Immediate claim",
         [claim("data", storage_class="immediate"), IMMEDIATE],
         {n: [UNBOUND_IMMEDIATE] for n in "abc"}),
        ("a missing claim", [], {n: ['persistentvolumeclaim "data" not found'] for n in "abc"}),
        ("a lost claim", [claim("data", volume_name="pv", phase="Lost")],
         {n: ['persistentvolumeclaim "data" bound to non-existent persistentvolume "pv"']
          for n in "abc"}),
    ],
)
def test_filter(case: str, storage: list[dict[str, Any]], want: dict[str, list[str]]) -> None:
    nodes = [node("a", zone="zone-a"), node("b", zone="zone-b"), node("c")]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "data"), nodes, storage=storage)
    assert got == want, case


def test_two_claims_of_a_pod_never_take_one_pv_and_the_smallest_fitting_pv_wins() -> None:
    storage = [claim("small", storage_class="local", storage="5Gi"),
               claim("big", storage_class="local", storage="10Gi"), LOCAL,
               local_pv("pv-10", "a"), local_pv("pv-50", "a", size="50Gi"),
               local_pv("pv-20", "a", size="20Gi"), local_pv("pv-b", "b")]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "small", "big"), NODES,
                       storage=storage)
    assert got == {"a": [], "b": [ERR_BIND_CONFLICT], "c": [ERR_BIND_CONFLICT]}


@pytest.mark.parametrize(("pv_size", "want"), [("200Gi", 75), ("100Gi", 50)])
def test_score_prefers_free_space(pv_size: str, want: int) -> None:
    """Upstream's case: a 50Gi claim scores 75 on a 200Gi PV, 50 on a 100Gi one."""
    storage = [claim("data", storage_class="local", storage="50Gi"), LOCAL,
               local_pv("pv-a", "a", size=pv_size)]
    got = score_nodes(SPEC, None, with_claims(pod("p"), "data"), NODES, storage=storage)
    assert got["a"] == want


def test_pods_with_local_volumes_go_where_their_volumes_are() -> None:
    storage = [claim("d0", storage_class="local"), claim("d1", storage_class="local"),
               claim("d2", storage_class="local"), LOCAL,
               local_pv("pv-a", "a"), local_pv("pv-b", "b")]
    pods = [with_claims(pod(f"w{i}"), f"d{i}") for i in range(3)]
    # Nothing answers for the PV controller: every PreBind times out (600 s on the manual
    # clock). What matters here is what was written: each PV to one claim.
    s, ports = scheduler_of(None, nodes=NODES, pods=pods, storage=storage)
    run_cycles(s)
    claims_of = {obj["metadata"]["name"]: obj["spec"]["claimRef"]["name"]
                 for _, obj in ports.written}
    assert sorted(claims_of) == ["pv-a", "pv-b"]
    assert len(set(claims_of.values())) == 2
    assert [f for f in ports.failures if "context deadline exceeded" in f[2]]


class ControllerClock(ManualClock):
    """Stands in for the PV controller: at the first poll, the claim and its PV are bound."""

    intake: Intake | None = None

    def advance(self, seconds: float) -> None:
        super().advance(seconds)
        if self.intake is None:
            return
        bound_pv = local_pv("pv-a", "a", phase="Bound", resource_version="5",
                            claim_ref={"namespace": "default", "name": "data",
                                       "uid": "uid-default-data"})
        bound_claim = claim("data", storage_class="local", volume_name="pv-a", bound=True,
                            resource_version="6")
        self.intake.on_volume_object("persistentvolumes", "MODIFIED", bound_pv)
        self.intake.on_volume_object("persistentvolumeclaims", "MODIFIED", bound_claim)


def test_reserve_writes_the_claim_ref_and_pre_bind_waits_for_the_pv_controller() -> None:
    storage = [claim("data", storage_class="local"), LOCAL, local_pv("pv-a", "a")]
    clock = ControllerClock()
    s, ports = scheduler_of(None, nodes=NODES, pods=[with_claims(pod("p"), "data")],
                            storage=storage, clock=clock)
    clock.intake = Intake(s)
    run_cycles(s)
    assert ports.bound == [("default/p", "a")]
    ((path, written),) = ports.written
    assert path == "/api/v1/persistentvolumes/pv-a"
    assert written["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
        "name": "data", "uid": "uid-default-data", "resourceVersion": "1"}
    assert written["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_provisioning_writes_the_selected_node() -> None:
    storage = [claim("data", storage_class="dynamic"), DYNAMIC]
    s, ports = scheduler_of(None, nodes=[node("a")], pods=[with_claims(pod("p"), "data")],
                            storage=storage)
    run_cycles(s)
    ((path, written),) = ports.written
    assert path == "/api/v1/namespaces/default/persistentvolumeclaims/data"
    assert written["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "a"
    assert ports.failures[0][1:] == (
        "SchedulerError",
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded')


def test_one_pv_for_two_pods_goes_to_the_first_and_the_second_waits() -> None:
    storage = [claim("d0", storage_class="local"), claim("d1", storage_class="local"), LOCAL,
               local_pv("pv-a", "a")]
    pods = [with_claims(pod("w0"), "d0"), with_claims(pod("w1"), "d1")]
    s, ports = scheduler_of(None, nodes=[node("a")], pods=pods, storage=storage)
    binding: VolumeBinding = s.profiles["secondary-scheduler"].instances["VolumeBinding"]
    first = pod_info("w0")
    # Both are decided before either PreBind ends: w0 reserves pv-a, w1 finds it taken.
    s.submit_binding = lambda fn, *args: None  # type: ignore[method-assign]
    run_cycles(s)
    assert s.cache.is_assumed(first.uid)
    assert [f[0] for f in ports.failures] == ["default/w1"]
    assert "didn't find available persistent volumes to bind" in ports.failures[0][2]
    assert "pv-a" in binding._volumes  # reserved for w0 until its binding cycle ends


def test_bad_arguments_are_refused() -> None:
    from scheduler.plugin_api import ConfigError

    config = {"profiles": [{"schedulerName": "s", "pluginConfig": [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": -1}}]}]}
    with pytest.raises(ConfigError, match=r"bindTimeoutSeconds: Invalid value: -1: invalid "
                                          "BindTimeoutSeconds, should not be a negative value"):
        schedule(config, [node("n")], [])
    assert pod_info("p").claims == ()


def test_a_pod_waiting_for_its_immediate_claim_moves_when_the_claim_is_bound() -> None:
    storage = [claim("data", storage_class="immediate"), IMMEDIATE]
    s, ports = scheduler_of(None, nodes=[node("a")], pods=[with_claims(pod("p"), "data")],
                            storage=storage)
    run_cycles(s)
    assert ports.failures[0][2].startswith(f"0/1 nodes are available: {UNBOUND_IMMEDIATE}")
    assert s.queue.pending_pods()["unschedulable"] == ["default/p"]
    intake = Intake(s)
    # Another claim changing does not move it; its own claim being bound does.
    intake.on_volume_object("persistentvolumeclaims", "ADDED",
                            claim("other", storage_class="immediate"))
    assert s.queue.pending_pods()["unschedulable"] == ["default/p"]
    intake.on_volume_object("persistentvolumes", "ADDED", volume(
        "pv", storage_class="immediate", phase="Bound",
        claim_ref={"namespace": "default", "name": "data", "uid": "uid-default-data"}))
    intake.on_volume_object("persistentvolumeclaims", "MODIFIED", claim(
        "data", storage_class="immediate", volume_name="pv", bound=True, resource_version="2"))
    assert s.queue.pending_pods()["unschedulable"] == []


CAPACITY_DRIVER = "example.com/fake"


@pytest.mark.parametrize(
    ("case", "capacities", "want"),
    [
        ("room on a only", [storage_capacity("cap-a", "dynamic", "10Gi", hostname="a")],
         {"a": [], "b": [ERR_NOT_ENOUGH_SPACE], "c": [ERR_NOT_ENOUGH_SPACE]}),
        ("too little room", [storage_capacity("cap-a", "dynamic", "1Gi", hostname="a")],
         {n: [ERR_NOT_ENOUGH_SPACE] for n in "abc"}),
        ("maximumVolumeSize is the limit when set",
         [storage_capacity("cap-a", "dynamic", "100Gi", hostname="a",
                           maximum_volume_size="1Gi")],
         {n: [ERR_NOT_ENOUGH_SPACE] for n in "abc"}),
        ("another class's room does not count",
         [storage_capacity("cap-a", "other", "10Gi", hostname="a")],
         {n: [ERR_NOT_ENOUGH_SPACE] for n in "abc"}),
    ],
)
def test_provisioning_needs_room_where_the_driver_publishes_capacity(
    case: str, capacities: list[dict[str, Any]], want: dict[str, list[str]]
) -> None:
    storage = [claim("data", storage_class="dynamic", storage="5Gi"), DYNAMIC,
               csi_driver(CAPACITY_DRIVER, storage_capacity=True), *capacities]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "data"), NODES, storage=storage)
    assert got == want, case


def test_a_driver_without_published_capacity_is_not_checked() -> None:
    storage = [claim("data", storage_class="dynamic", storage="5Gi"), DYNAMIC,
               csi_driver(CAPACITY_DRIVER)]
    got = filter_nodes(SPEC, None, with_claims(pod("p"), "data"), NODES, storage=storage)
    assert got == {n: [] for n in "abc"}


def test_provisions_score_by_the_room_left() -> None:
    storage = [claim("data", storage_class="dynamic", storage="25Gi"), DYNAMIC,
               csi_driver(CAPACITY_DRIVER, storage_capacity=True),
               storage_capacity("cap-a", "dynamic", "100Gi", hostname="a"),
               storage_capacity("cap-b", "dynamic", "50Gi", hostname="b")]
    got = score_nodes(SPEC, None, with_claims(pod("p"), "data"), NODES, storage=storage)
    assert got == {"a": 75, "b": 50, "c": 0}


def test_the_expected_node_is_reported_before_pre_bind_waits_only_when_it_will() -> None:
    storage = [claim("data", storage_class="local"), LOCAL, local_pv("pv-a", "a")]
    clock = ControllerClock()
    s, ports = scheduler_of(None, nodes=NODES,
                            pods=[with_claims(pod("p"), "data"), pod("plain")],
                            storage=storage, clock=clock)
    clock.intake = Intake(s)
    run_cycles(s)
    assert ports.expected == [("default/p", "a")]
    assert {key for key, _ in ports.bound} == {"default/p", "default/plain"}


def test_default_args_are_upstreams_v1_defaults() -> None:
    assert SPEC.default_args == {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    }


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        pytest.param({"bindTimeoutSeconds": "10"},
                     ["A.bindTimeoutSeconds: Invalid value: '10': invalid BindTimeoutSeconds, "
                      "should not be a negative value"], id="a timeout that is not an integer"),
        pytest.param({"bindTimeoutSeconds": True},
                     ["A.bindTimeoutSeconds: Invalid value: True: invalid BindTimeoutSeconds, "
                      "should not be a negative value"], id="a boolean timeout"),
        pytest.param({"shape": []},
                     ["A.shape: Required value: at least one point must be specified"],
                     id="an empty shape"),
        pytest.param({"shape": "flat"},
                     ["A.shape: Required value: at least one point must be specified"],
                     id="a shape that is not a list"),
        pytest.param({"shape": [{"utilization": 50}, {"utilization": 50, "score": 11}]},
                     ["A.shape[1].utilization: Invalid value: 50: values must be sorted in "
                      "increasing order",
                      "A.shape[1].score: Invalid value: 11: not in valid range [0, 10]"],
                     id="unsorted and out of range, both reported"),
        pytest.param({"shape": [{"utilization": "x", "scor": 1}], "extra": 1},
                     ["A.extra: Invalid value: unknown field",
                      "A.shape[0].scor: Invalid value: unknown field",
                      "A.shape[0].utilization: Invalid value: 'x': not in valid range [0, 100]"],
                     id="unknown fields and a bad type, all reported"),
        pytest.param({"bindTimeoutSeconds": -1, "shape": [{"utilization": 101}]},
                     ["A.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, "
                      "should not be a negative value",
                      "A.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]"],
                     id="every field's problem"),
    ],
)
def test_validate_volume_binding_args(args: dict[str, Any], lines: list[str]) -> None:
    """validation_pluginargs.go ValidateVolumeBindingArgs and validateFunctionShape."""
    from scheduler.plugin_api import ConfigError
    assert SPEC.validate is not None
    with pytest.raises(ConfigError) as excinfo:
        SPEC.validate({**SPEC.default_args, **args}, "A")
    assert str(excinfo.value).splitlines() == lines
