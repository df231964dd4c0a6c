"""Pods a Permit plugin told to wait (upstream's waitingPodsMap): the binding cycle waits on
them, any thread may allow or reject them.

As upstream's ``waitingPod``: each plugin that answered Wait has its own timeout; the pod is
allowed once every one of them allowed it (``allow(uid, plugin)``), rejected by any, and the
first timeout to pass rejects it with ``rejected due to timeout after waiting <d> at plugin
<name>`` (``runtime/waiting_pods_map.go``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.framework.config_fields import format_duration
from scheduler.framework.interface import SUCCESS, Code, Status

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo


@dataclass
class _Waiting:
    pod: PodInfo
    # Plugin name -> its timeout in seconds, and when it passes (time.monotonic); a plugin
    # leaves the deadlines when it allows the pod.
    timeouts: dict[str, float]
    deadlines: dict[str, float]
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Status | None = None


class WaitingPods:
    """Pods a Permit plugin told to wait, until allowed, rejected or timed out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, _Waiting] = {}

    def add(self, pod: PodInfo, plugins: Sequence[tuple[str, float]]) -> None:
        """``plugins``: the Permit plugins that answered Wait, each with its timeout."""
        with self._lock:
            now = time.monotonic()
            self._pods[pod.uid] = _Waiting(
                pod, dict(plugins), {name: now + timeout for name, timeout in plugins})

    def allow(self, uid: str, plugin: str) -> None:
        """``plugin`` allows the pod; it goes on once no plugin it waits for is left."""
        with self._lock:
            entry = self._pods.get(uid)
            if entry is None or entry.outcome is not None:
                return
            entry.deadlines.pop(plugin, None)
            if entry.deadlines:
                return
            entry.outcome = SUCCESS
        entry.done.set()

    def reject(self, uid: str, message: str, plugin: str = "") -> None:
        """Reject a waiting pod; ``plugin`` names the rejector (the queue then retries the pod
        on that plugin's events, as upstream's ``WaitingPod.Reject(pluginName, msg)``)."""
        self._resolve(uid, Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _resolve(self, uid: str, status: Status) -> None:
        with self._lock:
            entry = self._pods.get(uid)
            if entry is None or entry.outcome is not None:
                return
            entry.outcome = status
        entry.done.set()

    def wait(self, uid: str) -> Status:
        """Block until the pod is allowed or rejected, or the first timeout of a plugin it
        still waits for passes (a plugin that allowed it no longer times it out)."""
        with self._lock:
            entry = self._pods.get(uid)
        if entry is None:
            return SUCCESS
        while True:
            with self._lock:
                if entry.outcome is None:
                    plugin, deadline = min(entry.deadlines.items(), key=lambda item: item[1])
                    left = deadline - time.monotonic()
                    if left <= 0:
                        entry.outcome = _timed_out(plugin, entry.timeouts[plugin])
                if entry.outcome is not None:
                    self._pods.pop(uid, None)
                    return entry.outcome
            entry.done.wait(left)

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods


def _timed_out(plugin: str, timeout: float) -> Status:
    return Status(Code.UNSCHEDULABLE, (
        f"rejected due to timeout after waiting {format_duration(timeout)} at plugin {plugin}",
    ), plugin)
