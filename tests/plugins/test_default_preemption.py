"""DefaultPreemption tables, ported from upstream's tests (Kubernetes v1.37.2).

Sources: plugins/defaultpreemption/default_preemption_test.go (TestPostFilter,
TestDryRunPreemption, TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestPreempt,
TestSelectVictimsOnNode) and framework/preemption/{util,executor}_test.go. The inputs and the
expected victims, nodes and messages are upstream's; the harness is ours: a real Scheduler with
the default profile, the cluster in its cache, and a fake Evictor that records its calls.

TestSelectVictimsOnNode's GenericWorkload cases ("Workload Aware", "Cross-node PodGroup") are
ported with their names; upstream's cases about extenders, DRA and in-place resize are not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from scheduler.cache.pod_groups import PARSERS, POD_GROUPS
from scheduler.config import parse_config
from scheduler.cycle import schedule_one
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    Diagnosis,
    FilterResult,
    NodeView,
    PostFilterResult,
    Status,
)
from scheduler.framework.ports import EvictionOutcome, EvictionResult, NullPorts
from scheduler.framework.registry import ConfigError, PluginSpec, Registry
from scheduler.model.disruption import DisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import PodGroup
from scheduler.plugins.default_preemption import (
    Candidate,
    DefaultPreemption,
    aggregate_errors,
    select_candidate,
)
from scheduler.plugins.pod_group_preemption import SPEC as DP_SPEC
from scheduler.plugins.preemption_victims import POD, POD_GROUP, split_by_pdb, victims_among
from scheduler.plugins.registry import default_registry
from scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.scheduler import Scheduler
from scheduler.testing import node, pod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
NODE_RES = {"cpu": "200m", "memory": "400"}
ONE_POD = {"cpu": "0", "memory": "0", "pods": 1}
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SCHEDULER = "secondary-scheduler"
VICTIM_MESSAGE = f"{SCHEDULER}: preempting to accommodate a higher priority pod"
PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
DELETED_AT = "2026-01-01T00:00:00Z"


# -- builders -------------------------------------------------------------------------------
def n(name: str, res: Mapping[str, Any] = VERY_LARGE, **labels: str) -> dict[str, Any]:
    """A node; ``"node-a/zone1"`` also gets upstream's labels hostname=node-a, zone=zone1."""
    parts = name.split("/")
    all_labels = dict(zip(("hostname", "zone", "region"), parts, strict=False)) | labels
    return node(parts[0], cpu=res["cpu"], memory=res["memory"], pods=int(res.get("pods", 32)),
                labels=all_labels)


def p(
    name: str,
    *,
    on: str = "",
    prio: int | None = None,
    res: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    start: int | None = None,
    terminating: bool = False,
    conditions: Sequence[Mapping[str, str]] = (),
    scheduler: str = SCHEDULER,
    spec: Mapping[str, Any] | None = None,
    nominated: str = "",
) -> dict[str, Any]:
    """A pod as upstream's st.MakePod() builds it: uid = name, ``start`` in epoch seconds."""
    status: dict[str, Any] = {}
    if start is not None:
        status["startTime"] = f"1970-01-01T00:00:{start:02d}Z"
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return pod(
        name,
        uid=name,
        node_name=on,
        priority=prio,
        cpu=res["cpu"] if res else None,
        memory=res["memory"] if res else None,
        labels=labels,
        scheduler_name=scheduler,
        spec=spec,
        status=status,
        deletion_timestamp=DELETED_AT if terminating else None,
        nominated_node_name=nominated,
    )


def anti_affinity(key: str, topology: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
            "topologyKey": topology}
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                             [term]}}}


def spread(*keys: str) -> dict[str, Any]:
    return {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": FOO_EXISTS}
        for key in keys
    ]}


def pdb(
    name: str = "pdb",
    selector: Mapping[str, str] | None = None,
    allowed: int = 0,
    disrupted: Sequence[str] = (),
    *,
    namespace: str = "default",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(selector if selector is not None
                                                  else {"app": "foo"})}},
        "status": {"disruptionsAllowed": allowed,
                   "disruptedPods": {d: DELETED_AT for d in disrupted}},
    }


def pod_group(name: str, prio: int, *, mode: str = "all") -> dict[str, Any]:
    """A Workload-API PodGroup as upstream's st.MakePodGroup() builds it."""
    return {"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"priority": prio, "disruptionMode": {mode: {}},
                     "schedulingPolicy": {"basic": {}}}}


def in_group(group_name: str) -> dict[str, Any]:
    return {"schedulingGroup": {"podGroupName": group_name}}


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """For the actuation's worker threads: poll until ``predicate`` holds (no timing asserted)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def info(obj: Mapping[str, Any]) -> PodInfo:
    parsed = PodInfo.from_pod(obj)
    assert parsed.parse_error is None, parsed.parse_error
    return parsed


# -- fakes ----------------------------------------------------------------------------------
class Ports(NullPorts):
    """NullPorts that also remember the nomination each failure wrote."""

    def __init__(self) -> None:
        super().__init__()
        self.nominations: list[str | None] = []

    def failed(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        super().failed(pod, reason, message, nominated_node)
        self.nominations.append(nominated_node)


class FakeEvictor:
    """Records every call in order. ``hold`` makes the first call (or the call ``hold_at``)
    wait until it is set, so a test can look at the scheduler while an actuation runs;
    ``started`` is set when that call arrives."""

    def __init__(
        self,
        outcomes: Mapping[str, EvictionOutcome] | None = None,
        *,
        nominate_ok: bool = True,
        mark_ok: bool = True,
        delete_ok: bool = True,
        hold: threading.Event | None = None,
        hold_at: tuple[str, ...] | None = None,
    ) -> None:
        self.outcomes = dict(outcomes or {})
        self.nominate_ok = nominate_ok
        self.mark_ok = mark_ok
        self.delete_ok = delete_ok
        self.hold = hold
        self.hold_at = hold_at
        self.started = threading.Event()
        self.calls: list[tuple[str, ...]] = []
        # The pod group named by each victim's Preempted Event (None: a single preemptor).
        self.event_groups: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def _record(self, *call: str) -> None:
        held = call == self.hold_at if self.hold_at is not None else not self.started.is_set()
        if held:
            self.started.set()
        if held and self.hold is not None:
            assert self.hold.wait(10), "the test never released the evictor"
        with self._lock:
            self.calls.append(call)

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for call in self.calls if call[0] == kind)

    def set_nominated_node(self, pod: PodInfo, node: str) -> bool:
        self._record("nominate", pod.name, node)
        return self.nominate_ok

    def mark_disruption_target(self, victim: PodInfo, message: str) -> bool:
        self._record("mark", victim.name, message)
        return self.mark_ok

    def evict(self, victim: PodInfo) -> EvictionResult:
        self._record("evict", victim.name)
        outcome = self.outcomes.get(victim.name, EvictionOutcome.EVICTED)
        return EvictionResult(outcome, "refused" if outcome is not EvictionOutcome.EVICTED else "")

    def delete(self, victim: PodInfo) -> EvictionOutcome:
        self._record("delete", victim.name)
        return EvictionOutcome.EVICTED if self.delete_ok else EvictionOutcome.FAILED

    def preempted_event(
        self, victim: PodInfo, preemptor: PodInfo, node: str, group: PodGroup | None = None
    ) -> None:
        self._record("event", victim.name, preemptor.name, node)
        with self._lock:
            self.event_groups[victim.name] = None if group is None else group.key


class FailingRemovePlugin:
    """Upstream's TestPlugin: fails on nodes labelled error=true once pods are removed there.

    Upstream fails in PreFilterExtensions.RemovePod; ours has no such extension point (removals
    travel with the NodeView), so the error comes from Filter on a view with removals.
    """

    name = "test-plugin"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> FilterResult:
        result = FilterResult.all_pass(len(nodes))
        if nodes.removed is None:
            return result
        labels = nodes.snapshot.nodes.labels
        mask = np.asarray([
            bool(nodes.removed[i]) and labels[int(row)].get("error") == "true"
            for i, row in enumerate(nodes.idx)
        ], dtype=np.bool_)
        result.reject(mask, Code.ERROR, f"failed to remove pod: {pod.name}")
        return result


class FixedOffsets:
    """Stands in for the scheduler's rng: the dry-run offsets, in order (upstream's
    getOffsetRand override)."""

    def __init__(self, offsets: Sequence[int]) -> None:
        self._offsets: Iterator[int] = iter(offsets)

    def integers(self, high: int) -> int:
        offset = next(self._offsets)
        assert 0 <= offset < high
        return offset


# -- harness --------------------------------------------------------------------------------
@dataclass
class Cluster:
    s: Scheduler
    ports: Ports
    evictor: FakeEvictor | None

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.s.profiles[SCHEDULER].instances["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def prefiltered(self, preemptor: PodInfo) -> CycleState:
        state = CycleState()
        _, status, _ = self.s.profiles[SCHEDULER].run_pre_filter(state, preemptor, self.s.snapshot)
        assert status.is_success(), status
        return state

    def post_filter(
        self, preemptor: PodInfo, statuses: Mapping[str, Code] | None = None
    ) -> tuple[PostFilterResult | None, Status]:
        """PreFilter, then PostFilter with upstream's filteredNodesStatuses: a node absent from
        ``statuses`` is UnschedulableAndUnresolvable; ``None`` makes every node Unschedulable."""
        snapshot = self.s.snapshot
        codes = np.full(snapshot.nodes.capacity, UU, dtype=np.uint8)
        for name, row in snapshot.nodes.index.items():
            codes[row] = U if statuses is None else statuses.get(name, UU)
        diagnosis = Diagnosis(codes=codes, num_all_nodes=snapshot.num_nodes)
        self.watched(preemptor)
        return self.plugin.post_filter(self.prefiltered(preemptor), preemptor, diagnosis)

    def dry_run(self, preemptor: PodInfo) -> dict[str, tuple[list[str], int]]:
        """Upstream's DryRunPreemption over every node: node -> (sorted victims, violations)."""
        snapshot = self.s.snapshot
        candidates, _, errors = self.plugin.find_candidates(
            self.prefiltered(preemptor), preemptor, snapshot, snapshot.order()
        )
        assert not errors
        return {c.node: (sorted(v.name for v in c.victims), c.num_pdb_violations)
                for c in candidates}

    def schedule(self, preemptor: PodInfo) -> tuple[str, str | None]:
        """One scheduling cycle for ``preemptor``: its FailedScheduling message and the
        nomination written with it."""
        self.watched(preemptor)
        if self.s.queue.get(preemptor.uid) is None:
            self.s.queue.add(preemptor)
        else:
            self.s.queue.activate([preemptor.uid])
        before = len(self.ports.failures)
        assert schedule_one(self.s, timeout=0)
        assert len(self.ports.failures) == before + 1, "the pod was not reported as failed"
        return self.ports.failures[-1][2], self.ports.nominations[-1]

    def set_pod(self, obj: Mapping[str, Any]) -> None:
        self.s.cache.upsert_pod(self.watched(info(obj)))

    def watched(self, pod_info: PodInfo) -> PodInfo:
        """The watch delivered ``pod_info``: it exists, as the scheduler's pod lister sees."""
        self.s.pods[pod_info.uid] = pod_info
        return pod_info


