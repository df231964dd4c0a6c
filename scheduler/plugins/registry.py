"""The in-tree plugins, by name (upstream's NewInTreeRegistry)."""

from __future__ import annotations

from scheduler.framework.registry import Registry
from scheduler.plugins import (
    balanced_allocation,
    default_binder,
    default_preemption,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    priority_sort,
    taint_toleration,
)

PLUGIN_MODULES = (
    priority_sort,
    node_name,
    node_unschedulable,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    pod_topology_spread,
    inter_pod_affinity,
    default_preemption,
    balanced_allocation,
    image_locality,
    default_binder,
)


def default_registry() -> Registry:
    registry = Registry()
    for module in PLUGIN_MODULES:
        registry.register(module.SPEC)
    return registry
