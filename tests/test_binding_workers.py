from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.binding_workers import (
    BINDING_BATCH,
    BINDING_HOLD_SECONDS,
    BindingBatch,
    BindingWorkers,
    Work,
)


class Starts:
    """Threads the workers asked for, not started: the test runs one itself when it wants."""

    def __init__(self) -> None:
        self.targets: list[tuple[Callable[[], None], str]] = []

    def __call__(self, target: Callable[[], None], name: str) -> None:
        self.targets.append((target, name))


def run_first(starts: Starts) -> None:
    target, _ = starts.targets[0]
    target()


@pytest.mark.parametrize(
    ("batches", "want_starts"),
    [
        pytest.param([16], 1, id="a batch starts one thread"),
        pytest.param([16, 16], 1, id="a second batch before it looked starts no other"),
        pytest.param([1], 1, id="one cycle, one thread"),
    ],
)
def test_a_released_batch_wakes_one_thread(batches: list[int], want_starts: int) -> None:
    starts = Starts()
    workers = BindingWorkers(16, start_thread=starts)
    ran: list[Any] = []
    for size in batches:
        workers.submit([(ran.append, (i,)) for i in range(size)])
    assert len(starts.targets) == want_starts
    assert workers.in_flight() == sum(batches)


@pytest.mark.parametrize(
    ("max_threads", "cycles", "want_starts"),
    [
        pytest.param(16, 16, 2, id="taking a cycle while more wait wakes one more, once"),
        pytest.param(16, 1, 1, id="the last cycle wakes nobody"),
        pytest.param(1, 16, 1, id="never more threads than the pool's size"),
    ],
)
def test_a_thread_that_takes_a_cycle_wakes_the_next_once(
    max_threads: int, cycles: int, want_starts: int
) -> None:
    starts = Starts()
    workers = BindingWorkers(max_threads, start_thread=starts)
    ran: list[Any] = []
    work: list[Work] = [(ran.append, (i,)) for i in range(cycles - 1)]
    work.append((lambda: (ran.append(cycles - 1), workers.close()), ()))
    workers.submit(work)
    run_first(starts)  # it runs every cycle, as a thread does while the woken one sleeps
    assert ran == list(range(cycles))
    assert len(starts.targets) == want_starts


def test_slow_cycles_fan_out_over_a_thread_each() -> None:
    workers = BindingWorkers(8)
    all_running = threading.Barrier(4, timeout=20)
    met: list[bool] = []

    def cycle() -> None:
        try:
            all_running.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)

    workers.submit([(cycle, ()) for _ in range(4)])
    assert workers.wait_idle(30)
    assert met == [True] * 4, "four cycles waiting on each other never all ran at once"
    workers.close()


def test_a_crashing_cycle_does_not_take_its_thread_down() -> None:
    starts = Starts()
    workers = BindingWorkers(4, start_thread=starts)
    ran: list[str] = []

    def crash() -> None:
        raise RuntimeError("boom")

    workers.submit([(crash, ()), (ran.append, ("after",)), (workers.close, ())])
    run_first(starts)
    assert ran == ["after"]


def test_closing_drops_what_is_queued_and_refuses_more() -> None:
    starts = Starts()
    workers = BindingWorkers(4, start_thread=starts)
    ran: list[str] = []
    workers.submit([(workers.close, ()), (ran.append, ("dropped",))])
    run_first(starts)
    workers.submit([(ran.append, ("late",))])
    assert ran == [] and workers.in_flight() == 0


def test_wait_idle_returns_once_the_running_cycle_ends() -> None:
    workers = BindingWorkers(2)
    release = threading.Event()
    started = threading.Event()

    def cycle() -> None:
        started.set()
        release.wait(20)

    workers.submit([(cycle, ())])
    assert started.wait(20)
    assert workers.in_flight() == 1
    assert not workers.wait_idle(0), "a running cycle counts"
    release.set()
    assert workers.wait_idle(20) and workers.in_flight() == 0
    workers.close()


@pytest.mark.parametrize(
    ("submitted", "more_ready", "held_for", "want_released"),
    [
        pytest.param(1, False, 0.0, 1, id="nothing else ready: released at once"),
        pytest.param(1, True, 0.0, 0, id="more pods ready: held"),
        pytest.param(BINDING_BATCH - 1, True, 0.0, 0, id="held until the batch is full"),
        pytest.param(BINDING_BATCH, True, 0.0, BINDING_BATCH, id="a full batch leaves"),
        pytest.param(2, True, BINDING_HOLD_SECONDS, 2, id="an old batch leaves"),
    ],
)
def test_the_batch_holds_bindings_only_while_more_pods_are_ready(
    submitted: int, more_ready: bool, held_for: float, want_released: int
) -> None:
    starts = Starts()
    now = [0.0]
    batch = BindingBatch(BindingWorkers(4, start_thread=starts), clock=lambda: now[0],
                         more_ready=lambda: more_ready)
    ran: list[Any] = []
    for i in range(submitted - 1):
        batch.submit(ran.append, i)
    now[0] += held_for
    batch.submit(ran.append, submitted - 1)
    assert batch.in_flight() == submitted, "held ones count as in flight"
    if want_released:
        run_first_until_idle(starts, batch)
    assert ran == list(range(want_released))


def _never_run(*_: Any) -> None:
    """A binding cycle of a test whose threads never start."""


def test_slow_cycles_bind_at_once_though_more_pods_are_ready() -> None:
    """Cycles further apart than the hold (DRA at 500 nodes): a held pod would only wait for
    the next cycle, so it leaves at once, as upstream's binding goroutine starts at once."""
    now = [0.0]
    workers = BindingWorkers(4, start_thread=Starts())
    batch = BindingBatch(workers, clock=lambda: now[0], more_ready=lambda: True)
    batch.submit(_never_run, "first")
    assert workers.in_flight() == 0, "one submission alone says nothing of the cycles"
    now[0] += 3 * BINDING_HOLD_SECONDS
    batch.release()  # the loop turns after the slow cycle: the old batch leaves
    assert workers.in_flight() == 1
    now[0] += 3 * BINDING_HOLD_SECONDS
    batch.submit(_never_run, "after a slow cycle")
    assert workers.in_flight() == 2, "handed to the binding threads, not held"


def test_quick_cycles_are_held_again_after_slow_ones() -> None:
    now = [0.0]
    workers = BindingWorkers(4, start_thread=Starts())
    batch = BindingBatch(workers, clock=lambda: now[0], more_ready=lambda: True)
    batch.submit(_never_run, "first")
    now[0] += 3 * BINDING_HOLD_SECONDS
    batch.submit(_never_run, "slow")
    assert workers.in_flight() == 2
    now[0] += BINDING_HOLD_SECONDS / 10
    batch.submit(_never_run, "quick")
    assert workers.in_flight() == 2 and batch.in_flight() == 3, "held"


def test_release_now_hands_over_what_is_held() -> None:
    starts = Starts()
    batch = BindingBatch(BindingWorkers(4, start_thread=starts), clock=lambda: 0.0,
                         more_ready=lambda: True)
    ran: list[Any] = []
    batch.submit(ran.append, "held")
    assert starts.targets == []
    batch.release(now=True)
    run_first_until_idle(starts, batch)
    assert ran == ["held"] and batch.in_flight() == 0


def run_first_until_idle(starts: Starts, batch: BindingBatch) -> None:
    """Run the first thread the workers asked for until the released cycles are done."""
    batch.submit(batch.close)
    batch.release(now=True)
    run_first(starts)
