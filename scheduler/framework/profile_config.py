"""The framework's configuration: the ``profiles`` of a KubeSchedulerConfiguration, each with
its plugins per extension point and their ``pluginConfig``.

Only what this scheduler implements is accepted: an unknown field, plugin or argument is an
error that names the field, so a typo never silently falls back to a default. The default
profile is upstream's default plugin list (v1.37) without the DRA plugins, which need
ResourceClaim watches this scheduler does not have. The rest of the file (client connection,
leader election, extenders, the rescheduler) is the component's: :mod:`scheduler.config`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.config_fields import Problems, Section
from scheduler.framework.registry import Registry

DEFAULT_SCHEDULER_NAME = "secondary-scheduler"

# Upstream's MultiPoint defaults (pkg/scheduler/apis/config/v1/default_plugins.go, v1.37),
# in order, with their score weights, and AvoidBounceBack.
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("PrioritySort", 0),
    ("NodeName", 0),
    ("NodeUnschedulable", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    # Before DefaultPreemption: its PostFilter frees an idle claim before anybody is evicted.
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    # Ours, not upstream's: scores nothing unless the rescheduler or a kubelet rejection
    # left a record for the pod's controller (scheduler/plugins/avoid_bounce_back.py).
    ("AvoidBounceBack", 100),
    ("DefaultBinder", 0),
)

EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

# Upstream's extension points of workload (pod group) scheduling, behind its feature gates:
# fields of v1 that this scheduler refuses, with the reason, rather than ignores.
WORKLOAD_POINTS = ("placementGenerate", "placementScore", "podGroupPostFilter")
NO_WORKLOAD_SCHEDULING = (
    "this scheduler has no workload (pod group) scheduling cycle, where upstream runs "
    "these plugins: it places pods one at a time")
_PROFILE_FIELDS = ("schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore")
_SET_FIELDS = ("enabled", "disabled")


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int


@dataclass(frozen=True)
class ProfileConfig:
    scheduler_name: str
    # Per extension point (upstream's camelCase names), the plugins in order.
    points: Mapping[str, tuple[PluginRef, ...]]
    args: Mapping[str, Mapping[str, Any]]
    percentage_of_nodes_to_score: int | None = None
    # The multiPoint set after merging with the defaults: what --write-config-to prints,
    # as upstream's defaulting leaves it.
    multi_point: tuple[PluginRef, ...] = ()


def default_plugin_refs() -> list[PluginRef]:
    return [PluginRef(n, w) for n, w in DEFAULT_PLUGINS]


def parse_profiles(raw: Any, path: str, registry: Registry,
                   problems: Problems) -> tuple[ProfileConfig, ...]:
    if raw is not None and not isinstance(raw, list):
        problems.invalid(path, raw, "must be a list")
        raw = None
    raw_profiles = raw or [{}]
    profiles = tuple(
        parse_profile(p, f"{path}[{i}]", registry, problems, single=len(raw_profiles) == 1)
        for i, p in enumerate(raw_profiles)
    )
    names = [p.scheduler_name for p in profiles]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.add(f"{path}[{i}].schedulerName", f"duplicate name {name!r}")
    if len({p.points["queueSort"] for p in profiles}) > 1:
        problems.add(path, "all profiles must use the same queueSort plugin")
    return profiles


def parse_profile(raw: Any, path: str, registry: Registry, problems: Problems, *,
                  single: bool) -> ProfileConfig:
    section = Section(raw, path, problems, _PROFILE_FIELDS)
    name = _scheduler_name(section, single=single)
    plugins = section.section("plugins", ("multiPoint", *EXTENSION_POINTS, *WORKLOAD_POINTS))
    for point in WORKLOAD_POINTS:
        if plugins.has(point):
            problems.add(plugins.at(point), NO_WORKLOAD_SCHEDULING)
    multi = _apply_set(default_plugin_refs(), plugins, "multiPoint", registry, point=None)
    enabled_names = {ref.name for ref in multi}
    points: dict[str, tuple[PluginRef, ...]] = {}
    for point in EXTENSION_POINTS:
        base = [ref for ref in multi if implements(registry, ref.name, point)]
        refs = _apply_set(base, plugins, point, registry, point=point)
        points[point] = point_plugins(point, refs)
        enabled_names |= {ref.name for ref in refs}
    if len(points["queueSort"]) != 1:
        problems.add(plugins.at("queueSort"), "exactly one queueSort plugin is required")
    if not points["bind"]:
        problems.add(plugins.at("bind"), "at least one bind plugin is required")
    args = _parse_plugin_config(section, registry, enabled_names)
    percentage = None
    if section.has("percentageOfNodesToScore"):
        percentage = section.integer("percentageOfNodesToScore", 0, minimum=0, maximum=100)
    return ProfileConfig(scheduler_name=name, points=points, args=args,
                         percentage_of_nodes_to_score=percentage, multi_point=tuple(multi))


def _scheduler_name(section: Section, *, single: bool) -> str:
    if not section.has("schedulerName"):
        if not single:
            section.problems.add(section.at("schedulerName"),
                                 "required when there are several profiles")
        return DEFAULT_SCHEDULER_NAME
    name = section.string("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not name:
        section.problems.add(section.at("schedulerName"), "must be a non-empty string")
        return DEFAULT_SCHEDULER_NAME
    return name


def point_plugins(point: str, refs: Sequence[PluginRef]) -> tuple[PluginRef, ...]:
    """The plugins of one point as the framework runs them: a Score plugin weighted 0 (or
    not at all) counts once, as upstream's framework gives it weight 1."""
    if point == "score":
        return tuple(PluginRef(r.name, r.weight or 1) for r in refs)
    return tuple(refs)


