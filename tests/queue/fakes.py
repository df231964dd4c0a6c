"""Stand-ins for the queue tests: a tiny pod, a hand-driven clock and registrations."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
    Resource,
)
from scheduler.plugins.priority_sort import PrioritySort
from scheduler.queue import QueuedPodInfo, SchedulingQueue

NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
INTER_POD_AFFINITY = "InterPodAffinity"
SCHEDULING_GATES = "SchedulingGates"
DYNAMIC_RESOURCES = "DynamicResources"

START = 1000.0  # a whole second, so backoff windows are easy to reason about


@dataclass(frozen=True)
class FakePod:
    name: str
    namespace: str = "default"
    priority: int = 0
    nominated_node_name: str = ""
    node_name: str = ""
    resource_version: str = "1"
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    uid: str = ""

    def __post_init__(self) -> None:
        if not self.uid:
            object.__setattr__(self, "uid", f"uid-{self.name}")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def make_pod(
    name: str,
    *,
    priority: int = 0,
    nominated: str = "",
    labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    gates: Sequence[str] = (),
    cpu: str | None = None,
) -> FakePod:
    requests = {"cpu": cpu} if cpu is not None else {}
    raw = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": dict(labels or {}),
        },
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": requests}}],
            "tolerations": [dict(t) for t in tolerations],
            "schedulingGates": [{"name": g} for g in gates],
        },
        "status": {"phase": "Pending", "nominatedNodeName": nominated},
    }
    return FakePod(name=name, priority=priority, nominated_node_name=nominated, raw=raw)


def revised(
    pod: FakePod,
    change: Callable[[dict[str, Any]], None] = lambda raw: None,
    *,
    priority: int | None = None,
    nominated: str | None = None,
    resource_version: str | None = None,
) -> FakePod:
    """A newer version of ``pod``: ``change`` edits a copy of its raw object."""
    raw = copy.deepcopy(dict(pod.raw))
    change(raw)
    rv = resource_version or str(int(pod.resource_version) + 1)
    raw.setdefault("metadata", {})["resourceVersion"] = rv
    return FakePod(
        name=pod.name,
        namespace=pod.namespace,
        priority=pod.priority if priority is None else priority,
        nominated_node_name=pod.nominated_node_name if nominated is None else nominated,
        node_name=pod.node_name,
        resource_version=rv,
        raw=raw,
        uid=pod.uid,
    )


class FakeClock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def registered(
    resource: Resource, action: Action, hint: QueueingHintFn | None = None
) -> ClusterEventWithHint:
    return ClusterEventWithHint(ClusterEvent(resource, action), hint)


def always(answer: QueueingHint) -> QueueingHintFn:
    return lambda pod, old, new: answer


def default_hints() -> dict[str, list[ClusterEventWithHint]]:
    """Registrations shaped like the default plugins' (v1.34 table), hints always Queue."""
    return {
        NODE_RESOURCES_FIT: [
            registered(Resource.POD, Action.DELETE | Action.UPDATE_POD_SCALE_DOWN),
            registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE),
        ],
        NODE_AFFINITY: [registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)],
        TAINT_TOLERATION: [
            registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
            registered(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATION),
        ],
        INTER_POD_AFFINITY: [
            registered(Resource.POD, Action.ADD | Action.DELETE),
            registered(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_LABEL),
            registered(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
        ],
        SCHEDULING_GATES: [registered(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SPEC)],
        DYNAMIC_RESOURCES: [registered(Resource.NODE, Action.ADD)],
    }


Queue = SchedulingQueue[FakePod]
QPI = QueuedPodInfo[FakePod]


def make_queue(
    clock: FakeClock | None = None,
    hints: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    **kwargs: Any,
) -> Queue:
    return SchedulingQueue[FakePod](
        PrioritySort().sort_key,
        clock=clock or FakeClock(),
        hints=default_hints() if hints is None else hints,
        **kwargs,
    )


def pop_now(queue: Queue) -> QPI:
    qpi = queue.pop(timeout=0)
    assert qpi is not None, "expected a pod to pop"
    return qpi


def pop_group(queue: Queue, pods: Sequence[FakePod], rejected_by: str | None = None) -> list[QPI]:
    """Pop a group as its cycle does: the first member, then the others taken along; each
    marked rejected by ``rejected_by`` when given, as a failed group cycle leaves them."""
    first = pop_now(queue)
    members = [first, *queue.take(p.uid for p in pods if p.uid != first.uid)]
    if rejected_by is not None:
        for qpi in members:
            qpi.unschedulable_plugins.add(rejected_by)
    return members


def fail(
    queue: Queue,
    qpi: QPI,
    plugins: Iterable[str] = (),
    *,
    pending: Iterable[str] = (),
    error: bool = False,
) -> bool:
    """The failure path of the scheduling cycle: record the rejectors and requeue."""
    qpi.unschedulable_plugins.update(plugins)
    qpi.pending_plugins.update(pending)
    return queue.add_unschedulable_if_not_present(qpi, error=error)


def park(queue: Queue, pod: FakePod, plugins: Iterable[str] = (), **kwargs: Any) -> QPI:
    """Add ``pod``, pop it and fail it with no event around: it lands in the pool."""
    queue.add(pod)
    qpi = pop_now(queue)
    assert qpi.uid == pod.uid
    fail(queue, qpi, plugins, **kwargs)
    return qpi


def where(queue: Queue, pod: FakePod) -> str | None:
    for name, keys in queue.pending_pods().items():
        if pod.key in keys:
            return name
    return None
