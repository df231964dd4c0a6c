"""Configuration: defaults, multiPoint merging, pluginConfig and errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework.registry import ConfigError
from scheduler.plugins.registry import default_registry


def names(config: Any, point: str, profile: int = 0) -> list[str]:
    return [ref.name for ref in config.profiles[profile].points[point]]


def test_the_default_profile_is_kube_schedulers_without_dra_plus_avoid_bounce_back() -> None:
    config = parse_config({}, default_registry())
    profile = config.profiles[0]
    assert profile.scheduler_name == "secondary-scheduler"
    assert names(config, "filter") == [
        "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity",
    ]
    weights = {ref.name: ref.weight for ref in profile.points["score"]}
    assert weights == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
        "PodTopologySpread": 2, "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1, "AvoidBounceBack": 100,
    }
    assert names(config, "reserve") == ["VolumeBinding"]
    assert names(config, "preBind") == ["VolumeBinding"]
    assert names(config, "queueSort") == ["PrioritySort"]
    assert names(config, "postFilter") == ["DefaultPreemption"]
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


def test_client_connection_and_parallelism_are_honoured() -> None:
    config = parse_config({
        "parallelism": 4,
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf",
                             "contentType": "application/json", "qps": 20, "burst": 40},
    }, default_registry())
    assert config.parallelism == 4
    assert config.client_connection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert (config.client_connection.qps, config.client_connection.burst) == (20, 40)
    defaults = parse_config({}, default_registry())
    assert defaults.parallelism == 16 and defaults.client_connection.kubeconfig is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"parallelism": 0}, "parallelism: Invalid value: 0: must be >= 1",
                     id="parallelism must be positive, as upstream validates"),
        pytest.param({"clientConnection": {"contentType": "application/vnd.kubernetes.protobuf"}},
                     "clientConnection.contentType: Invalid value: "
                     "'application/vnd.kubernetes.protobuf': "
                     "this scheduler's API client reads and writes JSON only",
                     id="a wire format this scheduler does not speak is refused"),
        pytest.param({"clientConnection": {"kubeconfig": 3}},
                     "clientConnection.kubeconfig: Invalid value: 3: must be a string",
                     id="the kubeconfig must be a path"),
    ],
)
def test_config_fields_that_cannot_be_honoured_are_refused(raw: dict[str, Any],
                                                           message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(raw, default_registry())
    assert str(excinfo.value).startswith(message), str(excinfo.value)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param({}, (True, 15.0, 10.0, 2.0, "secondary-scheduler", "kube-system"),
                     id="kube-scheduler's defaults, under our own lease name"),
        pytest.param({"leaderElect": False, "leaseDuration": "1m30s", "renewDeadline": "1m",
                      "retryPeriod": "500ms", "resourceLock": "leases", "resourceName": "s",
                      "resourceNamespace": "ops"},
                     (False, 90.0, 60.0, 0.5, "s", "ops"), id="every field honoured"),
    ],
)
def test_leader_election_is_honoured(raw: dict[str, Any], want: tuple[Any, ...]) -> None:
    le = parse_config({"leaderElection": raw}, default_registry()).leader_election
    got = (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period,
           le.resource_name, le.resource_namespace)
    assert got == want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"resourceLock": "endpointsleases"},
                     "leaderElection.resourceLock: Invalid value: 'endpointsleases': "
                     "client-go removed",
                     id="only the Lease lock"),
        pytest.param({"leaseDuration": "10s", "renewDeadline": "10s"},
                     "leaderElection: leaseDuration must be greater than renewDeadline",
                     id="the renewal must give up before the lease can expire elsewhere"),
        pytest.param({"renewDeadline": "2s", "retryPeriod": "2s"},
                     "leaderElection: renewDeadline must be greater than retryPeriod*1.2",
                     id="room for at least one retry"),
        pytest.param({"leaseDuration": "15"}, "leaderElection.leaseDuration: Invalid value: '15': "
                     "must be a positive duration", id="a duration needs its unit"),
        pytest.param({"retryPeriod": "0s"}, "leaderElection.retryPeriod: Invalid value: '0s': "
                     "must be a positive",
                     id="zero is not a period"),
        pytest.param({"leaderElect": "yes"}, "leaderElection.leaderElect: Invalid value: 'yes': "
                     "must be true or false",
                     id="a boolean"),
        pytest.param({"resourceName": ""}, "leaderElection.resourceName: must be a non-empty",
                     id="a lease needs a name"),
        pytest.param({"leaseNamespace": "x"}, "leaderElection.leaseNamespace: unknown field",
                     id="unknown fields are refused"),
    ],
)
def test_bad_leader_election_is_refused(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"leaderElection": raw}, default_registry())
    assert str(excinfo.value).startswith(message), str(excinfo.value)


# -- extenders (upstream's Extender and validateExtenders) ----------------------------------
def test_extenders_are_parsed_with_upstreams_fields_and_defaults() -> None:
    raw = {"extenders": [
        {"urlPrefix": "http://127.0.0.1:8888/scheduler", "filterVerb": "filter",
         "prioritizeVerb": "prioritize", "weight": 3, "bindVerb": "bind",
         "nodeCacheCapable": True, "ignorable": True, "httpTimeout": "1500ms",
         "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True},
                              {"name": "example.com/fpga"}]},
        {"urlPrefix": "https://ext", "preemptVerb": "preempt", "enableHTTPS": True,
         "tlsConfig": {"insecure": True, "caData": "Y2E="}},
    ]}
    config = parse_config(raw, default_registry())
    first, second = config.extenders
    assert (first.filter_verb, first.prioritize_verb, first.bind_verb, first.weight) == (
        "filter", "prioritize", "bind", 3)
    assert (first.node_cache_capable, first.ignorable, first.http_timeout) == (True, True, 1.5)
    assert first.managed_resources == ("example.com/gpu", "example.com/fpga")
    assert second.http_timeout == 5.0  # upstream's DefaultExtenderTimeout
    assert second.tls is not None and second.tls.ca_data == b"ca" and second.tls.insecure
    # ignoredByScheduler resources replace NodeResourcesFit's ignoredResources.
    assert config.profiles[0].args["NodeResourcesFit"]["ignoredResources"] == ["example.com/gpu"]


@pytest.mark.parametrize(
    ("extenders", "message"),
    [
        pytest.param([{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
                     "extenders[0].weight: Invalid value: 0: must have a positive weight",
                     id="a prioritizer needs a weight"),
        pytest.param([{"urlPrefix": "http://a", "bindVerb": "b"},
                      {"urlPrefix": "http://b", "bindVerb": "b"}],
                     "extenders: Invalid value: 'found 2 extenders implementing bind': only one",
                     id="one binder at most"),
        pytest.param([{"urlPrefix": "http://a", "managedResources": [{"name": "x.io/a"}]},
                      {"urlPrefix": "http://b", "managedResources": [{"name": "x.io/a"}]}],
                     "extenders[1].managedResources[0].name: Invalid value: 'x.io/a': duplicate",
                     id="a resource is managed once"),
        pytest.param([{"urlPrefix": "http://a", "managedResources": [{"name": "cpu"}]}],
                     "extenders[0].managedResources[0].name: Invalid value: 'cpu': is an "
                     "invalid extended resource name", id="only extended resources"),
        pytest.param([{"urlPrefix": "http://a", "filterverb": "f"}],
                     "extenders[0].filterverb: unknown field", id="field names are exact"),
        pytest.param([{"filterVerb": "f"}], "extenders[0].urlPrefix: required", id="url"),
        pytest.param([{"urlPrefix": "http://a", "httpTimeout": "5"}],
                     "extenders[0].httpTimeout: Invalid value: '5': must be a positive duration",
                     id="timeout unit"),
        pytest.param([{"urlPrefix": "http://a", "tlsConfig": {"certData": "%%"}}],
                     "extenders[0].tlsConfig.certData: must be base64", id="PEM as base64"),
    ],
)
def test_bad_extenders_are_refused(extenders: list[Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"extenders": extenders}, default_registry())
    assert str(excinfo.value).startswith(message), str(excinfo.value)
