"""How an update of a pending pod may change its own schedulability.

``pod_scheduling_properties_change`` follows upstream ``framework.PodSchedulingPropertiesChange``
(``pkg/scheduler/framework/events.go``): it names the specific kinds of change (labels, request
scale-down, scheduling gates removed, tolerations) so that only plugins registered for them are
asked. ``is_pod_updated`` is upstream ``isPodUpdated``: anything but status and bookkeeping
metadata changed.

Our ``Action`` flags have no dedicated "scheduling gates eliminated" bit and matching is by
overlap (not upstream's "the incoming action is no broader than the registered one"), so the
general fallback is ``UPDATE_POD_SPEC`` rather than the full ``UPDATE`` mask: a plugin hears a
general update of a pending pod only if it registered ``UPDATE_POD_SPEC`` (or ``UPDATE``/``ALL``).
Removal of the last scheduling gate is reported as ``UPDATE_POD_SPEC`` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from scheduler.framework.events import Action, ClusterEvent, Resource
from scheduler.model.errors import InvalidSpecError
from scheduler.model.quantity import parse_quantity
from scheduler.queue.queued_pod import QueueablePod

_IGNORED_METADATA = ("resourceVersion", "generation", "managedFields", "finalizers")



def is_pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when spec or metadata differ, ignoring status, resourceVersion, generation,
    managedFields and finalizers."""
    return _strip(old) != _strip(new)


def pod_scheduling_properties_change(old: QueueablePod, new: QueueablePod) -> list[ClusterEvent]:
    resource = Resource.ASSIGNED_POD if new.node_name else Resource.UNSCHEDULED_POD
    old_raw, new_raw = old.raw, new.raw
    actions: list[Action] = []
    if _labels(old_raw) != _labels(new_raw):
        actions.append(Action.UPDATE_POD_LABEL)
    if _scaled_down(_requests(old_raw), _requests(new_raw)):
        actions.append(Action.UPDATE_POD_SCALE_DOWN)
    if _spec(old_raw).get("schedulingGates") and not _spec(new_raw).get("schedulingGates"):
        actions.append(Action.UPDATE_POD_SPEC)
    if (_spec(old_raw).get("tolerations") or []) != (_spec(new_raw).get("tolerations") or []):
        actions.append(Action.UPDATE_POD_TOLERATION)
    if generated_claims_changed(old_raw, new_raw):
        actions.append(Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(Action.UPDATE_POD_SPEC)
    return [ClusterEvent(resource, action) for action in actions]


def generated_claims_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """upstream ``extractPodGeneratedResourceClaimChange``: the claims the resourceclaim
    controller created for the pod, as its status records them, changed."""
    before, after = _status(old), _status(new)
    return any(before.get(key) != after.get(key)
               for key in ("resourceClaimStatuses", "extendedResourceClaimStatus"))


# -- internals ------------------------------------------------------------------------------
def _strip(raw: Mapping[str, Any]) -> dict[str, Any]:
    stripped = {k: v for k, v in raw.items() if k != "status"}
    meta = raw.get("metadata")
    if isinstance(meta, Mapping):
        stripped["metadata"] = {k: v for k, v in meta.items() if k not in _IGNORED_METADATA}
    return stripped


def _status(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    status = raw.get("status")
    return status if isinstance(status, Mapping) else {}


def _spec(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = raw.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _requests(raw: Mapping[str, Any]) -> dict[str, object]:
    """Pod-level requests when set, else the per-resource sum over the app containers.

    An approximation of upstream's PodRequests (it also folds in init containers), good
    enough to tell whether some request went down.
    """
    spec = _spec(raw)
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        return dict(pod_level)
    totals: dict[str, object] = {}
    for container in spec.get("containers") or ():
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            if name not in totals:
                totals[name] = value
                continue
            a, b = _quantity(totals[name]), _quantity(value)
            totals[name] = a + b if a is not None and b is not None else f"{totals[name]}+{value}"
    return totals


def _scaled_down(old: Mapping[str, object], new: Mapping[str, object]) -> bool:
    for name, old_value in old.items():
        if name not in new:
            return True
        a, b = _quantity(old_value), _quantity(new[name])
        if a is None or b is None:
            if old_value != new[name]:
                return True
        elif b < a:
            return True
    return False


def _quantity(value: object) -> Fraction | None:
    """A request's exact value; ``None`` where it is not a quantity (compared as text)."""
    if isinstance(value, Fraction):  # a sum made above
        return value
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return None
    try:
        return parse_quantity(value, "")
    except InvalidSpecError:
        return None
