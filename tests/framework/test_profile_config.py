"""The profiles' configuration: defaults, multiPoint merging, pluginConfig and errors that
name the field."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework.registry import ConfigError
from scheduler.plugins.registry import default_registry


def names(config: Any, point: str, profile: int = 0) -> list[str]:
    return [ref.name for ref in config.profiles[profile].points[point]]


def test_the_default_profile_is_kube_schedulers_plus_avoid_bounce_back() -> None:
    """upstream's getDefaultPlugins with applyDynamicResources: DynamicResources (weight 2)
    just before DefaultPreemption, so its PostFilter runs first."""
    config = parse_config({}, default_registry())
    profile = config.profiles[0]
    assert profile.scheduler_name == "secondary-scheduler"
    assert names(config, "filter") == [
        "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
    ]
    weights = {ref.name: ref.weight for ref in profile.points["score"]}
    assert weights == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
        "PodTopologySpread": 2, "InterPodAffinity": 2, "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1, "AvoidBounceBack": 100,
    }
    assert names(config, "reserve") == ["VolumeBinding", "DynamicResources"]
    assert names(config, "preBind") == ["VolumeBinding", "DynamicResources"]
    assert names(config, "preEnqueue") == ["DynamicResources", "DefaultPreemption"]
    assert names(config, "queueSort") == ["PrioritySort"]
    assert names(config, "postFilter") == ["DynamicResources", "DefaultPreemption"]
    assert names(config, "bind") == ["DefaultBinder"]
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.client_connection.qps == 50 and config.client_connection.burst == 100


def test_multipoint_disable_and_score_weight_override() -> None:
    config = parse_config(
        {"profiles": [{"schedulerName": "s", "plugins": {
            "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
            "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
        }}]},
        default_registry(),
    )
    weights = {ref.name: ref.weight for ref in config.profiles[0].points["score"]}
    assert "ImageLocality" not in weights
    assert weights["NodeResourcesFit"] == 5


def test_disabling_every_filter_plugin_with_a_star() -> None:
    config = parse_config(
        {"profiles": [{"plugins": {"filter": {"disabled": [{"name": "*"}],
                                              "enabled": [{"name": "NodeName"}]}}}]},
        default_registry(),
    )
    assert names(config, "filter") == ["NodeName"]


def test_several_profiles_each_with_their_own_name() -> None:
    config = parse_config(
        {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]}, default_registry()
    )
    assert config.scheduler_names == frozenset({"a", "b"})


def test_plugin_args_are_merged_over_defaults() -> None:
    config = parse_config(
        {"profiles": [{"pluginConfig": [
            {"name": "DefaultPreemption", "args": {"pdbMode": "Strict"}},
        ]}]},
        default_registry(),
    )
    args = config.profiles[0].args["DefaultPreemption"]
    assert args["pdbMode"] == "Strict"
    assert args["minCandidateNodesAbsolute"] == 100


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]},
                     "profiles[0].plugins.filter.enabled[0].name",
                     id="an unknown plugin is refused naming its place"),
        pytest.param({"profiles": [{"pluginConfig": [{"name": "DefaultPreemption",
                                                      "args": {"pdbMode": "Sometimes"}}]}]},
                     "profiles[0].pluginConfig[0].args.pdbMode",
                     id="a bad plugin argument is refused naming the argument"),
        pytest.param({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
                     "profiles[1].schedulerName", id="duplicate profile names are refused"),
        pytest.param({"profiles": [{}, {"schedulerName": "b"}]}, "profiles[0].schedulerName",
                     id="with several profiles every profile needs a name"),
        pytest.param({"percentageOfNodesToScore": 120}, "percentageOfNodesToScore",
                     id="a percentage above 100 is refused"),
        pytest.param({"podInitialBackoffSeconds": 20}, "podMaxBackoffSeconds",
                     id="a max backoff below the initial backoff is refused"),
        pytest.param({"profiles": [{"schedulerName": "s", "plugin": {}}]},
                     "profiles[0].plugin", id="a misspelt field is refused, not ignored"),
        pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion",
                     id="another config version is refused"),
        pytest.param({"profiles": [{"plugins": {"score": {"enabled": [
            {"name": "NodeName"}]}}}]}, "profiles[0].plugins.score.enabled[0].name",
            id="a plugin enabled at a point it does not implement is refused"),
    ],
)
def test_bad_configuration_names_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(raw, default_registry())
    assert str(excinfo.value).startswith(field), str(excinfo.value)
