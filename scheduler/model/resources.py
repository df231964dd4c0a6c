"""Resource lists and the pod requests kube-scheduler accounts for.

``pod_requests`` is ``k8s.io/component-helpers/resource.PodRequests`` with the options
``PodInfo.CalculateResource`` (``pkg/scheduler/framework/types.go``) passes in v1.36 at the
default feature gates:

- SidecarContainers (GA): restartable init containers run alongside the app containers;
- InPlacePodVerticalScaling (GA, ``UseStatusResources``): a container whose status reports
  ``resources`` counts ``max(spec, status.resources.requests, status.allocatedResources)``,
  or only ``max(actuated, allocated)`` when the pod's ``PodResizePending`` condition says
  ``Infeasible``; for init containers only the restartable ones use their status;
- PodLevelResources (beta, on): ``spec.resources.requests`` overrides cpu, memory and
  ``hugepages-*``; with InPlacePodLevelResourcesVerticalScaling (beta, on in 1.36) the pod-level
  value becomes the same max over ``status.resources.requests`` / ``status.allocatedResources``
  when ``status.resources`` is set;
- DRANodeAllocatableResources (alpha, off): claim statuses are not added.

``pod_non_zero_requests`` is the ``Non0CPU``/``Non0Mem`` pair of the same function: the sums
are recomputed with 100m CPU / 200 MiB memory standing in for every container that does not
*mention* the resource (an explicit ``"0"`` stays 0); with pod-level requests set, only a
resource the pod's effective requests lack is defaulted per container.

Quantities are added exactly (in nano-units) and converted at the end: CPU with
``MilliValue``, everything else with ``Value``. A ``ResourceList`` omits zero entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from scheduler.model.errors import InvalidSpecError
from scheduler.model.quantity import nanos_or_error, nanos_to_int, nanos_to_milli, parse_nanos
from scheduler.model.validation import is_list, is_mapping, is_qualified_name

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
DEFAULT_RESOURCE_REQUESTS_PREFIX = "requests."

ResourceList = dict[str, int]

_Nanos = dict[str, int]
_DEFAULT_CPU_NANOS = DEFAULT_MILLI_CPU_REQUEST * 10**6
_DEFAULT_MEMORY_NANOS = DEFAULT_MEMORY_REQUEST * 10**9
_ALL_DEFAULTS: _Nanos = {CPU: _DEFAULT_CPU_NANOS, MEMORY: _DEFAULT_MEMORY_NANOS}
_EMPTY: Mapping[str, Any] = {}


# -- resource names ---------------------------------------------------------------------------
def is_native_resource(name: str) -> bool:
    """``v1helper.IsNativeResource``: unprefixed, or in the ``*kubernetes.io/`` namespace."""
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a non-native, quota-nameable resource."""
    if is_native_resource(name) or name.startswith(DEFAULT_RESOURCE_REQUESTS_PREFIX):
        return False
    return is_qualified_name(DEFAULT_RESOURCE_REQUESTS_PREFIX + name)




@lru_cache(maxsize=1024)
def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, ``*kubernetes.io/`` prefixed or
    attachable-volumes resources (everything the scheduler tracks besides cpu, memory,
    ephemeral-storage and pods)."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or DEFAULT_NAMESPACE_PREFIX in name
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


