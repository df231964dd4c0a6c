"""``PodInfo``: everything the scheduler reads from a pod, parsed once per watch event.

The parsing follows kube-scheduler v1.36 (``pkg/scheduler/framework/types.go`` and
``k8s.io/kube-scheduler/framework/types.go`` for affinity terms, ``podtopologyspread/
common.go`` for spread constraints, ``pkg/scheduler/util/utils.go GetHostPorts`` for ports).
``PodInfo.from_pod`` never raises on bad spec content: the first problem found is kept in
``parse_error`` and the fields it affects are left empty.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

from scheduler.model.errors import InvalidSpecError
from scheduler.model.pod_group import (
    COSCHEDULING_LABEL,
    PREEMPT_LOWER_PRIORITY,
    WORKLOAD_API,
    PodGroupRef,
)
from scheduler.model.resources import ResourceList, pod_resources
from scheduler.model.selectors import (
    LabelSelector,
    NodeSelector,
    PreferredSchedulingTerm,
    parse_node_selector,
    parse_preferred_terms,
)
from scheduler.model.taints import Toleration, parse_tolerations
from scheduler.model.validation import is_list, is_mapping

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
DEFAULT_HOST_IP = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

_EMPTY: Mapping[str, Any] = {}
_MALFORMED = (TypeError, ValueError, AttributeError, KeyError)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A processed ``PodAffinityTerm`` (``framework.AffinityTerm``, plus its weight when it
    comes from a preferred term)."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str
    weight: int = 0

    def matches_pod(
        self, pod_namespace: str, pod_labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        """``AffinityTerm.Matches``: the namespace is listed or selected, then the labels."""
        if pod_namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(ns_labels)
        ):
            return self.selector.matches(pod_labels)
        return False


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A ``TopologySpreadConstraint`` with upstream's defaults applied and ``matchLabelKeys``
    merged into ``selector``."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def ports_conflict(used: Counter[tuple[str, str, int]], wanted: Iterable[HostPort]) -> bool:
    """Upstream HostPortInfo.CheckConflict: 0.0.0.0 collides with every address."""
    for hp in wanted:
        if hp.ip == "0.0.0.0":
            if any(p == hp.port and proto == hp.protocol for (_, proto, p) in used):
                return True
        elif (hp.ip, hp.protocol, hp.port) in used or ("0.0.0.0", hp.protocol, hp.port) in used:
            return True
    return False


def _opt_str(value: Any, path: str) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return value
    raise InvalidSpecError(path, "must be a string")


def _int(value: Any, path: str) -> int:
    if type(value) is int:
        return value
    raise InvalidSpecError(path, "must be an integer")


def _list(value: Any, path: str) -> Sequence[Any]:
    if not value:
        return ()
    if is_list(value):
        return value
    raise InvalidSpecError(path, "must be a list")


def _str_map(value: Any, path: str) -> dict[str, str]:
    if not value:
        return {}
    if not is_mapping(value):
        raise InvalidSpecError(path, "must be a map of strings")
    out = dict(value)
    for k, v in out.items():
        if type(k) is not str or type(v) is not str:
            raise InvalidSpecError(f"{path}.{k}", "keys and values must be strings")
    return out


def _as_error(exc: Exception, path: str) -> InvalidSpecError:
    if isinstance(exc, InvalidSpecError):
        return exc
    return InvalidSpecError(path, f"malformed: {exc!r}")


def parse_affinity_term(
    raw: Any, pod_namespace: str, field: str, weight: int = 0
) -> AffinityTerm:
    """``newAffinityTerm``: no namespaces and no namespaceSelector mean the pod's own namespace;
    a ``namespaceSelector`` of ``{}`` selects every namespace."""
    if not is_mapping(raw):
        raise InvalidSpecError(field, "must be an object")
    selector = LabelSelector.parse(raw.get("labelSelector"), f"{field}.labelSelector")
    namespaces = _list(raw.get("namespaces"), f"{field}.namespaces")
    raw_ns_selector = raw.get("namespaceSelector")
    if raw_ns_selector is None:
        ns_selector = None
        if not namespaces:
            namespaces = (pod_namespace,)
    else:
        ns_selector = LabelSelector.parse(raw_ns_selector, f"{field}.namespaceSelector")
    for i, ns in enumerate(namespaces):
        if type(ns) is not str:
            raise InvalidSpecError(f"{field}.namespaces[{i}]", "must be a string")
    return AffinityTerm(
        selector=selector,
        namespaces=frozenset(namespaces),
        namespace_selector=ns_selector,
        topology_key=_opt_str(raw.get("topologyKey"), f"{field}.topologyKey"),
        weight=weight,
    )


def parse_affinity_terms(
    raw: Any, pod_namespace: str, field: str
) -> tuple[AffinityTerm, ...]:
    """``requiredDuringSchedulingIgnoredDuringExecution`` terms."""
    items = _list(raw, field)
    return tuple(
        parse_affinity_term(t, pod_namespace, f"{field}[{i}]") for i, t in enumerate(items)
    )


def parse_weighted_affinity_terms(
    raw: Any, pod_namespace: str, field: str
) -> tuple[AffinityTerm, ...]:
    """``preferredDuringSchedulingIgnoredDuringExecution`` terms (weight kept on the term)."""
    out: list[AffinityTerm] = []
    for i, item in enumerate(_list(raw, field)):
        path = f"{field}[{i}]"
        if not is_mapping(item):
            raise InvalidSpecError(path, "must be an object")
        weight = _int(item.get("weight", 0), f"{path}.weight")
        out.append(
            parse_affinity_term(
                item.get("podAffinityTerm"), pod_namespace, f"{path}.podAffinityTerm", weight
            )
        )
    return tuple(out)


def parse_spread_constraints(
    raw: Any, pod_labels: Mapping[str, str], field: str
) -> tuple[SpreadConstraint, ...]:
    """``filterTopologySpreadConstraints`` for every constraint: minDomains defaults to 1,
    nodeAffinityPolicy to Honor, nodeTaintsPolicy to Ignore, and ``matchLabelKeys`` add
    ``key In [value]`` for the keys the pod has (a nil labelSelector stays match-nothing)."""
    out: list[SpreadConstraint] = []
    for i, item in enumerate(_list(raw, field)):
        path = f"{field}[{i}]"
        if not is_mapping(item):
            raise InvalidSpecError(path, "must be an object")
        selector = LabelSelector.parse(item.get("labelSelector"), f"{path}.labelSelector")
        keys = _list(item.get("matchLabelKeys"), f"{path}.matchLabelKeys")
        if keys:
            selector = selector.with_match_label_keys(pod_labels, keys)
        min_domains = item.get("minDomains")
        out.append(
            SpreadConstraint(
                max_skew=_int(item.get("maxSkew"), f"{path}.maxSkew"),
                topology_key=_opt_str(item.get("topologyKey"), f"{path}.topologyKey"),
                when_unsatisfiable=_opt_str(
                    item.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable"
                ),
                selector=selector,
                min_domains=1 if min_domains is None else _int(min_domains, f"{path}.minDomains"),
                node_affinity_policy=_opt_str(
                    item.get("nodeAffinityPolicy"), f"{path}.nodeAffinityPolicy"
                )
                or HONOR,
                node_taints_policy=_opt_str(
                    item.get("nodeTaintsPolicy"), f"{path}.nodeTaintsPolicy"
                )
                or IGNORE,
            )
        )
    return tuple(out)


def normalized_image_name(name: str) -> str:
    """ImageLocality's ``normalizedImageName``: ``:latest`` when there is no tag (a ``:`` after
    the last ``/``); a digest (``@sha256:...``) counts as a tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _claims(spec: Mapping[str, Any], pod_name: str) -> tuple[tuple[str, bool], ...]:
    out: list[tuple[str, bool]] = []
    for volume in _list(spec.get("volumes"), "spec.volumes"):
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            out.append((_opt_str(claim.get("claimName"), "claimName"), False))
        elif volume.get("ephemeral") is not None:
            out.append((f"{pod_name}-{_opt_str(volume.get('name'), 'name')}", True))
    return tuple(out)


