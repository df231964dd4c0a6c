"""The framework's contract: status codes, cycle state and the extension points.

Upstream kube-scheduler runs each Filter and Score plugin once per node. Here every Filter
and Score plugin runs once per *batch of nodes* (a :class:`NodeView`) and answers with arrays,
because a Python call per node and plugin is about ten times too slow for the throughput we
promise at 5,000 nodes. The semantics per node are unchanged: a node's status is the status
of the first plugin that rejected it, and its score is the weighted sum of normalised plugin
scores.

Hypothetical pods (nominated pods counted on their node, preemption victims removed) travel
with the view instead of being applied to a cloned CycleState as upstream's AddPod/RemovePod
extensions do: a row of the view may carry pods added to or removed from that node, and a
plugin whose answer depends on the pods of a node takes them into account. This keeps one
shared PreFilter state per cycle while still letting PostFilter ask "would the pod fit on
node X without these pods?".
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

# Plugins take the array types from here, with the rest of the framework's vocabulary.
from scheduler.model.arrays import BoolArray as BoolArray
from scheduler.model.arrays import CodeArray as CodeArray
from scheduler.model.arrays import IntArray as IntArray

if TYPE_CHECKING:
    from scheduler.framework.events import ClusterEventWithHint
    from scheduler.framework.snapshot import ClusterSnapshot
    from scheduler.model.pod import PodInfo

MAX_NODE_SCORE = 100


class Code(enum.IntEnum):
    """kube-scheduler's status codes, in upstream order (the values are ours)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


# Python 3.11's EnumType has a __getattr__, which sends every read of a member from the class
# (``Code.SUCCESS``) through a slow attribute hook, four times a global's cost; a cycle tests
# some sixty statuses, so the hot paths read module names bound once.
_SUCCESS_CODE = Code.SUCCESS
_SKIP_CODE = Code.SKIP


