"""Kubernetes resource quantities, parsed exactly as apimachinery's ``resource.ParseQuantity``.

The grammar (``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go``)::

    <quantity>  ::= <sign>? <number> <suffix>
    <number>    ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>    ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                  | (e | E) <signed integer>

Upstream quirks kept on purpose: a bare sign (``"+"``, ``"-"``) and ``"."`` parse as 0, ``"1."``
and ``"1.G"`` are accepted, surrounding whitespace is rejected, values are rounded up (away
from zero) to a whole nano, and binary-suffixed values are capped at 2^63-1.

Every parsed quantity is therefore a whole number of nano-units; the model keeps them as
``int`` nanos internally (exact and fast) and converts with ``MilliValue``/``Value`` semantics
(round away from zero, i.e. ``ceil`` for the non-negative values requests and capacities have).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from scheduler.model.errors import InvalidSpecError
from scheduler.model.validation import INT64_MAX, INT64_MIN, parse_go_int64

NANO = 10**9
MICRO_PER_NANO = 10**6

_MAX_BINARY_NANOS = INT64_MAX * NANO
# 10^400 is far beyond anything representable by the scheduler; upstream keeps it in an
# arbitrary-precision decimal, we refuse it rather than build enormous integers.
_MAX_DECIMAL_EXPONENT = 400

_DECIMAL_SUFFIXES = {
    "": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")

FORMAT_ERROR = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"


def _scan(text: str) -> tuple[bool, str, str, str] | None:
    """``parseQuantityString``: (positive, numerator, denominator, suffix), None if malformed."""
    end = len(text)
    pos = 0
    positive = True
    first = text[0]
    if first == "-":
        positive = False
        pos = 1
    elif first == "+":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, num, "", ""
    if not num:
        num = "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, num, denom, ""
    suffix = _scan_suffix(text, pos)
    return None if suffix is None else (positive, num, denom, suffix)


def _scan_suffix(text: str, pos: int) -> str | None:
    """The suffix from ``pos`` to the end: suffix letters, then an optional signed integer
    (an exponent); None when anything else follows."""
    end = len(text)
    start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and (text[pos] == "+" or text[pos] == "-"):
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    return text[start:] if pos >= end else None


def _interpret(suffix: str) -> tuple[int, int] | None:
    """``quantitySuffixer.interpret``: (base, exponent), None for an unknown suffix."""
    exponent = _DECIMAL_SUFFIXES.get(suffix)
    if exponent is not None:
        return 10, exponent
    exponent = _BINARY_SUFFIXES.get(suffix)
    if exponent is not None:
        return 2, exponent
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = parse_go_int64(suffix[1:])
        if parsed is None:
            return None
        # Go keeps the exponent as int32(parsed): wrap like a two's-complement truncation.
        return 10, ((parsed + 2**31) % 2**32) - 2**31
    return None


def _ceil_div(numerator: int, denominator: int) -> int:
    """Ceiling of a non-negative fraction."""
    return -(-numerator // denominator)


@lru_cache(maxsize=16384)
def nanos_or_error(text: str) -> int | str:
    """The quantity in nano-units, or the reason it is rejected (a ``str``)."""
    if not text:
        return FORMAT_ERROR
    if text == "0":
        return 0
    scanned = _scan(text)
    if scanned is None:
        return FORMAT_ERROR
    positive, num, denom, suffix = scanned
    interpreted = _interpret(suffix)
    if interpreted is None:
        return SUFFIX_ERROR
    base, exponent = interpreted
    if len(num) + len(denom) > _MAX_DECIMAL_EXPONENT:
        return "quantity has too many digits"
    mantissa = int(num + denom)
    nanos: int
    if base == 10:
        shift = exponent - len(denom) + 9
        if shift >= 0:
            if shift > _MAX_DECIMAL_EXPONENT:
                return "quantity is too large"
            nanos = mantissa * 10**shift
        elif mantissa == 0:
            nanos = 0
        elif -shift > len(num) + len(denom):
            nanos = 1  # below one nano: rounded up to the smallest representable value
        else:
            nanos = _ceil_div(mantissa, 10**-shift)
    else:
        nanos = _ceil_div(mantissa * NANO << exponent, 10 ** len(denom))
        if nanos > _MAX_BINARY_NANOS:
            nanos = _MAX_BINARY_NANOS
    return nanos if positive else -nanos


def parse_nanos(value: str | int | float, field: str) -> int:
    """The quantity ``value`` as a whole number of nano-units (it is always one)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        raise InvalidSpecError(field, f"Invalid value: {value!r}: quantity must be a string")
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidSpecError(field, f"Invalid value: {value!r}: {FORMAT_ERROR}")
        text = repr(value)
    else:
        raise InvalidSpecError(field, f"Invalid value: {value!r}: quantity must be a string")
    result = nanos_or_error(text)
    if isinstance(result, str):
        raise InvalidSpecError(field, f'Invalid value: "{text}": {result}')
    return result


def parse_quantity(value: str | int | float, field: str) -> Fraction:
    """The exact value of a quantity (rounded up to a whole nano, as upstream stores it)."""
    return Fraction(parse_nanos(value, field), NANO)


def _clamp(value: int) -> int:
    if value > INT64_MAX:
        return INT64_MAX
    if value < INT64_MIN:
        return INT64_MIN
    return value


def nanos_to_milli(nanos: int) -> int:
    """``Quantity.MilliValue``: milli-units rounded away from zero, saturated to int64."""
    if nanos >= 0:
        return _clamp(_ceil_div(nanos, MICRO_PER_NANO))
    return _clamp(-_ceil_div(-nanos, MICRO_PER_NANO))


def nanos_to_int(nanos: int) -> int:
    """``Quantity.Value``: whole units rounded away from zero, saturated to int64."""
    if nanos >= 0:
        return _clamp(_ceil_div(nanos, NANO))
    return _clamp(-_ceil_div(-nanos, NANO))


def milli_value(value: str | int | float, field: str) -> int:
    """``ceil(q * 1000)`` for ``q >= 0`` (``Quantity.MilliValue``)."""
    return nanos_to_milli(parse_nanos(value, field))


def int_value(value: str | int | float, field: str) -> int:
    """``ceil(q)`` for ``q >= 0`` (``Quantity.Value``)."""
    return nanos_to_int(parse_nanos(value, field))
