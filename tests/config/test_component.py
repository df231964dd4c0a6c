"""The component's configuration: client connection, parallelism, leader election and
extenders, with upstream's fields and checks."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework.registry import ConfigError
from scheduler.plugins.registry import default_registry


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
