"""VolumeBinding: a pod's PersistentVolumeClaims decide where it may go, and the scheduler
binds WaitForFirstConsumer claims for the node it chose (upstream
``pkg/scheduler/framework/plugins/volumebinding/``, v1.37: ``volume_binding.go``, ``binder.go``).

- **PreFilter** sorts the pod's claims: *bound* (``spec.volumeName`` and the bind-completed
  annotation), *delayed* (unbound, class WaitForFirstConsumer), *immediate* (the rest: the PV
  controller must bind them first, UnschedulableAndUnresolvable). Missing, Lost, deleting or
  foreign ephemeral claims are UnschedulableAndUnresolvable with upstream's words.
- **Filter** (per node): a bound claim's PV must exist and its node affinity fit the node;
  each delayed claim, smallest request first, gets the smallest Available PV of its class
  that fits (capacity, access modes, volume mode, selector, node affinity; a PV pre-bound to
  the claim is taken or nothing), or must be provisionable on the node (a real provisioner,
  ``allowedTopologies``). A claim already given a selected-node fits that node only. All
  rejections are UnschedulableAndUnresolvable.
- **Score** (StorageCapacityScoring, on in v1.37): per class, utilisation of the chosen static
  PVs, through ``shape`` (default: 100 - utilisation, free space preferred).
- **Reserve** assumes the PVs' claimRefs and the claims' selected-node in an overlay that
  later cycles read (so two pods never pick one PV); **Unreserve** drops it.
- **PreBind** writes them (PUT, resourceVersion as precondition), then waits for the PV
  controller to bind every claim, polling each second, up to ``bindTimeoutSeconds``.

- Provisioning on a node needs, for a CSI driver that publishes CSIStorageCapacity objects,
  one of them for the claim's class, reaching the node, with room for the request.

Not done, unlike upstream: in-tree to CSI translation of PV node affinity, the
``nominatedNodeName`` written before PreBind (NominatedNodeNameForExpectation), and the
``SignPod`` batching extension.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

from scheduler.plugin_api import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    SKIP,
    SUCCESS,
    Action,
    ClaimInfo,
    ClusterEvent,
    ClusterEventWithHint,
    ClusterSnapshot,
    Code,
    CycleState,
    FilterResult,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    StorageCapacityInfo,
    VolumeInfo,
)
from scheduler.plugins.helper.shape_score import (
    SHAPE_TYPE_ERROR,
    BrokenLinear,
    ShapePoint,
    build_shape,
    shape_errors,
)
from scheduler.plugins.helper.volume_hints import after_claim_named

T = TypeVar("T", VolumeInfo, ClaimInfo)
NAME = "VolumeBinding"
STATE_KEY = f"PreFilter{NAME}"
ERR_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
POLL_SECONDS = 1.0
MAX_UTILIZATION = 100
_BAD_TIMEOUT = ("Invalid value: {value!r}: invalid BindTimeoutSeconds, "
                "should not be a negative value")


@dataclass(frozen=True)
class VolumeBindingArgs:
    """VolumeBindingArgs with upstream's v1 defaults; ValidateVolumeBindingArgs
    (StorageCapacityScoring on) through field_errors."""

    unknown_field_reason: ClassVar[str] = "Invalid value: unknown field"

    bind_timeout_seconds: int = field(default=600, metadata={"type_error": _BAD_TIMEOUT})
    shape: list[ShapePoint] = field(
        default_factory=lambda: [ShapePoint(0, 10), ShapePoint(100, 0)],
        metadata={"type_error": SHAPE_TYPE_ERROR})

    def field_errors(self, path: str) -> Iterator[str]:
        if self.bind_timeout_seconds < 0:
            reason = _BAD_TIMEOUT.format(value=self.bind_timeout_seconds)
            yield f"{path}.bindTimeoutSeconds: {reason}"
        yield from shape_errors(self.shape, f"{path}.shape")


def claim_names_volume(volume: VolumeInfo, claim: ClaimInfo) -> bool:
    """The PV's claimRef names this claim (and its uid, when the claimRef has one)."""
    return (volume.claim_namespace == claim.namespace and volume.claim_name == claim.name
            and (not volume.claim_uid or volume.claim_uid == claim.uid))


