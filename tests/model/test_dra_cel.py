"""The DRA CEL environment against upstream's table (``dynamic-resource-allocation/cel/
compile_test.go`` ``testcases``, case names kept).

Left out: list-type attributes and ``includes`` (DRAListTypeAttributes is off in v1.37),
the cost figures and the ``expensive`` case (the CEL library has no cost tracking; see
docs/dra.md), and the ``*_disabled``/``*-new-expressions`` environment variants.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from scheduler.model.dra import Device, DeviceAttribute, DeviceCapacity
from scheduler.model.dra_cel import (
    CELError,
    SelectorCache,
    compare_semver,
    compile_selector,
    enhance_runtime_error,
    parse_semver,
)
from scheduler.model.quantity import parse_nanos

DRA = "dra.example.com"


def attrs(**values: Any) -> dict[str, DeviceAttribute]:
    result = {}
    for name, value in values.items():
        if isinstance(value, tuple):  # ("version", "1.0.0")
            result[name] = DeviceAttribute(value[0], value[1])
        elif isinstance(value, bool):
            result[name] = DeviceAttribute("bool", value)
        elif isinstance(value, int):
            result[name] = DeviceAttribute("int", value)
        else:
            result[name] = DeviceAttribute("string", value)
    return result


def caps(**values: str) -> dict[str, DeviceCapacity]:
    return {name: DeviceCapacity(parse_nanos(v, name)) for name, v in values.items()}


ALL_EXPRESSION = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

# name: (expression, driver, attributes, capacity, allowMultipleAllocations,
#        compile error, match error, match)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], bool | None, str, str, bool]] = {
    "true": ("true", "", {}, {}, None, "", "", True),
    "false": ("false", "", {}, {}, None, "", "", False),
    "syntax-error": ("?!", "", {}, {}, None, "Syntax error", "", False),
    "type-error": ("1", "", {}, {}, None,
                   "must evaluate to bool or the unknown type, not int", "", False),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        "", {}, {}, None, "", "no such key: noSuchAttr", False),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        "", {}, {}, None, "", "no such key: noSuchAttr", False),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", {}, {}, None,
                              "", "", False),
    "domain-check-positive": ('"dra.example.com" in device.attributes', "",
                              {"dra.example.com/something": True}, {}, None, "", "", True),
    "empty-driver-name": ('device.driver == ""', "", {}, {}, None, "", "", True),
    "real-driver-name": ('device.driver == "dra.example.com"', DRA, {}, {}, None, "", "", True),
    "driver-name-qualifier": ('device.attributes["dra.example.com"].name', DRA,
                              {"name": True}, {}, None, "", "", True),
    "driver-name-qualifier-map-lookup": ('device.attributes["dra.example.com"]["name"]', DRA,
                                         {"name": True}, {}, None, "", "", True),
    "bind": ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', DRA,
             {"name": True}, {}, None, "", "", True),
    "qualified-attribute-name": ('device.attributes["other.example.com"].name', DRA,
                                 {"other.example.com/name": True}, {}, None, "", "", True),
    "bool": ('device.attributes["dra.example.com"].name', DRA, {"name": True}, {}, None,
             "", "", True),
    "int": ('device.attributes["dra.example.com"].name > 0', DRA, {"name": 1}, {}, None,
            "", "", True),
    "string": ('device.attributes["dra.example.com"].name == "fish"', DRA, {"name": "fish"},
               {}, None, "", "", True),
    "version": ('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))', DRA,
                {"name": ("version", "1.0.0")}, {}, None, "", "", True),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
        '&& isSemver("v1.0.0", true)',
        DRA, {"name": ("version", "1.0.0")}, {}, None, "", "", True),
    "quantity": ('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', DRA,
                 {}, {"name": "1Mi"}, None, "", "", True),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA, {}, {"name": "1Mi"}, None, "", "", True),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "", {}, {}, None, "", "", True),
    "all": (ALL_EXPRESSION, DRA,
            {"bool": True, "int": 1, "string": "fish", "version": ("version", "1.0.0")},
            {"quantity": "1Mi"}, None, "", "", True),
    "many": ('device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b '
             '&& device.attributes["dra.example.com"].c', DRA,
             {"a": True, "b": True, "c": True}, {}, None, "", "", True),
    "check_attribute_domains": ('device.attributes.exists_one(x, x == "dra.example.com")', DRA,
                                {"services": "some_example_value"}, {}, None, "", "", True),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")', DRA,
        {"services": "some_example_value"}, {}, None, "", "", True),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2', DRA,
        {"services": "some_example_value"}, {}, None, "", "", True),
    "regexp_attribute": ('device.attributes["dra.example.com"].services.matches("[^a]?sym")',
                         DRA, {"services": "asymetric"}, {}, None, "", "", True),
    "check_capacity_domains": ('device.capacity.exists_one(x, x == "dra.example.com")', DRA,
                               {}, {"memory": "1Mi"}, None, "", "", True),
    "check_capacity_ids": ('device.capacity["dra.example.com"].exists_one(x, x == "memory")',
                           DRA, {}, {"memory": "1Mi"}, None, "", "", True),
    "allow_multiple_allocations": ("device.allowMultipleAllocations == true", DRA, {}, {}, True,
                                   "", "", True),
    "allow_multiple_allocations_default": ("device.allowMultipleAllocations == false", DRA, {},
                                           {}, None, "", "", True),
    "allow_multiple_allocations_false": ("device.allowMultipleAllocations == false", DRA, {},
                                         {}, False, "", "", True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cel_compile_test_go_testcases(name: str) -> None:
    expression, driver, attributes, capacity, multi, compile_error, match_error, match = CASES[
        name
    ]
    compiled = compile_selector(expression)
    if compile_error:
        assert compiled.error is not None and compile_error in compiled.error
        return
    assert compiled.error is None, compiled.error
    device = Device("d", attrs(**attributes), caps(**capacity), allow_multiple_allocations=multi)
    if match_error:
        with pytest.raises(CELError, match=match_error):
            compiled.matches(device.cel_input(driver))
        return
    assert compiled.matches(device.cel_input(driver)) is match


def test_quantity_library_is_exact_and_semantic() -> None:
    """``library/quantity.go``: values compare exactly, ``==`` is semantic equality."""
    device = Device("d", capacity=caps(memory="24480Mi", millicores="1k"))
    cel = device.cel_input(DRA)
    for expression, want in [
        ('device.capacity["dra.example.com"].memory == quantity("24480Mi")', True),
        ('quantity("1") == quantity("1000m")', True),
        ('device.capacity["dra.example.com"].millicores.compareTo(quantity("1000")) == 0', True),
        ('device.capacity["dra.example.com"].memory.isLessThan(quantity("24Gi"))', True),
        ('quantity("1500m").isInteger()', False),
        ('quantity("2").add(quantity("500m")).sub(1) == quantity("1.5")', True),
        ('quantity("-3").sign() == -1 && quantity("0").sign() == 0', True),
        ('quantity("1.5").asApproximateFloat() == 1.5', True),
        ('isQuantity("1Gi") && !isQuantity("1Gib")', True),
    ]:
        assert compile_selector(expression).matches(cel) is want, expression


def test_quantity_errors_are_runtime_errors() -> None:
    with pytest.raises(CELError, match="quantities must match the regular expression"):
        compile_selector('quantity("1Gib").sign() == 1').matches(Device("d").cel_input(DRA))
    with pytest.raises(CELError, match="cannot convert value to integer"):
        compile_selector('quantity("1500m").asInteger() == 1').matches(Device("d").cel_input(DRA))


def test_semver_library_orders_pre_releases_below_releases() -> None:
    """``semverlib.go`` with blang/semver's precedence."""
    device = Device("d", attrs(v=("version", "1.2.3-rc.1")))
    cel = device.cel_input(DRA)
    for expression, want in [
        ('device.attributes["dra.example.com"].v.isLessThan(semver("1.2.3"))', True),
        ('device.attributes["dra.example.com"].v.isGreaterThan(semver("1.2.3-rc.0"))', True),
        ('device.attributes["dra.example.com"].v.major() == 1', True),
        ('device.attributes["dra.example.com"].v.minor() == 2', True),
        ('device.attributes["dra.example.com"].v.patch() == 3', True),
        ('semver("1.10.0").compareTo(semver("1.9.0")) == 1', True),
        ('semver("1.0.0+build.1") == semver("1.0.0")', True),
        ('isSemver("1.0") || isSemver("01.0.0")', False),
    ]:
        assert compile_selector(expression).matches(cel) is want, expression
    assert compare_semver(parse_semver("1.0.0-alpha"), parse_semver("1.0.0-alpha.1")) == -1
    assert compare_semver(parse_semver("1.0.0-2"), parse_semver("1.0.0-10")) == -1
    assert compare_semver(parse_semver("1.0.0-beta"), parse_semver("1.0.0-10")) == 1


