"""The effective configuration (``--write-config-to``, ``check-config``): every default filled
in, as upstream's defaulting leaves the file, and it loads back unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config import parse_config
from scheduler.config.effective import effective, effective_yaml
from scheduler.framework.config_fields import format_duration, parse_duration
from scheduler.operator import main as entry
from scheduler.plugins.registry import default_registry
from tests.config.test_upstream_fields import honourable

CONFIGS = [
    pytest.param({}, id="the defaults"),
    pytest.param(honourable(), id="every field set"),
    pytest.param({"profiles": [
        {"schedulerName": "a", "plugins": {"multiPoint": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"},
                        {"name": "NodeName"}, {"name": "AvoidBounceBack"}]}}},
        {"schedulerName": "b", "plugins": {
            "filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity"}]},
            "score": {"enabled": [{"name": "ImageLocality", "weight": 7}]},
            "multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}}},
    ], "rescheduler": {"enabled": True, "interval": "90s", "objectives": ["PreferredTerms"],
                       "avoidDuration": "1h", "moveTimeout": "500ms",
                       "limits": {"perPass": 3}}},
        id="profiles, multiPoint and points changed, the rescheduler on"),
]


@pytest.mark.parametrize("raw", CONFIGS)
def test_the_effective_configuration_loads_back_unchanged(raw: dict[str, Any]) -> None:
    registry = default_registry()
    config = parse_config(raw, registry)
    text = effective_yaml(config, registry)
    again = parse_config(yaml.safe_load(text), registry)
    assert again == config
    assert effective_yaml(again, registry) == text


def test_the_defaults_are_written_as_upstreams_defaulting_leaves_them() -> None:
    registry = default_registry()
    out = effective(parse_config({}, registry), registry)
    assert out["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert out["leaderElection"]["leaseDuration"] == "15s"
    assert out["clientConnection"]["contentType"] == "application/json"
    assert (out["enableProfiling"], out["delayCacheUntilActive"]) == (False, False)
    (profile,) = out["profiles"]
    # Only multiPoint, the default plugins with their weights, as upstream's output.
    assert list(profile["plugins"]) == ["multiPoint"]
    assert {"name": "TaintToleration", "weight": 3} in profile["plugins"]["multiPoint"]["enabled"]
    # Appended by upstream's applyFeatureGates (NodeDeclaredFeatures is GA in v1.37): last.
    assert profile["plugins"]["multiPoint"]["enabled"][-1] == {"name": "NodeDeclaredFeatures"}
    assert "disabled" not in profile["plugins"]["multiPoint"]
    args = {entry["name"]: entry["args"] for entry in profile["pluginConfig"]}
    assert args["DefaultPreemption"]["minCandidateNodesAbsolute"] == 100


@pytest.mark.parametrize(("text", "seconds"), [
    ("15s", 15.0), ("1m30s", 90.0), ("1h0m0s", 3600.0), ("500ms", 0.5), ("1.5s", 1.5),
    ("2h3m4.5s", 7384.5), ("250µs", 0.00025),
])
def test_durations_are_printed_as_go_prints_them(text: str, seconds: float) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


def test_write_config_to_writes_the_effective_configuration_and_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def app(*_: Any) -> None:
        raise AssertionError("--write-config-to must not start the scheduler")

    monkeypatch.setattr(entry, "SchedulerApp", app)
    source, written = tmp_path / "in.yaml", tmp_path / "out.yaml"
    source.write_text("parallelism: 4\nleaderElection: {leaderElect: true}\n")
    assert entry.main(["--log-format", "json", "--config", str(source), "--leader-elect=false",
                       "--kubeconfig", "/k", "--write-config-to", str(written)]) == 0
    out = yaml.safe_load(written.read_text())
    # The flags are applied, as upstream's options are before it writes.
    assert out["parallelism"] == 4 and out["leaderElection"]["leaderElect"] is False
    assert out["clientConnection"]["kubeconfig"] == "/k"
    assert entry.main(["--log-format", "json", "--config", str(written),
                       "--write-config-to", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == written.read_text()


def test_check_config_prints_the_effective_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text("profiles: [{schedulerName: mine}]\n")
    assert entry.main(["check-config", "--config", str(source)]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["profiles"][0]["schedulerName"] == "mine"
    assert out["podMaxBackoffSeconds"] == 10


def test_check_config_reports_every_error_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text("parallelism: 0\nclientConnection: {qps: .nan}\n"
                      "profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]\n")
    assert entry.main(["check-config", "--config", str(source)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert [line.split(": ")[2] for line in captured.err.splitlines()] == [
        "profiles[0].plugins.filter.enabled[0].name", "parallelism", "clientConnection.qps"]


def test_check_config_loads_the_installed_plugins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example plugins are installed with their entry points (make install)."""
    source = tmp_path / "in.yaml"
    source.write_text("profiles: [{plugins: {score: {enabled: [{name: PreferLabel}]}},\n"
                      "  pluginConfig: [{name: PreferLabel, args: {label: tier}}]}]\n")
    code = entry.main(["check-config", "--config", str(source)])
    assert code == 0, capsys.readouterr().err


RTCR_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
FIT_ARGS = [
    pytest.param(None, """\
ignoredResources: []
ignoredResourceGroups: []
scoringStrategy:
  type: LeastAllocated
  resources:
  - name: cpu
    weight: 1
  - name: memory
    weight: 1
""", id="the default"),
    pytest.param({"scoringStrategy": {"type": "LeastAllocated",
                                      "resources": [{"name": "memory", "weight": 2}]}}, """\
ignoredResources: []
ignoredResourceGroups: []
scoringStrategy:
  type: LeastAllocated
  resources:
  - name: memory
    weight: 2
""", id="LeastAllocated"),
    pytest.param({"ignoredResources": ["example.com/foo"], "scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                               {"name": "nvidia.com/gpu", "weight": 5}]}}, """\
ignoredResources:
- example.com/foo
ignoredResourceGroups: []
scoringStrategy:
  type: MostAllocated
  resources:
  - name: cpu
    weight: 1
  - name: nvidia.com/gpu
    weight: 5
""", id="MostAllocated"),
    pytest.param({"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}],
        "requestedToCapacityRatio": {"shape": RTCR_SHAPE}}}, """\
ignoredResources: []
ignoredResourceGroups: []
scoringStrategy:
  type: RequestedToCapacityRatio
  resources:
  - name: cpu
    weight: 1
  requestedToCapacityRatio:
    shape:
    - utilization: 0
      score: 0
    - utilization: 100
      score: 10
""", id="RequestedToCapacityRatio"),
]


@pytest.mark.parametrize(("args", "written"), FIT_ARGS)
def test_node_resources_fit_args_are_written_as_given_over_the_defaults(
    args: dict[str, Any] | None, written: str
) -> None:
    """NodeResourcesFit's args as they were written before they were typed: no
    ``requestedToCapacityRatio: null`` for the other strategies. kube-scheduler v1.37.2
    (``--write-config-to``) writes the same scoringStrategy for these inputs; it leaves the
    empty ignored lists out (Go's omitempty) and adds the args' apiVersion and kind."""
    registry = default_registry()
    profile: dict[str, Any] = {"schedulerName": "s"}
    if args is not None:
        profile["pluginConfig"] = [{"name": "NodeResourcesFit", "args": args}]
    out = effective(parse_config({"profiles": [profile]}, registry), registry)
    (fit,) = [e["args"] for e in out["profiles"][0]["pluginConfig"]
              if e["name"] == "NodeResourcesFit"]
    assert yaml.safe_dump(fit, sort_keys=False) == written
