"""Why DynamicResources rejects a node, with the numbers (``kubectl why``, ``explain``).

The allocator answers only "no solution on this node". For a person the useful question is
which request ran out of what, so each request of a claim to allocate is counted on its own:
the devices the node can use, those of the request's class (its selectors), those the
request's own selectors accept, those without a taint it does not tolerate, and those no
other claim holds. A request whose count the free devices cover is not the problem alone;
when every request is covered, what is left is the combination (constraints, counters,
capacity). The scheduling cycle never runs this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.plugin_api import (
    ALL,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    CELError,
    Device,
    DeviceClass,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
    SelectorCache,
)
from scheduler.plugins.dynamic_resources.allocator import AllocatedState
from scheduler.plugins.dynamic_resources.view import claim_ref
from scheduler.plugins.helper.dra_nodes import node_matches


@dataclass
class Census:
    """Devices a request may take on one node, narrowed step by step."""

    on_node: int = 0
    in_class: int = 0
    selected: int = 0
    tolerated: int = 0
    free: int = 0
    error: str = ""


@dataclass(frozen=True)
class NodeDevices:
    """What one node offers: (slice, device) pairs the node can use."""

    devices: Sequence[tuple[ResourceSlice, Device]]

    @classmethod
    def of(cls, slices: Sequence[ResourceSlice], node: str, labels: Mapping[str, str]
           ) -> NodeDevices:
        found: list[tuple[ResourceSlice, Device]] = []
        for s in slices:
            if s.per_device_node_selection:
                found.extend((s, d) for d in s.devices if node_matches(
                    node, labels, d.node_name, d.all_nodes, d.node_selector))
            elif node_matches(node, labels, s.node_name, s.all_nodes, s.node_selector):
                found.extend((s, d) for d in s.devices)
        return cls(found)


def census(
    offered: NodeDevices, request: DeviceSubRequest, device_class: DeviceClass | None,
    allocated: AllocatedState, cel_cache: SelectorCache,
) -> Census:
    out = Census(on_node=len(offered.devices))
    if device_class is None:
        out.error = f"device class {request.device_class_name} does not exist"
        return out
    for s, device in offered.devices:
        try:
            if not _passes(cel_cache, device_class.selectors, s, device):
                continue
            out.in_class += 1
            if not _passes(cel_cache, request.selectors, s, device):
                continue
        except CELError as err:
            out.error = f"selector error on device {device.name}: {err}"
            return out
        out.selected += 1
        if _untolerated(device, request):
            continue
        out.tolerated += 1
        if not allocated.is_allocated((s.driver, s.pool, device.name)) or \
                device.allow_multiple_allocations:
            out.free += 1
    return out


def _passes(cel_cache: SelectorCache, selectors: Sequence[str | None], s: ResourceSlice,
            device: Device) -> bool:
    for expression in selectors:
        compiled = cel_cache.get_or_compile(expression or "")
        if compiled.error is not None:
            raise CELError(compiled.error)
        if not compiled.matches(device.cel_input(s.driver)):
            return False
    return True


def _untolerated(device: Device, request: DeviceSubRequest) -> bool:
    return any(taint.effect in (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)
               and not any(t.tolerates(taint) for t in request.tolerations)
               for taint in device.taints)


def request_lines(
    claim: ResourceClaim, offered: NodeDevices, classes: Mapping[str, DeviceClass],
    allocated: AllocatedState, cel_cache: SelectorCache,
) -> tuple[list[str], bool]:
    """One line per request (each ``firstAvailable`` choice counted), and whether some
    request cannot be covered even alone."""
    lines: list[str] = []
    short = False
    for request in claim.spec.requests:
        subs = (request.exactly,) if request.exactly is not None else request.first_available
        covered = False
        for sub in subs:
            name = request.name if request.exactly is not None else f"{request.name}/{sub.name}"
            counted = census(offered, sub, classes.get(sub.device_class_name), allocated,
                             cel_cache)
            wanted = "all" if sub.allocation_mode == ALL else str(sub.count)
            enough = not counted.error and (
                counted.selected > 0 and counted.free == counted.selected
                if sub.allocation_mode == ALL else counted.free >= sub.count)
            covered = covered or enough
            lines.append(_line(claim, name, sub, wanted, counted))
        short = short or not covered
    return lines, short


def _line(claim: ResourceClaim, name: str, sub: DeviceSubRequest, wanted: str,
          c: Census) -> str:
    where = f"claim {claim_ref(claim)}, request {name} (class {sub.device_class_name})"
    if c.error:
        return f"{where}: {c.error}"
    return (f"{where}: wants {wanted}; {c.on_node} device(s) on the node, {c.in_class} of the "
            f"class, {c.selected} match the request's selectors, {c.tolerated} without an "
            f"untolerated taint, {c.free} free")


def combination_line(claim: ResourceClaim) -> str:
    constraints = [c.match_attribute or c.distinct_attribute or "" for c in
                   claim.spec.constraints]
    what = f" (constraints on {', '.join(constraints)})" if constraints else ""
    return (f"claim {claim_ref(claim)}: every request has enough free devices alone, but not "
            f"together{what}, or their counters or capacity are used up")