@dataclass(frozen=True)
class Status:
    """Outcome of one plugin call. ``None`` is never used for success: use :data:`SUCCESS`."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code is _SUCCESS_CODE

    def is_skip(self) -> bool:
        return self.code is _SKIP_CODE

    def is_rejected(self) -> bool:
        return self.code in (
            Code.UNSCHEDULABLE,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            Code.PENDING,
        )

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)

    @staticmethod
    def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
        code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, tuple(reasons))

    @staticmethod
    def error(message: str) -> Status:
        return Status(Code.ERROR, (message,))


SUCCESS = Status()
SKIP = Status(Code.SKIP)


class CycleState:
    """Per-cycle scratch space shared by the plugins of one profile.

    Plugins store what PreFilter/PreScore computed under their own key and read it back in
    Filter/Score. ``skip_filter``/``skip_score``/``skip_pre_bind`` record which plugins asked
    to be skipped.
    """

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        # PreBind plugins whose PreBindPreFlight said Skip: PreBind does not run them.
        self.skip_pre_bind: set[str] = set()
        # Set in the cycles sampled for per-plugin duration metrics (upstream: 10 %).
        self.record_plugin_metrics = False

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)


class NodeView:
    """A batch of node rows from a snapshot, possibly with hypothetical pod changes.

    ``idx`` are row indices into the snapshot's node table. ``requested`` and ``pod_count``
    already include the hypothetical changes; ``added``/``removed`` list, per row, the pods
    hypothetically added to or removed from that node (``None`` when no row has any, which is
    the fast path of an ordinary cycle).
    """

    __slots__ = ("_pod_count", "_requested", "added", "as_in_table", "idx", "removed",
                 "snapshot")

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        idx: IntArray,
        requested: IntArray | None,
        pod_count: IntArray | None,
        added: list[list[PodInfo]] | None = None,
        removed: list[list[PodInfo]] | None = None,
        as_in_table: bool = False,
    ) -> None:
        if (requested is None or pod_count is None) and not as_in_table:
            raise ValueError("only a view of the table's rows may read them from the table")
        self.snapshot = snapshot
        self.idx = idx
        # None: the table's, gathered on first use (most plugins read kept values instead).
        self._requested = requested
        self._pod_count = pod_count
        self.added = added
        self.removed = removed
        # The rows exactly as the snapshot has them (NodeView.of): what a plugin computed
        # from the table's rows, kept until the table's change log says the row changed,
        # holds for this view.
        self.as_in_table = as_in_table

    @classmethod
    def of(cls, snapshot: ClusterSnapshot, rows: IntArray) -> NodeView:
        """These node rows as the snapshot has them, no hypothetical pods."""
        return cls(snapshot, rows, None, None, as_in_table=True)

    @property
    def requested(self) -> IntArray:
        if self._requested is None:
            # np.take: a 2-D row gather five times faster than fancy indexing.
            self._requested = np.take(self.snapshot.nodes.requested, self.idx, axis=0)
        return self._requested

    @property
    def pod_count(self) -> IntArray:
        if self._pod_count is None:
            self._pod_count = self.snapshot.nodes.pod_count.take(self.idx)
        return self._pod_count

    def __len__(self) -> int:
        return int(self.idx.shape[0])

    @property
    def has_deltas(self) -> bool:
        return self.added is not None or self.removed is not None

    def delta_rows(self) -> Iterator[tuple[int, int, Sequence[PodInfo], Sequence[PodInfo]]]:
        """(position, node row, added, removed) for the rows carrying hypothetical pods."""
        if not self.has_deltas:
            return
        for pos in range(len(self)):
            added = self.added[pos] if self.added is not None else ()
            removed = self.removed[pos] if self.removed is not None else ()
            if added or removed:
                yield pos, int(self.idx[pos]), added, removed

    def subset(self, rows: IntArray) -> NodeView:
        """The rows ``rows`` (positions in this view) as a new view."""
        return NodeView(
            snapshot=self.snapshot,
            idx=self.idx.take(rows),
            requested=None if self._requested is None
            else np.take(self._requested, rows, axis=0),
            pod_count=None if self._pod_count is None else self._pod_count.take(rows),
            added=None if self.added is None else [self.added[int(r)] for r in rows],
            removed=None if self.removed is None else [self.removed[int(r)] for r in rows],
            as_in_table=self.as_in_table,
        )

    def with_added(self, added: Sequence[Sequence[PodInfo]]) -> NodeView:
        """This view with ``added[i]`` hypothetically placed on row ``i``.

        (Preemption builds its views with victims removed directly, from vectors it keeps.)
        """
        resources = self.snapshot.resources
        n = len(self)
        lists = [list(a) for a in self.added] if self.added else [[] for _ in range(n)]
        rows: list[int] = []
        vectors: list[IntArray] = []
        for i, pods in enumerate(added):
            if pods:
                lists[i].extend(pods)
                rows.extend([i] * len(pods))
                vectors.extend(resources.pod_vector(p) for p in pods)
        requested = self.requested.copy()
        pod_count = self.pod_count.copy()
        if rows:
            index = np.asarray(rows, dtype=np.int64)
            np.add.at(requested, index, np.stack(vectors))
            np.add.at(pod_count, index, 1)
        return NodeView(self.snapshot, self.idx, requested, pod_count, lists, self.removed)

    def names(self) -> list[str]:
        names = self.snapshot.nodes.names
        return [names[int(i)] for i in self.idx]


@dataclass
class FilterResult:
    """Per-row answer of a Filter plugin over a :class:`NodeView`.

    ``codes[i]`` is the :class:`Code` for row ``i`` (``SUCCESS`` = passes). ``reasons`` lists
    ``(mask, reason)`` pairs: every row whose mask is true carries that reason; a rejected row
    must carry at least one reason. Rows appear in reasons in upstream's reason order.
    """

    codes: CodeArray
    reasons: list[tuple[BoolArray, str]] = field(default_factory=list)

    @staticmethod
    def all_pass(n: int) -> FilterResult:
        return FilterResult(np.zeros(n, dtype=np.uint8))

    def reject(self, mask: BoolArray, code: Code, reason: str) -> None:
        """Reject the rows in ``mask`` that no earlier call of this plugin rejected."""
        # The usual answer, at a third of the cost (count_nonzero: a fifth of .any()'s).
        if not np.count_nonzero(mask):
            return
        fresh = mask & (self.codes == Code.SUCCESS)
        self.codes[fresh] = np.uint8(code)
        if np.count_nonzero(fresh):
            self.reasons.append((fresh, reason))

    def add_reason(self, mask: BoolArray, code: Code, reason: str) -> None:
        """Reject ``mask`` and keep every reason (NodeResourcesFit lists all shortages).

        A row already rejected keeps the stronger (unresolvable) code.
        """
        if not np.count_nonzero(mask):
            return
        self.codes[mask] = np.maximum(self.codes[mask], np.uint8(code))
        self.reasons.append((mask.copy(), reason))


@runtime_checkable
class Plugin(Protocol):
    name: str


class PreEnqueuePlugin(Plugin, Protocol):
    """Decides whether a pod may enter activeQ or backoffQ at all; a rejected pod waits,
    gated, in the unschedulable pool until an event its plugin registered (upstream's
    PreEnqueue). Runs under the queue's lock: a cheap function of the pod."""

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


