"""Configuration errors: every wrong type and every number that is not finite is a one-line
error naming its field, never a traceback; upstream's ranges; every error of a file reported
together, as upstream aggregates them (ValidateKubeSchedulerConfiguration in
pkg/scheduler/apis/config/validation/validation.go returns one aggregate)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework.config_fields import AggregateConfigError
from scheduler.framework.registry import ConfigError
from scheduler.operator import main as entry
from scheduler.plugins.registry import default_registry


def score_enabled(item: Any) -> dict[str, Any]:
    return {"profiles": [{"plugins": {"score": {"enabled": [item]}}}]}


# Each of these ended in a traceback or was accepted before.
WRONG = [
    pytest.param({"clientConnection": 5},
                 "clientConnection: Invalid value: 5: must be a mapping", id="section not a map"),
    pytest.param({"clientConnection": {"burst": math.inf}},
                 "clientConnection.burst: Invalid value: inf: must be an integer",
                 id="burst .inf"),
    pytest.param({"clientConnection": {"qps": math.nan}},
                 "clientConnection.qps: Invalid value: nan: must be a finite number",
                 id="qps .nan"),
    pytest.param({"clientConnection": {"qps": math.inf}},
                 "clientConnection.qps: Invalid value: inf: must be a finite number",
                 id="qps .inf"),
    pytest.param({"podMaxBackoffSeconds": math.nan},
                 "podMaxBackoffSeconds: Invalid value: nan: must be an integer",
                 id="podMaxBackoffSeconds .nan"),
    pytest.param({"podInitialBackoffSeconds": 1.5},
                 "podInitialBackoffSeconds: Invalid value: 1.5: must be an integer",
                 id="backoffs are whole seconds (int64 upstream)"),
    pytest.param({"profiles": [{"plugins": {"multiPoint": {"disabled": 5}}}]},
                 "profiles[0].plugins.multiPoint.disabled: Invalid value: 5: must be a list",
                 id="multiPoint.disabled not a list"),
    pytest.param({"profiles": [{"plugins": {"filter": {"enabled": 5}}}]},
                 "profiles[0].plugins.filter.enabled: Invalid value: 5: must be a list",
                 id="enabled not a list"),
    pytest.param(score_enabled({"name": "NodeResourcesFit", "weight": True}),
                 "profiles[0].plugins.score.enabled[0].weight: Invalid value: True: "
                 "must be an integer", id="a weight is an integer, not a boolean"),
    pytest.param({"leaderElection": {"leaseDuration": "9999999999999h"}},
                 "leaderElection.leaseDuration: Invalid value: '9999999999999h': longer than "
                 "a Go duration can be", id="a lease longer than a Go duration"),
    pytest.param({"rescheduler": {"objectives": [[1]]}},
                 "rescheduler.objectives[0]: unknown objective [1]", id="objective not a name"),
    pytest.param({"extenders": [{"urlPrefix": "file:///etc/passwd", "filterVerb": "f"}]},
                 "extenders[0].urlPrefix: Invalid value: 'file:///etc/passwd': must be an "
                 "http:// or https:// URL", id="an extender is called over HTTP(S) only"),
]


@pytest.mark.parametrize(("raw", "message"), WRONG)
def test_a_wrong_field_is_one_error_naming_it(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(AggregateConfigError) as excinfo:
        parse_config(raw, default_registry())
    assert excinfo.value.errors[0].startswith(message), excinfo.value.errors


def test_every_error_of_a_file_is_reported_together() -> None:
    raw = {
        "parallelism": 0,
        "clientConnection": {"qps": math.nan, "burst": math.inf},
        "leaderElection": {"leaderElect": "yes"},
        "profiles": [{"schedulerName": "a", "plugins": {
            "filter": {"enabled": [{"name": "Nope"}]},
            "score": {"enabled": [{"name": "ImageLocality", "weight": True}]}}},
            {"schedulerName": "a"}],
        "extenders": [{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
    }
    with pytest.raises(AggregateConfigError) as excinfo:
        parse_config(raw, default_registry())
    paths = [error.split(": ")[0] for error in excinfo.value.errors]
    assert sorted(paths) == sorted([
        "parallelism",
        "clientConnection.qps",
        "clientConnection.burst",
        "leaderElection.leaderElect",
        "profiles[0].plugins.filter.enabled[0].name",
        "profiles[0].plugins.score.enabled[0].weight",
        "profiles[1].schedulerName",
        "extenders[0].weight",
    ])


def test_plugin_argument_errors_of_several_plugins_are_all_reported() -> None:
    raw = {"profiles": [{"pluginConfig": [
        {"name": "DefaultPreemption", "args": {"pdbMode": "Sometimes"}},
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Cheapest"}}},
    ]}]}
    with pytest.raises(AggregateConfigError) as excinfo:
        parse_config(raw, default_registry())
    assert [e.split(": ")[0].split(".args")[0] for e in excinfo.value.errors] == [
        "profiles[0].pluginConfig[0]", "profiles[0].pluginConfig[1]"]


@pytest.mark.parametrize("text", [
    "clientConnection: 5\n",
    "clientConnection: {burst: .inf}\n",
    "profiles: [{plugins: {multiPoint: {disabled: 5}}}]\n",
    "clientConnection: {qps: .nan}\npodMaxBackoffSeconds: .nan\n",
    "profiles: [{plugins: {score: {enabled: [{name: ImageLocality, weight: true}]}}}]\n",
    "- a list\n",
    "parallelism: [unclosed\n",
])
def test_the_command_line_exits_2_with_one_line_per_error(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    assert entry.main(["--log-format", "json", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err and "Traceback" not in err
    for line in err.splitlines():
        assert line.startswith("secondary-scheduler: invalid configuration: "), line


def test_an_aggregate_is_a_config_error_whose_message_is_one_error_a_line() -> None:
    error = AggregateConfigError(["a: x", "b: y"])
    assert isinstance(error, ConfigError)
    assert str(error) == "a: x\nb: y"


def test_a_wrong_duration_is_one_error_not_also_an_ordering_one() -> None:
    with pytest.raises(AggregateConfigError) as excinfo:
        parse_config({"leaderElection": {"leaseDuration": "soon", "renewDeadline": "20s",
                                         "retryPeriod": "5s"}}, default_registry())
    assert excinfo.value.errors == (
        "leaderElection.leaseDuration: Invalid value: 'soon': must be a positive duration "
        "such as '15s'",)
