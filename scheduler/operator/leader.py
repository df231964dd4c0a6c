"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Every replica lists, watches and keeps its cache and queue warm; only the leader schedules
and writes. The rules are client-go's ``leaderelection`` package:

- A lease held by someone else is valid until ``leaseDuration`` has passed since *this
  replica observed* its record change (its own clock, never the holder's timestamps, so
  clock skew between nodes does not matter). Only then may it be taken over.
- Every write of the record is an update guarded by its resourceVersion: of two replicas
  racing for an expired lease, one gets 409 Conflict and stays standby.
- The leader renews every ``retryPeriod``; standbys retry every ``retryPeriod`` with up to
  20 % jitter.

Fencing goes one step further than client-go's renew loop. The leader may write only until
``renewDeadline`` has passed since the start of its last successful renewal: the write gate
(:meth:`LeaderElector.may_write`, checked by the API client right before each write leaves
the process) closes on its own clock even if the elector's thread is stuck. A standby takes
over no earlier than ``leaseDuration`` after it saw that renewal, which the renewal request
preceded, so ``leaseDuration - renewDeadline`` (5 s by default) is the margin left for a
write already on the wire. When the gate has closed the leader stops for good: it tells
the app, which exits so that the Deployment restarts it as a fresh standby, as
kube-scheduler does ("leaderelection lost").