def _ports_and_images(spec: Mapping[str, Any]) -> tuple[tuple[HostPort, ...], tuple[str, ...]]:
    """``GetHostPorts`` (restartable init containers, then app containers; hostPort > 0) and
    the normalised images of init and app containers, in that order."""
    ports: list[HostPort] = []
    images: list[str] = []
    for key in ("initContainers", "containers"):
        for i, container in enumerate(_list(spec.get(key), f"spec.{key}")):
            path = f"spec.{key}[{i}]"
            if not is_mapping(container):
                raise InvalidSpecError(path, "must be an object")
            image = _opt_str(container.get("image"), f"{path}.image")
            images.append(normalized_image_name(image))
            raw_ports = container.get("ports")
            if not raw_ports:
                continue
            if key == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for j, port in enumerate(_list(raw_ports, f"{path}.ports")):
                host_port = port.get("hostPort")
                if not host_port:
                    continue
                port_path = f"{path}.ports[{j}]"
                host_port = _int(host_port, f"{port_path}.hostPort")
                if host_port <= 0:
                    continue
                ports.append(
                    HostPort(
                        ip=_opt_str(port.get("hostIP"), f"{port_path}.hostIP") or DEFAULT_HOST_IP,
                        protocol=_opt_str(port.get("protocol"), f"{port_path}.protocol")
                        or DEFAULT_PROTOCOL,
                        port=host_port,
                    )
                )
    return tuple(ports), tuple(images)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it, or None if absent or unreadable."""
    if not value or type(value) is not str:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@dataclass(slots=True)
class PodInfo:
    uid: str
    namespace: str
    name: str
    raw: dict[str, Any]
    resource_version: str
    labels: dict[str, str]
    scheduler_name: str
    node_name: str
    nominated_node_name: str
    priority: int
    priority_set: bool
    priority_class_name: str
    preemption_policy: str
    requests: ResourceList
    non_zero_cpu: int
    non_zero_memory: int
    node_selector: dict[str, str]
    required_node_affinity: NodeSelector | None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    spread_constraints: tuple[SpreadConstraint, ...]
    images: tuple[str, ...]
    phase: str
    deletion_timestamp: str | None
    start_time: datetime | None
    owner_kind: str
    owner_name: str
    parse_error: InvalidSpecError | None
    # PersistentVolumeClaims the pod's volumes name, in order: (claim name, ephemeral). A
    # generic ephemeral volume's claim is "<pod>-<volume>".
    claims: tuple[tuple[str, bool], ...] = ()
    # The pod group it is a member of (spec.schedulingGroup, or Coscheduling's label).
    pod_group: PodGroupRef | None = None

    def replace(self, **changes: Any) -> PodInfo:
        """A copy with ``changes``: ``dataclasses.replace`` at a seventh of its cost, which the
        cache pays for every pod it assumes (``dataclasses.replace`` walks the 33 fields and
        passes them by keyword)."""
        copy = PodInfo(*_ALL_FIELDS(self))
        for name, value in changes.items():
            setattr(copy, name, value)
        return copy

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def in_workload_group(self) -> bool:
        """A member of a Workload-API PodGroup (``spec.schedulingGroup``): its group's
        priority and disruption mode count for it; a Coscheduling group's pod has neither."""
        ref = self.pod_group
        return ref is not None and ref.source == WORKLOAD_API

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def is_terminal(self) -> bool:
        return self.phase == SUCCEEDED or self.phase == FAILED

    @property
    def has_required_pod_affinity_terms(self) -> bool:
        """The pod has a required pod affinity or a required pod anti-affinity term."""
        return bool(self.required_affinity or self.required_anti_affinity)

    def deleted_at_once(self) -> bool:
        """A DELETE without a grace period of its own removes the pod at once: its effective
        grace period is 0 (upstream's CheckGracefulDelete: the spec's, or 0 when unbound or
        terminal) and no finalizer holds it."""
        metadata = self.raw.get("metadata")
        if is_mapping(metadata) and metadata.get("finalizers"):
            return False
        if not self.node_name or self.phase in ("Succeeded", "Failed"):
            return True
        spec = self.raw.get("spec")
        grace = spec.get("terminationGracePeriodSeconds") if is_mapping(spec) else None
        return grace == 0

    def has_preemption_disruption_target(self) -> bool:
        """The first ``DisruptionTarget`` condition is True with reason PreemptionByScheduler
        (upstream's ``podTerminatingByPreemption`` also requires a deletionTimestamp)."""
        status = self.raw.get("status")
        if not is_mapping(status):
            return False
        for condition in status.get("conditions") or ():
            if is_mapping(condition) and condition.get("type") == "DisruptionTarget":
                return bool(
                    condition.get("status") == "True"
                    and condition.get("reason") == "PreemptionByScheduler"
                )
        return False

    @classmethod
    def from_pod(cls, obj: Mapping[str, Any]) -> PodInfo:
        """Parse an API pod (a JSON dict). Never raises for bad content: see ``parse_error``,
        the first problem found, section by section in the order below."""
        errors = _FirstError()
        raw = obj if type(obj) is dict else dict(obj)
        meta = _parse_metadata(raw, errors)
        spec = raw.get("spec")
        if not is_mapping(spec):
            if spec is not None:
                errors.note(InvalidSpecError("spec", "must be an object"))
            spec = _EMPTY
        status = raw.get("status")
        if not is_mapping(status):
            status = _EMPTY
        scalars = _parse_scalars(spec, status, errors)
        start_time = parse_time(status.get("startTime"))
        requests, non_zero_cpu, non_zero_memory = _parse_section(
            errors, "spec.containers", lambda: pod_resources(raw)) or ({}, 0, 0)
        placement = _parse_placement(spec, meta, errors)
        affinity = placement.affinity
        return cls(
            uid=meta.uid,
            namespace=meta.namespace,
            name=meta.name,
            raw=raw,
            resource_version=meta.resource_version,
            labels=meta.labels,
            scheduler_name=scalars.scheduler_name,
            node_name=scalars.node_name,
            nominated_node_name=scalars.nominated_node_name,
            priority=scalars.priority,
            priority_set=scalars.priority_set,
            priority_class_name=scalars.priority_class_name,
            preemption_policy=scalars.preemption_policy,
            requests=requests,
            non_zero_cpu=non_zero_cpu,
            non_zero_memory=non_zero_memory,
            node_selector=placement.node_selector,
            required_node_affinity=affinity.required_node,
            preferred_node_affinity=affinity.preferred_node,
            tolerations=placement.tolerations,
            host_ports=placement.host_ports,
            required_affinity=affinity.required,
            required_anti_affinity=affinity.required_anti,
            preferred_affinity=affinity.preferred,
            preferred_anti_affinity=affinity.preferred_anti,
            spread_constraints=placement.spread_constraints,
            images=placement.images,
            phase=scalars.phase,
            deletion_timestamp=meta.deletion_timestamp,
            start_time=start_time,
            owner_kind=meta.owner_kind,
            owner_name=meta.owner_name,
            parse_error=errors.error,
            claims=placement.claims,
            pod_group=placement.pod_group,
        )


