"""``rest_client_*`` metrics of the API layer, against the scripted loopback server."""

from __future__ import annotations

import pytest

from scheduler.operator import kubeapi
from tests.operator.fake_api import FakeApi, Reply


def test_requests_are_counted_by_code_method_and_host(api: FakeApi) -> None:
    api.on("GET", "/api/v1/nodes", Reply(200, {"items": []}))
    api.on("POST", "/api/v1/namespaces/d/pods/p/binding", Reply(404, {"message": "gone"}))
    kube = api.kube_api(qps=1000.0)
    kube.get("/api/v1/nodes")
    kube.get("/api/v1/nodes")
    kube.request("POST", "/api/v1/namespaces/d/pods/p/binding", body={})
    registry = kube.metrics.registry
    host = api.url.removeprefix("http://")

    def value(metric: str, **labels: str) -> float | None:
        return registry.get_sample_value(metric, labels)

    assert value("rest_client_requests_total", code="200", method="GET", host=host) == 2
    assert value("rest_client_requests_total", code="404", method="POST", host=host) == 1
    assert value("rest_client_request_duration_seconds_count", verb="GET", host=host) == 2
    # Only writes go through the client-side rate limiter.
    assert value("rest_client_rate_limiter_duration_seconds_count", verb="POST", host=host) == 1
    assert value("rest_client_rate_limiter_duration_seconds_count", verb="GET", host=host) is None


def test_a_request_without_a_response_is_counted_as_an_error(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubeapi, "_wait_for_retry", lambda state: 0.0)
    kube = api.kube_api()
    api.close()
    assert kube.get("/api/v1/nodes").status == 503
    host = api.url.removeprefix("http://")
    errors = kube.metrics.registry.get_sample_value(
        "rest_client_requests_total", {"code": "<error>", "method": "GET", "host": host})
    assert errors == 5  # every attempt of the retried request
