"""The claim index of DynamicResources' claim hint (``hints.CLAIM_INDEX``, a ``HintIndex``):
the queue keeps the pending pods by the claims they can name (``resourceClaimName``, and
the claims recorded in ``status.resourceClaimStatuses`` for their templates), and a claim
event runs the hint only for that claim's pods, or for every pod when the claim's devices
were freed. The queue's moves are the same as without the index; the hint runs less."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.plugins.dynamic_resources import hints
from scheduler.queue.scheduling_queue import UNSCHEDULABLE
from scheduler.testing import pod, run_cycles, scheduler_of, set_pod, set_storage_object
from tests.plugins.dynamic_resources.plugin_fixtures import (
    DEVICE_CLASS,
    POD_UID,
    WORKER,
    allocated,
    request,
    resource_claim,
)


def _pod(name: str, uid: str, *, claim: str = "", template_claim: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "r"}
    status = None
    if claim:
        entry["resourceClaimName"] = claim
    else:
        entry["resourceClaimTemplateName"] = "t"
        status = {"resourceClaimStatuses": [{"name": "r", "resourceClaimName": template_claim}]}
    return pod(name, uid=uid, spec={"resourceClaims": [entry]}, status=status)


def _claim(name: str, owner_uid: str = "") -> dict[str, Any]:
    out = resource_claim(name, request(1), owner=bool(owner_uid))
    if owner_uid:
        out["metadata"]["ownerReferences"][0]["uid"] = owner_uid
    return out


# pod-a: its claim exists, no device for it (rejected by Filter); pod-b: its template's
# claim, recorded in its status, does not exist yet; pod-c: its claim does not exist yet
# (both gated by PreEnqueue). claim-x is allocated to nobody pending.
CLAIM_A = _claim("claim-a")
CLAIM_X = allocated(_claim("claim-x"))
PODS = [_pod("pod-a", "uid-a", claim="claim-a"), _pod("pod-b", POD_UID, template_claim="b-1"),
        _pod("pod-c", "uid-c", claim="claim-c")]


INDEX, ANSWER = hints.CLAIM_INDEX, hints.schedulable_after_claim_change


def _status_changed(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    out["metadata"]["resourceVersion"] = "2"
    out["status"] = {"reservedFor": [{"resource": "pods", "name": "other", "uid": "u"}]}
    return out


def _deallocated(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    out["metadata"]["resourceVersion"] = "2"
    del out["status"]
    return out


# name, the event (object, deleted), pods left in the pool, hint calls with the index
EVENTS: list[tuple[str, Callable[[], tuple[dict[str, Any], bool]], list[str], int]] = [
    ("claim of a gated pod created", lambda: (_claim("claim-c"), False),
     ["default/pod-a", "default/pod-b"], 1),
    ("generated claim recorded in the pod's status created",
     lambda: (_claim("b-1", POD_UID), False), ["default/pod-a", "default/pod-c"], 1),
    ("unrelated claim created", lambda: (_claim("claim-z"), False),
     ["default/pod-a", "default/pod-b", "default/pod-c"], 0),
    ("status of a rejected pod's claim changed", lambda: (_status_changed(CLAIM_A), False),
     ["default/pod-b", "default/pod-c"], 1),
    ("unrelated claim deallocated", lambda: (_deallocated(CLAIM_X), False),
     ["default/pod-b", "default/pod-c"], 3),
    # The gated pods are queued, and gated again by PreEnqueue.
    ("allocated claim deleted", lambda: (CLAIM_X, True), ["default/pod-b", "default/pod-c"],
     3),
]


def _pool_after(event: Callable[[], tuple[dict[str, Any], bool]], indexed: bool,
                monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    monkeypatch.setattr(hints, "CLAIM_INDEX", INDEX if indexed else None)
    monkeypatch.setattr(hints, "schedulable_after_claim_change", ANSWER)
    calls = []

    def counted(*args: Any) -> Any:
        calls.append(args[1].key)
        return ANSWER(*args)

    monkeypatch.setattr(hints, "schedulable_after_claim_change", counted)
    s, _ = scheduler_of(pods=PODS, nodes=[WORKER], storage=[DEVICE_CLASS, CLAIM_A, CLAIM_X])
    run_cycles(s)
    assert s.queue.pending_pods()[UNSCHEDULABLE] == ["default/pod-a", "default/pod-b",
                                                     "default/pod-c"]
    calls.clear()
    obj, deleted = event()
    set_storage_object(s, obj, deleted=deleted)
    return s.queue.pending_pods()[UNSCHEDULABLE], len(calls)


@pytest.mark.parametrize(("name", "event", "left", "hint_calls"), EVENTS,
                         ids=[e[0] for e in EVENTS])
def test_claim_events_move_the_same_pods_with_fewer_hint_calls(
    name: str, event: Callable[[], tuple[dict[str, Any], bool]], left: list[str],
    hint_calls: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_index = _pool_after(event, False, monkeypatch)
    with_index = _pool_after(event, True, monkeypatch)
    assert without_index == (left, 3)
    assert with_index == (left, hint_calls)


def test_the_index_follows_a_pooled_pods_update() -> None:
    """A generated claim recorded in the status of a pod already in the pool: the pod is
    indexed under it from then on."""
    s, _ = scheduler_of(pods=[_pod("pod-b", POD_UID, template_claim="")], nodes=[WORKER],
                        storage=[DEVICE_CLASS])
    run_cycles(s)
    assert s.queue.pending_pods()[UNSCHEDULABLE] == ["default/pod-b"]
    recorded = _pod("pod-b", POD_UID, template_claim="b-1")
    recorded["metadata"]["resourceVersion"] = "2"
    set_pod(s, recorded)
    assert s.queue.pending_pods()[UNSCHEDULABLE] == ["default/pod-b"]
    set_storage_object(s, _claim("b-1", POD_UID))
    assert s.queue.pending_pods()[UNSCHEDULABLE] == []
