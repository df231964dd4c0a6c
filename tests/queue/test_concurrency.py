"""One worker popping while event-handler threads add, update, delete and move.

No sleeping: threads are joined with short timeouts, and a blocked ``pop`` is detected by a
short join that times out.
"""

from __future__ import annotations

import threading

from scheduler.framework.events import ASSIGNED_POD_DELETE, UNSCHEDULABLE_TIMEOUT
from scheduler.queue.scheduling_queue import ACTIVE
from tests.queue.fakes import (
    NODE_RESOURCES_FIT,
    QPI,
    FakeClock,
    Queue,
    fail,
    make_pod,
    make_queue,
    pop_now,
    where,
)


def _popper(queue: Queue, out: list[QPI | None], timeout: float | None = None) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(queue.pop(timeout)), daemon=True)
    thread.start()
    return thread


def test_pop_blocks_until_a_pod_is_added_from_another_thread() -> None:
    queue = make_queue()
    out: list[QPI | None] = []
    popper = _popper(queue, out)
    popper.join(timeout=0.05)
    assert popper.is_alive() and out == []  # waiting on the condition
    queue.add(make_pod("a"))
    popper.join(timeout=2)
    assert not popper.is_alive()
    assert out[0] is not None and out[0].pod.name == "a"


def test_a_pod_moved_by_an_event_wakes_a_waiting_pop() -> None:
    queue = make_queue()
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    fail(queue, qpi, [NODE_RESOURCES_FIT])
    out: list[QPI | None] = []
    popper = _popper(queue, out)
    popper.join(timeout=0.05)
    assert popper.is_alive()
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)  # to backoffQ: poppable too
    popper.join(timeout=2)
    assert out and out[0] is qpi


def test_close_wakes_every_waiting_pop() -> None:
    queue = make_queue()
    out: list[QPI | None] = []
    poppers = [_popper(queue, out) for _ in range(3)]
    for p in poppers:
        p.join(timeout=0.02)
    queue.close()
    for p in poppers:
        p.join(timeout=2)
        assert not p.is_alive()
    assert out == [None, None, None]
    queue.add(make_pod("late"))
    assert queue.pop(timeout=0) is None  # a closed queue hands out nothing


def test_pop_returns_none_when_the_timeout_passes() -> None:
    assert make_queue().pop(timeout=0.01) is None


def test_concurrent_intake_and_events_hand_out_every_pod_once() -> None:
    queue = make_queue()
    producers, per_producer = 4, 150
    popped: list[str] = []
    total = producers * per_producer

    def produce(worker: int) -> None:
        for i in range(per_producer):
            pod = make_pod(f"w{worker}-{i}", priority=i % 7)
            queue.add(pod)
            if i % 10 == 0:
                queue.move_all_to_active_or_backoff(UNSCHEDULABLE_TIMEOUT)

    def consume() -> None:
        first_attempt: set[str] = set()
        while len(popped) < total:
            qpi = queue.pop(timeout=2)
            if qpi is None:
                return
            if qpi.uid not in first_attempt and len(first_attempt) % 3 == 0:
                # Every third pod fails once; an event puts it back.
                first_attempt.add(qpi.uid)
                fail(queue, qpi, [NODE_RESOURCES_FIT])
                queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
                continue
            first_attempt.add(qpi.uid)
            popped.append(qpi.uid)
            queue.done(qpi.uid)

    threads = [threading.Thread(target=produce, args=(w,), daemon=True) for w in range(4)]
    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    consumer.join(timeout=10)
    assert not consumer.is_alive()
    assert len(popped) == total and len(set(popped)) == total
    assert len(queue) == 0 and queue.in_flight() == []


def test_run_flushers_moves_expired_backoff_in_the_background() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("a"))
    qpi = pop_now(queue)
    fail(queue, qpi, error=True)  # error backoffQ: pop does not take it early
    assert queue.pop(timeout=0) is None
    clock.advance(5)
    stop = threading.Event()
    flusher = threading.Thread(
        target=queue.run_flushers,
        args=(stop,),
        kwargs={"backoff_period": 0.001, "leftover_period": 0.002},
        daemon=True,
    )
    flusher.start()
    popped = queue.pop(timeout=2)
    stop.set()
    flusher.join(timeout=2)
    assert popped is qpi and not flusher.is_alive()


def test_start_and_close_run_and_stop_the_flusher_thread() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(make_pod("a"))
    queue.start()
    queue.start()  # idempotent
    flushers = [t for t in threading.enumerate() if t.name == "queue-flushers"]
    assert len(flushers) == 1
    assert where(queue, make_pod("a")) == ACTIVE
    queue.close()
    assert not flushers[0].is_alive()