class _Placement(NamedTuple):
    """What of a pod's spec decides where it may go, beside its requests."""

    node_selector: dict[str, str]
    affinity: _Affinity
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    claims: tuple[tuple[str, bool], ...]
    pod_group: PodGroupRef | None
    spread_constraints: tuple[SpreadConstraint, ...]


def _parse_placement(spec: Mapping[str, Any], meta: _Metadata, errors: _FirstError) -> _Placement:
    """The placement sections of a pod's spec, each parsed on its own so that a bad one
    spoils only itself; ``errors`` keeps the first problem, in this order."""
    node_selector = _parse_section(
        errors, "spec.nodeSelector",
        lambda: _str_map(spec.get("nodeSelector"), "spec.nodeSelector")) or {}
    affinity = _parse_affinity(spec.get("affinity"), meta.namespace, errors)
    raw_tolerations = spec.get("tolerations")
    tolerations = (_parse_section(
        errors, "spec.tolerations",
        lambda: parse_tolerations(raw_tolerations, "spec.tolerations")) or ()
    ) if raw_tolerations else ()
    host_ports, images = _parse_section(
        errors, "spec.containers", lambda: _ports_and_images(spec)) or ((), ())
    claims = _parse_section(errors, "spec.volumes", lambda: _claims(spec, meta.name)) or ()
    pod_group = _parse_section(
        errors, "spec.schedulingGroup", lambda: PodGroupRef.of_pod(spec, meta.labels)
    ) if "schedulingGroup" in spec or COSCHEDULING_LABEL in meta.labels else None
    raw_spread = spec.get("topologySpreadConstraints")
    spread_constraints = (_parse_section(
        errors, "spec.topologySpreadConstraints",
        lambda: parse_spread_constraints(
            raw_spread, meta.labels, "spec.topologySpreadConstraints")) or ()
    ) if raw_spread else ()
    return _Placement(node_selector, affinity, tolerations, host_ports, images, claims,
                      pod_group, spread_constraints)


