"""Which pods the rescheduler may move: every protection, and the reason it gives."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.pod import PodInfo
from scheduler.rescheduling.eligibility import protection
from tests.rescheduling.conftest import owned

OURS = {"secondary-scheduler"}


def info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo.from_pod(obj)


def with_meta(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    obj["metadata"].update(meta)
    return obj


@pytest.mark.parametrize(("obj", "allow_local", "reason"), [
    (owned("p", "rs", node="a"), False, ""),
    (owned("p", "sts", kind="StatefulSet", node="a"), False, ""),
    (owned("p", "job", kind="Job", node="a"), False, ""),
    (owned("p", "rc", kind="ReplicationController", node="a"), False, ""),
    (owned("p", "ds", kind="DaemonSet", node="a"), False, "controlled by a DaemonSet"),
    (owned("p", "a", kind="Node", node="a"), False, "controlled by a Node"),
    (with_meta(owned("p", "rs", node="a"), ownerReferences=[]), False,
     "no controller would recreate it"),
    (with_meta(owned("p", "rs", node="a"),
               annotations={"kubernetes.io/config.mirror": "x"}), False, "a mirror pod"),
    (owned("p", "rs", node="a", scheduler_name="default-scheduler"), False,
     "scheduled by 'default-scheduler', not by this scheduler"),
    (owned("p", "rs"), False, "not running"),
    (owned("p", "rs", node="a", deletion_timestamp="2026-11-25T00:00:00Z"), False,
     "not running"),
    (owned("p", "rs", node="a", status={"phase": "Pending"}), False, "not running"),
    (owned("p", "rs", node="a", priority=2_000_000_000), False, "system-critical"),
    (with_meta(owned("p", "rs", node="a"),
               annotations={"secondary-scheduler.io/rescheduling": "never"}), False,
     "annotated secondary-scheduler.io/rescheduling: never"),
    (owned("p", "rs", node="a", spec={"volumes": [{"name": "v", "emptyDir": {}}]}), False,
     "has local storage (emptyDir or hostPath)"),
    (owned("p", "rs", node="a", spec={"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}),
     False, "has local storage (emptyDir or hostPath)"),
    (owned("p", "rs", node="a", spec={"volumes": [{"name": "v", "emptyDir": {}}]}), True, ""),
    (owned("p", "rs", node="a", spec={"volumes": [{"name": "v", "configMap": {"name": "c"}}]}),
     False, ""),
    (owned("p", "rs", node="a", spec={"resourceClaims": [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}), True,
     "holds devices through ResourceClaims"),
    (owned("p", "rs", node="a", spec={"resourceClaims": [
        {"name": "gpu", "resourceClaimName": "shared"}]}), True,
     "holds devices through ResourceClaims"),
    (owned("p", "rs", node="a", status={"phase": "Running", "extendedResourceClaimStatus": {
        "resourceClaimName": "p-extended-resources-abcde", "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "r"}]}}),
     True, "holds devices through ResourceClaims"),
])
def test_protection(obj: dict[str, Any], allow_local: bool, reason: str) -> None:
    assert protection(info(obj), OURS, allow_local_storage=allow_local) == reason
