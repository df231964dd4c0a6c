"""PreferLabel, tested with the testing kit only (scheduler.testing), as a plugin author
would: its score per node, whole cycles from a configuration file, and refused arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefer_label import SPEC

from scheduler.plugin_api import ConfigError
from scheduler.testing import node, pod, schedule, score_nodes

SPOT = "node.example.com/spot"
CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      score:
        enabled: [{{name: PreferLabel, weight: 50}}]
    pluginConfig:
      - name: PreferLabel
        args: {{label: {SPOT}, value: "true"}}
"""


def test_labelled_nodes_score_the_maximum() -> None:
    nodes = [node("spot", labels={SPOT: "true"}), node("plain"), node("no", labels={SPOT: "x"})]
    assert score_nodes(SPEC, {"label": SPOT}, pod("p"), nodes) == {
        "spot": 100, "plain": 0, "no": 0}


@pytest.mark.parametrize(
    ("spot", "want"),
    [
        pytest.param("n3", "n3", id="the labelled node wins"),
        pytest.param(None, "n1", id="no labelled node: the default scores decide"),
    ],
)
def test_pods_go_where_the_configuration_file_says(
    tmp_path: Path, spot: str | None, want: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    # n1 is the emptiest node, which the default scores prefer.
    nodes = [node("n1", cpu="8")] + [
        node(n, cpu="4", labels={SPOT: "true"} if n == spot else {}) for n in ("n2", "n3")]
    assert schedule(config, nodes, [pod("p", cpu="1")], plugins=[SPEC]) == {"p": want}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"label": "a/b/c"}, r"pluginConfig\[0\]\.args\.label: Invalid value: "
                     "'a/b/c'", id="a label key"),
        pytest.param({"label": SPOT, "colour": "red"},
                     r"pluginConfig\[0\]\.args\.colour: unknown field", id="unknown field"),
        pytest.param({"label": SPOT, "value": 1},
                     r"pluginConfig\[0\]\.args\.value: Invalid value: 1: must be a string",
                     id="typed"),
        pytest.param({}, r"pluginConfig\[0\]\.args\.label: Required value", id="required"),
    ],
)
def test_bad_arguments_are_refused_with_the_field_named(
    args: dict[str, object], message: str
) -> None:
    config = {"profiles": [{"schedulerName": "s", "plugins": {
        "score": {"enabled": [{"name": "PreferLabel"}]}},
        "pluginConfig": [{"name": "PreferLabel", "args": args}]}]}
    with pytest.raises(ConfigError, match=message):
        schedule(config, [node("n")], [], plugins=[SPEC])


def test_enabled_without_its_required_label_is_refused() -> None:
    config = {"profiles": [{"schedulerName": "s", "plugins": {
        "score": {"enabled": [{"name": "PreferLabel"}]}}}]}
    with pytest.raises(ConfigError, match=r"pluginConfig\[PreferLabel\]\.args\.label: Required"):
        schedule(config, [node("n")], [], plugins=[SPEC])
