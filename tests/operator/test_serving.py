"""The secure port (scheduler/operator/serving): HTTPS, delegated authentication and
authorization as kube-scheduler's (k8s.io/apiserver DelegatingAuthenticationOptions,
DelegatingAuthorizationOptions, SecureServingOptions), and a server that half-open
connections cannot take down. Real sockets, a fake API server behind the reviews."""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import ssl
import threading
from pathlib import Path

import pytest

from scheduler.operator.health import HealthServer
from scheduler.operator.serving import options
from scheduler.operator.serving.auth import (
    ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    Authenticator,
    Authorizer,
    User,
    always_allowed,
)
from scheduler.operator.serving.certs import server_context
from tests.operator.serving_kit import (
    FakeReviews,
    client_ca,
    client_context,
    get,
    may_get,
    running,
    secure,
)

ALICE = User("alice", ("devs", "system:authenticated"))


def health(reviews: FakeReviews | None, **kw: object) -> HealthServer:
    return HealthServer(secure(reviews, **kw),  # type: ignore[arg-type]
                        live=lambda: (True, {}), ready=lambda: (False, {"applied": False}),
                        metrics=lambda: b"scheduler_up 1\n")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_anonymous_gets_health_but_a_403_as_upstream_on_metrics() -> None:
    """apiserver's responsewriters.Forbidden for a non-resource path: a Status with
    'forbidden: User "system:anonymous" cannot get path "/metrics"'."""
    reviews = FakeReviews()
    with running(health(reviews)) as server:
        assert get(server.port, "/healthz")[0] == 200
        assert get(server.port, "/readyz")[0] == 503
        status, body = get(server.port, "/metrics")
    assert status == 403
    answer = json.loads(body)
    assert answer["reason"] == "Forbidden" and answer["code"] == 403
    assert answer["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    # Anonymous is reviewed as upstream reviews it: the group system:unauthenticated.
    (spec,) = [s for p, s in reviews.posted if p == ACCESS_REVIEWS]
    assert spec["user"] == "system:anonymous"
    assert spec["groups"] == ["system:unauthenticated"]


def test_a_token_the_api_server_accepts_and_a_rule_that_allows_get_metrics() -> None:
    reviews = FakeReviews(tokens={"good": ALICE}, rule=may_get("/metrics", "alice"))
    with running(health(reviews)) as server:
        assert get(server.port, "/metrics", token="good") == (200, b"scheduler_up 1\n")
        assert get(server.port, "/debug/explain", token="good")[0] == 403
        status, body = get(server.port, "/metrics", token="bad")
    # An invalid token is never anonymous: 401 (union.NewFailOnError in delegating.go).
    assert status == 401 and json.loads(body)["reason"] == "Unauthorized"


def test_plain_http_to_the_secure_port_gets_gos_answer() -> None:
    with running(health(FakeReviews())) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = conn.recv(4096)
    assert answer == (b"HTTP/1.0 400 Bad Request\r\n\r\n"
                      b"Client sent an HTTP request to an HTTPS server.\n")


def test_tls_below_1_2_is_refused() -> None:
    assert server_context(None, None, None).minimum_version == ssl.TLSVersion.TLSv1_2


def test_reviews_are_cached_10s_allowed_and_denied_as_upstream() -> None:
    """DelegatingAuthenticationOptions.CacheTTL 10 s (success and failure alike);
    DelegatingAuthorizationOptions AllowCacheTTL 10 s, DenyCacheTTL 10 s."""
    clock = Clock()
    reviews = FakeReviews(tokens={"good": ALICE}, rule=may_get("/metrics", "alice"))
    authn = Authenticator(reviews, clock=clock)
    authz = Authorizer(reviews, clock=clock)
    from scheduler.operator.serving.auth import Attributes

    metrics = Attributes("get", path="/metrics")
    explain = Attributes("get", path="/debug/explain")
    for _ in range(3):
        assert authn.authenticate("Bearer good", None) == ALICE
        assert authz.authorize(ALICE, metrics) == (True, "")
        assert authz.authorize(ALICE, explain) == (False, "")
    assert (reviews.count(TOKEN_REVIEWS), reviews.count(ACCESS_REVIEWS)) == (1, 2)
    clock.now += 10.5
    authn.authenticate("Bearer good", None)
    authz.authorize(ALICE, metrics)
    authz.authorize(ALICE, explain)
    assert (reviews.count(TOKEN_REVIEWS), reviews.count(ACCESS_REVIEWS)) == (2, 4)


def test_system_masters_and_the_always_allowed_paths_skip_the_review() -> None:
    reviews = FakeReviews()
    from scheduler.operator.serving.auth import Attributes

    authz = Authorizer(reviews, always_allow_paths=("/healthz", "/debug/*"))
    admin = User("admin", ("system:masters",))
    assert authz.authorize(admin, Attributes("get", path="/metrics"))[0]
    anonymous = User("system:anonymous", ("system:unauthenticated",))
    assert authz.authorize(anonymous, Attributes("get", path="/debug/explain"))[0]
    assert not authz.authorize(anonymous, Attributes("get", path="/healthz/x"))[0]
    assert len(reviews.posted) == 1


@pytest.mark.parametrize(("paths", "exact", "prefixes"), [
    (("/healthz", "/readyz", "/livez"), {"healthz", "readyz", "livez"}, ()),
    (("/", "/debug/*"), {""}, ("debug/",)),
])
def test_always_allow_paths_as_apiserver_path_authorizer(
        paths: tuple[str, ...], exact: set[str], prefixes: tuple[str, ...]) -> None:
    assert always_allowed(paths) == (frozenset(exact), prefixes)


def test_a_star_not_at_the_end_is_refused_as_upstream() -> None:
    with pytest.raises(ValueError, match="only trailing"):
        always_allowed(["/de*bug"])


def test_upstream_flag_names_and_defaults() -> None:
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    default = options.from_args(parser.parse_args([]))
    assert (default.secure_port, default.bind_address) == (10259, "0.0.0.0")
    assert default.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert default.insecure is False
    given = options.from_args(parser.parse_args([
        "--secure-port=1", "--bind-address=127.0.0.1", "--tls-cert-file=c",
        "--tls-private-key-file=k", "--client-ca-file=ca", "--authentication-kubeconfig=a",
        "--authorization-kubeconfig=z", "--authorization-always-allow-paths=/healthz,/x/*"]))
    assert given == options.ServingOptions(1, "127.0.0.1", "c", "k", "ca", "a", "z",
                                           ("/healthz", "/x/*"))


def test_a_client_certificate_signed_by_the_client_ca_is_its_subject(tmp_path: Path) -> None:
    """x509 CommonNameUserConversion: CN the user, O the groups; reviewed as that user."""
    ca, cert = client_ca(tmp_path, "bob", "ops")
    reviews = FakeReviews(rule=may_get("/metrics", "bob"))
    with running(health(reviews, client_ca=ca)) as server:
        assert get(server.port, "/metrics", context=client_context(cert))[0] == 200
        assert get(server.port, "/metrics")[0] == 403
    spec = reviews.posted[0][1]
    assert spec["groups"] == ["ops", "system:authenticated"]


def test_a_certificate_from_another_ca_is_refused_at_the_handshake(tmp_path: Path) -> None:
    ca, _ = client_ca(tmp_path / "", "bob", "ops")
    (tmp_path / "other").mkdir()
    _, foreign = client_ca(tmp_path / "other", "mallory", "system:masters")
    with running(health(FakeReviews(), client_ca=ca)) as server, \
            pytest.raises((ssl.SSLError, ConnectionError)):
        get(server.port, "/metrics", context=client_context(foreign))


def test_two_hundred_half_open_connections_leave_healthz_answering() -> None:
    """Idle connections wait in the accepting thread's selector, not in a worker: with 2
    workers and 200 silent connections, /healthz still answers, and no thread was started
    for them."""
    with running(health(FakeReviews(), workers=2, connection_rate=1000)) as server:
        threads = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(200)]
        try:
            # Half a request head from a few more: they take a worker until the header
            # deadline, so fewer than the workers are sent.
            slow = socket.create_connection(("127.0.0.1", server.port))
            slow.sendall(b"\x16\x03\x01")
            assert get(server.port, "/healthz")[0] == 200
            assert get(server.port, "/livez")[0] == 200
            assert threading.active_count() == threads
        finally:
            for conn in [*idle, slow]:
                conn.close()


