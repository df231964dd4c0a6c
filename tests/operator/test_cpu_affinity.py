"""One CPU for every thread, and the move to a quieter one."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from scheduler.operator import cpu_affinity
from scheduler.operator.cpu_affinity import SingleCpu

TICKS = 100  # per second


class Host:
    """Clock ticks per CPU, this process's ticks and a clock, moved by the test."""

    def __init__(self, cpus: int) -> None:
        self.busy = dict.fromkeys(range(cpus), 0)
        self.own = 0
        self.now = 0.0
        self.pinned: list[int] = []

    def run(self, seconds: float, busy: dict[int, float], own: float = 0.0) -> None:
        """``seconds`` pass; CPU c is busy ``busy[c]`` of them, ``own`` of which are ours."""
        self.now += seconds
        for cpu, share in busy.items():
            self.busy[cpu] += round(share * seconds * TICKS)
        self.own += round(own * seconds * TICKS)

    def single(self, allowed: set[int], start: int) -> SingleCpu:
        pinned = SingleCpu(frozenset(allowed), pin=self.pinned.append,
                           cpu_busy=lambda: dict(self.busy), own_ticks=lambda: self.own,
                           clock=lambda: self.now, ticks_per_second=TICKS)
        pinned.start(start)
        return pinned


@pytest.mark.parametrize(("busy", "own", "want"), [
    pytest.param({0: 0.9, 1: 0.1}, 0.9, None, id="our CPU is busy with us only: stay"),
    pytest.param({0: 1.0, 1: 0.1}, 0.5, 1, id="another process takes half of ours: move"),
    pytest.param({0: 0.6, 1: 0.5}, 0.3, None, id="both as busy with other work: stay"),
    pytest.param({0: 0.5, 1: 0.3}, 0.0, None, id="a difference within the margin: stay"),
    pytest.param({0: 1.0, 1: 0.6, 2: 0.1}, 0.2, 2, id="the quietest of three"),
])
def test_rebalance_moves_only_away_from_other_work(
    busy: dict[int, float], own: float, want: int | None
) -> None:
    host = Host(len(busy))
    pinned = host.single(set(busy), start=0)
    host.run(10, busy, own)
    assert pinned.rebalance() == want
    assert host.pinned == [0] + ([] if want is None else [want])
    assert pinned.cpu == (0 if want is None else want)


def test_each_rebalance_looks_at_its_own_interval() -> None:
    host = Host(2)
    pinned = host.single({0, 1}, start=0)
    host.run(10, {0: 1.0, 1: 0.0}, own=0.2)  # crowded: move to 1
    assert pinned.rebalance() == 1
    host.run(10, {0: 0.0, 1: 0.5}, own=0.5)  # then 1 holds only us: stay
    assert pinned.rebalance() is None
    host.run(10, {0: 0.0, 1: 1.0}, own=0.4)  # crowded again: back to 0
    assert pinned.rebalance() == 0


def test_a_cpu_outside_the_allowed_set_is_not_used() -> None:
    host = Host(4)
    pinned = host.single({2, 3}, start=0)  # the process ran on 0 before its cpuset applied
    assert pinned.cpu == 2 and host.pinned == [2]
    host.run(10, {0: 0.0, 1: 0.0, 2: 1.0, 3: 0.9}, own=0.1)
    assert pinned.rebalance() is None  # 0 and 1 are idle but not ours to use


def test_one_allowed_cpu_pins_nothing() -> None:
    assert cpu_affinity.single_cpu(allowed={0}) is None


def test_proc_files_are_read(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 0 5 100 7 0 1 2 0 0\n"
                    "cpu0 4 0 2 50 3 0 1 1 0 0\ncpu1 6 0 3 50 4 0 0 1 0 0\nintr 1 2 3\n")
    assert cpu_affinity.read_cpu_busy(str(stat)) == {0: 8, 1: 10}
    own = tmp_path / "self-stat"
    # The command name may hold spaces and parentheses.
    fields = ["S", *[str(i) for i in range(4, 40)]]
    own.write_text("1234 (a (b) c) " + " ".join(fields) + "\n")
    assert cpu_affinity.read_own_ticks(str(own)) == 14 + 15
    assert cpu_affinity.current_cpu(str(own)) == 39


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_every_thread_is_pinned_and_later_threads_inherit() -> None:
    original = os.sched_getaffinity(0)
    cpu = min(original)
    seen: list[set[int]] = []
    try:
        cpu_affinity.pin_all_threads(cpu)
        later = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        later.start()
        later.join()
        assert os.sched_getaffinity(0) == {cpu} and seen == [{cpu}]
    finally:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # the thread above, ending
                os.sched_setaffinity(int(tid), original)


def test_a_refused_pin_leaves_the_threads_to_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(tid: int, cpus: set[int]) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    assert cpu_affinity.single_cpu(allowed={0, 1}) is None
