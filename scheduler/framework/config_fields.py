"""Reading a configuration file's fields with every error collected, as upstream aggregates
its ``field.ErrorList`` (pkg/scheduler/apis/config/validation/validation.go): a wrong type,
a number out of range or not finite, an unknown field is recorded with its path and the
reading goes on with the field's default, so one run reports every error of the file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from scheduler.framework.errors import ConfigError


class AggregateConfigError(ConfigError):
    """Every problem of one configuration, each ``<path>: <problem>``; str() is one a line."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


class Problems:
    """The errors found so far in one configuration."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.errors.append(f"{path}: {problem}" if path else problem)

    def invalid(self, path: str, value: Any, problem: str) -> None:
        self.add(path, f"Invalid value: {value!r}: {problem}")

    @contextmanager
    def gathering(self) -> Iterator[None]:
        """Records a ConfigError raised in the block (a plugin's own argument checks raise
        one) instead of letting it end the reading."""
        try:
            yield
        except AggregateConfigError as exc:
            self.errors.extend(exc.errors)
        except ConfigError as exc:
            self.errors.append(str(exc))

    def raise_if_any(self) -> None:
        if self.errors:
            raise AggregateConfigError(self.errors)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Section:
    """One mapping of the file, at ``path``: each field read with its type checked; a field
    that is wrong is recorded in ``problems`` and read as its default. An absent or null
    field is its default."""

    def __init__(self, raw: Any, path: str, problems: Problems, known: Iterable[str]) -> None:
        # False when the file has something else than a mapping here (already reported).
        self.ok = raw is None or isinstance(raw, Mapping)
        if not self.ok and not path:
            problems.add("", "the configuration must be a mapping (a KubeSchedulerConfiguration)")
        elif not self.ok:
            problems.invalid(path, raw, "must be a mapping")
        self.raw: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        self.path = path
        self.problems = problems
        known = set(known)
        for key in self.raw:
            if key not in known:
                problems.add(self.at(key), "unknown field")

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    def section(self, key: str, known: Iterable[str]) -> Section:
        return Section(self.raw.get(key), self.at(key), self.problems, known)

    def items(self, key: str) -> list[Any]:
        value = self.raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problems.invalid(self.at(key), value, "must be a list")
            return []
        return value

    def integer(self, key: str, default: int, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        value = self.raw.get(key)
        if value is None:
            return default
        if not _is_integer(value):
            self.problems.invalid(self.at(key), value, "must be an integer")
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.problems.invalid(self.at(key), value, _range(minimum, maximum))
            return default
        return int(value)

    def number(self, key: str, default: float, *, minimum: float) -> float:
        """A finite number >= ``minimum`` (YAML's .inf and .nan are refused)."""
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problems.invalid(self.at(key), value, "must be a number")
            return default
        if not math.isfinite(value):
            self.problems.invalid(self.at(key), value, "must be a finite number")
            return default
        if value < minimum:
            self.problems.invalid(self.at(key), value, f"must be >= {minimum:g}")
            return default
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.invalid(self.at(key), value, "must be true or false")
            return default
        return value

    def string(self, key: str, default: str = "") -> str:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.problems.invalid(self.at(key), value, "must be a string")
            return default
        return value

    def duration(self, key: str, default: float) -> float:
        value = self.raw.get(key)
        if value is None:
            return default
        seconds = parse_duration(value)
        if seconds is None or seconds <= 0:
            self.problems.invalid(self.at(key), value,
                                  "must be a positive duration such as '15s'")
            return default
        return seconds


def _range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"must be in [{minimum}, {maximum}]"
    return f"must be >= {minimum}" if minimum is not None else f"must be <= {maximum}"


# A metav1.Duration as Go's time.ParseDuration reads it: "15s", "1m30s", "500ms", "1.5h".
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6,
                 "ns": 1e-9}


def parse_duration(value: Any) -> float | None:
    """Seconds, or None when ``value`` is not a Go duration string (a bare number has no
    unit, and time.ParseDuration refuses it but for "0")."""
    if not isinstance(value, str) or not value:
        return None
    if value == "0":
        return 0.0
    if _DURATION_PART.sub("", value) != "":
        return None
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))
    return seconds if math.isfinite(seconds) else None


def format_duration(seconds: float) -> str:
    """As Go's Duration.String() prints it: "15s", "1m30s", "1h0m0s", "500ms"."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{_trim(nanos / size)}{unit}"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_trim(rest / 1e9)}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")
