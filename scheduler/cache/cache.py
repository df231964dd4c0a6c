"""The scheduler's view of the cluster: nodes, accounted pods, assumed pods and the objects
scheduling depends on (namespaces, PriorityClasses, PodDisruptionBudgets).

Ownership: the cache belongs to the scheduling thread. Watch handlers never touch it; they put
deltas into an :class:`~scheduler.cache.inbox.Inbox` which the scheduling thread applies at the
start of each cycle. A cycle therefore reads a state nobody changes under it, and taking a
snapshot costs only the deltas since the previous cycle, not a copy of 5,000 nodes.

Accounting follows kube-scheduler: a pod counts on its node when it is bound (whichever
scheduler bound it) or assumed by us, terminating pods count until they are gone, and
Succeeded/Failed pods do not count at all.

Invariant: every :meth:`Cache.assume` is followed by either a confirmation (the bound pod is
observed through :meth:`Cache.upsert_pod`) or :meth:`Cache.forget`. The TTL on assumed pods whose
binding finished is only a safety net for a bind that the watch never reports; it is long
enough (minutes) never to drop a pod that a healthy watch will deliver.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from cachetools import TTLCache

from scheduler.cache.node_table import NodeTable
from scheduler.cache.pod_index import PodLabelIndex
from scheduler.model.pod import PodInfo
from scheduler.model.selectors import LabelSelector

log = structlog.get_logger(__name__)

DEFAULT_ASSUMED_TTL_SECONDS = 15 * 60.0


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool
    preemption_policy: str

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> PriorityClass:
        return cls(
            name=obj["metadata"]["name"],
            value=int(obj.get("value", 0)),
            global_default=bool(obj.get("globalDefault", False)),
            preemption_policy=obj.get("preemptionPolicy") or "PreemptLowerPriority",
        )


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> DisruptionBudget:
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        raw_selector = spec.get("selector")
        try:
            selector = LabelSelector.parse(raw_selector, "spec.selector")
        except ValueError:
            selector = LabelSelector.NOTHING
        # Upstream: a PDB with an empty selector matches no pod for preemption purposes.
        if not raw_selector or (
            not raw_selector.get("matchLabels") and not raw_selector.get("matchExpressions")
        ):
            selector = LabelSelector.NOTHING
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            selector=selector,
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset((status.get("disruptedPods") or {}).keys()),
        )


@dataclass(frozen=True, slots=True)
class NodeChange:
    """What an upsert changed, so the queue can tell which pending pods may now fit."""

    created: bool
    allocatable_grew: bool
    labels_changed: bool
    taints_changed: bool
    schedulable_changed: bool


class Cache:
    def __init__(
        self,
        *,
        assumed_ttl: float = DEFAULT_ASSUMED_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nodes = NodeTable()
        self.pods = PodLabelIndex()
        # Pods bound to a node we have not seen yet: accounted when the node arrives.
        self._orphans: dict[str, dict[str, PodInfo]] = {}
        self._node_of_pod: dict[str, str] = {}
        self._assumed: set[str] = set()
        self._binding_finished: TTLCache[str, bool] = TTLCache(
            maxsize=1_000_000, ttl=assumed_ttl, timer=clock
        )
        self.namespaces: dict[str, dict[str, str]] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pdbs: dict[str, DisruptionBudget] = {}
        # Bumped on every change; lets derived per-cycle data know when to recompute.
        self.generation = 0
        self.namespace_generation = 0

    # -- nodes ----------------------------------------------------------------------------
    def upsert_node(self, node: Mapping[str, Any]) -> NodeChange:
        name = node["metadata"]["name"]
        table = self.nodes
        row = table.index.get(name)
        before = None
        if row is not None:
            before = (
                table.allocatable[row].copy(),
                int(table.allowed_pods[row]),
                table.labels_generation,
                table.taints_generation,
                bool(table.unschedulable[row]),
            )
        row, created = table.upsert_node(node)
        self.generation += 1
        if created:
            for pod in self._orphans.pop(name, {}).values():
                table.add_pod(row, pod)
            return NodeChange(True, True, True, True, True)
        assert before is not None
        alloc, pods, labels_gen, taints_gen, unsched = before
        width = alloc.shape[0]
        grew = bool((table.allocatable[row, :width] > alloc).any()) or (
            int(table.allowed_pods[row]) > pods
        ) or table.allocatable.shape[1] > width
        return NodeChange(
            created=False,
            allocatable_grew=grew,
            labels_changed=table.labels_generation != labels_gen,
            taints_changed=table.taints_generation != taints_gen,
            schedulable_changed=bool(table.unschedulable[row]) != unsched,
        )

    def remove_node(self, name: str) -> None:
        """Forget the node. Its pods stay known, waiting for the node to come back or to go."""
        pods = self.nodes.remove_node(name)
        if pods:
            self._orphans[name] = {p.uid: p for p in pods}
        self.generation += 1

    def node_names(self) -> set[str]:
        return set(self.nodes.index)

    # -- pods -----------------------------------------------------------------------------
    def upsert_pod(self, pod: PodInfo) -> None:
        """Apply an observed pod. Only bound, non-terminal pods are accounted.

        An observed bound pod confirms our assumption of it; if the API placed it elsewhere than
        we assumed, the API wins.
        """
        if pod.is_terminal:
            self.remove_pod(pod.uid)
            return
        if not pod.node_name:
            # A stale unbound version of a pod we assumed: the bind has not landed in the
            # watch yet. Keep the assumption; anything else unbound is not ours to account.
            if pod.uid not in self._assumed:
                self.remove_pod(pod.uid)
            return
        self._assumed.discard(pod.uid)
        self._binding_finished.pop(pod.uid, None)
        self._place(pod)

    def remove_pod(self, uid: str) -> PodInfo | None:
        self._assumed.discard(uid)
        self._binding_finished.pop(uid, None)
        node = self._node_of_pod.pop(uid, None)
        pod = self.pods.remove(uid)
        if node is None or pod is None:
            return pod
        row = self.nodes.index.get(node)
        if row is not None:
            self.nodes.remove_pod(row, pod)
        else:
            orphans = self._orphans.get(node)
            if orphans is not None:
                orphans.pop(uid, None)
                if not orphans:
                    del self._orphans[node]
        self.generation += 1
        return pod

    def _place(self, pod: PodInfo) -> None:
        old_node = self._node_of_pod.get(pod.uid)
        if old_node is not None:
            self.remove_pod(pod.uid)
        self._node_of_pod[pod.uid] = pod.node_name
        self.pods.add(pod)
        row = self.nodes.index.get(pod.node_name)
        if row is None:
            self._orphans.setdefault(pod.node_name, {})[pod.uid] = pod
        else:
            self.nodes.add_pod(row, pod)
        self.generation += 1

    def get_pod(self, uid: str) -> PodInfo | None:
        return self.pods.by_uid.get(uid)

    def pod_uids(self) -> set[str]:
        return set(self.pods.by_uid)

    # -- assume / confirm / forget --------------------------------------------------------
    def assume(self, pod: PodInfo, node: str) -> PodInfo:
        """Count ``pod`` on ``node`` now, before the API confirms the binding."""
        if pod.uid in self.pods.by_uid:
            raise ValueError(f"pod {pod.key} is already in the cache")
        assumed = dataclasses.replace(pod, node_name=node)
        self._place(assumed)
        self._assumed.add(pod.uid)
        return assumed

    def finish_binding(self, uid: str) -> None:
        """The bind call returned: start the safety-net TTL for an observation that never comes."""
        if uid in self._assumed:
            self._binding_finished[uid] = True

    def forget(self, uid: str) -> None:
        """Undo an assumption after a failed Reserve, Permit or bind."""
        if uid in self._assumed:
            self.remove_pod(uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def assumed_uids(self) -> set[str]:
        return set(self._assumed)

    def expire_assumed(self) -> list[str]:
        """Drop assumed pods whose finished binding was never observed within the TTL."""
        expired = [uid for uid, _ in self._binding_finished.expire()]
        for uid in expired:
            pod = self.get_pod(uid)
            log.warning(
                "Assumed pod expired without its binding being observed",
                pod=pod.key if pod else uid,
                node=pod.node_name if pod else None,
            )
            self.remove_pod(uid)
        return expired

    # -- namespaces, priority classes, PDBs -----------------------------------------------
    def upsert_namespace(self, obj: Mapping[str, Any]) -> bool:
        """Returns True when the namespace's labels changed."""
        name = obj["metadata"]["name"]
        labels = dict(obj["metadata"].get("labels") or {})
        changed = self.namespaces.get(name) != labels
        self.namespaces[name] = labels
        if changed:
            self.namespace_generation += 1
            self.generation += 1
        return changed

    def remove_namespace(self, name: str) -> None:
        if self.namespaces.pop(name, None) is not None:
            self.namespace_generation += 1
            self.generation += 1

    def upsert_priority_class(self, obj: Mapping[str, Any]) -> None:
        pc = PriorityClass.from_object(obj)
        self.priority_classes[pc.name] = pc

    def remove_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)

    def default_priority_class(self) -> PriorityClass | None:
        """The globalDefault class; with several, the lowest value wins as in admission."""
        defaults = [pc for pc in self.priority_classes.values() if pc.global_default]
        return min(defaults, key=lambda pc: pc.value) if defaults else None

    def upsert_pdb(self, obj: Mapping[str, Any]) -> None:
        pdb = DisruptionBudget.from_object(obj)
        self.pdbs[pdb.key] = pdb

    def remove_pdb(self, key: str) -> None:
        self.pdbs.pop(key, None)

    # -- relist reconciliation ------------------------------------------------------------
    def sweep_nodes(self, listed: Iterable[str]) -> list[str]:
        """Remove nodes absent from a fresh listing (watch deletions missed while it was down)."""
        gone = sorted(self.node_names() - set(listed))
        for name in gone:
            self.remove_node(name)
        return gone

    def sweep_pods(self, listed: Iterable[str]) -> list[str]:
        """Remove accounted pods absent from a fresh listing; assumed pods are kept."""
        gone = sorted(self.pod_uids() - set(listed) - self._assumed)
        for uid in gone:
            self.remove_pod(uid)
        return gone