On a graceful stop the leader first closes the gate, lets its bindings end, then releases
the lease (holder cleared, duration 1 s, as client-go's ReleaseOnCancel), so a standby takes
over on its next retry instead of after a full lease duration.

The elector never ends silently. An error it has no rule for (anything but a failed Lease
request, which it retries) ends it as losing the lease does: logged, writes fenced, and the
app exits, as kube-scheduler exits when its elector's Run returns. And a thread that hangs
is caught by :meth:`LeaderElector.check`, client-go's leader-election watchdog
(``HealthzAdaptor``): ``/healthz`` fails once a leader has not renewed for its lease
duration plus :data:`WATCHDOG_SECONDS`.
"""

from __future__ import annotations

import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from scheduler.config import JITTER_FACTOR, LeaderElection
from scheduler.operator.kubeapi import KubeApi

log = structlog.get_logger("scheduler.leader")

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
# How long past its lease a leader's renewal may be late before /healthz fails: the timeout
# kube-scheduler gives its watchdog (leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)).
WATCHDOG_SECONDS = 20.0


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    lease_duration: int
    acquire_time: str
    renew_time: str
    transitions: int
    # The object's resourceVersion: the precondition of the next update.
    version: str = ""

    def same_record(self, other: LeaseRecord | None) -> bool:
        """Whether the holder's record is unchanged (resourceVersion aside)."""
        return other is not None and replace(self, version="") == replace(other, version="")


class LeaseStore(Protocol):
    def get(self) -> LeaseRecord | None:
        """The current record; ``None`` when there is no lease. Raises on other failures."""

    def create(self, record: LeaseRecord) -> LeaseRecord | None:
        """The record as created, or ``None`` when someone else created it first."""

    def update(self, record: LeaseRecord) -> LeaseRecord | None:
        """The record as written (``record.version`` is the precondition), or ``None``."""


class LeaseError(Exception):
    pass


class ApiLeaseStore:
    """The Lease object through the API server."""

    def __init__(self, api: KubeApi, namespace: str, name: str, *, timeout: float) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.timeout = timeout
        self._collection = LEASES.format(namespace=namespace)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        response = self.api.request(method, path, body=body, limited=False,
                                    timeout=self.timeout)
        if response.ok:
            return response.body
        if response.status in (404, 409):
            return None
        raise LeaseError(f"{method} lease {self.namespace}/{self.name}: "
                         f"{response.status} {response.message()}")

    def get(self) -> LeaseRecord | None:
        body = self._request("GET", f"{self._collection}/{self.name}")
        return None if body is None else _record_of(body)

    def create(self, record: LeaseRecord) -> LeaseRecord | None:
        body = self._request("POST", self._collection, self._object(record))
        return None if body is None else _record_of(body)

    def update(self, record: LeaseRecord) -> LeaseRecord | None:
        body = self._request("PUT", f"{self._collection}/{self.name}", self._object(record))
        return None if body is None else _record_of(body)

    def _object(self, record: LeaseRecord) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if record.version:
            metadata["resourceVersion"] = record.version
        spec: dict[str, Any] = {
            "holderIdentity": record.holder,
            "leaseDurationSeconds": record.lease_duration,
            "leaseTransitions": record.transitions,
        }
        if record.acquire_time:
            spec["acquireTime"] = record.acquire_time
        if record.renew_time:
            spec["renewTime"] = record.renew_time
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": metadata, "spec": spec}


def _record_of(obj: Any) -> LeaseRecord:
    spec = obj.get("spec") or {}
    return LeaseRecord(
        holder=spec.get("holderIdentity") or "",
        lease_duration=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=spec.get("acquireTime") or "",
        renew_time=spec.get("renewTime") or "",
        transitions=int(spec.get("leaseTransitions") or 0),
        version=str((obj.get("metadata") or {}).get("resourceVersion") or ""),
    )


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_identity() -> str:
    """kube-scheduler's: the host name and a random suffix, unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        store: LeaseStore,
        config: LeaderElection,
        *,
        identity: str,
        on_started: Callable[[], None],
        on_lost: Callable[[], None],
        on_status: Callable[[bool], None] = lambda leading: None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], str] = _micro_time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.config = config
        self.identity = identity
        self._on_started = on_started
        self._on_lost = on_lost
        self._on_status = on_status
        self._clock = clock
        self._now = now
        self._jitter = jitter
        self._lock = threading.Lock()
        self._record: LeaseRecord | None = None
        self._observed_at = 0.0
        self._leading = False
        self._ended = False
        # Monotonic time until which this replica may write; 0 while it does not lead.
        self._valid_until = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the write gate -------------------------------------------------------------------
    def may_write(self) -> bool:
        return self._clock() < self._valid_until

    @property
    def leading(self) -> bool:
        return self._leading

    # -- one step of the loop -------------------------------------------------------------
    def step(self) -> float:
        """Try to acquire or renew once; returns the seconds to wait before the next step."""
        started = self._clock()
        try:
            held = self._try_acquire_or_renew(started)
        except LeaseError as exc:
            log.warning("Lease request failed", lease=self._lease_name(), error=str(exc))
            held = False
        if held:
            with self._lock:
                self._valid_until = started + self.config.renew_deadline
            if not self._leading:
                self._leading = True
                log.info("Became the leader", lease=self._lease_name(), identity=self.identity)
                self._on_status(True)
                self._on_started()
            return self.config.retry_period
        if self._leading and not self.may_write():
            self._lose()
            return self.config.retry_period
        if self._leading:
            return self.config.retry_period
        return self.config.retry_period * (1 + (JITTER_FACTOR - 1) * self._jitter())

    def _try_acquire_or_renew(self, now: float) -> bool:
        desired = LeaseRecord(
            holder=self.identity, lease_duration=round(self.config.lease_duration),
            acquire_time=self._now(), renew_time=self._now(), transitions=0,
        )
        current = self.store.get()
        if current is None:
            created = self.store.create(desired)
            if created is not None:
                self._observe(created, now)
            return created is not None
        if not current.same_record(self._record):
            self._observe(current, now)
        held_by_me = current.holder == self.identity
        if current.holder and not held_by_me and self._observed_at + current.lease_duration > now:
            return False
        if held_by_me:
            desired = replace(desired, acquire_time=current.acquire_time,
                              transitions=current.transitions)
        else:
            desired = replace(desired, transitions=current.transitions + 1)
        written = self.store.update(replace(desired, version=current.version))
        if written is None:
            return False
        self._observe(written, now)
        return True

    def _observe(self, record: LeaseRecord, now: float) -> None:
        self._record = record
        self._observed_at = now

    def _lose(self) -> None:
        self._end("Leader election lost: no renewal within renewDeadline; writes stopped")

    def _end(self, message: str, *, failed: bool = False) -> None:
        """Stop for good: the gate closed first, then the app told (it exits)."""
        with self._lock:
            self._valid_until = 0.0
        self._leading = False
        self._ended = True
        (log.exception if failed else log.error)(message, lease=self._lease_name(),
                                                  identity=self.identity)
        self._on_status(False)
        self._on_lost()

    def check(self) -> tuple[bool, dict[str, object]]:
        """The watchdog (client-go's ``LeaderElector.Check``): fails only for a leader whose
        last renewal is older than its lease duration plus :data:`WATCHDOG_SECONDS`, that is
        an elector stuck while the process still acts as leader."""
        overdue = self._clock() - self._observed_at - self.config.lease_duration
        if self._leading and overdue > WATCHDOG_SECONDS:
            return False, {"reason": "failed election to renew leadership on lease "
                                     f"{self.config.resource_name}"}
        return True, {"leading": self._leading}

    def _lease_name(self) -> str:
        return f"{self.config.resource_namespace}/{self.config.resource_name}"

    # -- thread ---------------------------------------------------------------------------
    def start(self) -> None:
        self._on_status(False)
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and not self._ended:
            try:
                delay = self.step()
            except Exception:
                # No rule for it: end as losing the lease does, so a standby that can no
                # longer take over, or a leader that can no longer renew, is restarted.
                self._end("Leader election failed; writes stopped", failed=True)
                return
            self._stop.wait(delay)

    def fence(self) -> None:
        """Stop writing now and stop trying to lead (the first step of a graceful stop)."""
        self._stop.set()
        with self._lock:
            self._valid_until = 0.0

    def release(self) -> None:
        """Give the lease up if this replica holds it, so a standby need not wait it out."""
        self.fence()
        if self._thread is not None:
            self._thread.join(self.config.retry_period + 1)
        if not self._leading:
            return
        self._leading = False
        self._on_status(False)
        record = self._record
        if record is None or record.holder != self.identity:
            return
        now = self._now()
        released = replace(record, holder="", lease_duration=1, acquire_time=now,
                           renew_time=now)
        try:
            done = self.store.update(released) is not None
        except LeaseError as exc:
            log.warning("Could not release the lease", lease=self._lease_name(), error=str(exc))
            return
        log.info("Released the lease" if done else "The lease had moved on; nothing released",
                 lease=self._lease_name(), identity=self.identity)
