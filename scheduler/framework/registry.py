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

# (args, handle): args are the merged pluginConfig mapping, or an instance of the spec's
# ``args`` schema when it has one.
Factory = Callable[[Any, Handle], Plugin]
Validator = Callable[[Mapping[str, Any], str], None]


# Extension point (upstream's configuration name) -> the method a plugin implements for it.
POINT_METHODS: Mapping[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


@dataclass(frozen=True)
class PluginSpec:
    name: str
    factory: Factory
    default_args: Mapping[str, Any] = field(default_factory=dict)
    validate: Validator | None = None
    # Extension points; empty means "find out from an instance built with the default args".
    points: frozenset[str] = frozenset()
    # A dataclass the args are decoded into; it gives the defaults and the checks, so it
    # takes the place of ``default_args`` and ``validate``.
    args: type | None = None

    def __post_init__(self) -> None:
        if self.args is not None:
            object.__setattr__(self, "default_args", default_args(self.args))
            object.__setattr__(self, "validate", self._check_typed)

    def _check_typed(self, raw: Mapping[str, Any], path: str) -> None:
        assert self.args is not None
        decode_args(self.args, raw, path)

    def build(self, args: Mapping[str, Any], handle: Handle) -> Plugin:
        """The plugin, from its merged and already validated configuration args."""
        if self.args is None:
            return self.factory(args, handle)
        return self.factory(decode_args(self.args, args, f"{self.name}Args"), handle)


# Factories only keep the handle they are given; registering a plugin builds one to find
# its extension points, before any scheduler exists.
_PROBE_HANDLE = cast(Handle, None)


def points_of(plugin: object) -> frozenset[str]:
    return frozenset(
        point for point, method in POINT_METHODS.items()
        if callable(getattr(plugin, method, None))
    )


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, PluginSpec] = {}

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"plugin {spec.name!r} registered twice")
        if not spec.points:
            probe = spec.build(spec.default_args, _PROBE_HANDLE)
            spec = dataclasses.replace(spec, points=points_of(probe))
        self._specs[spec.name] = spec

    def get(self, name: str) -> PluginSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return sorted(self._specs)
