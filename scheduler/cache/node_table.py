"""The nodes of the cluster as a struct of arrays, updated incrementally.

Every number the hot path reads (allocatable, requested, pod counts) lives in one numpy
array with a row per node, so a Filter or Score plugin handles 5,000 nodes in a few vector
operations instead of 5,000 Python calls. Rows of deleted nodes are reused; ``alive`` says
which rows hold a node. Per-node objects that are not numbers (labels, taints, ports, images,
pods) sit in parallel lists indexed by the same row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.model.arrays import BoolArray, IntArray
from scheduler.model.declared_features import DEFAULT_FEATURES, declared_features
from scheduler.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, node_allocatable
from scheduler.model.taints import Taint, parse_taints

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo

VECTOR_CACHE_SIZE = 200_000
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


class OwnerRows:
    """The node rows of one controller's placed pods, packed at the front of an array: a
    cycle reads them as a slice instead of walking a dict, and a pod comes or goes in O(1)."""

    __slots__ = ("_at", "_rows", "_uids")

    def __init__(self) -> None:
        self._rows: IntArray = np.zeros(8, dtype=np.int64)
        self._uids: list[str] = []
        self._at: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._uids)

    def put(self, uid: str, row: int) -> None:
        at = self._at.get(uid)
        if at is None:
            at = self._at[uid] = len(self._uids)
            self._uids.append(uid)
            if at == self._rows.shape[0]:
                self._rows = np.concatenate((self._rows, np.zeros_like(self._rows)))
        self._rows[at] = row

    def drop(self, uid: str) -> bool:
        at = self._at.pop(uid, None)
        if at is None:
            return False
        last = self._uids.pop()
        if last != uid:  # the last pod fills the gap
            self._uids[at] = last
            self._at[last] = at
            self._rows[at] = self._rows[len(self._uids)]
        return True

    def rows(self) -> IntArray:
        """A copy: the packing moves rows when a pod goes."""
        return self._rows[: len(self._uids)].copy()


class ResourceIndex:
    """Column of each resource in the node arrays; scalar resources get one on first use."""

    FIXED = (CPU, MEMORY, EPHEMERAL_STORAGE)

    def __init__(self) -> None:
        self.names: list[str] = list(self.FIXED)
        self.column: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        # Request vectors by the requests themselves: the dry run of a preemption sums
        # thousands of them, and the pods of one controller share one. A plain dict, emptied
        # when full: a hit must cost less than building the vector.
        self._vectors: dict[tuple[tuple[str, int], ...], IntArray] = {}

    def __len__(self) -> int:
        return len(self.names)

    def ensure(self, name: str) -> int:
        col = self.column.get(name)
        if col is None:
            col = len(self.names)
            self.names.append(name)
            self.column[name] = col
            self._vectors.clear()
        return col

    def pod_vector(self, pod: PodInfo) -> IntArray:
        """``pod``'s requests as a row (read-only: pods asking the same share it)."""
        key = tuple(pod.requests.items())
        vector = self._vectors.get(key)
        if vector is None:
            if len(self._vectors) >= VECTOR_CACHE_SIZE:
                self._vectors.clear()
            vector = self.vector(pod.requests)
            vector.flags.writeable = False
            self._vectors[key] = vector
        return vector

    def vector(self, resources: Mapping[str, int]) -> IntArray:
        """``resources`` as a row; the pod count is kept apart and ignored here."""
        out = np.zeros(len(self.names), dtype=np.int64)
        for name, value in resources.items():
            if name == PODS:
                continue
            col = self.column.get(name)
            if col is None:
                continue
            out[col] = value
        return out


def zone_key(labels: Mapping[str, str]) -> str:
    """The zone a node belongs to for round-robin node ordering (upstream's GetZoneKey)."""
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


# The change log keeps at least half this many of the latest row changes.
_CHANGE_LOG_LIMIT = 1 << 16