def cluster(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    *,
    pdbs: Sequence[Mapping[str, Any]] = (),
    args: Mapping[str, Any] | None = None,
    evictor: FakeEvictor | None = None,
    nominated: Sequence[tuple[Mapping[str, Any], str]] = (),
    offsets: Sequence[int] | None = None,
    with_test_plugin: bool = False,
    config: Mapping[str, Any] | None = None,
    pod_groups: Sequence[Mapping[str, Any]] = (),
) -> Cluster:
    registry: Registry = default_registry()
    profile: dict[str, Any] = {
        "pluginConfig": [{"name": "DefaultPreemption", "args": dict(args or {})}]
    }
    if with_test_plugin:
        registry.register(PluginSpec("test-plugin", lambda _args, _handle: FailingRemovePlugin(),
                                     points=frozenset({"filter"})))
        profile["plugins"] = {"filter": {"enabled": [{"name": "test-plugin"}]}}
    ports = Ports()
    cfg = parse_config({**(config or {}), "profiles": [profile]}, registry)
    s = Scheduler(cfg, registry, binder=ports, reporter=ports, evictor=evictor, seed=1)
    for obj in nodes:
        s.cache.upsert_node(obj)
        s.known_nodes.add(obj["metadata"]["name"])
    for obj in pod_groups:
        s.pod_groups.upsert(POD_GROUPS, f"default/{obj['metadata']['name']}",
                            PARSERS[POD_GROUPS](obj))
    for obj in pods:
        s.cache.upsert_pod(info(obj))
        s.pods[obj["metadata"]["uid"]] = info(obj)
        s.pod_groups.pod_changed(None, info(obj))
    for obj in pdbs:
        s.cache.upsert_pdb(obj)
    for obj, node_name in nominated:
        s.pods[obj["metadata"]["uid"]] = info(obj)
        s.queue.nominator.add(info(obj), node_name)
    if offsets is not None:
        s.rng = FixedOffsets(offsets)  # type: ignore[assignment]
    return Cluster(s, ports, evictor)


def success(node_name: str, victims: int) -> tuple[PostFilterResult, Status]:
    message = (f"preemption: found a potential placement for pod on node {node_name}, "
               f"preempting {victims} victims")
    return PostFilterResult(node_name), Status(Code.SUCCESS, (message,))


def unschedulable(message: str) -> tuple[PostFilterResult, Status]:
    return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (f"preemption: {message}",))


# -- TestPostFilter -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "pdbs", "statuses", "want"),
    [
        pytest.param(
            p("p", prio=HIGH), [p("p1", on="node1")], [n("node1", ONE_POD)], [], {"node1": U},
            success("node1", 1),
            id="pod with higher priority can be made schedulable",
        ),
        pytest.param(
            p("p"), [p("p1", on="node1")], [n("node1", ONE_POD)], [], {"node1": U},
            unschedulable("0/1 nodes are available: 1 No preemption victims found for "
                          "incoming pod."),
            id="pod with tied priority is still unschedulable",
        ),
        pytest.param(
            p("p", prio=HIGH), [p("p1", on="node1")], [n("node1", ONE_POD)], [], {"node1": UU},
            unschedulable("0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
            id="preemption respects the node statuses: an unresolvable node is not a candidate",
        ),
        pytest.param(
            p("p", prio=HIGH), [p("p1", on="node1")], [n("node1", ONE_POD)], [], {},
            unschedulable("0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
            id="a node without a status counts as unschedulable and unresolvable",
        ),
        pytest.param(
            p("p", prio=MID),
            [p("p1", prio=HIGH, on="node1"), p("p2", prio=LOW, on="node2")],
            [n("node1", ONE_POD), n("node2", ONE_POD)], [], {"node1": U, "node2": U},
            success("node2", 1),
            id="pod can be made schedulable on the one node with a lower-priority pod",
        ),
        pytest.param(
            p("p", prio=VERY_HIGH),
            [
                p("p1", prio=HIGH, on="node1", labels={"pdb": "non-violating"}),
                p("p2", prio=LOW, on="node1", labels={"pdb": "violating"}),
                p("p3", prio=MID, on="node2", labels={"pdb": "violating"}),
            ],
            [n("node1", ONE_POD), n("node2", ONE_POD)],
            [pdb("violating-pdb", {"pdb": "violating"}, 0),
             pdb("non-violating-pdb", {"pdb": "non-violating"}, 2**31 - 1)],
            {"node1": U, "node2": U},
            success("node2", 1),
            id="with equal PDB violations the node whose highest victim priority is lowest wins",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1", on="node1"), p("p2", on="node2")],
            [n("node1", NODE_RES), n("node2", NODE_RES)], [], {"node1": U, "node2": U},
            unschedulable("0/2 nodes are available: 2 Insufficient cpu."),
            id="no candidate: not enough cpu even after removing every lower-priority pod",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1", prio=HIGH, on="node1"), p("p2", on="node2"), p("p3", prio=HIGH, on="node3")],
            [n("node1", ONE_POD), n("node2", NODE_RES), n("node3", ONE_POD)], [],
            {"node1": U, "node2": U, "node3": U},
            unschedulable("0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims "
                          "found for incoming pod."),
            id="no candidate with mixed reasons: no lower-priority pod, not enough cpu",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1", on="node1"), p("p2", on="node2")],
            [n("node1", NODE_RES), n("node2", NODE_RES), n("node3", NODE_RES),
             n("node4", NODE_RES)],
            [], {"node1": U, "node2": U, "node4": UU},
            unschedulable("0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not "
                          "helpful for scheduling."),
            id="no candidate: two nodes lack cpu, two are unresolvable or have no status",
        ),
    ],
)
def test_post_filter(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    statuses: dict[str, Code],
    want: tuple[PostFilterResult, Status],
) -> None:
    c = cluster(nodes, pods, pdbs=pdbs)
    assert c.post_filter(info(preemptor), statuses) == want


@pytest.mark.parametrize(
    ("pods", "nodes", "want"),
    [
        pytest.param(
            [p("p1", on="node1")], [n("node1", LARGE, error="true")],
            (None, Status(Code.ERROR, ('preemption: running "test-plugin" filter plugin: '
                                       "failed to remove pod: p",))),
            # Upstream: 'preemption: running RemovePod on PreFilter plugin "test-plugin":
            # failed to remove pod: p' (its error comes from PreFilterExtensions.RemovePod).
            id="the only node fails with an error: the error is returned, nomination untouched",
        ),
        pytest.param(
            [p("p1", on="node1"), p("p2", on="node2", res=MEDIUM)],
            [n("node1", LARGE, error="true"), n("node2", LARGE)],
            success("node2", 1),
            id="one node fails with an error, the other is still a valid candidate",
        ),
        pytest.param(
            [p("p1", on="node1", res=MEDIUM), p("p2", on="node2", res=MEDIUM)],
            [n("node1", LARGE, error="true"), n("node2", LARGE, error="true")],
            (None, Status(Code.ERROR, ('preemption: running "test-plugin" filter plugin: '
                                       "failed to remove pod: p",))),
            id="every node fails with the same error: reported once, as utilerrors does",
        ),
        pytest.param(
            [p("p1", on="node1")], [n("node1", VERY_LARGE)],
            (None, Status(Code.ERROR, ('preemption: expected at least one victim pod on node '
                                       '"node1"',))),
            id="a node that fits with every victim given back is an error, not a candidate",
        ),
    ],
)
def test_post_filter_errors(
    pods: list[dict[str, Any]], nodes: list[dict[str, Any]], want: tuple[Any, Status]
) -> None:
    c = cluster(nodes, pods, with_test_plugin=True)
    assert c.post_filter(info(p("p", prio=HIGH, res=LARGE))) == want


def test_aggregate_errors_lists_distinct_messages_in_brackets() -> None:
    assert aggregate_errors(["a"]) == "a"
    assert aggregate_errors(["a", "a"]) == "a"
    assert aggregate_errors(["a", "b", "a"]) == "[a, b]"


# -- TestDryRunPreemption -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "pdbs", "want"),
    [
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1", on="node1", prio=MID, res=LARGE), p("p2", on="node2", prio=MID, res=LARGE)],
            [n("node1"), n("node2")], [],
            {"node1": (["p1"], 0), "node2": (["p2"], 0)},
            id="a pod that fits on both nodes when lower priority pods are preempted",
        ),
        pytest.param(
            p("p", prio=LOW, res=LARGE),
            [p("p1", on="node1", prio=MID, res=LARGE), p("p2", on="node2", prio=MID, res=LARGE)],
            [n("node1"), n("node2")], [],
            {},
            id="other pods running are higher priority, no preemption would happen",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1.1", on="node1", prio=LOW, res=SMALL), p("p1.2", on="node1", prio=MID, res=LARGE),
             p("p2", on="node2", prio=MID, res=LARGE)],
            [n("node1"), n("node2")], [],
            {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
            id="medium priority pod is preempted, but the lower priority one stays as it is small",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1.1", on="node1", prio=MID, res=SMALL), p("p1.2", on="node1", prio=LOW, res=SMALL),
             p("p1.3", on="node1", prio=MID, res=MEDIUM),
             p("p1.4", on="node1", prio=HIGH, res=SMALL),
             p("p2", on="node2", prio=HIGH, res=LARGE)],
            [n("node1"), n("node2")], [],
            {"node1": (["p1.2", "p1.3"], 0)},
            id="mixed priority pods are preempted",
        ),
        pytest.param(
            p("p", prio=HIGH, res=LARGE),
            [p("p1.1", on="node1", prio=LOW, res=SMALL, start=5),
             p("p1.2", on="node1", prio=LOW, res=SMALL, start=4),
             p("p1.3", on="node1", prio=MID, res=MEDIUM, start=3),
             p("p1.4", on="node1", prio=HIGH, res=SMALL, start=2),
             p("p2", on="node2", prio=HIGH, res=LARGE, start=1)],
            [n("node1"), n("node2")], [],
            {"node1": (["p1.1", "p1.3"], 0)},
            id="mixed priority pods are preempted, the later started one when priorities are equal",
        ),
        pytest.param(
            p("p", prio=HIGH, res=SMALL, labels={"foo": ""}),
            [p("p1.1", on="node1", prio=LOW, res=SMALL, labels={"foo": ""},
               spec=anti_affinity("foo", "hostname")),
             p("p1.2", on="node1", prio=MID, res=SMALL),
             p("p1.3", on="node1", prio=HIGH, res=SMALL),
             p("p2", on="node2", prio=HIGH, res=SMALL)],
            [n("node1"), n("node2")], [],
            {"node1": (["p1.1"], 0)},
            id="a lower-priority pod whose anti-affinity rejects the preemptor is the victim",
        ),
        pytest.param(
            p("p", prio=HIGH, labels={"foo": ""}, spec=anti_affinity("foo", "hostname")),
            [p("web", on="node1", prio=LOW, labels={"foo": ""}),
             p("other", on="node1", prio=LOW),
             p("web2", on="node2", prio=HIGH, labels={"foo": ""})],
            [n("node1"), n("node2")], [],
            {"node1": (["web"], 0)},
            id="a best-effort pod blocking the preemptor's required anti-affinity is the victim",
        ),
        pytest.param(
            p("p", prio=HIGH, labels={"foo": ""}, spec=spread("zone", "hostname")),
            [p("pod-a1", on="node-a", prio=MID, labels={"foo": ""}),
             p("pod-a2", on="node-a", prio=LOW, labels={"foo": ""}),
             p("pod-b1", on="node-b", prio=LOW, labels={"foo": ""}),
             p("pod-x1", on="node-x", prio=HIGH, labels={"foo": ""}),
             p("pod-x2", on="node-x", prio=HIGH, labels={"foo": ""})],
            [n("node-a/zone1"), n("node-b/zone1"), n("node-x/zone2")], [],
            {"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)},
            id="preemption to resolve a pod topology spread filter failure",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"})],
            [n("node1")], [pdb(allowed=1)],
            {"node1": (["p1.1", "p1.2"], 1)},
            id="preemption with violation of the same pdb",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"})],
            [n("node1")], [pdb(allowed=1, disrupted=["p2"])],
            {"node1": (["p1.1", "p1.2"], 1)},
            id="pdb violation with a processed eviction of a pod that is not a victim",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"})],
            [n("node1")], [pdb(allowed=1, disrupted=["p1.2"])],
            {"node1": (["p1.1", "p1.2"], 0)},
            id="no pdb violation when the victim is already in the budget's DisruptedPods",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"}),
             p("p1.3", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"})],
            [n("node1")], [pdb(allowed=1, disrupted=["p1.3"])],
            {"node1": (["p1.1", "p1.2", "p1.3"], 1)},
            id="a victim in DisruptedPods is treated as non-violating, the others still count",
        ),
    ],
)
def test_dry_run_preemption(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    want: dict[str, tuple[list[str], int]],
) -> None:
    c = cluster(nodes, pods, pdbs=pdbs)
    assert c.dry_run(info(preemptor)) == want


