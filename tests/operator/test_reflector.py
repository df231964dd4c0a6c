"""The lean pod/node watch: list, watch, and a relist after 410 Gone that sweeps out ghosts."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from scheduler.config import default_config
from scheduler.framework.ports import NullPorts
from scheduler.intake import PRIORITY_CLASSES, Intake
from scheduler.operator.reflector import Reflector
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler
from scheduler.testing import node, pod
from tests.operator.fake_api import FakeApi, Reply


def listing(items: list[dict[str, Any]], rv: str) -> Reply:
    return Reply(200, {"kind": "List", "metadata": {"resourceVersion": rv}, "items": items})


def gone() -> dict[str, Any]:
    return {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}


def new_scheduler() -> tuple[Scheduler, Intake]:
    registry = default_registry()
    ports = NullPorts()
    s = Scheduler(default_config(registry), registry, binder=ports, reporter=ports)
    return s, Intake(s)


def run_until(reflector: Reflector, done: threading.Event) -> None:
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert done.wait(5), "the reflector did not get there in time"
    reflector.stop()


def test_pods_deleted_while_the_watch_was_down_leave_the_cache(api: FakeApi) -> None:
    s, intake = new_scheduler()
    s.cache.upsert_node(node("n1"))
    kept = pod("kept", cpu="1", node_name="n1")
    ghost = pod("ghost", cpu="1", node_name="n1")
    api.on("GET", "/api/v1/pods", listing([kept, ghost], "10"), listing([kept], "20"))
    api.on("WATCH", "/api/v1/pods", Reply(200, lines=[gone()]), Reply(200, lines=[]))
    relisted = threading.Event()

    def on_listed(items: list[dict[str, Any]]) -> None:
        intake.resync_pods(items)
        if reflector.relists == 1:  # the second listing is being applied
            relisted.set()

    reflector = Reflector(api.kube_api(), "/api/v1/pods", name="pods",
                          on_event=intake.on_pod, on_listed=on_listed, watch_timeout=1)
    run_until(reflector, relisted)
    s.refresh()
    assert s.cache.get_pod("uid-default-kept") is not None
    assert s.cache.get_pod("uid-default-ghost") is None
    assert int(s.cache.nodes.requested[s.cache.nodes.index["n1"], 0]) == 1000


def test_nodes_deleted_while_the_watch_was_down_leave_the_cache(api: FakeApi) -> None:
    s, intake = new_scheduler()
    api.on("GET", "/api/v1/nodes", listing([node("n1"), node("n2")], "5"),
           listing([node("n1")], "9"))
    api.on("WATCH", "/api/v1/nodes", Reply(200, lines=[gone()]), Reply(200, lines=[]))
    relisted = threading.Event()

    def on_listed(items: list[dict[str, Any]]) -> None:
        intake.resync_nodes(items)
        if reflector.relists == 1:
            relisted.set()

    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes",
                          on_event=intake.on_node, on_listed=on_listed, watch_timeout=1)
    run_until(reflector, relisted)
    s.refresh()
    assert s.cache.node_names() == {"n1"}
    assert s.known_nodes == {"n1"}


def test_watch_events_are_applied_and_the_version_resumes(api: FakeApi) -> None:
    s, intake = new_scheduler()
    s.cache.upsert_node(node("n1"))
    bound = pod("p", cpu="2", node_name="n1")
    bound["metadata"]["resourceVersion"] = "12"
    api.on("GET", "/api/v1/pods", listing([], "11"))
    api.on("WATCH", "/api/v1/pods",
           Reply(200, lines=[{"type": "ADDED", "object": bound},
                             {"type": "BOOKMARK",
                              "object": {"metadata": {"resourceVersion": "15"}}}]),
           Reply(200, lines=[]))
    seen = threading.Event()

    def on_event(kind: str | None, obj: dict[str, Any]) -> None:
        intake.on_pod(kind, obj)
        seen.set()

    reflector = Reflector(api.kube_api(), "/api/v1/pods", name="pods", on_event=on_event,
                          on_listed=intake.resync_pods, watch_timeout=1)
    run_until(reflector, seen)
    s.refresh()
    assert int(s.cache.nodes.requested[s.cache.nodes.index["n1"], 0]) == 2000
    watches = [r for r in api.requests if "watch=true" in r.query]
    assert "resourceVersion=11" in watches[0].query


def test_a_listing_is_paginated(api: FakeApi) -> None:
    _, intake = new_scheduler()
    first = Reply(200, {"metadata": {"resourceVersion": "", "continue": "tok"},
                        "items": [node("n1")]})
    api.on("GET", "/api/v1/nodes", first, listing([node("n2")], "7"))
    api.on("WATCH", "/api/v1/nodes", Reply(200, lines=[]))
    listed: list[list[str]] = []
    done = threading.Event()

    def on_listed(items: list[dict[str, Any]]) -> None:
        listed.append([i["metadata"]["name"] for i in items])
        done.set()

    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes",
                          on_event=intake.on_node, on_listed=on_listed, page_size=1,
                          watch_timeout=1)
    run_until(reflector, done)
    assert listed[0] == ["n1", "n2"]


def fetched(api: FakeApi, path: str) -> bool:
    """Whether ``path`` is listed within 5 s."""
    deadline = time.monotonic() + 5
    while not api.calls("GET", path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(api.calls("GET", path))


def test_a_gated_listing_is_fetched_at_once_and_applied_once_the_gate_opens(
        api: FakeApi) -> None:
    _, intake = new_scheduler()
    api.on("GET", "/api/v1/nodes", listing([node("n1")], "7"))
    api.on("WATCH", "/api/v1/nodes", Reply(200, lines=[]))
    gate, done = threading.Event(), threading.Event()
    applied: list[bool] = []

    def on_listed(items: list[dict[str, Any]]) -> None:
        applied.append(gate.is_set())
        done.set()

    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes",
                          on_event=intake.on_node, on_listed=on_listed, watch_timeout=1,
                          apply_after=gate)
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert fetched(api, "/api/v1/nodes")
    assert not done.wait(0.2) and not reflector.listed.is_set()
    gate.set()
    assert done.wait(5)
    reflector.stop()
    assert applied == [True] and reflector.listed.is_set()


def test_a_reflector_stopped_while_its_listing_waits_never_applies_it(api: FakeApi) -> None:
    _, intake = new_scheduler()
    api.on("GET", "/api/v1/nodes", listing([node("n1")], "7"))
    applied: list[object] = []
    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes",
                          on_event=intake.on_node, on_listed=applied.append, watch_timeout=1,
                          apply_after=threading.Event())
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert fetched(api, "/api/v1/nodes")
    reflector.stop()
    thread.join(5)
    assert not thread.is_alive() and applied == []
    assert not api.calls("WATCH", "/api/v1/nodes")


def versioned(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = rv
    return obj


def test_a_watch_broken_mid_stream_resumes_from_the_last_version_and_drops_replays(
    api: FakeApi,
) -> None:
    """client-go's reflector resumes from its lastSyncResourceVersion; an event the server
    replays at or below it was applied already and is dropped."""
    api.on("GET", "/api/v1/nodes", listing([], "11"))
    api.on("WATCH", "/api/v1/nodes",
           Reply(200, lines=[{"type": "ADDED", "object": versioned(node("n1"), "12")},
                             {"type": "ADDED", "object": versioned(node("n2"), "13")}],
                 cut=True),
           Reply(200, lines=[{"type": "ADDED", "object": versioned(node("n2"), "13")},
                             {"type": "ADDED", "object": versioned(node("n3"), "14")}]),
           Reply(200, lines=[]))
    delivered: list[str] = []
    done = threading.Event()

    def on_event(kind: str | None, obj: dict[str, Any]) -> None:
        delivered.append(obj["metadata"]["resourceVersion"])
        if obj["metadata"]["name"] == "n3":
            done.set()

    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes", on_event=on_event,
                          on_listed=lambda items: None, watch_timeout=1)
    run_until(reflector, done)
    watches = [r.query for r in api.requests if "watch=true" in r.query]
    assert "resourceVersion=11" in watches[0]
    assert "resourceVersion=13" in watches[1]
    assert delivered == ["12", "13", "14"]
    assert reflector.relists == 1


def skipped(s: Scheduler, kind: str) -> float:
    value = s.metrics.registry.get_sample_value(
        "secondary_scheduler_watch_objects_skipped_total", {"kind": kind})
    return value or 0.0


def test_an_object_the_handler_cannot_parse_is_counted_and_skipped_and_the_watch_goes_on(
    api: FakeApi,
) -> None:
    s, intake = new_scheduler()
    broken = versioned(node("broken"), "12")
    broken["metadata"]["labels"] = "not a map"
    api.on("GET", "/api/v1/nodes", listing([], "11"))
    api.on("WATCH", "/api/v1/nodes",
           Reply(200, lines=[{"type": "ADDED", "object": broken},
                             {"type": "ADDED", "object": versioned(node("n1"), "13")}]),
           Reply(200, lines=[]))
    applied = threading.Event()

    def on_event(kind: str | None, obj: dict[str, Any]) -> None:
        intake.on_node(kind, obj)
        applied.set()

    kube = api.kube_api()
    kube.metrics = s.metrics  # one registry, as in the app
    reflector = Reflector(kube, "/api/v1/nodes", name="nodes", on_event=on_event,
                          on_listed=intake.resync_nodes, watch_timeout=1)
    run_until(reflector, applied)
    assert s.known_nodes == {"n1"}
    assert skipped(s, "nodes") == 1
    watches = [r.query for r in api.requests if "watch=true" in r.query]
    assert all("resourceVersion=11" not in query for query in watches[1:])


def test_a_listing_with_an_object_that_cannot_be_parsed_lands_without_it(api: FakeApi) -> None:
    s, intake = new_scheduler()
    broken = node("broken")
    broken["spec"] = "not a map"
    api.on("GET", "/api/v1/nodes", listing([broken, node("n1")], "11"))
    api.on("WATCH", "/api/v1/nodes", Reply(200, lines=[]))
    reflector = Reflector(api.kube_api(), "/api/v1/nodes", name="nodes",
                          on_event=intake.on_node, on_listed=intake.resync_nodes,
                          watch_timeout=1)
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert reflector.listed.wait(5)
    reflector.stop()
    assert s.known_nodes == {"n1"}
    assert skipped(s, "nodes") == 1


def test_a_listed_pod_that_cannot_be_applied_keeps_the_version_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Skipped, not taken for deleted: the cache keeps the pod's last good version (its
    resources stay accounted on its node)."""
    s, intake = new_scheduler()
    s.cache.upsert_node(node("n1"))
    intake.resync_pods([pod("p", cpu="1", node_name="n1")])

    def cannot_parse(event_type: str | None, obj: Any) -> str:
        raise ValueError("cannot parse")

    monkeypatch.setattr(intake, "_apply_pod", cannot_parse)
    assert intake.resync_pods([pod("p", cpu="1", node_name="n1")]) == []
    s.refresh()
    assert s.cache.get_pod("uid-default-p") is not None
    assert skipped(s, "pods") == 1


def test_a_low_volume_object_that_cannot_be_parsed_is_skipped_in_events_and_listings() -> None:
    """Namespaces, PriorityClasses and PDBs come from kopf's watches and the periodic
    listing: a bad one is counted and skipped there too, and the rest applied (before, one
    bad PriorityClass failed every resync, the first one included, so nothing started)."""
    s, intake = new_scheduler()
    bad = {"metadata": {"name": "bad", "resourceVersion": "3"}, "value": "high"}
    good = {"metadata": {"name": "good", "resourceVersion": "4"}, "value": 7}
    assert intake.resync(PRIORITY_CLASSES, [bad, good], "5") == []
    intake.on_priority_class("MODIFIED", {**bad, "metadata": {"name": "bad",
                                                              "resourceVersion": "6"}})
    assert skipped(s, "priorityclasses") == 2
    waiting = pod("p", cpu="1")
    waiting["spec"]["priorityClassName"] = "good"
    assert intake.pod_info(waiting).priority == 7
