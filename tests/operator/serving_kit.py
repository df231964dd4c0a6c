"""A secure server on a real socket with a fake API server behind its reviews, for tests."""

from __future__ import annotations

import datetime
import http.client
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.operator.health import HealthServer
from scheduler.operator.serving.auth import (
    ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    Authenticator,
    Authorizer,
    User,
)
from scheduler.operator.serving.certs import server_context
from scheduler.operator.serving.server import Handler, SecureServer


@dataclass
class FakeReviews:
    """TokenReview: ``tokens`` maps a token to its user. SubjectAccessReview: ``rule`` says
    whether a spec is allowed. Every review is recorded."""

    tokens: dict[str, User] = field(default_factory=dict)
    rule: Callable[[dict[str, Any]], bool] = lambda spec: False
    posted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def review(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        spec = body["spec"]
        self.posted.append((path, spec))
        if path == TOKEN_REVIEWS:
            user = self.tokens.get(spec["token"])
            if user is None:
                return 201, {"status": {"authenticated": False}}
            return 201, {"status": {"authenticated": True, "user": {
                "username": user.name, "groups": list(user.groups), "uid": user.uid}}}
        assert path == ACCESS_REVIEWS
        return 201, {"status": {"allowed": self.rule(spec)}}

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.posted if p == path)


def may_get(path: str, user: str) -> Callable[[dict[str, Any]], bool]:
    return lambda spec: spec["user"] == user and (spec.get("nonResourceAttributes") or {}) == {
        "path": path, "verb": "get"}


def secure(reviews: FakeReviews | None, *, client_ca: str | None = None,
           clock: Callable[[], float] | None = None, **kw: Any) -> Callable[[Handler],
                                                                         SecureServer]:
    """What HealthServer is given to serve with: HTTPS on a free loopback port, a
    self-signed certificate, reviews by ``reviews``."""
    timing = {"clock": clock} if clock else {}

    def serve(handler: Handler) -> SecureServer:
        return SecureServer(
            "127.0.0.1", 0, handler, context=server_context(None, None, client_ca),
            authenticator=Authenticator(reviews, **timing),
            authorizer=Authorizer(reviews, **timing), **kw)

    return serve


@contextmanager
def running(server: HealthServer) -> Iterator[HealthServer]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client_context(cert: Path | None = None) -> ssl.SSLContext:
    context = ssl._create_unverified_context()
    if cert is not None:
        context.load_cert_chain(str(cert))
    return context


def get(port: int, path: str, *, token: str | None = None,
        context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                       context=context or client_context())
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def client_ca(tmp: Path, common_name: str, organization: str) -> tuple[str, Path]:
    """A CA (PEM text) and a client certificate it signed, key included (a PEM file)."""
    def name(cn: str, o: str | None = None) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if o:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o))
        return x509.Name(attrs)

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("test-ca")).issuer_name(name("test-ca"))
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name(common_name, organization))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = tmp / "client.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM).decode(), pem
