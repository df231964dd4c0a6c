"""The core's ports implemented with the Kubernetes API.

Binding runs on the scheduler's binding threads. Events, status patches and evictions are
handed to a small worker pool so that neither the scheduling thread nor kopf's event loop ever
waits on the API server.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import structlog
from cachetools import TTLCache

from scheduler.framework.fit_error import truncate_note
from scheduler.framework.ports import (
    BindOutcome,
    BindResult,
    EvictionOutcome,
    EvictionResult,
    WriteResult,
)
from scheduler.model.coscheduling import CoschedulingStatus
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import INITIALLY_SCHEDULED, WORKLOAD_API, PodGroup
from scheduler.operator.event_series import EventRecorder, micro_time
from scheduler.operator.kubeapi import MERGE_PATCH, STRATEGIC_MERGE, KubeApi, Response

log = structlog.get_logger("scheduler.api")

# How long a pod's last written condition, and that we bound it, are remembered: an identical
# condition is not written again within it, a late failure report not at all.
REPORT_MEMORY_SECONDS = 10 * 60.0


def _now() -> datetime:
    return datetime.now(UTC)


def _time() -> str:
    return _now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_group_ref(group: PodGroup) -> dict[str, str]:
    """The PodGroup's ObjectReference (its API is its ``source``)."""
    ref = {"apiVersion": group.source, "kind": "PodGroup", "namespace": group.namespace,
           "name": group.name, "uid": group.uid}
    if group.resource_version:
        ref["resourceVersion"] = group.resource_version
    return ref


def _pod_ref(pod: PodInfo) -> dict[str, str]:
    """The pod's ObjectReference as client-go's GetReference makes it (resourceVersion
    included, which keeps Events of different versions of a pod apart)."""
    ref = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
    }
    if pod.resource_version:
        ref["resourceVersion"] = pod.resource_version
    return ref


