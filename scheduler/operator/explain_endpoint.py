"""``GET /debug/explain?namespace=NS&name=POD[&profile=P][&nodes=all|N]`` on the secure port.

Who may ask: a caller the API server allows to ``get`` that pod (a SubjectAccessReview); one
who may not gets 403 whether the pod exists or not, so the endpoint tells nobody which pods
exist. What they see: objects of other namespaces (preemption victims and the budgets
covering them) only where they may ``list pods`` there; elsewhere, how many there are.

What it costs the scheduler: the explanation is computed on the scheduling thread, through
the inbox, from the live cache, one at a time (a second caller meanwhile is answered 429),
and they may take ``EXPLAIN_SHARE`` of that thread's time (429 with Retry-After beyond:
see DutyCycle); the answer
lists the first ``DEFAULT_NODES`` nodes (the feasible ones by score first) unless
``nodes=all`` or a number is asked. bench/explain_flood.py measures a flood of them against
the scheduling loop's throughput.

Answers are JSON: the explanation, or ``{"message": ...}`` with 400 (bad query, unknown
profile), 403, 404 (no such pod, to a caller who may read it), 409 (already bound), 429, the
API's own status when it refused, or 503 when the scheduling thread did not answer in time.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from scheduler.intake import Intake
from scheduler.model.pod import PodInfo
from scheduler.operator.kubeapi import KubeApi
from scheduler.operator.serving.auth import Caller
from scheduler.scheduler import Scheduler

if TYPE_CHECKING:
    # The explainer itself is imported by the first request (_explain): every start of the
    # scheduler would pay its import for a request most never get.
    from scheduler.explain import Explanation, PreemptionCandidate, PreemptionPreview

PATH = "/debug/explain"
DEFAULT_TIMEOUT = 10.0
DEFAULT_NODES = 20
# The share of the scheduling thread explains may take, whatever the flood: the issue's
# bound on their cost is a tenth of the loop's throughput (bench/explain_flood.py), and the
# connections and refusals around them cost some too.
EXPLAIN_SHARE = 0.05

Answer = tuple[int, dict[str, Any]]


class DutyCycle:
    """Explains may take ``share`` of the scheduling thread: one that took ``d`` seconds of
    it is followed by a pause of ``d * (1 - share) / share`` during which others are refused.
    It scales with the cluster and the host: a count per second would not (an explanation
    takes 50 ms at 5,000 nodes on a quiet host, ten times that on a crowded one)."""

    def __init__(self, share: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.pause_per_second = (1 - share) / share
        self.clock = clock
        self.next_allowed = clock()
        # Seconds of the scheduling thread all explains took (bench/explain_flood.py).
        self.total = 0.0
        self._lock = threading.Lock()

    def wait(self) -> float:
        """0 when an explain may run now, else the seconds until one may."""
        with self._lock:
            return max(0.0, self.next_allowed - self.clock())

    def spent(self, seconds: float) -> None:
        with self._lock:
            self.next_allowed = self.clock() + seconds * self.pause_per_second
            self.total += seconds


class ExplainEndpoint:
    def __init__(
        self, api: KubeApi, scheduler: Scheduler, intake: Intake,
        timeout: float = DEFAULT_TIMEOUT, limit: DutyCycle | None = None,
    ) -> None:
        self.api = api
        self.scheduler = scheduler
        self.intake = intake
        self.timeout = timeout
        self.limit = limit or DutyCycle(EXPLAIN_SHARE)
        self.source = f"live cache of the scheduler on {socket.gethostname()}"
        self._one_at_a_time = threading.Semaphore(1)

    def __call__(self, query: Mapping[str, Sequence[str]], caller: Caller) -> Answer:
        namespace = _one(query, "namespace")
        name = _one(query, "name")
        profile = _one(query, "profile") or None
        nodes = _node_limit(_one(query, "nodes"))
        if not namespace or not name:
            return 400, {"message": "namespace and name are required"}
        if nodes is None:
            return 400, {"message": "nodes is 'all' or a positive number"}
        if not caller.may("get", "pods", namespace, name):
            return 403, {"message": caller.forbidden("get", "pods", namespace, name)}
        wait = self.limit.wait()
        if wait:
            return 429, {"message": "too many explain requests", "retryAfterSeconds":
                         max(1, round(wait))}
        if not self._one_at_a_time.acquire(blocking=False):
            return 429, {"message": "another explain request is being answered",
                         "retryAfterSeconds": 1}
        try:
            return self._explain(namespace, name, profile, nodes, caller)
        finally:
            self._one_at_a_time.release()

    def _explain(self, namespace: str, name: str, profile: str | None, nodes: int,
                 caller: Caller) -> Answer:
        from scheduler.explain import ExplainError, as_dict

        response = self.api.get(pod_path(namespace, name))
        if response.status == 404:
            return 404, {"message": f"pod {namespace}/{name} not found"}
        if not response.ok:
            return response.status, {"message": f"reading pod {namespace}/{name}: "
                                                f"{response.message()}"}
        pod = self.intake.pod_info(response.body)
        try:
            explanation = self.scheduler.run_in_loop(lambda: self._timed(pod, profile),
                                                     self.timeout)
        except ExplainError as exc:
            return (409 if pod.node_name else 400), {"message": str(exc)}
        except TimeoutError:
            return 503, {"message": f"the scheduling thread did not answer within "
                                    f"{self.timeout:g}s"}
        visible = redact(explanation, namespace, caller)
        return 200, as_dict(first_nodes(visible, nodes), self.source)


    def _timed(self, pod: PodInfo, profile: str | None) -> Explanation:
        """:func:`explain` on the scheduling thread, its time counted against the share."""
        from scheduler.explain import explain

        started = time.perf_counter()
        try:
            return explain(self.scheduler, pod, profile)
        finally:
            self.limit.spent(time.perf_counter() - started)


def redact(e: Explanation, namespace: str, caller: Caller) -> Explanation:
    """Victims of namespaces other than ``namespace`` where the caller may not list pods
    become a count in the notes; so do the budgets covering them."""
    if e.preemption is None:
        return e
    may_list: dict[str, bool] = {namespace: True}

    def visible(key: str) -> bool:
        ns = key.partition("/")[0]
        if ns not in may_list:
            may_list[ns] = caller.may("list", "pods", ns)
        return may_list[ns]

    candidates: list[PreemptionCandidate] = []
    notes = list(e.notes)
    for candidate in e.preemption.candidates:
        shown = [dataclasses.replace(v, budgets=[b for b in v.budgets if visible(b)],
                                     violates=v.violates if visible(v.violates) else "")
                 for v in candidate.victims if visible(v.pod)]
        hidden = len(candidate.victims) - len(shown)
        if hidden:
            notes.append(f"node {candidate.node}: {hidden} more victim(s) in namespaces "
                         "where you may not list pods")
        candidates.append(dataclasses.replace(candidate, victims=shown))
    preemption = dataclasses.replace(e.preemption, candidates=candidates)
    return dataclasses.replace(e, preemption=preemption, notes=notes)


def first_nodes(e: Explanation, limit: int) -> Explanation:
    """The first ``limit`` node reports and preemption candidates (0: all), with a note of
    what was left out."""
    if not limit:
        return e
    notes = list(e.notes)
    if len(e.nodes) > limit:
        notes.append(f"showing {limit} of {len(e.nodes)} nodes (nodes=all for every one)")
    preemption: PreemptionPreview | None = e.preemption
    if preemption is not None and (len(preemption.candidates) > limit
                                   or len(preemption.not_candidates) > limit):
        notes.append(f"showing {limit} of {len(preemption.candidates)} preemption candidates "
                     f"and of {len(preemption.not_candidates)} other nodes")
        preemption = dataclasses.replace(
            preemption, candidates=preemption.candidates[:limit],
            not_candidates=dict(list(preemption.not_candidates.items())[:limit]))
    return dataclasses.replace(e, nodes=e.nodes[:limit], preemption=preemption, notes=notes)


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


def _node_limit(value: str) -> int | None:
    """``nodes``: 0 for all, the number asked, or None when it is neither."""
    if not value:
        return DEFAULT_NODES
    if value == "all":
        return 0
    return int(value) if value.isdigit() and int(value) > 0 else None


def _one(query: Mapping[str, Sequence[str]], key: str) -> str:
    values = query.get(key) or ()
    return values[0] if values else ""
