"""kube-scheduler's serving flags (k8s.io/apiserver ``SecureServingOptions``,
``DelegatingAuthenticationOptions``, ``DelegatingAuthorizationOptions`` as
cmd/kube-scheduler/app/options sets them), and the server they describe.

As there, the review clients come from ``--authentication-kubeconfig`` and
``--authorization-kubeconfig``, else from the in-cluster configuration; outside a cluster
without them (``RemoteKubeConfigFileOptional``) tokens are not reviewed and only the
always-allowed paths answer, with a warning. The client CA is ``--client-ca-file``, else the
``client-ca-file`` of the kube-system ``extension-apiserver-authentication`` ConfigMap, read
at start; a failed read leaves client certificates unauthenticated (upstream's
``TolerateInClusterLookupFailure``, which kube-scheduler sets).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from scheduler.operator.kubeapi import KubeApi
from scheduler.operator.serving.auth import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    REVIEW_TIMEOUT,
    Authenticator,
    Authorizer,
    always_allowed,
)
from scheduler.operator.serving.certs import server_context
from scheduler.operator.serving.server import Handler, SecureServer

log = structlog.get_logger("scheduler.serving")

SECURE_PORT = 10259
AUTHENTICATION_CONFIG_MAP = ("/api/v1/namespaces/kube-system/configmaps/"
                             "extension-apiserver-authentication")


@dataclass
class ServingOptions:
    secure_port: int = SECURE_PORT
    bind_address: str = "0.0.0.0"
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    # Plain HTTP, no authentication, every path open: local development only.
    insecure: bool = False


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("secure serving (kube-scheduler's flags)")
    group.add_argument("--secure-port", type=int, default=SECURE_PORT,
                       help=f"HTTPS port of /healthz, /readyz, /livez, /metrics and "
                            f"/debug/explain (default {SECURE_PORT})")
    group.add_argument("--bind-address", default="0.0.0.0",
                       help="address the secure port listens on (default 0.0.0.0)")
    group.add_argument("--tls-cert-file", help="serving certificate (PEM); default: a "
                       "self-signed one made in memory at start")
    group.add_argument("--tls-private-key-file", help="its private key (PEM)")
    group.add_argument("--client-ca-file", help="CA bundle for client certificates (default: "
                       "client-ca-file of kube-system/extension-apiserver-authentication)")
    group.add_argument("--authentication-kubeconfig", help="kubeconfig for TokenReview "
                       "(default: in-cluster)")
    group.add_argument("--authorization-kubeconfig", help="kubeconfig for "
                       "SubjectAccessReview (default: in-cluster)")
    group.add_argument("--authorization-always-allow-paths", type=_paths,
                       default=DEFAULT_ALWAYS_ALLOW_PATHS,
                       help="paths anyone may get without authorization (default "
                            f"{','.join(DEFAULT_ALWAYS_ALLOW_PATHS)})")
    group.add_argument("--insecure-serving", action="store_true",
                       help="DEVELOPMENT ONLY: plain HTTP with no authentication or "
                            "authorization on the secure port")


def _paths(value: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in value.split(",") if p.strip())
    try:
        always_allowed(paths)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return paths


def from_args(args: argparse.Namespace) -> ServingOptions:
    return ServingOptions(
        secure_port=args.secure_port, bind_address=args.bind_address,
        tls_cert_file=args.tls_cert_file, tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
        authentication_kubeconfig=args.authentication_kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig,
        always_allow_paths=args.authorization_always_allow_paths,
        insecure=args.insecure_serving)


class ApiReviews:
    """Reviews posted through their own client: no token bucket shared with the scheduler's
    writes, and no leader fence (a standby answers its callers too)."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api

    def review(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        response = self.api.request("POST", path, body=body, limited=False,
                                    timeout=REVIEW_TIMEOUT)
        return response.status, response.body


def secure_server(options: ServingOptions, handler: Handler) -> SecureServer:
    if options.insecure:
        log.warning("Serving plain HTTP with no authentication or authorization "
                    "(--insecure-serving)", port=options.secure_port)
        return SecureServer(options.bind_address, options.secure_port, handler, context=None,
                            authenticator=Authenticator(None),
                            authorizer=Authorizer(None, allow_all=True))
    authn = _review_api(options.authentication_kubeconfig, "authentication")
    authz = _review_api(options.authorization_kubeconfig, "authorization")
    context = server_context(options.tls_cert_file, options.tls_private_key_file,
                             _client_ca(options.client_ca_file, authn))
    return SecureServer(
        options.bind_address, options.secure_port, handler, context=context,
        authenticator=Authenticator(ApiReviews(authn) if authn else None),
        authorizer=Authorizer(ApiReviews(authz) if authz else None,
                              always_allow_paths=options.always_allow_paths))


def _review_api(kubeconfig: str | None, what: str) -> KubeApi | None:
    from kubernetes import client as k8s
    from kubernetes import config

    configuration = k8s.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, client_configuration=configuration)
        else:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
    except config.ConfigException:
        log.warning(f"No {what}-kubeconfig and not in a cluster: delegated {what} is off, "
                    "only the always-allowed paths answer")
        return None
    return KubeApi(k8s.ApiClient(configuration), qps=0, burst=0)


def _client_ca(path: str | None, api: KubeApi | None) -> str | None:
    if path:
        return Path(path).read_text()
    if api is None:
        return None
    response = api.get(AUTHENTICATION_CONFIG_MAP)
    ca = (response.body.get("data") or {}).get("client-ca-file") if response.ok else None
    if not ca:
        log.warning("No client CA: client certificates are not authenticated",
                    configmap="kube-system/extension-apiserver-authentication",
                    status=response.status)
    return str(ca) if ca else None
