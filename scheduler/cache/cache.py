"""The scheduler's view of the cluster: nodes, accounted pods, assumed pods and the objects
scheduling depends on (namespace labels, PodDisruptionBudgets). PriorityClasses are resolved
where pods enter, in the intake.

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

import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from scheduler.cache.node_table import NodeTable
from scheduler.cache.pod_index import PodLabelIndex
from scheduler.cache.volume_objects import VolumeObjects
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

DEFAULT_ASSUMED_TTL_SECONDS = 15 * 60.0


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
        # Assumed pods whose bind call returned, by uid: when their assumption expires. One
        # TTL for all, so the deadlines ascend in insertion order and expiry reads the front.
        self._binding_finished: dict[str, float] = {}
        self._assumed_ttl = assumed_ttl
        self._clock = clock
        self.namespaces: dict[str, dict[str, str]] = {}
        self.pdbs: dict[str, DisruptionBudget] = {}
        self.volumes = VolumeObjects()

    # -- nodes ----------------------------------------------------------------------------
    def upsert_node(self, node: Mapping[str, Any]) -> None:
        """Add or update a node; pods already bound to it by name are accounted now."""
        row, created = self.nodes.upsert_node(node)
        if created:
            for pod in self._orphans.pop(node["metadata"]["name"], {}).values():
                self.nodes.add_pod(row, pod)

    def remove_node(self, name: str) -> None:
        """Forget the node. Its pods stay known, waiting for the node to come back or to go."""
        pods = self.nodes.remove_node(name)
        if pods:
            self._orphans[name] = {p.uid: p for p in pods}

    def node_names(self) -> set[str]:
        return set(self.nodes.index)

    def sizes(self) -> dict[str, int]:
        """``scheduler_cache_size``'s values: nodes, bound or assumed pods, assumed pods.

        Read at scrape time from the serving thread: each is one ``len``, which the
        interpreter takes whole, so no lock is needed for a figure that is a snapshot anyway.
        """
        return {"nodes": len(self.nodes.index), "pods": len(self._node_of_pod),
                "assumed_pods": len(self._assumed)}

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

    def get_pod(self, uid: str) -> PodInfo | None:
        return self.pods.by_uid.get(uid)

    def pod_uids(self) -> set[str]:
        return set(self.pods.by_uid)

    # -- assume / confirm / forget --------------------------------------------------------
    def assume(self, pod: PodInfo, node: str) -> PodInfo:
        """Count ``pod`` on ``node`` now, before the API confirms the binding."""
        if pod.uid in self.pods.by_uid:
            raise ValueError(f"pod {pod.key} is already in the cache")
        assumed = pod.replace(node_name=node)
        self._place(assumed)
        self._assumed.add(pod.uid)
        return assumed

    def finish_binding(self, uid: str) -> None:
        """The bind call returned: start the safety-net TTL for an observation that never comes."""
        if uid in self._assumed:
            self._binding_finished.pop(uid, None)  # a later deadline goes to the back
            self._binding_finished[uid] = self._clock() + self._assumed_ttl

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
        now = self._clock()
        expired: list[str] = []
        for uid, deadline in self._binding_finished.items():
            if deadline > now:
                break
            expired.append(uid)
        for uid in expired:
            pod = self.get_pod(uid)
            log.warning(
                "Assumed pod expired without its binding being observed",
                pod=pod.key if pod else uid,
                node=pod.node_name if pod else None,
            )
            self.remove_pod(uid)
        return expired

    # -- namespaces, priority classes, PDBs, volume objects ---------------------------------
    def upsert_namespace(self, obj: Mapping[str, Any]) -> None:
        self.namespaces[obj["metadata"]["name"]] = dict(obj["metadata"].get("labels") or {})

    def remove_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    def upsert_pdb(self, obj: Mapping[str, Any]) -> None:
        pdb = DisruptionBudget.from_object(obj)
        self.pdbs[pdb.key] = pdb

    def remove_pdb(self, key: str) -> None:
        self.pdbs.pop(key, None)
