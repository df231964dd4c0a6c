"""Time the structured allocator on scheduler_perf's DRA shape (docs/dra.md, "The allocator").

``test/integration/scheduler_perf/dra/``: every node has one ResourceSlice of 10 devices of
``test-driver.cdi.k8s.io`` with 13 attributes and two capacities; the class selects
``device.driver == "test-driver.cdi.k8s.io"``; a pod's claim asks for one device. Printed:
building the allocator for the cycle (PreFilter) and one ``allocate`` per node (Filter), for an
empty cluster and for one whose devices are all allocated but one per node (the "full" case),
and the same with the CEL selector of ``selector_empty_500nodes``; each for a first cycle and
for the next one, which finds the devices' CEL inputs and selector verdicts kept.

    .venv/bin/python bench/dra_allocator.py [nodes]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from scheduler.model.dra_cel import SelectorCache
from scheduler.plugins.dynamic_resources.allocator import AllocatedState, Allocator

DRIVER = "test-driver.cdi.k8s.io"
SELECTOR = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)


def node_slice(node: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {f"attr{i}": {"int": i} for i in range(11)}
    attributes["driverVersion"] = {"version": "1.2.3"}
    attributes["resource.kubernetes.io/pciRoot"] = {"string": "pci0"}
    devices = [{"name": f"device-{i}", "attributes": attributes,
                "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}}
               for i in range(10)]
    return {"metadata": {"name": f"{node}-slice"}, "spec": {
        "driver": DRIVER, "nodeName": node, "devices": devices,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}}


def claim(selectors: list[str]) -> ResourceClaim:
    exactly: dict[str, Any] = {"deviceClassName": "test-class"}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return ResourceClaim.parse({"metadata": {"namespace": "ns", "name": "c"}, "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})


def run(nodes: int, full: bool, selectors: list[str]) -> None:
    names = [f"node-{i}" for i in range(nodes)]
    slices = [ResourceSlice.parse(node_slice(n)) for n in names]
    classes = {"test-class": DeviceClass.parse({"metadata": {"name": "test-class"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})}
    allocated = frozenset(
        (DRIVER, n, f"device-{i}") for n in names for i in range(9)) if full else frozenset()
    cache = SelectorCache()
    claims = [claim(selectors)]
    label = f"{nodes} nodes, {'full' if full else 'empty'}{', CEL selector' if selectors else ''}"
    for cycle in ("first cycle", "next cycle"):
        start = time.perf_counter()
        allocator = Allocator(AllocatedState(devices=allocated), classes, slices, cache)
        built = time.perf_counter()
        for n in names:
            assert allocator.allocate(n, {}, claims) is not None
        done = time.perf_counter()
        print(f"{label:38s} build {(built - start) * 1e3:6.2f} ms   "
              f"allocate {(done - built) / nodes * 1e6:7.1f} us/node ({cycle})")


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    for full in (False, True):
        for selectors in ([], [SELECTOR]):
            run(nodes, full, selectors)


if __name__ == "__main__":
    main()
