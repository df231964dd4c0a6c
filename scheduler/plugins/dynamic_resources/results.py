"""The configs of an ``AllocationResult``, shared by the full search and the fast path.

Upstream: the end of ``Allocator.Allocate`` in ``allocator_incubating.go``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.plugin_api import AllocationConfiguration, DeviceClass, ResourceClaim


def claim_configs(
    claim: ResourceClaim, names: Sequence[str], classes: Sequence[DeviceClass]
) -> tuple[AllocationConfiguration, ...]:
    """Class configs (once per class, naming every request that used it), then the claim's
    configs for used requests; one covering every request names none. ``names`` and
    ``classes`` are the request (or chosen subrequest) name and class per request."""
    configs: list[tuple[str, list[str], Mapping[str, object]]] = []
    class_ranges: dict[str, range] = {}
    for name, device_class in zip(names, classes, strict=True):
        known = class_ranges.get(device_class.name)
        if known is not None:
            for i in known:
                configs[i][1].append(name)
            continue
        first = len(configs)
        configs.extend(("FromClass", [name], c.opaque) for c in device_class.config)
        class_ranges[device_class.name] = range(first, len(configs))
    for config in claim.spec.config:
        if not config.requests or any(
            request.name in config.requests or names[ri] in config.requests
            for ri, request in enumerate(claim.spec.requests)
        ):
            configs.append(("FromClaim", list(config.requests), config.opaque))
    result = []
    for source, requests, opaque in configs:
        covers_all = bool(requests) and all(
            request.name in requests or names[ri] in requests
            for ri, request in enumerate(claim.spec.requests)
        )
        result.append(
            AllocationConfiguration(
                source, None if covers_all or not requests else tuple(requests), opaque
            )
        )
    return tuple(result)