FIVE_NODES = [n(f"node{i}") for i in range(1, 6)]


def five_pods(
    prio: Sequence[int] = (MID,) * 5, foo: Sequence[int] = ()
) -> list[dict[str, Any]]:
    return [p(f"p{i}", on=f"node{i}", prio=prio[i - 1], res=LARGE,
              labels={"app": "foo"} if i in foo else None)
            for i in range(1, 6)]


@pytest.mark.parametrize(
    ("args", "pods", "pdbs", "offsets", "want"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
            five_pods(), [], [4],
            [{"node5": (["p5"], 0), "node1": (["p1"], 0)}],
            id="all nodes are possible candidates, but the arguments limit them to 2",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
            five_pods((MID, VERY_HIGH, MID, MID, VERY_HIGH)), [], [4],
            [{"node1": (["p1"], 0), "node3": (["p3"], 0)}],
            id="some nodes are not possible candidates, the arguments limit them to 2",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
            five_pods(), [], [4, 1, 3],
            [{"node5": (["p5"], 0), "node1": (["p1"], 0)},
             {"node2": (["p2"], 0), "node3": (["p3"], 0)},
             {"node4": (["p4"], 0), "node5": (["p5"], 0)}],
            id="the offset changes across scheduling cycles and wraps around",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
            five_pods(foo=(1, 2, 5)), [pdb(allowed=0)], [4],
            # node5 and node1 violate the budget; node2 too but the violating list is full;
            # node3 is the first that does not, and ends the search.
            [{"node5": (["p5"], 1), "node1": (["p1"], 1), "node3": (["p3"], 0)}],
            id="the search looks past the wanted number until a non-PDB-violating node is found",
        ),
    ],
)
def test_dry_run_candidate_limits(
    args: dict[str, int],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    offsets: list[int],
    want: list[dict[str, tuple[list[str], int]]],
) -> None:
    # Upstream runs these with parallelism 1 to make them deterministic; our chunked dry run
    # stops where that sequential run stops, so no such switch is needed.
    c = cluster(FIVE_NODES, pods, pdbs=pdbs, args=args, offsets=offsets)
    got = [c.dry_run(info(p(f"tp{cycle}", prio=HIGH, res=LARGE))) for cycle in range(len(want))]
    assert got == want


@pytest.mark.parametrize(
    ("pods", "pdbs", "preemptor", "want"),
    [
        pytest.param(
            [p("victim", on="node1", prio=LOW, res=LARGE)], [], p("p", prio=HIGH, res=LARGE),
            (["victim"], 0),
            id="basic: preempt the single lower priority pod",
        ),
        pytest.param(
            [p("high-prio", on="node1", prio=HIGH, res=SMALL),
             p("mid-prio", on="node1", prio=MID, res=SMALL),
             p("low-prio", on="node1", prio=LOW, res=SMALL)],
            [], p("p", prio=HIGH, res=LARGE),
            (["low-prio"], 0),
            id="priority: the lower priority victim is preferred",
        ),
        pytest.param(
            [p("victim-pdb", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"}),
             p("victim-no-pdb", on="node1", prio=MID, res=MEDIUM)],
            [pdb(allowed=0)], p("p", prio=HIGH, res=LARGE),
            (["victim-no-pdb"], 0),
            id="PDB: a non-violating higher priority victim is preferred over a violating one",
        ),
        pytest.param(
            [p("v1", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"}),
             p("v2", on="node1", prio=MID, res=MEDIUM, labels={"app": "foo"})],
            [pdb(allowed=0)], p("p", prio=HIGH, res=LARGE),
            (["v1"], 1),
            id="PDB: the lower priority pod goes when no choice avoids a violation",
        ),
        pytest.param(
            [p("victim", on="node1", prio=HIGH)], [], p("p", prio=MID),
            "No preemption victims found for incoming pod",
            id="failure: the victim has a higher priority",
        ),
        pytest.param(
            [], [], p("p", prio=MID),
            "No preemption victims found for incoming pod",
            id="failure: the node is empty",
        ),
    ],
)
def test_select_victims_on_node(
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    preemptor: dict[str, Any],
    want: tuple[list[str], int] | str,
) -> None:
    c = cluster([n("node1")], pods, pdbs=pdbs)
    preemptor_info = info(preemptor)
    rows = c.s.snapshot.order()
    candidates, failed, errors = c.plugin.select_victims(
        c.prefiltered(preemptor_info), preemptor_info, c.s.snapshot, rows,
        list(c.s.snapshot.pdbs()),
    )
    assert not errors
    if isinstance(want, str):
        assert candidates == []
        assert [reason for _, reason in failed] == [want]
    else:
        assert [(sorted(v.name for v in cand.victims), cand.num_pdb_violations)
                for cand in candidates] == [want]


G = in_group


@pytest.mark.parametrize(
    ("groups", "pods", "pdbs", "preemptor", "want"),
    [
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("g1-1", on="node1", prio=LOW, res=SMALL, spec=G("pg1")),
             p("g1-2", on="node1", prio=LOW, res=MEDIUM, spec=G("pg1"))],
            [], p("p", prio=HIGH, res=LARGE), (["g1-1", "g1-2"], 0),
            id="Workload Aware: Atomic preemption of PodGroup",
        ),
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("p1", on="node1", prio=LOW, res=SMALL),
             p("g1-1", on="node1", prio=LOW, res=SMALL, spec=G("pg1")),
             p("g1-2", on="node1", prio=LOW, res=SMALL, spec=G("pg1"))],
            [], p("p", prio=HIGH, res=LARGE), (["p1"], 0),
            id="Workload Aware: prefer single pod over podGroup for preemption candidate",
        ),
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("p1", on="node1", prio=HIGH, res=MEDIUM),
             p("g1-1", on="node1", prio=LOW, res=MEDIUM, spec=G("pg1"))],
            [], p("p", prio=VERY_HIGH, res=LARGE), (["g1-1"], 0),
            id="Workload Aware: preempt lower priority pod group instead of higher priority "
               "single pod",
        ),
        pytest.param(
            [pod_group("pg1", HIGH)],
            [p("p1", on="node1", prio=LOW, res=MEDIUM),
             p("g1-1", on="node1", prio=HIGH, res=MEDIUM, spec=G("pg1"))],
            [], p("p", prio=VERY_HIGH, res=LARGE), (["p1"], 0),
            id="Workload Aware: preempt lower priority single pod instead of higher priority "
               "pod group",
        ),
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("g1-1", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"}, spec=G("pg1")),
             p("g1-2", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"}, spec=G("pg1"))],
            [pdb(allowed=0)], p("p", prio=HIGH, res=LARGE), (["g1-1", "g1-2"], 2),
            id="Workload Aware: PDB: PodGroup as victim with 2 PDB violations",
        ),
        pytest.param(
            [pod_group("pg-violating", LOW), pod_group("pg-non-violating", MID)],
            [p("g1-1", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"},
               spec=G("pg-violating")),
             p("g2-1", on="node1", prio=MID, res=MEDIUM, spec=G("pg-non-violating"))],
            [pdb(allowed=0)], p("p", prio=HIGH, res=LARGE), (["g2-1"], 0),
            id="Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority "
               "violating PodGroup (DisruptionModeAll)",
        ),
        pytest.param(
            [pod_group("pg-violating", LOW, mode="single"),
             pod_group("pg-non-violating", MID, mode="single")],
            [p("g1-1", on="node1", prio=LOW, res=MEDIUM, labels={"app": "foo"},
               spec=G("pg-violating")),
             p("g2-1", on="node1", prio=MID, res=MEDIUM, spec=G("pg-non-violating"))],
            [pdb(allowed=0)], p("p", prio=HIGH, res=LARGE), (["g2-1"], 0),
            id="Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority "
               "violating PodGroup (DisruptionModeSingle)",
        ),
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("pod-a", on="node-a", prio=LOW, res=LARGE, spec=G("pg1")),
             p("pod-b", on="node-b", prio=LOW, res=LARGE, spec=G("pg1"))],
            [], p("p", prio=HIGH, res=LARGE), (["pod-a", "pod-b"], 0),
            id="Cross-node PodGroup: whole pod group across multiple nodes expected to be "
               "preempted",
        ),
        pytest.param(
            [pod_group("pg1", LOW)],
            [p("g1-1", on="node1", prio=HIGH, res=LARGE, spec=G("pg1"))],
            [], p("p", prio=MID, res=LARGE), (["g1-1"], 0),
            id="GetPodPriority: a victim counts at its PodGroup's priority, not its own",
        ),
    ],
)
def test_select_victims_on_node_workload_aware(
    groups: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    preemptor: dict[str, Any],
    want: tuple[list[str], int],
) -> None:
    """TestSelectVictimsOnNode's GenericWorkload cases: a ``disruptionMode: All`` group is
    one victim (with its pods on other nodes), a group's pod has its group's priority."""
    nodes = sorted({obj["spec"]["nodeName"] for obj in pods})
    c = cluster([n(name) for name in nodes], pods, pdbs=pdbs, pod_groups=groups)
    preemptor_info = info(preemptor)
    main = c.s.snapshot.row_of(nodes[0])
    assert main is not None
    candidates, failed, errors = c.plugin.select_victims(
        c.prefiltered(preemptor_info), preemptor_info, c.s.snapshot,
        np.asarray([main], dtype=np.int64), list(c.s.snapshot.pdbs()),
    )
    assert not errors and not failed, (errors, failed)
    assert [(sorted(v.name for v in cand.victims), cand.num_pdb_violations)
            for cand in candidates] == [want]


ZONE1_AB = ("node-a/zone1", "node-b/zone1")
ZONE_AB_C = ("node-a/zone1", "node-b/zone1", "node-c/zone2")
FOO = {"foo": ""}


