"""The ``rescheduler`` configuration section, and the kubelet's refusals the intake remembers
for AvoidBounceBack."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import ReschedulerConfig, ReschedulerLimits, parse_config
from scheduler.framework.avoidance import owner_key
from scheduler.framework.registry import ConfigError
from scheduler.intake import MODIFIED, Intake
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry
from scheduler.testing import node, scheduler_of
from tests.rescheduling.conftest import owned


def test_off_by_default() -> None:
    assert parse_config({}, default_registry()).rescheduler == ReschedulerConfig()
    assert ReschedulerConfig().enabled is False


def test_every_field() -> None:
    config = parse_config({"rescheduler": {
        "enabled": True, "dryRun": True, "interval": "30s", "objectives": ["UnderutilizedNodes"],
        "minScoreGain": 25, "avoidDuration": "1h", "moveTimeout": "2m",
        "allowLocalStorage": True, "limits": {"perNode": 2, "perNamespace": 3, "perPass": 4},
    }}, default_registry())
    assert config.rescheduler == ReschedulerConfig(
        enabled=True, dry_run=True, interval=30, objectives=("UnderutilizedNodes",),
        min_score_gain=25, avoid_seconds=3600, move_timeout=120, allow_local_storage=True,
        limits=ReschedulerLimits(per_node=2, per_namespace=3, per_pass=4))


@pytest.mark.parametrize(("section", "message"), [
    ({"enable": True}, "rescheduler.enable: unknown field"),
    ({"enabled": "yes"}, "rescheduler.enabled: Invalid value: 'yes': must be true or false"),
    ({"interval": "soon"},
     "rescheduler.interval: Invalid value: 'soon': must be a positive duration"),
    ({"objectives": []}, "rescheduler.objectives: Invalid value: []: must be a non-empty list"),
    ({"objectives": ["Cheaper"]}, "rescheduler.objectives[0]: unknown objective 'Cheaper'"),
    ({"minScoreGain": 0}, "rescheduler.minScoreGain: Invalid value: 0: must be >= 1"),
    ({"limits": {"perNode": 0}}, "rescheduler.limits.perNode: Invalid value: 0: must be >= 1"),
    ({"limits": {"perCluster": 1}}, "rescheduler.limits.perCluster: unknown field"),
])
def test_errors_name_the_field(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"rescheduler": section}, default_registry())
    assert message in str(excinfo.value)


def test_enabled_without_avoid_bounce_back_scoring_is_refused() -> None:
    profile = {"plugins": {"score": {"disabled": [{"name": "AvoidBounceBack"}]}}}
    parse_config({"profiles": [profile]}, default_registry())  # fine while it is off
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"profiles": [profile], "rescheduler": {"enabled": True}},
                     default_registry())
    assert "profiles[0].plugins.score: the rescheduler is enabled, so AvoidBounceBack" in str(
        excinfo.value)


@pytest.mark.parametrize(("enabled", "status", "avoided"), [
    (True, {"phase": "Failed", "reason": "OutOfcpu"}, {"a": "the kubelet failed a pod of it: "
                                                            "OutOfcpu"}),
    (True, {"phase": "Failed", "reason": "Evicted"}, {"a": "the kubelet failed a pod of it: "
                                                           "Evicted"}),
    (True, {"phase": "Failed", "reason": "Error"}, {}),
    (True, {"phase": "Succeeded"}, {}),
    (False, {"phase": "Failed", "reason": "OutOfcpu"}, {}),
])
def test_the_kubelet_failing_a_pod_is_remembered_for_its_controller(
        enabled: bool, status: dict[str, str], avoided: dict[str, str]) -> None:
    s, _ = scheduler_of({"rescheduler": {"enabled": enabled}}, nodes=[node("a"), node("b")])
    intake = Intake(s)
    intake.on_pod(None, owned("web-0", "web", node="a"))
    intake.on_pod(MODIFIED, owned("web-0", "web", node="a", status=status))
    sibling = PodInfo.from_pod(owned("web-1", "web"))
    assert s.avoidance.nodes_for(owner_key(sibling)) == avoided
    s.stop(timeout=5)