def is_supported_pod_level_resource(name: str) -> bool:
    """``resourcehelper.IsSupportedPodLevelResource``: cpu, memory and hugepages-*."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


# -- parsing ----------------------------------------------------------------------------------
def _nanos_map(raw: Any, field: str) -> _Nanos:
    """A resource map in nano-units, keeping explicit zeros (presence matters upstream)."""
    if raw is None:
        return {}
    if not is_mapping(raw):
        raise InvalidSpecError(field, "must be a map of resource names to quantities")
    out: _Nanos = {}
    for name, value in raw.items():
        if type(value) is str:
            nanos = nanos_or_error(value)
            if type(nanos) is int:
                out[name] = nanos
                continue
        if not isinstance(name, str):
            raise InvalidSpecError(field, f"resource name {name!r} must be a string")
        out[name] = parse_nanos(value, f"{field}.{name}")
    return out


def _to_resource_list(nanos: Mapping[str, int]) -> ResourceList:
    out: ResourceList = {}
    for name, value in nanos.items():
        if value:
            out[name] = nanos_to_milli(value) if name == CPU else nanos_to_int(value)
    return out


def parse_resource_list(raw: Mapping[str, Any] | None, field: str) -> ResourceList:
    """A ``ResourceList`` (cpu in millicores, the rest in base units); zeros are omitted."""
    return _to_resource_list(_nanos_map(raw, field))


def node_allocatable(node: Mapping[str, Any]) -> ResourceList:
    """``status.allocatable``, or ``status.capacity`` when allocatable is absent (the API's
    ``SetDefaults_NodeStatus`` copies capacity in that case)."""
    status = node.get("status") or _EMPTY
    raw = status.get("allocatable")
    if raw is None:
        return parse_resource_list(status.get("capacity"), "status.capacity")
    return parse_resource_list(raw, "status.allocatable")


# -- list arithmetic (component-helpers addResourceList / maxResourceList / max) ---------------
def _add(into: _Nanos, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max_into(into: _Nanos, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        current = into.get(name)
        if current is None or value > current:
            into[name] = value


def _max_of(first: Mapping[str, int] | None, *others: Mapping[str, int] | None) -> _Nanos:
    result: _Nanos = dict(first) if first is not None else {}
    for other in others:
        if other is not None:
            _max_into(result, other)
    return result


def _apply_non_missing(reqs: Mapping[str, int], defaults: Mapping[str, int]) -> _Nanos:
    out = dict(reqs)
    for name, value in defaults.items():
        if name not in reqs:
            out[name] = value
    return out


# -- pods -------------------------------------------------------------------------------------
def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the first PodResizePending condition has reason Infeasible."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodResizePending":
            return bool(condition.get("reason") == "Infeasible")
    return False


def _status_index(status: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Container statuses by name (init statuses win on a clash, as upstream's map does)."""
    index: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        entries = status.get(key)
        if not entries:
            continue
        if not is_list(entries):
            raise InvalidSpecError(f"status.{key}", "must be a list")
        for j, cs in enumerate(entries):
            if not is_mapping(cs):
                raise InvalidSpecError(f"status.{key}[{j}]", "must be an object")
            name = cs.get("name")
            if isinstance(name, str):
                index[name] = (f"status.{key}[{j}]", cs)
    return index


def _effective(
    spec: Mapping[str, int] | None,
    holder: Mapping[str, Any],
    path: str,
    infeasible: bool,
) -> _Nanos:
    """``determineEffectiveRequests``: max(spec, actuated, allocated), spec dropped when the
    resize is infeasible. ``holder`` carries ``resources.requests`` and ``allocatedResources``."""
    resources = holder.get("resources") or _EMPTY
    actuated = _nanos_map(resources.get("requests"), f"{path}.resources.requests")
    allocated = _nanos_map(holder.get("allocatedResources"), f"{path}.allocatedResources")
    if infeasible:
        return _max_of(actuated, allocated)
    return _max_of(spec, actuated, allocated)


class _PodResourceInputs:
    """The parsed inputs of PodRequests, so that it can run twice (plain and non-zero)."""

    __slots__ = ("app", "init", "overhead", "pod_level")

    def __init__(self, pod: Mapping[str, Any]) -> None:
        spec = pod.get("spec") or _EMPTY
        status = _ResizeStatus(pod.get("status") or _EMPTY)
        self.app: list[_Nanos] = [
            status.effective(reqs, name) for _, reqs, name in _requests_of(spec, "containers")
        ]
        self.init: list[tuple[_Nanos, bool]] = []
        for container, reqs, name in _requests_of(spec, "initContainers"):
            # Only sidecars (restartable init containers) are resized in place.
            restartable = container.get("restartPolicy") == "Always"
            self.init.append((status.effective(reqs, name) if restartable else reqs,
                              restartable))
        self.pod_level = _pod_level_requests(spec, status)
        self.overhead = _nanos_map(spec.get("overhead"), "spec.overhead")

    def requests(self, non_missing: Mapping[str, int] | None = None) -> _Nanos:
        """``PodRequests`` (nano-units, keys present even when zero)."""
        reqs: _Nanos = {}
        for c in self.app:
            _add(reqs, _apply_non_missing(c, non_missing) if non_missing else c)
        if self.init:
            sidecars: _Nanos = {}
            init_max: _Nanos = {}
            for c, restartable in self.init:
                if non_missing:
                    c = _apply_non_missing(c, non_missing)
                if restartable:
                    _add(reqs, c)
                    _add(sidecars, c)
                    _max_into(init_max, sidecars)
                else:
                    step = dict(c)
                    _add(step, sidecars)
                    _max_into(init_max, step)
            _max_into(reqs, init_max)
        if self.pod_level is not None:
            reqs.update(self.pod_level)
        if self.overhead:
            _add(reqs, self.overhead)
        return reqs


