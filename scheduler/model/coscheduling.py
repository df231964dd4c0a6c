"""The status of scheduler-plugins' Coscheduling PodGroup (``scheduling.x-k8s.io/v1alpha1``)
as its PodGroup controller computes it (``pkg/controllers/podgroup_controller.go``,
``Reconcile``, release v0.34.7): what Kubeflow's training operator and other users of that CRD
read (``status.phase``, ``running``, ``succeeded``, ``failed``, ``occupiedBy``).

The controller runs one step per reconcile and is called again by its own write; ``settle``
runs those steps until nothing changes, so one write says where the controller would end.
Its members are the pods labelled ``scheduling.x-k8s.io/pod-group: <name>`` in the group's
namespace (the controller's own list forgets the namespace: a same-named group elsewhere
would count too, which is not reproduced).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
TERMINAL = frozenset({FINISHED, FAILED})


@dataclass(frozen=True, slots=True)
class CoschedulingStatus:
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    occupied_by: str = ""


@dataclass(frozen=True, slots=True)
class Member:
    """A labelled pod as the controller reads it: its phase, and its owners' names."""

    phase: str
    owners: tuple[str, ...] = ()


def parse_status(status: dict[str, object] | None) -> CoschedulingStatus:
    raw = status or {}

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return CoschedulingStatus(str(raw.get("phase") or ""), count("running"),
                              count("succeeded"), count("failed"),
                              str(raw.get("occupiedBy") or ""))


def step(status: CoschedulingStatus, min_member: int, namespace: str,
         members: Sequence[Member]) -> CoschedulingStatus:
    """One reconcile of the controller."""
    if status.phase in TERMINAL:
        return status
    if status.phase == "":
        return replace(status, phase=PENDING)
    if status.phase == PENDING:
        if len(members) < min_member:
            return status
        occupied = status.occupied_by
        if members and members[0].owners:
            occupied = ",".join(sorted(f"{namespace}/{o}" for o in members[0].owners))
        return replace(status, phase=SCHEDULING, occupied_by=occupied)
    running = sum(1 for m in members if m.phase == "Running")
    succeeded = sum(1 for m in members if m.phase == "Succeeded")
    failed = sum(1 for m in members if m.phase == "Failed")
    counted = replace(status, running=running, succeeded=succeeded, failed=failed)
    if len(members) < min_member:
        return replace(counted, phase=PENDING)
    phase = SCHEDULING if succeeded + running < min_member else RUNNING
    if failed and failed + running + succeeded >= min_member:
        phase = FAILED
    if succeeded >= min_member:
        phase = FINISHED
    return replace(counted, phase=phase)


def settle(status: CoschedulingStatus, min_member: int, namespace: str,
           members: Sequence[Member]) -> CoschedulingStatus:
    """The status the controller's reconciles end at (each write triggers the next)."""
    for _ in range(4):  # "" -> Pending -> Scheduling -> counted: at most four steps
        following = step(status, min_member, namespace, members)
        if following == status:
            break
        status = following
    return status