def _pod_path(pod: PodInfo, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
    return f"{path}/{sub}" if sub else path


def _write_result(response: Response) -> WriteResult:
    if not response.ok:
        return WriteResult(False, response.message(), conflict=response.status == 409)
    body = response.body if isinstance(response.body, Mapping) else None
    meta = body.get("metadata") if body is not None else None
    return WriteResult(True, resource_version=str((meta or {}).get("resourceVersion") or ""),
                       obj=body)


class ApiPorts:
    """Binder, Reporter and Evictor over one :class:`KubeApi`; Events over ``events``."""

    def __init__(self, api: KubeApi, *, events: KubeApi | None = None,
                 workers: int = 8) -> None:
        self.api = api
        # kube-scheduler posts Events through a client of their own (its own rate limiter),
        # so that a burst of Events never takes a bind's token; repeats become series.
        self.events = EventRecorder(events or api)
        self.events.start()
        self.hostname = socket.gethostname()
        # One single-threaded lane per shard, chosen by pod uid: a pod's status patches and
        # Events land in the order the scheduler decided them, while pods run in parallel.
        self._lanes = [
            ThreadPoolExecutor(1, thread_name_prefix=f"api-{i}") for i in range(workers)
        ]
        self._lock = threading.Lock()
        self._conditions: TTLCache[str, tuple[str, str, str | None]] = TTLCache(
            maxsize=100_000, ttl=REPORT_MEMORY_SECONDS
        )
        # Pods this scheduler bound: a failure report of an earlier attempt that reaches its
        # lane afterwards is dropped, so a running pod never reads PodScheduled=False.
        self._bound: TTLCache[str, bool] = TTLCache(maxsize=100_000, ttl=REPORT_MEMORY_SECONDS)
        # The newest failure report queued per pod: an older one still waiting for its lane
        # writes nothing (the newer says what is true now), as upstream's API dispatcher
        # merges the calls queued for one pod.
        self._newest_report: dict[str, int] = {}
        self._reports = 0
        # Per pod, the last report number queued when its nomination was cleared (a higher
        # preemptor took the node): an older report still waiting for its lane must not
        # write its node back, or the watch would restore the cleared reservation.
        self._nomination_cleared: TTLCache[str, int] = TTLCache(
            maxsize=100_000, ttl=REPORT_MEMORY_SECONDS)
        # Whether a pod still exists (the scheduler's pod lister): reports queued for a pod
        # deleted since are not sent. Set by the app once the scheduler exists.
        self.pod_exists: Callable[[str], bool] = lambda uid: True
        # The PodGroupInitiallyScheduled condition last written per group uid: (status,
        # reason, message, observedGeneration, lastTransitionTime).
        self._group_conditions: TTLCache[str, tuple[str, str, str, int, str]] = TTLCache(
            maxsize=100_000, ttl=REPORT_MEMORY_SECONDS)
        self._group_statuses: TTLCache[str, CoschedulingStatus] = TTLCache(
            maxsize=100_000, ttl=REPORT_MEMORY_SECONDS)

    def close(self) -> None:
        for lane in self._lanes:
            lane.shutdown(wait=True)
        self.events.close()

    def _background(self, pod: PodInfo, fn: Callable[[], None], what: str) -> Future[None]:
        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("API call failed", call=what, pod=pod.key)

        return self._lanes[hash(pod.uid) % len(self._lanes)].submit(run)

    def _group_background(self, group: PodGroup, fn: Callable[[], None], what: str) -> None:
        """As ``_background``, in the group's lane: its writes land in the order decided."""
        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("API call failed", call=what, pod_group=group.key)

        self._lanes[hash(group.uid) % len(self._lanes)].submit(run)

    # -- Binder ---------------------------------------------------------------------------
    def bind(self, pod: PodInfo, node: str) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        response = self.api.request("POST", _pod_path(pod, "binding"), body=body)
        if response.ok:
            return self._bound_now(pod)
        if response.status == 404:
            return BindResult(BindOutcome.GONE, response.message())
        if response.status == 409:
            if response.attempts > 1 and self._bound_to(pod, node):
                # An earlier attempt bound it and its answer was lost: the pod is where this
                # cycle chose, so it is scheduled (Event, metrics), not a conflict.
                log.info("Binding retried after a lost answer found the pod bound to the "
                         "chosen node", pod=pod.key, node=node, attempts=response.attempts)
                return self._bound_now(pod)
            return BindResult(BindOutcome.CONFLICT, response.message())
        return BindResult(BindOutcome.FAILED, f"{response.status}: {response.message()}")

    def _bound_now(self, pod: PodInfo) -> BindResult:
        with self._lock:
            self._bound[pod.uid] = True
        return BindResult(BindOutcome.BOUND)

    def _bound_to(self, pod: PodInfo, node: str) -> bool:
        """Whether this very pod (same uid) is now bound to ``node``."""
        response = self.api.get(_pod_path(pod))
        current = response.body if response.ok and isinstance(response.body, Mapping) else {}
        return ((current.get("metadata") or {}).get("uid") == pod.uid
                and (current.get("spec") or {}).get("nodeName") == node)

    # -- Reporter -------------------------------------------------------------------------
    def scheduled(self, pod: PodInfo, node: str) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        stamp = _now()
        self._background(
            pod, lambda: self._event(pod, "Normal", "Scheduled", "Binding", note, stamp=stamp),
            "event",
        )

    def expecting(self, pod: PodInfo, node: str) -> None:
        """The expected node written as nominatedNodeName, and answered, before the binding
        cycle goes on to Permit and PreBind: upstream's bindingCycle calls updatePod
        synchronously (SchedulerAsyncAPICalls is off by default in v1.37), so the node is
        there before the claims are written and the pod bound. In the pod's lane, after
        the reports queued before it, so that none of them lands after it."""
        with self._lock:
            # The next failure report must write its condition (and clear this) whatever
            # the last one said.
            self._conditions.pop(pod.uid, None)
        if pod.nominated_node_name == node:
            return
        self._background(pod, lambda: self._expect(pod, node), "expecting").result()

    def _expect(self, pod: PodInfo, node: str) -> None:
        if not self.set_nominated_node(pod, node):
            log.warning("Could not write the expected node", pod=pod.key, node=node)

    def failed(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        with self._lock:
            self._reports += 1
            report = self._newest_report[pod.uid] = self._reports

        def run() -> None:
            with self._lock:
                newest = self._newest_report.get(pod.uid) == report
                if newest:
                    del self._newest_report[pod.uid]
            if not newest or not self.pod_exists(pod.uid):
                return
            if not self.api.writable():
                # A standby's intake reports invalid pods too; the leader's is the one sent.
                # Nothing is remembered as sent, so this replica reports it once it leads.
                return
            with self._lock:
                if pod.uid in self._bound:
                    log.info("Dropped a failure report that arrived after the binding",
                             pod=pod.key, reason=reason)
                    return
                node = nominated_node
                if node and report <= self._nomination_cleared.get(pod.uid, 0):
                    node = None
                same_status = self._conditions.get(pod.uid) == (reason, message, node)
                self._conditions[pod.uid] = (reason, message, node)
            self._event(pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(message))
            if not same_status:
                self._patch_scheduled_condition(pod, reason, message, node)

        self._background(pod, run, "failed")

    def note(self, pod: PodInfo, reason: str, message: str) -> None:
        self._event(pod, "Normal", reason, "Scheduling", message)

    def _patch_scheduled_condition(
        self, pod: PodInfo, reason: str, message: str, nominated_node: str | None
    ) -> None:
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": _time(),
                    "lastProbeTime": None,
                }
            ]
        }
        if nominated_node is not None:
            status["nominatedNodeName"] = nominated_node or None
        version: str | None = pod.resource_version
        for _ in range(2):
            # The version the scheduler last saw is a precondition: a binding (by us or by
            # anyone) since then makes the patch conflict instead of overwriting
            # PodScheduled=True. On a conflict the pod is read again: still pending, the
            # patch is retried once on the new version; bound, deleted or replaced, dropped.
            body: dict[str, Any] = {"status": status}
            if version:
                body["metadata"] = {"resourceVersion": version}
            response = self.api.request(
                "PATCH", _pod_path(pod, "status"), body=body, content_type=STRATEGIC_MERGE
            )
            if response.status != 409:
                break
            version = self._pending_version(pod)
            if version is None:
                log.info("Dropped a status update: the pod is no longer pending", pod=pod.key,
                         reason=reason)
                return
        if not response.ok and response.status != 404:
            log.warning("Could not update pod status", pod=pod.key, status=response.status,
                        reason=response.message())

    def _pending_version(self, pod: PodInfo) -> str | None:
        """The pod's current resourceVersion if it is still this pending pod, else None."""
        response = self.api.get(_pod_path(pod))
        current = response.body if response.ok and isinstance(response.body, Mapping) else {}
        meta = current.get("metadata") or {}
        if (
            meta.get("uid") != pod.uid
            or meta.get("deletionTimestamp")
            or (current.get("spec") or {}).get("nodeName")
        ):
            return None
        return str(meta.get("resourceVersion") or "") or None

    def _event(
        self,
        pod: PodInfo,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: PodInfo | None = None,
        *,
        stamp: datetime | None = None,
        related_ref: dict[str, str] | None = None,
    ) -> None:
        # eventTime is when it happened (the caller's stamp), not when the lane got to it.
        stamp = stamp or _now()
        # As upstream, each profile records its Events under its own schedulerName: the
        # profile of the pod scheduled, or of the preemptor for a victim's Event.
        controller = (related or pod).scheduler_name
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{pod.name}.{int(stamp.timestamp() * 1e9):x}",
                "namespace": pod.namespace,
            },
            "eventTime": micro_time(stamp),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.hostname}",
            "action": action,
            "reason": reason,
            "regarding": _pod_ref(pod),
            "note": note,
            "type": type_,
        }
        if related_ref is not None:
            body["related"] = related_ref
        elif related is not None:
            body["related"] = _pod_ref(related)
        self.events.record(body)

    # -- PodGroupReporter -----------------------------------------------------------------
    def pod_group_condition(
        self, group: PodGroup, scheduled: bool, reason: str, message: str
    ) -> None:
        if group.source != WORKLOAD_API or (group.initially_scheduled and not scheduled):
            return
        status = "True" if scheduled else "False"
        with self._lock:
            last = self._group_conditions.get(group.uid)
            if last is not None and last[:4] == (status, reason, message, group.generation):
                return
            if group.initially_scheduled and last is None:
                # Already True on the object, and True again: SetStatusCondition changes
                # nothing (the True condition's message is the group's, empty on success).
                return
            # As meta.SetStatusCondition: the transition time moves only with the status.
            since = last[4] if last is not None and last[0] == status else _time()
            self._group_conditions[group.uid] = (status, reason, message, group.generation,
                                                 since)
        condition = {"type": INITIALLY_SCHEDULED, "status": status, "reason": reason,
                     "message": message, "observedGeneration": group.generation,
                     "lastTransitionTime": since}
        path = (f"/apis/scheduling.k8s.io/v1beta1/namespaces/{group.namespace}/podgroups/"
                f"{group.name}/status")
        self._group_background(group, lambda: self._patch_group_status(
            group, path, {"status": {"conditions": [condition]}}, STRATEGIC_MERGE),
            "pod group condition")

    def coscheduling_status(self, group: PodGroup, status: CoschedulingStatus) -> None:
        with self._lock:
            if self._group_statuses.get(group.uid) == status:
                return
            self._group_statuses[group.uid] = status
        body = {"status": {"phase": status.phase, "running": status.running,
                           "succeeded": status.succeeded, "failed": status.failed,
                           **({"occupiedBy": status.occupied_by} if status.occupied_by
                              else {})}}
        path = (f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{group.namespace}/podgroups/"
                f"{group.name}/status")
        # A custom resource takes no strategic merge patch: a merge patch, as the
        # controller's client.MergeFrom.
        self._group_background(group, lambda: self._patch_group_status(
            group, path, body, MERGE_PATCH), "coscheduling status")

    def _patch_group_status(self, group: PodGroup, path: str, body: Mapping[str, Any],
                            content_type: str) -> None:
        if not self.api.writable():
            return
        response = self.api.request("PATCH", path, body=body, content_type=content_type)
        if not response.ok and response.status != 404:
            log.warning("Could not update the pod group's status", pod_group=group.key,
                        status=response.status, reason=response.message())

    # -- ObjectWriter ---------------------------------------------------------------------
    def replace(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        return _write_result(self.api.request("PUT", path, body=obj))

    def get(self, path: str) -> WriteResult:
        return _write_result(self.api.request("GET", path))

    def patch(self, path: str, patch: Mapping[str, Any]) -> WriteResult:
        return _write_result(
            self.api.request("PATCH", path, body=patch, content_type=STRATEGIC_MERGE))

    def create(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        return _write_result(self.api.request("POST", path, body=obj))

    def delete_object(self, path: str) -> WriteResult:
        response = self.api.request("DELETE", path)
        if response.status == 404:
            return WriteResult(True)
        return _write_result(response)

    # -- Evictor --------------------------------------------------------------------------
    def mark_disruption_target(self, victim: PodInfo, message: str) -> bool:
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": message,
            "lastTransitionTime": _time(),
        }
        response = self.api.request(
            "PATCH", _pod_path(victim, "status"), body={"status": {"conditions": [condition]}},
            content_type=STRATEGIC_MERGE,
        )
        return response.ok or response.status == 404

    def evict(self, victim: PodInfo) -> EvictionResult:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": victim.name, "namespace": victim.namespace},
            "deleteOptions": {"preconditions": {"uid": victim.uid}},
        }
        response = self.api.request("POST", _pod_path(victim, "eviction"), body=body)
        if response.ok:
            return EvictionResult(EvictionOutcome.EVICTED)
        if response.status == 404:
            return EvictionResult(EvictionOutcome.GONE)
        if response.status == 429:
            return EvictionResult(EvictionOutcome.BLOCKED_BY_PDB, response.message())
        if response.status == 500 and "more than one" in response.message():
            return EvictionResult(EvictionOutcome.MULTIPLE_PDBS, response.message())
        return EvictionResult(EvictionOutcome.FAILED, f"{response.status}: {response.message()}")

    def delete(self, victim: PodInfo) -> EvictionOutcome:
        body = {"preconditions": {"uid": victim.uid}}
        response = self.api.request("DELETE", _pod_path(victim), body=body)
        if response.ok:
            return EvictionOutcome.EVICTED
        return EvictionOutcome.GONE if response.status == 404 else EvictionOutcome.FAILED

    def preempted_event(
        self, victim: PodInfo, preemptor: PodInfo, node: str, group: PodGroup | None = None
    ) -> None:
        if group is None:
            note = f"Preempted by pod {preemptor.uid} on node {node}"
            self._event(victim, "Normal", "Preempted", "Preempting", note, related=preemptor)
            return
        # Upstream's executor: "Preempted by <preemptor.Type()> <UID>", related its Obj().
        note = f"Preempted by podgroup {group.uid} on node {node}"
        self._event(victim, "Normal", "Preempted", "Preempting", note, related=preemptor,
                    related_ref=_pod_group_ref(group))

    # -- MoveReporter ---------------------------------------------------------------------
    def rescheduled(self, pod: PodInfo, reason: str, note: str) -> None:
        stamp = _now()
        self._background(
            pod, lambda: self._event(pod, "Normal", reason, "Rescheduling", note, stamp=stamp),
            "event",
        )

    def set_nominated_node(self, pod: PodInfo, node: str) -> bool:
        if not node:
            with self._lock:
                self._nomination_cleared[pod.uid] = self._reports
                # The next report writes its status whatever the last one said.
                self._conditions.pop(pod.uid, None)
        body: Mapping[str, Any] = {"status": {"nominatedNodeName": node or None}}
        response = self.api.request(
            "PATCH", _pod_path(pod, "status"), body=body, content_type=STRATEGIC_MERGE
        )
        return response.ok or response.status == 404