@pytest.mark.parametrize(
    ("nodes", "main", "pods", "preemptor", "want"),
    [
        pytest.param(
            ZONE1_AB, "node-a",
            [p("pod-x", on="node-a", prio=LOW, spec=G("pg1")),
             p("pod-y", on="node-b", prio=LOW, labels=FOO, spec=G("pg1"))],
            p("p", prio=HIGH, spec=anti_affinity("foo", "zone")), (["pod-x", "pod-y"], 0),
            id="Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension "
               "on node-a",
        ),
        pytest.param(
            ZONE1_AB, "node-b",
            [p("pod-x", on="node-a", prio=LOW, spec=G("pg1")),
             p("pod-y", on="node-b", prio=LOW, labels=FOO, spec=G("pg1"))],
            p("p", prio=HIGH, spec=anti_affinity("foo", "zone")), (["pod-x", "pod-y"], 0),
            id="Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension "
               "on node-b",
        ),
        pytest.param(
            # Upstream's SelectVictimsOnNode answers Success with no victims; its caller,
            # DryRunPreemption, turns that into this error, and ours does both at once.
            ZONE1_AB, "node-a",
            [p("pod-x", on="node-a", prio=LOW, spec=G("pg1")),
             p("pod-y", on="node-b", prio=LOW, spec=G("pg1"))],
            p("p", prio=HIGH, spec=anti_affinity("foo", "zone")),
            'expected at least one victim pod on node "node-a"',
            id="Cross-node PodGroup: zone anti-affinity reprieve succeeds when remote pod "
               "lacks constraint label (negative control)",
        ),
        pytest.param(
            ZONE_AB_C, "node-a",
            [p("pod-a", on="node-a", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-b", on="node-b", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-c", on="node-c", prio=VERY_HIGH, labels=FOO)],
            p("p", prio=HIGH, labels=FOO, spec=spread("zone")), (["pod-a", "pod-b"], 0),
            id="Cross-node PodGroup: topology spread blocks reprieve via PreFilterExtension "
               "on node-a",
        ),
        pytest.param(
            ZONE_AB_C, "node-c",
            [p("pod-a", on="node-a", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-b", on="node-b", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-c", on="node-c", prio=VERY_HIGH, labels=FOO)],
            p("p", prio=HIGH, labels=FOO, spec=spread("zone")),
            "No preemption victims found for incoming pod",
            id="Cross-node PodGroup: topology spread blocks reprieve via PreFilterExtension "
               "on node-c",
        ),
        pytest.param(
            # Beyond upstream's table: the group's pods on node-b alone keep zone1 two over
            # zone2, so only removing them too lets the preemptor onto node-a.
            ZONE_AB_C, "node-a",
            [p("pod-a", on="node-a", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-b", on="node-b", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-b2", on="node-b", prio=LOW, labels=FOO, spec=G("pg1")),
             p("pod-c", on="node-c", prio=VERY_HIGH, labels=FOO)],
            p("p", prio=HIGH, labels=FOO, spec=spread("zone")),
            (["pod-a", "pod-b", "pod-b2"], 0),
            id="Cross-node PodGroup: topology spread fits only with the remote pods removed",
        ),
        pytest.param(
            # Beyond upstream's table: a plain victim on node-a is reprieved (the group's
            # removal is enough), and the group, given back with its remote pod, is not.
            ZONE1_AB, "node-a",
            [p("pod-x", on="node-a", prio=LOW, spec=G("pg1")),
             p("pod-y", on="node-b", prio=LOW, labels=FOO, spec=G("pg1")),
             p("lone", on="node-a", prio=MID)],
            p("p", prio=HIGH, spec=anti_affinity("foo", "zone")), (["pod-x", "pod-y"], 0),
            id="Cross-node PodGroup: a lone pod is reprieved, the group's remote pod is not",
        ),
    ],
)
def test_select_victims_on_node_cross_node_pod_group(
    nodes: Sequence[str], main: str, pods: list[dict[str, Any]], preemptor: dict[str, Any],
    want: tuple[list[str], int] | str,
) -> None:
    """TestSelectVictimsOnNode's "Cross-node PodGroup" cases (upstream registers only
    NodeResourcesFit and the plugin under test; ours runs the default profile): the pods of a
    ``disruptionMode: All`` group on other nodes than ``main`` count as removed for
    InterPodAffinity and PodTopologySpread, as upstream's PreFilterExtensions RemovePod and
    AddPod see them."""
    c = cluster([n(name) for name in nodes], pods, pod_groups=[pod_group("pg1", LOW)])
    preemptor_info = info(preemptor)
    row = c.s.snapshot.row_of(main)
    assert row is not None
    candidates, failed, errors = c.plugin.select_victims(
        c.prefiltered(preemptor_info), preemptor_info, c.s.snapshot,
        np.asarray([row], dtype=np.int64), list(c.s.snapshot.pdbs()),
    )
    if isinstance(want, str):
        assert candidates == []
        assert errors + [reason for _, reason in failed] == [want]
    else:
        assert not errors and not failed, (errors, failed)
        assert [(sorted(v.name for v in cand.victims), cand.num_pdb_violations)
                for cand in candidates] == [want]


def test_cross_node_pod_group_removal_holds_in_the_pass_with_nominated_pods() -> None:
    """RunFilterPluginsWithNominatedPods runs twice on a node with nominated pods of equal or
    higher priority; the group's pods on other nodes stay removed in both passes (the view
    with the nominated pods added keeps them)."""
    pods = [p("pod-x", on="node-a", prio=LOW, spec=G("pg1")),
            p("pod-y", on="node-b", prio=LOW, labels=FOO, spec=G("pg1"))]
    c = cluster([n(name) for name in ZONE1_AB], pods, pod_groups=[pod_group("pg1", LOW)],
                nominated=[(p("nominee", prio=VERY_HIGH), "node-a")])
    preemptor = info(p("p", prio=HIGH, spec=anti_affinity("foo", "zone")))
    row = c.s.snapshot.row_of("node-a")
    assert row is not None
    candidates, failed, errors = c.plugin.select_victims(
        c.prefiltered(preemptor), preemptor, c.s.snapshot,
        np.asarray([row], dtype=np.int64), list(c.s.snapshot.pdbs()),
    )
    assert not errors and not failed, (errors, failed)
    assert [sorted(v.name for v in cand.victims) for cand in candidates] == [["pod-x", "pod-y"]]


@pytest.mark.parametrize(
    ("groups", "pods", "want"),
    [
        pytest.param(
            [], [p("p1", on="node1", prio=MID), p("p2", on="node1", prio=LOW)],
            [(["p1"], MID, POD), (["p2"], LOW, POD)],
            id="GenericWorkload enabled, pods with no PodGroup",
        ),
        pytest.param(
            [pod_group("pg1", MID)],
            [p("p1", on="node1", prio=MID, spec=G("pg1")),
             p("p2", on="node2", prio=MID, spec=G("pg1")), p("p3", on="node1", prio=LOW)],
            [(["p1", "p2"], MID, POD_GROUP), (["p3"], LOW, POD)],
            id="GenericWorkload enabled, pod belonging to PodGroup with disruptionMode All",
        ),
        pytest.param(
            [pod_group("pg1", MID, mode="single")],
            [p("p1", on="node1", prio=LOW, spec=G("pg1")),
             p("p2", on="node2", prio=LOW, spec=G("pg1")),
             p("p3", on="node1", prio=LOW, spec=G("pg1")), p("p4", on="node1", prio=LOW)],
            [(["p1"], MID, POD_GROUP), (["p3"], MID, POD_GROUP), (["p4"], LOW, POD)],
            id="GenericWorkload enabled, pods belonging to PodGroup with disruptionMode Single",
        ),
        pytest.param(
            [pod_group("pg-all", HIGH), pod_group("pg-single", MID, mode="single")],
            [p("p-all-1", on="node1", prio=HIGH, spec=G("pg-all")),
             p("p-all-2", on="node2", prio=HIGH, spec=G("pg-all")),
             p("p-single-1", on="node1", prio=LOW, spec=G("pg-single")),
             p("p-single-2", on="node2", prio=LOW, spec=G("pg-single")),
             p("p-ind", on="node1", prio=LOW)],
            [(["p-all-1", "p-all-2"], HIGH, POD_GROUP), (["p-single-1"], MID, POD_GROUP),
             (["p-ind"], LOW, POD)],
            id="GenericWorkload enabled, mixed test with individual pods, PodGroup with "
               "DisruptionMode Single, and PodGroup with DisruptionMode All",
        ),
    ],
)
def test_get_victims_on_node(
    groups: list[dict[str, Any]], pods: list[dict[str, Any]],
    want: list[tuple[list[str], int, str]],
) -> None:
    """preemption_test.go TestGetVictimsOnNode (GenericWorkload on, CompositePodGroup off):
    the victims a single pod's preemption sees on node1."""
    nodes = sorted({obj["spec"]["nodeName"] for obj in pods})
    c = cluster([n(name) for name in nodes], pods, pod_groups=groups)
    row = c.s.snapshot.row_of("node1")
    assert row is not None
    victims = victims_among(c.s.snapshot.pods_on(row), c.s.pod_groups)
    got = sorted((sorted(q.name for q in v.pods), v.priority, v.kind) for v in victims)
    assert got == sorted(want)


def test_design_doc_example_only_the_pod_that_must_go_is_a_victim() -> None:
    # The preemption design doc: capacity 10; preemptor priority 10 asks for 5; pods of
    # priority 0..3 use 3, 1, 5 and 1. Reprieving from the most important down, only the
    # priority-2 pod cannot be given back.
    pods = [p(f"prio{i}", on="node1", prio=i, res={"cpu": str(cpu), "memory": "1"})
            for i, cpu in enumerate((3, 1, 5, 1))]
    c = cluster([n("node1", {"cpu": "10", "memory": "100"})], pods)
    preemptor = info(p("p", prio=10, res={"cpu": "5", "memory": "1"}))
    assert c.dry_run(preemptor) == {"node1": (["prio2"], 0)}


# -- nominated pods keep their reservation ------------------------------------------------
@pytest.mark.parametrize(
    ("nominated_priority", "want"),
    [
        pytest.param(
            HIGH, unschedulable("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient "
                                "memory."),
            id="a nominated pod of equal priority keeps its room: no candidate",
        ),
        pytest.param(
            VERY_HIGH, unschedulable("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient "
                                     "memory."),
            id="a nominated pod of higher priority keeps its room: no candidate",
        ),
        pytest.param(
            MID, success("node1", 1),
            id="a nominated pod of lower priority does not count: the victim makes room",
        ),
    ],
)
def test_nominated_pods_in_the_dry_run(
    nominated_priority: int, want: tuple[PostFilterResult, Status]
) -> None:
    c = cluster(
        [n("node1")], [p("victim", on="node1", prio=LOW, res=LARGE)],
        nominated=[(p("nominee", prio=nominated_priority, res=LARGE), "node1")],
    )
    assert c.post_filter(info(p("p", prio=HIGH, res=LARGE))) == want


# -- TestSelectBestCandidate / pickOneNodeForPreemption -------------------------------------
NODES3 = ["node1", "node2", "node3"]