class _FirstError:
    """The first problem :meth:`PodInfo.from_pod` finds: the one its ``parse_error`` names."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: InvalidSpecError | None = None

    def note(self, error: InvalidSpecError) -> None:
        if self.error is None:
            self.error = error


_T = TypeVar("_T")


def _parse_section(errors: _FirstError, path: str, parse: Callable[[], _T]) -> _T | None:
    """``parse()``, or None with the problem noted under ``path``."""
    try:
        return parse()
    except _MALFORMED as exc:
        errors.note(_as_error(exc, path))
        return None


class _Metadata(NamedTuple):
    namespace: str
    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    deletion_timestamp: str | None
    owner_kind: str
    owner_name: str


def _parse_metadata(raw: Mapping[str, Any], errors: _FirstError) -> _Metadata:
    """What of ``metadata`` parsed before any problem (the uid is never empty)."""
    namespace = name = uid = resource_version = owner_kind = owner_name = ""
    labels: dict[str, str] = {}
    deletion_timestamp: str | None = None
    try:
        meta = raw.get("metadata") or _EMPTY
        namespace = _opt_str(meta.get("namespace"), "metadata.namespace")
        name = _opt_str(meta.get("name"), "metadata.name")
        uid = _opt_str(meta.get("uid"), "metadata.uid") or f"{namespace}/{name}"
        resource_version = _opt_str(meta.get("resourceVersion"), "metadata.resourceVersion")
        deletion = meta.get("deletionTimestamp")
        deletion_timestamp = None if deletion is None else str(deletion)
        labels = _str_map(meta.get("labels"), "metadata.labels")
        for i, ref in enumerate(_list(meta.get("ownerReferences"), "metadata.ownerReferences")):
            if ref.get("controller") is True:
                path = f"metadata.ownerReferences[{i}]"
                owner_kind = _opt_str(ref.get("kind"), f"{path}.kind")
                owner_name = _opt_str(ref.get("name"), f"{path}.name")
                break
    except _MALFORMED as exc:
        errors.note(_as_error(exc, "metadata"))
        uid = uid or f"{namespace}/{name}"
    return _Metadata(namespace, name, uid, resource_version, labels, deletion_timestamp,
                     owner_kind, owner_name)


class _Scalars(NamedTuple):
    scheduler_name: str
    node_name: str
    priority: int
    priority_set: bool
    priority_class_name: str
    preemption_policy: str
    nominated_node_name: str
    phase: str


def _parse_scalars(
    spec: Mapping[str, Any], status: Mapping[str, Any], errors: _FirstError
) -> _Scalars:
    """The scalar fields of ``spec`` and ``status``; those before a problem are kept."""
    scheduler_name = DEFAULT_SCHEDULER_NAME
    node_name = nominated_node_name = priority_class_name = phase = ""
    preemption_policy = PREEMPT_LOWER_PRIORITY
    priority = 0
    priority_set = False
    try:
        scheduler_name = (
            _opt_str(spec.get("schedulerName"), "spec.schedulerName") or DEFAULT_SCHEDULER_NAME
        )
        node_name = _opt_str(spec.get("nodeName"), "spec.nodeName")
        raw_priority = spec.get("priority")
        if raw_priority is not None:
            priority = _int(raw_priority, "spec.priority")
            priority_set = True
        priority_class_name = _opt_str(spec.get("priorityClassName"), "spec.priorityClassName")
        preemption_policy = (
            _opt_str(spec.get("preemptionPolicy"), "spec.preemptionPolicy")
            or PREEMPT_LOWER_PRIORITY
        )
        nominated_node_name = _opt_str(
            status.get("nominatedNodeName"), "status.nominatedNodeName"
        )
        phase = _opt_str(status.get("phase"), "status.phase")
    except _MALFORMED as exc:
        errors.note(_as_error(exc, "spec"))
    return _Scalars(scheduler_name, node_name, priority, priority_set, priority_class_name,
                    preemption_policy, nominated_node_name, phase)


class _Affinity(NamedTuple):
    required_node: NodeSelector | None = None
    preferred_node: tuple[PreferredSchedulingTerm, ...] = ()
    required: tuple[AffinityTerm, ...] = ()
    preferred: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred_anti: tuple[AffinityTerm, ...] = ()


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _parse_affinity(affinity: Any, namespace: str, errors: _FirstError) -> _Affinity:
    """``spec.affinity``: node affinity, then pod affinity, then pod anti-affinity."""
    if not affinity:
        return _Affinity()
    if not is_mapping(affinity):
        errors.note(InvalidSpecError("spec.affinity", "must be an object"))
        return _Affinity()
    required_node: NodeSelector | None = None
    preferred_node: tuple[PreferredSchedulingTerm, ...] = ()
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity:
        base = "spec.affinity.nodeAffinity"
        required_node = _parse_section(
            errors, base,
            lambda: parse_node_selector(node_affinity.get(_REQUIRED), f"{base}.{_REQUIRED}"))
        preferred_node = _parse_section(
            errors, base,
            lambda: parse_preferred_terms(node_affinity.get(_PREFERRED), f"{base}.{_PREFERRED}"),
        ) or ()
    required, preferred = _parse_pod_affinity(affinity, "podAffinity", namespace, errors)
    required_anti, preferred_anti = _parse_pod_affinity(
        affinity, "podAntiAffinity", namespace, errors)
    return _Affinity(required_node, preferred_node, required, preferred, required_anti,
                     preferred_anti)


def _parse_pod_affinity(
    affinity: Mapping[str, Any], kind: str, namespace: str, errors: _FirstError
) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
    """The required and the preferred terms of ``podAffinity`` or ``podAntiAffinity``."""
    section = affinity.get(kind)
    if not section:
        return (), ()
    base = f"spec.affinity.{kind}"
    required = _parse_section(
        errors, base,
        lambda: parse_affinity_terms(section.get(_REQUIRED), namespace, f"{base}.{_REQUIRED}"),
    ) or ()
    preferred = _parse_section(
        errors, base,
        lambda: parse_weighted_affinity_terms(
            section.get(_PREFERRED), namespace, f"{base}.{_PREFERRED}"),
    ) or ()
    return required, preferred


# Every field of a PodInfo in declaration order, read in one C call (PodInfo.replace).
_ALL_FIELDS = attrgetter(*(f.name for f in fields(PodInfo)))
