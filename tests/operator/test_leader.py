"""Leader election: client-go's acquire/renew rules and the write fence, on a fake clock."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from scheduler.config import LeaderElection, parse_config
from scheduler.framework.registry import ConfigError
from scheduler.operator.leader import WATCHDOG_SECONDS, LeaderElector, LeaseError, LeaseRecord
from scheduler.plugins.registry import default_registry

CONFIG = LeaderElection(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Store:
    """One Lease object, with the API server's resourceVersion precondition."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise LeaseError("connection refused")

    def _write(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = replace(record, version=str(self.version))
        return self.record

    def get(self) -> LeaseRecord | None:
        self._check()
        return self.record

    def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        return None if self.record is not None else self._write(record)

    def update(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        if self.record is None or record.version != self.record.version:
            return None
        return self._write(record)


class Replica:
    def __init__(self, store: Store, clock: Clock, name: str) -> None:
        self.events: list[str] = []
        self.elector = LeaderElector(
            store, CONFIG, identity=name, clock=clock, now=lambda: f"t{clock.t}",
            jitter=lambda: 0.0,
            on_started=lambda: self.events.append("started"),
            on_lost=lambda: self.events.append("lost"),
            on_status=lambda leading: self.events.append(f"status={leading}"),
        )


def test_the_first_replica_creates_the_lease_and_leads() -> None:
    clock, store = Clock(), Store()
    a = Replica(store, clock, "a")
    assert a.elector.step() == CONFIG.retry_period
    assert a.elector.leading and a.elector.may_write()
    assert a.events == ["status=True", "started"]
    assert store.record is not None
    assert (store.record.holder, store.record.lease_duration, store.record.transitions) == (
        "a", 15, 0)


def test_a_standby_waits_a_full_lease_duration_after_the_last_change_it_saw() -> None:
    clock, store = Clock(), Store()
    a, b = Replica(store, clock, "a"), Replica(store, clock, "b")
    a.elector.step()
    b.elector.step()
    assert not b.elector.leading and not b.elector.may_write()
    # a renews at t+2: b sees the record change, so its wait starts again from there.
    clock.t += 2
    a.elector.step()
    b.elector.step()
    clock.t += 14.9
    b.elector.step()
    assert not b.elector.leading
    clock.t += 0.2  # 15.1 s after b last saw a change
    b.elector.step()
    assert b.elector.leading and b.events == ["status=True", "started"]
    assert store.record is not None
    assert (store.record.holder, store.record.transitions) == ("b", 1)


def test_of_two_standbys_racing_for_an_expired_lease_one_wins() -> None:
    clock, store = Clock(), Store()
    Replica(store, clock, "old").elector.step()
    b, c = Replica(store, clock, "b"), Replica(store, clock, "c")
    b.elector.step()
    c.elector.step()
    clock.t += 16
    stale = store.get()
    assert stale is not None
    b.elector.step()
    # c read the record before b's update landed: its update carries a stale version.
    assert store.update(replace(stale, holder="c")) is None
    c.elector.step()
    assert b.elector.leading and not c.elector.leading


def test_writes_are_fenced_on_the_leaders_own_clock_even_if_its_elector_is_stuck() -> None:
    clock, store = Clock(), Store()
    a = Replica(store, clock, "a")
    a.elector.step()
    clock.t += 9.9
    assert a.elector.may_write()
    clock.t += 0.1  # renewDeadline after the start of the last successful renewal
    assert not a.elector.may_write()


def test_a_leader_that_cannot_renew_stops_writing_before_a_standby_may_take_over() -> None:
    clock, store = Clock(), Store()
    a, b = Replica(store, clock, "a"), Replica(store, clock, "b")
    a.elector.step()
    b.elector.step()
    store.down = True
    fenced_at = None
    for _ in range(20):
        clock.t += 1
        if a.elector.step() and not a.elector.may_write() and fenced_at is None:
            fenced_at = clock.t
        if a.events[-1] == "lost":
            break
    assert a.events[-2:] == ["status=False", "lost"]
    assert not a.elector.leading and not a.elector.may_write()
    assert fenced_at is not None and fenced_at - 1000.0 <= CONFIG.renew_deadline
    store.down = False
    b.elector.step()
    assert not b.elector.leading, "the lease is still valid for the standby"
    clock.t = 1000.0 + CONFIG.lease_duration + 0.1
    b.elector.step()
    assert b.elector.leading


def test_release_clears_the_holder_so_a_standby_takes_over_on_its_next_step() -> None:
    clock, store = Clock(), Store()
    a, b = Replica(store, clock, "a"), Replica(store, clock, "b")
    a.elector.step()
    b.elector.step()
    a.elector.release()
    assert not a.elector.may_write() and not a.elector.leading
    assert store.record is not None
    assert (store.record.holder, store.record.lease_duration) == ("", 1)
    clock.t += 2
    b.elector.step()
    assert b.elector.leading
    assert store.record.holder == "b" and store.record.transitions == 1


def test_a_standby_releases_nothing() -> None:
    clock, store = Clock(), Store()
    a, b = Replica(store, clock, "a"), Replica(store, clock, "b")
    a.elector.step()
    b.elector.step()
    b.elector.release()
    assert store.record is not None and store.record.holder == "a"


@pytest.mark.parametrize("jitter", [0.0, 1.0])
def test_a_standby_retries_after_the_retry_period_with_up_to_20_percent_jitter(
    jitter: float,
) -> None:
    clock, store = Clock(), Store()
    Replica(store, clock, "a").elector.step()
    b = LeaderElector(store, CONFIG, identity="b", clock=clock, jitter=lambda: jitter,
                      on_started=lambda: None, on_lost=lambda: None)
    assert b.step() == pytest.approx(CONFIG.retry_period * (1 + 0.2 * jitter))


def test_the_watchdog_fails_a_leader_that_has_not_renewed_for_its_lease_plus_20s() -> None:
    """client-go's HealthzAdaptor, with the 20 s timeout kube-scheduler gives it: only a
    leader whose elector stopped renewing (stuck) fails /healthz."""
    clock, store = Clock(), Store()
    a, b = Replica(store, clock, "a"), Replica(store, clock, "b")
    a.elector.step()
    b.elector.step()
    clock.t += CONFIG.lease_duration + WATCHDOG_SECONDS
    assert a.elector.check()[0] and b.elector.check()[0]
    clock.t += 0.1  # a's elector has not stepped since it acquired the lease
    ok, detail = a.elector.check()
    assert not ok
    assert detail["reason"] == ("failed election to renew leadership on lease "
                                f"{CONFIG.resource_name}")
    assert b.elector.check()[0], "a standby never fails the watchdog"
    a.elector.step()  # renews (the store is up): healthy again
    assert a.elector.check()[0]


class BrokenStore(Store):
    def get(self) -> LeaseRecord | None:
        raise ValueError("invalid literal for int() with base 10: 'x'")


@pytest.mark.parametrize("leading", [True, False], ids=["leader", "standby"])
def test_an_error_the_elector_has_no_rule_for_ends_it_as_a_lost_lease(leading: bool) -> None:
    """Never a silent death: the app is told (it exits, as kube-scheduler does when its
    elector's Run returns), writes are fenced, the metric says not leading."""
    clock, store = Clock(), BrokenStore()
    a = Replica(store, clock, "a")
    if leading:
        a.elector.store = Store()  # leads first, through a store that works
        a.elector.step()
        a.elector.store = store
    ended = threading.Event()
    a.elector._on_lost = lambda: (a.events.append("lost"), ended.set())
    a.elector.start()
    assert ended.wait(5), "the elector thread ended without a word"
    assert a.events[-2:] == ["status=False", "lost"]
    assert not a.elector.leading and not a.elector.may_write()


INT32_LEASE = ("leaderElection.leaseDuration: must be at most 2147483647s (the Lease's "
               "leaseDurationSeconds is an int32)")


@pytest.mark.parametrize(("duration", "message"), [
    # Longer than Go's time.Duration can hold: refused as a duration at all.
    ("1" + "0" * 400 + "s", "leaderElection.leaseDuration: Invalid value: "),
    ("99999999h", "leaderElection.leaseDuration: Invalid value: "),
    # A valid duration the Lease's int32 cannot hold.
    ("2147483648s", INT32_LEASE),
    ("1000000h", INT32_LEASE),
])
def test_a_lease_duration_the_lease_cannot_hold_is_refused_at_load(
    duration: str, message: str
) -> None:
    """leaseDurationSeconds is an int32: an infinite or longer duration is refused when the
    configuration is loaded, not by an elector thread that overflows."""
    with pytest.raises(ConfigError) as excinfo:
        parse_config({"leaderElection": {"leaseDuration": duration,
                                         "renewDeadline": "10s"}}, default_registry())
    assert str(excinfo.value).startswith(message), str(excinfo.value)