@pytest.mark.parametrize(
    ("node_names", "preemptor", "pods", "want"),
    [
        pytest.param(
            ["node1", "node2"], p("p", prio=HIGH, res=LARGE),
            [p("p1", on="node1", prio=MID, res=LARGE, start=0),
             p("p2", on="node2", prio=MID, res=LARGE, start=0)],
            {"node1", "node2"},
            id="a pod that fits on both nodes when lower priority pods are preempted",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, start=0),
             p("p1.2", on="node1", prio=MID, res=LARGE, start=0),
             p("p2.1", on="node2", prio=MID, res=MEDIUM, start=0),
             p("p2.2", on="node2", prio=LOW, res=MEDIUM, start=0),
             p("p3.1", on="node3", prio=LOW, res=MEDIUM, start=0),
             p("p3.2", on="node3", prio=LOW, res=MEDIUM, start=0)],
            {"node3"},
            id="the node whose highest victim priority is lowest is picked",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, start=0),
             p("p1.2", on="node1", prio=MID, res=LARGE, start=0),
             p("p2.1", on="node2", prio=MID, res=LARGE, start=0),
             p("p2.2", on="node2", prio=LOW, res=MEDIUM, start=0),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=0),
             p("p3.2", on="node3", prio=MID, res=MEDIUM, start=0)],
            {"node2"},
            id="with equal highest priorities the smallest sum of priorities is picked",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=SMALL, start=0),
             p("p1.2", on="node1", prio=NEG, res=SMALL, start=0),
             p("p1.3", on="node1", prio=MID, res=SMALL, start=0),
             p("p1.4", on="node1", prio=NEG, res=SMALL, start=0),
             p("p2.1", on="node2", prio=MID, res=LARGE, start=0),
             p("p2.2", on="node2", prio=NEG, res=MEDIUM, start=0),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=0),
             p("p3.2", on="node3", prio=NEG, res=SMALL, start=0),
             p("p3.3", on="node3", prio=LOW, res=SMALL, start=0)],
            {"node2"},
            id="with equal highest priority and sum the fewest victims are picked",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=SMALL, start=0),
             p("p1.2", on="node1", prio=NEG, res=SMALL, start=0),
             p("p1.3", on="node1", prio=NEG, res=SMALL, start=0),
             p("p2.1", on="node2", prio=MID, res=LARGE, start=0),
             p("p2.2", on="node2", prio=NEG, res=MEDIUM, start=0),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=0),
             p("p3.2", on="node3", prio=NEG, res=SMALL, start=0),
             p("p3.3", on="node3", prio=LOW, res=SMALL, start=0)],
            {"node2"},
            id="the sum of priorities is taken over priorities shifted to be non-negative",
        ),
        pytest.param(
            ["node1", "node2", "node3", "node4"], p("p", prio=VERY_HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=SMALL, start=0),
             p("p1.2", on="node1", prio=LOW, res=SMALL, start=0),
             p("p1.3", on="node1", prio=LOW, res=SMALL, start=0),
             p("p2.1", on="node2", prio=HIGH, res=LARGE, start=0),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=0),
             p("p3.2", on="node3", prio=LOW, res=SMALL, start=0),
             p("p3.3", on="node3", prio=LOW, res=SMALL, start=0),
             p("p3.4", on="node3", prio=LOW, res=MEDIUM, start=0),
             p("p4.1", on="node4", prio=MID, res=MEDIUM, start=0),
             p("p4.2", on="node4", prio=MID, res=SMALL, start=0),
             p("p4.3", on="node4", prio=MID, res=SMALL, start=0),
             p("p4.4", on="node4", prio=NEG, res=SMALL, start=0)],
            {"node1"},
            id="non-overlapping lowest high priority, sum of priorities and number of pods",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, start=2),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, start=2),
             p("p2.1", on="node2", prio=MID, res=MEDIUM, start=3),
             p("p2.2", on="node2", prio=MID, res=MEDIUM, start=3),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=1),
             p("p3.2", on="node3", prio=MID, res=MEDIUM, start=1)],
            {"node2"},
            id="same priority and number of victims, different start time per node",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=MID, res=MEDIUM, start=4),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, start=2),
             p("p2.1", on="node2", prio=MID, res=MEDIUM, start=5),
             p("p2.2", on="node2", prio=MID, res=MEDIUM, start=1),
             p("p3.1", on="node3", prio=MID, res=MEDIUM, start=3),
             p("p3.2", on="node3", prio=MID, res=MEDIUM, start=6)],
            {"node3"},
            id="same priority and number of victims, different start time for every pod",
        ),
        pytest.param(
            NODES3, p("p", prio=HIGH, res=VERY_LARGE),
            [p("p1.1", on="node1", prio=LOW, res=MEDIUM, start=4),
             p("p1.2", on="node1", prio=MID, res=MEDIUM, start=2),
             p("p2.1", on="node2", prio=MID, res=MEDIUM, start=6),
             p("p2.2", on="node2", prio=LOW, res=MEDIUM, start=1),
             p("p3.1", on="node3", prio=LOW, res=MEDIUM, start=3),
             p("p3.2", on="node3", prio=MID, res=MEDIUM, start=5)],
            {"node2"},
            id="different priorities, latest start among the highest-priority victims wins",
        ),
    ],
)
def test_select_best_candidate(
    node_names: list[str],
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    want: set[str],
) -> None:
    c = cluster([n(name) for name in node_names], pods)
    result, status = c.post_filter(info(preemptor))
    assert status.is_success(), status
    assert result is not None and result.nominated_node_name in want


def candidate(node_name: str, *victims: tuple[int, int | None], violations: int = 0) -> Candidate:
    """A candidate whose victims are (priority, start second or None), most important first."""
    pods = [info(p(f"{node_name}-v{i}", on=node_name, prio=prio, start=start))
            for i, (prio, start) in enumerate(victims)]
    return Candidate(0, node_name, pods, violations)


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        pytest.param(
            [candidate("a", (MID, 0), violations=1), candidate("b", (HIGH, 0), (HIGH, 0))],
            "b", id="fewest PDB violations first, whatever the priorities",
        ),
        pytest.param(
            [candidate("a", (MID, 0)), candidate("b", (LOW, 0), (LOW, 0), (LOW, 0))],
            "b", id="then the lowest highest victim priority",
        ),
        pytest.param(
            [candidate("a", (MID, 0), (NEG, 0), (NEG, 0)), candidate("b", (MID, 0), (NEG, 0))],
            "b", id="then the smallest sum of shifted priorities (negative ones count as small)",
        ),
        pytest.param(
            [candidate("a", (MID, 5), (MID, 1)), candidate("b", (MID, 2), (MID, 3))],
            "b", id="then the latest earliest start among the highest-priority victims",
        ),
        pytest.param(
            [candidate("a", (MID, 5), (LOW, 9)), candidate("b", (MID, None), (LOW, 0))],
            "b", id="a victim that has not started counts as the latest",
        ),
        pytest.param(
            [candidate("a", (MID, 1)), candidate("b", (MID, 1)), candidate("c", (MID, 1))],
            "a", id="on a full tie the first candidate is picked",
        ),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], want: str) -> None:
    assert select_candidate(candidates).node == want


# -- TestPodEligibleToPreemptOthers ---------------------------------------------------------
TERMINATING_VICTIM = p("p1", on="node1", prio=LOW, terminating=True, conditions=[PREEMPTED])


@pytest.mark.parametrize(
    ("preemptor", "pods", "nominator", "nominated_status", "want"),
    [
        pytest.param(
            p("p", prio=HIGH, nominated="node1"),
            [p("p1", on="node1", prio=LOW, terminating=True)], "", UU, "",
            id="nominated node unresolvable with a terminating pod there: eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, nominated="node1"), [TERMINATING_VICTIM], "", UU, "",
            id="nominated node unresolvable, even with a preemption victim terminating there",
        ),
        pytest.param(
            p("p", prio=HIGH), [], "", U, "",
            id="pod without nominated node: eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, spec={"preemptionPolicy": "Never"}), [], "", U,
            "not eligible due to preemptionPolicy=Never.",
            id="pod with preemptionPolicy Never: not eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, nominated="node1"), [TERMINATING_VICTIM], "", U,
            "not eligible due to a terminating pod on the nominated node.",
            id="a victim terminating with the DisruptionTarget condition: not eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, nominated="node1"),
            [p("p1", on="node1", prio=LOW, terminating=True)], "", U, "",
            id="non-victim pods terminating (no DisruptionTarget condition): eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, nominated="node1"),
            [p("p1", on="node1", prio=LOW, terminating=True,
               conditions=[{**PREEMPTED, "reason": "EvictionByEvictionAPI"}])], "", U, "",
            id="a pod terminating after an eviction by someone else: eligible",
        ),
        pytest.param(
            p("p", prio=HIGH, nominated="node1"),
            [p("p1", on="node1", prio=HIGH, terminating=True, conditions=[PREEMPTED])], "", U, "",
            id="a terminating preemption victim of equal priority is not ours: eligible",
        ),
        pytest.param(
            p("p", prio=HIGH), [TERMINATING_VICTIM], "node1", U,
            "not eligible due to a terminating pod on the nominated node.",
            id="a nomination still only in memory counts as the nominated node",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nominator: str,
    nominated_status: Code,
    want: str,
) -> None:
    # Deviation: upstream reads status.nominatedNodeName only; we also read the in-memory
    # nominator, which runs ahead of the asynchronous status patch.
    c = cluster([n("node1", ONE_POD)], pods)
    pod_info = c.watched(info(preemptor))
    if nominator:
        c.s.queue.nominator.add(pod_info, nominator)
    result, status = c.post_filter(pod_info, {"node1": nominated_status})
    if want:
        assert (result, status) == (None, Status(Code.UNSCHEDULABLE, (f"preemption: {want}",)))
    else:
        assert "not eligible" not in status.message


# -- arguments --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pct", "absolute", "num_nodes", "want"),
    [
        pytest.param(10, 100, 5000, 500, id="10 percent of 5000 nodes is above the absolute 100"),
        pytest.param(10, 100, 500, 100, id="the absolute minimum wins over a smaller percentage"),
        pytest.param(10, 100, 50, 50, id="never more candidates than nodes"),
        pytest.param(40, 1, 5, 2, id="40 percent of 5 nodes rounds down to 2"),
        pytest.param(0, 3, 10, 3, id="percentage 0 leaves the absolute minimum"),
        pytest.param(100, 0, 7, 7, id="100 percent is every node"),
    ],
)
def test_num_candidates(pct: int, absolute: int, num_nodes: int, want: int) -> None:
    c = cluster([n("node1")], args={"minCandidateNodesPercentage": pct,
                                    "minCandidateNodesAbsolute": absolute})
    assert c.plugin.num_candidates(num_nodes) == want


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage",
                     id="percentage above 100 is rejected"),
        pytest.param({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute",
                     id="negative absolute is rejected"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
                     "cannot both be 0", id="both minimums 0 is rejected"),
        pytest.param({"pdbMode": "Sometimes"}, "pdbMode", id="unknown pdbMode is rejected"),
        pytest.param({"victimScope": "Mine"}, "victimScope", id="unknown victimScope is rejected"),
        pytest.param({"extra": 1}, "extra: unknown field", id="unknown field is rejected"),
        # YAML's true is not the integer 1 (upstream decodes into int32 and refuses it).
        pytest.param({"minCandidateNodesPercentage": True}, "minCandidateNodesPercentage",
                     id="a boolean percentage is rejected"),
        pytest.param({"minCandidateNodesAbsolute": True}, "minCandidateNodesAbsolute",
                     id="a boolean absolute minimum is rejected"),
    ],
)
def test_validate_args(args: dict[str, Any], error: str) -> None:
    merged = {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100,
              "pdbMode": "BestEffort", "victimScope": "All", **args}
    assert DP_SPEC.validate is not None
    with pytest.raises(ConfigError, match=error):
        DP_SPEC.validate(merged, "args")


def test_validate_args_reports_every_problem() -> None:
    """validation_pluginargs.go ValidateDefaultPreemptionArgs, with v1's defaults."""
    assert DP_SPEC.default_args == {"minCandidateNodesPercentage": 10,
                                    "minCandidateNodesAbsolute": 100,
                                    "pdbMode": "BestEffort", "victimScope": "All"}
    assert DP_SPEC.validate is not None
    with pytest.raises(ConfigError) as excinfo:
        DP_SPEC.validate({"minCandidateNodesPercentage": True, "minCandidateNodesAbsolute": 100,
                          "pdbMode": "Never", "victimScope": "All", "extra": 1}, "A")
    assert str(excinfo.value).splitlines() == [
        "A.extra: unknown field",
        "A.minCandidateNodesPercentage: must be in [0, 100]",
        "A.pdbMode: must be BestEffort or Strict",
    ]


# -- filterPodsWithPDBViolation ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("victims", "pdbs", "want"),
    [
        pytest.param([], [], ([], []), id="no victims, no PDBs"),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(selector={"app": "bar"})],
            (["p1"], [""]), id="victim with no matching PDB",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(selector={"app": "foo"}, namespace="other")],
            (["p1"], [""]), id="a PDB of another namespace does not match",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(allowed=1)],
            (["p1"], [""]), id="victim matching a PDB with adequate DisruptionsAllowed",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(allowed=0)],
            (["p1"], ["default/pdb"]), id="victim matching a PDB with no DisruptionsAllowed",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"}), p("p2", labels={"app": "foo"})], [pdb(allowed=1)],
            (["p2", "p1"], ["default/pdb", ""]),
            id="multiple victims of one PDB: the one beyond the budget violates, and goes first",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(allowed=0, disrupted=["p1"])],
            (["p1"], [""]), id="a pod in DisruptedPods is ignored",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo"})], [pdb(selector={}, allowed=0)],
            (["p1"], [""]), id="a PDB with an empty selector matches nothing",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo", "tier": "backend"})],
            [pdb("a", {"app": "foo"}, 1), pdb("b", {"tier": "backend"}, 0)],
            (["p1"], ["default/b"]), id="multiple PDBs: one exhausted budget is enough",
        ),
        pytest.param(
            [p("p1", labels={"app": "foo", "tier": "backend"}),
             p("p2", labels={"tier": "backend"})],
            [pdb("a", {"app": "foo"}, 0), pdb("b", {"tier": "backend"}, 1)],
            (["p1", "p2"], ["default/a", ""]),
            id="a victim is not charged to the budgets after the first one it violates",
        ),
    ],
)
def test_split_by_pdb(
    victims: list[dict[str, Any]], pdbs: list[dict[str, Any]], want: tuple[list[str], list[str]]
) -> None:
    pods = [info(v) for v in victims]
    order, budgets = split_by_pdb(pods, [DisruptionBudget.from_object(b) for b in pdbs])
    assert ([pods[k].name for k in order], budgets) == want


