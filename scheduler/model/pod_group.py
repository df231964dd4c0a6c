"""Pod groups, parsed once from API dicts: the Workload API's Workload and PodGroup
(``scheduling.k8s.io/v1beta1``, ``k8s.io/api/scheduling/v1beta1/types.go``), scheduler-plugins'
Coscheduling PodGroup (``scheduling.x-k8s.io/v1alpha1``, its ``apis/scheduling/v1alpha1``)
translated into the same :class:`PodGroup`, and a pod's reference to its group.

A pod belongs to a Workload-API group by ``spec.schedulingGroup.podGroupName`` and to a
Coscheduling group by the label ``scheduling.x-k8s.io/pod-group``; when it carries both, the
spec field wins (kube-scheduler reads only the field; one pod is scheduled as one group's
member). Every type is frozen; a malformed field raises ``InvalidSpecError`` naming its JSON
path. Defaults are the API server's (``disruptionMode: single``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.model.errors import InvalidSpecError
from scheduler.model.fields import list_at as _list
from scheduler.model.fields import object_at as _obj
from scheduler.model.fields import opt_int_field as _opt_int
from scheduler.model.fields import str_field as _str
from scheduler.model.resources import ResourceList, parse_resource_list
from scheduler.model.validation import is_mapping

# Where a PodGroup comes from: the in-tree Workload API, or scheduler-plugins' CRD.
WORKLOAD_API = "scheduling.k8s.io/v1beta1"
COSCHEDULING = "scheduling.x-k8s.io/v1alpha1"
# The label a pod joins a Coscheduling PodGroup by (scheduler-plugins' v1alpha1.PodGroupLabel).
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"

GANG = "Gang"
BASIC = "Basic"
DISRUPTION_SINGLE = "Single"
DISRUPTION_ALL = "All"
# core/v1 PreemptionPolicy, of a pod group and of a pod alike (pod.py imports them: it
# imports this module, not the other way round).
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# The PodGroup condition kube-scheduler writes (scheduling/v1beta1 PodGroupInitiallyScheduled).
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"

@dataclass(frozen=True, slots=True)
class PodGroupRef:
    """A pod's group: which API it names the group in, and the group's name (its namespace
    is the pod's)."""

    source: str
    name: str

    @classmethod
    def of_pod(cls, spec: Mapping[str, Any], labels: Mapping[str, str]) -> PodGroupRef | None:
        """The pod's group from its ``spec`` and labels: ``spec.schedulingGroup`` first."""
        group = spec.get("schedulingGroup")
        if group is not None:
            raw = _obj(group, "spec.schedulingGroup")
            name = _str(raw, "podGroupName", "spec.schedulingGroup")
            if name:
                return cls(WORKLOAD_API, name)
        label = labels.get(COSCHEDULING_LABEL)
        return cls(COSCHEDULING, label) if label else None


@dataclass(frozen=True, slots=True)
class PodGroupTemplate:
    """One of a Workload's ``spec.podGroupTemplates``: what a controller stamps PodGroups from."""

    name: str
    policy: str
    min_count: int
    disruption_mode: str = DISRUPTION_SINGLE
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str = ""


@dataclass(frozen=True, slots=True)
class Workload:
    """A ``scheduling.k8s.io/v1beta1`` Workload. kube-scheduler never reads Workloads (they are
    controllers' templates); they are kept for explain and for the PodGroups that name them."""

    namespace: str
    name: str
    uid: str = ""
    controller_kind: str = ""
    controller_name: str = ""
    templates: tuple[PodGroupTemplate, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Workload:
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        ref = _obj(spec.get("controllerRef"), "spec.controllerRef")
        templates = tuple(
            _template(_obj(raw, f"spec.podGroupTemplates[{i}]"), f"spec.podGroupTemplates[{i}]")
            for i, raw in enumerate(_list(spec.get("podGroupTemplates"), "spec.podGroupTemplates"))
        )
        return cls(
            namespace=_str(meta, "namespace", "metadata"),
            name=_str(meta, "name", "metadata"),
            uid=_str(meta, "uid", "metadata"),
            controller_kind=_str(ref, "kind", "spec.controllerRef"),
            controller_name=_str(ref, "name", "spec.controllerRef"),
            templates=templates,
        )


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A pod group as the scheduler reads it, from either API.

    ``min_count`` is the gang's ``minCount`` (Coscheduling: ``minMember``); 1 for a Basic
    group. ``schedule_timeout_seconds`` and ``min_resources`` are Coscheduling's
    (``scheduleTimeoutSeconds``, ``minResources``): None and empty for the Workload API, whose
    Permit wait is GangScheduling's fixed five minutes.
    """

    namespace: str
    name: str
    source: str = WORKLOAD_API
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    created: datetime | None = None
    deleting: bool = False
    policy: str = GANG
    min_count: int = 1
    disruption_mode: str = DISRUPTION_SINGLE
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str = ""
    workload_name: str = ""
    template_name: str = ""
    schedule_timeout_seconds: int | None = None
    min_resources: ResourceList = field(default_factory=dict)
    # status.conditions PodGroupInitiallyScheduled is True: never set back to False.
    initially_scheduled: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.policy == GANG

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> PodGroup:
        """A ``scheduling.k8s.io/v1beta1`` PodGroup."""
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        status = _obj(obj.get("status"), "status")
        policy, min_count = _policy(
            _obj(spec.get("schedulingPolicy"), "spec.schedulingPolicy"), "spec.schedulingPolicy")
        ref = _obj(spec.get("workloadRef"), "spec.workloadRef")
        return cls(
            **_meta_fields(meta),
            source=WORKLOAD_API,
            policy=policy,
            min_count=min_count,
            disruption_mode=_disruption_mode(spec.get("disruptionMode"), "spec.disruptionMode"),
            priority_class_name=_str(spec, "priorityClassName", "spec"),
            priority=_opt_int(spec, "priority", "spec"),
            preemption_policy=_preemption_policy(spec, "spec"),
            workload_name=_str(ref, "workloadName", "spec.workloadRef"),
            template_name=_str(ref, "templateName", "spec.workloadRef"),
            initially_scheduled=_initially_scheduled(status),
        )

    @classmethod
    def parse_coscheduling(cls, obj: Mapping[str, Any]) -> PodGroup:
        """A scheduler-plugins ``scheduling.x-k8s.io/v1alpha1`` PodGroup: always a gang of
        ``minMember`` (the CRD's minimum is 1)."""
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        min_member = _opt_int(spec, "minMember", "spec")
        if min_member is not None and min_member < 1:
            raise InvalidSpecError("spec.minMember", "should be greater than or equal to 1")
        timeout = _opt_int(spec, "scheduleTimeoutSeconds", "spec")
        return cls(
            **_meta_fields(meta),
            source=COSCHEDULING,
            policy=GANG,
            min_count=1 if min_member is None else min_member,
            schedule_timeout_seconds=timeout,
            min_resources=parse_resource_list(
                _obj(spec.get("minResources"), "spec.minResources"), "spec.minResources"),
        )


# --- parsing helpers --------------------------------------------------------------------------


def _meta_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    created = _str(meta, "creationTimestamp", "metadata")
    try:
        created_at = datetime.fromisoformat(created) if created else None
    except ValueError as exc:
        raise InvalidSpecError("metadata.creationTimestamp", "must be an RFC 3339 time") from exc
    return {
        "namespace": _str(meta, "namespace", "metadata"),
        "name": _str(meta, "name", "metadata"),
        "uid": _str(meta, "uid", "metadata"),
        "resource_version": _str(meta, "resourceVersion", "metadata"),
        "generation": _opt_int(meta, "generation", "metadata") or 0,
        "created": created_at,
        "deleting": meta.get("deletionTimestamp") is not None,
    }


def _policy(raw: Mapping[str, Any], path: str) -> tuple[str, int]:
    """Exactly one of ``basic: {}`` and ``gang: {minCount}`` (PodGroupSchedulingPolicy)."""
    gang, basic = raw.get("gang"), raw.get("basic")
    if (gang is None) == (basic is None):
        raise InvalidSpecError(path, "must specify exactly one of: `basic`, `gang`")
    if basic is not None:
        _obj(basic, f"{path}.basic")
        return BASIC, 1
    min_count = _opt_int(_obj(gang, f"{path}.gang"), "minCount", f"{path}.gang")
    if min_count is None or min_count < 1:
        raise InvalidSpecError(f"{path}.gang.minCount", "must be greater than or equal to 1")
    return GANG, min_count


def _disruption_mode(raw: Any, path: str) -> str:
    mode = _obj(raw, path)
    return DISRUPTION_ALL if mode.get("all") is not None else DISRUPTION_SINGLE


def _preemption_policy(raw: Mapping[str, Any], path: str) -> str:
    policy = _str(raw, "preemptionPolicy", path)
    if policy not in ("", PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        raise InvalidSpecError(
            f"{path}.preemptionPolicy",
            f'Unsupported value: "{policy}": supported values: '
            f'"{PREEMPT_LOWER_PRIORITY}", "{PREEMPT_NEVER}"')
    return policy


def _template(raw: Mapping[str, Any], path: str) -> PodGroupTemplate:
    policy, min_count = _policy(
        _obj(raw.get("schedulingPolicy"), f"{path}.schedulingPolicy"), f"{path}.schedulingPolicy")
    return PodGroupTemplate(
        name=_str(raw, "name", path),
        policy=policy,
        min_count=min_count,
        disruption_mode=_disruption_mode(raw.get("disruptionMode"), f"{path}.disruptionMode"),
        priority_class_name=_str(raw, "priorityClassName", path),
        priority=_opt_int(raw, "priority", path),
        preemption_policy=_preemption_policy(raw, path),
    )


def _initially_scheduled(status: Mapping[str, Any]) -> bool:
    for condition in _list(status.get("conditions"), "status.conditions"):
        if is_mapping(condition) and condition.get("type") == INITIALLY_SCHEDULED:
            return condition.get("status") == "True"
    return False
