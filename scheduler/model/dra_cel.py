"""The DRA CEL environment: device selectors compiled once and evaluated per device.

Upstream: ``k8s.io/dynamic-resource-allocation/cel`` (``compile.go``, ``cache.go``,
``errors.go``) with the Kubernetes quantity and semver libraries of
``k8s.io/apiserver/pkg/cel/library``. The CEL engine is ``cel-expr-python`` (Google's cel-cpp);
docs/dra.md says why this package and what it cannot do.

One variable, ``device``: ``driver`` (string), ``allowMultipleAllocations`` (bool),
``attributes`` and ``capacity`` (domain -> id -> value). Unqualified attribute and capacity
names belong to the device's driver. Attribute values are int, bool, string or a semver;
capacities are quantities.

Where cel-cpp differs and how this module closes the gap:

- cel-cpp has no opaque custom types in Python, so a quantity and a semver are one-entry maps
  (``{"__k8s_quantity__": <nanos>}``, ``{"__k8s_semver__": <version>}``) whose canonical form
  makes ``==`` semantic (``quantity("1") == quantity("1000m")``). Their member functions
  (``compareTo``, ``isGreaterThan``...) dispatch on the marker.
- Upstream's ``device.attributes[<domain>]`` yields an empty map for an absent domain (its
  custom mapper). Each expression's literal domains (``attributes["x"]``, ``capacity["x"]``)
  are found at compile time and filled with empty maps for devices that lack them.
- Error texts are cel-go's where they reach users: the status-code wrapper of cel-cpp is
  removed and ``Key not found in map : "k"`` reads ``no such key: k``.
- cel-cpp's Python binding exposes no cost tracking: upstream's runtime cost limit
  (1,000,000) is not enforced; see docs/dra.md.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cachetools import LRUCache
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from scheduler.model.quantity import NANO, nanos_or_error

QUANTITY_KEY = "__k8s_quantity__"
SEMVER_KEY = "__k8s_semver__"
# resourceapi.CELSelectorExpressionMaxCost; recorded for docs and tests, not enforceable here.
SELECTOR_MAX_COST = 1_000_000
_CACHE_SIZE = 256

_T = cel.Type
_VALUE_T = _T.Map(_T.STRING, _T.STRING)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_NO_SUCH_KEY = re.compile(r'Key not found in map : "(.*)"')
_DRIVER_EQUALS = re.compile(r"""\s*device\s*\.\s*driver\s*==\s*"([A-Za-z0-9.\-]*)"\s*""")
_DOMAIN_LOOKUP = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")


class CELError(Exception):
    """A runtime error of a CEL expression, worded as cel-go's."""


# --- semver (github.com/blang/semver/v4 Parse and Compare) ----------------------------------


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def canonical(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{'.'.join(self.pre)}" if self.pre else core


def _semver_number(text: str, what: str) -> int:
    if not text or not text.isdigit() or not text.isascii():
        raise ValueError(f"Invalid character(s) found in {what} number {text!r}".replace("'", '"'))
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f'{what.capitalize()} number must not contain leading zeroes "{text}"')
    return int(text)


