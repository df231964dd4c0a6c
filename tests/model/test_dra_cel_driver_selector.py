"""``device.driver == "<literal>"``, the selector nearly every DeviceClass has, is decided in
Python without evaluating CEL (docs/dra.md, "Speed"); it must answer as cel-go does,
including the device's conversion error (``compile.go`` ``DeviceMatches``)."""

from __future__ import annotations

import pytest

from scheduler.model.dra import Device, DeviceAttribute
from scheduler.model.dra_cel import CELError, compile_selector

DRIVER = "gpu.example.com"


@pytest.mark.parametrize("expression", [
    f'device.driver == "{DRIVER}"',
    f' device.driver=="{DRIVER}" ',
    'device.driver == "other.example.com"',
    'device.driver == ""',
])
def test_a_driver_comparison_answers_as_cel_does(expression: str) -> None:
    device = Device("d").cel_input(DRIVER)
    compiled = compile_selector(expression)
    assert compiled._driver_literal is not None
    assert compiled.matches(device) is compiled._program.eval(
        device.activation(frozenset(), frozenset())).value()


@pytest.mark.parametrize("expression", [
    f'device.driver == "{DRIVER}" || true',
    f'device.driver != "{DRIVER}"',
    f'"{DRIVER}" == device.driver',
    'device.driver == "a\\"b"',
])
def test_anything_more_is_left_to_cel(expression: str) -> None:
    assert compile_selector(expression)._driver_literal is None


def test_a_device_that_cannot_be_converted_fails_the_driver_comparison_too() -> None:
    device = Device("d", {"v": DeviceAttribute("version", "1.0")}).cel_input(DRIVER)
    with pytest.raises(CELError, match="attribute v: parse semantic version: "):
        compile_selector(f'device.driver == "{DRIVER}"').matches(device)


@pytest.mark.parametrize("attributes", [
    {},
    {"v": DeviceAttribute("version", "1.2.3")},
    {"v": DeviceAttribute("version", "1.0")},
    {"a": DeviceAttribute("version", "x"), "b": DeviceAttribute("version", "01.0.0"),
     "c": DeviceAttribute("string", "1.0")},
])
def test_the_conversion_error_without_converting_is_the_conversions(
    attributes: dict[str, DeviceAttribute],
) -> None:
    device = Device("d", attributes)
    assert device.cel_conversion_error() == Device("d", attributes).cel_input(DRIVER).error