# -- pdbMode and victimScope (beyond upstream) ------------------------------------------------
@pytest.mark.parametrize(
    ("args", "pods", "nodes", "pdbs", "want"),
    [
        pytest.param(
            {}, [p("v", on="node1", prio=LOW, res=LARGE, labels={"app": "foo"})],
            [n("node1", LARGE)], [pdb(allowed=0)], success("node1", 1),
            id="BestEffort violates a budget when there is no other way",
        ),
        pytest.param(
            {"pdbMode": "Strict"}, [p("v", on="node1", prio=LOW, res=LARGE, labels={"app": "foo"})],
            [n("node1", LARGE)], [pdb(allowed=0)],
            unschedulable("0/1 nodes are available: 1 preemption would violate "
                          "PodDisruptionBudget default/pdb."),
            id="Strict never violates a budget and names it",
        ),
        pytest.param(
            {"pdbMode": "Strict"}, [p("v", on="node1", prio=LOW, res=LARGE, labels={"app": "foo"})],
            [n("node1", LARGE)], [pdb(allowed=1)], success("node1", 1),
            id="Strict preempts within the budget's allowance",
        ),
        pytest.param(
            {"pdbMode": "Strict"},
            [p("v1", on="node1", prio=LOW, res=LARGE, labels={"app": "foo"}),
             p("v2", on="node2", prio=MID, res=LARGE)],
            [n("node1", LARGE), n("node2", LARGE)], [pdb(allowed=0)], success("node2", 1),
            id="Strict takes the node without a violation, though its victim is more important",
        ),
        pytest.param(
            {"pdbMode": "Strict"},
            [p("keep", on="node1", prio=LOW, res=SMALL, labels={"app": "foo"}),
             p("v", on="node1", prio=MID, res=MEDIUM)],
            [n("node1", VERY_LARGE)], [pdb(allowed=0)], success("node1", 1),
            id="Strict keeps the protected pod when removing another one is enough",
        ),
        pytest.param(
            {"victimScope": "OwnProfiles"},
            [p("v", on="node1", prio=LOW, res=LARGE, scheduler="default-scheduler")],
            [n("node1", LARGE)], [],
            unschedulable("0/1 nodes are available: 1 No preemption victims found for "
                          "incoming pod."),
            id="OwnProfiles never preempts a pod of another scheduler",
        ),
        pytest.param(
            {"victimScope": "OwnProfiles"}, [p("v", on="node1", prio=LOW, res=LARGE)],
            [n("node1", LARGE)], [], success("node1", 1),
            id="OwnProfiles preempts a pod of this scheduler's profiles",
        ),
        pytest.param(
            {}, [p("v", on="node1", prio=LOW, res=LARGE, scheduler="default-scheduler")],
            [n("node1", LARGE)], [], success("node1", 1),
            id="the default scope All preempts a pod of another scheduler",
        ),
    ],
)
def test_pdb_mode_and_victim_scope(
    args: dict[str, str],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    want: tuple[PostFilterResult, Status],
) -> None:
    c = cluster(nodes, pods, pdbs=pdbs, args=args)
    assert c.post_filter(info(p("p", prio=HIGH, res=LARGE))) == want


# -- the whole cycle: FailedScheduling message and nomination ---------------------------------
BASIC_NODES = [n("node1"), n("node2"), n("node3")]
BASIC_PODS = [
    p("p1.1", on="node1", prio=LOW, res=SMALL),
    p("p1.2", on="node1", prio=LOW, res=SMALL),
    p("p2.1", on="node2", prio=HIGH, res=LARGE),
    p("p3.1", on="node3", prio=MID, res=MEDIUM),
]
FULL = "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory."


@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "want_message", "want_nomination"),
    [
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE), BASIC_PODS, BASIC_NODES,
            f"{FULL} preemption: found a potential placement for pod on node node1, "
            "preempting 2 victims",
            "node1",
            # Upstream keeps the PostFilter message after the FitError, success included.
            id="basic preemption logic: the message ends with the placement found",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE, spec={"preemptionPolicy": "PreemptLowerPriority"}),
            BASIC_PODS, BASIC_NODES,
            f"{FULL} preemption: found a potential placement for pod on node node1, "
            "preempting 2 victims",
            "node1",
            id="preemptionPolicy PreemptLowerPriority preempts as the default does",
        ),
        pytest.param(
            p("p", prio=HIGH, res=VERY_LARGE, spec={"preemptionPolicy": "Never"}),
            BASIC_PODS, BASIC_NODES,
            f"{FULL} preemption: not eligible due to preemptionPolicy=Never.",
            None,
            id="no preempting in pod: the nomination is left alone",
        ),
        pytest.param(
            p("p", prio=HIGH, labels={"foo": ""}, spec=spread("zone", "hostname")),
            [p("p-a1", on="node-a", prio=HIGH, labels={"foo": ""}),
             p("p-a2", on="node-a", prio=HIGH, labels={"foo": ""}),
             p("p-b1", on="node-b", prio=LOW, labels={"foo": ""}),
             p("p-x1", on="node-x", prio=HIGH, labels={"foo": ""}),
             p("p-x2", on="node-x", prio=HIGH, labels={"foo": ""})],
            [n("node-a/zone1"), n("node-b/zone1"), n("node-x/zone2")],
            "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints. "
            "preemption: found a potential placement for pod on node node-b, preempting 1 victims",
            "node-b",
            id="preemption for topology spread constraints",
        ),
        pytest.param(
            p("p", prio=HIGH, spec=anti_affinity("app", "kubernetes.io/hostname")),
            [p("web", on="node1", prio=LOW, labels={"app": "web"}),
             p("web2", on="node2", prio=HIGH, labels={"app": "web"})],
            [n("node1"), n("node2")],
            "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. "
            "preemption: found a potential placement for pod on node node1, preempting 1 victims",
            "node1",
            id="a best-effort pod blocking required anti-affinity is preempted",
        ),
        pytest.param(
            p("p"), [p("p1", on="node1")], [n("node1", ONE_POD)],
            "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod.",
            "",
            id="no candidate: the message carries both histograms and the nomination is cleared",
        ),
    ],
)
def test_failed_scheduling_message(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want_message: str,
    want_nomination: str | None,
) -> None:
    c = cluster(nodes, pods)
    pod_info = info(preemptor)
    assert c.schedule(pod_info) == (want_message, want_nomination)
    assert c.s.queue.nominator.node_of(pod_info.uid) == (want_nomination or None)


# -- actuation ------------------------------------------------------------------------------
def removed(name: str, *, restore: bool = True) -> list[tuple[str, ...]]:
    """The calls for a victim the Eviction API removed (then our condition restored, unless
    it was deleted at once)."""
    calls: list[tuple[str, ...]] = [("evict", name)]
    if restore:
        calls.append(("mark", name, VICTIM_MESSAGE))
    return [*calls, ("event", name, "p", "node1")]


E = EvictionOutcome
POOLED, ACTIVATED, BACKING_OFF = "pooled", "activated", "backing off"


class DeferredExecutor:
    """Stands in for the actuation pool: work runs when the test says so, on its thread."""

    def __init__(self) -> None:
        self.work: list[tuple[Any, tuple[Any, ...], Future[None]]] = []

    def submit(self, fn: Any, *args: Any) -> Future[None]:
        future: Future[None] = Future()
        self.work.append((fn, args, future))
        return future

    def run(self) -> None:
        work, self.work = self.work, []
        for fn, args, future in work:
            fn(*args)
            future.set_result(None)


def deferred(c: Cluster) -> DeferredExecutor:
    executor = DeferredExecutor()
    c.plugin._executor = executor  # type: ignore[assignment]
    return executor


def where(c: Cluster, pod_info: PodInfo) -> str | None:
    for queue, keys in c.s.queue.pending_pods().items():
        if pod_info.key in keys:
            return queue
    return None


def deleted(c: Cluster, obj: Mapping[str, Any]) -> None:
    """The watch reports a bound pod's deletion (what the intake does with it)."""
    gone = info(obj)
    c.s.pods.pop(gone.uid, None)
    c.s.cache.remove_pod(gone.uid)
    c.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, gone, None)


@pytest.mark.parametrize(
    ("args", "evictor", "want_calls", "want_after"),
    [
        pytest.param(
            {}, FakeEvictor(), [*removed("p1.1"), *removed("p1.2")], POOLED,
            id="each victim marked, evicted and reported Preempted; the pod waits for them",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.BLOCKED_BY_PDB}),
            [("evict", "p1.1"), ("mark", "p1.1", VICTIM_MESSAGE), ("delete", "p1.1"),
             ("event", "p1.1", "p", "node1"), *removed("p1.2")], POOLED,
            id="BestEffort: an eviction refused by a budget (429) is followed by mark, delete",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.MULTIPLE_PDBS}),
            [("evict", "p1.1"), ("mark", "p1.1", VICTIM_MESSAGE), ("delete", "p1.1"),
             ("event", "p1.1", "p", "node1"), *removed("p1.2")], POOLED,
            id="BestEffort: a victim under several budgets can never be evicted: deleted",
        ),
        pytest.param(
            {"pdbMode": "Strict"}, FakeEvictor({"p1.1": E.BLOCKED_BY_PDB}),
            [("evict", "p1.1")], BACKING_OFF,
            id="Strict: a refused eviction is not forced, nor the victim marked; retry later",
        ),
        pytest.param(
            {"pdbMode": "Strict"}, FakeEvictor({"p1.1": E.MULTIPLE_PDBS}),
            [("evict", "p1.1")], BACKING_OFF,
            id="Strict: several budgets refuse too; the node is released, retry later",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.FAILED}),
            [("evict", "p1.1")], ACTIVATED,
            id="a failed eviction spares the last victim and sends the preemptor to activeQ",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.GONE}),
            [("evict", "p1.1"), *removed("p1.2")], POOLED,
            id="a victim already gone, the last one evicted: its deletion lifts the gate",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.2": E.GONE}),
            [*removed("p1.1"), ("evict", "p1.2")], POOLED,
            id="the last victim found gone, still in the watch: its deletion lifts the gate",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.BLOCKED_BY_PDB}, delete_ok=False),
            [("evict", "p1.1"), ("mark", "p1.1", VICTIM_MESSAGE), ("delete", "p1.1")],
            ACTIVATED,
            id="BestEffort: a failed delete after a 429 ends the actuation with a retry",
        ),
        pytest.param(
            {}, FakeEvictor({"p1.1": E.BLOCKED_BY_PDB}, mark_ok=False),
            [("evict", "p1.1"), ("mark", "p1.1", VICTIM_MESSAGE)], ACTIVATED,
            id="BestEffort: a victim that cannot be marked DisruptionTarget is not deleted",
        ),
        pytest.param(
            {}, FakeEvictor(mark_ok=False), [*removed("p1.1"), *removed("p1.2")], POOLED,
            id="an evicted victim whose reason cannot be restored is removed all the same",
        ),
    ],
)
def test_actuation(
    args: dict[str, str], evictor: FakeEvictor, want_calls: list[tuple[str, ...]],
    want_after: str,
) -> None:
    # Deviation: upstream deletes victims (DELETE after the DisruptionTarget patch); we evict
    # through the Eviction API and fall back to a delete in BestEffort mode.
    c = cluster(BASIC_NODES, BASIC_PODS, args=args, evictor=evictor)
    actuations = deferred(c)
    preemptor = info(p("p", prio=HIGH, res=VERY_LARGE))
    message, nomination = c.schedule(preemptor)
    assert message.endswith("preemption: found a potential placement for pod on node node1, "
                            "preempting 2 victims")
    assert nomination == "node1"
    assert where(c, preemptor) == UNSCHEDULABLE, "gated while its victims are removed"
    assert c.plugin.is_running_preemption(preemptor.uid)

    actuations.run()
    assert evictor.calls == want_calls
    if want_after == POOLED:
        # The last victim was removed at the API: gated until the watch shows it gone
        # (issue 38).
        assert c.plugin.is_running_preemption(preemptor.uid)
        for victim in ("p1.1", "p1.2"):
            c.s.pods.pop(victim)
    assert not c.plugin.is_running_preemption(preemptor.uid)
    assert not any(call[0] == "nominate" for call in evictor.calls), \
        "the nomination is written once, by the failure handler"
    queued = c.s.queue.get(preemptor.uid)
    assert queued is not None
    if want_after == POOLED:
        assert where(c, preemptor) == UNSCHEDULABLE
        assert c.s.queue.nominator.node_of(preemptor.uid) == "node1"
    elif want_after == ACTIVATED:
        assert where(c, preemptor) == ACTIVE
        assert c.s.queue.nominator.node_of(preemptor.uid) == "node1"
    else:
        assert where(c, preemptor) == BACKOFF, "retried after its backoff, not hot"
        assert not queued.gated
        assert c.s.queue.nominator.node_of(preemptor.uid) is None
        key, reason, note = c.ports.failures[-1]
        assert (key, reason, c.ports.nominations[-1]) == (preemptor.key, "Unschedulable", "")
        assert note == ("preemption: a PodDisruptionBudget refused the eviction of a victim "
                        "on node node1")


