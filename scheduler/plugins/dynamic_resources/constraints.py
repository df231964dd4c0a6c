"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``.

Upstream: ``matchAttributeConstraint`` in ``allocator_incubating.go`` and
``distinctAttributeConstraint`` in ``constraint.go``. A constraint with no ``requests``
covers every request; ``req`` covers all of its subrequests, ``req/sub`` only that one.
The attribute is looked up by its fully qualified name, or unqualified when its domain is
the device's driver; a device without it never satisfies the constraint. Values compare by
type and value (versions as strings).
"""

from __future__ import annotations

from typing import Protocol

from scheduler.plugin_api import Device, DeviceAttribute, DeviceConstraint, DeviceID


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    """``lookupAttribute``."""
    found = device.attributes.get(name)
    if found is not None:
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id[0]:
        return None
    return device.attributes.get(ident)


class Constraint(Protocol):
    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        """Record the device if it keeps the constraint satisfied; False (nothing kept) if not."""

    def remove(self, request: str, sub_request: str) -> None:
        """Forget the most recently added device of this request."""


class _Scoped:
    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return bool(sub_request) and f"{request}/{sub_request}" in self.requests


class MatchAttribute(_Scoped):
    """Every device in scope has the same value of the attribute."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: DeviceAttribute | None = None
        self.count = 0

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute)
        if attribute is None:
            return False
        if self.count == 0:
            self.value = attribute
        elif attribute != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.count -= 1


class DistinctAttribute(_Scoped):
    """Every device in scope has a different value of the attribute."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: list[DeviceAttribute] = []

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute)
        if attribute is None or attribute in self.values:
            return False
        self.values.append(attribute)
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.values.pop()


def make_constraint(spec: DeviceConstraint) -> Constraint | None:
    """The constraint a claim declares; None for one of an unknown kind."""
    if spec.match_attribute is not None:
        return MatchAttribute(spec.requests, spec.match_attribute)
    if spec.distinct_attribute is not None:
        return DistinctAttribute(spec.requests, spec.distinct_attribute)
    return None
