"""The queueing hint the volume plugins share."""

from __future__ import annotations

from typing import Any

from scheduler.plugin_api import PodInfo, QueueingHint


def after_claim_named(pod: PodInfo, old: object, new: Any) -> QueueingHint:
    """A claim event helps only a pod of the claim's namespace whose volumes name it
    (generic ephemeral ones included); shared by the volume plugins' hints."""
    named = new is not None and new.namespace == pod.namespace and any(
        n == new.name for n, _ in pod.claims)
    return QueueingHint.QUEUE if named else QueueingHint.SKIP
