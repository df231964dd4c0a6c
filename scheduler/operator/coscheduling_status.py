"""Coscheduling PodGroups' status kept current, as scheduler-plugins' PodGroup controller
keeps it (its computation: ``scheduler.model.coscheduling``), where that CRD is installed:
its users read the phase and the counts, and a cluster running this scheduler instead of
scheduler-plugins' has no controller of its own to write them.

Fed by the pod and Coscheduling PodGroup watches (their reflectors' threads, hence the lock):
labelled pods are kept as members (phase and owners), groups with their last status; a
change to either settles the group's status and writes it through the ``PodGroupReporter``
port when it differs from the object's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from scheduler.framework.ports import PodGroupReporter
from scheduler.model.coscheduling import CoschedulingStatus, Member, parse_status, settle
from scheduler.model.errors import InvalidSpecError
from scheduler.model.pod_group import COSCHEDULING_LABEL, PodGroup

log = structlog.get_logger("scheduler.coscheduling")

DELETED = "DELETED"
Key = tuple[str, str]  # (namespace, group name)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class CoschedulingStatusWriter:
    def __init__(self, reporter: PodGroupReporter) -> None:
        self.reporter = reporter
        self._lock = threading.Lock()
        self._groups: dict[Key, tuple[PodGroup, CoschedulingStatus]] = {}
        self._members: dict[Key, dict[str, Member]] = {}
        self._group_of_pod: dict[str, Key] = {}
        # Nothing is settled before the pods are listed: a group listed first would read as
        # memberless and be written back to Pending at every start.
        self._pods_listed = False

    # -- pods -----------------------------------------------------------------------------
    def on_pod(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        meta = _meta(obj)
        uid = str(meta.get("uid") or "")
        labels = meta.get("labels")
        name = labels.get(COSCHEDULING_LABEL) if isinstance(labels, Mapping) else None
        if not name and uid not in self._group_of_pod:
            return  # the pod path's common case: no label, never had one
        with self._lock:
            touched = {self._forget_pod(uid)}
            if name and event_type != DELETED:
                touched.add(self._remember_pod(uid, str(meta.get("namespace") or ""),
                                               str(name), obj))
        self._settle(touched)

    def on_pods_listed(self, items: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._pods_listed = True
            touched = set(self._members) | set(self._groups)
            self._members.clear()
            self._group_of_pod.clear()
            for obj in items:
                meta = _meta(obj)
                labels = meta.get("labels")
                name = labels.get(COSCHEDULING_LABEL) if isinstance(labels, Mapping) else None
                if name:
                    touched.add(self._remember_pod(str(meta.get("uid") or ""),
                                                   str(meta.get("namespace") or ""),
                                                   str(name), obj))
        self._settle(touched)

    def _forget_pod(self, uid: str) -> Key | None:
        key = self._group_of_pod.pop(uid, None)
        if key is not None:
            members = self._members.get(key, {})
            members.pop(uid, None)
            if not members:
                self._members.pop(key, None)
        return key

    def _remember_pod(self, uid: str, namespace: str, name: str,
                      obj: Mapping[str, Any]) -> Key:
        key = (namespace, name)
        owners = tuple(str(o.get("name") or "") for o in _meta(obj).get("ownerReferences") or ()
                       if isinstance(o, Mapping))
        status = obj.get("status")
        phase = str(status.get("phase") or "") if isinstance(status, Mapping) else ""
        self._members.setdefault(key, {})[uid] = Member(phase, owners)
        self._group_of_pod[uid] = key
        return key

    # -- groups ---------------------------------------------------------------------------
    def on_group(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        meta = _meta(obj)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if event_type == DELETED:
                self._groups.pop(key, None)
                return
            if not self._remember_group(key, obj):
                return
        self._settle({key})

    def on_groups_listed(self, items: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._groups.clear()
            touched = set()
            for obj in items:
                meta = _meta(obj)
                key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                if self._remember_group(key, obj):
                    touched.add(key)
        self._settle(touched)

    def _remember_group(self, key: Key, obj: Mapping[str, Any]) -> bool:
        try:
            group = PodGroup.parse_coscheduling(obj)
        except InvalidSpecError:
            return False  # the intake reports it; no status is computed for it
        status = obj.get("status")
        self._groups[key] = (group, parse_status(status if isinstance(status, dict) else None))
        return True

    # -- status ---------------------------------------------------------------------------
    def _settle(self, keys: Iterable[Key | None]) -> None:
        writes = []
        with self._lock:
            for key in keys if self._pods_listed else ():
                if key is None or key not in self._groups:
                    continue
                group, current = self._groups[key]
                if group.deleting:
                    continue
                members = list(self._members.get(key, {}).values())
                settled = settle(current, group.min_count, group.namespace, members)
                if settled != current:
                    # What the object will say once written: the next event compares to it.
                    self._groups[key] = (group, settled)
                    writes.append((group, settled))
        for group, settled in writes:
            log.info("Coscheduling PodGroup status", pod_group=group.key, phase=settled.phase,
                     running=settled.running, succeeded=settled.succeeded,
                     failed=settled.failed)
            self.reporter.coscheduling_status(group, settled)