def test_a_version_attribute_that_is_not_semver_fails_every_expression_on_the_device() -> None:
    """``getAttributeValue``: ``attribute <name>: parse semantic version: <err>``."""
    cel = Device("d", attrs(v=("version", "1.0"))).cel_input(DRA)
    with pytest.raises(CELError, match="attribute v: parse semantic version: "):
        compile_selector("true").matches(cel)


def test_optional_chaining_reads_a_missing_attribute_as_its_default() -> None:
    cel = Device("d").cel_input(DRA)
    expression = 'device.attributes["dra.example.com"].?gpus.orValue(0) == 0'
    assert compile_selector(expression).matches(cel) is True


def test_a_non_bool_dynamic_result_is_a_runtime_error() -> None:
    cel = Device("d", attrs(name="fish")).cel_input(DRA)
    with pytest.raises(CELError, match="CEL result of type string could not be converted"):
        compile_selector('device.attributes["dra.example.com"].name').matches(cel)


def test_enhance_runtime_error_adds_the_optional_chaining_hint() -> None:
    """``errors.go`` ``EnhanceRuntimeError``."""
    assert enhance_runtime_error("no such key: x") == (
        "no such key: x. consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )
    assert enhance_runtime_error("divide by zero") == "divide by zero"


def test_compile_errors_use_cel_go_text() -> None:
    compiled = compile_selector("1 +")
    assert compiled.error is not None
    assert compiled.error.startswith("compilation failed: ERROR: <input>:1:4: Syntax error:")
    assert "INVALID_ARGUMENT" not in compiled.error
    undeclared = compile_selector("gpu == 1")
    assert undeclared.error == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'gpu' "
        "(in container '')\n | gpu == 1\n | ^"
    )


