"""The out-of-tree example plugin (examples/plugins/prefer_label.py), registered beside the
defaults and enabled by a configuration file, as docs/architecture.md describes."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.plugins import prefer_label
from scheduler.cycle import schedule_one
from scheduler.framework.config import load_config_file
from scheduler.framework.registry import ConfigError
from scheduler.intake import Intake
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler
from scheduler.testing import node, pod, score_nodes
from tests.queue.fakes import FakeClock
from tests.test_cycle import RecordingPorts

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      score:
        enabled: [{name: PreferLabel, weight: 50}]
    pluginConfig:
      - name: PreferLabel
        args: {label: node.example.com/spot, value: "true"}
"""
ADDED = "ADDED"


def scheduler_from(config: str, tmp_path: Path) -> tuple[Scheduler, Intake, RecordingPorts]:
    path = tmp_path / "config.yaml"
    path.write_text(config)
    registry = default_registry()
    registry.register(prefer_label.SPEC)
    ports = RecordingPorts()
    s = Scheduler(load_config_file(path, registry), registry, binder=ports, reporter=ports,
                  clock=FakeClock(), seed=1)
    s.submit_binding = lambda fn, *args: fn(*args)  # type: ignore[method-assign]
    return s, Intake(s), ports


@pytest.mark.parametrize(
    ("spot", "want"),
    [
        pytest.param("n3", "n3", id="the labelled node wins"),
        pytest.param(None, "n1", id="no labelled node: the default scores decide"),
    ],
)
def test_the_plugin_scores_from_the_configuration_file(
    tmp_path: Path, spot: str | None, want: str
) -> None:
    s, intake, ports = scheduler_from(CONFIG, tmp_path)
    # n1 is the emptiest node, which the default scores prefer.
    intake.on_node(ADDED, node("n1", cpu="8"))
    for name in ("n2", "n3"):
        labels = {"node.example.com/spot": "true"} if name == spot else {}
        intake.on_node(ADDED, node(name, cpu="4", labels=labels))
    intake.on_pod(ADDED, pod("p", cpu="1"))
    assert schedule_one(s, timeout=0)
    assert ports.binds == [("default/p", want)]


def test_bad_arguments_are_refused_with_the_field_named(tmp_path: Path) -> None:
    field = r"pluginConfig\[0\]\.args\.label"
    with pytest.raises(ConfigError, match=rf"{field}: Invalid value: 'a/b/c'"):
        scheduler_from(CONFIG.replace("node.example.com/spot", "a/b/c"), tmp_path)


def test_the_plugin_scores_as_a_plugin_author_would_test_it() -> None:
    """With the testing kit (scheduler.testing), as docs/architecture.md suggests."""
    args = {"label": "node.example.com/spot", "value": "true"}
    nodes = [node("spot", labels={"node.example.com/spot": "true"}), node("plain")]
    assert score_nodes(prefer_label.SPEC, args, pod("p"), nodes) == {"spot": 100, "plain": 0}
