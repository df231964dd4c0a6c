"""Label key/value syntax (apimachinery content.IsLabelKey / IsLabelValue) and ParseInt."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from scheduler.model.validation import (
    is_list,
    is_mapping,
    is_qualified_name,
    label_key_error,
    label_value_error,
    parse_go_int64,
)


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        pytest.param("app", True, id="a simple name is a valid key"),
        pytest.param("MyName", True, id="upper case letters are allowed in the name part"),
        pytest.param("my.name", True, id="dots are allowed inside the name part"),
        pytest.param("123-abc", True, id="a name may start with a digit"),
        pytest.param("example.com/MyName", True, id="a DNS subdomain prefix is allowed"),
        pytest.param("kubernetes.io/hostname", True, id="the well-known hostname label"),
        pytest.param("a" * 63, True, id="a 63 character name is the maximum"),
        pytest.param("a" * 64, False, id="a 64 character name is too long"),
        pytest.param("", False, id="an empty key is invalid"),
        pytest.param("invalid key", False, id="a space is not allowed"),
        pytest.param("-app", False, id="a name must start with an alphanumeric"),
        pytest.param("app-", False, id="a name must end with an alphanumeric"),
        pytest.param("/app", False, id="an empty prefix is invalid"),
        pytest.param("Example.com/app", False, id="a prefix must be lower case"),
        pytest.param("a/b/c", False, id="two slashes are invalid"),
        pytest.param("example.com/", False, id="an empty name after the prefix is invalid"),
        pytest.param("app\n", False, id="a trailing newline is invalid"),
        pytest.param(("a" * 63 + ".") * 4 + "a/x", False, id="a prefix over 253 characters"),
    ],
)
def test_label_keys(key: str, valid: bool) -> None:
    assert (label_key_error(key) is None) is valid
    assert is_qualified_name(key) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        pytest.param("", True, id="an empty label value is valid"),
        pytest.param("MyValue", True, id="letters are valid"),
        pytest.param("my_value", True, id="underscores are valid inside"),
        pytest.param("12345", True, id="digits are valid"),
        pytest.param("a" * 63, True, id="63 characters is the maximum"),
        pytest.param("a" * 64, False, id="64 characters is too long"),
        pytest.param("-5", False, id="a leading minus is invalid so negative numbers are too"),
        pytest.param("a b", False, id="a space is invalid"),
        pytest.param("value.", False, id="a trailing dot is invalid"),
    ],
)
def test_label_values(value: str, valid: bool) -> None:
    assert (label_value_error(value) is None) is valid


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("0", 0, id="zero parses"),
        pytest.param("42", 42, id="a positive integer parses"),
        pytest.param("+42", 42, id="a leading plus sign is accepted like strconv.ParseInt"),
        pytest.param("-42", -42, id="a negative integer parses"),
        pytest.param("007", 7, id="leading zeros are accepted"),
        pytest.param("9223372036854775807", 2**63 - 1, id="int64 max parses"),
        pytest.param("-9223372036854775808", -(2**63), id="int64 min parses"),
        pytest.param("9223372036854775808", None, id="one past int64 max overflows"),
        pytest.param("1_000", None, id="underscores are rejected in base 10"),
        pytest.param(" 1", None, id="whitespace is rejected"),
        pytest.param("1.0", None, id="a decimal point is rejected"),
        pytest.param("", None, id="an empty string is rejected"),
        pytest.param("٣", None, id="non-ASCII digits are rejected"),
    ],
)
def test_parse_go_int64(text: str, value: int | None) -> None:
    assert parse_go_int64(text) == value


@pytest.mark.parametrize(
    ("value", "mapping", "listing"),
    [
        pytest.param({}, True, False, id="a dict is a JSON object"),
        pytest.param(OrderedDict(), True, False, id="any Mapping is a JSON object"),
        pytest.param([], False, True, id="a list is a JSON array"),
        pytest.param((), False, True, id="a tuple counts as a JSON array"),
        pytest.param("ab", False, False, id="a string is neither"),
        pytest.param(3, False, False, id="a number is neither"),
    ],
)
def test_json_shape_checks(value: object, mapping: bool, listing: bool) -> None:
    assert is_mapping(value) is mapping
    assert is_list(value) is listing