def test_cache_semantic() -> None:
    """``cache_test.go`` ``TestCacheSemantic``: LRU of compiled selectors, errors not kept."""
    cache = SelectorCache(max_entries=2)
    result_true = cache.get_or_compile("true")
    assert result_true.error is None
    assert cache.get_or_compile("true") is result_true
    failed = cache.get_or_compile("no-such-variable")
    assert failed.error is not None
    assert cache.get_or_compile("no-such-variable") is not failed
    result_false = cache.get_or_compile("false")
    assert cache.get_or_compile("false") is result_false
    assert cache.get_or_compile("true") is result_true
    other = cache.get_or_compile("false && true")
    assert cache.get_or_compile("false && true") is other
    assert cache.get_or_compile("false") is not result_false  # evicted


def test_cache_concurrency() -> None:
    """``TestCacheConcurrency``: ten threads compile through one small cache."""
    cache = SelectorCache(max_entries=2)
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(lambda i: cache.get_or_compile(f"{i} == {i}"), range(10)))
    assert all(r.error is None for r in results)


def test_a_device_is_converted_once_and_each_verdict_is_kept_with_it() -> None:
    """Slices change rarely: the CEL input and the verdicts outlive a scheduling cycle."""
    device = Device("d", attrs(model="a100"))
    cel = device.cel_input(DRA)
    assert device.cel_input(DRA) is cel
    selector = compile_selector('device.attributes["dra.example.com"].model == "a100"')
    assert selector.matches(cel) is True
    assert cel._verdicts == {selector.expression: True}
    failing = compile_selector('device.attributes["dra.example.com"].gpus > 0')
    for _ in range(2):  # errors are not kept: each evaluation reports them
        with pytest.raises(CELError, match="no such key: gpus"):
            failing.matches(cel)
    assert failing.expression not in cel._verdicts
