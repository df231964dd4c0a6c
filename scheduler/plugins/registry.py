"""The plugins a scheduler can be configured with: the in-tree ones (upstream's
NewInTreeRegistry) and those installed with pip under the ``secondary_scheduler.plugins``
entry-point group."""

from __future__ import annotations

from importlib.metadata import entry_points

from scheduler.plugin_api import (
    ConfigError,
    PluginSpec,
    Registry,
)
from scheduler.plugins import (
    avoid_bounce_back,
    balanced_allocation,
    default_binder,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_group_preemption,
    pod_topology_spread,
    priority_sort,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

PLUGIN_MODULES = (
    priority_sort,
    node_name,
    node_unschedulable,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    volume_restrictions,
    node_volume_limits,
    volume_binding,
    volume_zone,
    pod_topology_spread,
    inter_pod_affinity,
    dynamic_resources,
    pod_group_preemption,
    balanced_allocation,
    image_locality,
    avoid_bounce_back,
    default_binder,
    node_declared_features,
    gang_scheduling,
)


def default_registry() -> Registry:
    registry = Registry()
    for module in PLUGIN_MODULES:
        registry.register(module.SPEC)
    return registry


# An installed package declares ``Name = "module:SPEC"`` in this group (pyproject.toml:
# [project.entry-points."secondary_scheduler.plugins"]); the name is the plugin's.
ENTRY_POINT_GROUP = "secondary_scheduler.plugins"


def installed_registry() -> Registry:
    """The in-tree plugins and every installed one. A plugin that cannot be loaded, is not a
    PluginSpec, or takes a name already taken fails start-up with both origins named."""
    registry = default_registry()
    origins: dict[str, str] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist.name if entry.dist is not None else "an unknown distribution"
        origin = f"{dist} ({entry.value})"
        try:
            spec = entry.load()
        except Exception as exc:
            raise ConfigError(f"plugin {entry.name!r} from {origin} could not be loaded: "
                              f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(spec, PluginSpec):
            raise ConfigError(f"plugin {entry.name!r} from {origin} is a "
                              f"{type(spec).__name__}, not a PluginSpec")
        if spec.name != entry.name:
            raise ConfigError(f"plugin {entry.name!r} from {origin} calls itself {spec.name!r}")
        if registry.get(spec.name) is not None:
            taken_by = origins.get(spec.name, "a built-in plugin")
            raise ConfigError(f"plugin {spec.name!r} from {origin} clashes with {taken_by}")
        registry.register(spec)
        origins[spec.name] = origin
    return registry
