"""Events as client-go's events/v1 broadcaster writes them: create, series, final count,
refresh, and re-creation of an expired Event."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scheduler.operator.event_series import (
    FINISH_SECONDS,
    REFRESH_SECONDS,
    EventRecorder,
    event_key,
)
from scheduler.testing import ManualClock
from tests.operator.fake_api import FakeApi, Reply

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def event(name: str = "web.1", *, reason: str = "FailedScheduling", rv: str = "7",
          note: str = "0/1 nodes are available") -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-11-25T10:00:00.000000Z", "reportingController": "s",
        "reportingInstance": "s-host", "action": "Scheduling", "reason": reason,
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u",
                      "resourceVersion": rv},
        "note": note, "type": "Warning",
    }


def recorder(api: FakeApi, clock: ManualClock) -> EventRecorder:
    return EventRecorder(api.kube_api(), clock=clock,
                         wall=lambda: datetime.fromtimestamp(clock(), UTC))


def test_the_key_is_upstreams_without_the_note() -> None:
    assert event_key(event(note="a")) == event_key(event("web.2", note="b"))
    assert event_key(event()) != event_key(event(rv="8"))
    assert event_key(event()) != event_key(event(reason="Scheduled"))


def test_first_created_second_patched_then_only_counted_until_the_final_count(
        api: FakeApi) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{EVENTS}/web.1", Reply(200, {}))
    clock = ManualClock()
    r = recorder(api, clock)
    for i in range(5):
        r.record(event(f"web.{i + 1}"))
        clock.advance(10)
    (created,) = api.calls("POST", EVENTS)
    assert created.body["metadata"]["name"] == "web.1" and "series" not in created.body
    (series,) = api.calls("PATCH", f"{EVENTS}/web.1")
    assert series.body == {"series": {"count": 2,
                                      "lastObservedTime": "1970-01-01T00:16:50.000000Z"}}
    clock.advance(FINISH_SECONDS - 11)
    r.maintain()
    assert len(api.calls("PATCH", f"{EVENTS}/web.1")) == 1  # still running
    clock.advance(11)
    r.maintain()
    final = api.calls("PATCH", f"{EVENTS}/web.1")[-1]
    assert final.body["series"]["count"] == 5
    # Forgotten: the same Event again starts anew.
    r.record(event("web.9"))
    assert [c.body["metadata"]["name"] for c in api.calls("POST", EVENTS)] == ["web.1", "web.9"]


def test_a_running_series_is_refreshed_every_thirty_minutes(api: FakeApi) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{EVENTS}/web.1", Reply(200, {}))
    clock = ManualClock()
    r = recorder(api, clock)
    r.record(event())
    r.record(event())
    steps = int(REFRESH_SECONDS // 60)
    for _ in range(steps):
        clock.advance(60)
        r.record(event())
        r.maintain()
    counts = [c.body["series"]["count"] for c in api.calls("PATCH", f"{EVENTS}/web.1")]
    assert counts == [2, 2 + steps]


def test_a_single_event_is_forgotten_after_six_minutes(api: FakeApi) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    clock = ManualClock()
    r = recorder(api, clock)
    r.record(event())
    clock.advance(FINISH_SECONDS)
    r.record(event("web.2"))
    assert len(api.calls("POST", EVENTS)) == 2
    assert api.calls("PATCH", f"{EVENTS}/web.1") == []


def test_an_expired_event_is_created_again_with_its_series(api: FakeApi) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{EVENTS}/web.1", Reply(404, {"kind": "Status", "code": 404}))
    clock = ManualClock()
    r = recorder(api, clock)
    r.record(event())
    r.record(event("web.2"))
    _, again = api.calls("POST", EVENTS)
    assert again.body["metadata"]["name"] == "web.1"
    assert again.body["series"]["count"] == 2


def test_an_event_is_kept_as_its_key_and_four_fields_and_rebuilt_whole() -> None:
    from scheduler.operator.event_series import _body, _first

    plain = event()
    related = {**event(), "related": {"kind": "Pod", "namespace": "default", "name": "pre",
                                      "uid": "p"}}
    for body in (plain, related):
        assert _body(event_key(body), _first(body)) == body
