"""Cache: accounting rules, assume/confirm/forget/expire and the snapshot's derived data."""

from __future__ import annotations

import pytest

from scheduler.cache import node_table
from scheduler.cache.cache import Cache
from scheduler.cache.node_table import OwnerRows
from scheduler.cache.snapshot import Snapshot
from scheduler.model.pod import PodInfo
from scheduler.testing import node, pod, pod_info


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cpu_requested(cache: Cache, node_name: str) -> int:
    return int(cache.nodes.requested[cache.nodes.index[node_name], 0])


def count(cache: Cache, node_name: str) -> int:
    return int(cache.nodes.pod_count[cache.nodes.index[node_name]])


@pytest.mark.parametrize(
    ("phase", "deleting", "counted"),
    [
        pytest.param("Running", None, True, id="a running bound pod counts on its node"),
        pytest.param("Pending", None, True, id="a bound pod not yet running counts too"),
        pytest.param("Running", "2026-01-01T00:00:00Z", True,
                     id="a terminating pod counts until it is gone"),
        pytest.param("Succeeded", None, False, id="a succeeded pod does not count"),
        pytest.param("Failed", None, False, id="a failed pod does not count"),
    ],
)
def test_bound_pods_are_accounted_by_phase(phase: str, deleting: str | None,
                                           counted: bool) -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(PodInfo.from_pod(pod("p", cpu="500m", node_name="n1",
                                          status={"phase": phase},
                                          deletion_timestamp=deleting)))
    assert cpu_requested(cache, "n1") == (500 if counted else 0)
    assert count(cache, "n1") == (1 if counted else 0)


def test_a_pod_of_another_scheduler_is_accounted_once_bound() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod_info("p", cpu="1", node_name="n1", scheduler_name="default-scheduler"))
    assert cpu_requested(cache, "n1") == 1000


def test_a_pod_that_turns_terminal_stops_counting() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod_info("p", cpu="1", node_name="n1"))
    cache.upsert_pod(PodInfo.from_pod(pod("p", cpu="1", node_name="n1",
                                          status={"phase": "Succeeded"})))
    assert cpu_requested(cache, "n1") == 0
    assert cache.get_pod("uid-default-p") is None


def test_assume_counts_at_once_and_forget_undoes_it() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    p = pod_info("p", cpu="2")
    cache.assume(p, "n1")
    assert cache.is_assumed(p.uid)
    assert cpu_requested(cache, "n1") == 2000
    cache.forget(p.uid)
    assert not cache.is_assumed(p.uid)
    assert cpu_requested(cache, "n1") == 0


def test_assuming_a_pod_twice_is_refused() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    p = pod_info("p", cpu="1")
    cache.assume(p, "n1")
    with pytest.raises(ValueError):
        cache.assume(p, "n1")


def test_observing_the_bound_pod_confirms_the_assumption() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    p = pod_info("p", cpu="1")
    cache.assume(p, "n1")
    cache.finish_binding(p.uid)
    cache.upsert_pod(pod_info("p", cpu="1", node_name="n1"))
    assert not cache.is_assumed(p.uid)
    assert cpu_requested(cache, "n1") == 1000
    cache.forget(p.uid)  # no longer assumed: forget must not remove a confirmed pod
    assert cpu_requested(cache, "n1") == 1000


def test_a_stale_unbound_version_does_not_drop_an_assumed_pod() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    p = pod_info("p", cpu="1")
    cache.assume(p, "n1")
    cache.upsert_pod(pod_info("p", cpu="1"))
    assert cache.is_assumed(p.uid)
    assert cpu_requested(cache, "n1") == 1000


def test_the_api_wins_when_the_pod_is_observed_on_another_node() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_node(node("n2"))
    p = pod_info("p", cpu="1")
    cache.assume(p, "n1")
    cache.upsert_pod(pod_info("p", cpu="1", node_name="n2"))
    assert cpu_requested(cache, "n1") == 0
    assert cpu_requested(cache, "n2") == 1000


def test_an_assumed_pod_whose_bind_is_never_observed_expires_after_the_ttl() -> None:
    clock = FakeClock()
    cache = Cache(assumed_ttl=600, clock=clock)
    cache.upsert_node(node("n1"))
    p = pod_info("p", cpu="1")
    cache.assume(p, "n1")
    clock.now += 3600
    assert cache.expire_assumed() == []  # the bind has not finished: never expires
    cache.finish_binding(p.uid)
    clock.now += 599
    assert cache.expire_assumed() == []
    clock.now += 2
    assert cache.expire_assumed() == [p.uid]
    assert cpu_requested(cache, "n1") == 0