def parse_semver(text: str) -> Semver:
    """``semver.Parse``: MAJOR.MINOR.PATCH[-PRE][+BUILD], strictly."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _semver_number(parts[0], "major")
    minor = _semver_number(parts[1], "minor")
    rest = parts[2]
    cut = min((i for i in (rest.find("-"), rest.find("+")) if i >= 0), default=len(rest))
    patch = _semver_number(rest[:cut], "patch")
    pre: tuple[str, ...] = ()
    tail = rest[cut:]
    if tail.startswith("-"):
        pre_text, _, _build = tail[1:].partition("+")
        pre = tuple(pre_text.split("."))
        for ident in pre:
            if not ident:
                raise ValueError("Prerelease is empty")
            if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
                raise ValueError(
                    f'Numeric PreRelease version must not contain leading zeroes "{ident}"'
                )
    return Semver(major, minor, patch, pre)


def normalize_semver(text: str) -> Semver:
    """``normalizeAndParse``: an optional ``v`` prefix, missing minor and patch read as 0."""
    text = text.removeprefix("v")
    parts = text.split(".")
    if len(parts) < 3:
        if "-" in text or "+" in text:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        text = ".".join(parts + ["0"] * (3 - len(parts)))
    return parse_semver(text)


def _cmp_pre_ident(a: str, b: str) -> int:
    a_num, b_num = a.isdigit(), b.isdigit()
    if a_num and b_num:
        return (int(a) > int(b)) - (int(a) < int(b))
    if a_num != b_num:
        return -1 if a_num else 1
    return (a > b) - (a < b)


def compare_semver(a: Semver, b: Semver) -> int:
    """``Version.Compare``: core numbers, then a release above its pre-releases."""
    core_a, core_b = (a.major, a.minor, a.patch), (b.major, b.minor, b.patch)
    if core_a != core_b:
        return 1 if core_a > core_b else -1
    if not a.pre or not b.pre:
        return (not a.pre) - (not b.pre)
    for x, y in zip(a.pre, b.pre, strict=False):
        c = _cmp_pre_ident(x, y)
        if c:
            return c
    return (len(a.pre) > len(b.pre)) - (len(a.pre) < len(b.pre))


# --- the CEL representation of quantities and semvers ----------------------------------------


def quantity_value(nanos: int) -> dict[str, str]:
    return {QUANTITY_KEY: str(nanos)}


def semver_value(version: Semver) -> dict[str, str]:
    return {SEMVER_KEY: version.canonical()}


def _as_quantity(value: Any) -> int | None:
    text = value.get(QUANTITY_KEY) if isinstance(value, Mapping) else None
    return None if text is None else int(text)


def _as_semver(value: Any) -> Semver | None:
    text = value.get(SEMVER_KEY) if isinstance(value, Mapping) else None
    return None if text is None else parse_semver(text)


def _no_overload(name: str) -> ValueError:
    return ValueError(f"no such overload: {name}")


def _compare(name: str) -> Callable[[Any, Any], int]:
    def compare(a: Any, b: Any) -> int:
        qa, qb = _as_quantity(a), _as_quantity(b)
        if qa is not None and qb is not None:
            return (qa > qb) - (qa < qb)
        sa, sb = _as_semver(a), _as_semver(b)
        if sa is not None and sb is not None:
            return compare_semver(sa, sb)
        raise _no_overload(name)

    return compare


def _quantity_of(name: str, value: Any) -> int:
    nanos = _as_quantity(value)
    if nanos is None:
        raise _no_overload(name)
    return nanos


def _semver_of(name: str, value: Any) -> Semver:
    version = _as_semver(value)
    if version is None:
        raise _no_overload(name)
    return version


def _parse_quantity(text: str) -> dict[str, str]:
    result = nanos_or_error(text) if text else "quantities must match the regular expression"
    if isinstance(result, str):
        raise ValueError(result)
    return quantity_value(result)


def _is_quantity(text: str) -> bool:
    return bool(text) and not isinstance(nanos_or_error(text), str)


def _as_integer(value: Any) -> int:
    nanos = _quantity_of("asInteger", value)
    if nanos % NANO or not -(2**63) <= nanos // NANO < 2**63:
        raise ValueError("cannot convert value to integer")
    return nanos // NANO


def _is_integer(value: Any) -> bool:
    nanos = _quantity_of("isInteger", value)
    return nanos % NANO == 0 and -(2**63) <= nanos // NANO < 2**63


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        (normalize_semver if normalize else parse_semver)(text)
    except ValueError:
        return False
    return True


def _to_semver(text: str, normalize: bool = False) -> dict[str, str]:
    return semver_value((normalize_semver if normalize else parse_semver)(text))


def _overload(
    name: str, oid: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool
) -> cel.FunctionDecl:
    return cel.FunctionDecl(
        name,
        [cel.Overload(oid, return_type=ret, parameters=params, is_member=member, impl=impl)],
    )


def _library() -> list[cel.FunctionDecl]:
    """The Kubernetes quantity and semver libraries (``library/quantity.go``, ``semverlib.go``)."""
    v, s, i, b, d = _VALUE_T, _T.STRING, _T.INT, _T.BOOL, _T.DOUBLE
    q = _quantity_of

    def add(a: Any, c: Any) -> dict[str, str]:
        return quantity_value(q("add", a) + (c * NANO if isinstance(c, int) else q("add", c)))

    def sub(a: Any, c: Any) -> dict[str, str]:
        return quantity_value(q("sub", a) - (c * NANO if isinstance(c, int) else q("sub", c)))

    cmp_ = _compare("compareTo")
    gt, lt = _compare("isGreaterThan"), _compare("isLessThan")
    return [
        _overload("quantity", "string_to_quantity", v, [s], _parse_quantity, False),
        _overload("isQuantity", "is_quantity_string", b, [s], _is_quantity, False),
        cel.FunctionDecl("semver", [
            cel.Overload("string_to_semver", return_type=v, parameters=[s], impl=_to_semver),
            cel.Overload("string_bool_to_semver", return_type=v, parameters=[s, b],
                         impl=_to_semver),
        ]),
        cel.FunctionDecl("isSemver", [
            cel.Overload("is_semver_string", return_type=b, parameters=[s], impl=_is_semver),
            cel.Overload("is_semver_string_bool", return_type=b, parameters=[s, b],
                         impl=_is_semver),
        ]),
        _overload("compareTo", "k8s_compare_to", i, [v, v], cmp_, True),
        _overload("isGreaterThan", "k8s_is_greater_than", b, [v, v],
                  lambda a, c: gt(a, c) == 1, True),
        _overload("isLessThan", "k8s_is_less_than", b, [v, v], lambda a, c: lt(a, c) == -1, True),
        cel.FunctionDecl("add", [
            cel.Overload("quantity_add", return_type=v, parameters=[v, v], is_member=True,
                         impl=add),
            cel.Overload("quantity_add_int", return_type=v, parameters=[v, i], is_member=True,
                         impl=add),
        ]),
        cel.FunctionDecl("sub", [
            cel.Overload("quantity_sub", return_type=v, parameters=[v, v], is_member=True,
                         impl=sub),
            cel.Overload("quantity_sub_int", return_type=v, parameters=[v, i], is_member=True,
                         impl=sub),
        ]),
        _overload("sign", "quantity_sign", i, [v],
                  lambda a: (q("sign", a) > 0) - (q("sign", a) < 0), True),
        _overload("isInteger", "quantity_is_integer", b, [v], _is_integer, True),
        _overload("asInteger", "quantity_get_int", i, [v], _as_integer, True),
        _overload("asApproximateFloat", "quantity_get_float", d, [v],
                  lambda a: float(Fraction(q("asApproximateFloat", a), NANO)), True),
        _overload("major", "semver_major", i, [v], lambda a: _semver_of("major", a).major, True),
        _overload("minor", "semver_minor", i, [v], lambda a: _semver_of("minor", a).minor, True),
        _overload("patch", "semver_patch", i, [v], lambda a: _semver_of("patch", a).patch, True),
    ]


_ENV = cel.NewEnv(
    variables={"device": _T.DYN},
    functions=_library(),
    extensions=[
        ext_bindings.ExtBindings(),
        ext_optional.ExtOptional(),
        ext_strings.ExtStrings(),
    ],
)


def _cel_go_message(text: str) -> str:
    """cel-cpp's status text as cel-go words it."""
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip()))
    missing = _NO_SUCH_KEY.search(text)
    if missing:
        return f"no such key: {missing.group(1)}"
    return text