def find_matching_volume(
    claim: ClaimInfo, volumes: Iterable[VolumeInfo], labels: Mapping[str, str],
    chosen: Mapping[str, VolumeInfo],
) -> VolumeInfo | None:
    """upstream's FindMatchingVolume (scheduler path, delayed binding): the smallest fitting
    Available PV, or the PV pre-bound to the claim if its node affinity fits."""
    best: VolumeInfo | None = None
    for volume in volumes:
        if volume.name in chosen:
            continue
        if volume.has_claim_ref and not claim_names_volume(volume, claim):
            continue
        if (volume.capacity < claim.request or volume.volume_mode != claim.volume_mode
                or volume.attributes_class != claim.attributes_class or volume.deleting):
            continue
        if volume.has_claim_ref:
            return volume if volume.affinity_matches(labels) else None
        if volume.phase != "Available":
            continue
        if claim.selector is not None and not claim.selector.matches(volume.labels):
            continue
        if volume.storage_class != claim.storage_class or not volume.affinity_matches(labels):
            continue
        if not all(mode in volume.access_modes for mode in claim.access_modes):
            continue
        if best is None or volume.capacity < best.capacity:
            best = volume
    return best


@dataclass
class _NodeVolumes:
    """What Filter found for one node: PVs to bind to claims, and claims to provision."""

    static: list[tuple[VolumeInfo, ClaimInfo]] = field(default_factory=list)
    # Claims to provision, each with the CSIStorageCapacity that showed room (if checked).
    provisions: list[tuple[ClaimInfo, StorageCapacityInfo | None]] = field(
        default_factory=list)


@dataclass
class _State:
    bound: list[ClaimInfo]
    delayed: list[ClaimInfo]
    by_node: dict[str, _NodeVolumes] = field(default_factory=dict)
    all_bound: bool = False
    assumed_volumes: list[VolumeInfo] = field(default_factory=list)
    assumed_claims: list[ClaimInfo] = field(default_factory=list)
    node_labels: Mapping[str, str] = field(default_factory=dict)


