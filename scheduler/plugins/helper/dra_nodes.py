"""Which nodes a ResourceSlice or a device is on (upstream's ``NodeMatches`` in
``structured/internal/incubating/pools_incubating.go``): shared by DynamicResources'
allocator and the NodeResources scorers' count of DRA-backed extended resources."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.plugin_api import NodeSelector


def node_matches(
    node_name: str,
    labels: Mapping[str, str],
    name_to_match: str | None,
    all_nodes: bool | None,
    selector: NodeSelector | None,
) -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector; none of them -> False."""
    if name_to_match:
        return node_name == name_to_match
    if all_nodes:
        return True
    if selector is not None:
        return selector.matches(labels, node_name)
    return False
