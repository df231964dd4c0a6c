"""Plugin registry: plugin names mapped to factories, as upstream's in-tree registry.

A plugin is registered by its :class:`PluginSpec`: a name, a factory ``(args, handle)``, and
for its arguments either a typed schema (``args``: a dataclass, see
:mod:`scheduler.framework.args`) or ``default_args`` plus a ``validate`` function raising
:class:`ConfigError` that names the offending field. The registry is the only place that
lists them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from scheduler.framework.args import decode_args, default_args
from scheduler.framework.errors import ConfigError as ConfigError
from scheduler.framework.handle import Handle
from scheduler.framework.interface import Plugin
from scheduler.framework.points import POINT_METHODS as POINT_METHODS
from scheduler.framework.points import check_plugin, check_point_names, points_of

# (args, handle): args are the merged pluginConfig mapping, or an instance of the spec's
# ``args`` schema when it has one.
Factory = Callable[[Any, Handle], Plugin]
Validator = Callable[[Mapping[str, Any], str], None]


@dataclass(frozen=True)
class PluginSpec:
    """How a plugin is registered: by the scheduler for the built-ins, and by an installed
    package under the ``secondary_scheduler.plugins`` entry-point group.

    - ``name``: the plugin's name in the configuration; the plugin's ``name`` attribute too.
    - ``factory``: ``(args, handle) -> plugin``, called once per profile that enables it;
      ``args`` is an instance of ``args`` (below) when given, else the merged mapping.
    - ``points``: the extension points the plugin serves, by their configuration names:
      ``preEnqueue``, ``queueSort``, ``preFilter``, ``filter``, ``postFilter``, ``preScore``,
      ``score``, ``reserve``, ``permit``, ``preBind``, ``bind``, ``postBind``. Each needs its
      method (:data:`POINT_METHODS`: ``"preScore"`` is ``pre_score``) with the signature of
      its protocol (``PreScorePlugin``...). Normalising scores is a Score plugin's optional
      ``normalize``, not a point. Empty: the points whose methods an instance built with the
      default args has (only for factories that need no handle to build).
    - ``args``: a dataclass the pluginConfig args are decoded into (camelCase in the file);
      it gives the defaults and the type checks, and its ``problems()`` the rest.
    - ``default_args`` and ``validate``: the untyped alternative to ``args``, kept for
      the plugins written against it (plugin API 2.0); no built-in uses it.

    A name in ``points`` that is not a point is refused here; a plugin whose methods do not
    keep its points' contract is refused when it is registered and when a profile builds it,
    with a :class:`ConfigError` naming the plugin and the point.
    """

    name: str
    factory: Factory
    default_args: Mapping[str, Any] = field(default_factory=dict)
    validate: Validator | None = None
    points: frozenset[str] = frozenset()
    args: type | None = None

    def __post_init__(self) -> None:
        check_point_names(self.name, self.points)
        if self.args is not None:
            object.__setattr__(self, "default_args", default_args(self.args))
            object.__setattr__(self, "validate", self._check_typed)

    def _check_typed(self, raw: Mapping[str, Any], path: str) -> None:
        assert self.args is not None
        decode_args(self.args, raw, path)

    def build(self, args: Mapping[str, Any], handle: Handle) -> Plugin:
        """The plugin, from its merged and already validated configuration args; ConfigError
        when it does not keep the contract of its points."""
        if self.args is None:
            plugin = self.factory(args, handle)
        else:
            plugin = self.factory(decode_args(self.args, args, f"{self.name}Args"), handle)
        if self.points:
            check_plugin(self.name, self.points, plugin)
        return plugin


# Factories only keep the handle they are given; registering a plugin builds one to find
# its extension points, before any scheduler exists.
_PROBE_HANDLE = cast(Handle, None)


def _probed_points(spec: PluginSpec) -> frozenset[str]:
    """The points of an instance built with the default args and no scheduler."""
    try:
        probe = spec.build(spec.default_args, _PROBE_HANDLE)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"plugin {spec.name!r}: building one without a scheduler to find its points "
            f"failed ({type(exc).__name__}: {exc}); list them in PluginSpec.points") from exc
    points = points_of(probe)
    if not points:
        raise ConfigError(f"plugin {spec.name!r}: has no method of any extension point")
    check_plugin(spec.name, points, probe)
    return points


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, PluginSpec] = {}

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"plugin {spec.name!r} registered twice")
        if not spec.points:
            spec = dataclasses.replace(spec, points=_probed_points(spec))
        elif isinstance(spec.factory, type):
            # A class: its methods can be checked before any profile builds one.
            check_plugin(spec.name, spec.points, spec.factory)
        self._specs[spec.name] = spec

    def get(self, name: str) -> PluginSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return sorted(self._specs)