class VolumeBinding:
    name = NAME
    filter_reads_pod_lists = False

    def __init__(self, args: VolumeBindingArgs, handle: Handle) -> None:
        self.handle = handle
        self.bind_timeout = float(args.bind_timeout_seconds)
        self.shape: BrokenLinear = build_shape(args.shape)
        # The assume overlay (upstream's assume cache): name/key -> (the informer version it
        # was made from, the assumed object). Reads return the assumed object while the
        # informer object keeps that version.
        self._lock = threading.Lock()
        self._volumes: dict[str, tuple[str, VolumeInfo]] = {}
        self._claims: dict[str, tuple[str, ClaimInfo]] = {}

    # -- the overlay ----------------------------------------------------------------------
    def _volume(self, snapshot: ClusterSnapshot, name: str) -> VolumeInfo | None:
        return self._overlaid(self._volumes, name, snapshot.volume(name))

    def _claim(self, snapshot: ClusterSnapshot, namespace: str, name: str) -> ClaimInfo | None:
        return self._overlaid(self._claims, f"{namespace}/{name}", snapshot.claim(namespace, name))

    def _overlaid(self, overlay: dict[str, tuple[str, T]], key: str, informer: T | None
                  ) -> T | None:
        with self._lock:
            assumed = overlay.get(key)
            if assumed is None:
                return informer
            if informer is not None and assumed[0] == informer.resource_version:
                return assumed[1]
            del overlay[key]  # the informer moved on: the assumption is void
            return informer

    def _volumes_of_class(
        self, snapshot: ClusterSnapshot, storage_class: str
    ) -> list[VolumeInfo]:
        volumes = snapshot.volumes_of_class(storage_class)
        return sorted((self._volume(snapshot, v.name) or v for v in volumes),
                      key=lambda v: v.name)

    # -- PreFilter ------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.claims:
            state.write(STATE_KEY, _State([], [], all_bound=True))
            return None, SKIP
        bound: list[ClaimInfo] = []
        delayed: list[ClaimInfo] = []
        immediate = False
        for name, ephemeral in pod.claims:
            claim = self._claim(snapshot, pod.namespace, name)
            problem = _claim_problem(pod, name, ephemeral, claim)
            if problem is not None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,))
            assert claim is not None
            if claim.fully_bound:
                bound.append(claim)
                continue
            storage_class = snapshot.storage_class(claim.storage_class)
            if (not claim.volume_name and storage_class is not None
                    and storage_class.wait_for_first_consumer):
                delayed.append(claim)
            else:
                immediate = True
        if immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNBOUND_IMMEDIATE,))
        state.write(STATE_KEY, _State(bound, delayed))
        return None, SUCCESS

    # -- Filter ---------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        st: _State = state.read(STATE_KEY)
        snapshot = nodes.snapshot
        table = snapshot.nodes
        n = len(nodes)
        failed = {reason: np.zeros(n, dtype=np.bool_) for reason in (
            ERR_NODE_CONFLICT, ERR_BIND_CONFLICT, ERR_NOT_ENOUGH_SPACE, ERR_PV_NOT_EXIST)}
        for pos, row in enumerate(nodes.idx.tolist()):
            name = table.names[row]
            found, reasons = self._find(snapshot, st, name, table.labels[row])
            for reason in reasons:
                failed[reason][pos] = True
            if not reasons:
                st.by_node[name] = found
        result = FilterResult.all_pass(n)
        for reason, mask in failed.items():
            result.add_reason(mask, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
        return result

    def _find(
        self, snapshot: ClusterSnapshot, st: _State, node: str, labels: Mapping[str, str]
    ) -> tuple[_NodeVolumes, list[str]]:
        """upstream's FindPodVolumes for one node: what to bind, or the reasons it cannot."""
        found = _NodeVolumes()
        reasons: list[str] = []
        for claim in st.bound:
            volume = self._volume(snapshot, claim.volume_name)
            if volume is None:
                reasons.append(ERR_PV_NOT_EXIST)
                break
            if not volume.affinity_matches(labels):
                reasons.append(ERR_NODE_CONFLICT)
                break
        if not st.delayed:
            return found, _ordered(reasons)
        to_match: list[ClaimInfo] = []
        to_provision: list[ClaimInfo] = []
        for claim in st.delayed:
            selected = claim.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
            elif selected != node:
                return found, _ordered([*reasons, ERR_BIND_CONFLICT])
            else:
                to_provision.append(claim)
        chosen: dict[str, VolumeInfo] = {}
        for claim in sorted(to_match, key=lambda c: c.request):
            volumes = self._volumes_of_class(snapshot, claim.storage_class)
            volume = find_matching_volume(claim, volumes, labels, chosen)
            if volume is None:
                to_provision.append(claim)
                continue
            chosen[volume.name] = volume
            found.static.append((volume, claim))
        for claim in to_provision:
            storage_class = snapshot.storage_class(claim.storage_class)
            provisioner = storage_class.provisioner if storage_class is not None else ""
            if not provisioner or provisioner == NO_PROVISIONER or (
                    storage_class is not None and storage_class.allowed_topologies is not None
                    and not storage_class.allowed_topologies.matches(labels, "")):
                return found, _ordered([*reasons, ERR_BIND_CONFLICT])
            enough, capacity = has_enough_capacity(snapshot, provisioner, claim, labels)
            if not enough:
                return found, _ordered([*reasons, ERR_NOT_ENOUGH_SPACE])
            found.provisions.append((claim, capacity))
        return found, _ordered(reasons)

    # -- Score ----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status:
        st: _State | None = state.get(STATE_KEY)
        return SKIP if st is None or not st.delayed else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        st: _State = state.read(STATE_KEY)
        names = nodes.snapshot.nodes.names
        return np.fromiter((self._node_score(st.by_node.get(names[int(row)]))
                            for row in nodes.idx), dtype=np.int64, count=len(nodes))

    def _node_score(self, found: _NodeVolumes | None) -> int:
        """Static bindings by class (requests over the chosen PVs' capacity), or else the
        provisions whose capacity was checked (requests over that capacity)."""
        if found is None:
            return 0
        per_class: dict[str, list[int]] = {}
        if found.static:
            for volume, claim in found.static:
                sums = per_class.setdefault(volume.storage_class, [0, 0])
                sums[0] += claim.request
                sums[1] += volume.capacity
        else:
            for claim, checked in found.provisions:
                if checked is None:
                    continue
                sums = per_class.setdefault(claim.storage_class, [0, 0])
                sums[0] += claim.request
                # Assigned, not summed: two claims share the one capacity of the node.
                sums[1] = checked.capacity or 0
        if not per_class:
            return 0
        scores = []
        for requested, capacity in per_class.values():
            util = (MAX_UTILIZATION if capacity == 0 or requested > capacity
                    else requested * MAX_UTILIZATION // capacity)
            scores.append(int(self.shape(np.asarray([util], dtype=np.int64))[0]))
        # The mean, rounded half away from zero (Go's math.Round), in integers.
        total, count = sum(scores), len(scores)
        return (2 * total + count) // (2 * count)

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores

    # -- Reserve / Unreserve --------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State = state.read(STATE_KEY)
        found = st.by_node.get(node)
        snapshot = self.handle.snapshot
        if found is None or not (found.static or found.provisions):
            st.all_bound = True
            return SUCCESS
        row = snapshot.row_of(node)
        st.node_labels = dict(snapshot.nodes.labels[row]) if row is not None else {}
        with self._lock:
            for volume, claim in found.static:
                bound = bind_volume_to_claim(volume, claim)
                if bound is not volume:
                    self._volumes[volume.name] = (volume.resource_version, bound)
                    st.assumed_volumes.append(bound)
            for claim, _ in found.provisions:
                raw = copy.deepcopy(claim.raw)
                raw.setdefault("metadata", {}).setdefault("annotations", {})[
                    ANN_SELECTED_NODE] = node
                selected = ClaimInfo.parse(raw)
                self._claims[claim.key] = (claim.resource_version, selected)
                st.assumed_claims.append(selected)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return
        with self._lock:
            for volume in st.assumed_volumes:
                self._volumes.pop(volume.name, None)
            for claim in st.assumed_claims:
                self._claims.pop(claim.key, None)

    # -- PreBind --------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Skip when every claim is bound; Success when PreBind will write and wait."""
        st: _State = state.read(STATE_KEY)
        if st.all_bound:
            return SKIP
        if node not in st.by_node:
            return Status.error(f'no pod volume found for node "{node}"')
        return SUCCESS

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        pre_flight = self.pre_bind_pre_flight(state, pod, node)
        if not pre_flight.is_success():
            return SUCCESS if pre_flight.is_skip() else pre_flight
        st: _State = state.read(STATE_KEY)
        written: dict[str, int] = {}
        writes = [(f"/api/v1/persistentvolumes/{v.name}", v.name, v.raw)
                  for v in st.assumed_volumes]
        writes += [(f"/api/v1/namespaces/{c.namespace}/persistentvolumeclaims/{c.name}", c.key,
                    c.raw) for c in st.assumed_claims]
        for path, key, obj in writes:
            result = self.handle.writer.replace(path, obj)
            if not result.ok:
                self.unreserve(state, pod, node)
                return Status.error(result.message)
            written[key] = _version(result.resource_version)
        handle = self.handle
        deadline = handle.now() + self.bind_timeout
        while True:
            handle.sleep(POLL_SECONDS)
            done, problem = self._bound(st, pod, node, written)
            if problem is not None:
                return Status.error(f"binding volumes: {problem}")
            if done:
                return SUCCESS
            if handle.now() >= deadline:
                return Status.error("binding volumes: context deadline exceeded")

    def _bound(
        self, st: _State, pod: PodInfo, node: str, written: Mapping[str, int]
    ) -> tuple[bool, str | None]:
        """upstream's checkBindings, on the watch's newest objects: (all bound, error)."""
        handle = self.handle
        if handle.get_pod(pod.uid) is None:
            return False, f'pod does not exist any more: pod "{pod.name}" not found'
        for assumed in st.assumed_volumes:
            volume = handle.get_volume(assumed.name)
            if volume is None or _version(volume.resource_version) < written[assumed.name]:
                return False, None
            if not volume.affinity_matches(st.node_labels):
                return False, f'pv "{volume.name}" node affinity doesn\'t match node "{node}"'
            if not volume.claim_name or not volume.claim_uid:
                return False, f'ClaimRef got reset for pv "{volume.name}"'
            claim = handle.get_claim(volume.claim_namespace, volume.claim_name)
            if claim is None or not claim.fully_bound:
                return False, None
        for assumed_claim in st.assumed_claims:
            claim = handle.get_claim(assumed_claim.namespace, assumed_claim.name)
            if claim is None or _version(claim.resource_version) < written[assumed_claim.key]:
                return False, None
            if not claim.annotations:
                return False, f'selectedNode annotation reset for PVC "{claim.name}"'
            if claim.annotations.get(ANN_SELECTED_NODE) != node:
                return False, f'provisioning failed for PVC "{claim.name}"'
            if claim.volume_name:
                volume = handle.get_volume(claim.volume_name)
                if volume is None:
                    return False, None
                if not volume.affinity_matches(st.node_labels):
                    return False, (f'pv "{volume.name}" node affinity doesn\'t match node '
                                   f'"{node}"')
            if not claim.fully_bound:
                return False, None
        return True, None

    # -- requeueing -----------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, Action.ADD | Action.UPDATE),
                                 _after_class_change),
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD | Action.UPDATE),
                                 after_claim_named),
            ClusterEventWithHint(ClusterEvent(Resource.PV, Action.ADD | Action.UPDATE)),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD | Action.UPDATE)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, Action.ADD | Action.UPDATE),
                _after_capacity_change),
        ]


