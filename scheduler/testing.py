"""A testing kit for plugins, in-tree and out-of-tree alike: builders of API-shaped nodes and
pods, snapshots and node views built from them, and runners that call one plugin's extension
points, or whole scheduling cycles, in memory. The scheduler's own plugin tests use it.

    from scheduler.testing import node, pod, score_nodes

    scores = score_nodes(MY_SPEC, {"label": "spot"}, pod("p"), [node("a"), node("b")])
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.cache.cache import Cache
from scheduler.cache.dra_objects import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from scheduler.cache.snapshot import Snapshot
from scheduler.cache.volume_objects import (
    CAPACITIES,
    CLAIMS,
    CSI_DRIVERS,
    CSI_NODES,
    STORAGE_CLASSES,
    VOLUMES,
)
from scheduler.config import default_config, load_config_file, parse_config
from scheduler.cycle import (
    SchedulingError,
    pre_filter_candidates,
    prioritize,
    record_rejections,
    schedule_one,
)
from scheduler.framework.events import CONFIG_MAP_DELETE, CONFIG_MAP_UPDATE
from scheduler.framework.extender import Extender
from scheduler.framework.interface import CycleState, Diagnosis, FilterResult, NodeView
from scheduler.framework.ports import NullPorts
from scheduler.framework.registry import PluginSpec, Registry
from scheduler.framework.runtime import Framework
from scheduler.intake import Intake
from scheduler.model.node import NodeSummary
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import PLUGIN_MODULES, default_registry, installed_registry
from scheduler.scheduler import Scheduler


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str] | None = None,
    images: Sequence[tuple[Sequence[str], int]] = (),
    zone: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    meta: dict[str, Any] = {"name": name, "labels": all_labels, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "images": [{"names": list(n), "sizeBytes": s} for n, s in images],
        },
    }


def container(
    name: str = "c",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    image: str = "registry.example/app:1",
    ports: Sequence[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = dict(extra or {})
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    out: dict[str, Any] = {"name": name, "image": image, "resources": {"requests": requests}}
    if ports:
        out["ports"] = [dict(p) for p in ports]
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str = "",
    labels: Mapping[str, str] | None = None,
    priority: int | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    scheduler_name: str = "secondary-scheduler",
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    nominated_node_name: str = "",
    uid: str | None = None,
    deletion_timestamp: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    body_spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [dict(c) for c in containers]
        if containers is not None
        else [container(cpu=cpu, memory=memory)],
    }
    if init_containers:
        body_spec["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        body_spec["nodeName"] = node_name
    if priority is not None:
        body_spec["priority"] = priority
    body_spec.update(spec or {})
    body_status: dict[str, Any] = {"phase": "Running" if node_name else "Pending"}
    if nominated_node_name:
        body_status["nominatedNodeName"] = nominated_node_name
    body_status.update(status or {})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
        "resourceVersion": "1",
    }
    if deletion_timestamp:
        meta["deletionTimestamp"] = deletion_timestamp
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body_spec,
            "status": body_status}


def pod_info(name: str, **kwargs: Any) -> PodInfo:
    info = PodInfo.from_pod(pod(name, **kwargs))
    assert info.parse_error is None, info.parse_error
    return info


# -- storage ------------------------------------------------------------------------------
DRA_KINDS = {
    "ResourceClaim": RESOURCE_CLAIMS, "ResourceSlice": RESOURCE_SLICES,
    "DeviceClass": DEVICE_CLASSES, "DeviceTaintRule": DEVICE_TAINT_RULES,
}
STORAGE_KINDS = {
    "PersistentVolumeClaim": CLAIMS, "PersistentVolume": VOLUMES,
    "StorageClass": STORAGE_CLASSES, "CSINode": CSI_NODES, "CSIDriver": CSI_DRIVERS,
    "CSIStorageCapacity": CAPACITIES,
}


def claim(
    name: str, *, namespace: str = "default", storage: str = "1Gi",
    storage_class: str | None = None, volume_name: str = "", bound: bool = False,
    access_modes: Sequence[str] = ("ReadWriteOnce",), selected_node: str | None = None,
    phase: str = "Pending", uid: str | None = None, resource_version: str = "1",
) -> dict[str, Any]:
    """A PersistentVolumeClaim; ``bound`` adds the bind-completed annotation."""
    annotations: dict[str, str] = {}
    if bound:
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node is not None:
        annotations["volume.kubernetes.io/selected-node"] = selected_node
    spec: dict[str, Any] = {"accessModes": list(access_modes),
                            "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume_name:
        spec["volumeName"] = volume_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations,
                         "uid": uid or f"uid-{namespace}-{name}",
                         "resourceVersion": resource_version},
            "spec": spec, "status": {"phase": "Bound" if bound else phase}}


def volume(
    name: str, *, storage: str = "1Gi", storage_class: str = "", hostnames: Sequence[str] = (),
    access_modes: Sequence[str] = ("ReadWriteOnce",), claim_ref: Mapping[str, str] | None = None,
    phase: str = "Available", labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None, resource_version: str = "1",
) -> dict[str, Any]:
    """A PersistentVolume; ``hostnames`` give it a node affinity (a local volume), ``csi``
    its (driver, volumeHandle)."""
    spec: dict[str, Any] = {"capacity": {"storage": storage},
                            "accessModes": list(access_modes),
                            "storageClassName": storage_class}
    if hostnames:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": list(hostnames)}]}]}}
    if claim_ref is not None:
        spec["claimRef"] = dict(claim_ref)
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": dict(labels or {}),
                         "resourceVersion": resource_version},
            "spec": spec, "status": {"phase": phase}}


def storage_class(
    name: str, *, provisioner: str = "kubernetes.io/no-provisioner",
    wait_for_first_consumer: bool = True,
    allowed_zones: Sequence[str] = (),
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait_for_first_consumer else "Immediate"}
    if allowed_zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": list(allowed_zones)}]}]
    return obj


def csi_node(name: str, drivers: Mapping[str, int | None]) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [
                {"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None
                                               else {})} for d, c in drivers.items()]}}


def csi_driver(
    name: str, *, prevent_if_missing: bool = False, storage_capacity: bool = False
) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"preventPodSchedulingIfMissing": prevent_if_missing,
                     "storageCapacity": storage_capacity}}


def storage_capacity(
    name: str, storage_class: str, capacity: str, *, hostname: str,
    maximum_volume_size: str | None = None, namespace: str = "kube-system",
) -> dict[str, Any]:
    """A CSIStorageCapacity of ``storage_class`` on the node named ``hostname``."""
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace}, "storageClassName": storage_class,
        "capacity": capacity,
        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": hostname}}}
    if maximum_volume_size is not None:
        obj["maximumVolumeSize"] = maximum_volume_size
    return obj


def with_claims(obj: dict[str, Any], *claims: str) -> dict[str, Any]:
    """The pod, with a volume for each claim name."""
    obj["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return obj


def namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels or {})}}


def cache_of(
    nodes: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
    namespaces: Iterable[Mapping[str, Any]] = (),
) -> Cache:
    cache = Cache()
    for ns in namespaces:
        cache.upsert_namespace(ns)
    for n in nodes:
        cache.upsert_node(n)
    for p in pods:
        cache.upsert_pod(PodInfo.from_pod(p))
    return cache


def snapshot_of(
    nodes: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
    namespaces: Iterable[Mapping[str, Any]] = (),
) -> Snapshot:
    return Snapshot(cache_of(nodes, pods, namespaces))


def full_view(snapshot: Snapshot) -> NodeView:
    """Every node of the snapshot, in the order the nodes were added."""
    rows = np.asarray(sorted(snapshot.nodes.index.values()), dtype=np.int64)
    return NodeView.of(snapshot, rows)


def view_with(
    snapshot: Snapshot,
    node_name: str,
    *,
    added: Sequence[PodInfo] = (),
    removed: Sequence[PodInfo] = (),
    removed_elsewhere: Sequence[PodInfo] = (),
) -> NodeView:
    """One node with pods hypothetically added to or removed from it, and others removed from
    their own nodes in the same hypothesis (a pod group's, by preemption)."""
    row = snapshot.nodes.index[node_name]
    requested = snapshot.nodes.requested[[row]].copy()
    count = snapshot.nodes.pod_count[[row]].copy()
    for p in added:
        requested[0] += snapshot.resources.vector(p.requests)
        count[0] += 1
    for p in removed:
        requested[0] -= snapshot.resources.vector(p.requests)
        count[0] -= 1
    return NodeView(
        snapshot=snapshot,
        idx=np.asarray([row], dtype=np.int64),
        requested=requested,
        pod_count=count,
        added=[list(added)],
        removed=[list(removed)],
        removed_elsewhere=[list(removed_elsewhere)] if removed_elsewhere else None,
    )


def rejected_reasons(result: FilterResult, names: Sequence[str]) -> dict[str, list[str]]:
    """Per node name, the reasons a FilterResult gives (empty list: passed)."""
    out: dict[str, list[str]] = {n: [] for n in names}
    for mask, reason in result.reasons:
        for i in np.flatnonzero(mask):
            out[names[int(i)]].append(reason)
    return out


def summary(obj: Mapping[str, Any] | None) -> NodeSummary | None:
    """A node as the queue hands it to hints (old and new alike)."""
    return None if obj is None else NodeSummary.from_object(obj)


# -- runners --------------------------------------------------------------------------------
Objects = Iterable[Mapping[str, Any]]
BUILTIN_NAMES = frozenset(module.SPEC.name for module in PLUGIN_MODULES)
# The watch intake of each scheduler_of's scheduler: later events go through the same one,
# which knows each object's previous version.
_INTAKES: weakref.WeakKeyDictionary[Scheduler, Intake] = weakref.WeakKeyDictionary()


ConfigMaps = Mapping[tuple[str, str], Mapping[str, str]]


# 2026-01-01T00:00:00Z: where a ManualClock's wall clock starts unless told.
WALL_CLOCK_START = 1_767_225_600.0


class ManualClock:
    """The scheduler's clocks, moving only when told: ``now`` (monotonic seconds: backoffs,
    ``Handle.now``) and ``wall`` (seconds since the epoch: ``Handle.wall_clock``).
    ``advance`` moves both; ``set_wall`` sets the time of day (a float or an aware
    datetime)."""

    def __init__(self, now: float = 1_000.0, wall: float = WALL_CLOCK_START) -> None:
        self.now = now
        self.wall = wall

    def __call__(self) -> float:
        return self.now

    def wall_clock(self) -> float:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall += seconds

    def set_wall(self, when: float | datetime) -> None:
        if isinstance(when, datetime):
            if when.tzinfo is None:
                raise ValueError("set_wall takes an aware datetime (tzinfo=timezone.utc)")
            when = when.timestamp()
        self.wall = when


def scheduler_of(
    config: Mapping[str, Any] | str | Path | None = None,
    *,
    plugins: Iterable[PluginSpec] = (),
    nodes: Objects = (),
    pods: Objects = (),
    extenders: Sequence[Extender] = (),
    config_maps: ConfigMaps | None = None,
    clock: ManualClock | None = None,
    storage: Objects = (),
) -> tuple[Scheduler, NullPorts]:
    """A scheduler that does no I/O: the built-in plugins plus ``plugins``, configured by
    ``config`` (a KubeSchedulerConfiguration as a mapping or a file; the defaults when None),
    the objects fed through the intake as a watch delivers them, and bindings run inline
    through ports that only record (``ports.bound``, ``ports.failures``). ``extenders``
    stand in for the configuration's HTTP extenders; ``config_maps`` are the ``data`` of the
    ConfigMaps plugins watch, by (namespace, name): a watched one not given does not exist
    (change them later with :func:`set_config_map`). ``storage`` are PersistentVolumeClaims,
    PersistentVolumes, StorageClasses, CSINodes and CSIDrivers (see :func:`claim` and the
    builders beside it), and the DRA objects: ResourceClaims, ResourceSlices, DeviceClasses
    and DeviceTaintRules, as API dicts. The scheduler runs on ``clock``, a
    :class:`ManualClock` of its own when not given: what waits on it (VolumeBinding's
    PreBind) advances it instead.

    The plugins are those the scheduler would load: the built-ins, the installed ones (the
    ``secondary_scheduler.plugins`` entry points) and ``plugins``, which take the place of
    an installed plugin of the same name. Objects of the wrong kind (a pod among ``nodes``)
    are refused with a ValueError."""
    nodes, pods = list(nodes), list(pods)  # read twice: checked, then fed
    _check_kinds(nodes, "Node", "nodes")
    _check_kinds(pods, "Pod", "pods")
    registry = registry_of(plugins)
    if isinstance(config, str | Path):
        cfg = load_config_file(config, registry)
    else:
        cfg = parse_config(dict(config), registry) if config else default_config(registry)
    ports = NullPorts()
    clock = clock or ManualClock()
    s = Scheduler(cfg, registry, binder=ports, reporter=ports, seed=1, extenders=extenders,
                  clock=clock, sleep=clock.advance, wall_clock=clock.wall_clock, writer=ports)
    s.submit_binding = lambda fn, *args: fn(*args)  # type: ignore[method-assign]
    for namespace, name in s.config_map_watches:
        data = (config_maps or {}).get((namespace, name))
        s.config_map_changed(namespace, name, data, CONFIG_MAP_UPDATE)
    intake = _INTAKES[s] = Intake(s)
    for obj in storage:
        if obj["kind"] in DRA_KINDS:
            intake.on_dra_object(DRA_KINDS[obj["kind"]], None, obj)
        else:
            intake.on_volume_object(STORAGE_KINDS[obj["kind"]], None, obj)
    for obj in nodes:
        intake.on_node(None, obj)
    for obj in pods:
        intake.on_pod(None, obj)
    s.refresh()
    return s, ports


def registry_of(plugins: Iterable[PluginSpec] = ()) -> Registry:
    """The plugins the scheduler would load (built-in and installed), with ``plugins`` in
    the place of installed ones of the same name (a plugin's tests run their own spec)."""
    given = {spec.name: spec for spec in plugins}
    registry = default_registry()
    for spec in _installed():
        if spec.name not in given:
            registry.register(spec)
    for spec in given.values():
        registry.register(spec)
    return registry


@functools.cache
def _installed() -> tuple[PluginSpec, ...]:
    """The installed (entry-point) plugins, loaded once as the app loads them."""
    installed = installed_registry()
    specs = (installed.get(name) for name in installed.names() if name not in BUILTIN_NAMES)
    return tuple(spec for spec in specs if spec is not None)


def _check_kinds(objects: Objects, kind: str, what: str) -> None:
    """ValueError for an object of another kind than ``kind`` among ``objects``."""
    for i, obj in enumerate(objects):
        got = obj.get("kind") or _kind_by_shape(obj)
        if got is not None and got != kind:
            name = (obj.get("metadata") or {}).get("name", "?")
            raise ValueError(f"{what}[{i}] is a {got} ({name!r}), not a {kind}")


def _kind_by_shape(obj: Mapping[str, Any]) -> str | None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if "containers" in spec:
        return "Pod"
    if "allocatable" in status or "capacity" in status:
        return "Node"
    return None


def run_cycles(s: Scheduler) -> int:
    """Scheduling cycles until no pod is ready to pop (backoffs are not waited for); returns
    how many ran."""
    cycles = 0
    while schedule_one(s, timeout=0):
        cycles += 1
    return cycles


def set_node(s: Scheduler, obj: Mapping[str, Any]) -> None:
    """A node is added or updated, as the watch would say it (``node(...)`` builds one): the
    queue hears the event its changes make (a node's annotations alone:
    ``Action.UPDATE_NODE_ANNOTATION``)."""
    _check_kinds([obj], "Node", "obj")
    _INTAKES[s].on_node(None, obj)
    s.refresh()


def set_pod(s: Scheduler, obj: Mapping[str, Any]) -> None:
    """A pod is added or updated, as the watch would say it (``pod(...)`` builds one)."""
    _check_kinds([obj], "Pod", "obj")
    _INTAKES[s].on_pod(None, obj)
    s.refresh()


def set_storage_object(s: Scheduler, obj: Mapping[str, Any], *, deleted: bool = False) -> None:
    """A storage or DRA object (see ``storage`` of :func:`scheduler_of`) is added, updated
    or deleted, as the watch would say it."""
    intake = _INTAKES[s]
    event = "DELETED" if deleted else None
    if obj["kind"] in DRA_KINDS:
        intake.on_dra_object(DRA_KINDS[obj["kind"]], event, obj)
    else:
        intake.on_volume_object(STORAGE_KINDS[obj["kind"]], event, obj)
    s.refresh()


def set_config_map(
    s: Scheduler, namespace: str, name: str, data: Mapping[str, str] | None
) -> None:
    """A watched ConfigMap changes (``None``: it is deleted), as the watch would say it."""
    s.config_map_changed(namespace, name, data,
                         CONFIG_MAP_DELETE if data is None else CONFIG_MAP_UPDATE)
    s.refresh()


def schedule(
    config: Mapping[str, Any] | str | Path | None, nodes: Objects,
    pods: Sequence[Mapping[str, Any]], *,
    plugins: Iterable[PluginSpec] = (), extenders: Sequence[Extender] = (),
    config_maps: ConfigMaps | None = None, storage: Objects = (),
) -> dict[str, str]:
    """Whole scheduling cycles until the queue has nothing to pop: the node each of ``pods``
    was bound to, ``""`` for those left pending."""
    s, ports = scheduler_of(config, plugins=plugins, nodes=nodes, pods=pods,
                            extenders=extenders, config_maps=config_maps, storage=storage)
    try:
        run_cycles(s)
    finally:
        s.stop(timeout=5)
    placed = {key: node_name for key, node_name in ports.bound}
    return {p["metadata"]["name"]: placed.get(
        f"{p['metadata'].get('namespace', 'default')}/{p['metadata']['name']}", "")
        for p in pods}


def _only(spec: PluginSpec, args: Mapping[str, Any] | None) -> dict[str, Any]:
    enabled = [{"name": "PrioritySort"}, {"name": "DefaultBinder"}]
    if spec.name not in ("PrioritySort", "DefaultBinder"):
        enabled.append({"name": spec.name})
    profile: dict[str, Any] = {"schedulerName": "secondary-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}], "enabled": enabled}}}
    if args is not None:
        profile["pluginConfig"] = [{"name": spec.name, "args": dict(args)}]
    return {"profiles": [profile]}


def _profile_of(
    spec: PluginSpec, args: Mapping[str, Any] | None, nodes: Objects, pods: Objects,
    config_maps: ConfigMaps | None, storage: Objects,
) -> tuple[Scheduler, Framework]:
    """A scheduler whose one profile enables ``spec`` by multiPoint, as a configuration
    would, beside the QueueSort and Bind every profile needs."""
    builtin = default_registry().get(spec.name) is not None
    s, _ = scheduler_of(_only(spec, args), plugins=() if builtin else (spec,),
                        nodes=nodes, pods=pods, config_maps=config_maps, storage=storage)
    return s, s.profiles["secondary-scheduler"]


def _filter(s: Scheduler, framework: Framework, state: CycleState, pod: PodInfo) -> Diagnosis:
    """PreFilter and Filter on every node, as a cycle runs them (nominated pods counted):
    the reasons of the nodes they rejected."""
    snapshot = s.snapshot
    diagnosis = Diagnosis(codes=np.zeros(snapshot.nodes.capacity, dtype=np.uint8),
                          num_all_nodes=int(snapshot.order().size))
    candidates = pre_filter_candidates(s, framework, state, pod, diagnosis)
    if candidates is None or candidates.size == 0:
        return diagnosis
    view = NodeView.of(snapshot, candidates)
    outcome = framework.run_filters_with_nominated(state, pod, view, s.queue.nominator.all())
    if outcome.error is not None:
        raise SchedulingError(outcome.error.message)
    record_rejections(diagnosis, candidates, outcome, len(view))
    return diagnosis


def filter_nodes(
    spec: PluginSpec, args: Mapping[str, Any] | None, incoming: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]], pods: Objects = (), config_maps: ConfigMaps | None = None,
    storage: Objects = (),
) -> dict[str, list[str]]:
    """One plugin's PreFilter and Filter on every node, run by a profile that enables it
    (only the points its spec lists): the reasons per node name, an empty list where the
    node passes. A PreFilter rejection is every node's reason."""
    s, framework = _profile_of(spec, args, nodes, pods, config_maps, storage)
    diagnosis = _filter(s, framework, CycleState(), PodInfo.from_pod(dict(incoming)))
    names = s.snapshot.nodes.names
    out: dict[str, list[str]] = {n["metadata"]["name"]: [] for n in nodes}
    for rows, reason, _ in diagnosis.reasons:
        for row in rows.tolist():
            out[names[row]].append(reason)
    return out


def score_nodes(
    spec: PluginSpec, args: Mapping[str, Any] | None, incoming: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]], pods: Objects = (), config_maps: ConfigMaps | None = None,
    storage: Objects = (),
) -> dict[str, int]:
    """One plugin's PreScore, Score and NormalizeScore, run by a profile that enables it
    (only the points its spec lists), on every node, whether its Filter passed it or not:
    the normalised score per node name, before the profile's weight; 0 everywhere when its
    PreScore says Skip. PreFilter and Filter run first, as in a cycle (scores may read what
    they found). What a cycle would fail on (an Error, a score out of range) raises
    SchedulingError."""
    s, framework = _profile_of(spec, args, nodes, pods, config_maps, storage)
    info = PodInfo.from_pod(dict(incoming))
    state = CycleState()
    _filter(s, framework, state, info)
    view = full_view(s.snapshot)
    _, per_plugin = prioritize(framework, state, info, view)
    scores = per_plugin.get(spec.name, np.zeros(len(view), dtype=np.int64))
    return {name: int(score) for name, score in zip(view.names(), scores, strict=True)}
