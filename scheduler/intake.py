"""From watch events to cache deltas and queue calls (upstream's eventhandlers.go).

Runs on the watch thread. It never touches the cache directly (the cache belongs to the
scheduling thread): it puts deltas in the inbox, calls the thread-safe queue, and keeps just
enough of its own state to tell what kind of change an update was (so the queue moves only
the pods the change may help) and to resolve priorities at intake.

Which pods: a pod is queued when its ``spec.schedulerName`` names one of our profiles, it has
no ``spec.nodeName``, is not terminating and carries no scheduling gates; every bound pod is
accounted in the cache, whichever scheduler bound it. A pod that finished (Succeeded or
Failed) is handled as deleted and not kept, as upstream's informer never lists such pods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.cache import pod_groups
from scheduler.cache.dra_objects import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from scheduler.cache.dra_objects import PARSERS as DRA_PARSERS
from scheduler.cache.volume_objects import (
    CAPACITIES,
    CLAIMS,
    CSI_DRIVERS,
    CSI_NODES,
    PARSERS,
    STORAGE_CLASSES,
    VOLUMES,
    key_of,
)
from scheduler.framework.avoidance import owner_key
from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NAMESPACE_LABEL_CHANGE,
    NODE_ADD,
    NODE_DELETE,
    PDB_CHANGE,
    UNSCHEDULED_POD_ADD,
    Action,
    ClusterEvent,
    Resource,
)
from scheduler.metrics import Metrics
from scheduler.model.errors import InvalidSpecError
from scheduler.model.node import NodeSummary
from scheduler.model.pod import FAILED, PodInfo

if TYPE_CHECKING:
    from scheduler.scheduler import Scheduler

log = structlog.get_logger("scheduler.intake")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# PodGroup events, labelled as upstream's (fwk.ClusterEvent.Label: resource, then action).
POD_GROUP_EVENTS = {
    action: ClusterEvent(Resource.POD_GROUP, action, f"PodGroup{label}")
    for action, label in ((Action.ADD, "Add"), (Action.UPDATE, "Update"),
                          (Action.DELETE, "Delete"))
}
# status.reason of pods the kubelet failed, besides "OutOf<resource>" admission failures:
# node-pressure eviction, and admission refusals of other kinds.
KUBELET_REJECTIONS = frozenset({"Evicted", "UnexpectedAdmissionError", "NodeAffinity"})
VOLUME_RESOURCES = {
    CLAIMS: Resource.PVC, VOLUMES: Resource.PV, STORAGE_CLASSES: Resource.STORAGE_CLASS,
    CSI_NODES: Resource.CSI_NODE, CSI_DRIVERS: Resource.CSI_DRIVER,
    CAPACITIES: Resource.CSI_STORAGE_CAPACITY,
}
# A DeviceTaintRule changes the devices of the slices it selects: upstream's slice tracker
# reports it as a change of those slices, and so does the intake (with no objects: a hint
# cannot tell which slices changed).
DRA_RESOURCES = {
    RESOURCE_CLAIMS: Resource.RESOURCE_CLAIM, RESOURCE_SLICES: Resource.RESOURCE_SLICE,
    DEVICE_CLASSES: Resource.DEVICE_CLASS, DEVICE_TAINT_RULES: Resource.RESOURCE_SLICE,
}
NAMESPACES, PRIORITY_CLASSES, PDBS = "namespaces", "priorityclasses", "poddisruptionbudgets"


def _object_key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _version(obj: Mapping[str, Any]) -> int | None:
    return parse_version(obj["metadata"].get("resourceVersion"))


def parse_version(value: object) -> int | None:
    """resourceVersions are etcd revisions, comparable as integers; anything else (absent, or
    an opaque version from another storage) is not compared."""
    try:
        return int(str(value)) if value else None
    except ValueError:
        return None


def report_unparsable(metrics: Metrics, kind: str, obj: object, error: Exception) -> None:
    """An object a handler could not parse: logged with its kind, name and reason, counted in
    ``secondary_scheduler_watch_objects_skipped_total``, and skipped by the caller, so one
    bad object never stalls its kind's watch or listing."""
    meta = _metadata(obj)
    name = "/".join(str(part) for part in (meta.get("namespace"), meta.get("name")) if part)
    log.error("Skipped an object that could not be parsed", kind=kind, name=name or None,
              reason=f"{type(error).__name__}: {error}")
    metrics.watch_object_skipped(kind)


