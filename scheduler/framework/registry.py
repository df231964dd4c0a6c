"""Plugin registry: plugin names mapped to factories, as upstream's in-tree registry.

A plugin module exposes ``NAME``, a factory ``new(args, handle)`` and, when it takes
arguments, ``DEFAULT_ARGS`` plus ``validate_args(args)`` raising :class:`ConfigError` that
names the offending field. The registry is the only place that lists them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from scheduler.framework.handle import Handle
from scheduler.framework.interface import Plugin


class ConfigError(ValueError):
    """A configuration problem; the message names the field, e.g. ``profiles[0].plugins``."""


Factory = Callable[[Mapping[str, Any], Handle], Plugin]
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
            probe = spec.factory(spec.default_args, _PROBE_HANDLE)
            spec = PluginSpec(
                spec.name, spec.factory, spec.default_args, spec.validate, points_of(probe)
            )
        self._specs[spec.name] = spec

    def get(self, name: str) -> PluginSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return sorted(self._specs)
