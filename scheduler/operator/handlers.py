"""kopf handlers: translate watch events into intake calls, nothing else.

Only event handlers are registered, so kopf stores no diff base, progress annotation or
finalizer on any object; posting of kopf's own Events is switched off in the settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from scheduler.operator.app import SchedulerApp

Translate = Callable[[str | None, Mapping[str, Any]], None]


def register(registry: kopf.OperatorRegistry, app: SchedulerApp) -> None:
    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(app.api.client.configuration)

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(None, app.stop)

    _on_event(registry, ("namespaces",), app.intake.on_namespace)
    _on_event(registry, ("scheduling.k8s.io", "priorityclasses"), app.intake.on_priority_class)
    _on_event(registry, ("policy", "poddisruptionbudgets"), app.intake.on_pdb)


def connection_info(c: Any) -> kopf.ConnectionInfo:
    """kopf's credentials from the ones our API client loaded (in-cluster or kubeconfig).

    One source of truth for the watches kopf runs and the ones the operator owns. In-cluster
    the client keeps "bearer <token>" under BearerToken and refreshes it through a hook; a
    kubeconfig token sits under "authorization". Asking the way the client itself does lets a
    refreshed token reach kopf too.
    """
    header = c.get_api_key_with_prefix("BearerToken", alias="authorization") or ""
    scheme, _, token = header.partition(" ")
    if not token:
        scheme, token = "Bearer", scheme
    return kopf.ConnectionInfo(
        server=c.host,
        ca_path=c.ssl_ca_cert,
        insecure=not c.verify_ssl,
        certificate_path=c.cert_file,
        private_key_path=c.key_file,
        scheme=scheme.capitalize() if token else None,
        token=token or None,
    )


def _on_event(
    registry: kopf.OperatorRegistry, resource: tuple[str, ...], translate: Translate
) -> None:
    def handler(event: Mapping[str, Any], **_: Any) -> None:
        translate(event.get("type"), dict(event["object"]))

    kopf.on.event(*resource, registry=registry)(handler)


def settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.posting.enabled = False
    # No CRD or namespace discovery: we watch fixed, cluster-wide core kinds.
    s.scanning.disabled = True
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    s.watching.connect_timeout = 30
    return s
