"""The scheduling queue: activeQ, backoffQ and the unschedulable pool (upstream ``PriorityQueue``).

Behaviour follows ``pkg/scheduler/backend/queue`` with v1.36 defaults (SchedulerQueueingHints
and SchedulerPopFromBackoffQ on):

* **activeQ** is a heap ordered by ``less`` (the QueueSort plugin: priority, then timestamp).
  ``pop`` takes its head; when activeQ is empty it takes the head of the backoffQ instead,
  still backing off or not (KEP-5142). Only pods rejected by plugins can be popped that way;
  pods that failed with an error wait out their backoff in the error backoffQ.
* **backoffQ** holds pods worth retrying once their backoff is over. The backoff is
  ``initial * 2**(count - 1)`` capped at ``max``, where ``count`` is ``consecutive_errors`` when
  the last attempt ended in an error and ``unschedulable_count`` otherwise; ``max == 0``
  disables backoff. The expiry ``timestamp + backoff`` is truncated to a 1 s window, a pod is
  backing off while its window is not earlier than the current one, and within a window the
  backoffQ is ordered like activeQ. ``flush_backoff_completed`` (every 1 s, on whole seconds)
  moves the pods whose backoff is over to activeQ.
* **unschedulable pool** holds pods no event has made worth retrying yet. A cluster event moves
  a pod out only if a plugin that rejected it registered a matching event and that plugin's
  queueing hint answers Queue (a hint that raises counts as Queue). Queue from a plugin that
  returned Pending skips the backoff. ``flush_unschedulable_leftover`` (every 30 s) moves pods
  that waited longer than ``max_in_unschedulable`` (5 min), as the wildcard
  ``UnschedulableTimeout`` event.
* **in-flight pods**: between ``pop`` and ``done``/``add_unschedulable_if_not_present`` every
  event of interest is logged. When the attempt fails, the events that arrived during it are
  replayed through the pod's hints, so an event that raced the cycle is never lost.

Thread-safety. One lock and one condition guard all state; ``pop`` waits on the condition
without polling. Plugin code of the *hints* and ``pre_check`` callbacks is never called with the
lock held: the queue takes a snapshot of the candidates under the lock, evaluates the hints
without it, and applies the result under the lock again only to pods that are still where the
snapshot saw them (a pod that left the pool and came back meanwhile was retried after the
event, so skipping it is correct). The failure path replays the in-flight log the same way,
looping until no new event arrived while it evaluated. Hints may therefore be slow or even
call back into the queue. ``pre_enqueue`` (the PreEnqueue check, e.g. scheduling gates) runs
*with* the lock held, as upstream: it must be a cheap function of the pod alone and must not
call the queue. The nominator has its own leaf lock, taken after the queue's.
"""

from __future__ import annotations

import enum
import itertools
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, NamedTuple

import structlog

from scheduler.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from scheduler.queue.heap import IndexedHeap
from scheduler.queue.hint_index import PoolIndex, event_keys
from scheduler.queue.nominator import Nominator
from scheduler.queue.pod_changes import (
    generated_claims_changed,
    is_pod_updated,
    pod_scheduling_properties_change,
)
from scheduler.queue.queued_pod import P, QueuedPodInfo

log = structlog.get_logger(__name__)

DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
BACKOFF_FLUSH_PERIOD = 1.0  # also the backoffQ ordering window
LEFTOVER_FLUSH_PERIOD = 30.0

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"

# Queue-entry events of upstream's scheduler_queue_incoming_pods_total that are not
# ClusterEvents (k8s pkg/scheduler/framework/events.go).
UNSCHEDULED_POD_ADD = "UnscheduledPodAdd"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
GATED = "gated"
# Members of a Workload-API group not observed yet (upstream's incompletePodGroupPods).
INCOMPLETE = "incomplete"
# Members waiting for their group's cycle to end (upstream's pendingPodGroupPods).
PENDING = "pending"
# scheduler_queued_entities' types: a pod of no group, or a group's members in one queue.
POD_ENTITY = "pod"
POD_GROUP_ENTITY = "podgroup"

# Deleted pods remembered so that a failed attempt that ends after the delete (or an update
# racing it) does not bring the pod back.
_TOMBSTONES = 4096
_NO_HINTS: Mapping[str, Sequence[ClusterEventWithHint]] = MappingProxyType({})


