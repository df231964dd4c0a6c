"""The scheduling loop's liveness: ``/healthz`` fails when the loop makes no progress.

The loop comes round at least every half second when it has nothing to do (its pop timeout;
a standby's refresh, every 0.2 s), and after every pod. One that has not come round for
:func:`loop_stall_seconds` is stuck inside a cycle or the cache refresh: the pod in that
cycle, the pods queued behind it and the watch deltas in the inbox all wait. A restart, as
the kubelet's liveness probe does, is then the way out. kube-scheduler has no such check
(a stuck goroutine there is found only by its SLI metrics); it is ours.
"""

from __future__ import annotations

from scheduler.config import SchedulerConfig
from scheduler.scheduler import Scheduler

# How long the loop may take to come round before it counts as stuck: far above any cycle
# without extenders (milliseconds; an explain at 5,000 nodes, run on the loop, under a
# second), with room for the refresh that applies a relist of tens of thousands of pods.
LOOP_STALL_SECONDS = 60.0
# Extender calls a cycle may make to one extender, each up to its httpTimeout: filter,
# prioritize and preempt.
_EXTENDER_CALLS_PER_CYCLE = 3


def loop_stall_seconds(config: SchedulerConfig) -> float:
    """:data:`LOOP_STALL_SECONDS`, plus the longest a cycle may legitimately wait on its
    extenders, so that slow extenders time out before the loop counts as stuck."""
    waits = sum(e.http_timeout for e in config.extenders) * _EXTENDER_CALLS_PER_CYCLE
    return LOOP_STALL_SECONDS + waits


def loop_progress(scheduler: Scheduler) -> tuple[bool, dict[str, object]]:
    """Fails when the running loop has not come round for :func:`loop_stall_seconds`."""
    limit = loop_stall_seconds(scheduler.config)
    since = scheduler.clock() - scheduler.loop_turned_at
    if scheduler.is_running() and since > limit:
        return False, {"reason": f"the scheduling loop has not come round for {since:.0f}s "
                                 f"(limit {limit:.0f}s)",
                       "pending": scheduler.queue.pending_counts()}
    return True, {"sinceLastTurn": round(since, 3)}
