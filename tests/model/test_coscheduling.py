"""scheduler-plugins' PodGroup controller's status (pkg/controllers/podgroup_controller.go,
Reconcile, v0.34.7), reconcile by reconcile and where its reconciles end."""

from __future__ import annotations

import pytest

from scheduler.model.coscheduling import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    SCHEDULING,
    CoschedulingStatus,
    Member,
    parse_status,
    settle,
    step,
)

PENDING_POD = Member("Pending", ("trainer",))


def members(*phases: str) -> list[Member]:
    return [Member(p, ("trainer",)) for p in phases]


def test_a_new_group_is_pending_first() -> None:
    assert step(CoschedulingStatus(), 3, "ml", []) == CoschedulingStatus(PENDING)


def test_pending_becomes_scheduling_once_min_member_pods_exist_with_their_owners() -> None:
    assert step(CoschedulingStatus(PENDING), 3, "ml", members("Pending", "Pending")) == \
        CoschedulingStatus(PENDING)
    assert step(CoschedulingStatus(PENDING), 2, "ml", members("Pending", "Pending")) == \
        CoschedulingStatus(SCHEDULING, occupied_by="ml/trainer")


@pytest.mark.parametrize(("phases", "want"), [
    pytest.param(("Running", "Pending", "Pending"), CoschedulingStatus(SCHEDULING, running=1),
                 id="fewer running than minMember: Scheduling"),
    pytest.param(("Running", "Succeeded", "Running"),
                 CoschedulingStatus(RUNNING, running=2, succeeded=1), id="all up: Running"),
    pytest.param(("Running", "Failed", "Running"),
                 CoschedulingStatus(FAILED, running=2, failed=1),
                 id="a failure among minMember: Failed"),
    pytest.param(("Succeeded",) * 3, CoschedulingStatus(FINISHED, succeeded=3),
                 id="minMember succeeded: Finished"),
    pytest.param(("Running", "Running"), CoschedulingStatus(PENDING, running=2),
                 id="members gone below minMember: Pending again"),
])
def test_a_scheduling_group_is_counted(phases: tuple[str, ...],
                                       want: CoschedulingStatus) -> None:
    assert step(CoschedulingStatus(SCHEDULING), 3, "ml", members(*phases)) == want


def test_finished_and_failed_are_final() -> None:
    for phase in (FINISHED, FAILED):
        assert step(CoschedulingStatus(phase), 3, "ml", []) == CoschedulingStatus(phase)


def test_settle_ends_where_the_controllers_reconciles_end() -> None:
    assert settle(CoschedulingStatus(), 3, "ml", members("Running", "Running", "Running")) == \
        CoschedulingStatus(RUNNING, running=3, occupied_by="ml/trainer")
    assert settle(CoschedulingStatus(), 3, "ml", [PENDING_POD]) == CoschedulingStatus(PENDING)


def test_the_status_is_read_from_the_object() -> None:
    assert parse_status({"phase": "Running", "running": 3, "occupiedBy": "ml/a"}) == \
        CoschedulingStatus(RUNNING, running=3, occupied_by="ml/a")
    assert parse_status(None) == CoschedulingStatus()