class Strategy(enum.IntEnum):
    """Where an event sends a pod (upstream ``queueingStrategy``); higher wins."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass(frozen=True)
class _LoggedEvent:
    seq: int
    event: ClusterEvent
    old: object
    new: object


@dataclass
class _InFlight(Generic[P]):
    # Sequence number of the first logged event this attempt has to consider.
    start_seq: int
    # The newest version of the pod seen during the attempt; it is the one requeued.
    pod: P
    deleted: bool = False


@dataclass
class _PoolEntry(Generic[P]):
    qpi: QueuedPodInfo[P]
    token: int


class _Candidate(NamedTuple, Generic[P]):
    """What hint evaluation needs of a pooled pod, copied under the lock."""

    qpi: QueuedPodInfo[P]
    token: int
    pod: P
    unschedulable: frozenset[str]
    pending: frozenset[str]


def _uid(qpi: QueuedPodInfo[P]) -> str:
    return qpi.pod.uid


def _indexed(registered: ClusterEventWithHint, uid: str,
             allowed: Mapping[HintIndex, set[str]] | None) -> bool:
    """Whether the registration's hint is to run for the pod: it has no index, the event's
    keys are not known (None), or the pod is under one of them."""
    if registered.index is None or not allowed:
        return True
    uids = allowed.get(registered.index)
    return uids is None or uid in uids


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource is Resource.WILDCARD and event.action == Action.ALL


class SchedulingQueue(Generic[P]):
    def __init__(
        self,
        order: Callable[[QueuedPodInfo[P]], Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        hints: Mapping[str, Sequence[ClusterEventWithHint]] = _NO_HINTS,
        hints_by_profile: Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]] | None = None,
        profile_of: Callable[[P], str] | None = None,
        pre_enqueue: Callable[[P], str | None] | None = None,
        lookup: Callable[[str], P | None] | None = None,
        on_incoming: Callable[[str, str, str], None] | None = None,
        group_of: Callable[[P], Hashable | None] | None = None,
        group_gate: Callable[[P], str | None] | None = None,
        incomplete: Callable[[P], bool] | None = None,
    ) -> None:
        """``order(qpi)`` is the QueueSort plugin's order, compared with ``<``: its ``sort_key``,
        or :func:`~scheduler.queue.heap.order_of_less` of its ``less``.

        ``hints`` maps a plugin name to the events it registered (EnqueueExtensions). A
        plugin that can reject pods but has no EnqueueExtensions should be registered for
        ``ClusterEvent(Resource.WILDCARD, Action.ALL)``, as upstream does.

        With several profiles, ``hints_by_profile`` holds one such map per profile and
        ``profile_of(pod)`` names the pod's profile (upstream's QueueingHintMapPerProfile):
        each profile's plugin instances judge their own pods. A pod of a profile without a
        map is retried after its backoff on any event, as upstream does.

        ``pre_enqueue(pod)`` returns the name of the plugin that gates the pod, or ``None``.
        ``lookup(uid)`` is the newest version of a pod the watch delivered (``None`` once
        deleted); the nominator uses it, as upstream's uses the pod lister.
        ``on_incoming(queue, event, entity)`` hears every pod entering a queue (called with
        the lock held: it must only count); ``entity`` is ``pod`` or ``podgroup`` when the
        entry counts as an entity entering that queue, as upstream's
        recordIncomingEntitiesMetrics counts them (a pod of no group, or one group
        entering a queue), else ``""``.
        ``group_of(pod)`` is the key of the pod group whose members wait as one, or
        ``None``: upstream queues a Workload-API group as one entity, and one member held
        by PreEnqueue holds the entity. Here a member whose sibling is held is held too, as
        gated by the sibling's plugin; a member already queued is held when popped, and a
        held member is taken with the group once its own check passes (``take``).
        ``group_gate(pod)`` names what holds a member the queue never sees (the intake keeps
        pods with scheduling gates out), or ``None``. Both are cheap and called with the
        lock held.
        ``incomplete(pod)``: a held member's PodGroup is not observed yet. Upstream keeps
        such a member in incompletePodGroupPods, in no queue: it is counted apart
        (``pending_counts``), in no entity, and enters no queue (``on_incoming``) until its
        group comes; then it enters as a new pod (UnscheduledPodAdd). Cheap, called with
        the lock held.
        """
        self._order = order
        self._clock = clock
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_in_unschedulable = max_in_unschedulable
        self._init_hints(hints_by_profile if hints_by_profile is not None else {"": hints})
        self._profile_of = profile_of
        self._pre_enqueue = pre_enqueue
        self._group_of = group_of
        self._group_gate = group_gate
        self._incomplete = incomplete
        self._on_incoming = on_incoming or _ignore_incoming
        self.nominator: Nominator[P] = Nominator(lookup)
        self._init_queues(order)

    def _init_hints(
        self, tables: Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]]
    ) -> None:
        """The registered hints per profile and plugin, the events any of them registered,
        and the memo of which plugins an event interests."""
        self._hints: dict[str, dict[str, tuple[ClusterEventWithHint, ...]]] = {
            profile: {plugin: tuple(registered) for plugin, registered in table.items()}
            for profile, table in tables.items()
        }
        self._registered = tuple(
            r.event for table in self._hints.values() for regs in table.values() for r in regs
        )
        self._interest: dict[ClusterEvent, frozenset[str]] = {}
        # The hints' pre-queueing indexes (HintIndex), per profile and per event.
        self._profile_indexes = {
            profile: tuple(r.index for regs in table.values() for r in regs
                           if r.index is not None)
            for profile, table in self._hints.items()
        }
        self._any_index = any(self._profile_indexes.values())
        self._event_indexes: dict[ClusterEvent, tuple[HintIndex, ...]] = {}

    def _init_queues(self, order: Callable[[QueuedPodInfo[P]], Any]) -> None:
        """The lock, the three heaps, the gated pool, the in-flight pods with their event
        log, and the flusher's state."""
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active: IndexedHeap[QueuedPodInfo[P]] = IndexedHeap(_uid, order)
        self._backoff: IndexedHeap[QueuedPodInfo[P]] = IndexedHeap(_uid, self._backoff_order)
        self._error_backoff: IndexedHeap[QueuedPodInfo[P]] = IndexedHeap(_uid, self._expiry_key)
        self._pool: dict[str, _PoolEntry[P]] = {}
        self._pool_index = PoolIndex(self._indexes_of)
        self._pool_tokens = itertools.count()
        # The group members their own PreEnqueue check holds: group -> uid -> gating plugin.
        self._gated_members: dict[Hashable, dict[str, str]] = {}
        self._gated_group: dict[str, Hashable] = {}
        # The group members seen by a PreEnqueue check or waiting for their group's cycle:
        # group -> uids and uid -> group, until deleted (to find a queued sibling).
        self._members: dict[Hashable, set[str]] = {}
        self._member_of: dict[str, Hashable] = {}
        # The members held while their PodGroup was not observed, not counted as entering
        # a queue: they count as new pods when they next move.
        self._uncounted: set[str] = set()
        # The group of the pod last popped (upstream's lastPoppedEntityKey) while its cycle
        # runs, and its members that came meanwhile (a new pod, a failed binding): they wait
        # for the cycle's end and then join the group where it is requeued.
        self._cycle_group: Hashable | None = None
        self._pending: dict[str, QueuedPodInfo[P]] = {}
        # That group was popped from backoffQ (PopFromBackoffQ).
        self._cycle_from_backoff = False
        # In the order the pods were popped, so by start_seq: the first is the oldest (as
        # upstream's inFlightPods list).
        self._in_flight: dict[str, _InFlight[P]] = {}
        self._events: deque[_LoggedEvent] = deque()
        self._next_seq = 0
        self._tombstones: OrderedDict[str, None] = OrderedDict()
        self._closed = False
        # Set by wake(): the next pop that finds no pod returns None at once.
        self._woken = False
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    # -- intake -----------------------------------------------------------------------------
    def add(self, pod: P) -> None:
        """A new pending pod: to activeQ (or the pool if gated), and to the nominator."""
        with self._lock:
            uid = pod.uid
            if uid in self._in_flight or self._is_queued_locked(uid):
                return
            self._tombstones.pop(uid, None)
            if self._cycle_group is not None and self._group_key(pod) == self._cycle_group:
                self._pending[uid] = QueuedPodInfo(pod=pod, timestamp=self._clock())
                self._note_member_locked(uid, self._cycle_group)
                self.nominator.add(pod)
                return
            self._add_new_locked(pod)

    def update(self, old: P, new: P) -> None:
        """An update of a pending pod (upstream ``Update``).

        In activeQ or backoffQ the pod is replaced in place. In the pool it is replaced, and
        if its spec or metadata changed the hints run for the kinds of change
        (``PodSchedulingPropertiesChange``), possibly moving it. While it is being scheduled
        the change is logged for the replay. A pod in no queue is added.
        """
        if old.resource_version == new.resource_version:
            return
        events = pod_scheduling_properties_change(old, new)
        # A status update counts where it records claims generated for the pod: the pod
        # may pass DynamicResources' PreEnqueue now.
        changed = is_pod_updated(old.raw, new.raw) or generated_claims_changed(
            old.raw, new.raw)
        uid = new.uid
        with self._lock:
            record = self._in_flight.get(uid)
            if record is not None:
                record.pod = new
                for event in events:
                    self._log_event_locked(event, old, new)
                return
            for heap in (self._active, self._backoff, self._error_backoff):
                queued = heap.get(uid)
                if queued is not None:
                    queued.pod = new
                    heap.add_or_update(queued)
                    self.nominator.update(old, new)
                    return
            pending = self._pending.get(uid)
            if pending is not None:
                pending.pod = new
                self.nominator.update(old, new)
                return
            entry = self._pool.get(uid)
            if entry is None:
                if uid not in self._tombstones:
                    self._add_new_locked(new)
                return
            entry.qpi.pod = new
            if self._any_index:
                self._pool_index.add(uid, new)
            self.nominator.update(old, new)
            if not changed:
                return
            candidate = self._candidate_locked(entry)

        for event in events:
            strategy = self._worth_requeuing(candidate, event, old, new)
            if strategy is not Strategy.SKIP:
                break
        else:
            return
        with self._lock:
            self._move_decided_locked([(candidate, strategy)], str(event))

    def delete(self, uid: str) -> None:
        """The pod is gone (deleted, or bound by someone): drop it from every place. If it is
        being scheduled, a failed attempt will not bring it back."""
        with self._lock:
            self.nominator.delete(uid)
            self._active.delete(uid)
            self._backoff.delete(uid)
            self._error_backoff.delete(uid)
            self._drop_from_pool_locked(uid)
            self._pending.pop(uid, None)
            self._uncounted.discard(uid)
            self._forget_member_gate_locked(uid)
            if self._member_of:
                self._forget_member_locked(uid)
            record = self._in_flight.get(uid)
            if record is not None:
                record.deleted = True
            self._tombstones[uid] = None
            self._tombstones.move_to_end(uid)
            while len(self._tombstones) > _TOMBSTONES:
                self._tombstones.popitem(last=False)

    # -- the scheduling worker --------------------------------------------------------------
    def pop(self, timeout: float | None = None) -> QueuedPodInfo[P] | None:
        """The next pod to schedule; blocks until there is one, ``timeout`` (real seconds)
        passes or the queue is closed (then ``None``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            # The previous cycle is over: its group's late members are not left waiting even
            # when that cycle requeued nothing (a group gone since its pop, a skipped pod).
            if self._cycle_group is not None:
                self._end_group_cycle_locked()
            while True:
                if self._closed:
                    return None
                qpi = self._take_next_locked()
                if qpi is not None:
                    break
                if self._woken:
                    self._woken = False
                    return None
                if deadline is None:
                    self._cond.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            self._start_attempt_locked(qpi)
            return qpi

    def take(self, uids: Iterable[str]) -> list[QueuedPodInfo[P]]:
        """Pop these pods too, wherever they wait but in flight or gated (a member held only
        because of a sibling is taken once its PreEnqueue passes): the other members of a
        pod group popped with the first (upstream queues a group as one entity). When the
        first came from backoffQ, those taken from there enter activeQ as PopFromBackoffQ
        too (upstream's entity counts its size)."""
        taken: list[QueuedPodInfo[P]] = []
        with self._lock:
            for uid in uids:
                if uid in self._in_flight:
                    continue
                qpi = self._active.get(uid)
                if qpi is None:
                    qpi = self._backoff.get(uid)
                    if qpi is not None and self._cycle_from_backoff:
                        self._record_locked(POP_FROM_BACKOFF_Q, qpi, ACTIVE, False)
                entry = self._pool.get(uid) if qpi is None else None
                if entry is not None and (
                    not entry.qpi.gated or self._passes_pre_enqueue_locked(entry.qpi)
                ):
                    qpi = entry.qpi
                if qpi is None:
                    continue
                self._active.delete(uid)
                self._backoff.delete(uid)
                self._drop_from_pool_locked(uid)
                self._start_attempt_locked(qpi)
                taken.append(qpi)
        return taken

    def _start_attempt_locked(self, qpi: QueuedPodInfo[P]) -> None:
        """``qpi`` popped or taken, never while in flight (both skip those): its attempt
        begins, last of the in-flight pods."""
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock()
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        pod = qpi.pod
        self._in_flight[pod.uid] = _InFlight(self._next_seq, pod)

    def wake(self) -> None:
        """The popping thread has other work (the scheduler's inbox): a ``pop`` waiting for a
        pod, or the next one to find none, returns ``None`` at once."""
        with self._lock:
            self._woken = True
            self._cond.notify_all()

    def done(self, uid: str) -> None:
        """The attempt of ``uid`` is over (bound, or handed back): stop logging events for it."""
        with self._lock:
            self._done_locked(uid)

    def add_unschedulable_if_not_present(
        self, qpi: QueuedPodInfo[P], *, error: bool = False
    ) -> bool:
        """The failure path: requeue a popped pod after a failed attempt; ``done`` included.

        ``qpi.unschedulable_plugins``/``pending_plugins`` name the plugins that rejected the
        pod; ``error=True`` (or both sets empty) means the attempt ended in an error. Returns
        ``False`` when the pod was not requeued: it was deleted or bound meanwhile, or it is
        already queued.
        """
        uid = qpi.uid
        with self._lock:
            if not self._still_pending_locked(qpi):
                return False
            record = self._in_flight.get(uid)
            if error:
                qpi.unschedulable_plugins.clear()
                qpi.pending_plugins.clear()
            if not qpi.unschedulable_plugins and not qpi.pending_plugins:
                qpi.consecutive_errors += 1
            else:
                qpi.unschedulable_count += 1
                qpi.consecutive_errors = 0
            qpi.timestamp = self._clock()
            qpi.backoff_expiration = None
            if record is None or (not qpi.unschedulable_plugins and not qpi.pending_plugins):
                # An error is retried after its backoff; so is an attempt we did not track
                # (upstream: no in-flight record means queueAfterBackoff).
                return self._finish_requeue_locked(qpi, Strategy.AFTER_BACKOFF,
                                                   Strategy.AFTER_BACKOFF)
            candidate = _Candidate(
                qpi=qpi,
                token=-1,
                pod=record.pod,
                unschedulable=frozenset(qpi.unschedulable_plugins),
                pending=frozenset(qpi.pending_plugins),
            )
            events = self._events_since_locked(record.start_seq)
            seen = self._next_seq

        strategy = Strategy.SKIP
        while True:
            strategy = self._replay(candidate, events, strategy)
            with self._lock:
                if record.deleted:
                    self._done_locked(uid)
                    return False
                settled = strategy is Strategy.IMMEDIATELY or (
                    strategy is Strategy.AFTER_BACKOFF and not candidate.pending
                )
                if settled or self._next_seq == seen or self._in_flight.get(uid) is not record:
                    qpi.pod = record.pod
                    return self._finish_requeue_locked(qpi, strategy, strategy)
                events = self._events_since_locked(seen)
                seen = self._next_seq

    def add_placed_group_leftovers(self, members: Sequence[QueuedPodInfo[P]]) -> int:
        """The end of a pod-group cycle that placed its group: upstream's
        AddAttemptedPodGroupIfNeeded with Success. ``members`` are the ones that did not
        fit, failed, or that a Permit plugin rejected: they go to activeQ at once, not after
        a backoff nor an event, with the timestamp they were queued with and their counts
        reset, so that their next cycle (and their group's preemption) comes first among its
        equals; PreEnqueue may still hold them. As upstream, a member a Permit plugin keeps
        rejecting is thus retried without pause. The members that came during the cycle
        join them (or go to activeQ with a new timestamp when none is left over). ``done``
        included; returns how many of ``members`` were requeued (not those deleted or bound
        meanwhile, nor already queued)."""
        with self._lock:
            live = [qpi for qpi in members if self._still_pending_locked(qpi)]
            seen: set[tuple[Hashable, str]] = set()
            for qpi in self._held_first_locked(live):
                qpi.unschedulable_count = 0
                qpi.consecutive_errors = 0
                qpi.backoff_expiration = None
                self._finish_requeue_locked(qpi, Strategy.IMMEDIATELY, None, seen)
            self._end_group_cycle_locked()
            return len(live)

    def add_failed_group(self, members: Sequence[QueuedPodInfo[P]], *, error: bool) -> int:
        """The end of a pod-group cycle that failed: upstream's AddAttemptedPodGroupIfNeeded
        without success, which requeues the group entity to its backoffQ whatever the events
        of the cycle (to activeQ when backoff is off; to the pool, gated, when a PreEnqueue
        check holds it). Here the members go together: one timestamp, one count, one
        expiry, with the group's backoff (its cap times the square root of the members
        requeued), the members that came during the cycle with them. The group's counts
        live on its members, which share them (a member joining its queued group takes
        them): each gets the group's, those of the members popped (deleted ones too), plus
        this failure (``error``: the consecutive errors, else the unschedulable count, the
        errors then reset). ``done`` included; returns how many of ``members`` were
        requeued (not those deleted or bound meanwhile, nor already queued)."""
        with self._lock:
            live = [qpi for qpi in members if self._still_pending_locked(qpi)]
            _, late = self._close_group_cycle_locked()
            group = live + late
            if not group:
                return 0
            # The group's counts: its popped members', deleted ones too (a member that
            # joined the group took them), else the late members' own.
            counted = members or late
            unschedulable = max(qpi.unschedulable_count for qpi in counted)
            errors = max(qpi.consecutive_errors for qpi in counted) + 1 if error else 0
            if not error:
                unschedulable += 1
            now = self._clock()
            for qpi in late:  # the group's rejectors, as upstream's entity has them
                qpi.unschedulable_plugins = set().union(*(q.unschedulable_plugins for q in live))
                qpi.pending_plugins = set().union(*(q.pending_plugins for q in live))
            for qpi in group:
                qpi.unschedulable_count, qpi.consecutive_errors = unschedulable, errors
                qpi.timestamp = now
                if error:
                    qpi.unschedulable_plugins.clear()
                    qpi.pending_plugins.clear()
            duration = self.backoff_duration(group[0], len(group))
            seen: set[tuple[Hashable, str]] = set()
            for qpi in self._held_first_locked(group):
                qpi.backoff_expiration = float(math.floor(now + duration))
                self._finish_requeue_locked(qpi, Strategy.AFTER_BACKOFF, None, seen)
            return len(live)

    def add_unschedulable_group_member(self, qpi: QueuedPodInfo[P], *, error: bool) -> bool:
        """The failure path of a pod-group member whose binding cycle failed: upstream's
        AddUnschedulableIfNotPresent for a member (addPodGroupMember), without hints nor a
        backoff of its own. While its group's cycle runs it waits for the cycle's end and
        is requeued with the group (upstream's pendingPodGroupPods); otherwise it joins its
        group where a sibling is queued, taking the group's counts, time and expiry
        (upstream adds it to the queued entity), else goes to activeQ with the counts of a
        new entity (the pool, gated, when PreEnqueue holds it). A pod of no group
        (``group_of``) takes the pod's path. ``done`` included; False when it was deleted or
        bound meanwhile, or is already queued."""
        key = self._group_key(qpi.pod)
        if key is None:
            return self.add_unschedulable_if_not_present(qpi, error=error)
        with self._lock:
            if not self._still_pending_locked(qpi):
                return False
            if error:
                qpi.unschedulable_plugins.clear()
                qpi.pending_plugins.clear()
            self._done_locked(qpi.uid)
            if key == self._cycle_group:
                self._pending[qpi.uid] = qpi
                return True
            sibling = self._queued_sibling_locked(key, qpi.uid)
            # As upstream's addPodGroupMember: an UnscheduledPodAdd.
            self._notify_if(self._join_group_locked(qpi, sibling, UNSCHEDULED_POD_ADD))
            return True

    def _held_first_locked(self, members: Sequence[QueuedPodInfo[P]]) -> list[QueuedPodInfo[P]]:
        """A group's members to requeue, those a PreEnqueue check of their own holds first:
        the others then find the group held and wait in the pool with them, as upstream's
        entity goes there whole when one member is gated."""
        if self._pre_enqueue is None or len(members) < 2:
            return list(members)
        return sorted(members, key=lambda qpi: self._own_gate_locked(qpi) is None)

    def _end_group_cycle_locked(self) -> None:
        """The cycle of the group last popped is over: the members that came meanwhile join
        it where it was requeued, or go to activeQ as a new entity (upstream's
        AddAttemptedPodGroupIfNeeded with the pending pods)."""
        key, late = self._close_group_cycle_locked()
        if not late or key is None:
            return
        sibling = self._queued_sibling_locked(key, "")
        for qpi in late:
            # Upstream requeues them within the group's entity, counted once: not whole.
            self._notify_if(self._join_group_locked(
                qpi, sibling, SCHEDULE_ATTEMPT_FAILURE, whole=False))
            sibling = sibling or qpi

    def _close_group_cycle_locked(self) -> tuple[Hashable | None, list[QueuedPodInfo[P]]]:
        """The group last popped, no longer in its cycle, and the members that came meanwhile
        (taken out of the pending members)."""
        key, self._cycle_group = self._cycle_group, None
        self._cycle_from_backoff = False
        late = list(self._pending.values())
        self._pending.clear()
        return key, late

    def _queued_sibling_locked(self, key: Hashable, uid: str) -> QueuedPodInfo[P] | None:
        """A member of group ``key`` other than ``uid`` waiting in activeQ, backoffQ or the
        pool (the first found: usually the first looked at)."""
        for other in self._members.get(key, ()):
            if other != uid and (queued := self._queued_locked(other)) is not None:
                return queued
        return None

    def _join_group_locked(
        self, qpi: QueuedPodInfo[P], sibling: QueuedPodInfo[P] | None, event: str,
        *, whole: bool = True,
    ) -> str:
        """Queue ``qpi`` with its group, where ``sibling`` waits, with the group's counts and
        times, as upstream's addToPodGroupIfExists requeues the entity with the strategy of
        the queue it was in: a group in backoffQ whose backoff is over goes to activeQ
        whole. To activeQ as a new entity when no sibling waits: fresh counts, the time it
        is queued (upstream's entity takes the member's timestamp, refreshed by its
        failure). Recorded as ``event``, an entity entering a queue when new or moved, with
        the group's members when ``whole`` (upstream counts the entity's Size()); returns
        where ``qpi`` went."""
        if sibling is None:
            qpi.unschedulable_count = qpi.consecutive_errors = 0
            qpi.timestamp = self._clock()
            qpi.backoff_expiration = None
            where = self._requeue_locked(qpi, Strategy.IMMEDIATELY)
            self._record_locked(event, qpi, where, True)
            return where
        _take_group_params(qpi, sibling)
        qpi.unschedulable_plugins = set(sibling.unschedulable_plugins)
        qpi.pending_plugins = set(sibling.pending_plugins)
        if sibling.uid in self._active:
            previous, where = ACTIVE, self._requeue_locked(qpi, Strategy.IMMEDIATELY)
        elif sibling.uid in self._pool:
            self._add_to_pool_locked(qpi)
            previous = where = UNSCHEDULABLE
        elif self.is_backing_off(sibling):
            previous = BACKOFF
            where = BACKOFF if self._move_to_backoff_locked(qpi) else UNSCHEDULABLE
        else:  # the members moved are recorded there
            previous, where = BACKOFF, self._group_out_of_backoff_locked(qpi, sibling, event)
            whole = False
        if qpi.gated and previous != UNSCHEDULABLE:  # it holds its group
            self._hold_siblings_locked(self._member_of.get(qpi.uid), qpi.gating_plugin)
        self._record_locked(event, qpi, where, where != previous, joined=whole)
        return where

    def _group_out_of_backoff_locked(
        self, qpi: QueuedPodInfo[P], sibling: QueuedPodInfo[P], event: str
    ) -> str:
        """``qpi`` joins a group waiting in backoffQ past its backoff: every member there
        goes to activeQ with it (PreEnqueue checked again: all to the pool when it holds
        one). Returns where ``qpi`` went."""
        key = self._member_of.get(sibling.uid)
        waiting = [
            queued for uid in self._members.get(key, ()) if uid != qpi.uid
            and (queued := self._backoff.get(uid) or self._error_backoff.get(uid)) is not None
        ]
        where = UNSCHEDULABLE
        for member in self._held_first_locked([qpi, *waiting]):
            self._backoff.delete(member.uid)
            self._error_backoff.delete(member.uid)
            went = ACTIVE if self._move_to_active_locked(member, from_backoff=False) else (
                UNSCHEDULABLE)
            if member is qpi:
                where = went
            else:
                self._record_locked(event, member, went, False)
        return where

    def _still_pending_locked(self, qpi: QueuedPodInfo[P]) -> bool:
        """Whether a popped pod is to be requeued: not deleted or bound meanwhile, nor queued
        again; ``done`` when not. When it is, ``qpi`` carries the watch's newest version of
        the pod, which every requeue queues."""
        uid = qpi.uid
        record = self._in_flight.get(uid)
        gone = record.deleted if record is not None else uid in self._tombstones
        if gone or self._is_queued_locked(uid):
            self._done_locked(uid)
            return False
        if record is not None:
            qpi.pod = record.pod
        return True

    # -- events -----------------------------------------------------------------------------
    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Whether any plugin registered an event matching ``event`` (wildcards always are)."""
        return is_wildcard(event) or any(event.matches(r) for r in self._registered)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object = None,
        new: object = None,
        pre_check: Callable[[P], bool] | None = None,
    ) -> None:
        """A cluster event: move the pooled pods it may make schedulable (``pre_check``, a
        cheap function of the pod called under the lock, narrows the candidates) and log it
        for the pods being scheduled."""
        if not self.is_event_of_interest(event):
            return
        interested = self._interested_plugins(event)
        wildcard = is_wildcard(event)
        keyed = event_keys(self._indexes_for(event), old, new)
        with self._lock:
            self._log_event_locked(event, old, new)
            allowed = {index: self._pool_index.uids(index, keys)
                       for index, keys in keyed.items() if keys is not None}
            candidates = [
                self._candidate_locked(entry)
                for entry in self._pool.values()
                if self._may_move(entry.qpi, wildcard, interested)
                and (pre_check is None or pre_check(entry.qpi.pod))
            ]

        decisions: list[tuple[_Candidate[P], Strategy]] = []
        for candidate in candidates:
            strategy = self._worth_requeuing(candidate, event, old, new, allowed)
            if strategy is not Strategy.SKIP:
                decisions.append((candidate, strategy))
        if not decisions:
            return
        with self._lock:
            self._move_decided_locked(decisions, str(event))

    def _move_decided_locked(
        self, decisions: list[tuple[_Candidate[P], Strategy]], event: str
    ) -> None:
        """Move pooled pods by the strategies an event's hints gave them, recorded as
        ``event``. A pod group's members move as one, as upstream's entity: each by the
        best strategy of any of them (isEntityWorthRequeuing), those still in the pool that
        the hints left there with them."""
        if self._members:
            decisions = self._with_pooled_siblings_locked(decisions)
        moved = [self._move_from_pool_locked(c, s) for c, s in decisions]
        seen: set[tuple[Hashable, str]] = set()
        for (c, s), where in zip(decisions, moved, strict=True):
            self._record_locked(event, c.qpi, where, _moved(where, s), seen)
        self._notify_if(*moved)

    def _with_queued_siblings_locked(self, uids: Iterable[str]) -> list[str]:
        """``uids`` and the group siblings of theirs waiting in the pool or backoffQ."""
        named = list(uids)
        found = set(named)
        for uid in list(named):
            key = self._member_of.get(uid)
            for other in self._members.get(key, ()) if key is not None else ():
                if other not in found and (other in self._pool or other in self._backoff
                                           or other in self._error_backoff):
                    found.add(other)
                    named.append(other)
        return named

    def _with_pooled_siblings_locked(
        self, decisions: list[tuple[_Candidate[P], Strategy]]
    ) -> list[tuple[_Candidate[P], Strategy]]:
        """``decisions`` with each group member's strategy raised to its group's best, and
        its siblings waiting in the pool added with that strategy."""
        best: dict[Hashable, Strategy] = {}
        for c, strategy in decisions:
            key = self._member_of.get(c.qpi.uid)
            if key is not None and strategy > best.get(key, Strategy.SKIP):
                best[key] = strategy
        if not best:
            return decisions
        decided = {c.qpi.uid for c, _ in decisions}
        grouped = [(c, best.get(self._member_of.get(c.qpi.uid), s)) for c, s in decisions]
        for key, strategy in best.items():
            for uid in self._members.get(key, ()):
                entry = self._pool.get(uid)
                if entry is not None and uid not in decided:
                    grouped.append((self._candidate_locked(entry), strategy))
        return grouped

    def activate(self, uids: Iterable[str]) -> None:
        """Force pods from the pool or backoffQ to activeQ (preemption, Permit). A pod being
        scheduled gets a targeted ForceActivate event: it will not be parked when it fails.
        A pod group's member brings its siblings waiting there, as upstream activates the
        member's group entity."""
        with self._lock:
            if self._members:
                uids = self._with_queued_siblings_locked(uids)
            moved = False
            seen: set[tuple[Hashable, str]] = set()
            for uid in uids:
                entry = self._pool.get(uid)
                if entry is not None:
                    moved |= self._forced_locked(entry.qpi, seen, from_backoff=False)
                    continue
                queued = self._backoff.get(uid) or self._error_backoff.get(uid)
                if queued is not None:
                    moved |= self._forced_locked(queued, seen, from_backoff=True)
                    continue
                record = self._in_flight.get(uid)
                if record is not None:
                    self._log_event_locked(FORCE_ACTIVATE, None, record.pod)
            if moved:
                self._cond.notify_all()

    # -- periodic flushes -------------------------------------------------------------------
    def flush_backoff_completed(self) -> None:
        """Move every pod whose backoff is over from the backoff queues to activeQ."""
        with self._lock:
            now = self._clock()
            moved = False
            seen: set[tuple[Hashable, str]] = set()
            for heap in (self._backoff, self._error_backoff):
                while (head := heap.peek()) is not None and not self.is_backing_off(head, now):
                    heap.pop()
                    moved |= self._move_to_active_locked(head, from_backoff=True)
                    self._record_locked(BACKOFF_COMPLETE, head, ACTIVE, True, seen)
            if moved:
                self._cond.notify_all()

    def flush_unschedulable_leftover(self) -> None:
        """Pods pooled longer than ``max_in_unschedulable`` move as ``UnschedulableTimeout``:
        to backoffQ while still backing off, else to activeQ. Gated pods run their PreEnqueue
        check again (a wildcard event, as upstream) and stay if it still gates them."""
        with self._lock:
            now = self._clock()
            stale = [
                e.qpi
                for e in self._pool.values()
                if now - e.qpi.timestamp > self._max_in_unschedulable
            ]
            if not stale:
                return
            self._log_event_locked(UNSCHEDULABLE_TIMEOUT, None, None)
            moved: list[str] = []
            seen: set[tuple[Hashable, str]] = set()
            for qpi in stale:
                self._drop_from_pool_locked(qpi.uid)
                where = self._requeue_locked(qpi, Strategy.AFTER_BACKOFF)
                self._record_locked(str(UNSCHEDULABLE_TIMEOUT), qpi, where,
                                    _moved(where, Strategy.AFTER_BACKOFF), seen)
                moved.append(where)
            self._notify_if(*moved)

    def run_flushers(
        self,
        stop: threading.Event,
        *,
        backoff_period: float = BACKOFF_FLUSH_PERIOD,
        leftover_period: float = LEFTOVER_FLUSH_PERIOD,
    ) -> None:
        """Flush the backoff queues every ``backoff_period`` (aligned to whole periods of the
        queue's clock) and the pool every ``leftover_period`` until ``stop`` is set. Pacing uses
        real waits; what is due is decided by the queue's clock."""
        ticks_per_leftover = max(1, round(leftover_period / backoff_period))
        tick = 0
        while not stop.is_set() and not self._closed:
            delay = backoff_period - (self._clock() % backoff_period)
            if stop.wait(delay):
                return
            tick += 1
            try:
                self.flush_backoff_completed()
                if tick % ticks_per_leftover == 0:
                    self.flush_unschedulable_leftover()
            except Exception:  # keep flushing: a broken plugin must not stall the queue
                log.exception("Scheduling queue flush failed")

    def start(self) -> None:
        """Run the flushers in a background thread until :meth:`close`."""
        with self._lock:
            if self._flusher is not None or self._closed:
                return
            self._flusher = threading.Thread(
                target=self.run_flushers, args=(self._stop,), name="queue-flushers", daemon=True
            )
        self._flusher.start()

    def close(self) -> None:
        """Wake every ``pop`` (they return ``None``) and stop the flushers."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()
            flusher = self._flusher
        self._stop.set()
        if flusher is not None and flusher is not threading.current_thread():
            flusher.join(timeout=5.0)

    # -- backoff ----------------------------------------------------------------------------
    def backoff_duration(self, qpi: QueuedPodInfo[P], size: int = 1) -> float:
        """``initial * 2**(count-1)`` capped at ``max``; 0 before any failure. For an entity
        of ``size`` pods (a pod group's members requeued together) the cap is ``max *
        sqrt(size)``, as upstream's calculateBackoffDuration."""
        count = qpi.consecutive_errors if qpi.consecutive_errors > 0 else qpi.unschedulable_count
        if count <= 0 or self._max_backoff <= 0:
            return 0.0
        cap = self._max_backoff * math.sqrt(size) if size > 1 else self._max_backoff
        shift = count - 1
        if shift >= 64:
            return cap
        return min(self._initial_backoff * 2.0**shift, cap)

    def backoff_expiry(self, qpi: QueuedPodInfo[P]) -> float | None:
        """Start of the 1 s window in which the backoff ends; ``None`` for no backoff."""
        if self._max_backoff <= 0:
            return None
        count = qpi.consecutive_errors if qpi.consecutive_errors > 0 else qpi.unschedulable_count
        if count <= 0:
            return None
        if qpi.backoff_expiration is None:
            qpi.backoff_expiration = float(math.floor(qpi.timestamp + self.backoff_duration(qpi)))
        return qpi.backoff_expiration

    def is_backing_off(self, qpi: QueuedPodInfo[P], now: float | None = None) -> bool:
        """True while the pod's expiry window is not earlier than the current one."""
        expiry = self.backoff_expiry(qpi)
        if expiry is None:
            return False
        return expiry >= math.floor(self._clock() if now is None else now)

    # -- introspection ----------------------------------------------------------------------
    def pending_pods(self) -> dict[str, list[str]]:
        """Pod keys per queue: activeQ and backoffQ in pop order, the pool sorted; with
        ``group_of``, the members waiting for their group's cycle to end, sorted."""
        with self._lock:
            pods = {
                ACTIVE: [q.key for q in self._active.ordered()],
                BACKOFF: [q.key for q in self._backoff.ordered() + self._error_backoff.ordered()],
                UNSCHEDULABLE: sorted(e.qpi.key for e in self._pool.values()),
            }
            if self._group_of is not None:
                pods[PENDING] = sorted(q.key for q in self._pending.values())
            return pods

    def pending_counts(self) -> dict[str, int]:
        """How many pods each queue holds (``scheduler_pending_pods``); gated pods apart, and
        with ``incomplete`` the members whose group is not observed yet apart from the gated
        ones, as upstream's incompletePodGroupPods; with ``group_of``, the members waiting
        for their group's cycle to end (upstream's pendingPodGroupPods)."""
        incomplete = self._incomplete
        with self._lock:
            gated = [e.qpi for e in self._pool.values() if e.qpi.gated]
            counts = {
                ACTIVE: len(self._active),
                BACKOFF: len(self._backoff) + len(self._error_backoff),
                UNSCHEDULABLE: len(self._pool) - len(gated),
                GATED: len(gated),
            }
            if incomplete is not None:
                counts[INCOMPLETE] = sum(1 for qpi in gated if incomplete(qpi.pod))
                counts[GATED] -= counts[INCOMPLETE]
            if self._group_of is not None:
                counts[PENDING] = len(self._pending)
            return counts

    def queued_entities(self) -> dict[tuple[str, str], int]:
        """(queue, type) -> entities (``scheduler_queued_entities``): a pod of no group is a
        ``pod``; the members of one group waiting in one queue are one ``podgroup``, as
        upstream queues them as one entity; members counted as ``incomplete`` are in none."""
        incomplete = self._incomplete
        counts: dict[tuple[str, str], int] = {}
        with self._lock:
            pool = [e.qpi for e in self._pool.values()]
            queues = (
                (ACTIVE, self._active.values()),
                (BACKOFF, itertools.chain(self._backoff.values(), self._error_backoff.values())),
                (UNSCHEDULABLE, (q for q in pool if not q.gated)),
                (GATED, (q for q in pool if q.gated
                         and (incomplete is None or not incomplete(q.pod)))),
            )
            for queue, members in queues:
                pods, groups = self._entities_locked(members)
                counts[(queue, POD_ENTITY)] = pods
                counts[(queue, POD_GROUP_ENTITY)] = groups
        return counts

    def _entities_locked(self, members: Iterable[QueuedPodInfo[P]]) -> tuple[int, int]:
        """Pods of no group, and distinct groups, among ``members``."""
        pods = 0
        groups: set[Hashable] = set()
        for qpi in members:
            key = self._group_key(qpi.pod)
            if key is None:
                pods += 1
            else:
                groups.add(key)
        return pods, len(groups)

    def rejections(self, profile_of: Callable[[P], str]) -> dict[tuple[str, str], int]:
        """Queued pods per (rejecting or gating plugin, profile) since their last attempt
        (``scheduler_unschedulable_pods``)."""
        counts: dict[tuple[str, str], int] = {}
        with self._lock:
            queued = itertools.chain(
                (e.qpi for e in self._pool.values()),
                self._active.values(), self._backoff.values(), self._error_backoff.values(),
            )
            for qpi in queued:
                for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
                    key = (plugin, profile_of(qpi.pod))
                    counts[key] = counts.get(key, 0) + 1
        return counts

    def get(self, uid: str) -> QueuedPodInfo[P] | None:
        """The queued pod ``uid`` (not while it is being scheduled)."""
        with self._lock:
            return self._queued_locked(uid) or self._pending.get(uid)

    def in_flight(self) -> list[str]:
        with self._lock:
            return list(self._in_flight)

    def has_ready(self) -> bool:
        """A pop would return a pod now (activeQ, or backoffQ under PopFromBackoffQ)."""
        with self._lock:
            return bool(len(self._active) or len(self._backoff))

    def __len__(self) -> int:
        with self._lock:
            return (
                len(self._active) + len(self._backoff) + len(self._error_backoff)
                + len(self._pool) + len(self._pending)
            )

    # -- internals: hints (called without the lock) -----------------------------------------
    def _worth_requeuing(
        self, c: _Candidate[P], event: ClusterEvent, old: object, new: object,
        allowed: Mapping[HintIndex, set[str]] | None = None,
    ) -> Strategy:
        """Upstream ``isPodWorthRequeuing``; ``allowed``: per hint index, the pooled pods
        its hint may answer Queue for (the others' hint is not run: it would Skip)."""
        rejectors = c.unschedulable | c.pending
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if is_wildcard(event):
            # A wildcard event carrying an object is meant for that pod only (ForceActivate).
            if new is not None and getattr(new, "uid", None) != c.pod.uid:
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        hints = self._hints.get("" if self._profile_of is None else self._profile_of(c.pod))
        if hints is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin in sorted(rejectors):
            for registered in hints.get(plugin, ()):
                if not event.matches(registered.event) or not _indexed(
                        registered, c.qpi.uid, allowed):
                    continue
                hint = self._hint(registered, c.pod, old, new, plugin=plugin, event=event)
                if hint is QueueingHint.SKIP:
                    continue
                if plugin in c.pending:
                    return Strategy.IMMEDIATELY
                if not c.pending:
                    return Strategy.AFTER_BACKOFF
                strategy = Strategy.AFTER_BACKOFF
                break
        return strategy

    def _hint(
        self,
        registered: ClusterEventWithHint,
        pod: P,
        old: object,
        new: object,
        *,
        plugin: str,
        event: ClusterEvent,
    ) -> QueueingHint:
        if registered.hint is None:
            return QueueingHint.QUEUE
        try:
            return registered.hint(pod, old, new)
        except Exception:
            log.warning("Queueing hint failed; treating it as Queue", plugin=plugin,
                        pod=pod.key, cluster_event=str(event), exc_info=True)
            return QueueingHint.QUEUE

    def _replay(
        self, c: _Candidate[P], events: Sequence[_LoggedEvent], strategy: Strategy
    ) -> Strategy:
        """Upstream ``determineSchedulingHintForInFlightPod`` over ``events``."""
        for logged in events:
            found = self._worth_requeuing(c, logged.event, logged.old, logged.new)
            if found is Strategy.IMMEDIATELY:
                return found
            if found is Strategy.AFTER_BACKOFF:
                strategy = found
                if not c.pending:
                    return strategy
        return strategy

    def _indexes_of(self, pod: P) -> tuple[HintIndex, ...]:
        """The hint indexes of the pod's profile."""
        profile = "" if self._profile_of is None else self._profile_of(pod)
        return self._profile_indexes.get(profile, ())

    def _indexes_for(self, event: ClusterEvent) -> tuple[HintIndex, ...]:
        """The hint indexes of the registrations matching ``event`` (memoised)."""
        if not self._any_index:
            return ()
        found = self._event_indexes.get(event)
        if found is None:
            found = tuple(r.index for table in self._hints.values() for regs in table.values()
                          for r in regs if r.index is not None and event.matches(r.event))
            self._event_indexes[event] = found
        return found

    def _interested_plugins(self, event: ClusterEvent) -> frozenset[str]:
        """The plugins that registered an event matching ``event`` in any profile
        (memoised)."""
        plugins = self._interest.get(event)
        if plugins is None:
            plugins = frozenset(
                plugin
                for table in self._hints.values()
                for plugin, regs in table.items()
                if any(event.matches(r.event) for r in regs)
            )
            self._interest[event] = plugins
        return plugins

    def _may_move(
        self, qpi: QueuedPodInfo[P], wildcard: bool, interested: frozenset[str]
    ) -> bool:
        """Cheap pre-filter: can ``event`` move this pooled pod at all? (No plugin code.)
        A group member it leaves held may have to be counted as entering the pool now."""
        if qpi.gated and not wildcard and qpi.gating_plugin not in interested:
            # A gated pod moves only on events its gating plugin registered, or on a
            # wildcard event (upstream re-evaluates every pod then, so none is stuck).
            if self._uncounted:  # only members of groups are
                self._count_arrived_locked(qpi)
            return False
        if wildcard or not (qpi.unschedulable_plugins or qpi.pending_plugins):
            return True
        return not (
            interested.isdisjoint(qpi.unschedulable_plugins)
            and interested.isdisjoint(qpi.pending_plugins)
        )

    # -- internals: state (lock held) -------------------------------------------------------
    def _backoff_order(self, qpi: QueuedPodInfo[P]) -> tuple[float, Any]:
        return self._expiry_key(qpi), self._order(qpi)

    def _expiry_key(self, qpi: QueuedPodInfo[P]) -> float:
        expiry = self.backoff_expiry(qpi)
        return -math.inf if expiry is None else expiry

    def _is_queued_locked(self, uid: str) -> bool:
        return (
            uid in self._pool
            or uid in self._active
            or uid in self._backoff
            or uid in self._error_backoff
            or uid in self._pending
        )

    def _queued_locked(self, uid: str) -> QueuedPodInfo[P] | None:
        """The pod ``uid`` in activeQ, backoffQ or the pool."""
        entry = self._pool.get(uid)
        if entry is not None:
            return entry.qpi
        return self._active.get(uid) or self._backoff.get(uid) or self._error_backoff.get(uid)

    def _group_key(self, pod: P) -> Hashable | None:
        """The key of the pod's group whose members wait as one (``group_of``), or None."""
        return None if self._group_of is None else self._group_of(pod)

    def _take_next_locked(self) -> QueuedPodInfo[P] | None:
        for heap in (self._active, self._backoff):  # never the error backoffQ
            while len(heap):
                qpi = heap.pop()
                uid = qpi.pod.uid
                if uid in self._in_flight:
                    log.error("Pod queued while being scheduled; dropping the copy",
                              pod=qpi.key)
                    continue
                # Every queued member's group is noted (PreEnqueue ran as it came): no call
                # of ``group_of`` per pod, nothing at all without groups.
                key = self._member_of.get(uid) if self._member_of else None
                if key is not None:
                    if self._held_by_group_locked(qpi, key):
                        continue
                    self._cycle_group = key  # None since pop began
                if heap is self._backoff:  # activeQ was empty (PopFromBackoffQ)
                    self._record_locked(POP_FROM_BACKOFF_Q, qpi, ACTIVE, True)
                    self._cycle_from_backoff = key is not None
                return qpi
        return None

    def _held_by_group_locked(self, qpi: QueuedPodInfo[P], key: Hashable) -> bool:
        """A member queued before a sibling was held: it joins the held group in the pool
        (upstream's group entity moves to unschedulableEntities as gated)."""
        gate = self._group_gate_locked(qpi, key)
        if not gate:
            return False
        self._hold_locked(qpi, gate)
        self._hold_siblings_locked(key, gate)
        return True

    def _release_held_siblings_locked(self, key: Hashable, event: str) -> None:
        """The members of group ``key`` held in the pool go to activeQ if their checks pass
        now, recorded as ``event``."""
        for uid in list(self._members.get(key, ())):
            entry = self._pool.get(uid)
            if entry is not None and entry.qpi.gated:
                self._drop_from_pool_locked(uid)
                went = self._requeue_locked(entry.qpi, Strategy.IMMEDIATELY)
                self._record_locked(event, entry.qpi, went, False)

    def _hold_locked(self, qpi: QueuedPodInfo[P], gate: str) -> None:
        qpi.gated = True
        qpi.gating_plugin = gate
        qpi.unschedulable_plugins.add(gate)
        self._add_to_pool_locked(qpi)

    def _hold_siblings_locked(self, key: Hashable, gate: str) -> bool:
        """A member of group ``key`` is held by ``gate``: the members waiting in activeQ or
        backoffQ join it in the pool, held too, as upstream's entity is gated whole when one
        member is (runPreEnqueuePlugins). Whether any moved."""
        held = False
        for uid in self._members.get(key, ()):
            for heap in (self._active, self._backoff, self._error_backoff):
                queued = heap.get(uid)
                if queued is not None:
                    heap.delete(uid)
                    self._hold_locked(queued, gate)
                    held = True
        return held

    def _candidate_locked(self, entry: _PoolEntry[P]) -> _Candidate[P]:
        qpi = entry.qpi
        return _Candidate(
            qpi=qpi,
            token=entry.token,
            pod=qpi.pod,
            unschedulable=frozenset(qpi.unschedulable_plugins),
            pending=frozenset(qpi.pending_plugins),
        )

    def _log_event_locked(self, event: ClusterEvent, old: object, new: object) -> None:
        if self._in_flight:
            self._events.append(_LoggedEvent(self._next_seq, event, old, new))
            self._next_seq += 1

    def _events_since_locked(self, seq: int) -> list[_LoggedEvent]:
        if not self._events:
            return []
        skip = max(0, seq - self._events[0].seq)
        return list(itertools.islice(self._events, skip, None))

    def _done_locked(self, uid: str) -> None:
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._events.clear()
            return
        oldest = next(iter(self._in_flight.values())).start_seq
        while self._events and self._events[0].seq < oldest:
            self._events.popleft()

    def _add_new_locked(self, pod: P) -> None:
        """A new pod to activeQ (the pool while PreEnqueue holds it). A member whose group
        waits, not held, joins it there with its counts and times, as upstream's
        addToPodGroupIfExists adds it to the queued entity: in backoffQ or the pool its pop
        would take the others out early, and the group's next failed cycle raises the
        group's count, not a new member's. A held group is not joined: the newcomer may be
        what held it (its scheduling gates, kept out of the queue), and its pop takes the
        others once their checks pass; it still takes the group's counts and times, which
        upstream's entity keeps when a member is added."""
        qpi: QueuedPodInfo[P] = QueuedPodInfo(pod=pod, timestamp=self._clock())
        active = self._move_to_active_locked(qpi, from_backoff=False)
        where = ACTIVE if active else UNSCHEDULABLE
        key = self._member_of.get(pod.uid) if self._member_of else None
        sibling = None if key is None else self._queued_sibling_locked(key, pod.uid)
        if active and sibling is not None and not sibling.gated:
            self._active.delete(pod.uid)
            where = self._join_group_locked(qpi, sibling, UNSCHEDULED_POD_ADD)
        elif active and sibling is not None:
            # What held its group passes now (the newcomer was it, or was checked with it):
            # the group goes to activeQ with it, as upstream's entity when ungated. Counted
            # as upstream: it joins the entity in unschedulableEntities, then the
            # UnscheduledPodAdd event moves the entity to activeQ.
            _take_group_params(qpi, sibling)
            self._record_locked(UNSCHEDULED_POD_ADD, qpi, UNSCHEDULABLE, False, joined=True)
            self._active.add_or_update(qpi)
            self._release_held_siblings_locked(key, UNSCHEDULED_POD_ADD)
            self._record_locked(UNSCHEDULED_POD_ADD, qpi, where, True)
        else:  # a member is a new entity unless a sibling waits and its group stays put
            new_entity = sibling is None
            if sibling is not None:  # held with it: one group, one timestamp and count
                _take_group_params(qpi, sibling)
                if not active:
                    new_entity = self._hold_siblings_locked(key, qpi.gating_plugin)
            self._record_locked(UNSCHEDULED_POD_ADD, qpi, where, new_entity,
                                joined=sibling is not None)
        if not qpi.gated:
            self.nominator.add(pod)
        self._notify_if(where)

    def _add_to_pool_locked(self, qpi: QueuedPodInfo[P]) -> None:
        self._pool[qpi.uid] = _PoolEntry(qpi, next(self._pool_tokens))
        if self._any_index:
            self._pool_index.add(qpi.uid, qpi.pod)

    def _drop_from_pool_locked(self, uid: str) -> None:
        if self._pool.pop(uid, None) is not None and self._any_index:
            self._pool_index.remove(uid)

    def _passes_pre_enqueue_locked(self, qpi: QueuedPodInfo[P]) -> bool:
        """The PreEnqueue checks; a pod-group member passes only when none of its group's
        members is held by one (upstream runs PreEnqueue per member of the group entity,
        and one gated member gates the entity)."""
        key = self._group_key(qpi.pod)
        gate = self._own_gate_locked(qpi)
        if key is not None:
            self._note_member_locked(qpi.uid, key)
        self._note_member_gate_locked(qpi, gate, key)
        if not gate and key is not None:
            gate = self._group_gate_locked(qpi, key)
        if gate:
            qpi.gated = True
            qpi.gating_plugin = gate
            qpi.unschedulable_plugins.add(gate)
            return False
        qpi.gated = False
        qpi.gating_plugin = ""
        return True

    def _own_gate_locked(self, qpi: QueuedPodInfo[P]) -> str | None:
        if self._pre_enqueue is None:
            return None
        try:
            return self._pre_enqueue(qpi.pod)
        except Exception:
            log.exception("PreEnqueue failed; not gating the pod", pod=qpi.key)
            return None

    def _note_member_gate_locked(
        self, qpi: QueuedPodInfo[P], gate: str | None, key: Hashable | None
    ) -> None:
        uid = qpi.uid
        if gate and key is not None:
            self._gated_members.setdefault(key, {})[uid] = gate
            self._gated_group[uid] = key
        elif uid in self._gated_group:
            self._forget_member_gate_locked(uid)

    def _note_member_locked(self, uid: str, key: Hashable) -> None:
        if self._member_of.get(uid) != key:
            self._member_of[uid] = key
            self._members.setdefault(key, set()).add(uid)

    def _forget_member_locked(self, uid: str) -> None:
        key = self._member_of.pop(uid, None)
        if key is None:
            return
        members = self._members[key]
        members.discard(uid)
        if not members:
            del self._members[key]

    def _forget_member_gate_locked(self, uid: str) -> None:
        key = self._gated_group.pop(uid, None)
        if key is None:
            return
        members = self._gated_members[key]
        del members[uid]
        if not members:
            del self._gated_members[key]

    def _group_gate_locked(self, qpi: QueuedPodInfo[P], key: Hashable) -> str | None:
        """What holds another member of group ``key``, the pod's, if anything does."""
        if self._group_gate is not None and (outside := self._group_gate(qpi.pod)):
            return outside
        members = self._gated_members.get(key)
        for uid, gate in list(members.items()) if members else ():
            if uid == qpi.uid:
                continue
            entry = self._pool.get(uid)
            if entry is None:  # left the pool without a check (taken, deleted)
                self._forget_member_gate_locked(uid)
                continue
            # Checked again: a shared check (the group's quorum) may pass now without an
            # event having reached that member. It then leaves the index and waits to be
            # taken with the group (``take`` checks it once more).
            if self._own_gate_locked(entry.qpi) is None:
                self._forget_member_gate_locked(uid)
                continue
            return gate
        return None

    def _move_to_active_locked(self, qpi: QueuedPodInfo[P], *, from_backoff: bool) -> bool:
        """Upstream ``moveToActiveQ``. With PopFromBackoffQ, PreEnqueue ran when the pod
        entered backoffQ, so a pod coming from there skips it."""
        uid = qpi.uid
        if not from_backoff and not self._passes_pre_enqueue_locked(qpi):
            if uid not in self._active and uid not in self._backoff:
                self._add_to_pool_locked(qpi)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock()
        self._drop_from_pool_locked(uid)
        self._backoff.delete(uid)
        self._error_backoff.delete(uid)
        self._active.add_or_update(qpi)
        return True

    def _move_to_backoff_locked(self, qpi: QueuedPodInfo[P]) -> bool:
        uid = qpi.uid
        if not self._passes_pre_enqueue_locked(qpi):
            self._add_to_pool_locked(qpi)
            return False
        self._drop_from_pool_locked(uid)
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            self._backoff.delete(uid)
            self._error_backoff.add_or_update(qpi)
        else:
            self._error_backoff.delete(uid)
            self._backoff.add_or_update(qpi)
        return True

    def _requeue_locked(self, qpi: QueuedPodInfo[P], strategy: Strategy) -> str:
        """Upstream ``requeuePodWithQueueingStrategy``; returns where the pod went."""
        if strategy is Strategy.SKIP:
            self._add_to_pool_locked(qpi)
            return UNSCHEDULABLE
        if strategy is Strategy.AFTER_BACKOFF and self.is_backing_off(qpi):
            return BACKOFF if self._move_to_backoff_locked(qpi) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active_locked(qpi, from_backoff=False) else UNSCHEDULABLE

    def _move_from_pool_locked(self, c: _Candidate[P], strategy: Strategy) -> str | None:
        entry = self._pool.get(c.qpi.uid)
        if entry is None or entry.token != c.token:
            return None  # moved (and maybe retried) since the snapshot
        self._drop_from_pool_locked(c.qpi.uid)
        return self._requeue_locked(entry.qpi, strategy)

    def _finish_requeue_locked(
        self, qpi: QueuedPodInfo[P], strategy: Strategy, hint: Strategy | None,
        seen: set[tuple[Hashable, str]] | None = None,
    ) -> bool:
        """Requeue a popped pod by ``strategy``; ``hint`` is the queueing hint it came with
        (upstream's previous strategy for the entity count), None when it is requeued as a
        new entity, its group's once (``seen``)."""
        where = self._requeue_locked(qpi, strategy)
        self._record_locked(SCHEDULE_ATTEMPT_FAILURE, qpi, where, _moved(where, hint), seen)
        self._done_locked(qpi.uid)
        self._notify_if(where)
        return True

    def _forced_locked(
        self, qpi: QueuedPodInfo[P], seen: set[tuple[Hashable, str]], *, from_backoff: bool
    ) -> bool:
        moved = self._move_to_active_locked(qpi, from_backoff=from_backoff)
        if moved:
            self._record_locked(str(FORCE_ACTIVATE), qpi, ACTIVE, True, seen)
        return moved

    def _record_locked(
        self, event: str, qpi: QueuedPodInfo[P], where: str | None, new_entity: bool,
        seen: set[tuple[Hashable, str]] | None = None, *, joined: bool = False,
    ) -> None:
        """``qpi`` entered ``where`` (None: nowhere): upstream's recordIncomingEntitiesMetrics.
        When ``new_entity``, it counts as an entity entering that queue: a pod of no group
        always, a group member once per group and queue among the entries that share
        ``seen`` (the members a call moves together). When ``joined``, ``qpi`` joined its
        queued group, and the group's other counted members enter ``where`` with it:
        upstream's addToPodGroupIfExists requeues the entity, whose Size() is counted."""
        if where is None:
            return
        key = self._member_of.get(qpi.uid) if self._member_of else None
        if key is None:
            self._on_incoming(where, event, POD_ENTITY if new_entity else "")
            return
        if self._incomplete is not None and qpi.gated and self._incomplete(qpi.pod):
            self._uncounted.add(qpi.uid)  # in no queue yet
            return
        if self._uncounted and qpi.uid in self._uncounted:  # its PodGroup came
            self._record_arrived_locked(qpi, key, where)
            if where != UNSCHEDULABLE or event == UNSCHEDULED_POD_ADD:
                return
            # Held still: upstream's MoveAllToActiveOrBackoffQueue after AddPodGroup moves
            # the entity out of unschedulableEntities and back, counted as this event.
        others = self._counted_siblings_locked(key, qpi.uid) if joined else 0
        entity = ""
        if new_entity and (seen is None or (key, where) not in seen):
            entity = POD_GROUP_ENTITY
            if seen is not None:
                seen.add((key, where))
        self._on_incoming(where, event, entity)
        for _ in range(others):
            self._on_incoming(where, event, "")

    def _record_arrived_locked(self, qpi: QueuedPodInfo[P], key: Hashable, where: str) -> None:
        """``qpi``, held uncounted while its PodGroup was not observed, is counted now that it
        is, as upstream's AddPodGroup adds it (addPodGroupMember): an UnscheduledPodAdd
        that makes its group's entity, or joins the one an earlier member made and is
        counted with it (entity.Size())."""
        self._uncounted.discard(qpi.uid)
        others = self._counted_siblings_locked(key, qpi.uid)
        self._on_incoming(where, UNSCHEDULED_POD_ADD, "" if others else POD_GROUP_ENTITY)
        for _ in range(others):
            self._on_incoming(where, UNSCHEDULED_POD_ADD, "")

    def _counted_siblings_locked(self, key: Hashable, uid: str) -> int:
        """How many members of group ``key`` but ``uid`` wait in activeQ, backoffQ or the
        pool, counted as having entered it: with ``uid``, upstream's entity."""
        return sum(1 for other in self._members.get(key, ()) if other != uid
                   and other not in self._uncounted and self._queued_locked(other) is not None)

    def _count_arrived_locked(self, qpi: QueuedPodInfo[P]) -> None:
        """``qpi`` stays in the pool, held by a plugin the event does not interest: if it was
        held uncounted while its PodGroup was not observed and the PodGroup is now, it enters
        the pool (upstream's AddPodGroup adds it whatever PreEnqueue plugin holds it)."""
        if (qpi.uid in self._uncounted and self._incomplete is not None
                and not self._incomplete(qpi.pod)):
            self._record_locked(UNSCHEDULED_POD_ADD, qpi, UNSCHEDULABLE, True)

    def _notify_if(self, *where: str | None) -> None:
        # A pod in backoffQ can be popped too (PopFromBackoffQ), so both wake the worker.
        if ACTIVE in where or BACKOFF in where:
            self._cond.notify_all()


def _take_group_params(qpi: QueuedPodInfo[P], sibling: QueuedPodInfo[P]) -> None:
    """``qpi`` joins the group of ``sibling``: the group's counts, timestamp and expiry, as
    upstream's entity keeps its own QueueingParams when a member is added."""
    qpi.unschedulable_count = sibling.unschedulable_count
    qpi.consecutive_errors = sibling.consecutive_errors
    qpi.timestamp = sibling.timestamp
    qpi.backoff_expiration = sibling.backoff_expiration


def _ignore_incoming(queue: str, event: str, entity: str) -> None:
    return None


# Where upstream's recordIncomingEntitiesMetrics takes an entity requeued by a strategy to be.
_STRATEGY_QUEUE = {
    Strategy.IMMEDIATELY: ACTIVE, Strategy.AFTER_BACKOFF: BACKOFF, Strategy.SKIP: UNSCHEDULABLE,
}


def _moved(where: str | None, previous: Strategy | None) -> bool:
    """Whether an entity requeued with the ``previous`` strategy counts as entering ``where``
    (upstream's recordIncomingEntitiesMetrics): a new one (None), or one that went to another
    queue than its strategy's."""
    return previous is None or where != _STRATEGY_QUEUE[previous]
