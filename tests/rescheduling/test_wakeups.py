"""Work put in the inbox wakes an idle scheduling thread at once: the rescheduler's steps and a
live explain run on that thread, and waited for its idle poll (0.5 s a step) before.

No timed assertion: the idle wait is made an hour long, so only a wake-up can answer within
the tests' generous timeouts."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import scheduler.rescheduling.rescheduler as rescheduler_module
import scheduler.scheduler as scheduler_module
from scheduler.testing import node, pod_info, scheduler_of
from tests.rescheduling.conftest import owned
from tests.rescheduling.test_rescheduler import packed

AN_HOUR = 3600.0


def test_a_delta_put_in_the_inbox_wakes_a_pop_waiting_without_a_timeout() -> None:
    s, _ = scheduler_of({}, nodes=[node("a")])
    popped: list[Any] = []
    waiting = threading.Thread(target=lambda: popped.append(s.queue.pop(None)), daemon=True)
    waiting.start()
    try:
        s.inbox.put(lambda: None)
        waiting.join(20)
        assert not waiting.is_alive(), "the pop was not woken by the inbox"
        assert popped == [None]
    finally:
        s.queue.close()


def test_only_the_first_delta_of_a_burst_wakes() -> None:
    wakes: list[int] = []
    s, _ = scheduler_of({}, nodes=[node("a")])
    s.inbox._wake = lambda: wakes.append(1)
    for _ in range(3):
        s.inbox.put(lambda: None)
    assert wakes == [1]
    s.refresh()
    s.inbox.put(lambda: None)
    assert wakes == [1, 1]


def test_a_pod_ready_to_pop_is_popped_before_a_wake_is_answered() -> None:
    s, _ = scheduler_of({}, nodes=[node("a")])
    s.queue.wake()
    s.queue.add(pod_info("x", cpu="100m"))
    first = s.queue.pop(0)
    assert first is not None and first.pod.name == "x"
    assert s.queue.pop(None) is None  # the wake is still owed: answered without waiting


def test_a_live_explain_on_an_idle_scheduler_answers_without_the_idle_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_module, "IDLE_WAIT_SECONDS", AN_HOUR)
    s, _ = scheduler_of({}, nodes=[node("a")])
    s.start()
    try:
        # Twice: the second finds the loop back in its (hour-long) wait.
        for _ in range(2):
            assert s.run_in_loop(lambda: threading.current_thread().name, 20) == "scheduling"
    finally:
        s.stop(timeout=5)


def test_a_pass_on_an_idle_scheduler_does_not_wait_for_the_idle_poll(
        world_of: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_module, "IDLE_WAIT_SECONDS", AN_HOUR)
    monkeypatch.setattr(rescheduler_module, "LOOP_TIMEOUT", 20.0)
    w = world_of([node("a"), node("b"), node("c")],
                 [*packed(), owned("db-0", "db", node="a")])
    w.s.start()
    report = w.r.run_once()
    assert report.moves, "each of the pass's steps ran on the scheduling thread"