def bind_volume_to_claim(volume: VolumeInfo, claim: ClaimInfo) -> VolumeInfo:
    """upstream's GetBindVolumeToClaim: the PV with a claimRef to the claim, marked bound by
    the controller unless it already named the claim; the same PV when nothing changes."""
    raw = copy.deepcopy(volume.raw)
    spec = raw.setdefault("spec", {})
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim.namespace,
           "name": claim.name, "uid": claim.uid, "resourceVersion": claim.resource_version}
    changed = False
    if not claim_names_volume(volume, claim) or spec.get("claimRef") != ref:
        spec["claimRef"] = ref
        changed = True
    if not claim_names_volume(volume, claim):
        annotations = raw.setdefault("metadata", {}).setdefault("annotations", {})
        if annotations.get(ANN_BOUND_BY_CONTROLLER) != "yes":
            annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
            changed = True
    return VolumeInfo.parse(raw) if changed else volume


def has_enough_capacity(
    snapshot: ClusterSnapshot, provisioner: str, claim: ClaimInfo, labels: Mapping[str, str]
) -> tuple[bool, StorageCapacityInfo | None]:
    """upstream's hasEnoughCapacity: checked only for a CSI driver that publishes capacity
    (``storageCapacity: true``) and a claim with a storage request; then some
    CSIStorageCapacity of the class that reaches the node must take the request."""
    if not claim.has_request:
        return True, None
    driver = snapshot.csi_driver(provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    for capacity in sorted(snapshot.storage_capacities(), key=lambda c: c.key):
        limit = capacity.limit
        if (capacity.storage_class == claim.storage_class and limit is not None
                and limit >= claim.request and capacity.reaches(labels)):
            return True, capacity
    return False, None


def _claim_problem(
    pod: PodInfo, name: str, ephemeral: bool, claim: ClaimInfo | None
) -> str | None:
    if claim is None:
        if ephemeral:
            return ("waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"')
        return f'persistentvolumeclaim "{name}" not found'
    if ephemeral and claim.owner_uid != pod.uid:
        return (f"PVC {pod.namespace}/{name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)")
    if claim.phase == "Lost":
        return (f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                f'"{claim.volume_name}"')
    if claim.deleting:
        return f'persistentvolumeclaim "{name}" is being deleted'
    return None


_REASON_ORDER = (ERR_NODE_CONFLICT, ERR_BIND_CONFLICT, ERR_NOT_ENOUGH_SPACE, ERR_PV_NOT_EXIST)


def _ordered(reasons: Iterable[str]) -> list[str]:
    found = set(reasons)
    return [r for r in _REASON_ORDER if r in found]


def _version(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0


def _after_class_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    changed = new is not None and new.allowed_topologies != old.allowed_topologies
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def _after_capacity_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """An added capacity, or one whose limit grew or appeared."""
    if old is None:
        return QueueingHint.QUEUE
    before, after = old.limit, new.limit if new is not None else None
    grew = after is not None and (before is None or after > before)
    return QueueingHint.QUEUE if grew else QueueingHint.SKIP


SPEC = PluginSpec(name=NAME, factory=VolumeBinding, args=VolumeBindingArgs)
