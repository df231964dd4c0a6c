"""DynamicResources' queueing hints: upstream's ``TestIsSchedulableAfterClaimChange`` and
``TestIsSchedulableAfterTargetPodUpdate`` (``dynamicresources_test.go``), names kept, and the
pod event that carries the claims the resourceclaim controller generated."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.events import Action, QueueingHint
from scheduler.model.dra import ResourceClaim
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamic_resources.hints import (
    schedulable_after_claim_change,
    schedulable_after_pod_update,
)
from scheduler.queue.pod_changes import pod_scheduling_properties_change
from scheduler.testing import pod
from tests.plugins.dynamic_resources.plugin_fixtures import (
    ALLOCATED_CLAIM,
    CLAIM_NAME,
    OTHER_ALLOCATED_CLAIM,
    PENDING_CLAIM,
    RESOURCE_NAME,
    Run,
    pod_with_claim_name,
    pod_with_claim_template,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def _claim(raw: Mapping[str, Any] | None) -> ResourceClaim | None:
    return None if raw is None else ResourceClaim.parse(raw)


def _changed(raw: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(raw))
    for where, value in changes.items():
        section, key = where.split("__")
        out.setdefault(section, {})[key] = value
    return out


WRONG_OWNER = copy.deepcopy(ALLOCATED_CLAIM)
WRONG_OWNER["metadata"]["ownerReferences"][0]["uid"] += "123"
UNRELATED = _changed(ALLOCATED_CLAIM, metadata__name=CLAIM_NAME + "-foo",
                     metadata__uid="uid-unrelated")


@pytest.mark.parametrize(("name", "incoming", "stored", "old", "new", "want"), [
    ("skip-deletes", pod_with_claim_template(False), [], PENDING_CLAIM, None, SKIP),
    ("queue-on-delete-with-allocation", pod_with_claim_template(False), [], ALLOCATED_CLAIM,
     None, QUEUE),
    ("skip-wrong-claim", pod_with_claim_template(False), [WRONG_OWNER], None, WRONG_OWNER,
     SKIP),
    ("skip-unrelated-claim", pod_with_claim_template(True), [ALLOCATED_CLAIM, UNRELATED], None,
     UNRELATED, SKIP),
    ("queue-on-add", pod_with_claim_name(), [PENDING_CLAIM], None, PENDING_CLAIM, QUEUE),
    ("skip-adding-finalizer", pod_with_claim_name(), [PENDING_CLAIM], PENDING_CLAIM,
     _changed(PENDING_CLAIM, metadata__finalizers=["foo"]), SKIP),
    ("queue-on-status-change", pod_with_claim_name(), [PENDING_CLAIM], PENDING_CLAIM,
     _changed(PENDING_CLAIM, status__allocation={}), QUEUE),
    ("claim-deallocate", pod_with_claim_name(), [PENDING_CLAIM, OTHER_ALLOCATED_CLAIM],
     OTHER_ALLOCATED_CLAIM, _changed(OTHER_ALLOCATED_CLAIM, status__allocation=None), QUEUE),
])
def test_is_schedulable_after_claim_change(
    name: str, incoming: dict[str, Any], stored: list[dict[str, Any]],
    old: dict[str, Any] | None, new: dict[str, Any] | None, want: QueueingHint,
) -> None:
    run = Run(incoming, claims=[*stored, *([new] if new is not None else [])])
    got = schedulable_after_claim_change(run.s.dra, run.pod, _claim(old), _claim(new))
    assert got is want, name


def _two_templates(recorded: int) -> dict[str, Any]:
    out = pod("my-pod", uid="1234", spec={"resourceClaims": [
        {"name": RESOURCE_NAME, "resourceClaimTemplateName": CLAIM_NAME},
        {"name": RESOURCE_NAME + "-2", "resourceClaimTemplateName": CLAIM_NAME}]})
    out["status"]["resourceClaimStatuses"] = [
        {"name": RESOURCE_NAME, "resourceClaimName": CLAIM_NAME}][:recorded]
    return out


@pytest.mark.parametrize(("name", "stored", "before", "after", "want"), [
    ("complete", [PENDING_CLAIM], pod_with_claim_template(False),
     pod_with_claim_template(True), QUEUE),
    ("missing-claim", [], pod_with_claim_template(False), pod_with_claim_template(True), SKIP),
    ("incomplete", [PENDING_CLAIM], _two_templates(0), _two_templates(1), SKIP),
])
def test_is_schedulable_after_target_pod_update(
    name: str, stored: list[dict[str, Any]], before: dict[str, Any], after: dict[str, Any],
    want: QueueingHint,
) -> None:
    run = Run(before, claims=stored)
    got = schedulable_after_pod_update(run.s.dra, run.pod, None, PodInfo.from_pod(after))
    assert got is want, name


def test_a_status_recording_generated_claims_is_update_pod_generated_resource_claim() -> None:
    """upstream's extractPodGeneratedResourceClaimChange: the event DynamicResources hears
    when the resourceclaim controller names the pod's claim in its status."""
    before = PodInfo.from_pod(pod_with_claim_template(False))
    after = PodInfo.from_pod(pod_with_claim_template(True))
    actions = [e.action for e in pod_scheduling_properties_change(before, after)]
    assert actions == [Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM]


def test_a_claim_the_pod_cannot_name_is_skipped_without_looking_up_its_claims() -> None:
    """A claim's change runs the hint for every pending pod: one whose spec and status do
    not name the claim is answered without the DRA manager's per-claim lookups (thousands
    of pods times thousands of claims made the first listing of a burst take minutes)."""
    run = Run(pod_with_claim_name(), claims=[PENDING_CLAIM, UNRELATED])
    lookups: list[tuple[str, str]] = []
    real = run.s.dra.claim
    run.s.dra.claim = lambda ns, name: lookups.append((ns, name)) or real(ns, name)  # type: ignore[method-assign]
    got = schedulable_after_claim_change(run.s.dra, run.pod, None, _claim(UNRELATED))
    assert (got, lookups) == (SKIP, [])
    got = schedulable_after_claim_change(run.s.dra, run.pod, None, _claim(PENDING_CLAIM))
    assert (got, lookups) == (QUEUE, [("default", CLAIM_NAME)])
