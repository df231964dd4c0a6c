"""The threads that run binding cycles, woken one at a time, and the batch that feeds them.

A released batch of binding cycles wakes one idle thread. A thread that takes a cycle while
more wait wakes the next, but never while a woken thread has not yet taken one. Quick cycles
(nothing to wait for) then run back to back on one or two threads, and the scheduling thread
is interrupted for the GIL about twice per batch rather than once per cycle. Slow ones, waiting
on the API server with the GIL released, still fan out over a thread each: every thread wakes
the next as soon as it has taken its cycle, up to the pool's size.

A ThreadPoolExecutor wakes one thread per submitted item; with sixteen quick binding cycles per
batch that cost more than the cycles themselves (bench/run.py, replicaset-pods-5000x50000).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("scheduler.binding")

Work = tuple[Callable[..., None], tuple[Any, ...]]

# While more pods are ready to schedule, binding cycles go to the binding threads together:
# up to this many, held at most this long. Each hand-off wakes a binding thread, which then
# contends with the scheduling thread for the GIL; one wake per pod cost a quarter of the
# scheduling thread's time at 5,000 nodes (bench/run.py, replicaset-pods-5000x50000). A batch
# wakes one thread, and more only as cycles wait on the API server (BindingWorkers). 64 pods
# or 20 ms, against 16 or 5 ms, took the binding threads 12 us less a pod there (seven runs
# each, interleaved). Only a backlog is held: with no pod ready, bindings leave at once. Nor
# is anything held while scheduling cycles take longer than the hold: the next cycle would
# come too late to join the batch, and the held pod waited for it all the same (a whole DRA
# cycle at 500 nodes before its claim writes began, where upstream's binding goroutine
# starts at once).
BINDING_BATCH = 64
BINDING_HOLD_SECONDS = 0.02


def _start_thread(target: Callable[[], None], name: str) -> None:
    threading.Thread(target=target, name=name, daemon=True).start()


class BindingWorkers:
    def __init__(
        self,
        max_threads: int,
        *,
        start_thread: Callable[[Callable[[], None], str], None] = _start_thread,
    ) -> None:
        self._max_threads = max_threads
        self._start_thread = start_thread
        lock = threading.Lock()
        self._work_ready = threading.Condition(lock)
        self._all_done = threading.Condition(lock)
        self._queue: deque[Work] = deque()
        self._threads = 0
        self._idle = 0
        self._running = 0
        # A thread was woken (or started) and has not yet looked at the queue.
        self._waking = False
        self._closed = False

    def submit(self, work: list[Work]) -> None:
        with self._work_ready:
            if self._closed:
                return
            self._queue.extend(work)
            self._wake_one_locked()

    def in_flight(self) -> int:
        """Cycles queued or running."""
        with self._work_ready:
            return len(self._queue) + self._running

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._all_done:
            while self._queue or self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._all_done.wait(left)
            return True

    def close(self) -> None:
        """Drop what is queued and let the idle threads end; running cycles finish first."""
        with self._work_ready:
            self._closed = True
            self._queue.clear()
            self._work_ready.notify_all()
            self._all_done.notify_all()

    def _wake_one_locked(self) -> None:
        if self._waking or not self._queue:
            return
        if self._idle:
            self._waking = True
            self._work_ready.notify()
        elif self._threads < self._max_threads:
            self._waking = True
            self._threads += 1
            self._start_thread(self._work, f"binding-{self._threads}")

    def _work(self) -> None:
        with self._work_ready:
            self._waking = False  # this thread was started as the woken one
            while True:
                while not self._queue and not self._closed:
                    self._idle += 1
                    self._work_ready.wait()
                    self._idle -= 1
                    self._waking = False
                if self._closed:
                    self._threads -= 1
                    return
                fn, args = self._queue.popleft()
                self._running += 1
                self._wake_one_locked()
                self._work_ready.release()
                try:
                    fn(*args)
                except Exception:  # a binding cycle must never take its thread down
                    log.exception("Binding cycle crashed")
                finally:
                    self._work_ready.acquire()
                    self._running -= 1
                    if not self._queue and not self._running:
                        self._all_done.notify_all()


class BindingBatch:
    """The binding cycles the scheduling thread submits, held while ``more_ready()`` says
    more pods are ready to schedule and handed to the :class:`BindingWorkers` together."""

    def __init__(
        self,
        workers: BindingWorkers,
        *,
        clock: Callable[[], float],
        more_ready: Callable[[], bool],
    ) -> None:
        self._workers = workers
        self._clock = clock
        self._more_ready = more_ready
        self._lock = threading.Lock()
        self._held: list[Work] = []
        self._held_since = 0.0
        self._last_submit: float | None = None
        # The last two submissions were further apart than the hold: cycles are slow.
        self._slow_cycles = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            now = self._clock()
            self._slow_cycles = (self._last_submit is not None
                                 and now - self._last_submit >= BINDING_HOLD_SECONDS)
            self._last_submit = now
            if not self._held:
                self._held_since = now
            self._held.append((fn, args))
        self.release()

    def release(self, *, now: bool = False) -> None:
        """Hand the held binding cycles to the binding threads, unless more pods are ready
        to schedule, cycles are quick and the batch is neither full nor old (``now``:
        whatever the queue)."""
        with self._lock:
            held = self._held
            if not held:
                return
            if not (
                now
                or len(held) >= BINDING_BATCH
                or self._slow_cycles
                or self._clock() - self._held_since >= BINDING_HOLD_SECONDS
                or not self._more_ready()
            ):
                return
            self._held = []
            self._workers.submit(held)

    def in_flight(self) -> int:
        """Binding cycles not yet ended, held ones included."""
        with self._lock:
            return self._workers.in_flight() + len(self._held)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the released cycles have ended; False if ``timeout`` passed first."""
        return self._workers.wait_idle(timeout)

    def close(self) -> None:
        """Drop what is queued and let the idle threads end (release what is held first)."""
        self._workers.close()
