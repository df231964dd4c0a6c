"""Every field of KubeSchedulerConfiguration v1 works as upstream's or is refused with the
reason this scheduler cannot honour it, never silently ignored: an upstream file with every
field set (every_field.yaml) fails naming exactly the fields it cannot honour, and with those
changed loads with every other field in effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config import load_config_file, parse_config
from scheduler.framework.config_fields import AggregateConfigError
from scheduler.plugins.registry import default_registry

EVERY_FIELD = Path(__file__).with_name("every_field.yaml")

REFUSED = {
    "clientConnection.acceptContentTypes": "API client reads and writes JSON only",
    "clientConnection.contentType": "API client reads and writes JSON only",
    "enableProfiling": "serves no /debug/pprof",
    "enableContentionProfiling": "serves no /debug/pprof",
    "profiles[0].plugins.placementGenerate": "pod-group cycle has no placement generation",
    "profiles[0].plugins.placementScore": "pod-group cycle has no placement generation",
    "profiles[0].plugins.podGroupPostFilter": "pod-group cycle has no placement generation",
}


def test_the_fields_this_scheduler_cannot_honour_are_each_named_with_the_reason() -> None:
    with pytest.raises(AggregateConfigError) as excinfo:
        load_config_file(EVERY_FIELD, default_registry())
    found = {error.split(": ")[0]: error for error in excinfo.value.errors}
    assert set(found) == set(REFUSED)
    for path, reason in REFUSED.items():
        assert reason in found[path]


def honourable() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(EVERY_FIELD.read_text())
    raw["clientConnection"]["acceptContentTypes"] = "application/json"
    raw["clientConnection"]["contentType"] = "application/json"
    raw["enableProfiling"] = raw["enableContentionProfiling"] = False
    for point in ("placementGenerate", "placementScore", "podGroupPostFilter"):
        del raw["profiles"][0]["plugins"][point]
    return raw


def test_with_those_changed_every_other_field_is_in_effect() -> None:
    config = parse_config(honourable(), default_registry())
    assert config.parallelism == 8
    le = config.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period,
            le.resource_name, le.resource_namespace) == (
        True, 20.0, 15.0, 3.0, "my-scheduler", "scheduling")
    cc = config.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst) == ("/etc/kubernetes/scheduler.conf", 100, 200)
    assert config.percentage_of_nodes_to_score == 40
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 20)
    assert config.delay_cache_until_active is True
    profile = config.profiles[0]
    assert profile.scheduler_name == "my-scheduler"
    assert profile.percentage_of_nodes_to_score == 30
    scores = {ref.name: ref.weight for ref in profile.points["score"]}
    assert "ImageLocality" not in scores and scores["NodeResourcesFit"] == 5
    assert "NodePorts" not in [ref.name for ref in profile.points["filter"]]
    assert profile.args["DefaultPreemption"]["minCandidateNodesAbsolute"] == 50
    # The extenders' ignoredByScheduler resources reach NodeResourcesFit, as upstream's.
    assert profile.args["NodeResourcesFit"]["ignoredResources"] == ["example.com/gpu"]
    (extender,) = config.extenders
    assert (extender.url_prefix, extender.filter_verb, extender.preempt_verb,
            extender.prioritize_verb, extender.bind_verb, extender.weight) == (
        "https://extender.example:8443/scheduler", "filter", "preempt", "prioritize", "bind", 2)
    assert (extender.enable_https, extender.http_timeout, extender.node_cache_capable,
            extender.ignorable) == (True, 10.0, True, True)
    assert extender.managed_resources == extender.ignored_resources == ("example.com/gpu",)
    tls = extender.tls
    assert tls is not None
    assert (tls.insecure, tls.server_name, tls.cert_file, tls.key_file, tls.ca_file) == (
        False, "extender.example", "/etc/extender/tls.crt", "/etc/extender/tls.key",
        "/etc/extender/ca.crt")
    assert (tls.cert_data, tls.key_data, tls.ca_data) == (b"cert", b"key", b"ca")


@pytest.mark.parametrize("accept", ["", "application/json", "application/json;q=0.9"])
def test_accept_content_types_takes_json(accept: str) -> None:
    config = parse_config({"clientConnection": {"acceptContentTypes": accept}},
                          default_registry())
    assert config.client_connection.qps == 50


def test_profiling_off_is_what_runs_and_is_accepted() -> None:
    parse_config({"enableProfiling": False, "enableContentionProfiling": False},
                 default_registry())


@pytest.mark.parametrize("field", ["percentageOfPlacementsToScore", "featureGates"])
def test_fields_v1_does_not_have_are_unknown(field: str) -> None:
    with pytest.raises(AggregateConfigError) as excinfo:
        parse_config({field: 1}, default_registry())
    assert excinfo.value.errors == (f"{field}: unknown field",)
