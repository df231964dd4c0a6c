"""Typed plugin arguments: a plugin declares its ``pluginConfig`` args as a dataclass, and the
configuration is decoded into it, field by field, before the scheduler starts.

Field names are the dataclass's in snake_case; in the configuration they are camelCase, as
upstream's plugin args are (``price_label`` is ``priceLabel``). The annotations are the
schema: ``str``, ``int``, ``float``, ``bool``, ``Literal[...]``, ``X | None``, ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]`` and nested dataclasses. A dataclass may also check what
types cannot say in a ``problems()`` method yielding ``(field, problem)`` pairs, or, worded
as upstream's field errors (``Required value``, ``Duplicate value``...) at any depth, in a
``field_errors(path)`` method yielding whole ``<path>...: <reason>`` lines. Both run on every
dataclass, nested ones too, once its fields have decoded and their own hooks found nothing:
a check to be reported beside the others' belongs to the outermost dataclass's hook.

A field's ``metadata`` may carry ``type_error``: the reason (a format string of ``value``)
given when the value is not of the field's type, where upstream words it as a range
(``Invalid value: {value!r}: not in valid range [0, 100]``). A schema's class attributes
``unknown_field_reason`` and ``mapping_reason`` word an unknown key's error in place of
``unknown field (known: ...)``, and a value that is not a mapping's in place of ``must be a
mapping``. A field whose ``metadata`` has ``omitempty`` is left out of a nested dataclass's
defaults as configuration spells them while it is None, as Go's ``omitempty`` leaves a nil
pointer out of upstream's written configuration.

Every error is a :class:`ConfigError` that names the field by its path in the file, e.g.
``profiles[0].pluginConfig[1].args.maxPerZone: Invalid value: -1: must be >= 0``; all of
them are reported (an :class:`AggregateConfigError`, one a line), not only the first.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from scheduler.framework.config_fields import AggregateConfigError
from scheduler.framework.errors import ConfigError

T = TypeVar("T")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def default_args(schema: type) -> dict[str, Any]:
    """The schema's defaults as configuration would spell them (camelCase keys)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(schema):
        if f.default is not dataclasses.MISSING:
            out[camel(f.name)] = _plain(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[camel(f.name)] = _plain(f.default_factory())
    return out


def decode_args(schema: type[T], raw: Mapping[str, Any], path: str) -> T:
    """``raw`` (defaults merged in or not) as an instance of ``schema``, or ConfigError
    listing every problem found."""
    return _decode_dataclass(schema, raw, path)


def error_lines(exc: ConfigError) -> list[str]:
    """The one-line errors a ConfigError carries."""
    return list(exc.errors) if isinstance(exc, AggregateConfigError) else [str(exc)]


def _field_named(schema: type, name: str, path: str) -> str:
    """The field ``problems()`` names, as the dataclass (``due_value``) or the configuration
    (``dueValue``) spells it; a name that is neither is the schema's bug, said as such."""
    fields = {f.name for f in dataclasses.fields(typing.cast(Any, schema))}
    by_camel = {camel(f): f for f in fields}
    if name in fields or name in by_camel:
        return name if name in fields else by_camel[name]
    raise ConfigError(f"{path}: {schema.__name__}.problems() names {name!r}, which is not "
                      f"one of its fields ({', '.join(sorted(fields))})")


def _decode_dataclass(schema: type[T], raw: Any, path: str) -> T:
    if not isinstance(raw, Mapping):
        reason = getattr(schema, "mapping_reason", None) or "must be a mapping"
        raise ConfigError(f"{path}: Invalid value: {raw!r}: {reason}")
    fields = {camel(f.name): f for f in dataclasses.fields(typing.cast(Any, schema))}
    unknown = getattr(schema, "unknown_field_reason", None) or (
        f"unknown field (known: {', '.join(sorted(fields))})")
    errors = [f"{path}.{key}: {unknown}" for key in sorted(k for k in raw if k not in fields)]
    hints = typing.get_type_hints(schema)
    values: dict[str, Any] = {}
    for key, f in fields.items():
        try:
            if key in raw:
                values[f.name] = _decode_field(f, hints[f.name], raw[key], f"{path}.{key}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{path}.{key}: Required value")
        except ConfigError as exc:
            errors.extend(error_lines(exc))
    if errors:
        raise AggregateConfigError(errors)
    value = schema(**values)
    errors = list(_own_problems(schema, value, path))
    if errors:
        raise AggregateConfigError(errors)
    return value


def _decode_field(f: dataclasses.Field[Any], kind: Any, value: Any, path: str) -> Any:
    """The field's value; a value of the wrong type worded by the field's ``type_error``."""
    try:
        return _decode(kind, value, path)
    except ConfigError as exc:
        reason = f.metadata.get("type_error")
        # Only the field's own value: an error further in (an item, a nested field) keeps
        # its own path and words.
        if reason is None or not str(exc).startswith(f"{path}: "):
            raise
        raise ConfigError(f"{path}: {reason.format(value=value)}") from exc


def _own_problems(schema: type, value: Any, path: str) -> Iterator[str]:
    """What the dataclass's ``problems()`` and ``field_errors(path)`` find."""
    problems = getattr(value, "problems", None)
    if callable(problems):
        for name, problem in typing.cast(Iterable[tuple[str, str]], problems()):
            field = _field_named(schema, name, path)
            bad = getattr(value, field)
            yield f"{path}.{camel(field)}: Invalid value: {_plain(bad)!r}: {problem}"
    field_errors = getattr(value, "field_errors", None)
    if callable(field_errors):
        yield from typing.cast(Iterable[str], field_errors(path))


def _decode(kind: Any, value: Any, path: str) -> Any:
    origin = get_origin(kind)
    if origin is Union or origin is types.UnionType:
        return _decode_union(kind, value, path)
    if origin is Literal:
        return _decode_literal(kind, value, path)
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{path}: must be a list")
        (item,) = get_args(kind)[:1]
        items = _decode_items(item, value, path)
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: must be a mapping")
        _, item = get_args(kind)
        return {str(k): _decode(item, v, f"{path}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(kind):
        return _decode_dataclass(typing.cast(type, kind), value, path)
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar(value, path)
    if kind is Any:
        return value
    raise TypeError(f"{path}: the args schema uses {kind!r}, which it cannot decode")


def _decode_items(item: Any, values: Iterable[Any], path: str) -> list[Any]:
    """Each item decoded; every item's errors, not only the first's."""
    out: list[Any] = []
    errors: list[str] = []
    for i, v in enumerate(values):
        try:
            out.append(_decode(item, v, f"{path}[{i}]"))
        except ConfigError as exc:
            errors.extend(error_lines(exc))
    if errors:
        raise AggregateConfigError(errors)
    return out


def _decode_union(kind: Any, value: Any, path: str) -> Any:
    """The first option that decodes ``value``; else the first option's error."""
    options = get_args(kind)
    if value is None and type(None) in options:
        return None
    errors: list[ConfigError] = []
    for option in (o for o in options if o is not type(None)):
        try:
            return _decode(option, value, path)
        except ConfigError as exc:
            errors.append(exc)
    raise errors[0]


def _decode_literal(kind: Any, value: Any, path: str) -> Any:
    allowed = get_args(kind)
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ConfigError(f"{path}: Unsupported value: {value!r}: supported values: {choices}")
    return value


def _decode_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be true or false")
    return value


def _decode_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be an integer")
    return value


def _decode_float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be a number")
    return float(value)


def _decode_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be a string")
    return value


_SCALARS: dict[Any, Callable[[Any, str], Any]] = {
    bool: _decode_bool,
    int: _decode_int,
    float: _decode_float,
    str: _decode_str,
}


def _plain(value: Any) -> Any:
    """A default or field value as configuration spells it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.metadata.get("omitempty") and getattr(value, f.name) is None)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value
