"""Pods a Permit plugin told to wait (upstream's waitingPodsMap): the binding cycle waits on
them, any thread may allow or reject them."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from scheduler.framework.interface import SUCCESS, Code, Status

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo


class WaitingPods:
    """Pods a Permit plugin told to wait, until allowed, rejected or timed out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, tuple[threading.Event, list[Status], float]] = {}

    def add(self, pod: PodInfo, timeout: float) -> None:
        with self._lock:
            self._pods[pod.uid] = (threading.Event(), [], timeout)

    def allow(self, uid: str) -> None:
        self._resolve(uid, SUCCESS)

    def reject(self, uid: str, message: str, plugin: str = "") -> None:
        """Reject a waiting pod; ``plugin`` names the rejector (the queue then retries the pod
        on that plugin's events, as upstream's ``WaitingPod.Reject(pluginName, msg)``)."""
        self._resolve(uid, Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _resolve(self, uid: str, status: Status) -> None:
        with self._lock:
            entry = self._pods.get(uid)
        if entry is not None:
            entry[1].append(status)
            entry[0].set()

    def wait(self, uid: str) -> Status:
        with self._lock:
            entry = self._pods.get(uid)
        if entry is None:
            return SUCCESS
        event, outcome, timeout = entry
        event.wait(timeout)
        with self._lock:
            self._pods.pop(uid, None)
        if outcome:
            return outcome[0]
        return Status(Code.UNSCHEDULABLE, ("rejected due to timeout after waiting at permit",))

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods
