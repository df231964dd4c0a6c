"""Nodes a controller's pods should stay off for a while: upstream's PreferAvoidPods, in memory.

Two things write here: the rescheduler, when it evicts a pod to move it (its replacement must
not land back where it came from), and the intake, when the kubelet rejected or evicted a pod
of the controller (an ``OutOfcpu`` admission failure, a node-pressure eviction), so the
replacement does not go to the node that just threw its sibling out. The AvoidBounceBack score
plugin reads it. Records are keyed by the pod's controller (namespace, kind, name): a
replacement is a new pod of the same controller, never the same pod.

Written from the rescheduler's and the watch's threads, read from the scheduling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scheduler.model.pod import PodInfo

OwnerKey = tuple[str, str, str]


def owner_key(pod: PodInfo) -> OwnerKey | None:
    """The pod's controller as (namespace, kind, name); None for a pod nothing controls."""
    if not pod.owner_kind or not pod.owner_name:
        return None
    return (pod.namespace, pod.owner_kind, pod.owner_name)


@dataclass(frozen=True)
class Avoided:
    until: float
    reason: str


class NodeAvoidance:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._by_owner: dict[OwnerKey, dict[str, Avoided]] = {}

    def avoid(self, owner: OwnerKey, node: str, seconds: float, reason: str) -> None:
        """Keep ``owner``'s pods off ``node`` for ``seconds``; a longer record already there
        stays."""
        until = self._clock() + seconds
        with self._lock:
            nodes = self._by_owner.setdefault(owner, {})
            current = nodes.get(node)
            if current is None or current.until < until:
                nodes[node] = Avoided(until, reason)

    def forget(self, owner: OwnerKey, node: str) -> None:
        """Withdraw a record (the eviction it was made for did not happen)."""
        with self._lock:
            nodes = self._by_owner.get(owner)
            if nodes is not None:
                nodes.pop(node, None)
                if not nodes:
                    del self._by_owner[owner]

    def nodes_for(self, owner: OwnerKey | None) -> Mapping[str, str]:
        """The nodes ``owner``'s pods should avoid now, with why; expired records go."""
        if owner is None or not self._by_owner:
            return {}
        now = self._clock()
        with self._lock:
            nodes = self._by_owner.get(owner)
            if not nodes:
                return {}
            for node in [n for n, a in nodes.items() if a.until <= now]:
                del nodes[node]
            if not nodes:
                del self._by_owner[owner]
                return {}
            return {node: avoided.reason for node, avoided in nodes.items()}
