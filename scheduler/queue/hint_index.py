"""The pending pods of the unschedulable pool indexed by the keys of the hints that declare a
:class:`~scheduler.framework.events.HintIndex`, so that an event runs such a hint only for
the pods under its keys (DynamicResources: a claim's pods, by the claim names they can
reference), not for every pending pod."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import structlog

from scheduler.framework.events import HintIndex

log = structlog.get_logger("scheduler.queue")

# The key of pods whose keys could not be computed: every event's lookup includes them.
_ALWAYS = "\x00always"


class PoolIndex:
    """Per index, key -> uids of pooled pods; kept by the pool as pods enter and leave."""

    def __init__(self, indexes_of: Callable[[Any], Sequence[HintIndex]]) -> None:
        self._indexes_of = indexes_of
        self._by_key: dict[HintIndex, dict[str, set[str]]] = {}
        self._keys_of: dict[str, list[tuple[HintIndex, tuple[str, ...]]]] = {}

    def add(self, uid: str, pod: Any) -> None:
        self.remove(uid)
        entries = []
        for index in self._indexes_of(pod):
            try:
                keys = tuple(index.pod_keys(pod))
            except Exception:  # the hint then runs for this pod on every event
                log.exception("Queueing hint index failed; the pod's hint always runs",
                              pod=getattr(pod, "key", uid))
                keys = (_ALWAYS,)
            by_key = self._by_key.setdefault(index, {})
            for key in keys:
                by_key.setdefault(key, set()).add(uid)
            entries.append((index, keys))
        if entries:
            self._keys_of[uid] = entries

    def remove(self, uid: str) -> None:
        for index, keys in self._keys_of.pop(uid, ()):
            by_key = self._by_key[index]
            for key in keys:
                uids = by_key.get(key)
                if uids is not None:
                    uids.discard(uid)
                    if not uids:
                        del by_key[key]

    def uids(self, index: HintIndex, keys: Iterable[str]) -> set[str]:
        """The pooled pods indexed under one of ``keys``."""
        by_key = self._by_key.get(index, {})
        found: set[str] = set(by_key.get(_ALWAYS, ()))
        for key in keys:
            found |= by_key.get(key, set())
        return found


def event_keys(indexes: Iterable[HintIndex], old: object, new: object
               ) -> dict[HintIndex, tuple[str, ...] | None]:
    """Each index's keys for an event (None: every pod); called without the queue's lock."""
    out: dict[HintIndex, tuple[str, ...] | None] = {}
    for index in indexes:
        try:
            keys = index.event_keys(old, new)
        except Exception:  # every pod's hint then runs, as without the index
            log.exception("Queueing hint index failed for an event; every pod's hint runs")
            keys = None
        out[index] = None if keys is None else tuple(keys)
    return out
