"""What the scheduling core needs from the outside world, as interfaces.

The core (framework, plugins, cache, queue, cycle) does no I/O. The operator layer implements
these ports with the Kubernetes API; tests and the in-process benchmark use small fakes. Calls
that write to the API are made on the operator's worker threads, never on the scheduling
thread, so a slow API server slows binding, not scheduling decisions.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scheduler.model.coscheduling import CoschedulingStatus

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo
    from scheduler.model.pod_group import PodGroup


class BindOutcome(enum.Enum):
    BOUND = "Bound"
    # The pod is gone (404) or already bound (409): drop it quietly.
    GONE = "Gone"
    CONFLICT = "Conflict"
    # Anything else after the transient retries: unreserve, forget, requeue with backoff.
    FAILED = "Failed"


@dataclass(frozen=True)
class BindResult:
    outcome: BindOutcome
    message: str = ""


class Binder(Protocol):
    def bind(self, pod: PodInfo, node: str) -> BindResult: ...


class Reporter(Protocol):
    """Tells users what happened: Events, the PodScheduled condition, nominatedNodeName."""

    def scheduled(self, pod: PodInfo, node: str) -> None: ...

    def expecting(self, pod: PodInfo, node: str) -> None:
        """The pod is about to be bound to ``node`` after PreBind or Permit work: write it as
        ``nominatedNodeName`` for other components (upstream's NominatedNodeNameForExpectation);
        a later failure report clears it."""
        ...

    def failed(
        self, pod: PodInfo, reason: str, message: str, nominated_node: str | None
    ) -> None:
        """``nominated_node``: a node to write, ``""`` to clear it, ``None`` to leave it."""
        ...

    def note(self, pod: PodInfo, reason: str, message: str) -> None:
        """A Normal Event about the pod with action Scheduling, as a plugin records one
        (DynamicResources' ``BindingConditionsPending``)."""
        ...


class EvictionOutcome(enum.Enum):
    EVICTED = "Evicted"
    GONE = "Gone"
    # The API refused because of a PodDisruptionBudget (429).
    BLOCKED_BY_PDB = "BlockedByPDB"
    # The pod is covered by several PDBs (500): reported, not retried hot.
    MULTIPLE_PDBS = "MultiplePDBs"
    FAILED = "Failed"


@dataclass(frozen=True)
class EvictionResult:
    outcome: EvictionOutcome
    message: str = ""


class Evictor(Protocol):
    """Removes preemption victims through the API."""

    def mark_disruption_target(self, victim: PodInfo, message: str) -> bool: ...

    def evict(self, victim: PodInfo) -> EvictionResult: ...

    def delete(self, victim: PodInfo) -> EvictionOutcome:
        """Delete outright: EVICTED when deleted, GONE when it was already gone, else FAILED."""
        ...

    def preempted_event(
        self, victim: PodInfo, preemptor: PodInfo, node: str, group: PodGroup | None = None
    ) -> None:
        """The victim's ``Preempted`` Event; ``group``: the pod group whose preemption it
        was (upstream names the PodGroup then, not a member)."""
        ...

    def set_nominated_node(self, pod: PodInfo, node: str) -> bool:
        """Patch ``status.nominatedNodeName`` (``""`` clears it); True on success."""
        ...


class MoveReporter(Protocol):
    """Tells users what the rescheduler did, or would do in a dry run: an Event on the pod."""

    def rescheduled(self, pod: PodInfo, reason: str, note: str) -> None: ...


@dataclass(frozen=True)
class WriteResult:
    """An API call on one object: ``message`` is the API's when it failed, ``conflict`` that
    it failed on a stale resourceVersion (409), ``resource_version`` and ``obj`` what the API
    server answered when it succeeded."""

    ok: bool
    message: str = ""
    resource_version: str = ""
    conflict: bool = False
    obj: Mapping[str, Any] | None = None


class ObjectWriter(Protocol):
    """Reads and writes the API objects plugins change (VolumeBinding's PVs and PVCs,
    DynamicResources' ResourceClaims)."""

    def replace(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        """PUT ``obj`` at ``path`` (a ``/status`` path writes the status); its
        resourceVersion is the precondition."""
        ...

    def get(self, path: str) -> WriteResult:
        """GET the object at ``path`` from the API server (``obj``), as a plugin refetches
        one after a conflict."""
        ...

    def patch(self, path: str, patch: Mapping[str, Any]) -> WriteResult:
        """A strategic merge patch of the object at ``path``."""
        ...

    def create(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        """POST ``obj`` to the collection at ``path`` (``obj``: the object created)."""
        ...

    def delete_object(self, path: str) -> WriteResult:
        """DELETE the object at ``path``; one already gone counts as deleted."""
        ...


class PodGroupReporter(Protocol):
    """Writes what a pod group's users read on the group object."""

    def pod_group_condition(
        self, group: PodGroup, scheduled: bool, reason: str, message: str
    ) -> None:
        """A Workload-API PodGroup's ``PodGroupInitiallyScheduled`` condition after a
        pod-group cycle, as kube-scheduler's ``updatePodGroupCondition``
        (pkg/scheduler/schedule_one_podgroup.go): True/``Scheduled`` when the group was
        placed, False with ``reason`` (``Unschedulable``, ``SchedulerError``) and the group's
        message otherwise; never set back to False once True, not written when unchanged."""
        ...

    def coscheduling_status(self, group: PodGroup, status: CoschedulingStatus) -> None:
        """A Coscheduling PodGroup's status (what scheduler-plugins' PodGroup controller
        writes, ``scheduler.model.coscheduling``), when it changed."""
        ...


class NullPorts:
    """Ports that record calls and touch nothing: for the benchmark and unit tests."""

    bound: list[tuple[str, str]]
    failures: list[tuple[str, str, str]]
    written: list[tuple[str, Mapping[str, Any]]]
    expected: list[tuple[str, str]]
    group_conditions: list[tuple[str, bool, str, str]]
    group_statuses: list[tuple[str, CoschedulingStatus]]

    def __init__(self) -> None:
        self.bound = []
        self.failures = []
        self.written = []
        self.expected = []
        self.patched: list[tuple[str, Mapping[str, Any]]] = []
        self.notes: list[tuple[str, str, str]] = []
        self.created: list[tuple[str, Mapping[str, Any]]] = []
        self.deleted: list[str] = []
        # What ``get`` answers, by path; a test puts the API server's objects here, and
        # paths in ``conflicts`` answer their next write with 409 (once each).
        self.objects: dict[str, Mapping[str, Any]] = {}
        self.conflicts: set[str] = set()
        # Paths whose writes the API server refuses, with its message.
        self.refused: dict[str, str] = {}
        self.group_conditions = []
        self.group_statuses = []

    def pod_group_condition(
        self, group: PodGroup, scheduled: bool, reason: str, message: str
    ) -> None:
        self.group_conditions.append((group.key, scheduled, reason, message))

    def coscheduling_status(self, group: PodGroup, status: CoschedulingStatus) -> None:
        self.group_statuses.append((group.key, status))

    def bind(self, pod: PodInfo, node: str) -> BindResult:
        self.bound.append((pod.key, node))
        return BindResult(BindOutcome.BOUND)

    def replace(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        """Accepted, with the next resourceVersion, as the API server would answer; the
        watch never delivers it (a test plays the controllers)."""
        if path in self.conflicts:
            self.conflicts.discard(path)
            return WriteResult(False, "the object has been modified", conflict=True)
        if path in self.refused:
            return WriteResult(False, self.refused[path])
        self.written.append((path, obj))
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "0")
        written = str(int(version) + 1) if version.isdigit() else version
        answer = {**obj, "metadata": {**(obj.get("metadata") or {}), "resourceVersion": written}}
        return WriteResult(True, resource_version=written, obj=answer)

    def get(self, path: str) -> WriteResult:
        found = self.objects.get(path)
        if found is None:
            return WriteResult(False, f"{path} not found")
        version = str((found.get("metadata") or {}).get("resourceVersion") or "")
        return WriteResult(True, resource_version=version, obj=found)

    def patch(self, path: str, patch: Mapping[str, Any]) -> WriteResult:
        if path in self.refused:
            return WriteResult(False, self.refused[path])
        self.patched.append((path, patch))
        return WriteResult(True)

    def create(self, path: str, obj: Mapping[str, Any]) -> WriteResult:
        """Accepted: a ``generateName`` gets the suffix ``x<n>``, the object a uid."""
        if path in self.refused:
            return WriteResult(False, self.refused[path])
        meta = dict(obj.get("metadata") or {})
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}x{len(self.created)}"
        meta.update(uid=f"uid-{meta['name']}", resourceVersion="1")
        created = {**obj, "metadata": meta}
        self.created.append((path, created))
        return WriteResult(True, resource_version="1", obj=created)

    def delete_object(self, path: str) -> WriteResult:
        self.deleted.append(path)
        return WriteResult(True)

    def scheduled(self, pod: PodInfo, node: str) -> None:
        return None

    def expecting(self, pod: PodInfo, node: str) -> None:
        self.expected.append((pod.key, node))

    def failed(
        self, pod: PodInfo, reason: str, message: str, nominated_node: str | None
    ) -> None:
        self.failures.append((pod.key, reason, message))

    def note(self, pod: PodInfo, reason: str, message: str) -> None:
        self.notes.append((pod.key, reason, message))

