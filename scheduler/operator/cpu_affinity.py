"""Keep the scheduler's threads on one CPU, and move them when another process crowds it.

Python runs one thread at a time (the GIL), so a second CPU buys the scheduler little, and
costs it much: each time a binding thread or a watch thread takes the GIL from the scheduling
thread on another CPU, the sleeping one is woken across CPUs (an inter-processor interrupt,
a VM exit on most cloud machines) and the data each produced moves between the CPUs'
caches. On one CPU the same hand-off is a context switch. Over 1,000 ReplicaSet pods at
5,000 nodes (bench/run.py) the binding threads took half the CPU time and the scheduling
thread a sixth less, 15-35% more pods a second on a 2-CPU VM.

A CPU pinned is a CPU that cannot be escaped, so :meth:`SingleCpu.rebalance`, run every few
seconds, compares how busy each allowed CPU was with other work (its busy time in
``/proc/stat`` less this process's own) and moves every thread to a quieter one when the
difference is large. Linux only; elsewhere nothing is pinned.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger("scheduler.cpu")

# Move only when another CPU was idler by this share of the interval: not for noise.
MOVE_MARGIN = 0.25
REBALANCE_SECONDS = 10.0


def read_cpu_busy(stat: str = "/proc/stat") -> dict[int, int]:
    """Per CPU, the clock ticks spent on anything but idle and iowait since boot."""
    out: dict[int, int] = {}
    with open(stat, encoding="ascii") as f:
        for line in f:
            name, *values = line.split()
            if not name.startswith("cpu") or name == "cpu":
                continue
            ticks = [int(v) for v in values]
            out[int(name[3:])] = sum(ticks) - ticks[3] - ticks[4]
    return out


def read_own_ticks(stat: str = "/proc/self/stat") -> int:
    """This process's user and system clock ticks since it started."""
    with open(stat, encoding="ascii") as f:
        # The command name may hold spaces: the fields after it are counted from its ')'.
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def current_cpu(stat: str = "/proc/self/stat") -> int:
    """The CPU the calling process last ran on."""
    with open(stat, encoding="ascii") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def pin_all_threads(cpu: int, tasks: str = "/proc/self/task") -> None:
    """Every thread of the process on ``cpu``; threads started later inherit it."""
    for tid in os.listdir(tasks):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except ProcessLookupError:
            continue  # a thread that just ended


@dataclass
class SingleCpu:
    """Which CPU the process's threads run on, chosen among the CPUs it may use."""

    allowed: frozenset[int]
    pin: Callable[[int], None] = pin_all_threads
    cpu_busy: Callable[[], Mapping[int, int]] = read_cpu_busy
    own_ticks: Callable[[], int] = read_own_ticks
    clock: Callable[[], float] = time.monotonic
    ticks_per_second: int = field(default_factory=lambda: os.sysconf("SC_CLK_TCK"))
    cpu: int | None = None
    _last: tuple[Mapping[int, int], int, float] | None = field(default=None, repr=False)

    def start(self, cpu: int) -> None:
        """Pin to ``cpu`` (the one the process runs on: no sampling before the first bind)."""
        self.cpu = cpu if cpu in self.allowed else min(self.allowed)
        self.pin(self.cpu)
        self._last = (self.cpu_busy(), self.own_ticks(), self.clock())
        log.info("Pinned the scheduler's threads to one CPU", cpu=self.cpu,
                 allowed=sorted(self.allowed))

    def rebalance(self) -> int | None:
        """Move to the CPU that other work used least since the last call, if it was idler
        than ours by MOVE_MARGIN of the interval; returns the new CPU, or None."""
        if self.cpu is None or self._last is None:
            return None
        busy, own, now = self.cpu_busy(), self.own_ticks(), self.clock()
        before, own_before, then = self._last
        self._last = (busy, own, now)
        others = {c: busy[c] - before.get(c, busy[c]) for c in self.allowed if c in busy}
        if self.cpu not in others or len(others) < 2:
            return None
        elapsed = (now - then) * self.ticks_per_second
        others[self.cpu] -= own - own_before  # our threads ran only on our CPU
        best = min(others, key=lambda c: (others[c], c != self.cpu))
        if others[self.cpu] - others[best] <= MOVE_MARGIN * elapsed:
            return None
        log.info("Moved the scheduler's threads to a quieter CPU", cpu=best, previous=self.cpu,
                 others_ticks={str(c): t for c, t in sorted(others.items())})
        self.cpu = best
        self.pin(best)
        return best


def single_cpu(allowed: Iterable[int] | None = None) -> SingleCpu | None:
    """A SingleCpu started on the current CPU, or None where there is one CPU to use or the
    platform cannot pin threads."""
    if not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/self/task"):
        return None
    cpus = frozenset(os.sched_getaffinity(0) if allowed is None else allowed)
    if len(cpus) < 2:
        return None
    pinned = SingleCpu(cpus)
    try:
        pinned.start(current_cpu())
    except OSError as exc:  # a cpuset changed under us, a sandbox that forbids it
        log.warning("Could not pin the scheduler's threads: the kernel places them",
                    reason=str(exc))
        return None
    return pinned
