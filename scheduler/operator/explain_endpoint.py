"""``GET /debug/explain?namespace=NS&name=POD[&profile=P]`` on the health port.

The pod is read from the API (so the answer is about the pod as it is now, whichever
scheduler it names); the explanation is computed on the scheduling thread, through the inbox,
from the scheduler's live cache. Answers are JSON: the explanation, or ``{"message": ...}``
with 400 (bad query, unknown profile), 404 (no such pod), 409 (already bound), the API's own
status when it refused, or 503 when the scheduling thread did not answer in time.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from scheduler.explain import ExplainError, explain_in_loop
from scheduler.explain_render import as_dict
from scheduler.intake import Intake
from scheduler.operator.kubeapi import KubeApi
from scheduler.scheduler import Scheduler

PATH = "/debug/explain"
DEFAULT_TIMEOUT = 10.0

Answer = tuple[int, dict[str, Any]]


class ExplainEndpoint:
    def __init__(
        self, api: KubeApi, scheduler: Scheduler, intake: Intake, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.api = api
        self.scheduler = scheduler
        self.intake = intake
        self.timeout = timeout
        self.source = f"live cache of the scheduler on {socket.gethostname()}"

    def __call__(self, query: Mapping[str, Sequence[str]]) -> Answer:
        namespace = _one(query, "namespace")
        name = _one(query, "name")
        profile = _one(query, "profile") or None
        if not namespace or not name:
            return 400, {"message": "namespace and name are required"}
        response = self.api.get(pod_path(namespace, name))
        if response.status == 404:
            return 404, {"message": f"pod {namespace}/{name} not found"}
        if not response.ok:
            return response.status, {"message": f"reading pod {namespace}/{name}: "
                                                f"{response.message()}"}
        pod = self.intake.pod_info(response.body)
        try:
            explanation = explain_in_loop(self.scheduler, pod, profile, self.timeout)
        except ExplainError as exc:
            return (409 if pod.node_name else 400), {"message": str(exc)}
        except TimeoutError:
            return 503, {"message": f"the scheduling thread did not answer within "
                                    f"{self.timeout:g}s"}
        return 200, as_dict(explanation, self.source)


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


def _one(query: Mapping[str, Sequence[str]], key: str) -> str:
    values = query.get(key) or ()
    return values[0] if values else ""
