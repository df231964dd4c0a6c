"""DynamicResourcesArgs as a KubeSchedulerConfiguration's pluginConfig gives them: upstream's
``TestValidateDynamicResourcesArgs`` (``validation_pluginargs_test.go``, cases with v1.37.2's
gates on) and ``SetDefaults_DynamicResourcesArgs``, through the typed decoding, and the
effective configuration as kube-scheduler writes it."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.config.effective import effective
from scheduler.framework.args import error_lines
from scheduler.framework.errors import ConfigError
from scheduler.plugins.dynamic_resources.args import DynamicResourcesArgs
from scheduler.plugins.dynamic_resources.plugin import DynamicResources
from scheduler.plugins.registry import default_registry
from scheduler.testing import scheduler_of

PATH = "profiles[0].pluginConfig[0].args"


def _config(args: dict[str, Any]) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": "s", "pluginConfig": [
        {"name": "DynamicResources", "args": args}]}]}


def _errors(args: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(_config(args), default_registry())
    return error_lines(err.value)


@pytest.mark.parametrize("args", [
    pytest.param({"filterTimeout": "10s", "bindingTimeout": "10m0s"}, id="valid args (default)"),
    pytest.param({"bindingTimeout": "30s"}, id="valid BindingTimeout"),
    pytest.param({"filterTimeout": "0s", "bindingTimeout": "1s"}, id="zero and one second"),
])
def test_valid_args_are_taken(args: dict[str, Any]) -> None:
    parse_config(_config(args), default_registry())


@pytest.mark.parametrize(("args", "errors"), [
    pytest.param({"filterTimeout": "-1s"},
                 [f'{PATH}.filterTimeout: Invalid value: "-1s": must be zero or positive'],
                 id="negative FilterTimeout"),
    pytest.param({"bindingTimeout": "0s"},
                 [f'{PATH}.bindingTimeout: Invalid value: "0s": must be at least 1 second'],
                 id="BindingTimeout < 1s (0s)"),
    pytest.param({"filterTimeout": "-1s", "bindingTimeout": "500ms"},
                 [f'{PATH}.filterTimeout: Invalid value: "-1s": must be zero or positive',
                  f'{PATH}.bindingTimeout: Invalid value: "500ms": must be at least 1 second'],
                 id="every problem at once"),
    pytest.param({"filterTimeout": "soon"},
                 [f"{PATH}.filterTimeout: Invalid value: 'soon': must be a duration such as 10s"],
                 id="not a duration"),
    pytest.param({"bindingTimeout": 30},
                 [f"{PATH}.bindingTimeout: Invalid value: 30: must be a duration such as 10s"],
                 id="not a string, refused in decoding"),
    pytest.param({"filterTimeout": "-1s", "nope": 1},
                 [f"{PATH}.nope: Invalid value: unknown field"],
                 id="an unknown field is refused before validation, as strict decoding"),
])
def test_args_are_validated_as_upstreams_validate_dynamic_resources_args(
    args: dict[str, Any], errors: list[str]
) -> None:
    assert _errors(args) == errors


def test_the_plugin_gets_the_durations_in_seconds() -> None:
    s, _ = scheduler_of(_config({"filterTimeout": "1m30s"}))
    try:
        plugin = s.profiles["s"].instances["DynamicResources"]
    finally:
        s.stop(timeout=5)
    assert isinstance(plugin, DynamicResources)
    assert (plugin.filter_timeout, plugin.binding_timeout) == (90.0, 600.0)
    assert DynamicResourcesArgs().filter_timeout_seconds == 10.0


@pytest.mark.parametrize(("args", "written"), [
    pytest.param(None, {"filterTimeout": "10s", "bindingTimeout": "10m0s"},
                 id="SetDefaults_DynamicResourcesArgs"),
    pytest.param({"bindingTimeout": "30s"}, {"filterTimeout": "10s", "bindingTimeout": "30s"},
                 id="one given, the other defaulted"),
])
def test_the_effective_args_are_written_as_kube_scheduler_writes_them(
    args: dict[str, Any] | None, written: dict[str, Any]
) -> None:
    """kube-scheduler v1.37.2's --write-config-to writes both durations of the defaulted
    DynamicResourcesArgs (and the args' apiVersion and kind, which we leave out)."""
    registry = default_registry()
    profile: dict[str, Any] = {"schedulerName": "s"}
    if args is not None:
        profile["pluginConfig"] = [{"name": "DynamicResources", "args": args}]
    out = effective(parse_config({"profiles": [profile]}, registry), registry)
    (dra,) = [e["args"] for e in out["profiles"][0]["pluginConfig"]
              if e["name"] == "DynamicResources"]
    assert dra == written