@pytest.mark.parametrize(
    ("victim", "want_restore"),
    [
        pytest.param({"spec": {"terminationGracePeriodSeconds": 0}}, False,
                     id="no grace period: deleted at once, nothing to mark"),
        pytest.param({"spec": {"terminationGracePeriodSeconds": 30}}, True,
                     id="a grace period: our reason is restored while it terminates"),
    ],
)
def test_a_victim_deleted_at_once_is_not_marked_after_its_eviction(
    victim: dict[str, Any], want_restore: bool
) -> None:
    evictor = FakeEvictor()
    pods = [p("v", on="node1", prio=LOW, res=SMALL, **victim)]
    c = cluster([n("node1", SMALL)], pods, evictor=evictor)
    c.schedule(info(p("p", prio=HIGH, res=SMALL)))
    assert c.plugin.wait_for_actuations(10)
    assert evictor.calls == removed("v", restore=want_restore)


def test_victims_are_removed_in_parallel_and_the_last_once_the_others_are_gone() -> None:
    # Four victims: three at once, the fourth only after them (upstream's async preemption).
    hold = threading.Event()
    evictor = FakeEvictor(hold=hold, hold_at=("evict", "v1"))
    pods = [p(f"v{i}", on="node1", prio=LOW, res=SMALL) for i in range(1, 5)]
    c = cluster([n("node1", {"cpu": "400m", "memory": "400"})], pods, evictor=evictor)
    preemptor = info(p("p", prio=HIGH, res={"cpu": "400m", "memory": "400"}))
    c.schedule(preemptor)
    # v1 hangs on the API; the others of the parallel batch go on meanwhile.
    assert wait_for(lambda: evictor.count("evict") == 2)
    evicted = {call[1] for call in evictor.calls if call[0] == "evict"}
    assert len(evicted) == 2 and "v1" not in evicted
    assert c.plugin.is_running_preemption(preemptor.uid)
    hold.set()
    assert c.plugin.wait_for_actuations(10)
    order = [call[1] for call in evictor.calls if call[0] == "evict"]
    assert sorted(order[:3]) == sorted({"v1", "v2", "v3", "v4"} - {order[3]})
    assert order[3] == "v4", "the last victim (the least important) goes last"


class ConcurrentEvictions(FakeEvictor):
    """Every eviction waits until ``release`` is set; records how many waited at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.waiting = 0
        self.most = 0

    def evict(self, victim: PodInfo) -> EvictionResult:
        with self._lock:
            self.waiting += 1
            self.most = max(self.most, self.waiting)
        assert self.release.wait(10)
        with self._lock:
            self.waiting -= 1
        return super().evict(victim)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_parallelism_bounds_the_removals_in_flight(parallelism: int) -> None:
    evictor = ConcurrentEvictions()
    pods = [p(f"v{i}", on="node1", prio=LOW, res=SMALL) for i in range(1, 5)]
    c = cluster([n("node1", {"cpu": "400m", "memory": "400"})], pods, evictor=evictor,
                config={"parallelism": parallelism})
    c.schedule(info(p("p", prio=HIGH, res={"cpu": "400m", "memory": "400"})))
    assert wait_for(lambda: evictor.waiting == parallelism)
    # Never more than ``parallelism`` at once, however long we look.
    assert not wait_for(lambda: evictor.waiting > parallelism, timeout=0.3)
    evictor.release.set()
    assert c.plugin.wait_for_actuations(10)
    assert evictor.most == parallelism
    assert evictor.count("evict") == 4


def test_one_failed_removal_does_not_strand_the_others() -> None:
    evictor = FakeEvictor({"v2": E.FAILED})
    pods = [p(f"v{i}", on="node1", prio=LOW, res=SMALL) for i in range(1, 5)]
    c = cluster([n("node1", {"cpu": "400m", "memory": "400"})], pods, evictor=evictor)
    preemptor = info(p("p", prio=HIGH, res={"cpu": "400m", "memory": "400"}))
    c.schedule(preemptor)
    assert c.plugin.wait_for_actuations(10)
    evicted = sorted(call[1] for call in evictor.calls if call[0] == "evict")
    # The parallel batch is carried out whatever one victim does; the last is spared and the
    # preemptor retried at once.
    assert evicted == ["v1", "v2", "v3"]
    assert where(c, preemptor) == ACTIVE


def test_the_gate_lifts_when_the_last_victim_goes_even_before_the_actuation_ends() -> None:
    # The last victim's deletion may reach the queue while its eviction call has not returned
    # yet: PreEnqueue looks at that victim (upstream's lastVictimsPendingPreemption), so the
    # event is not lost and the pod does not wait for the periodic flush.
    hold = threading.Event()
    evictor = FakeEvictor(hold=hold, hold_at=("evict", "p1.2"))
    c = cluster(BASIC_NODES, BASIC_PODS, evictor=evictor)
    preemptor = info(p("p", prio=HIGH, res=VERY_LARGE))
    c.schedule(preemptor)
    assert wait_for(lambda: evictor.started.is_set())
    assert where(c, preemptor) == UNSCHEDULABLE
    deleted(c, BASIC_PODS[0])
    assert where(c, preemptor) == UNSCHEDULABLE, "p1.2 is still there: still gated"
    deleted(c, BASIC_PODS[1])
    assert where(c, preemptor) in (ACTIVE, BACKOFF), "the last victim is gone: ungated"
    hold.set()
    assert c.plugin.wait_for_actuations(10)


def test_while_gated_no_cycle_runs_and_no_waiting_message_is_posted() -> None:
    hold = threading.Event()
    evictor = FakeEvictor(hold=hold)
    c = cluster(BASIC_NODES, BASIC_PODS, evictor=evictor)
    preemptor = info(p("p", prio=HIGH, res=VERY_LARGE))
    c.schedule(preemptor)
    assert evictor.started.wait(10)
    waiting = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                     ("waiting for the preemption for this pod to be finished",))
    assert c.plugin.pre_enqueue(preemptor) == waiting
    # Neither an activation nor an unrelated deletion lets it run a cycle meanwhile.
    c.s.queue.activate([preemptor.uid])
    elsewhere = info(p("elsewhere", on="node9", prio=LOW, res=SMALL))
    c.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, elsewhere, None)
    assert where(c, preemptor) == UNSCHEDULABLE
    assert not schedule_one(c.s, timeout=0)
    assert len(c.ports.failures) == 1
    hold.set()
    assert c.plugin.wait_for_actuations(10)
    assert c.plugin.pre_enqueue(preemptor) == waiting, "until the watch shows the victims go"

    # The victims now terminate with our condition: no further preemption (TestPreempt's
    # second call), and the nomination stays.
    for name in ("p1.1", "p1.2"):
        c.set_pod(p(name, on="node1", prio=LOW, res=SMALL, terminating=True,
                    conditions=[PREEMPTED]))
    assert c.plugin.pre_enqueue(preemptor) == SUCCESS
    message, nomination = c.schedule(preemptor)
    assert message == (f"{FULL} preemption: not eligible due to a terminating pod on the "
                       "nominated node.")
    assert nomination is None
    assert c.s.queue.nominator.node_of(preemptor.uid) == "node1"
    assert evictor.count("evict") == 2


def test_actuation_clears_lower_priority_nominations_on_the_node() -> None:
    evictor = FakeEvictor()
    c = cluster(
        BASIC_NODES, BASIC_PODS, evictor=evictor,
        nominated=[(p("low-nom", prio=MID), "node1"), (p("high-nom", prio=VERY_HIGH), "node1"),
                   (p("low-elsewhere", prio=LOW), "node3")],
    )
    c.schedule(info(p("p", prio=HIGH, res=VERY_LARGE)))
    assert c.plugin.wait_for_actuations(10)
    assert evictor.calls[0] == ("nominate", "low-nom", "")
    assert evictor.calls[1][0] == "evict"
    nominator = c.s.queue.nominator
    assert nominator.node_of("low-nom") is None
    assert nominator.node_of("high-nom") == "node1"
    assert nominator.node_of("low-elsewhere") == "node3"


def test_a_preemptor_whose_node_is_taken_retries_at_once() -> None:
    """The stuck preemptor of issue 14: a priority-20 pod preempts v on node1; before its
    actuation ends, a priority-30 pod picks node1 and the same victim. The first one's
    nomination is cleared; it must not stay gated (or keep answering "waiting") for a plan
    that is void: it is ungated, activated, and sends no more evictions."""
    hold = threading.Event()
    evictor = FakeEvictor(hold=hold, hold_at=("evict", "v"))
    c = cluster([n("node1", {"cpu": "200m", "memory": "200"})],
                [p("v", on="node1", prio=LOW, res=MEDIUM)], evictor=evictor)
    first = info(p("first", prio=MID, res=MEDIUM))
    c.schedule(first)
    assert wait_for(lambda: evictor.started.is_set())
    assert where(c, first) == UNSCHEDULABLE and c.plugin.is_running_preemption(first.uid)

    second = info(p("second", prio=HIGH, res=MEDIUM))
    message, nomination = c.schedule(second)
    assert message.endswith("found a potential placement for pod on node node1, "
                            "preempting 1 victims")
    assert nomination == "node1"
    assert wait_for(lambda: ("nominate", "first", "") in evictor.calls)
    assert wait_for(lambda: where(c, first) == ACTIVE), "the first preemptor retries at once"
    assert not c.plugin.is_running_preemption(first.uid)
    assert c.s.queue.nominator.node_of(first.uid) is None
    hold.set()
    assert c.plugin.wait_for_actuations(10)
    assert where(c, first) == ACTIVE


def test_a_preemptor_deleted_during_its_cycle_evicts_nobody_and_leaves_no_nomination() -> None:
    """A ReplicaSet scale-down deletes the pending preemptor while its cycle runs."""
    evictor = FakeEvictor()
    c = cluster(BASIC_NODES, BASIC_PODS, evictor=evictor)
    preemptor = c.watched(info(p("p", prio=HIGH, res=VERY_LARGE)))
    c.s.queue.add(preemptor)
    qpi = c.s.queue.pop(timeout=0)
    assert qpi is not None
    # The watch reports the deletion before PostFilter runs.
    c.s.pods.pop(preemptor.uid)
    c.s.queue.delete(preemptor.uid)
    c.s.queue.add(preemptor)  # a late re-add attempt is no resurrection either
    c.s.queue.done(preemptor.uid)
    _, status = c.plugin.post_filter(c.prefiltered(preemptor), preemptor, Diagnosis(
        codes=np.full(c.s.snapshot.nodes.capacity, U, dtype=np.uint8), num_all_nodes=3))
    assert status == Status(Code.UNSCHEDULABLE, ("preemption: the pod is no longer pending",))
    assert c.plugin.wait_for_actuations(10)
    assert evictor.calls == []
    assert c.s.queue.nominator.node_of(preemptor.uid) is None


def test_a_preemptor_deleted_before_its_actuation_runs_evicts_nobody() -> None:
    evictor = FakeEvictor()
    c = cluster(BASIC_NODES, BASIC_PODS, evictor=evictor)
    actuations = deferred(c)
    preemptor = info(p("p", prio=HIGH, res=VERY_LARGE))
    c.schedule(preemptor)
    assert c.s.queue.nominator.node_of(preemptor.uid) == "node1"
    # Deleted after PostFilter chose its victims, before the first eviction.
    c.s.pods.pop(preemptor.uid)
    c.s.queue.delete(preemptor.uid)
    actuations.run()
    assert evictor.calls == []
    assert c.s.queue.nominator.node_of(preemptor.uid) is None


@pytest.mark.parametrize(
    ("terminating", "want_calls"),
    [
        pytest.param(["p1.1"], removed("p1.2"),
                     id="a victim already terminating is not evicted again"),
        pytest.param(["p1.1", "p1.2"], [],
                     id="every victim terminating: nothing to send, as upstream"),
    ],
)
def test_terminating_victims_are_not_evicted_again(
    terminating: list[str], want_calls: list[tuple[str, ...]]
) -> None:
    evictor = FakeEvictor()
    pods = [p(name, on="node1", prio=LOW, res=SMALL, terminating=name in terminating)
            for name in ("p1.1", "p1.2")]
    c = cluster([n("node1")], pods, evictor=evictor)
    message, _ = c.schedule(info(p("p", prio=HIGH, res=VERY_LARGE)))
    # Terminating victims still count: they are victims the pod waits for.
    assert message.endswith("found a potential placement for pod on node node1, "
                            "preempting 2 victims")
    assert c.plugin.wait_for_actuations(10)
    assert evictor.calls == want_calls


def test_without_an_evictor_the_decision_is_still_made() -> None:
    c = cluster(BASIC_NODES, BASIC_PODS)
    preemptor = info(p("p", prio=HIGH, res=VERY_LARGE))
    assert c.post_filter(preemptor) == success("node1", 2)
    assert not c.plugin.is_running_preemption(preemptor.uid)
    assert c.plugin.wait_for_actuations(0)


def test_the_gate_holds_until_the_watch_shows_the_last_victim_gone() -> None:
    """Upstream's informer applies a deletion to the cache before any later event can requeue
    the preemptor, so the pod's next cycle sees its victim gone. Ours may learn of other
    deletions first (the watch lags the eviction call under load): until the watch shows the
    last victim gone or terminating, the actuation is not over, or the pod would run a cycle
    with its victim still in the cache and preempt a second pod elsewhere (issue 38)."""
    evictor = FakeEvictor()
    victim, other = p("v1", on="node1", prio=LOW), p("v2", on="node2", prio=MID)
    c = cluster([n("node1", ONE_POD), n("node2", ONE_POD)], [victim, other], evictor=evictor)
    preemptor = info(p("p", prio=HIGH))
    _, nomination = c.schedule(preemptor)
    assert nomination == "node1"
    assert c.plugin.wait_for_actuations(10)
    assert evictor.count("evict") == 1
    # The eviction call returned; the watch has not delivered v1's deletion yet, but another
    # bound pod's.
    elsewhere = info(p("elsewhere", on="node9", prio=LOW))
    c.s.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, elsewhere, None)
    assert where(c, preemptor) == UNSCHEDULABLE, "v1 still exists for the scheduler: gated"
    assert not schedule_one(c.s, timeout=0)
    deleted(c, victim)
    assert where(c, preemptor) in (ACTIVE, BACKOFF)
    assert schedule_one(c.s, timeout=0)
    assert c.plugin.wait_for_actuations(10)
    assert evictor.count("evict") == 1, "no second victim"
    assert wait_for(lambda: c.ports.bound == [(preemptor.key, "node1")])


def test_a_finished_actuation_is_forgotten_once_its_last_victim_is_seen_terminating() -> None:
    evictor = FakeEvictor()
    c = cluster([n("node1", ONE_POD)], [p("v1", on="node1", prio=LOW)], evictor=evictor)
    preemptor = info(p("p", prio=HIGH))
    c.schedule(preemptor)
    assert c.plugin.wait_for_actuations(10)
    assert c.plugin.is_running_preemption(preemptor.uid)
    c.set_pod(p("v1", on="node1", prio=LOW, terminating=True, conditions=[PREEMPTED]))
    assert not c.plugin.is_running_preemption(preemptor.uid)
    assert c.plugin._actuations == {}


def test_a_preemption_starts_its_evictions_however_many_others_hang_on_the_api() -> None:
    """Upstream's prepareCandidateAsync starts a goroutine per preemption, so no preemption
    waits for another's API calls. With a few actuation threads, a burst of preemptions on a
    slow API server queued behind the first ones: their preemptors stayed gated, "waiting
    for the preemption", while their victims ran on (issue 38)."""
    evictor = ConcurrentEvictions()
    count = 8
    nodes = [n(f"node{i}", ONE_POD) for i in range(count)]
    victims = [p(f"v{i}", on=f"node{i}", prio=LOW) for i in range(count)]
    c = cluster(nodes, victims, evictor=evictor)
    for i in range(count):
        c.schedule(info(p(f"p{i}", prio=HIGH)))
    assert wait_for(lambda: evictor.waiting == count, timeout=5), "all on their way"
    evictor.release.set()
    assert c.plugin.wait_for_actuations(10)
    assert evictor.count("evict") == count


