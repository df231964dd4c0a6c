"""The queue's index of pooled pods by a hint's keys (``HintIndex``, plugin API 2.5)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.events import HintIndex
from scheduler.queue.hint_index import PoolIndex, event_keys


def _keys(pod: Any) -> list[str]:
    if pod == "broken":
        raise ValueError("no keys")
    return list(pod)


def _broken_event(old: Any, new: Any) -> list[str]:
    raise ValueError("no keys")


INDEX = HintIndex(_keys, lambda old, new: [new])


def test_pods_are_found_under_their_keys_until_they_leave() -> None:
    pool = PoolIndex(lambda pod: (INDEX,))
    pool.add("u1", ["a", "b"])
    pool.add("u2", ["b"])
    assert pool.uids(INDEX, ["a"]) == {"u1"}
    assert pool.uids(INDEX, ["b", "c"]) == {"u1", "u2"}
    pool.add("u1", ["c"])  # the pod changed: its old keys are gone
    assert pool.uids(INDEX, ["a"]) == set()
    pool.remove("u2")
    assert pool.uids(INDEX, ["b", "c"]) == {"u1"}


def test_a_pod_whose_keys_fail_is_found_by_every_event() -> None:
    pool = PoolIndex(lambda pod: (INDEX,))
    pool.add("u1", "broken")
    assert pool.uids(INDEX, ["x"]) == {"u1"}


def test_an_event_whose_keys_fail_runs_every_pods_hint() -> None:
    broken = HintIndex(_keys, _broken_event)
    assert event_keys([INDEX, broken], None, "k") == {INDEX: ("k",), broken: None}


def test_pods_of_a_profile_without_indexes_are_not_indexed() -> None:
    pool = PoolIndex(lambda pod: ())
    pool.add("u1", ["a"])
    assert pool.uids(INDEX, ["a"]) == set()