class QueueSortPlugin(Plugin, Protocol):
    """Orders the activeQ (upstream's QueueSort). It may also offer ``sort_key(pod)``, a
    value compared with ``<`` that orders pods exactly as ``less`` does (API 1.3): the queue
    then compares keys computed once per pod instead of calling ``less`` a dozen times a pop."""

    def less(self, a: QueuedPodLike, b: QueuedPodLike) -> bool: ...


class QueuedPodLike(Protocol):
    @property
    def priority(self) -> int: ...

    @property
    def timestamp(self) -> float: ...


@dataclass
class PreFilterResult:
    """Restricts the cycle to ``node_names`` when not ``None`` (upstream's PreFilterResult)."""

    node_names: frozenset[str] | None = None
    # Filled by the framework: the plugins whose results restricted the node set.
    plugins: tuple[str, ...] = ()


class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]: ...


class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult: ...


class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]: ...


@dataclass
class PostFilterResult:
    """``nominated_node_name`` is ``""`` to clear a nomination, ``None`` to leave it."""

    nominated_node_name: str | None = None


class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status: ...


class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray: ...

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """Return scores in [0, MAX_NODE_SCORE]; identity for plugins that need none."""
        ...


class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Must be idempotent: it may run after a partial or failed Reserve."""
        ...


@dataclass(frozen=True)
class PermitDecision:
    status: Status
    timeout_seconds: float = 0.0


class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision: ...


class PreBindPlugin(Plugin, Protocol):
    """May also offer ``pre_bind_pre_flight(state, pod, node) -> Status`` (upstream's
    PreBindPreFlight): Success when its PreBind has work for this pod, Skip when it has none
    (its PreBind then does not run), Error to fail the binding. Without it, PreBind always
    runs."""

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """SUCCESS once bound; SKIP to let the next Bind plugin try; ERROR to retry the pod
        after its backoff; UNSCHEDULABLE_AND_UNRESOLVABLE when no retry can help (the pod
        was deleted or bound by someone else meanwhile): the pod is then dropped."""
        ...


class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


class EnqueueExtensions(Plugin, Protocol):
    """Plugins that reject pods say which cluster events may make those pods schedulable."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


@dataclass
class Diagnosis:
    """Why no node fitted, per node and per plugin: the raw material of the FitError message.

    ``codes`` are per snapshot node row (``SUCCESS`` where the node passed or was not
    evaluated). ``reasons`` are ``(rows, reason, plugin)`` triples with ``rows`` as row
    indices into the snapshot's node table; they keep the per-node, per-plugin detail that
    explanations need.
    """

    codes: CodeArray
    reasons: list[tuple[IntArray, str, str]] = field(default_factory=list)
    num_all_nodes: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