class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self.resources = ResourceIndex()
        r = len(self.resources)
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.alive: BoolArray = np.zeros(capacity, dtype=np.bool_)
        self.allocatable: IntArray = np.zeros((capacity, r), dtype=np.int64)
        self.allowed_pods: IntArray = np.zeros(capacity, dtype=np.int64)
        self.requested: IntArray = np.zeros((capacity, r), dtype=np.int64)
        # cpu and memory with upstream's non-zero defaults, for scoring.
        self.non_zero_requested: IntArray = np.zeros((capacity, 2), dtype=np.int64)
        self.pod_count: IntArray = np.zeros(capacity, dtype=np.int64)
        self.unschedulable: BoolArray = np.zeros(capacity, dtype=np.bool_)
        # status.declaredFeatures as a set over the feature registry (upstream's NodeInfo
        # DeclaredFeatures, TryMap'ed: names the registry does not know are dropped).
        self.declared_features: IntArray = np.zeros(capacity, dtype=np.int64)
        # The rows changed (their node, or the requests of their pods), in order (a row may
        # repeat), and how many older changes were dropped or voided: a plugin keeping
        # values for some rows learns what changed from the log's tail.
        self._changes: list[int] = []
        self._changes_dropped = 0
        self.labels: list[dict[str, str]] = []
        self.taints: list[tuple[Taint, ...]] = []
        self.used_ports: list[Counter[tuple[str, str, int]]] = []
        self.images: list[dict[str, int]] = []
        self.pods: list[dict[str, PodInfo]] = []
        # Per controller (namespace, kind, name), the rows of its pods that are not
        # terminating: the default topology spreading counts them every cycle, and reading
        # them here touches no PodInfo (50,000 of them are cache misses).
        self.owner_rows: dict[tuple[str, str, str], OwnerRows] = {}
        self.raw: list[dict[str, Any] | None] = []
        self._free: list[int] = []
        # Bumped when anything a cached node mask may depend on changes.
        self.labels_generation = 0
        self.taints_generation = 0
        self.membership_generation = 0
        self.image_nodes: Counter[str] = Counter()

    # -- capacity -------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return int(self.alive.shape[0])

    def _grow_rows(self) -> None:
        old = self.capacity
        new = max(64, old * 2)

        def grow(a: Any) -> Any:
            shape = (new, *a.shape[1:])
            out = np.zeros(shape, dtype=a.dtype)
            out[:old] = a
            return out

        self.alive = grow(self.alive)
        self.allocatable = grow(self.allocatable)
        self.allowed_pods = grow(self.allowed_pods)
        self.requested = grow(self.requested)
        self.non_zero_requested = grow(self.non_zero_requested)
        self.pod_count = grow(self.pod_count)
        self.unschedulable = grow(self.unschedulable)
        self.declared_features = grow(self.declared_features)
        self._void_changes()  # what plugins keep per row must grow too

    def ensure_resource(self, name: str) -> int:
        before = len(self.resources)
        col = self.resources.ensure(name)
        if len(self.resources) > before:
            pad = ((0, 0), (0, len(self.resources) - before))
            self.allocatable = np.pad(self.allocatable, pad)
            self.requested = np.pad(self.requested, pad)
            self._void_changes()
        return col

    def _new_row(self, name: str) -> int:
        if self._free:
            row = self._free.pop()
        else:
            row = len(self.names)
            if row >= self.capacity:
                self._grow_rows()
            self.names.append("")
            self.labels.append({})
            self.taints.append(())
            self.used_ports.append(Counter())
            self.images.append({})
            self.pods.append({})
            self.raw.append(None)
        self.names[row] = name
        self.index[name] = row
        self.alive[row] = True
        self._changed(row)
        self.membership_generation += 1
        return row

    def _changed(self, row: int) -> None:
        changes = self._changes
        changes.append(row)
        if len(changes) > _CHANGE_LOG_LIMIT:
            half = _CHANGE_LOG_LIMIT // 2
            del changes[:half]
            self._changes_dropped += half

    def _void_changes(self) -> None:
        """Every row changed: no earlier mark can be answered."""
        self._changes_dropped += len(self._changes) + 1
        self._changes.clear()

    @property
    def change_mark(self) -> int:
        return self._changes_dropped + len(self._changes)

    def rows_changed_since(self, mark: int) -> list[int] | None:
        start = mark - self._changes_dropped
        if start < 0:
            return None
        return self._changes[start:]

    # -- nodes ----------------------------------------------------------------------------
    def upsert_node(self, node: Mapping[str, Any]) -> tuple[int, bool]:
        """Add or update a node from its API object; returns (row, created)."""
        name = node["metadata"]["name"]
        row = self.index.get(name)
        created = row is None
        if row is None:
            row = self._new_row(name)
        allocatable = node_allocatable(node)
        for res in allocatable:
            if res != PODS:
                self.ensure_resource(res)
        self.allocatable[row, :] = self.resources.vector(allocatable)
        self._changed(row)
        self.allowed_pods[row] = allocatable.get(PODS, 0)
        self.unschedulable[row] = bool(node.get("spec", {}).get("unschedulable", False))
        self.declared_features[row] = DEFAULT_FEATURES.try_map(declared_features(node))
        labels = dict(node["metadata"].get("labels") or {})
        if labels != self.labels[row]:
            self.labels[row] = labels
            self.labels_generation += 1
        taints = parse_taints(node)
        if taints != self.taints[row]:
            self.taints[row] = taints
            self.taints_generation += 1
        self._set_images(row, node.get("status", {}).get("images") or [])
        self.raw[row] = dict(node)
        return row, created

    def _set_images(self, row: int, images: list[dict[str, Any]]) -> None:
        old = self.images[row]
        new: dict[str, int] = {}
        for image in images:
            size = int(image.get("sizeBytes") or 0)
            # Node images are keyed by the names the kubelet reports, as upstream does; only
            # the pod's image names are normalised before the lookup.
            for name in image.get("names") or []:
                new[name] = size
        if new == old:
            return
        self.image_nodes.subtract(old.keys())
        self.image_nodes.update(new.keys())
        self.images[row] = new

    def remove_node(self, name: str) -> list[PodInfo]:
        """Free the node's row; returns the pods that were accounted on it."""
        row = self.index.pop(name, None)
        if row is None:
            return []
        pods = list(self.pods[row].values())
        for pod in pods:
            self._uncount_owner(pod)
        self.image_nodes.subtract(self.images[row].keys())
        self.alive[row] = False
        self.allocatable[row] = 0
        self.allowed_pods[row] = 0
        self.requested[row] = 0
        self.non_zero_requested[row] = 0
        self._changed(row)
        self.pod_count[row] = 0
        self.unschedulable[row] = False
        self.declared_features[row] = 0
        self.names[row] = ""
        self.labels[row] = {}
        self.taints[row] = ()
        self.used_ports[row] = Counter()
        self.images[row] = {}
        self.pods[row] = {}
        self.raw[row] = None
        self._free.append(row)
        self.membership_generation += 1
        self.labels_generation += 1
        self.taints_generation += 1
        return pods

    # -- pods -----------------------------------------------------------------------------
    def add_pod(self, row: int, pod: PodInfo) -> None:
        column = self.resources.column
        for res in pod.requests:
            if res not in column and res != PODS:
                self.ensure_resource(res)
        self.requested[row] += self.resources.pod_vector(pod)
        self.non_zero_requested[row, 0] += pod.non_zero_cpu
        self.non_zero_requested[row, 1] += pod.non_zero_memory
        self._changed(row)
        self.pod_count[row] += 1
        for hp in pod.host_ports:
            self.used_ports[row][(hp.ip, hp.protocol, hp.port)] += 1
        self.pods[row][pod.uid] = pod
        if pod.owner_kind and pod.owner_name and pod.deletion_timestamp is None:
            key = (pod.namespace, pod.owner_kind, pod.owner_name)
            placed = self.owner_rows.get(key)
            if placed is None:
                placed = self.owner_rows[key] = OwnerRows()
            placed.put(pod.uid, row)

    def remove_pod(self, row: int, pod: PodInfo) -> None:
        if self.pods[row].pop(pod.uid, None) is None:
            return
        self._uncount_owner(pod)
        self.requested[row] -= self.resources.pod_vector(pod)
        self.non_zero_requested[row, 0] -= pod.non_zero_cpu
        self.non_zero_requested[row, 1] -= pod.non_zero_memory
        self._changed(row)
        self.pod_count[row] -= 1
        ports = self.used_ports[row]
        for hp in pod.host_ports:
            key = (hp.ip, hp.protocol, hp.port)
            ports[key] -= 1
            if ports[key] <= 0:
                del ports[key]

    def _uncount_owner(self, pod: PodInfo) -> None:
        key = (pod.namespace, pod.owner_kind, pod.owner_name)
        placed = self.owner_rows.get(key)
        if placed is not None and placed.drop(pod.uid) and not placed:
            del self.owner_rows[key]

    def owner_row_array(self, key: tuple[str, str, str]) -> IntArray:
        placed = self.owner_rows.get(key)
        return np.zeros(0, dtype=np.int64) if placed is None else placed.rows()

    def rows(self) -> IntArray:
        return np.flatnonzero(self.alive).astype(np.int64)
