"""A lean list+watch for pods and nodes, owned by the operator.

kopf 1.45 dispatches ~2,000 events/s per core (measured with one counting ``on.event``
handler against a fake API server on loopback; cProfile puts the cost in kopf itself): every
event is deep-copied for its diff base and runs through per-object worker tasks on the event
loop, under the same GIL as the scheduling thread. At hundreds of pods per second, each pod
producing several events, that alone would take most of a core, and a 50,000-pod cluster
would take ~30 s to list. Pods and nodes therefore come through this reflector (plain JSON,
~30,000 events/s), while kopf keeps the operator's lifecycle and the low-volume watches.

After a relist (start, 410 Gone, a dropped connection that cannot resume) the listing is
reconciled against what we knew: objects deleted while the watch was down leave the cache,
which kopf's own relist does not do.

As client-go's reflector, a watch that breaks mid-stream resumes from the last
resourceVersion it delivered. Beyond client-go, an event not newer than that (a server
replaying older versions) is dropped rather than applied twice. An object the handler
fails on is logged with its kind, name and the reason, counted
(``secondary_scheduler_watch_objects_skipped_total``) and skipped: the watch goes on past
it instead of replaying it forever.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from scheduler.intake import parse_version, report_unparsable
from scheduler.operator.kubeapi import KubeApi

log = structlog.get_logger("scheduler.reflector")

OnEvent = Callable[[str | None, dict[str, Any]], object]
OnListed = Callable[[list[dict[str, Any]]], object]


class Reflector:
    def __init__(
        self,
        api: KubeApi,
        path: str,
        *,
        name: str,
        on_event: OnEvent,
        on_listed: OnListed,
        page_size: int = 1000,
        watch_timeout: int = 60,
        field_selector: str | None = None,
        apply_after: threading.Event | None = None,
    ) -> None:
        """``apply_after``: a listing is fetched at once but handed to ``on_listed`` only once
        this is set, so it can be fetched while what it must follow is still listed."""
        self.api = api
        self.path = path
        self.field_selector = field_selector
        self.name = name
        self.on_event = on_event
        self.on_listed = on_listed
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.apply_after = apply_after
        # What the metric and the log call the objects: the path's resource.
        self.kind = path.rstrip("/").rsplit("/", 1)[-1]
        self.listed = threading.Event()
        self.relists = 0
        self.events = 0
        # The newest resourceVersion delivered (listing, event or bookmark): where a watch
        # resumes; None until listed, and after a 410 (relist).
        self.resource_version: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self.resource_version = self._list()
                    if self.resource_version is None:
                        continue  # stopped before the listing could be applied
                self._watch(self.resource_version)
                backoff = 0.5
            except Exception:
                log.exception("Watch failed; retrying", resource=self.name, backoff=backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)

    def _list(self) -> str | None:
        items, resource_version = list_all(self.api, self.path, self.page_size,
                                           self.field_selector)
        while self.apply_after is not None and not self.apply_after.wait(1.0):
            if self._stop.is_set():
                return None
        self.on_listed(items)
        self.relists += 1
        self.listed.set()
        log.info("Listed", resource=self.name, count=len(items), relists=self.relists)
        return resource_version

    def _watch(self, resource_version: str) -> None:
        """Follow the watch from ``resource_version``, keeping :attr:`resource_version` at the
        newest version delivered (None when the server says to relist)."""
        for event in self.api.watch(self.path, resource_version, self.watch_timeout,
                                    field_selector=self.field_selector):
            if self._stop.is_set():
                return
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code")
                log.info("Watch ended with an error; relisting", resource=self.name, code=code,
                         reason=obj.get("message"))
                self.resource_version = None
                return
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if version and not _newer(version, self.resource_version):
                continue
            self.resource_version = version or self.resource_version
            if kind == "BOOKMARK":
                continue
            self.events += 1
            self._deliver(kind, obj)

    def _deliver(self, kind: str | None, obj: dict[str, Any]) -> None:
        try:
            self.on_event(kind, obj)
        except Exception as exc:  # a parse failure of any kind skips only this object
            report_unparsable(self.api.metrics, self.kind, obj, exc)


def _newer(version: str, than: str | None) -> bool:
    """Whether ``version`` comes after ``than``; versions that are not etcd revisions (another
    storage's opaque ones) are not compared."""
    new, last = parse_version(version), parse_version(than)
    return new is None or last is None or new > last


class ListError(RuntimeError):
    def __init__(self, path: str, status: int, message: str) -> None:
        super().__init__(f"list {path}: {status} {message}")
        self.status = status
        self.message = message


def list_all(
    api: KubeApi, path: str, page_size: int = 1000, field_selector: str | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Every object at ``path``, a page at a time, and the listing's resourceVersion."""
    items: list[dict[str, Any]] = []
    cont: str | None = None
    while True:
        response = api.get(path, {"limit": str(page_size), "continue": cont,
                                  "fieldSelector": field_selector})
        if response.status == 410:
            # The continue token expired mid-listing: start the listing over.
            items, cont = [], None
            continue
        if not response.ok:
            raise ListError(path, response.status, response.message())
        body = response.body
        items.extend(body.get("items") or [])
        cont = (body.get("metadata") or {}).get("continue") or None
        if cont is None:
            return items, str(body["metadata"]["resourceVersion"])