def _cel_go_type(name: str) -> str:
    return name.lower().replace("<", "(").replace(">", ")")


# --- devices as CEL input ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """One device as the ``device`` variable (``cel.Device``), built once per device.

    ``attributes``/``capacity`` hold CEL values keyed domain -> id; ``error`` is set when an
    attribute cannot be converted (a version that is not semver), which upstream reports as a
    runtime error of every expression evaluated on the device.
    """

    driver: str
    allow_multiple_allocations: bool
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]
    error: str | None = None
    # Converting the device into CEL values costs more than evaluating a selector, so each
    # conversion (per set of domains the selectors look up) is kept with the device.
    _activations: dict[tuple[frozenset[str], frozenset[str]], Any] = field(
        default_factory=dict, compare=False, repr=False
    )
    # Selector verdicts on this device, by expression: a selector is a pure function of the
    # device, so it is evaluated once per device (errors are not kept: they raise each time).
    _verdicts: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def activation(
        self, attribute_domains: frozenset[str], capacity_domains: frozenset[str]
    ) -> Any:
        key = (attribute_domains, capacity_domains)
        found = self._activations.get(key)
        if found is None:
            found = _ENV.Activation(data=self.data(attribute_domains, capacity_domains))
            self._activations[key] = found
        return found

    def data(
        self, attribute_domains: frozenset[str], capacity_domains: frozenset[str]
    ) -> dict[str, Any]:
        attributes: dict[str, Any] = dict(self.attributes)
        capacity: dict[str, Any] = dict(self.capacity)
        for domain in attribute_domains:
            attributes.setdefault(domain, {})
        for domain in capacity_domains:
            capacity.setdefault(domain, {})
        return {
            "device": {
                "driver": self.driver,
                "allowMultipleAllocations": self.allow_multiple_allocations,
                "attributes": attributes,
                "capacity": capacity,
            }
        }


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``: (domain, id), the driver's domain when none is given."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


# --- compiled expressions and their cache -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A compiled selector, or the compile error in upstream's words (``error``)."""

    expression: str
    error: str | None
    _program: Any = None
    _attribute_domains: frozenset[str] = frozenset()
    _capacity_domains: frozenset[str] = frozenset()
    # The literal of a selector that is only ``device.driver == "<literal>"`` (what nearly
    # every DeviceClass says): compared in Python, as CEL would, without building the input.
    _driver_literal: str | None = None

    def matches(self, device: DeviceInput) -> bool:
        """``CompilationResult.DeviceMatches``; a runtime error raises ``CELError``."""
        known = device._verdicts.get(self.expression)
        if known is not None:
            return known
        verdict = self._evaluate(device)
        device._verdicts[self.expression] = verdict
        return verdict

    def driver_verdict(self, driver: str) -> bool | None:
        """The verdict on a device of ``driver`` when the selector only compares the driver
        (the device's conversion error still applies), else None."""
        if self._driver_literal is None:
            return None
        return driver == self._driver_literal

    def _evaluate(self, device: DeviceInput) -> bool:
        if device.error is not None:
            raise CELError(device.error)
        if self._driver_literal is not None:
            return device.driver == self._driver_literal
        result = self._program.eval(
            device.activation(self._attribute_domains, self._capacity_domains)
        )
        kind = result.type().name()
        if kind == "ERROR":
            raise CELError(_cel_go_message(str(result.value())))
        value = result.value()
        if kind != "BOOL":
            raise CELError(
                f"CEL result of type {_cel_go_type(kind)} could not be converted to bool: "
                f"type conversion error from '{_cel_go_type(kind)}' to 'bool'"
            )
        return bool(value)


