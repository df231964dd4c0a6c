from __future__ import annotations

import random

import pytest

from scheduler.queue.heap import IndexedHeap, order_of_less


def _heap() -> IndexedHeap[tuple[str, int]]:
    return IndexedHeap(key=lambda item: item[0], order=lambda item: item[1])


def _drain(heap: IndexedHeap[tuple[str, int]]) -> list[str]:
    return [heap.pop()[0] for _ in range(len(heap))]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([("a", 3), ("b", 1), ("c", 2)], ["b", "c", "a"], id="pops in order"),
        pytest.param(
            [("a", 1), ("b", 1), ("c", 0), ("d", 1)],
            ["c", "a", "b", "d"],
            id="items of equal order keep insertion order",
        ),
    ],
)
def test_pop_order(items: list[tuple[str, int]], expected: list[str]) -> None:
    heap = _heap()
    for item in items:
        heap.add_or_update(item)
    assert heap.ordered() == [i for k in expected for i in items if i[0] == k]
    assert _drain(heap) == expected


def test_update_and_delete_by_key_keep_the_heap_ordered() -> None:
    heap = _heap()
    for i, name in enumerate("abcdefgh"):
        heap.add_or_update((name, i))
    heap.add_or_update(("h", -1))  # moves up
    heap.add_or_update(("a", 100))  # moves down
    assert heap.delete("d") == ("d", 3)
    assert heap.delete("zz") is None
    assert "d" not in heap and "a" in heap
    assert heap.get("h") == ("h", -1)
    assert _drain(heap) == ["h", "b", "c", "e", "f", "g", "a"]
    with pytest.raises(IndexError):
        heap.pop()
    assert heap.peek() is None


def test_updates_of_equal_order_keep_the_place_and_leave_no_stale_entry_behind() -> None:
    """An update leaves the old entry for a pop to skip: the item is popped once, at its
    first insertion's place among equals, and the heap does not grow with updates."""
    heap = _heap()
    heap.add_or_update(("a", 1))
    heap.add_or_update(("b", 1))
    for _ in range(1000):
        heap.add_or_update(("a", 1))
    assert len(heap) == 2
    assert len(heap._heap) < 50
    assert heap.peek() == ("a", 1)
    assert _drain(heap) == ["a", "b"]
    assert heap.peek() is None


def test_random_operations_match_a_sorted_reference() -> None:
    rng = random.Random(7)
    heap = _heap()
    reference: dict[str, int] = {}
    for step in range(2000):
        op = rng.random()
        if op < 0.5 or not reference:
            key = f"k{rng.randrange(300)}"
            value = rng.randrange(1000) * 1000 + step  # unique values: no ties
            heap.add_or_update((key, value))
            reference[key] = value
        elif op < 0.75:
            key = rng.choice(sorted(reference))
            assert heap.delete(key) == (key, reference.pop(key))
        else:
            key, value = heap.pop()
            assert value == min(reference.values())
            assert reference.pop(key) == value
        assert len(heap) == len(reference)


def test_an_order_from_a_less_function_pops_as_the_key_it_mirrors() -> None:
    """A QueueSort plugin without sort_key: its less, turned into an order, gives the pops a
    key gives, ties (equal values) in insertion order included."""
    rng = random.Random(11)
    by_key = _heap()
    by_less: IndexedHeap[tuple[str, int]] = IndexedHeap(
        key=lambda item: item[0], order=order_of_less(lambda a, b: a[1] < b[1]))
    for _ in range(500):
        item = (f"k{rng.randrange(200)}", rng.randrange(20))
        by_key.add_or_update(item)
        by_less.add_or_update(item)
        if rng.random() < 0.3:
            assert by_key.pop() == by_less.pop()
    assert by_less.ordered() == by_key.ordered()
    assert _drain(by_less) == _drain(by_key)