class _ResizeStatus:
    """A pod's status as its in-place resize reads it: the container statuses by name, and
    whether the resize is infeasible (read once, and only when some status carries
    resources)."""

    __slots__ = ("_infeasible", "index", "raw")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.index: dict[str, tuple[str, Mapping[str, Any]]] | None = None
        if raw.get("containerStatuses") or raw.get("initContainerStatuses"):
            self.index = _status_index(raw)
        self._infeasible: bool | None = None

    def infeasible(self) -> bool:
        if self._infeasible is None:
            self._infeasible = _resize_infeasible(self.raw)
        return self._infeasible

    def effective(self, reqs: _Nanos, name: Any) -> _Nanos:
        """The container's requests, made effective by its status when that carries
        resources."""
        if self.index is None or name not in self.index:
            return reqs
        path, cs = self.index[name]
        if cs.get("resources") is None:
            return reqs
        return _effective(reqs, cs, path, self.infeasible())


def _requests_of(
    spec: Mapping[str, Any], key: str
) -> Iterator[tuple[Mapping[str, Any], _Nanos, Any]]:
    """Each container of ``spec.containers`` or ``spec.initContainers``, with its requests
    and its name; parsed one at a time, so that a problem is found where it was before."""
    containers = spec.get(key) or ()
    if not is_list(containers):
        raise InvalidSpecError(f"spec.{key}", "must be a list")
    for i, container in enumerate(containers):
        reqs, name = _container_requests(container, f"spec.{key}[{i}]")
        yield container, reqs, name


def _pod_level_requests(spec: Mapping[str, Any], status: _ResizeStatus) -> _Nanos | None:
    """``spec.resources.requests`` of the resources pod-level requests may set, made
    effective by ``status.resources``; None when it sets none (``IsPodLevelRequestsSet``)."""
    pod_resources = spec.get("resources")
    if not pod_resources:
        return None
    if not is_mapping(pod_resources):
        raise InvalidSpecError("spec.resources", "must be an object")
    raw = _nanos_map(pod_resources.get("requests"), "spec.resources.requests")
    supported = {n: v for n, v in raw.items() if is_supported_pod_level_resource(n)}
    if not supported:
        return None
    if status.raw.get("resources") is not None:
        effective = _effective(raw, status.raw, "status", status.infeasible())
        supported = {n: effective.get(n, 0) for n in supported}
    return supported


def _container_requests(container: Any, path: str) -> tuple[_Nanos, Any]:
    if not is_mapping(container):
        raise InvalidSpecError(path, "must be an object")
    resources = container.get("resources")
    if not resources:
        return {}, container.get("name")
    if not is_mapping(resources):
        raise InvalidSpecError(f"{path}.resources", "must be an object")
    return _nanos_map(resources.get("requests"), f"{path}.resources.requests"), container.get(
        "name"
    )


def pod_resources(pod: Mapping[str, Any]) -> tuple[ResourceList, int, int]:
    """``(pod_requests(pod), *pod_non_zero_requests(pod))`` in one parse."""
    inputs = _PodResourceInputs(pod)
    requests = inputs.requests()
    if inputs.pod_level is None:
        non_missing: Mapping[str, int] = _ALL_DEFAULTS
    else:
        non_missing = {n: v for n, v in _ALL_DEFAULTS.items() if n not in requests}
    non_zero = inputs.requests(non_missing) if non_missing else requests
    return (
        _to_resource_list(requests),
        nanos_to_milli(non_zero.get(CPU, 0)),
        nanos_to_int(non_zero.get(MEMORY, 0)),
    )


def pod_requests(pod: Mapping[str, Any]) -> ResourceList:
    """The pod's effective requests as kube-scheduler accounts them (see the module doc)."""
    return _to_resource_list(_PodResourceInputs(pod).requests())


def pod_non_zero_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(milli CPU, memory bytes) with the per-container defaults: ``NonZeroRequested``."""
    _, cpu, memory = pod_resources(pod)
    return cpu, memory