def test_a_connection_that_never_finishes_its_head_is_closed_at_the_deadline() -> None:
    """header_timeout is a deadline for handshake and head together, not per read."""
    with running(health(FakeReviews(), header_timeout=0.5)) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"\x16\x03\x01")
        assert conn.recv(1024) == b""  # closed by the server


def test_insecure_serving_is_plain_http_open_to_all() -> None:
    import urllib.request

    server = HealthServer(
        lambda handler: options.secure_server(
            options.ServingOptions(secure_port=0, bind_address="127.0.0.1", insecure=True),
            handler),
        live=lambda: (True, {}), ready=lambda: (True, {}), metrics=lambda: b"m 1\n")
    with running(server), urllib.request.urlopen(
            f"http://127.0.0.1:{server.port}/metrics", timeout=10) as r:
        assert r.read() == b"m 1\n"


def test_a_flood_of_connections_from_one_address_is_closed_before_tls() -> None:
    """Beyond its burst an address's connections are closed at accept; another address
    (the kubelet's probes, Prometheus) is still served."""
    with running(health(FakeReviews(), connection_rate=5)) as server:
        answers = []
        for _ in range(20):
            try:
                answers.append(get(server.port, "/healthz")[0])
            except (OSError, http.client.HTTPException):
                answers.append(0)
        assert answers[:10] == [200] * 10 and 0 in answers[10:]
        other = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=10,
                                            context=client_context(),
                                            source_address=("127.0.0.2", 0))
        other.request("GET", "/healthz")
        assert other.getresponse().status == 200
        other.close()