class Intake:
    def __init__(self, scheduler: Scheduler) -> None:
        self.s = scheduler
        self.scheduler_names = scheduler.config.scheduler_names
        self._nodes: dict[str, NodeSummary] = {}
        # The last seen version of every pod we know, by uid (shared with the scheduler).
        self._pods = scheduler.pods
        self._priority_classes: dict[str, tuple[int, bool, str]] = {}
        self._invalid_reported: dict[str, str] = {}
        # Per kopf-fed kind: the resourceVersion last applied per key (ns/name), and the
        # version at which deleted keys went (until a listing covers it).
        self._known: dict[str, dict[str, int]] = {NAMESPACES: {}, PRIORITY_CLASSES: {}, PDBS: {}}
        self._gone: dict[str, dict[str, int]] = {NAMESPACES: {}, PRIORITY_CLASSES: {}, PDBS: {}}
        self._low_volume_lock = threading.RLock()
        self._appliers: dict[str, Callable[[str | None, Mapping[str, Any]], None]] = {
            NAMESPACES: self._namespace, PRIORITY_CLASSES: self._priority_class, PDBS: self._pdb,
        }

    # -- pods -----------------------------------------------------------------------------
    def on_pod(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self._apply_pod(event_type, obj)

    def pod_info(self, obj: Mapping[str, Any]) -> PodInfo:
        """The pod as the queue would hold it: parsed, its priority resolved."""
        return self._resolve_priority(PodInfo.from_pod(_without_managed_fields(obj)))

    def _apply_pod(self, event_type: str | None, obj: Mapping[str, Any]) -> str:
        """Apply one pod event; returns the pod's uid."""
        info = PodInfo.from_pod(_without_managed_fields(obj))
        if event_type == DELETED:
            self._pod_deleted(info)
            return info.uid
        if info.is_terminal:
            self._pod_done(info)
            return info.uid
        old = self._pods.get(info.uid)
        info = self._resolve_priority(info)
        self._pods[info.uid] = info
        if info.pod_group is not None:
            # Counted before the queue's PreEnqueue sees it (GangScheduling's quorum).
            self.s.pod_groups.pod_changed(old, info)
        if info.node_name:
            self._pod_bound(old, info)
        else:
            self._pod_pending(old, info)
        return info.uid

    def _pod_done(self, info: PodInfo) -> None:
        """Succeeded or Failed: it holds nothing and will never be scheduled. Upstream's pod
        informer never sees such pods (a field selector excludes them); here the transition
        is handled as the pod's deletion and nothing of it is kept, so completed Jobs cost no
        memory. Later events of a finished pod find nothing and change nothing."""
        old = self._pods.pop(info.uid, None)
        if old is not None:
            self._remember_kubelet_rejection(info)
            self._pod_gone(info.uid, old)

    def _remember_kubelet_rejection(self, info: PodInfo) -> None:
        """A kubelet that refused a pod of ours at admission (``OutOfcpu``...) or evicted it
        under node pressure gets its controller's next pods only when no other node fits,
        for the rescheduler's avoid duration (AvoidBounceBack): else the replacement goes
        straight back to it, and is refused again."""
        rescheduler = self.s.config.rescheduler
        reason = str((info.raw.get("status") or {}).get("reason") or "")
        owner = owner_key(info)
        if (
            not rescheduler.enabled
            or info.phase != FAILED
            or not info.node_name
            or owner is None
            or info.scheduler_name not in self.scheduler_names
            or not (reason.startswith("OutOf") or reason in KUBELET_REJECTIONS)
        ):
            return
        self.s.avoidance.avoid(owner, info.node_name, rescheduler.avoid_seconds,
                               f"the kubelet failed a pod of it: {reason}")
        log.info("Avoiding node for the pod's controller", pod=info.key, node=info.node_name,
                 reason=reason, seconds=rescheduler.avoid_seconds)

    def _pod_deleted(self, info: PodInfo) -> None:
        old = self._pods.pop(info.uid, None)
        if old is None and info.is_terminal:
            return  # handled when it finished (or never held anything here)
        self._pod_gone(info.uid, old or info)

    def _pod_gone(self, uid: str, last: PodInfo) -> None:
        """``last`` (the last version seen) no longer exists for scheduling."""
        self._invalid_reported.pop(uid, None)
        if last.pod_group is not None:
            self.s.pod_groups.pod_deleted(last)
        self.s.inbox.put(lambda: self._forget_deleted(uid))
        self.s.queue.delete(uid)
        if uid in self.s.waiting:
            # Assumed and waiting at Permit: its binding cycle fails now and frees the room.
            self.s.waiting.reject(uid, "removed")
            self.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, last, None)
        elif last.node_name:
            self.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, last, None)
        elif last.nominated_node_name:
            # Space a deleted nominated pod reserved is free again for lower-priority pods.
            self._nomination_gone(last)

    def _nomination_gone(self, old: PodInfo) -> None:
        """``old`` no longer holds its nomination: pods of lower or equal priority may fit."""
        priority = old.priority
        self.s.queue.move_all_to_active_or_backoff(
            ASSIGNED_POD_DELETE, old, None, pre_check=lambda p: p.priority <= priority
        )

    def _forget_deleted(self, uid: str) -> None:
        self.s.cache.remove_pod(uid)

    def _pod_bound(self, old: PodInfo | None, info: PodInfo) -> None:
        self.s.inbox.put(lambda: self.s.cache.upsert_pod(info))
        if old is None or not old.node_name:
            # Bound now (by us or someone else): it leaves the queue.
            self.s.queue.delete(info.uid)
        if old is None or not old.node_name:
            self.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, old, info)
        else:
            if old.labels != info.labels:
                self.s.queue.move_all_to_active_or_backoff(_ASSIGNED_POD_LABEL_UPDATE, old, info)
            if any(info.requests.get(name, 0) < value for name, value in old.requests.items()):
                # An in-place resize down frees room on the node.
                self.s.queue.move_all_to_active_or_backoff(_ASSIGNED_POD_SCALE_DOWN, old, info)

    def _pod_pending(self, old: PodInfo | None, info: PodInfo) -> None:
        if info.scheduler_name not in self.scheduler_names:
            return
        if info.is_terminating or _gated(info):
            if info.is_terminating and info.uid in self.s.waiting:
                self.s.waiting.reject(info.uid, "removed")
            self.s.queue.delete(info.uid)
            if old is not None and old.nominated_node_name and self._queueable(old):
                self._nomination_gone(old)
            return
        if info.parse_error is not None:
            self.s.queue.delete(info.uid)
            self._report_invalid(info, info.parse_error)
            return
        self._invalid_reported.pop(info.uid, None)
        if old is None or not self._queueable(old):
            # New to the queue, or back after being gated or invalid: ``add`` (an update of
            # a pod the queue dropped would be ignored).
            self.s.queue.add(info)
            if old is None and info.pod_group is not None and self.s.pod_groups.quorum_met(info):
                # A new member may complete its gang (upstream's UnscheduledPod/Add, which
                # only GangScheduling registers): told to its own group's held members, and
                # only once the quorum is there. Upstream's pool holds one entry per group;
                # ours one per member, and a gang of 1000 told of every arrival cost 14 s.
                self.s.queue.move_all_to_active_or_backoff(
                    UNSCHEDULED_POD_ADD, None, info, pre_check=pod_groups.same_group(info))
            return
        self.s.queue.update(old, info)
        if old.nominated_node_name and old.nominated_node_name != info.nominated_node_name:
            self._nomination_gone(old)

    def _queueable(self, info: PodInfo) -> bool:
        """Whether this version of a pod was handed to the queue."""
        return (
            info.scheduler_name in self.scheduler_names
            and not info.node_name
            and not info.is_terminating
            and not _gated(info)
            and info.parse_error is None
        )

    def _report_invalid(self, info: PodInfo, error: InvalidSpecError) -> None:
        """Say once per spec why the pod cannot be scheduled; no hot retries."""
        message = f"invalid pod spec: {error}"
        if self._invalid_reported.get(info.uid) == message:
            return
        self._invalid_reported[info.uid] = message
        log.warning("Pod has an invalid spec", pod=info.key, field=error.field, reason=message)
        self.s.reporter.failed(info, "SchedulerError", message, None)

    def _resolve_priority(self, info: PodInfo) -> PodInfo:
        """``spec.priority`` as admission set it; else the PriorityClass, the global default, 0."""
        if info.priority_set:
            return info
        name = info.priority_class_name
        if name:
            found = self._priority_classes.get(name)
            if found is None:
                if info.parse_error is None and not info.node_name:
                    error = InvalidSpecError(
                        "spec.priorityClassName", f"no PriorityClass with name {name} was found"
                    )
                    return info.replace(parse_error=error)
                return info
            value, _, policy = found
        else:
            default = min(
                ((v, p) for v, is_default, p in self._priority_classes.values() if is_default),
                default=None,
            )
            if default is None:
                return info
            value, policy = default
        preemption = info.raw.get("spec", {}).get("preemptionPolicy") or policy
        return info.replace(priority=value, preemption_policy=preemption)

    def _tell_queue(self, event: ClusterEvent, old: object, new: object) -> None:
        """A change of another kind than pods, for the pods the queue holds or is scheduling.

        With no pod known, the queue holds none and none is in flight: the event could move
        nothing and is not raised. That is the synced start, which applies the pods' listing
        after every other kind's (an informer's initial listing, as kube-scheduler's
        WaitForCacheSync before its first cycle), so a listing of thousands of claims costs
        their parsing and no queue work. A pod known later is queued after the change, and
        its PreEnqueue and filters see the change."""
        if self._pods:
            self.s.queue.move_all_to_active_or_backoff(event, old, new)

    # -- nodes ----------------------------------------------------------------------------
    def on_node(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event_type == DELETED:
            gone = self._nodes.pop(name, None)
            self.s.known_nodes.discard(name)
            self.s.inbox.put(lambda: self.s.cache.remove_node(name))
            self._tell_queue(NODE_DELETE, gone, None)
            return
        try:
            summary = NodeSummary.from_object(obj)
        except InvalidSpecError as exc:
            report_unparsable(self.s.metrics, "nodes", obj, exc)
            return
        old = self._nodes.get(name)
        self._nodes[name] = summary
        self.s.known_nodes.add(name)
        node = dict(_without_managed_fields(obj))
        self.s.inbox.put(lambda: self._upsert_node(node))
        event = _node_event(old, summary)
        if event is not None:
            # Hints get one parsed type per kind, old and new alike.
            self._tell_queue(event, old, summary)

    def _upsert_node(self, node: Mapping[str, Any]) -> None:
        self.s.cache.upsert_node(node)

    # -- namespaces, priority classes, PDBs -----------------------------------------------
    # These come from kopf's watches (on its thread) and from the periodic resync listing (on
    # the resync thread). Each object's last applied resourceVersion is kept, and an event or
    # listed object not newer than it is dropped, so a stale listing never overwrites a newer
    # object nor brings back one deleted since. One lock makes check-and-apply atomic.
    def on_namespace(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self._low_volume_event(NAMESPACES, event_type, obj)

    def _namespace(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event_type == DELETED:
            self.s.inbox.put(lambda: self.s.cache.remove_namespace(name))
            return
        ns = dict(obj)
        self.s.inbox.put(lambda: self._upsert_namespace(ns))
        self.s.queue.move_all_to_active_or_backoff(NAMESPACE_LABEL_CHANGE, None, obj)

    def _upsert_namespace(self, ns: Mapping[str, Any]) -> None:
        self.s.cache.upsert_namespace(ns)

    def on_priority_class(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self._low_volume_event(PRIORITY_CLASSES, event_type, obj)

    def _priority_class(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event_type == DELETED:
            self._priority_classes.pop(name, None)
            return
        self._priority_classes[name] = (
            int(obj.get("value", 0)),
            bool(obj.get("globalDefault", False)),
            obj.get("preemptionPolicy") or "PreemptLowerPriority",
        )

    def on_pdb(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self._low_volume_event(PDBS, event_type, obj)

    def _pdb(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        key = _object_key(obj)
        if event_type == DELETED:
            self.s.inbox.put(lambda: self.s.cache.remove_pdb(key))
        else:
            pdb = dict(obj)
            self.s.inbox.put(lambda: self.s.cache.upsert_pdb(pdb))
        self.s.queue.move_all_to_active_or_backoff(PDB_CHANGE, None, obj)

    def _low_volume_event(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        self._apply_or_skip(kind, obj, lambda o: self._apply_if_newer(kind, event_type, o))

    def _apply_if_newer(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> bool:
        """Apply one event (``None``: a listed object) unless a version at least as new was
        applied already; False when dropped as stale."""
        key, version = _object_key(obj), _version(obj)
        with self._low_volume_lock:
            known, gone = self._known[kind], self._gone[kind]
            last = known.get(key, gone.get(key))
            if version is not None and last is not None and version <= last:
                return False
            if event_type == DELETED:
                known.pop(key, None)
                gone[key] = version or 0
            else:
                known[key] = version or 0
                gone.pop(key, None)
            self._appliers[kind](event_type, obj)
            return True

    # -- relist reconciliation ------------------------------------------------------------
    def resync(
        self, kind: str, listed: Iterable[Mapping[str, Any]], list_version: str | None = None
    ) -> list[str]:
        """Reconcile a kopf-fed kind against a listing taken at ``list_version``; returns the
        keys removed.

        Listed objects are applied unless already known at that version or newer. A known
        object missing from the listing is removed only if the listing proves it gone: it was
        last seen at a version the listing already covers (one created after the listing was
        taken stays). Without a list version every unlisted object counts as gone.
        """
        listed_keys: set[str] = set()
        for obj in listed:
            meta = _metadata(obj)
            listed_keys.add(f"{meta.get('namespace', '')}/{meta.get('name')}")
            self._apply_or_skip(kind, obj, lambda o: self._apply_if_newer(kind, None, o))
        covered = parse_version(list_version)
        with self._low_volume_lock:
            known, gone = self._known[kind], self._gone[kind]
            proven = sorted(
                key for key, seen in known.items()
                if key not in listed_keys and (covered is None or seen <= covered)
            )
            for key in proven:
                namespace, name = key.split("/", 1)
                self._apply_if_newer(kind, DELETED, {"metadata": {"name": name,
                                                                  "namespace": namespace}})
            if covered is not None:
                # The listing supersedes what the tombstones guarded against.
                for key in [k for k, at in gone.items() if at <= covered]:
                    del gone[key]
        return proven

    def resync_pods(self, listed: Iterable[Mapping[str, Any]]) -> list[str]:
        """After a relist: apply the listing and drop pods that vanished while the watch was down.

        Returns the uids of the pods that were dropped.
        """
        uids: set[str] = set()
        for obj in listed:
            # Listed even if it cannot be applied: the version we hold, if any, stays.
            uids.add(str(_metadata(obj).get("uid")))
            self._apply_or_skip("pods", obj, lambda o: self._apply_pod(None, o))
        gone = [uid for uid in self._pods if uid not in uids]
        for uid in gone:
            old = self._pods[uid]
            self._pod_deleted(old)
        return gone

    # -- volume objects (PVCs, PVs, StorageClasses, CSINodes, CSIDrivers) -----------------
    def on_volume_object(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """A watch event of a volume kind: the cache gets the parsed object, and the queue an
        event of that kind with the old and new parsed objects for the hints."""
        key = key_of(obj)
        known = self.s.volume_objects[kind]
        old = known.get(key)
        if event_type == DELETED:
            known.pop(key, None)
            self.s.inbox.put(lambda: self.s.cache.volumes.remove(kind, key))
            self._tell_queue(ClusterEvent(VOLUME_RESOURCES[kind], Action.DELETE), old, None)
            return
        parsed = PARSERS[kind](_without_managed_fields(obj))
        known[key] = parsed
        self.s.inbox.put(lambda: self.s.cache.volumes.upsert(kind, key, parsed))
        action = Action.ADD if old is None else Action.UPDATE
        self._tell_queue(ClusterEvent(VOLUME_RESOURCES[kind], action), old, parsed)

    # -- DRA objects (ResourceClaims, ResourceSlices, DeviceClasses, DeviceTaintRules) -------
    def on_dra_object(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """A watch event of a DRA kind: the DRA manager gets the parsed object at once (as
        upstream's informers write its assume cache), and the queue an event of that kind."""
        key = key_of(obj)
        dra = self.s.dra
        old = dra.get(kind, key)
        if event_type == DELETED:
            dra.remove(kind, key)
            new = None
            action = Action.DELETE
        else:
            new = DRA_PARSERS[kind](_without_managed_fields(obj))
            dra.upsert(kind, key, new)
            action = Action.ADD if old is None else Action.UPDATE
        if kind == DEVICE_TAINT_RULES:
            old = new = None
            action = Action.UPDATE
        self._tell_queue(ClusterEvent(DRA_RESOURCES[kind], action), old, new)

    def resync_dra_objects(self, kind: str, listed: Iterable[Mapping[str, Any]]) -> None:
        keys = set()
        for obj in listed:
            keys.add(key_of({"metadata": _metadata(obj)}))
            self._apply_or_skip(kind, obj, lambda o: self.on_dra_object(kind, None, o))
        for key in [k for k in self.s.dra.keys(kind) if k not in keys]:
            self.on_dra_object(kind, DELETED, {"metadata": _metadata_of_key(key)})

    def resync_volume_objects(self, kind: str, listed: Iterable[Mapping[str, Any]]) -> None:
        keys = set()
        for obj in listed:
            keys.add(key_of({"metadata": _metadata(obj)}))
            self._apply_or_skip(kind, obj, lambda o: self.on_volume_object(kind, None, o))
        for key in [k for k in self.s.volume_objects[kind] if k not in keys]:
            self.on_volume_object(kind, DELETED, {"metadata": _metadata_of_key(key)})

    # -- pod groups (Workloads, PodGroups, Coscheduling PodGroups) -------------------------
    def on_pod_group_object(
        self, kind: str, event_type: str | None, obj: Mapping[str, Any]
    ) -> None:
        """A watch event of a pod-group kind (``scheduler.cache.pod_groups.KINDS``; ``None``
        for a listed object): the store gets the parsed object, and the queue a PodGroup
        event with the old and new groups for the hints. Workloads move no pod."""
        key = key_of(obj)
        store = self.s.pod_groups
        old = store.get(kind, key)
        if event_type == DELETED:
            store.remove(kind, key)
            if kind != pod_groups.WORKLOADS:
                self._tell_queue(POD_GROUP_EVENTS[Action.DELETE], old, None)
            return
        parsed = pod_groups.PARSERS[kind](_without_managed_fields(obj))
        store.upsert(kind, key, parsed)
        if kind != pod_groups.WORKLOADS:
            action = Action.ADD if old is None else Action.UPDATE
            self._tell_queue(POD_GROUP_EVENTS[action], old, parsed)

    def resync_pod_group_objects(self, kind: str, listed: Iterable[Mapping[str, Any]]) -> None:
        """After a relist: apply the listing, and delete what it no longer has."""
        keys = set()
        for obj in listed:
            keys.add(key_of({"metadata": _metadata(obj)}))
            self._apply_or_skip(kind, obj, lambda o: self.on_pod_group_object(kind, None, o))
        for key in [k for k in self.s.pod_groups.keys(kind) if k not in keys]:
            self.on_pod_group_object(kind, DELETED, {"metadata": _metadata_of_key(key)})

    def _apply_or_skip(
        self, kind: str, obj: Mapping[str, Any], apply: Callable[[Mapping[str, Any]], object]
    ) -> None:
        """Apply one watched or listed object; one its handler fails on is reported and
        skipped, so the rest still lands (else a listing, retried, would fail forever)."""
        try:
            apply(obj)
        except Exception as exc:  # a parse failure of any kind skips only this object
            report_unparsable(self.s.metrics, kind, obj, exc)

    def resync_nodes(self, listed: Iterable[Mapping[str, Any]]) -> list[str]:
        names: set[str] = set()
        for obj in listed:
            names.add(str(_metadata(obj).get("name")))
            self._apply_or_skip("nodes", obj, lambda o: self.on_node(None, o))
        gone = [name for name in self._nodes if name not in names]
        for name in gone:
            self.on_node(DELETED, {"metadata": {"name": name}})
        return gone


_ASSIGNED_POD_LABEL_UPDATE = ClusterEvent(
    Resource.ASSIGNED_POD, Action.UPDATE_POD_LABEL, "AssignedPodUpdate"
)
_ASSIGNED_POD_SCALE_DOWN = ClusterEvent(
    Resource.ASSIGNED_POD, Action.UPDATE_POD_SCALE_DOWN, "AssignedPodUpdate"
)


def _metadata(obj: object) -> Mapping[str, Any]:
    """An object's metadata, empty when it has none worth the name (a malformed object)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _gated(info: PodInfo) -> bool:
    spec = info.raw.get("spec")
    return bool(spec.get("schedulingGates")) if isinstance(spec, Mapping) else False


def _without_managed_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object without ``metadata.managedFields``: never read here, and at 50,000 pods the
    largest part of what the cache would otherwise keep."""
    meta = obj.get("metadata")
    if not meta or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _node_event(old: NodeSummary | None, new: NodeSummary) -> ClusterEvent | None:
    """The node event of a watch update: what changed of what scheduling reads, as upstream's
    NodeSchedulingPropertiesChange (pkg/scheduler/framework/events.go) words it."""
    if old is None:
        return NODE_ADD
    action = Action(0)
    if new.labels != old.labels:
        action |= Action.UPDATE_NODE_LABEL
    if new.annotations != old.annotations:
        action |= Action.UPDATE_NODE_ANNOTATION
    if new.declared_features != old.declared_features:
        action |= Action.UPDATE_NODE_DECLARED_FEATURE
    if new.taints != old.taints or new.unschedulable != old.unschedulable:
        action |= Action.UPDATE_NODE_TAINT
    if any(new.allocatable.get(k, 0) > v for k, v in old.allocatable.items()) or (
        set(new.allocatable) - set(old.allocatable)
    ):
        action |= Action.UPDATE_NODE_ALLOCATABLE
    if not action:
        return None
    return ClusterEvent(Resource.NODE, action, "NodeUpdate")


def _metadata_of_key(key: str) -> dict[str, str]:
    """The metadata of a deleted object known only by its key ("namespace/name" or name)."""
    namespace, _, name = key.rpartition("/")
    return {"name": name, **({"namespace": namespace} if namespace else {})}
