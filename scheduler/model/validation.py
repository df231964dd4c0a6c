"""Syntax checks that apimachinery applies to label keys, label values and integers.

Sources: ``k8s.io/apimachinery/pkg/api/validate/content`` (``IsLabelKey`` a.k.a.
``IsQualifiedName``, ``IsLabelValue``, ``IsDNS1123Subdomain``) and Go's ``strconv.ParseInt``.
Go's ``regexp`` anchors ``^...$`` match the whole text, hence ``fullmatch`` here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeGuard

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

LABEL_KEY_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(_NAME_FMT, re.ASCII)
_VALUE = re.compile(f"({_NAME_FMT})?", re.ASCII)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(
    f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*", re.ASCII
)
_GO_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)

_NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    f"end with an alphanumeric character (regex used for validation is '{_NAME_FMT}')"
)
_VALUE_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (regex used for "
    f"validation is '({_NAME_FMT})?')"
)
_PREFIX_ERROR = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character"
)


@lru_cache(maxsize=4096)
def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key / qualified name (``IsLabelKey``), or None."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            return f"prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        if _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
            return _PREFIX_ERROR
    else:
        return (
            "a valid label key must be a name with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        )
    if not name:
        return "name part must be non-empty"
    if len(name) > LABEL_KEY_MAX_LENGTH:
        return f"name part must be no more than {LABEL_KEY_MAX_LENGTH} characters"
    if _NAME.fullmatch(name) is None:
        return _NAME_ERROR
    return None


def is_qualified_name(name: str) -> bool:
    """``validation.IsQualifiedName`` (the same rule as a label key)."""
    return label_key_error(name) is None


@lru_cache(maxsize=4096)
def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value (``IsLabelValue``), or None."""
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        return f"must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
    if _VALUE.fullmatch(value) is None:
        return _VALUE_ERROR
    return None


def parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits, int64 range; else None."""
    if len(text) > 20 or _GO_INT.fullmatch(text) is None:
        return None
    value = int(text)
    if value < INT64_MIN or value > INT64_MAX:
        return None
    return value


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """A JSON object (fast for the plain ``dict`` the API client delivers)."""
    return type(value) is dict or isinstance(value, Mapping)


def is_list(value: object) -> TypeGuard[Sequence[Any]]:
    """A JSON array (fast for ``list``; strings are not lists)."""
    return type(value) is list or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes))
    )