def test_assumed_pods_expire_each_by_its_own_deadline() -> None:
    """Bind calls that returned at different times expire in that order; one that returned
    again counts from the later call; an observed binding never expires."""
    clock = FakeClock()
    start = clock.now
    cache = Cache(assumed_ttl=100, clock=clock)
    cache.upsert_node(node("n1"))
    a, b, c, d = (pod_info(name, cpu="1") for name in "abcd")
    for p in (a, b, c, d):
        cache.assume(p, "n1")
    cache.finish_binding(a.uid)  # deadline 100
    clock.now += 10
    cache.finish_binding(b.uid)  # deadline 110
    cache.finish_binding(c.uid)  # deadline 110
    cache.finish_binding(d.uid)  # deadline 110, then observed
    cache.upsert_pod(pod_info("d", cpu="1", node_name="n1"))
    clock.now += 20
    cache.finish_binding(a.uid)  # again: deadline 130, behind b and c
    clock.now = start + 110
    assert cache.expire_assumed() == [b.uid, c.uid]
    clock.now = start + 129
    assert cache.expire_assumed() == []
    clock.now = start + 130
    assert cache.expire_assumed() == [a.uid]
    assert cpu_requested(cache, "n1") == 1000  # d, observed


def test_a_pod_bound_to_an_unknown_node_is_accounted_when_the_node_arrives() -> None:
    cache = Cache()
    cache.upsert_pod(pod_info("p", cpu="1", node_name="late"))
    cache.upsert_node(node("late"))
    assert cpu_requested(cache, "late") == 1000


def test_deleting_a_node_keeps_its_pods_until_they_go() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod_info("p", cpu="1", node_name="n1"))
    cache.remove_node("n1")
    assert "n1" not in cache.node_names()
    cache.upsert_node(node("n1"))
    assert cpu_requested(cache, "n1") == 1000
    cache.remove_node("n1")
    cache.remove_pod("uid-default-p")
    cache.upsert_node(node("n1"))
    assert cpu_requested(cache, "n1") == 0




def test_node_rows_are_reused_after_deletion() -> None:
    cache = Cache()
    for i in range(3):
        cache.upsert_node(node(f"n{i}"))
    row = cache.nodes.index["n1"]
    cache.remove_node("n1")
    cache.upsert_node(node("n9", cpu="2"))
    assert cache.nodes.index["n9"] == row
    assert int(cache.nodes.allocatable[row, 0]) == 2000


def test_extended_resources_get_a_column_on_first_use() -> None:
    cache = Cache()
    cache.upsert_node(node("n1", extra={"example.com/gpu": "4"}))
    col = cache.nodes.resources.column["example.com/gpu"]
    assert int(cache.nodes.allocatable[cache.nodes.index["n1"], col]) == 4


def test_snapshot_orders_nodes_round_robin_across_zones() -> None:
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c")]:
        cache.upsert_node(node(name, zone=zone))
    snap = Snapshot(cache)
    names = [cache.nodes.names[int(r)] for r in snap.order()]
    assert names == ["a1", "b1", "c1", "a2", "a3"]


def test_snapshot_derived_data_follows_label_changes() -> None:
    cache = Cache()
    cache.upsert_node(node("n1", zone="a"))
    snap = Snapshot(cache)
    _, values = snap.domains("topology.kubernetes.io/zone")
    assert values == ["a"]
    cache.upsert_node(node("n1", zone="b"))
    _ids, values = snap.domains("topology.kubernetes.io/zone")
    assert values == ["b"]


def test_label_index_finds_matching_pods_in_the_selected_namespaces() -> None:
    from scheduler.model.selectors import LabelSelector

    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod_info("a", node_name="n1", labels={"app": "web"}))
    cache.upsert_pod(pod_info("b", node_name="n1", labels={"app": "db"}))
    cache.upsert_pod(pod_info("c", node_name="n1", namespace="other", labels={"app": "web"}))
    selector = LabelSelector.parse({"matchLabels": {"app": "web"}}, "selector")
    found = Snapshot(cache).matching_pods(["default"], selector)
    assert [p.name for p in found] == ["a"]
    everything = LabelSelector.parse({}, "selector")
    assert sorted(p.name for p in Snapshot(cache).matching_pods(["default", "other"],
                                                                 everything)) == ["a", "b", "c"]


def owned(name: str, node_name: str, **kw: object) -> PodInfo:
    obj = pod(name, node_name=node_name, **kw)  # type: ignore[arg-type]
    obj["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web", "uid": "rs",
                                           "controller": True}]
    return PodInfo.from_pod(obj)


