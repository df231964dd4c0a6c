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
from collections.abc import Callable, Iterator, Sequence
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
    from scheduler.model.pod_group import PodGroup

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

    Plugins store what PreFilter/PreScore computed under their own key (``write(key,
    value)``) and read it back in Filter/Score (``read(key)``, which raises KeyError, or
    ``get(key, default=None)``). ``skip_filter``/``skip_score``/``skip_pre_bind`` record
    which plugins asked to be skipped.
    """

    def __init__(self) -> None:
        data: dict[str, Any] = {}
        # The dict's own methods: plugins write and read about fifteen times a cycle, and a
        # method of this class would add a Python call to each.
        self.write: Callable[[str, Any], None] = data.__setitem__
        self.read: Callable[[str], Any] = data.__getitem__
        self.get: Callable[..., Any] = data.get
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        # PreBind plugins whose PreBindPreFlight said Skip: PreBind does not run them.
        self.skip_pre_bind: set[str] = set()
        # Set in the cycles sampled for per-plugin duration metrics (upstream: 10 %).
        self.record_plugin_metrics = False
        # The runtime's: the plugins the rest of the cycle runs, chosen once PreFilter has
        # run (None before, or for a state that never went through the runtime's PreFilter).
        self.after_pre_filter: Any = None


class NodeView:
    """A batch of node rows from a snapshot, possibly with hypothetical pod changes.

    ``idx`` are row indices into the snapshot's node table. ``requested`` and ``pod_count``
    already include the hypothetical changes; ``added``/``removed`` list, per row, the pods
    hypothetically added to or removed from that node (``None`` when no row has any, which is
    the fast path of an ordinary cycle).

    ``removed_elsewhere`` lists, per row, pods hypothetically removed from *other* nodes
    (each on its own ``node_name``) in the same hypothesis: the pods of a ``disruptionMode:
    All`` pod group that a preemption dry run for this row evicts on other nodes. Only a
    plugin whose PreFilter state counts pods over several nodes reads them (upstream runs
    its PreFilterExtensions' RemovePod/AddPod with the remote node for them, and nothing
    else); ``has_deltas`` and ``delta_rows`` do not include them, ``delta_rows_across_nodes``
    does.
    """

    __slots__ = ("_pod_count", "_requested", "added", "as_in_table", "idx", "removed",
                 "removed_elsewhere", "snapshot")

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        idx: IntArray,
        requested: IntArray | None,
        pod_count: IntArray | None,
        added: list[list[PodInfo]] | None = None,
        removed: list[list[PodInfo]] | None = None,
        as_in_table: bool = False,
        removed_elsewhere: list[list[PodInfo]] | None = None,
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
        self.removed_elsewhere = removed_elsewhere
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

    def delta_rows_across_nodes(
        self,
    ) -> Iterator[tuple[int, int, Sequence[PodInfo], Sequence[PodInfo], Sequence[PodInfo]]]:
        """(position, node row, added, removed, removed elsewhere) for the rows carrying
        hypothetical pods on their node or on others: for a plugin that counts pods over
        several nodes (a removed pod elsewhere counts in its own node's domains)."""
        if self.removed_elsewhere is None:
            for pos, row, added, removed in self.delta_rows():
                yield pos, row, added, removed, ()
            return
        for pos in range(len(self)):
            added = self.added[pos] if self.added is not None else ()
            removed = self.removed[pos] if self.removed is not None else ()
            elsewhere = self.removed_elsewhere[pos]
            if added or removed or elsewhere:
                yield pos, int(self.idx[pos]), added, removed, elsewhere

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
            removed_elsewhere=None if self.removed_elsewhere is None
            else [self.removed_elsewhere[int(r)] for r in rows],
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
        return NodeView(self.snapshot, self.idx, requested, pod_count, lists, self.removed,
                        removed_elsewhere=self.removed_elsewhere)

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
    """What every plugin is: an object with a ``name``, the one its PluginSpec registers.
    Each extension point it serves is a method below (the point's protocol), listed in its
    spec's ``points``; the runtime calls exactly these signatures."""

    name: str


class PreEnqueuePlugin(Plugin, Protocol):
    """Decides whether a pod may enter activeQ or backoffQ at all; a rejected pod waits,
    gated, in the unschedulable pool until an event its plugin registered (upstream's
    PreEnqueue). Runs under the queue's lock: a cheap function of the pod."""

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


class QueueSortPlugin(Plugin, Protocol):
    """Orders the activeQ (upstream's QueueSort): whether ``a`` pops before ``b``. Exactly one
    per scheduler; every profile must name the same one. May also offer
    :class:`SortKeyHook`."""

    def less(self, a: QueuedPodLike, b: QueuedPodLike) -> bool: ...


class SortKeyHook(Protocol):
    """Optional hook of a QueueSort plugin (API 1.3): ``sort_key(pod)``, a value compared with
    ``<`` that orders pods exactly as ``less`` does. The queue then compares keys computed
    once per pod instead of calling ``less`` a dozen times a pop."""

    def sort_key(self, pod: QueuedPodLike) -> Any: ...


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
    """Runs once per cycle before Filter (upstream's PreFilter): computes what Filter will
    read (``state.write``), may restrict the nodes (a :class:`PreFilterResult`), and answers
    with a Status: Success; Skip (this plugin's Filter does not run this cycle);
    Unschedulable or UnschedulableAndUnresolvable (the pod fits nowhere); Error."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: ClusterSnapshot
    ) -> tuple[PreFilterResult | None, Status]: ...


class FilterPlugin(Plugin, Protocol):
    """Whether the pod may run on each node of a batch (upstream's Filter, once per node):
    a code per row and its reasons. Runs only on the rows every earlier Filter let through.
    May also declare :class:`FilterPodListsHook`."""

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult: ...


class FilterPodListsHook(Protocol):
    """Optional hook of a Filter plugin: ``filter_reads_pod_lists``, a class attribute
    (``bool``), says whether ``filter`` reads a view's hypothetical pods (``added``,
    ``removed``, ``delta_rows``). False lets nominated pods and preemption's dry runs skip
    building those lists for it; a plugin that does not say is assumed to read them."""

    filter_reads_pod_lists: bool


class PostFilterPlugin(Plugin, Protocol):
    """Runs when no node fits (upstream's PostFilter; DefaultPreemption is one): Success with
    a nominated node ends the search; Unschedulable lets the next one try."""

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]: ...


@dataclass
class PostFilterResult:
    """``nominated_node_name`` is ``""`` to clear a nomination, ``None`` to leave it."""

    nominated_node_name: str | None = None


class PreScorePlugin(Plugin, Protocol):
    """Runs once per cycle before Score, on the feasible nodes (upstream's PreScore): the
    place to compute what ``score`` reads (``state.write``). Skip leaves this plugin's Score
    out of the cycle; anything else but Success fails the cycle."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> Status: ...


class ScorePlugin(Plugin, Protocol):
    """Ranks the feasible nodes (upstream's Score and ScoreExtensions): ``score`` gives a raw
    int64 per row, ``normalize`` maps the batch's raw scores to [0, MAX_NODE_SCORE]; the
    profile's weight multiplies the result."""

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray: ...

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """Optional: the identity by default. A plugin without it (upstream: ScoreExtensions
        returning nil) must score in [0, MAX_NODE_SCORE] itself."""
        return scores


class ReservePlugin(Plugin, Protocol):
    """Runs once the node is chosen, before Permit (upstream's Reserve): keeps what the
    plugin tracks per node in step with the assumed pod. A failure unreserves every Reserve
    plugin in reverse order."""

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Required with ``reserve``. Must be idempotent: it may run after a partial or
        failed Reserve, or when a later point fails."""
        ...


@dataclass(frozen=True)
class PermitDecision:
    status: Status
    timeout_seconds: float = 0.0
    # For a Wait of the whole profile: the plugins that asked to wait, each with its timeout.
    waiting: tuple[tuple[str, float], ...] = ()


class PermitPlugin(Plugin, Protocol):
    """The last word before binding (upstream's Permit): Success, a rejection, or Wait with
    a timeout (capped at 15 minutes) until ``Handle.waiting_pods`` allows or rejects it."""

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> PermitDecision: ...


class PreBindPlugin(Plugin, Protocol):
    """Runs in the binding cycle, before Bind (upstream's PreBind): API calls the pod needs
    first (VolumeBinding binds its claims). May also offer :class:`PreBindPreFlightHook`."""

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


class IdleWhenPreFilterSkipsHook(Protocol):
    """Optional hook of a PreFilter plugin: ``idle_when_pre_filter_skips``, a class attribute
    naming extension points (of ``preScore``, ``reserve``, ``preBind``) at which the plugin
    provably has nothing to do for a pod its PreFilter returned Skip for: its PreScore would
    return Skip, its Reserve Success and its Unreserve nothing, its PreBindPreFlight Skip.
    The runtime then leaves it out of those points for that pod (in the cycles not sampled
    for per-plugin metrics, so that those still see every call upstream makes)."""

    idle_when_pre_filter_skips: frozenset[str]


class PreBindPreFlightHook(Protocol):
    """Optional hook of a PreBind plugin (upstream's PreBindPreFlight), called in the
    scheduling cycle: Success when its PreBind has work for this pod, Skip when it has none
    (its PreBind then does not run), Error to fail the binding. Without it, PreBind always
    runs."""

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """SUCCESS once bound; SKIP to let the next Bind plugin try; ERROR to retry the pod
        after its backoff; UNSCHEDULABLE_AND_UNRESOLVABLE when no retry can help (the pod
        was deleted or bound by someone else meanwhile): the pod is then dropped."""
        ...


class PostBindPlugin(Plugin, Protocol):
    """Informational, once the pod is bound (upstream's PostBind); what it raises is logged."""

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


class EnqueueExtensions(Plugin, Protocol):
    """Optional hook of any plugin that can reject a pod (upstream's EnqueueExtensions): the
    cluster events that may make the pods it rejected schedulable, each with an optional
    queueing hint ``(pod, old, new) -> QueueingHint``. A rejecting plugin without it has its
    pods retried on every event."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


class PlacementFeasibleHook(Protocol):
    """Optional hook of any plugin (upstream's PlacementFeasible, of the pod-group cycle):
    after each member the cycle tried, with ``scheduled`` members of the group placed
    (assumed or bound) and ``remaining`` still to try: Success once the group's constraint
    is met, Wait while it may still be, Unschedulable when it no longer can (the cycle then
    stops and places no member)."""

    def placement_feasible(self, group: PodGroup, scheduled: int, remaining: int) -> Status: ...


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A pod-group member and the node the group's algorithm placed it on (upstream's
    ``fwk.ProposedAssignment``)."""

    pod: PodInfo
    node: str


class PodGroupSimulation(Protocol):
    """What a PodGroupPostFilter plugin runs the group's algorithm on (upstream's
    ``PodGroupSchedulingFunc`` with the mutable snapshot it reads): pods taken out of and put
    back into the cluster as the cycle sees it. Whatever is still taken out when the plugin
    returns is put back by the cycle."""

    def remove_pods(self, pods: Sequence[PodInfo]) -> None: ...

    def add_pods(self, pods: Sequence[PodInfo]) -> None: ...

    def schedule(self) -> tuple[list[ProposedAssignment], Status]:
        """The pod-group algorithm on the cluster as it now is (every member tried, none
        left placed): where the members went, and the group's status."""
        ...

    def fits(self, assignments: Sequence[ProposedAssignment]) -> Status:
        """Whether every member still passes PreFilter and Filter on its node, each with the
        ones before it placed (the check of upstream's reprieveVictim)."""
        ...


@dataclass(frozen=True)
class PodGroupPostFilterResult:
    """The nominations of a PodGroupPostFilter that succeeded: member uid to node."""

    nominations: dict[str, str] = field(default_factory=dict)


class PodGroupPostFilterHook(Protocol):
    """Optional hook of a PostFilter plugin (upstream's PodGroupPostFilter): runs when a pod
    group's cycle ends Unschedulable, with the group's members that were tried. Success
    (preemption under way, members nominated) ends the search; UnschedulableAndUnresolvable
    and Error stop it; Unschedulable lets the next plugin try."""

    def pod_group_post_filter(
        self, group: PodGroup, members: Sequence[PodInfo], simulation: PodGroupSimulation
    ) -> tuple[PodGroupPostFilterResult | None, Status]: ...


class WaitForActuationsHook(Protocol):
    """Optional hook of any plugin that starts work outside the cycle (DefaultPreemption's
    evictions): the scheduler's orderly stop calls ``wait_for_actuations(timeout)`` and
    expects True once that work has ended, False on timeout."""

    def wait_for_actuations(self, timeout: float | None = None) -> bool: ...


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