def _apply_set(base: list[PluginRef], plugins: Section, key: str, registry: Registry, *,
               point: str | None) -> list[PluginRef]:
    """Upstream's merge: ``disabled`` removes (``*`` removes all), ``enabled`` appends or
    overrides in place."""
    if not plugins.has(key):
        return base
    plugin_set = plugins.section(key, _SET_FIELDS)
    out = list(base)
    for j, item in enumerate(plugin_set.items("disabled")):
        entry = Section(item, f"{plugin_set.at('disabled')}[{j}]", plugins.problems, ("name",))
        name = _plugin_name(entry, registry, allow_star=True)
        if name is not None:
            out = [] if name == "*" else [ref for ref in out if ref.name != name]
    for j, item in enumerate(plugin_set.items("enabled")):
        entry = Section(item, f"{plugin_set.at('enabled')}[{j}]", plugins.problems,
                        ("name", "weight"))
        name = _plugin_name(entry, registry, allow_star=False)
        weight = entry.integer("weight", 0, minimum=0, maximum=100)
        if name is None:
            continue
        if point is not None and not implements(registry, name, point):
            plugins.problems.add(entry.at("name"), f"plugin {name!r} does not implement {point}")
            continue
        existing = next((ref for ref in out if ref.name == name), None)
        if existing is not None:
            out = [PluginRef(name, weight or existing.weight) if r is existing else r for r in out]
        else:
            out.append(PluginRef(name, weight))
    return out


def _plugin_name(entry: Section, registry: Registry, *, allow_star: bool) -> str | None:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        if entry.ok:
            entry.problems.add(entry.at("name"), "Required value")
        return None
    if name == "*" and allow_star:
        return name
    if registry.get(name) is None:
        entry.problems.add(entry.at("name"),
                           f"unknown plugin {name!r} (known: {', '.join(registry.names())})")
        return None
    return name


def _parse_plugin_config(profile: Section, registry: Registry,
                         enabled: set[str]) -> dict[str, Mapping[str, Any]]:
    problems = profile.problems
    out: dict[str, Mapping[str, Any]] = {}
    for j, item in enumerate(profile.items("pluginConfig")):
        entry = Section(item, f"{profile.at('pluginConfig')}[{j}]", problems, ("name", "args"))
        name = _plugin_name(entry, registry, allow_star=False)
        if name is None:
            continue
        if name in out:
            problems.add(entry.at("name"), f"duplicate pluginConfig for {name!r}")
            continue
        spec = registry.get(name)
        assert spec is not None
        raw_args, args_path = entry.get("args"), entry.at("args")
        if raw_args is not None and not isinstance(raw_args, Mapping):
            problems.invalid(args_path, raw_args, "must be a mapping")
            raw_args = None
        given = {k: v for k, v in (raw_args or {}).items() if k not in ("apiVersion", "kind")}
        merged = {**spec.default_args, **given}
        if spec.validate is not None:
            with problems.gathering():
                spec.validate(merged, args_path)
        elif given:
            problems.add(args_path, f"plugin {name!r} takes no arguments")
        out[name] = merged
    for name in sorted(enabled - set(out)):
        spec = registry.get(name)
        assert spec is not None
        defaults = dict(spec.default_args)
        if spec.validate is not None:
            # A plugin whose args have a required field must be given a pluginConfig.
            with problems.gathering():
                spec.validate(defaults, f"{profile.at('pluginConfig')}[{name}].args")
        out[name] = defaults
    return out


def implements(registry: Registry, name: str, point: str) -> bool:
    spec = registry.get(name)
    return spec is not None and point in spec.points


def encode_profile(profile: ProfileConfig, registry: Registry) -> dict[str, Any]:
    """The profile as a KubeSchedulerProfile that parses back to it: multiPoint as upstream's
    defaulting leaves it, and a point spelled out only where it is not multiPoint's."""
    multi = list(profile.multi_point)
    multi_point: dict[str, Any] = {"enabled": _refs(multi)}
    if multi != default_plugin_refs():
        multi_point["disabled"] = [{"name": "*"}]
    plugins: dict[str, Any] = {"multiPoint": multi_point}
    for point in EXTENSION_POINTS:
        derived = point_plugins(point, [r for r in multi if implements(registry, r.name, point)])
        if derived != profile.points[point]:
            plugins[point] = {"enabled": _refs(profile.points[point]),
                              "disabled": [{"name": "*"}]}
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    out["plugins"] = plugins
    # By name, as upstream's captured profile (framework/runtime/framework.go).
    out["pluginConfig"] = [{"name": name, "args": _plain(args)}
                           for name, args in sorted(profile.args.items()) if args]
    return out


def _refs(refs: Sequence[PluginRef]) -> list[dict[str, Any]]:
    return [{"name": r.name, "weight": r.weight} if r.weight else {"name": r.name} for r in refs]


def _plain(value: Any) -> Any:
    """Mappings as dicts and sequences as lists, for YAML."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
