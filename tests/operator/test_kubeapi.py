"""How KubeApi sends a request: headers, credentials, query and body, against the scripted
loopback server."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest
import urllib3
from kubernetes import client as k8s

from scheduler.operator import kubeapi
from scheduler.operator.kubeapi import KubeApi
from tests.operator.fake_api import FakeApi, Reply

BINDING = "/api/v1/namespaces/d/pods/p/binding"


def test_the_token_is_read_through_the_refresh_hook_on_every_request(api: FakeApi) -> None:
    api.on("POST", BINDING, Reply(201, {}))
    configuration = k8s.Configuration()
    configuration.host = api.url
    configuration.api_key["authorization"] = "loaded"
    configuration.api_key_prefix["authorization"] = "Bearer"
    tokens = iter(["first", "second"])

    def refresh(config: k8s.Configuration) -> None:
        # As load_incluster_config's hook: a new token once the old one expired.
        config.api_key["authorization"] = next(tokens)

    configuration.refresh_api_key_hook = refresh
    kube = KubeApi(k8s.ApiClient(configuration), qps=0)
    kube.request("POST", BINDING, body={})
    kube.request("POST", BINDING, body={})
    sent = [r.headers.get("authorization") for r in api.calls("POST", BINDING)]
    assert sent == ["Bearer first", "Bearer second"]


def test_no_authorization_header_without_a_token(api: FakeApi) -> None:
    api.on("POST", BINDING, Reply(201, {}))
    api.kube_api().request("POST", BINDING, body={})
    assert "authorization" not in api.calls("POST", BINDING)[0].headers


@pytest.mark.parametrize(("content_type", "body"), [
    (kubeapi.JSON, {"kind": "Binding", "target": {"name": "n-1"}}),
    (kubeapi.STRATEGIC_MERGE, {"status": {"conditions": [{"type": "PodScheduled"}]}}),
])
def test_body_content_type_and_client_headers_are_sent(
    api: FakeApi, content_type: str, body: dict[str, object]
) -> None:
    api.on("PATCH", "/x", Reply(200, {"ok": True}))
    kube = api.kube_api()
    response = kube.request("PATCH", "/x", body=body, content_type=content_type)
    assert response.ok and response.body == {"ok": True}
    sent = api.calls("PATCH", "/x")[0]
    assert sent.body == body
    assert sent.headers["content-type"] == content_type
    assert sent.headers["accept"] == kubeapi.JSON
    assert sent.headers["user-agent"] == kube.client.default_headers["User-Agent"]


def test_query_values_are_encoded_and_none_is_left_out(api: FakeApi) -> None:
    api.on("GET", "/api/v1/pods", Reply(200, {"items": []}))
    api.kube_api().get("/api/v1/pods", {
        "fieldSelector": "spec.schedulerName=s,status.phase!=Succeeded", "continue": None,
        "limit": "500"})
    query = api.calls("GET", "/api/v1/pods")[0].query
    assert parse_qs(query) == {"fieldSelector": ["spec.schedulerName=s,status.phase!=Succeeded"],
                               "limit": ["500"]}


def test_a_closed_connection_pool_is_replaced(api: FakeApi) -> None:
    api.on("GET", "/api/v1/nodes", Reply(200, {"items": [{"n": 1}]}))
    kube = api.kube_api()
    assert kube.get("/api/v1/nodes").ok
    kube.client.rest_client.pool_manager.clear()  # closes every pool it made
    response = kube.get("/api/v1/nodes")
    assert response.ok and response.body == {"items": [{"n": 1}]}


def test_a_watch_streams_events_and_returns_its_connection(api: FakeApi) -> None:
    events = [{"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(3)]
    api.on("WATCH", "/api/v1/pods", Reply(200, lines=events))
    kube = api.kube_api()
    assert list(kube.watch("/api/v1/pods", "1")) == events
    assert kube.get("/api/v1/pods").status == 404  # the pool's connection is usable again


@pytest.mark.parametrize(("given", "expected"), [
    (None, None),
    (30.0, urllib3.Timeout(total=30.0)),
    ((10.0, 120.0), urllib3.Timeout(connect=10.0, read=120.0)),
])
def test_timeouts_as_the_kubernetes_client_reads_them(
    given: float | tuple[float, float] | None, expected: urllib3.Timeout | None
) -> None:
    assert repr(kubeapi._timeout(given)) == repr(expected)


def test_through_a_proxy_the_request_carries_the_absolute_url(api: FakeApi) -> None:
    # The scripted server plays the proxy: a plain-HTTP target is asked for in absolute form.
    target = "http://apiserver.invalid:6443"
    api.on("GET", f"{target}/api/v1/nodes", Reply(200, {"items": []}))
    configuration = k8s.Configuration()
    configuration.host = target
    configuration.proxy = api.url
    kube = KubeApi(k8s.ApiClient(configuration), qps=0)
    response = kube.get("/api/v1/nodes", {"limit": "5"})
    assert response.ok and response.body == {"items": []}
    assert api.calls("GET", f"{target}/api/v1/nodes")[0].query == "limit=5"
