"""What the scheduling queue knows about a pending pod between its scheduling attempts.

Mirrors upstream's ``framework.QueuedPodInfo``. The queue needs only a few read-only attributes
of the pod itself; :class:`QueueablePod` names them, so the real ``PodInfo`` of
``scheduler.model.pod`` and the tiny stand-ins of the tests both fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar


class QueueablePod(Protocol):
    """The attributes of a pod the queue and the nominator read (all read-only)."""

    @property
    def uid(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def key(self) -> str:
        """``namespace/name``."""
        ...

    @property
    def priority(self) -> int: ...

    @property
    def nominated_node_name(self) -> str:
        """``status.nominatedNodeName`` as the API has it (``""`` when unset)."""
        ...

    @property
    def node_name(self) -> str:
        """``spec.nodeName`` (``""`` while unbound)."""
        ...

    @property
    def resource_version(self) -> str: ...

    @property
    def raw(self) -> Mapping[str, Any]:
        """The pod as the API returned it."""
        ...


P = TypeVar("P", bound=QueueablePod)


@dataclass(eq=False)
class QueuedPodInfo(Generic[P]):
    """A pod plus its queueing history. Identity-compared: one object per queued pod.

    ``timestamp`` is when the pod entered the queue; it is refreshed on every failed attempt
    (``add_unschedulable_if_not_present``), so a retried pod sorts behind pods of the same
    priority that arrived meanwhile, and the 5-minute leftover flush counts from the last
    failure. ``unschedulable_count`` and ``consecutive_errors`` drive the backoff (upstream
    ``UnschedulableCount`` / ``ConsecutiveErrorsCount``); ``attempts`` only counts pops.
    """

    pod: P
    timestamp: float
    # Set when the pod first enters activeQ (upstream sets it in moveToActiveQ).
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    # Plugins that rejected the pod in its last attempt with Unschedulable(AndUnresolvable)
    # resp. Pending; the failure path fills them in before requeueing.
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    # Rejected by a PreEnqueue check (scheduling gates): waits in the unschedulable pool until
    # an event registered by ``gating_plugin`` lets it pass.
    gated: bool = False
    gating_plugin: str = ""
    # Cached backoff expiry (start of its 1 s window); cleared whenever the counters or the
    # timestamp change. Owned by the queue.
    backoff_expiration: float | None = field(default=None, init=False, repr=False)

    @property
    def priority(self) -> int:
        return self.pod.priority

    @property
    def uid(self) -> str:
        return self.pod.uid

    @property
    def key(self) -> str:
        return self.pod.key