@pytest.mark.parametrize(
    ("condition", "want_evictions"),
    [
        pytest.param({**PREEMPTED, "reason": "EvictionByEvictionAPI"}, 1,
                     id="the API's reason, ours not yet seen: still our victim, no second one"),
        pytest.param(PREEMPTED, 1, id="our reason restored: no second victim"),
    ],
)
def test_a_victim_terminating_with_the_eviction_api_reason_keeps_the_preemptor_waiting(
    condition: Mapping[str, str], want_evictions: int
) -> None:
    """Upstream (prepareCandidateAsync's PreemptPod) writes DisruptionTarget
    PreemptionByScheduler before it deletes a victim, so PodEligibleToPreemptOthers always
    sees a victim of its own terminating by preemption. Ours evicts through the Eviction API,
    which writes its own reason, EvictionByEvictionAPI; ours is restored after the call. A
    preemptor that runs a cycle before the watch shows that patch must still wait for its
    victim, not preempt a second pod elsewhere (issue 38: the repeated preemptions)."""
    evictor = FakeEvictor()
    c = cluster([n("node1", ONE_POD), n("node2", ONE_POD)],
                [p("v1", on="node1", prio=LOW, start=1), p("x", on="node2", prio=HIGH)],
                evictor=evictor)
    preemptor = info(p("p", prio=HIGH))
    _, nomination = c.schedule(preemptor)
    assert nomination == "node1"
    assert c.plugin.wait_for_actuations(10)
    c.set_pod(p("v1", on="node1", prio=LOW, start=1, terminating=True, conditions=[condition]))
    # Meanwhile node2 changed hands: a newer low-priority pod there is the better victim.
    deleted(c, p("x", on="node2", prio=HIGH))
    c.set_pod(p("v2", on="node2", prio=LOW, start=2))
    assert not c.plugin.is_running_preemption(preemptor.uid), "terminating: the gate lifts"
    message, nomination = c.schedule(preemptor)
    assert message.endswith(
        "preemption: not eligible due to a terminating pod on the nominated node.")
    assert c.plugin.wait_for_actuations(10)
    assert evictor.count("evict") == want_evictions


def test_an_evicted_victim_is_forgotten_once_the_watch_shows_it_gone() -> None:
    evictor = FakeEvictor()
    victim = p("v1", on="node1", prio=LOW)
    c = cluster([n("node1", ONE_POD), n("node2", ONE_POD)],
                [victim, p("v2", on="node2", prio=LOW)], evictor=evictor, offsets=[0, 1])
    c.schedule(info(p("p", prio=HIGH)))
    assert c.plugin.wait_for_actuations(10)
    assert c.plugin._evicted == {"v1"}
    deleted(c, victim)
    c.schedule(info(p("q", prio=HIGH)))
    assert c.plugin.wait_for_actuations(10)
    assert c.plugin._evicted == {"v2"}



@pytest.mark.parametrize("delivered", [False, True])
def test_a_victim_found_gone_is_awaited_while_the_watch_still_shows_it(delivered: bool) -> None:
    """A victim another preemptor removed first: the Eviction API answers 404. Upstream's
    informer has (nearly always) the deletion already; ours may not. Activated at once, the
    preemptor ran a cycle with its victim still in the cache, running, and preempted again
    (a second victim, or the same one and a 404 again, issue 38). It waits for the deletion
    event instead; only when the watch delivered it before the eviction call (the event
    found the pod gated, its gate not yet knowing the victim) is it activated."""
    evictor = FakeEvictor({"v": E.GONE})
    victim = p("v", on="node1", prio=LOW)
    c = cluster([n("node1", ONE_POD), n("node2", ONE_POD)],
                [victim, p("w", on="node2", prio=MID)], evictor=evictor)
    actuations = deferred(c)
    preemptor = info(p("p", prio=HIGH))
    _, nomination = c.schedule(preemptor)
    assert nomination == "node1"
    if delivered:
        deleted(c, victim)
        assert where(c, preemptor) == UNSCHEDULABLE, "gated: its actuation has not run yet"
        actuations.run()
        assert where(c, preemptor) == ACTIVE, "no event is left to move it"
        return
    actuations.run()
    assert c.plugin.is_running_preemption(preemptor.uid), "v is still in the watch"
    assert where(c, preemptor) == UNSCHEDULABLE
    assert not schedule_one(c.s, timeout=0), "no cycle while v is still in the cache"
    deleted(c, victim)
    assert where(c, preemptor) in (ACTIVE, BACKOFF)
    assert schedule_one(c.s, timeout=0)
    assert wait_for(lambda: c.ports.bound == [(preemptor.key, "node1")])
    assert evictor.count("evict") == 1, "w was never a victim"


def test_a_victim_waiting_at_permit_is_rejected_in_memory_and_the_preemptor_retries() -> None:
    """Upstream's PreemptPod: a victim still waiting at Permit is rejected, not deleted; it was
    never bound, so no deletion event will come: the preemptor is activated at once
    (preemptedLastVictimInMemory)."""
    evictor = FakeEvictor()
    victim = p("v", on="node1", prio=LOW)
    c = cluster([n("node1", ONE_POD)], [victim], evictor=evictor)
    c.s.waiting.add(info(victim), [("test-permit", 30.0)])
    preemptor = info(p("p", prio=HIGH))
    _, nomination = c.schedule(preemptor)
    assert nomination == "node1"
    assert c.plugin.wait_for_actuations(10)
    assert c.s.waiting.wait("v") == Status(Code.UNSCHEDULABLE, ("preempted",),
                                           "DefaultPreemption")
    assert evictor.calls == []
    assert not c.plugin.is_running_preemption(preemptor.uid)
    assert where(c, preemptor) == ACTIVE
