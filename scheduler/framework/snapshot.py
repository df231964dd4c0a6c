"""What plugins may read of the cluster: a snapshot protocol, as upstream plugins read
``fwk.SharedLister`` and never the scheduler's cache.

The cache implements these protocols (``scheduler.cache.snapshot.Snapshot``); plugins, the
framework and the cycle name only them. Everything here is read-only for plugins: a
snapshot is the state one scheduling cycle decides on, and only the cache changes it.

The node table is a struct of arrays: node ``row`` is an index into every per-row array and
list below. Rows of deleted nodes are recycled (``alive`` tells which rows are nodes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from scheduler.model.arrays import BoolArray, IntArray
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.pod import AffinityTerm, PodInfo
from scheduler.model.selectors import LabelSelector
from scheduler.model.taints import Taint
from scheduler.model.volumes import (
    ClaimInfo,
    CSIDriverInfo,
    CSINodeInfo,
    StorageCapacityInfo,
    StorageClassInfo,
    VolumeInfo,
)


class ResourceColumns(Protocol):
    """The column of each resource in the node table's resource matrices."""

    @property
    def names(self) -> Sequence[str]: ...

    @property
    def column(self) -> Mapping[str, int]: ...

    def pod_vector(self, pod: PodInfo) -> IntArray:
        """The pod's requests as a row of the resource matrices (read-only)."""
        ...

    def vector(self, resources: Mapping[str, int]) -> IntArray: ...


class NodeTableView(Protocol):
    """Per-row node data. Arrays have one row per slot (``capacity``)."""

    @property
    def resources(self) -> ResourceColumns: ...

    @property
    def names(self) -> Sequence[str]: ...

    @property
    def index(self) -> Mapping[str, int]: ...

    @property
    def capacity(self) -> int: ...

    @property
    def alive(self) -> BoolArray: ...

    @property
    def allocatable(self) -> IntArray: ...

    @property
    def allowed_pods(self) -> IntArray: ...

    @property
    def requested(self) -> IntArray: ...

    @property
    def non_zero_requested(self) -> IntArray:
        """cpu and memory with upstream's non-zero defaults, for scoring."""
        ...

    @property
    def pod_count(self) -> IntArray: ...

    @property
    def unschedulable(self) -> BoolArray: ...

    @property
    def declared_features(self) -> IntArray:
        """Per row, the node's ``status.declaredFeatures`` known to the feature registry,
        as a bitmask (API 2.2)."""
        ...

    @property
    def change_mark(self) -> int:
        """Where the table's log of row changes ends now, for ``rows_changed_since``."""
        ...

    def rows_changed_since(self, mark: int) -> Sequence[int] | None:
        """The rows that changed (their node, or the requests of their pods: upstream's
        NodeInfo generation) since ``change_mark`` read ``mark``, oldest first (a row may
        repeat); None when the log no longer reaches back that far or every row changed:
        take every row as changed. A mark read from another table means nothing here.

        The one change signal plugins have: what a plugin computed from some rows may be
        kept until the log names one of them (``scheduler.plugins.helper.row_memo``)."""
        ...

    @property
    def labels(self) -> Sequence[Mapping[str, str]]: ...

    @property
    def taints(self) -> Sequence[tuple[Taint, ...]]: ...

    @property
    def used_ports(self) -> Sequence[Counter[tuple[str, str, int]]]: ...

    @property
    def images(self) -> Sequence[Mapping[str, int]]: ...

    @property
    def image_nodes(self) -> Mapping[str, int]: ...

    @property
    def pods(self) -> Sequence[Mapping[str, PodInfo]]: ...

    @property
    def raw(self) -> Sequence[Mapping[str, Any] | None]:
        """The Node objects as the watch delivered them (what extenders are sent)."""
        ...


class ClusterSnapshot(Protocol):
    """The cluster as one cycle sees it: nodes, pods, namespaces and disruption budgets."""

    @property
    def source(self) -> object:
        """The cache this is a snapshot of: a plugin's memo of pods starts over when it
        changes (a new cache, as in tests), and is updated incrementally otherwise."""
        ...

    @property
    def nodes(self) -> NodeTableView: ...

    @property
    def resources(self) -> ResourceColumns: ...

    @property
    def num_nodes(self) -> int: ...

    def order(self) -> IntArray:
        """Alive node rows, zones interleaved round-robin as upstream's node tree lists them."""
        ...

    def row_of(self, node_name: str) -> int | None: ...

    def domains(self, key: str) -> tuple[IntArray, list[str]]:
        """Per node row, an id for the node's value of label ``key`` (-1: no such label),
        and the values by id."""
        ...

    def node_mask(self, key: Hashable, compute: Callable[[], BoolArray]) -> BoolArray:
        """A boolean per node row that depends only on node labels, taints and the node set,
        computed by ``compute`` once per change of those (every time for an unhashable key)."""
        ...

    def pods_on(self, row: int) -> Iterable[PodInfo]: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str]: ...

    def namespaces_of(self, term: AffinityTerm) -> set[str]:
        """The namespaces an affinity term selects: its list plus its namespace selector."""
        ...

    def matching_pods(self, namespaces: Iterable[str], selector: LabelSelector) -> list[PodInfo]:
        """Pods placed on a node (or assumed) in ``namespaces`` whose labels match."""
        ...

    def pods_with_required_anti_affinity(self) -> Iterable[PodInfo]: ...

    def pods_with_affinity_terms(self) -> Iterable[PodInfo]: ...

    def pods_of_owner(self, namespace: str, kind: str, name: str) -> Mapping[str, PodInfo]:
        """Placed pods of one controller (default topology spreading's siblings), by uid."""
        ...

    def owner_rows(self, namespace: str, kind: str, name: str) -> IntArray:
        """Node rows of one controller's placed pods that are not terminating, one per pod
        (on nodes the table holds)."""
        ...

    def get_pod(self, uid: str) -> PodInfo | None: ...

    def pdbs(self) -> Iterable[DisruptionBudget]: ...

    # Volume objects, as the watches last delivered them (upstream's listers).
    def claim(self, namespace: str, name: str) -> ClaimInfo | None: ...

    def volume(self, name: str) -> VolumeInfo | None: ...

    def volumes_of_class(self, storage_class: str) -> Iterable[VolumeInfo]: ...

    def storage_class(self, name: str) -> StorageClassInfo | None: ...

    def csi_node(self, name: str) -> CSINodeInfo | None: ...

    def csi_driver(self, name: str) -> CSIDriverInfo | None: ...

    def storage_capacities(self) -> Iterable[StorageCapacityInfo]: ...

    def claim_users(self, namespace: str, name: str) -> int:
        """How many pods on nodes (bound or assumed) name this claim in their volumes."""
        ...
