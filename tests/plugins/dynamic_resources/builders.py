"""Builders for the allocator table, named after upstream's helpers in
``structured/internal/allocatortesting/allocator_testing.go`` (``claimWithRequest``,
``sliceWithOneDevice``, ``deviceAllocationResult``...). They build API dicts, which the
test parses with the model's parsers, so parsing is exercised too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.dra import (
    AllocationConfiguration,
    DeviceRequestAllocationResult,
    DeviceToleration,
)
from scheduler.model.selectors import NodeSelector, NodeSelectorTerm, Requirement

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB_REQ0, SUB_REQ1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3 = "slice-1", "slice-2", "slice-3"
DEVICE0, DEVICE1, DEVICE2, DEVICE3 = "device-0", "device-1", "device-2", "device-3"
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
REGION_KEY, PLANET_KEY, EARTH = "region", "planet", "earth"
ALL_NODES = "nodeSelectionAll"
PER_DEVICE = "nodeSelectionPerDevice"

INT_ATTRIBUTE = f"{DRIVER_A}/numa"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
NON_EXISTENT_ATTRIBUTE = f"{DRIVER_A}/NonExistentAttribute"

TAINT_KEY, TAINT_VALUE, TAINT_VALUE2 = "taint-key", "taint-value", "taint-value-2"
TAINT_NONE = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "None"}
TAINT_NO_SCHEDULE = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": TAINT_KEY, "value": TAINT_VALUE2, "effect": "NoExecute"}
TOLERATION_NO_SCHEDULE = {"operator": "Exists", "key": TAINT_KEY, "effect": "NoSchedule"}
TOLERATION_NO_EXECUTE = {"operator": "Equal", "key": TAINT_KEY, "value": TAINT_VALUE2,
                         "effect": "NoExecute"}


def node(name: str, region: str) -> tuple[str, dict[str, str]]:
    return name, {REGION_KEY: region, PLANET_KEY: EARTH}


def device_class(name: str, driver: str, config_attribute: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config_attribute is not None:
        spec["config"] = [device_configuration(driver, config_attribute)]
    return {"metadata": {"name": name}, "spec": spec}


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def request(name: str, cls: str, count: int = 1, *selectors: str, **fields: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount",
                               "count": count}
    if selectors:
        exactly["selectors"] = [selector(s) for s in selectors]
    exactly.update(fields)
    return {"name": name, "exactly": exactly}


def all_request(name: str, cls: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All", **fields}}


def sub_request(name: str, cls: str, count: int = 1, *selectors: str, **fields: Any
                ) -> dict[str, Any]:
    sub: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount",
                           "count": count}
    if selectors:
        sub["selectors"] = [selector(s) for s in selectors]
    sub.update(fields)
    return sub


def request_with_prioritized_list(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: Any = (), config: Any = ()
          ) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def claim_with_request(name: str, req: str, cls: str, *constraints: dict[str, Any]
                       ) -> dict[str, Any]:
    return claim(name, request(req, cls, 1), constraints=constraints)


def with_tolerations(c: dict[str, Any], *tolerations: dict[str, Any]) -> dict[str, Any]:
    for r in c["spec"]["devices"]["requests"]:
        r["exactly"].setdefault("tolerations", []).extend(tolerations)
    return c


def match_attribute(name: str, *requests: str) -> dict[str, Any]:
    return {"matchAttribute": name, "requests": list(requests)}


def distinct_attribute(name: str, *requests: str) -> dict[str, Any]:
    return {"distinctAttribute": name, "requests": list(requests)}


def device(name: str, capacity: dict[str, str] | None = None,
           attributes: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        d["attributes"] = attributes
    d.update(fields)
    return d


def counter_consumption(counter_set: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def resource_pool(name: str, count: int, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local_node_selector_raw(node_name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


def slice_with_devices(name: str, node_selection: Any, pool: Any, driver: str,
                       *devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "driver": driver,
        "pool": resource_pool(pool, 1) if isinstance(pool, str) else pool,
        "devices": list(devices),
    }
    if isinstance(node_selection, dict):
        s["nodeSelector"] = node_selection
    elif node_selection == ALL_NODES:
        s["allNodes"] = True
    elif node_selection == PER_DEVICE:
        s["perDeviceNodeSelection"] = True
    else:
        s["nodeName"] = node_selection
    s.update(spec)
    return {"metadata": {"name": name}, "spec": s}


def slice_with_one_device(name: str, node_selection: Any, pool: Any, driver: str
                          ) -> dict[str, Any]:
    return slice_with_devices(name, node_selection, pool, driver, device(DEVICE1))


def slice_with_multiple_devices(name: str, node_selection: Any, pool: Any, driver: str,
                                count: int) -> dict[str, Any]:
    return slice_with_devices(name, node_selection, pool, driver,
                              *(device(f"device-{i}") for i in range(count)))


def slice_with_counter_sets(name: str, node_selection: Any, pool: Any, driver: str,
                            *sets: dict[str, Any]) -> dict[str, Any]:
    s = slice_with_devices(name, node_selection, pool, driver)
    s["spec"]["sharedCounters"] = list(sets)
    del s["spec"]["devices"]
    return s


def toleration(raw: dict[str, Any]) -> DeviceToleration:
    return DeviceToleration(key=raw.get("key", ""), operator=raw.get("operator", "Equal"),
                            value=raw.get("value", ""), effect=raw.get("effect", ""))


def device_allocation_result(req: str, driver: str, pool: str, dev: str, admin: bool = False,
                             *tolerations: dict[str, Any], **fields: Any
                             ) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        request=req, driver=driver, pool=pool, device=dev, admin_access=True if admin else None,
        tolerations=tuple(toleration(t) for t in tolerations), **fields)


def multiple_device_allocation_results(req: str, driver: str, pool: str, count: int,
                                       start: int) -> list[DeviceRequestAllocationResult]:
    return [device_allocation_result(req, driver, pool, f"device-{i}")
            for i in range(start, start + count)]


def local_node_selector(node_name: str) -> NodeSelector:
    name_in = Requirement("metadata.name", "In", (node_name,))
    return NodeSelector((NodeSelectorTerm((), (name_in,)),))


def label_selector(*requirements: tuple[str, str], fields: tuple[str, ...] = ()) -> NodeSelector:
    return NodeSelector((NodeSelectorTerm(
        tuple(Requirement(k, "In", (v,)) for k, v in requirements),
        tuple(Requirement("metadata.name", "In", (f,)) for f in fields),
    ),))


@dataclass
class Expect:
    """``allocationResult(selector, results...)`` (config nil) or with ``config``."""

    node_selector: NodeSelector | None
    results: Sequence[DeviceRequestAllocationResult]
    config: Sequence[AllocationConfiguration] = ()


@dataclass
class Case:
    claims: list[dict[str, Any]]
    classes: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    node: tuple[str, dict[str, str]] = field(default_factory=lambda: node(NODE1, REGION1))
    allocated: list[tuple[str, str, str]] = field(default_factory=list)
    shared: list[tuple[str, str, str]] = field(default_factory=list)
    aggregated: dict[tuple[str, str, str], dict[str, int]] = field(default_factory=dict)
    expect: list[Expect] | None = None
    error: str | None = None