def test_owner_rows_follow_pods_terminations_and_nodes() -> None:
    cache = Cache()
    snapshot = Snapshot(cache)
    for name in ("a", "b"):
        cache.upsert_node(node(name))
    cache.upsert_pod(owned("w1", "a"))
    cache.upsert_pod(owned("w2", "b"))
    cache.upsert_pod(owned("w3", "b"))
    cache.upsert_pod(pod_info("bare", node_name="a"))

    def nodes() -> list[str]:
        rows = snapshot.owner_rows("default", "ReplicaSet", "web")
        return sorted(cache.nodes.names[int(r)] for r in rows)

    assert nodes() == ["a", "b", "b"]
    cache.upsert_pod(owned("w2", "b", deletion_timestamp="2026-11-25T00:00:00Z"))
    assert nodes() == ["a", "b"]  # terminating pods do not count
    cache.remove_node("b")
    assert nodes() == ["a"]  # w3 waits for its node
    cache.upsert_node(node("b"))
    assert nodes() == ["a", "b"]
    cache.remove_pod("uid-default-w1")
    cache.remove_pod("uid-default-w3")
    assert nodes() == [] and cache.nodes.owner_rows == {}


def test_pods_asking_the_same_share_one_read_only_request_vector() -> None:
    """The vectors are kept by the requests themselves: siblings share one, a resize or
    another request gets its own, and no one can change a shared one by accident."""
    cache = Cache()
    cache.upsert_node(node("n1"))
    index = cache.nodes.resources
    a = index.pod_vector(pod_info("a", cpu="500m", memory="1Gi"))
    b = index.pod_vector(pod_info("b", cpu="500m", memory="1Gi"))
    c = index.pod_vector(pod_info("c", cpu="1", memory="1Gi"))
    assert a is b and a is not c
    assert c[index.column["cpu"]] == 1000
    with pytest.raises(ValueError):
        a[0] = 1
    # A resource first seen in a request gets its column before the vector is built.
    gpu = {"name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "2"}}}
    cache.upsert_pod(pod_info("p", node_name="n1", containers=[gpu]))
    assert int(cache.nodes.requested[0, index.column["example.com/gpu"]]) == 2


def test_the_change_log_names_the_rows_changed_since_a_mark() -> None:
    cache = Cache()
    for name in ("a", "b", "c"):
        cache.upsert_node(node(name))
    table = cache.nodes
    row = table.index.__getitem__
    mark = table.change_mark
    assert table.rows_changed_since(mark) == []
    cache.upsert_pod(pod_info("p1", node_name="b"))
    cache.assume(pod_info("p2"), "c")
    cache.remove_pod("uid-default-p1")
    assert table.rows_changed_since(mark) == [row("b"), row("c"), row("b")]
    later = table.change_mark
    cache.upsert_node(node("a", cpu="8"))
    assert table.rows_changed_since(later) == [row("a")]
    # A resource no node had: every row changed, and no earlier mark can be answered.
    cache.upsert_node(node("c", extra={"example.com/gpu": "1"}))
    assert table.rows_changed_since(mark) is None
    assert table.rows_changed_since(later) is None
    assert table.rows_changed_since(table.change_mark) == []


def test_the_change_log_forgets_its_oldest_half(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_table, "_CHANGE_LOG_LIMIT", 4)
    cache = Cache()
    cache.upsert_node(node("a"))
    table = cache.nodes
    first = table.change_mark
    for i in range(4):
        cache.upsert_pod(pod_info(f"p{i}", node_name="a"))
    assert table.rows_changed_since(first) == [0, 0, 0, 0]
    cache.upsert_pod(pod_info("p4", node_name="a"))  # a fifth change: two are dropped
    assert table.rows_changed_since(first) is None
    assert table.rows_changed_since(first + 2) == [0, 0, 0]


def test_owner_rows_stay_packed_as_pods_come_and_go() -> None:
    placed = OwnerRows()
    for i in range(10):  # past the first array's eight slots
        placed.put(f"p{i}", 100 + i)
    placed.put("p3", 7)  # the pod moved (a binding confirmed elsewhere): one entry still
    assert placed.drop("p0") and placed.drop("p9") and not placed.drop("p0")
    got = placed.rows()
    assert sorted(got.tolist()) == [7, 101, 102, 104, 105, 106, 107, 108]
    got[:] = -1  # a copy: the caller's changes do not reach the table
    assert len(placed) == 8 and -1 not in placed.rows().tolist()