def compile_selector(expression: str) -> CompiledSelector:
    """``compiler.CompileCELExpression`` for a selector; errors come back in ``error``."""
    try:
        program = _ENV.compile(expression)
    except RuntimeError as err:
        return CompiledSelector(expression, "compilation failed: " + _cel_go_message(str(err)))
    kind = program.return_type().name()
    if kind not in ("BOOL", "DYN"):
        return CompiledSelector(
            expression, f"must evaluate to bool or the unknown type, not {_cel_go_type(kind)}"
        )
    lookups = [
        (m.group(1), m.group(2) or m.group(3) or "") for m in _DOMAIN_LOOKUP.finditer(expression)
    ]
    driver = _DRIVER_EQUALS.fullmatch(expression)
    return CompiledSelector(
        expression,
        None,
        program,
        frozenset(domain for kind, domain in lookups if kind == "attributes"),
        frozenset(domain for kind, domain in lookups if kind == "capacity"),
        driver.group(1) if driver is not None else None,
    )


class SelectorCache:
    """``cel.Cache``: each expression compiled once; compile errors are not kept."""

    def __init__(self, max_entries: int = _CACHE_SIZE) -> None:
        self._cache: LRUCache[str, CompiledSelector] = LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompiledSelector:
        with self._lock:
            cached = self._cache.get(expression)
        if cached is not None:
            return cached
        compiled = compile_selector(expression)
        if compiled.error is None:
            with self._lock:
                self._cache[expression] = compiled
        return compiled


def enhance_runtime_error(message: str) -> str:
    """``EnhanceRuntimeError``: the optional-chaining hint after a missing key."""
    if "no such key:" in message:
        return (
            f"{message}. consider using CEL optional chaining (.? followed by orValue()) "
            "or guarding the check with has() for optional fields"
        )
    return message
