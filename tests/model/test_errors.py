from __future__ import annotations

import pickle

import pytest

from scheduler.model.errors import InvalidSpecError


@pytest.mark.parametrize(
    ("field", "detail", "text"),
    [
        pytest.param(
            "spec.containers[0].resources.requests.cpu",
            'Invalid value: "abc": unable to parse',
            'spec.containers[0].resources.requests.cpu: Invalid value: "abc": unable to parse',
            id="the message is the field path, a colon and the detail",
        ),
        pytest.param("spec", "must be an object", "spec: must be an object",
                     id="a short field path reads the same way"),
    ],
)
def test_message_names_the_field(field: str, detail: str, text: str) -> None:
    error = InvalidSpecError(field, detail)
    assert isinstance(error, ValueError)
    assert (error.field, error.detail, str(error)) == (field, detail, text)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param(InvalidSpecError("f", "d"), InvalidSpecError("f", "d"), True,
                     id="errors with the same field and detail are equal"),
        pytest.param(InvalidSpecError("f", "d"), InvalidSpecError("g", "d"), False,
                     id="errors about different fields differ"),
        pytest.param(InvalidSpecError("f", "d"), InvalidSpecError("f", "e"), False,
                     id="errors with different details differ"),
    ],
)
def test_equality_and_hash_follow_field_and_detail(
    a: InvalidSpecError, b: InvalidSpecError, equal: bool
) -> None:
    assert (a == b) is equal
    if equal:
        assert hash(a) == hash(b)


def test_error_survives_pickling_with_its_field_and_detail() -> None:
    error = pickle.loads(pickle.dumps(InvalidSpecError("spec.priority", "must be an integer")))
    assert (error.field, error.detail) == ("spec.priority", "must be an integer")
