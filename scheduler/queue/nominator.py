"""Pods nominated to nodes by preemption, while their victims go away (upstream ``nominator.go``).

A nominated pod reserves room on its node: Filter counts the nominated pods of equal or higher
priority as if they were already there. The nomination lives here, in memory, and may run
ahead of ``status.nominatedNodeName`` in the API (the status patch is asynchronous), which is
why :meth:`Nominator.update` keeps an in-memory nomination when an update without one arrives.

Thread-safe; its lock is a leaf: it never calls out while holding it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Generic

from scheduler.queue.queued_pod import P


class Nominator(Generic[P]):
    def __init__(self, lookup: Callable[[str], P | None] | None = None) -> None:
        """``lookup(uid)``: the newest version of the pod the watch delivered, ``None`` once it
        is deleted. Without it, the caller's pod object is taken as current."""
        self._lookup = lookup
        self._lock = threading.Lock()
        self._pods_by_node: dict[str, list[P]] = {}
        self._node_by_uid: dict[str, str] = {}
        # What all() returned, until a nomination changes: every cycle and every preemption
        # dry run read it, and copying thousands of nominations each time cost more than
        # filtering.
        self._all: Mapping[str, Sequence[P]] | None = None

    def add(self, pod: P, node_name: str | None = None) -> None:
        """Nominate ``pod`` to ``node_name``; ``None`` takes ``pod.nominated_node_name``.

        An empty node name clears the nomination. A pod that no longer exists, or is already
        bound to a node, is never nominated: as upstream, the watch's newest version decides,
        so a failure handled after the pod's deletion leaves no nomination behind.
        """
        with self._lock:
            self._add_locked(pod, node_name)

    def delete(self, uid: str) -> None:
        with self._lock:
            self._delete_locked(uid)

    def update(self, old: P, new: P) -> None:
        """Replace ``old`` by ``new``, keeping the in-memory nomination when neither object
        carries ``status.nominatedNodeName`` (a stale update racing our own status patch)."""
        with self._lock:
            node_name: str | None = None
            if not old.nominated_node_name and not new.nominated_node_name:
                node_name = self._node_by_uid.get(old.uid)
            self._delete_locked(old.uid)
            self._add_locked(new, node_name)

    def pods_for_node(self, node_name: str) -> list[P]:
        with self._lock:
            return list(self._pods_by_node.get(node_name, ()))

    def node_of(self, uid: str) -> str | None:
        with self._lock:
            return self._node_by_uid.get(uid)

    def all(self) -> Mapping[str, Sequence[P]]:
        """Every nomination, by node: a copy shared by the callers until a nomination changes
        (so read it, never change it)."""
        with self._lock:
            if self._all is None:
                self._all = {node: list(pods) for node, pods in self._pods_by_node.items()}
            return self._all

    def __len__(self) -> int:
        with self._lock:
            return len(self._node_by_uid)

    # -- internals --------------------------------------------------------------------------
    def _add_locked(self, pod: P, node_name: str | None) -> None:
        # Never keep two entries for one pod.
        self._delete_locked(pod.uid)
        node = pod.nominated_node_name if node_name is None else node_name
        current = pod if self._lookup is None else self._lookup(pod.uid)
        if not node or current is None or current.node_name or pod.node_name:
            return
        self._node_by_uid[pod.uid] = node
        self._pods_by_node.setdefault(node, []).append(pod)
        self._all = None

    def _delete_locked(self, uid: str) -> None:
        node = self._node_by_uid.pop(uid, None)
        if node is None:
            return
        self._all = None
        pods = self._pods_by_node[node]
        for i, pod in enumerate(pods):
            if pod.uid == uid:
                del pods[i]
                break
        if not pods:
            del self._pods_by_node[node]
