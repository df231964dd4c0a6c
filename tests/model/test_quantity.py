"""Facts from apimachinery's quantity_test.go (TestQuantityParse, the invalid list) and the
brief; expected values are exact rationals."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.quantity import (
    int_value,
    milli_value,
    nanos_to_int,
    nanos_to_milli,
    parse_nanos,
    parse_quantity,
)
from scheduler.model.validation import INT64_MAX

F = Fraction
KI, MI, GI, TI, PI, EI = (1024**i for i in range(1, 7))

PARSE_CASES = [
    pytest.param("0", F(0), id="zero is zero"),
    pytest.param("0n", F(0), id="zero nanos is zero"),
    pytest.param("0Ki", F(0), id="zero kibibytes is zero"),
    pytest.param("0T", F(0), id="zero tera is zero"),
    pytest.param("1", F(1), id="a suffixless number is taken as is"),
    pytest.param("1Ki", F(KI), id="Ki is 2 to the 10th"),
    pytest.param("8Ki", F(8 * KI), id="eight kibibytes"),
    pytest.param("7Mi", F(7 * MI), id="Mi is 2 to the 20th"),
    pytest.param("6Gi", F(6 * GI), id="Gi is 2 to the 30th"),
    pytest.param("5Ti", F(5 * TI), id="Ti is 2 to the 40th"),
    pytest.param("4Pi", F(4 * PI), id="Pi is 2 to the 50th"),
    pytest.param("3Ei", F(3 * EI), id="Ei is 2 to the 60th"),
    pytest.param("100Ti", F(100 * TI), id="a three digit binary quantity"),
    pytest.param("5n", F(5, 10**9), id="n is nano"),
    pytest.param("4u", F(4, 10**6), id="u is micro"),
    pytest.param("3m", F(3, 1000), id="m is milli"),
    pytest.param("8k", F(8000), id="k is kilo"),
    pytest.param("7M", F(7 * 10**6), id="M is mega"),
    pytest.param("6G", F(6 * 10**9), id="G is giga"),
    pytest.param("5T", F(5 * 10**12), id="T is tera"),
    pytest.param("2P", F(2 * 10**15), id="P is peta"),
    pytest.param("1E", F(10**18), id="a bare capital E is the exa suffix"),
    pytest.param("12E", F(12 * 10**18), id="twelve exa does not saturate for decimal suffixes"),
    pytest.param("1E-3", F(1, 1000), id="a capital E with a negative exponent"),
    pytest.param("1e3", F(1000), id="a lower case decimal exponent"),
    pytest.param("1E6", F(10**6), id="a capital decimal exponent"),
    pytest.param("12e-3", F(12, 1000), id="a negative decimal exponent"),
    pytest.param("1.3E+6", F(1300000), id="an exponent with an explicit plus sign"),
    pytest.param("1.53E12", F(153 * 10**10), id="a fraction with a large exponent"),
    pytest.param("100.035k", F(100035), id="a fractional kilo quantity"),
    pytest.param("0.0005k", F(1, 2), id="a tiny fraction of a kilo"),
    pytest.param("0.5", F(1, 2), id="a leading zero fraction"),
    pytest.param(".5", F(1, 2), id="a fraction without a leading zero"),
    pytest.param("0.5e-2", F(5, 1000), id="a fraction with a negative exponent"),
    pytest.param("7.123456M", F(7123456), id="a fraction of mega that is a whole number"),
    pytest.param("6.987654321G", F(6987654321), id="nine decimals of giga"),
    pytest.param("1.01E", F(101 * 10**16), id="a fraction of exa"),
    pytest.param("3.001n", F(4, 10**9), id="below a nano rounds up to the next nano"),
    pytest.param("1.1E-9", F(2, 10**9), id="a decimal exponent below a nano rounds up"),
    pytest.param("0.0000000001", F(1, 10**9), id="a tenth of a nano rounds up to one nano"),
    pytest.param("0.9n", F(1, 10**9), id="nine tenths of a nano rounds up to one nano"),
    pytest.param("0.00000012345", F(124, 10**9), id="digits past the nano round up"),
    pytest.param("9Ei", F(INT64_MAX), id="a binary quantity above int64 saturates"),
    pytest.param("9223372036854775807Ki", F(INT64_MAX), id="a huge kibibyte count saturates"),
    pytest.param("100.035Ki", F(10243584, 100), id="fractional binary quantities are exact"),
    pytest.param("0.5Mi", F(MI, 2), id="half a mebibyte"),
    pytest.param("0.05Gi", F(536870912, 10), id="a twentieth of a gibibyte"),
    pytest.param("0.000000000001Ki", F(2, 10**9), id="a sub-nano binary quantity rounds up"),
    pytest.param(".001", F(1, 1000), id="a bare decimal point fraction"),
    pytest.param(".0001k", F(1, 10), id="a bare decimal point fraction of a kilo"),
    pytest.param("1.", F(1), id="a trailing decimal point is accepted"),
    pytest.param("1.G", F(10**9), id="a trailing decimal point before a suffix is accepted"),
    pytest.param("-9.01", F(-901, 100), id="a negative fraction"),
    pytest.param("-1Ki", F(-KI), id="a negative binary quantity"),
    pytest.param("-9Ei", F(-INT64_MAX), id="a negative binary quantity saturates symmetrically"),
    pytest.param("-0.9n", F(-1, 10**9), id="negative values round away from zero"),
    pytest.param("+1.5", F(3, 2), id="an explicit plus sign"),
    pytest.param("007", F(7), id="leading zeros are ignored"),
    pytest.param(".", F(0), id="a lone decimal point parses as zero like upstream"),
    pytest.param("-", F(0), id="a lone minus sign parses as zero like upstream"),
    pytest.param(1, F(1), id="a JSON integer is read as its decimal text"),
    pytest.param(0.25, F(1, 4), id="a JSON float is read as its decimal text"),
    pytest.param(1e-07, F(1, 10**7), id="a JSON float printed with an exponent"),
]


@pytest.mark.parametrize(("text", "value"), PARSE_CASES)
def test_parse_quantity_is_exact(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text, "f") == value


INVALID = [
    pytest.param("", id="an empty string"),
    pytest.param("1.2.3", id="two decimal points"),
    pytest.param("abc", id="letters only"),
    pytest.param("5 Gi", id="a space before the suffix"),
    pytest.param("1Kb", id="a suffix with a trailing unit letter"),
    pytest.param("1.1.M", id="two decimal points before a suffix"),
    pytest.param("1+1.0M", id="a sign in the middle of the number"),
    pytest.param("0.1mi", id="a lower case binary suffix"),
    pytest.param("0.1am", id="an unknown suffix letter"),
    pytest.param("aoeu", id="a word"),
    pytest.param(".5i", id="a lone i suffix after a fraction"),
    pytest.param("1i", id="a lone i suffix"),
    pytest.param("-3.01i", id="a lone i suffix after a negative fraction"),
    pytest.param("-3.01e-", id="an exponent without digits"),
    pytest.param(" 1", id="leading whitespace"),
    pytest.param("1 ", id="trailing whitespace"),
    pytest.param("1K", id="a capital K is not a suffix"),
    pytest.param("1e", id="a lone lower case e is not a suffix"),
    pytest.param("1+5", id="a signed number after the number is not a suffix"),
    pytest.param("1Mi3", id="digits after a binary suffix"),
    pytest.param("1e9999", id="an exponent beyond anything representable"),
    pytest.param(True, id="a JSON boolean"),
    pytest.param(float("inf"), id="an infinite float"),
    pytest.param(None, id="a JSON null"),
]


@pytest.mark.parametrize("text", INVALID)
def test_garbage_is_rejected_with_the_field_named(text: object) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_quantity(text, "spec.containers[0].resources.requests.cpu")  # type: ignore[arg-type]
    assert raised.value.field == "spec.containers[0].resources.requests.cpu"
    assert str(raised.value).startswith("spec.containers[0].resources.requests.cpu: ")


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        pytest.param("1", 1000, 1, id="one unit is a thousand milli"),
        pytest.param("100m", 100, 1, id="a tenth rounds up to one whole unit"),
        pytest.param("0.5m", 1, 1, id="half a milli rounds up to one milli"),
        pytest.param("1n", 1, 1, id="a nano rounds up to one milli and one unit"),
        pytest.param("1500m", 1500, 2, id="one and a half rounds up to two"),
        pytest.param("128Mi", 128 * MI * 1000, 128 * MI, id="mebibytes convert exactly"),
        pytest.param("0", 0, 0, id="zero stays zero"),
        pytest.param("-1.5", -1500, -2, id="negative values round away from zero"),
        pytest.param("9Ei", INT64_MAX, INT64_MAX, id="values past int64 saturate"),
    ],
)
def test_milli_and_int_value_round_up(text: str, milli: int, whole: int) -> None:
    assert milli_value(text, "f") == milli
    assert int_value(text, "f") == whole
    nanos = parse_nanos(text, "f")
    assert (nanos_to_milli(nanos), nanos_to_int(nanos)) == (milli, whole)
