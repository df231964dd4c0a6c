"""Typed readers of one field of an API dict, shared by the model's parsers.

Each returns the field's value, its zero value when absent or null, or raises
``InvalidSpecError`` naming the field's JSON path, as the API server's decoder would refuse it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.model.errors import InvalidSpecError
from scheduler.model.validation import is_list, is_mapping

_EMPTY: Mapping[str, Any] = {}


def object_at(raw: Any, path: str) -> Mapping[str, Any]:
    """``raw`` as an object; empty when null."""
    if raw is None:
        return _EMPTY
    if not is_mapping(raw):
        raise InvalidSpecError(path, "must be an object")
    return raw


def list_at(raw: Any, path: str) -> Sequence[Any]:
    """``raw`` as a list; empty when null."""
    if raw is None:
        return ()
    if not is_list(raw):
        raise InvalidSpecError(path, "must be a list")
    return raw


def str_field(raw: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidSpecError(f"{path}.{key}", "must be a string")
    return value


def required_str_field(raw: Mapping[str, Any], key: str, path: str) -> str:
    value = str_field(raw, key, path)
    if not value:
        raise InvalidSpecError(f"{path}.{key}", "Required value")
    return value


def opt_int_field(raw: Mapping[str, Any], key: str, path: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpecError(f"{path}.{key}", "must be an integer")
    return value


def int_field(raw: Mapping[str, Any], key: str, path: str, default: int = 0) -> int:
    value = opt_int_field(raw, key, path)
    return default if value is None else value


def opt_bool_field(raw: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        raise InvalidSpecError(f"{path}.{key}", "must be a boolean")
    return value


def str_list_field(raw: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    values = list_at(raw.get(key), f"{path}.{key}")
    if not all(isinstance(v, str) for v in values):
        raise InvalidSpecError(f"{path}.{key}", "must be a list of strings")
    return tuple(values)
