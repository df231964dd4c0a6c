"""End-to-end throughput, side by side: upstream kube-scheduler and ours on one real control plane.

The local control plane (``e2e/cluster/cluster.py``, kube-scheduler built from the same
Kubernetes version) gets N kwok nodes. For each workload (shaped like upstream's
scheduler_perf) and each client QPS/burst setting, the same pending pods are created, one
scheduler is started cold, every bind is timed by a watch in this process, then the pods are
deleted and the other scheduler gets the same pods. The two alternate run by run (same
conditions), and the binding ceiling (a trivial round-robin binder with no decisions and no
rate limit) runs on the same cluster. JSON lands in bench/results/, a PNG next to it.

Per run: steady pods/s from the first to the last bind, time from process start to the first
bind, p50/p99 latency from ``max(pod created, scheduler started)`` to bind, and the machine's
load average before and after (this benchmark shares its cores with whatever else runs).

    python bench/e2e.py                 # 1,000 nodes, every workload, QPS 50/100 and 1000/1000
    python bench/e2e.py --quick         # smoke: 100 nodes, a tenth of the pods, one repeat
    python bench/e2e.py --nodes 5000 --workloads basic,spread
    python bench/e2e.py --nodes 5000 --workloads GangScheduling --schedulers kube-scheduler

The GangScheduling workloads are scheduler_perf's podgroup/gangscheduling ones (PodGroups of
scheduling.k8s.io/v1beta1 created before their pods); the control plane runs GenericWorkload,
and kube-scheduler is started with the gate, as e2e/cluster/README.md says.

    python bench/e2e.py --nodes 500 --qps 1000/1000 --repeats 1 --workloads dra

The DRA workloads are upstream's scheduler_perf ones (test/integration/scheduler_perf/dra/
performance-config.yaml, SchedulingWithResourceClaimTemplate, and the consumablecapacity,
partitionabledevices and prioritizedlist folders beside it), with their templates' shapes
(DraShape): what every node publishes in its ResourceSlices, the DeviceClasses, the claim
template, and the claims allocated beforehand (written directly, as its allocResourceClaims
op does); each measured pod gets its own claim from the ResourceClaimTemplate, made by
kube-controller-manager's resourceclaim controller. They need the nodes to themselves (no
preemption nodes), so they run alone (``--workloads dra`` or a list of DRA names).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "e2e" / "cluster"))

from cluster import FEATURE_GATES, Cluster, lease_seconds_for  # noqa: E402

from scheduler.operator.kubeapi import KubeApi, api_client_from  # noqa: E402

RESULTS = ROOT / "bench" / "results"
NAMESPACE = "bench"
SCHEDULER_NAME = "bench-scheduler"
ZONES = 10
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
POD_GROUPS = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NAMESPACE}/podgroups"
# The fixed arrival rate of high-priority preemptors (scheduler_perf: one per 200 ms).
PREEMPTOR_INTERVAL = 0.2
CHURN_INTERVAL = 0.05
RUN_TIMEOUT = 600.0


# The write calls a scheduler makes, counted by the API server (apiserver_request_total).
COUNTED_CALLS = {("POST", "pods", "binding"): "binding", ("PATCH", "pods", "status"): "status",
                 ("POST", "events", ""): "event", ("PATCH", "events", ""): "event_patch",
                 ("POST", "pods", "eviction"): "eviction"}
# The processes of the local control plane whose CPU a run reports.
CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kwok")
METRIC_LABEL = re.compile(r'(\w+)="([^"]*)"')


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU a process (every thread of it) has used so far; None once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (nearest rank below), NaN when empty."""
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def metric_samples(raw: object, metric: str) -> Iterable[tuple[dict[str, str], float]]:
    """The labelled samples of one metric in a Prometheus text exposition."""
    for line in raw.splitlines() if isinstance(raw, str) else []:
        if line.startswith(metric + "{"):
            labels_text, _, value = line.rpartition(" ")
            yield dict(METRIC_LABEL.findall(labels_text)), float(value)


# ----------------------------------------------------------------------------- pods
def pod(name: str, *, cpu: str = "10m", priority_class: str | None = None,
        labels: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        # kwok honours grace periods: a victim would hold its node for 30 s (no kubelet in
        # scheduler_perf, where victims go at once)
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "10Mi"}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    spec.update(extra or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}},
            "spec": spec}


def spread_pod(name: str) -> dict[str, Any]:
    labels = {"app": "spread"}
    return pod(name, labels=labels, extra={"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": labels}}]})


def anti_affinity_pod(name: str) -> dict[str, Any]:
    labels = {"app": "anti"}
    return pod(name, labels=labels, extra={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": labels},
            "topologyKey": "kubernetes.io/hostname"}]}}})


def node_affinity_pod(name: str) -> dict[str, Any]:
    zones = [f"zone-{i}" for i in range(ZONES // 2)]
    return pod(name, extra={"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                  "values": zones}]}]}}}})


def gang_pod(name: str, group: str) -> dict[str, Any]:
    """scheduler_perf's podgroup/gangscheduling/templates/gang-pod.yaml: 100m, 100Mi, a member
    of ``group`` (its run suffix is added with the pod's, see Bench.create)."""
    made = pod(name, cpu="100m", extra={"schedulingGroup": {"podGroupName": group}})
    made["spec"]["containers"][0]["resources"]["requests"]["memory"] = "100Mi"
    return made


def gang_workload(name: str, groups: int, per_group: int) -> Workload:
    """scheduler_perf's GangScheduling: ``groups`` PodGroups ``gang-<i>`` with gang policy
    ``minCount: per_group`` (templates/podgroup.yaml), created before their pods, and
    ``per_group`` pods in each, pod i in gang i // per_group."""
    def group(i: int) -> dict[str, Any]:
        return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": f"gang-{i}", "namespace": NAMESPACE},
                "spec": {"schedulingPolicy": {"gang": {"minCount": per_group}}}}

    return Workload(name, lambda _: [gang_pod(f"gang-pod-{i}", f"gang-{i // per_group}")
                                     for i in range(groups * per_group)],
                    groups=lambda: [group(i) for i in range(groups)])


# The preemption nodes are tainted so that only the low/high-priority pods land there.
PREEMPT_TAINT = {"key": "bench/preempt", "value": "yes", "effect": "NoSchedule"}
PREEMPT_SELECTOR = {"nodeSelector": {"bench/preempt": "yes"},
                    "tolerations": [dict(PREEMPT_TAINT, operator="Equal")]}


def low_priority_pod(name: str) -> dict[str, Any]:
    return pod(name, cpu="1", priority_class="bench-low", extra=PREEMPT_SELECTOR)


def high_priority_pod(name: str) -> dict[str, Any]:
    return pod(name, cpu="1", priority_class="bench-high", extra=PREEMPT_SELECTOR)


# ----------------------------------------------------------------------------- DRA
# scheduler_perf's dra/templates: driver, classes, claim templates, slices.
DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_CLASS = "test-class"
DRA_TEMPLATE = "test-claim-template"
DRA_DEVICES_PER_NODE = 10
DRA_PCI_ROOTS = 2
DRA_INIT_NAMESPACE = "bench-init"
RESOURCE_V1 = "/apis/resource.k8s.io/v1"
# The steady-state cases keep this many pods pending and run this long from the first bind.
STEADY_PODS = 10
STEADY_SECONDS = 10.0
# ... after this warm-up from the first bind, which the stream adds to its run, and which the
# warm_* keys leave out: the resourceclaim controller's and the API server's caches settle in it.
STEADY_WARMUP_SECONDS = 10.0
# A scheduler started before a steady state's pods is settled once its process used less than
# this share of a core over each of SETTLED_SAMPLES samples SETTLED_INTERVAL apart.
SETTLED_CPU_SHARE = 0.1
SETTLED_INTERVAL = 0.5
SETTLED_SAMPLES = 2


def dra_pod(name: str) -> dict[str, Any]:
    """pod-with-claim-template.yaml: no requests, one claim from the template."""
    body = pod(name, extra={"resourceClaims": [
        {"name": "resource", "resourceClaimTemplateName": DRA_TEMPLATE}]})
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "resource"}]}
    return body


def dra_device(index: int) -> dict[str, Any]:
    """One device of resourceslice-basic-devices.yaml (an Intel GPU's attributes)."""
    root = index % DRA_PCI_ROOTS
    strings = {"driver": "xe", "resource.k8s.io/pciRoot": str(root), "family": "Arc Pro B-Series",
               "health": "Healthy", "model": "B60", "pciAddress": f"0000:0{index}:00.0",
               "pciId": "0xe211", "pciRoot": f"0{root}",
               "resource.kubernetes.io/pciBusID": f"0000:0{index}:00.0",
               "resource.kubernetes.io/pciRoot": f"pci0000:0{root}", "type": "gpu"}
    attributes: dict[str, Any] = {k: {"string": v} for k, v in strings.items()}
    attributes["driverVersion"] = {"version": "1.2.3"}
    attributes["sriov"] = {"bool": True}
    return {"name": f"basic-device-{index}", "attributes": attributes,
            "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}}


def dra_slice(node: str, spec: dict[str, Any], count: int = 1, name: str = "") -> dict[str, Any]:
    """A slice of ``node``'s pool ``resourceslice-<node>`` (of ``count`` slices)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"resourceslice-{name}{node}"},
            "spec": {"driver": DRA_DRIVER, "nodeName": node,
                     "pool": {"name": f"resourceslice-{node}", "generation": 1,
                              "resourceSliceCount": count}, **spec}}


def basic_slices(node: str) -> list[dict[str, Any]]:
    """resourceslice-basic-devices.yaml: 10 devices."""
    return [dra_slice(node, {"devices": [dra_device(i) for i in range(DRA_DEVICES_PER_NODE)]})]


def dra_allocation(node: str, devices: list[str],
                   extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the allocator writes for devices of a node-local pool to request req-0
    (``extra``: fields added to each device's result)."""
    return {"devices": {"results": [
        {"request": "req-0", "driver": DRA_DRIVER, "pool": f"resourceslice-{node}",
         "device": device, **(extra[i] if extra else {})} for i, device in enumerate(devices)]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def device_class(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name}, "spec": {"selectors": [{"cel": {
                "expression": expression}}]}}


def claim_spec(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
               ) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def exactly(name: str = "req-0", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": DRA_CLASS, **fields}}


@dataclass(frozen=True)
class DraShape:
    """One of scheduler_perf's DRA setups: what each node publishes, the classes, the
    measured pods' claim template, and the init claims: their spec, how many a node holds
    and what a node's k-th one is allocated (scheduler_perf's allocResourceClaims runs its
    allocator on random nodes; here the same devices end up in use, node order shuffled)."""

    name: str
    slices: Callable[[str], list[dict[str, Any]]]
    template: dict[str, Any]
    classes: tuple[dict[str, Any], ...] = (device_class(DRA_CLASS,
                                                        f'device.driver == "{DRA_DRIVER}"'),)
    init_claim: dict[str, Any] = field(default_factory=lambda: claim_spec(exactly()))
    per_node: int = DRA_DEVICES_PER_NODE
    allocation: Callable[[str, int], dict[str, Any]] = \
        lambda node, k: dra_allocation(node, [f"basic-device-{k}"])


# dra/performance-config.yaml's selector_* CEL selector; its match_* requests and constraint.
DRA_SELECTOR = ('device.attributes["test-driver.cdi.k8s.io"].driverVersion.major() >= 1 && '
                'device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("1Mi"))')
BASIC = DraShape("basic", basic_slices, claim_spec(exactly()))
SELECTOR = DraShape("selector", basic_slices, claim_spec(
    exactly(selectors=[{"cel": {"expression": DRA_SELECTOR}}])))
MATCH = DraShape("match", basic_slices, claim_spec(
    *(exactly(f"req-{i}") for i in range(5)),
    constraints=[{"matchAttribute": "resource.kubernetes.io/pciRoot"}]))
# prioritizedlist: resourceclaimtemplate-first-available.yaml, deviceclass-no-devices.yaml
FIRST_AVAILABLE = DraShape(
    "first-available", basic_slices,
    claim_spec({"name": "req-0", "firstAvailable": [
        {"name": "sub-0", "deviceClassName": "no-devices-class"},
        {"name": "sub-1", "deviceClassName": DRA_CLASS}]}),
    classes=(BASIC.classes[0],
             device_class("no-devices-class", 'device.driver == "no-such-driver.cdi.k8s.io"')))


def consumable_slices(node: str) -> list[dict[str, Any]]:
    """resourceslice-consumablecapacity.yaml: four shareable devices of 10G bandwidth (the
    third 10Gi)."""
    def device(i: int) -> dict[str, Any]:
        return {"name": f"shareable-device-{i}", "allowMultipleAllocations": True,
                "attributes": {"dra.example.com/index": {"int": i}},
                "capacity": {"bandwidth": {"value": "10Gi" if i == 2 else "10G", "requestPolicy": {
                    "default": "1M", "validRange": {"min": "1M", "step": "8"}}}}}
    return [dra_slice(node, {"devices": [device(i) for i in range(4)]})]


def consumable_allocation(node: str, k: int) -> dict[str, Any]:
    """The k-th of 8 claims on a node: two devices of distinct index, 2500M of each (pairs
    (0,1) and (2,3), four shares of each device), each share with its own UID."""
    first = 2 * (k % 2)
    shares = [{"shareID": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{node}/{k}/{i}")),
               "consumedCapacity": {"bandwidth": "2500M"}} for i in range(2)]
    return dra_allocation(node, [f"shareable-device-{first}", f"shareable-device-{first + 1}"],
                          shares)


CONSUMABLE_CLAIM = claim_spec(exactly(count=2, capacity={"requests": {"bandwidth": "2500M"}}),
                              constraints=[{"requests": ["req-0"],
                                            "distinctAttribute": "dra.example.com/index"}])
# consumablecapacity: its init pods are scheduled; here their claims are allocated directly.
CONSUMABLE = DraShape(
    "consumable", consumable_slices, CONSUMABLE_CLAIM,
    classes=(device_class(DRA_CLASS, f'device.driver == "{DRA_DRIVER}" && '
                                     "device.allowMultipleAllocations == true"),),
    init_claim=CONSUMABLE_CLAIM, per_node=8, allocation=consumable_allocation)


def counter(**values: str) -> dict[str, Any]:
    return {name: {"value": v} for name, v in values.items()}


def partitionable_slices(node: str) -> list[dict[str, Any]]:
    """resourceslice-partitionable-countersets.yaml and -devices.yaml: counters 1..4 of 1,
    two devices of two counters each."""
    def device(i: int) -> dict[str, Any]:
        return {"name": f"device-{i}", "consumesCounters": [{"counterSet": "counter-set",
                "counters": counter(**{f"counter{2 * i - 1}": "1", f"counter{2 * i}": "1"})}]}
    return [dra_slice(node, {"sharedCounters": [{"name": "counter-set", "counters": counter(
                counter1="1", counter2="1", counter3="1", counter4="1")}]}, 2, "countersets-"),
            dra_slice(node, {"devices": [device(1), device(2)]}, 2, "devices-")]


def backtracking_slices(node: str) -> list[dict[str, Any]]:
    """resourceslice-partitionable-backtracking-*.yaml: cpu1..8 of 1 and 70Gi of memory;
    device-1 takes 20Gi, devices 2..8 10Gi each."""
    def device(i: int) -> dict[str, Any]:
        return {"name": f"device-{i}", "consumesCounters": [
            {"counterSet": "counter-set-for-cpu", "counters": counter(**{f"cpu{i}": "1"})},
            {"counterSet": "counter-set-for-mem",
             "counters": counter(mem="20Gi" if i == 1 else "10Gi")}]}
    return [dra_slice(node, {"sharedCounters": [
                {"name": "counter-set-for-cpu",
                 "counters": counter(**{f"cpu{i}": "1" for i in range(1, 9)})},
                {"name": "counter-set-for-mem", "counters": counter(mem="70Gi")}]},
                      2, "countersets-"),
            dra_slice(node, {"devices": [device(i) for i in range(1, 9)]}, 2, "devices-")]


PARTITIONABLE = DraShape(
    "partitionable", partitionable_slices, claim_spec(exactly(count=2)),
    init_claim=claim_spec(exactly(count=2)), per_node=1,
    allocation=lambda node, k: dra_allocation(node, ["device-1", "device-2"]))
BACKTRACKING = DraShape(
    "backtracking", backtracking_slices, claim_spec(exactly(count=7)),
    init_claim=claim_spec(exactly(count=7)), per_node=1,
    allocation=lambda node, k: dra_allocation(node, [f"device-{i}" for i in range(2, 9)]))


def init_units(nodes: list[str], shape: DraShape) -> list[tuple[str, int]]:
    """Where the init claims go, in order: claim i is the k-th claim of node n for the i-th
    (n, k) of one shuffled list, so a larger count only adds claims."""
    units = [(node, k) for node in nodes for k in range(shape.per_node)]
    random.Random(1).shuffle(units)
    return units


def steady(count: int) -> Callable[[Bench, threading.Event], None]:
    """scheduler_perf's steady state (createPodsSteadily): each pod seen bound is deleted and
    replaced at once, for STEADY_WARMUP_SECONDS + STEADY_SECONDS from the first bind, so
    ``count`` pods stay pending and the devices in use stay where the initial claims put
    them.

    Each bound pod's delete and then its replacement's create run on their own thread, as
    soon as the bind is seen. Upstream does them one pod after another, its API calls taking
    a millisecond in-process; here a DELETE took 200 ms at load 5, so one after another the
    last of k pods bound together waited k of them before its replacement existed, and that
    wait, not the scheduler, set the pods/s (bound -> replaced 0.8-1.9 s against created ->
    bound 0.5-1.3 s), longer for whichever scheduler binds more pods close together."""
    def stream(bench: Bench, stop: threading.Event) -> None:
        counter = itertools.count()
        handled: set[str] = set()
        deadline: float | None = None
        in_flight: list[Future[None]] = []
        while not stop.wait(0.02):
            bound = [n for n in bench.bound_names() if n not in handled]
            if bound and deadline is None:
                deadline = time.monotonic() + STEADY_WARMUP_SECONDS + STEADY_SECONDS
            if deadline is not None and time.monotonic() >= deadline:
                break
            handled.update(bound)
            in_flight += [bench.pool.submit(bench.replace, name,
                                            dra_pod(f"steady-{next(counter)}"))
                          for name in bound]
        # Every replacement counted as pending before the run may see none left.
        for future in in_flight:
            future.result()
    return stream


# ----------------------------------------------------------------------------- workloads
@dataclass
class Workload:
    """Pods created before the scheduler starts, plus an optional stream while it runs."""

    name: str
    initial: Callable[[int], list[dict[str, Any]]]
    # (cluster state, api) -> runs until stop is set; creates/deletes pods while scheduling
    stream: Callable[[Bench, threading.Event], None] | None = None
    # the stream stops once this many pods are bound (else it ends by itself)
    churn_until: int | None = None
    # PodGroups (scheduling.k8s.io/v1beta1) created before the pods
    groups: Callable[[], list[dict[str, Any]]] | None = None
    # DRA: the claims allocated before the run (None: not a DRA workload), and the setup
    init_claims: int | None = None
    dra: DraShape | None = None
    # The scheduler is started and settled before the pods are created, as scheduler_perf's
    # runs from the test's start (its steady states); else it starts with them pending, and
    # the run includes its start-up (the bursts: first_bind_s).
    started_first: bool = False


def _many(make: Callable[[str], dict[str, Any]], prefix: str, n: int) -> list[dict[str, Any]]:
    return [make(f"{prefix}-{i}") for i in range(n)]


def workloads(scale: float, nodes: int) -> dict[str, Workload]:
    def n(count: int) -> int:
        return max(10, int(count * scale))

    preempt_nodes = max(1, nodes // 10)

    def preemption_initial(_: int) -> list[dict[str, Any]]:
        # Low-priority pods fill the preemption nodes exactly (4 cpu, 1 cpu each); the
        # measured default pods fit anywhere.
        return _many(low_priority_pod, "low", 4 * preempt_nodes) + _many(pod, "p", n(500))

    def preemptors(bench: Bench, stop: threading.Event) -> None:
        # High-priority pods arrive at a fixed rate once the fill is placed: each one must
        # preempt a low-priority pod.
        bench.wait_bound(prefix="low-", stop=stop)
        for i in range(max(5, preempt_nodes // 2)):
            if stop.wait(PREEMPTOR_INTERVAL):
                return
            bench.create([high_priority_pod(f"high-{i}")])

    def churn(bench: Bench, stop: threading.Event) -> None:
        # Delete a bound pod and create a new pending one every CHURN_INTERVAL.
        counter = itertools.count()
        rng = random.Random(1)
        while not stop.wait(CHURN_INTERVAL):
            bound = bench.bound_names()
            if bound:
                bench.delete(rng.choice(bound))
            bench.create([pod(f"churn-{next(counter)}")])

    return {
        "SchedulingBasic": Workload("SchedulingBasic", lambda c: _many(pod, "p", n(1500))),
        "TopologySpreading": Workload("TopologySpreading",
                                      lambda c: _many(spread_pod, "p", n(1000))),
        "PodAntiAffinity": Workload("PodAntiAffinity", lambda c: _many(
            anti_affinity_pod, "p", min(n(500), nodes))),
        "NodeAffinity": Workload("NodeAffinity", lambda c: _many(node_affinity_pod, "p", n(1000))),
        "PreemptionAsync": Workload("PreemptionAsync", preemption_initial, preemptors),
        "Churn": Workload("Churn", lambda c: _many(pod, "p", n(1000)), churn, n(1000)),
        # scheduler_perf's podgroup/gangscheduling performance workloads at 5,000 nodes:
        # 1000 gangs of 3 pods, and 3 gangs of 1000 pods (--scale multiplies both).
        "GangScheduling": gang_workload("GangScheduling", n(1000), 3),
        "GangScheduling1000PerGroup": gang_workload("GangScheduling1000PerGroup", 3, n(1000)),
        **dra_workloads(nodes),
    }


def dra_workloads(nodes: int) -> dict[str, Workload]:
    """scheduler_perf's DRA workloads at this node count (upstream's thresholds are for 500
    nodes). SchedulingWithResourceClaimTemplate: the burst (5000pods_500nodes: half the
    devices allocated, the other half filled by as many pods; threshold 56 pods/s) and the
    steady states with none, half or all but STEADY_PODS of the devices in use
    (empty/half/full_500nodes: 64, 60, 60), a CEL selector (selector_empty, 64) and five
    requests matching a PCI root (match_empty, 64). ConsumableCapacity, Partitionable and
    PartitionableBacktracking (dra/consumablecapacity, dra/partitionabledevices; no
    thresholds): their empty/half/full steady states. FirstAvailable (dra/prioritizedlist)
    defines only a 10-pod ``fast`` case upstream; here it is a steady state on empty nodes."""
    devices = nodes * DRA_DEVICES_PER_NODE
    out: dict[str, Workload] = {}

    def add(prefix: str, name: str, shape: DraShape, init: int, burst: int = 0) -> None:
        full = f"{prefix}/{name}_{nodes}nodes"
        out[full] = (Workload(full, lambda c: _many(dra_pod, "p", burst), init_claims=init,
                              dra=shape) if burst else
                     Workload(full, lambda c: _many(dra_pod, "steady-init", STEADY_PODS),
                              steady(STEADY_PODS), init_claims=init, dra=shape,
                              started_first=True))

    # In this order, runs that allocate as many init claims follow each other.
    template = "SchedulingWithResourceClaimTemplate"
    add(template, "empty", BASIC, 0)
    add(template, f"{devices}pods", BASIC, devices // 2, burst=devices // 2)
    add(template, "half", BASIC, devices // 2)
    add(template, "full", BASIC, devices - STEADY_PODS)
    add(template, "selector_empty", SELECTOR, 0)
    add(template, "match_empty", MATCH, 0)
    add("FirstAvailable", "empty", FIRST_AVAILABLE, 0)
    for prefix, shape in (("ConsumableCapacity", CONSUMABLE), ("Partitionable", PARTITIONABLE),
                          ("PartitionableBacktracking", BACKTRACKING)):
        per_node = shape.per_node
        add(prefix, "empty", shape, 0)
        add(prefix, "half", shape, nodes // 2 * per_node)
        add(prefix, "full", shape, nodes * per_node - STEADY_PODS)
    return out


# ----------------------------------------------------------------------------- schedulers
def kube_scheduler_argv(bench: Bench, qps: int, burst: int) -> list[str]:
    cfg = bench.workdir / f"kube-scheduler-{qps}.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: {bench.kubeconfig}, qps: {qps}, burst: {burst}}}\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles: [{{schedulerName: {SCHEDULER_NAME}}}]\n")
    binary = bench.cluster.bin_dir(with_kube_scheduler=True) / "kube-scheduler"
    return [str(binary), f"--config={cfg}", f"--kubeconfig={bench.kubeconfig}",
            f"--authentication-kubeconfig={bench.kubeconfig}",
            f"--authorization-kubeconfig={bench.kubeconfig}", "--bind-address=127.0.0.1",
            "--secure-port=0", f"--cert-dir={bench.workdir / 'certs'}",
            f"--feature-gates={FEATURE_GATES}", "--v=1"]


def ours_argv(bench: Bench, qps: int, burst: int) -> list[str]:
    cfg = bench.workdir / f"ours-{qps}.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{qps: {qps}, burst: {burst}}}\n"
        # As kube-scheduler's above: one replica, no lease to lose to a slow API server
        # (at 5,000 nodes its renewals timed out and ours exited mid-run).
        "leaderElection: {leaderElect: false}\n"
        f"profiles: [{{schedulerName: {SCHEDULER_NAME}}}]\n")
    return [sys.executable, "-m", "scheduler", "--kubeconfig", str(bench.kubeconfig),
            "--config", str(cfg), "--secure-port", "0", "--log-level", "warning",
            "--log-format", "json"]


def ceiling_argv(bench: Bench, qps: int, burst: int) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--trivial-binder",
            str(bench.kubeconfig)]


SCHEDULERS: dict[str, Callable[[Bench, int, int], list[str]]] = {
    "kube-scheduler": kube_scheduler_argv,
    "ours": ours_argv,
    "ceiling": ceiling_argv,
}


def trivial_binder(kubeconfig: str) -> None:
    """The binding ceiling: every pending bench pod to the next node, no decisions, no limit."""
    api = KubeApi(api_client_from(kubeconfig), qps=0, burst=1)
    nodes = [n["metadata"]["name"] for n in api.get("/api/v1/nodes").body["items"]]
    ring = itertools.cycle(nodes)
    query = {"fieldSelector": f"spec.schedulerName={SCHEDULER_NAME},spec.nodeName="}

    def bind(item: dict[str, Any], node: str) -> None:
        meta = item["metadata"]
        api.request("POST", f"{PODS}/{meta['name']}/binding", body={
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": NAMESPACE, "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})

    with ThreadPoolExecutor(16) as pool:
        while True:
            items = api.get(PODS, query).body.get("items") or []
            list(pool.map(bind, items, [next(ring) for _ in items]))
            if not items:
                time.sleep(0.05)


# ----------------------------------------------------------------------------- harness
@dataclass
class Run:
    workload: str
    scheduler: str
    qps: int
    burst: int
    repeat: int
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    # DRA pods: when each was first seen with its claims made (``resourceClaimStatuses``),
    # the earliest moment any scheduler can place it.
    claims_made: dict[str, float] = field(default_factory=dict)
    # When the pods were there for the scheduler: its start, or, started first, the initial
    # pods' creation; settled: how long it took to settle then (started_first), else None.
    started: float = 0.0
    settled_s: float | None = None
    pid: int | None = None
    # The scheduler's CPU seconds when its first and its latest bind were seen.
    cpu_at_first_bind: float | None = None
    cpu_at_last_bind: float | None = None
    # The same for the control plane's processes (CONTROL_PLANE).
    components_at_first_bind: dict[str, float] = field(default_factory=dict)
    components_at_last_bind: dict[str, float] = field(default_factory=dict)
    # At each bind: when, the scheduler's CPU seconds and the control plane's.
    bind_cpu: list[tuple[float, float | None, dict[str, float]]] = field(default_factory=list)
    # The steady states' other legs, by pod name: when this process sent the pod's DELETE,
    # when the pod's claim was first seen without its allocation or gone (its device free
    # for the next pod), and when it was gone.
    deleted: dict[str, float] = field(default_factory=dict)
    delete_returned: dict[str, float] = field(default_factory=dict)
    replaced: dict[str, float] = field(default_factory=dict)
    claim_freed: dict[str, float] = field(default_factory=dict)
    claim_gone: dict[str, float] = field(default_factory=dict)

    def summary(self, load_before: list[float], load_after: list[float],
                calls: dict[str, float], events: dict[str, int],
                requests: dict[str, float], kcm: dict[str, float]) -> dict[str, Any]:
        times = sorted(self.bound.values())
        span = times[-1] - times[0] if len(times) > 1 else float("nan")
        latencies = sorted(
            (t - max(self.created.get(name, self.started), self.started)) * 1000
            for name, t in self.bound.items())
        # The scheduler's own part of a DRA pod's latency: from the later of its claims
        # being made and the scheduler's start, to its bind. The steady states' pods/s is
        # mostly the resourceclaim controller's round trip; this is what is left.
        placing = sorted(
            (t - max(self.claims_made[name], self.started)) * 1000
            for name, t in self.bound.items() if name in self.claims_made)
        # The same for the pods whose claims were made after the first bind: the steady
        # state alone, without the pods that waited for the scheduler to start.
        steady = sorted((t - self.claims_made[name]) * 1000 for name, t in self.bound.items()
                        if times and self.claims_made.get(name, -1.0) >= times[0])

        def pct(q: float, values: list[float] | None = None) -> float:
            return percentile(latencies if values is None else values, q)

        return {
            "workload": self.workload, "scheduler": self.scheduler, "qps": self.qps,
            "burst": self.burst, "repeat": self.repeat, "pods_bound": len(times),
            "pods_per_s": round((len(times) - 1) / span, 1) if span and span > 0 else None,
            "first_bind_s": round(times[0] - self.started, 3) if times else None,
            **({"settled_s": self.settled_s} if self.settled_s is not None else {}),
            "p50_ms": round(pct(0.50), 1), "p99_ms": round(pct(0.99), 1),
            **({"claims_made_to_bind_p50_ms": round(pct(0.50, placing), 1),
                "claims_made_to_bind_p90_ms": round(pct(0.90, placing), 1)} if placing else {}),
            **({"steady_claims_made_to_bind_p50_ms": round(pct(0.50, steady), 1),
                "steady_claims_made_to_bind_p90_ms": round(pct(0.90, steady), 1)}
               if steady else {}),
            # The scheduler process's CPU per pod from its first to its last bind: how much
            # of this machine's two cores each scheduled pod costs, start-up left out.
            "cpu_ms_per_pod": round((self.cpu_at_last_bind - self.cpu_at_first_bind) * 1000
                                    / (len(times) - 1), 2)
            if len(times) > 1 and self.cpu_at_first_bind is not None
            and self.cpu_at_last_bind is not None else None,
            # The same for each control-plane process: what a scheduler's requests and
            # watches cost the API server and etcd, and its writes the controllers.
            "control_plane_cpu_ms_per_pod": {
                comp: round((self.components_at_last_bind[comp] - first) * 1000
                            / (len(times) - 1), 2)
                for comp, first in self.components_at_first_bind.items()
                if comp in self.components_at_last_bind} if len(times) > 1 else {},
            "load_before": load_before, "load_after": load_after,
            # Per bound pod. Status patches include kwok's (pods made Running), and how many
            # of those land before the count depends on timing, not on the scheduler: with
            # kwok stopped, ours made 1 binding, 1 Event and no status patch per pod.
            "api_calls_per_pod": {k: round(v / max(len(times), 1), 2) for k, v in calls.items()},
            # The API server's count above is every component's (node-controller's
            # RegisteredNode and RemovingNode too): these are the Events about this run's
            # pods, per bound pod, by reason (one created Event each; a series is one).
            "pod_events_per_pod": {k: round(v / max(len(times), 1), 2)
                                   for k, v in sorted(events.items())},
            **self.legs(times),
            # Every API request during the run, by anyone (controllers and kwok too), per
            # bound pod, by "VERB resource[/subresource]"; the rare ones left out.
            "api_requests_per_pod": {
                k: round(v / max(len(times), 1), 2) for k, v in sorted(requests.items())
                if v / max(len(times), 1) >= 0.05},
            # kube-controller-manager's resource_claim workqueue over the run: items added
            # per bound pod, and the mean wait in the queue and mean work per item.
            **({"kcm_resource_claim_queue": {
                "adds_per_pod": round(kcm["adds"] / max(len(times), 1), 2),
                "queue_ms_mean": round(kcm["queue_s"] / kcm["queue_n"] * 1000, 1)
                if kcm["queue_n"] else None,
                "work_ms_mean": round(kcm["work_s"] / kcm["work_n"] * 1000, 1)
                if kcm["work_n"] else None}} if kcm else {}),
        }

    def legs(self, times: list[float]) -> dict[str, Any]:
        """Where a steady-state pod's time goes, for the pods created after the first bind
        (by Little's law pods/s = pods pending / mean(created -> bound)): created -> its
        claims made (the resourceclaim controller), claims made -> bound (the scheduler),
        bound -> deleted and -> its replacement created (this process's loop), deleted ->
        its claim freed (deallocated or gone) and gone (the controller). Also the binds in
        the fixed STEADY_SECONDS window after the first bind, which neither the first nor
        the last bind biases."""
        if not times:
            return {}
        first = times[0]
        steady = [n for n, t in self.created.items() if t >= first and n in self.bound]

        def leg(key: str, pairs: Iterable[tuple[float, float]]) -> dict[str, float]:
            values = sorted((end - start) * 1000 for start, end in pairs)
            if not values:
                return {}
            return {f"{key}_p50_ms": round(percentile(values, 0.5), 1),
                    f"{key}_p90_ms": round(percentile(values, 0.9), 1),
                    f"{key}_mean_ms": round(statistics.fmean(values), 1)}

        window = [t for t in times if first < t <= first + STEADY_SECONDS]
        return {
            **leg("steady_created_to_bind", ((self.created[n], self.bound[n]) for n in steady)),
            **leg("steady_created_to_claims_made",
                  ((self.created[n], self.claims_made[n]) for n in steady
                   if n in self.claims_made)),
            **leg("steady_bound_to_deleted",
                  ((self.bound[n], self.deleted[n]) for n in self.deleted if n in self.bound)),
            **leg("steady_delete_call",
                  ((self.deleted[n], self.delete_returned[n]) for n in self.delete_returned
                   if n in self.deleted)),
            **leg("steady_bound_to_replaced",
                  ((self.bound[n], self.replaced[n]) for n in self.replaced if n in self.bound)),
            **leg("steady_deleted_to_claim_freed",
                  ((self.deleted[n], self.claim_freed[n]) for n in self.deleted
                   if n in self.claim_freed)),
            **leg("steady_deleted_to_claim_gone",
                  ((self.deleted[n], self.claim_gone[n]) for n in self.deleted
                   if n in self.claim_gone)),
            **({"window_pods_per_s": round(len(window) / STEADY_SECONDS, 1)}
               if self.deleted and times[-1] >= first + STEADY_SECONDS else {}),
            **self.warm_window(first),
        }

    def warm_window(self, first: float) -> dict[str, Any]:
        """The binds, the scheduler's CPU and the control plane's in the STEADY_SECONDS after
        the warm-up (both schedulers started and settled), per second and per pod."""
        start = first + STEADY_WARMUP_SECONDS
        inside = [b for b in self.bind_cpu if start < b[0] <= start + STEADY_SECONDS]
        if not self.deleted or len(inside) < 2 or self.bind_cpu[-1][0] < start + STEADY_SECONDS:
            return {}
        (_, cpu0, plane0), (_, cpu1, plane1) = inside[0], inside[-1]
        pods = len(inside) - 1
        return {
            "warm_pods_per_s": round(len(inside) / STEADY_SECONDS, 1),
            "warm_cpu_ms_per_pod": round((cpu1 - cpu0) * 1000 / pods, 2)
            if cpu0 is not None and cpu1 is not None else None,
            "warm_control_plane_cpu_ms_per_pod": {
                comp: round((plane1[comp] - v) * 1000 / pods, 2)
                for comp, v in plane0.items() if comp in plane1},
        }


class Bench:
    def __init__(self, cluster: Cluster, workdir: Path) -> None:
        self.cluster = cluster
        self.kubeconfig = cluster.kubeconfig_path
        self.workdir = workdir
        self.api = KubeApi(api_client_from(str(self.kubeconfig)), qps=0, burst=1)
        self.pool = ThreadPoolExecutor(16)
        self.run: Run | None = None
        self.runs = 0
        self._lock = threading.Lock()
        self._names: dict[str, bool] = {}  # name -> bound, for the current run's live pods
        # DRA: the nodes, the shape their slices have, how many init claims are allocated
        # (-1: unknown)
        self.dra_nodes: list[str] = []
        self.dra_shape: DraShape | None = None
        self.dra_init = -1

    # -- cluster setup --------------------------------------------------------------------
    def setup(self, nodes: int, *, dra: bool = False) -> None:
        self.api.request("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        if dra:
            self.setup_dra(nodes)
            return
        for name, value in (("bench-low", 10), ("bench-high", 1000)):
            self.api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body={
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value})
        existing = self.api.get("/api/v1/nodes", {"labelSelector": "type=kwok"}).body["items"]
        if len(existing) == nodes:
            return
        preempt = max(1, nodes // 10)
        groups = [{"count": preempt, "namePrefix": "bench-pre", "zone": "zone-0", "cpu": "4",
                   "memory": "16Gi", "pods": 110, "labels": {"bench/preempt": "yes"},
                   "taints": [PREEMPT_TAINT]}]
        rest = nodes - preempt
        for z in range(ZONES):
            count = rest // ZONES + (1 if z < rest % ZONES else 0)
            groups.append({"count": count, "namePrefix": f"bench-z{z}", "zone": f"zone-{z}",
                           "cpu": "4", "memory": "16Gi", "pods": 110})
        self.cluster.delete_all_nodes()
        self.cluster.apply_nodes({"groups": groups}, timeout=600)

    def setup_dra(self, nodes: int) -> None:
        """node-with-dra-test-driver.yaml nodes (no preemption nodes); their slices, the
        classes and the claim template come with each workload's shape (use_shape)."""
        names = [f"scheduler-perf-dra-{i}" for i in range(nodes)]
        existing = self.api.get("/api/v1/nodes", {"labelSelector": "type=kwok"}).body["items"]
        if sorted(n["metadata"]["name"] for n in existing) != sorted(names):
            self.cluster.delete_all_nodes()
            self.cluster.apply_nodes({"groups": [{
                "count": nodes, "namePrefix": "scheduler-perf-dra", "cpu": "4",
                "memory": "32Gi", "pods": 110, "labels": {"node-with-dra": "true"}}]},
                timeout=600)
        self.dra_nodes = names

    def use_shape(self, shape: DraShape) -> None:
        """Each node's slices, the classes and the template of ``shape``, replacing another
        shape's (and its init claims)."""
        if shape is self.dra_shape:
            return
        slices = f"{RESOURCE_V1}/resourceslices"
        self.api.request("DELETE", slices)
        self._wait_empty(slices, "the slices deleted")
        self._post_all(slices, [s for node in self.dra_nodes for s in shape.slices(node)])
        classes = f"{RESOURCE_V1}/deviceclasses"
        self.api.request("DELETE", classes)
        self._wait_empty(classes, "the classes deleted")
        self._post_all(classes, list(shape.classes))
        templates = f"{RESOURCE_V1}/namespaces/{NAMESPACE}/resourceclaimtemplates"
        self.api.request("DELETE", templates)
        self._wait_empty(templates, "the templates deleted")
        self._post_all(templates, [{
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": DRA_TEMPLATE}, "spec": {"spec": shape.template}}])
        self.dra_shape, self.dra_init = shape, -1

    def allocate_init_claims(self, count: int) -> None:
        """scheduler_perf's allocResourceClaims: ``count`` claims of the shape's init spec in
        their own namespace, allocated directly on random nodes. Claim i always gets the
        i-th of one shuffled list of (node, k-th claim there), so a larger count only adds
        claims and a smaller one deletes the last ones."""
        shape = self.dra_shape
        assert shape is not None
        if count == self.dra_init:
            return
        claims = f"{RESOURCE_V1}/namespaces/{DRA_INIT_NAMESPACE}/resourceclaims"
        if self.dra_init < 0:
            self.api.request("POST", "/api/v1/namespaces", body={
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": DRA_INIT_NAMESPACE}})
            self.api.request("DELETE", claims)
            self._wait_empty(claims, "init claims deleted")
            self.dra_init = 0
        if count < self.dra_init:
            list(self.pool.map(lambda i: self.api.request("DELETE", f"{claims}/test-claim-{i}"),
                               range(count, self.dra_init)))
            self.dra_init = count
            return
        units = init_units(self.dra_nodes, shape)

        def one(index: int) -> None:
            name = f"test-claim-{index}"
            created = self.api.request("POST", claims, body={
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name}, "spec": shape.init_claim})
            if not created.ok:
                raise RuntimeError(f"create claim: {created.status} {created.message()}")
            patched = self.api.request(
                "PATCH", f"{claims}/{name}/status",
                body={"status": {"allocation": shape.allocation(*units[index])}},
                content_type="application/merge-patch+json")
            if not patched.ok:
                raise RuntimeError(f"allocate claim: {patched.status} {patched.message()}")

        list(self.pool.map(one, range(self.dra_init, count)))
        self.dra_init = count

    def wait_claims_made(self, count: int) -> None:
        """Until the resourceclaim controller has made the pending pods' claims and named
        them in the pods' status: the run measures the scheduler, not the controller (which
        the steady state still includes)."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while sum(1 for p in self.api.get(PODS).body.get("items") or []
                  if (p.get("status") or {}).get("resourceClaimStatuses")) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the resourceclaim controller made fewer than {count} claims")
            time.sleep(0.5)

    def _post_all(self, path: str, bodies: list[dict[str, Any]], exist_ok: bool = False) -> None:
        def one(body: dict[str, Any]) -> None:
            response = self.api.request("POST", path, body=body)
            if not response.ok and not (exist_ok and response.status == 409):
                raise RuntimeError(f"POST {path}: {response.status} {response.message()}")

        list(self.pool.map(one, bodies))

    def _wait_empty(self, path: str, what: str) -> None:
        deadline = time.monotonic() + 120
        while self.api.get(path, {"limit": "1"}).body.get("items"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.5)

    def api_calls(self) -> tuple[dict[str, float], dict[str, float]]:
        """The counted write calls, and every request by "VERB resource[/subresource]"."""
        raw = self.api.request("GET", "/metrics", limited=False).body
        totals = dict.fromkeys(COUNTED_CALLS.values(), 0.0)
        requests: Counter[str] = Counter()
        for labels, value in metric_samples(raw, "apiserver_request_total"):
            key = (labels.get("verb"), labels.get("resource"), labels.get("subresource", ""))
            what = COUNTED_CALLS.get(key)
            if what is not None:
                totals[what] += value
            requests[f"{key[0]} {key[1]}" + (f"/{key[2]}" if key[2] else "")] += value
        return totals, dict(requests)

    def kcm_claim_queue(self) -> dict[str, float]:
        """kube-controller-manager's resource_claim workqueue counters (its /metrics, read
        with the admin certificate); empty when they cannot be read."""
        port = self.cluster._state()["ports"]["kube-controller-manager"]
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        pki = self.cluster.pki
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx,
                                        timeout=10) as response:
                raw = response.read().decode()
        except OSError:
            return {}
        out = dict.fromkeys(("adds", "queue_s", "queue_n", "work_s", "work_n"), 0.0)
        for metric, key in (("workqueue_adds_total", "adds"),
                            ("workqueue_queue_duration_seconds_sum", "queue_s"),
                            ("workqueue_queue_duration_seconds_count", "queue_n"),
                            ("workqueue_work_duration_seconds_sum", "work_s"),
                            ("workqueue_work_duration_seconds_count", "work_n")):
            for labels, value in metric_samples(raw, metric):
                if labels.get("name") == "resource_claim":
                    out[key] += value
        return out

    def events(self) -> list[dict[str, Any]]:
        """The Events of the bench namespace."""
        items: list[dict[str, Any]] = []
        query = {"limit": "500"}
        while True:
            body = self.api.get(f"/api/v1/namespaces/{NAMESPACE}/events", query).body
            items += body.get("items") or []
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                return items
            query = {"limit": "500", "continue": token}

    def pod_events(self, pods: Iterable[str], seen: set[str]) -> dict[str, int]:
        """How many Events, not among ``seen`` (their uids), there are about these pods, by
        reason (pod names repeat across invocations on a kept cluster)."""
        names = set(pods)
        return dict(Counter(
            event.get("reason") or "" for event in self.events()
            if event["metadata"]["uid"] not in seen
            and (event.get("involvedObject") or {}).get("name") in names))

    # -- pods -----------------------------------------------------------------------------
    def create_groups(self, groups: list[dict[str, Any]]) -> None:
        """PodGroups named for this run, as their members' references are (create)."""
        def one(body: dict[str, Any]) -> None:
            body["metadata"]["name"] += f"-r{self.runs}"
            response = self.api.request("POST", POD_GROUPS, body=body)
            if not response.ok:
                raise RuntimeError(f"create PodGroup: {response.status} {response.message()}")

        list(self.pool.map(one, groups))

    def create(self, pods: list[dict[str, Any]]) -> None:
        list(self.pool.map(self.create_one, pods))

    def create_one(self, body: dict[str, Any]) -> None:
        # A name never reused across runs: kwok deletes pods by name, late, and would
        # take a new pod of the next run for the one it was told to delete.
        body["metadata"]["name"] += f"-r{self.runs}"
        group = body["spec"].get("schedulingGroup")
        if group is not None:
            group["podGroupName"] += f"-r{self.runs}"
        name = body["metadata"]["name"]
        with self._lock:  # before the POST: its bind may be watched before it returns
            self._names.setdefault(name, False)
            if self.run is not None:
                self.run.created[name] = time.monotonic()
        response = self.api.request("POST", PODS, body=body)
        if not response.ok:
            raise RuntimeError(f"create pod: {response.status} {response.message()}")

    def delete(self, name: str) -> None:
        with self._lock:
            self._names.pop(name, None)
            if self.run is not None:
                self.run.deleted[name] = time.monotonic()
        self.api.request("DELETE", f"{PODS}/{name}", body={"gracePeriodSeconds": 0})
        with self._lock:
            if self.run is not None:
                self.run.delete_returned[name] = time.monotonic()

    def replace(self, name: str, body: dict[str, Any]) -> None:
        """Delete a bound pod, then create ``body`` in its place (the steady states)."""
        self.delete(name)
        self.create_one(body)
        with self._lock:
            if self.run is not None:
                self.run.replaced[name] = time.monotonic()

    def bound_names(self) -> list[str]:
        with self._lock:
            return [n for n, b in self._names.items() if b]

    def pending(self) -> int:
        with self._lock:
            return sum(1 for b in self._names.values() if not b)

    def wait_bound(self, prefix: str, stop: threading.Event) -> None:
        while not stop.wait(0.1):
            with self._lock:
                if all(b for n, b in self._names.items() if n.startswith(prefix)):
                    return

    def clean(self) -> None:
        self.api.request("DELETE", PODS, body={"gracePeriodSeconds": 0})
        # Each run's groups are its own; their finalizer goes once their pods are gone.
        self.api.request("DELETE", POD_GROUPS, body={})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not self.api.get(PODS, {"limit": "1"}).body.get("items"):
                break
            time.sleep(0.5)
        # The pods' claims go with them (the resourceclaim controller deletes them, and with
        # them their devices), before the next run counts on those devices.
        self._wait_empty(f"{RESOURCE_V1}/namespaces/{NAMESPACE}/resourceclaims",
                         "the pods' ResourceClaims deleted")
        with self._lock:
            self._names.clear()

    def watch_binds(self, stop: threading.Event) -> None:
        """Record the first moment each pod is seen with a node (and forget deleted pods)."""
        self._watch(PODS, stop, self._observe)

    def watch_claims(self, stop: threading.Event) -> None:
        """Record when each pod's claim is first seen without its allocation, and gone."""
        self._watch(f"{RESOURCE_V1}/namespaces/{NAMESPACE}/resourceclaims", stop,
                    self._observe_claim)

    def _watch(self, path: str, stop: threading.Event,
               observe: Callable[[str, dict[str, Any]], None]) -> None:
        """Hand every event of ``path`` from now on to ``observe`` until ``stop``; a watch
        error starts again from the current resourceVersion."""
        rv = self.api.get(path, {"limit": "1"}).body["metadata"]["resourceVersion"]
        while not stop.is_set():
            for event in self.api.watch(path, rv, timeout_seconds=int(RUN_TIMEOUT)):
                if stop.is_set():
                    return
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    print(f"  watch error on {path}: {obj.get('message')}", file=sys.stderr)
                    rv = self.api.get(path, {"limit": "1"}).body["metadata"]["resourceVersion"]
                    break
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                observe(event["type"], obj)

    def _observe_claim(self, kind: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        owners = (obj.get("metadata") or {}).get("ownerReferences") or []
        pod_name = next((o.get("name") for o in owners if o.get("kind") == "Pod"), None)
        with self._lock:
            run = self.run
            if run is None or pod_name not in run.deleted:
                return
            if kind == "DELETED":
                run.claim_gone.setdefault(pod_name, now)
            if kind == "DELETED" or not (obj.get("status") or {}).get("allocation"):
                run.claim_freed.setdefault(pod_name, now)

    def _observe(self, kind: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        name = (obj.get("metadata") or {}).get("name")
        with self._lock:
            if kind == "DELETED":
                self._names.pop(name, None)
                return
            if self.run is not None and name not in self.run.claims_made \
                    and (obj.get("status") or {}).get("resourceClaimStatuses"):
                self.run.claims_made[name] = now
            if (obj.get("spec") or {}).get("nodeName") and self.run is not None \
                    and name not in self.run.bound and name in self._names:
                self.run.bound[name] = now
                self._names[name] = True
                if self.run.pid is not None:
                    cpu = cpu_seconds(self.run.pid)
                    if cpu is not None:
                        if self.run.cpu_at_first_bind is None:
                            self.run.cpu_at_first_bind = cpu
                        self.run.cpu_at_last_bind = cpu
                self.run.components_at_last_bind = self.components_cpu()
                if not self.run.components_at_first_bind:
                    self.run.components_at_first_bind = self.run.components_at_last_bind
                self.run.bind_cpu.append((now, self.run.cpu_at_last_bind,
                                          self.run.components_at_last_bind))

    def components_cpu(self) -> dict[str, float]:
        """The CPU seconds each control-plane process has used so far."""
        out = {}
        for comp in CONTROL_PLANE:
            found = self.cluster._read_pid(comp)
            cpu = cpu_seconds(found[0]) if found is not None else None
            if cpu is not None:
                out[comp] = cpu
        return out

    # -- one run --------------------------------------------------------------------------
    @staticmethod
    def start_scheduler(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        with open(log_path, "ab") as log:
            return subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    @staticmethod
    def check_running(proc: subprocess.Popen[bytes], scheduler: str, log_path: Path) -> None:
        if proc.poll() is not None:
            # The log goes with the cluster's state directory: its end is kept here.
            tail = log_path.read_text(errors="replace").splitlines()[-40:]
            raise RuntimeError(f"{scheduler} exited with {proc.returncode}; the end "
                               f"of {log_path}:\n" + "\n".join(tail))

    @staticmethod
    def stop_scheduler(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):  # it may have exited
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def wait_settled(self, proc: subprocess.Popen[bytes], scheduler: str,
                     log_path: Path) -> float:
        """Until the scheduler's process has started and gone quiet (its caches listed, and
        ours' operator started), as scheduler_perf's scheduler is before a workload's pods:
        how long that took."""
        began = time.monotonic()
        deadline = began + RUN_TIMEOUT
        quiet = 0
        last = cpu_seconds(proc.pid) or 0.0
        while quiet < SETTLED_SAMPLES:
            time.sleep(SETTLED_INTERVAL)
            self.check_running(proc, scheduler, log_path)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{scheduler} did not settle in {RUN_TIMEOUT:.0f} s")
            cpu = cpu_seconds(proc.pid) or last
            quiet = quiet + 1 if cpu - last < SETTLED_CPU_SHARE * SETTLED_INTERVAL else 0
            last = cpu
        return round(time.monotonic() - began, 2)

    def run_one(self, workload: Workload, scheduler: str, qps: int, burst: int,
                repeat: int) -> dict[str, Any]:
        self.clean()
        if workload.dra is not None and workload.init_claims is not None:
            self.use_shape(workload.dra)
            self.allocate_init_claims(workload.init_claims)
        self.runs += 1
        run = Run(workload.name, scheduler, qps, burst, repeat)
        self.run = run
        stop, stop_stream = threading.Event(), threading.Event()
        watcher = threading.Thread(target=self.watch_binds, args=(stop,), daemon=True)
        watcher.start()
        if workload.dra is not None:
            threading.Thread(target=self.watch_claims, args=(stop,), daemon=True).start()
        if workload.groups is not None:
            self.create_groups(workload.groups())
        log_path = self.workdir / f"{scheduler}.log"
        argv = SCHEDULERS[scheduler](self, qps, burst)
        initial = workload.initial(0)
        # Started first, the scheduler runs from here; else once the pods wait for it.
        proc = self.start_scheduler(argv, log_path) if workload.started_first else None
        streamer = None
        try:
            if proc is not None:
                run.settled_s = self.wait_settled(proc, scheduler, log_path)
            else:
                self.create(initial)
                if workload.init_claims is not None:
                    self.wait_claims_made(len(initial))
            load_before = loadavg()
            calls_before, requests_before = self.api_calls()
            kcm_before = self.kcm_claim_queue()
            events_before = {event["metadata"]["uid"] for event in self.events()}
            run.started = time.monotonic()
            if proc is not None:
                self.create(initial)
            else:
                proc = self.start_scheduler(argv, log_path)
            run.pid = proc.pid
            if workload.stream is not None:
                streamer = threading.Thread(target=workload.stream, args=(self, stop_stream),
                                            daemon=True)
                streamer.start()
            deadline = run.started + RUN_TIMEOUT
            while time.monotonic() < deadline:
                time.sleep(0.1)
                self.check_running(proc, scheduler, log_path)
                if workload.churn_until is not None and len(run.bound) >= workload.churn_until:
                    stop_stream.set()
                if self.pending() == 0 and (streamer is None or not streamer.is_alive()):
                    break
            else:
                print(f"  timeout: {self.pending()} pods still pending", file=sys.stderr)
        finally:
            stop.set()
            stop_stream.set()
            if proc is not None:
                self.stop_scheduler(proc)
            if streamer is not None:
                streamer.join(10)
        calls_after, requests_after = self.api_calls()
        calls = {k: v - calls_before[k] for k, v in calls_after.items()}
        requests = {k: v - requests_before.get(k, 0.0) for k, v in requests_after.items()}
        kcm_after = self.kcm_claim_queue()
        kcm = {k: v - kcm_before[k] for k, v in kcm_after.items()} \
            if kcm_before and kcm_after else {}
        events = self.pod_events(run.created, events_before)
        result = run.summary(load_before, loadavg(), calls, events, requests, kcm)
        self.run = None
        return result


# ----------------------------------------------------------------------------- report
def bucket_bound(qps: int, burst: int, pods: int) -> float | None:
    """The most pods/s, first to last bind, that a client-side token bucket lets through
    when each pod takes one write: ``burst`` binds at once, then ``qps`` a second, however
    fast the decisions. None when the bucket never runs dry."""
    if qps <= 0 or pods <= max(burst, 1):
        return None
    return (pods - 1) / ((pods - burst) / qps)


def ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def median(workload: str, qps: int, scheduler: str, key: str) -> float | None:
        values = [r[key] for r in results if r["workload"] == workload and r["qps"] == qps
                  and r["scheduler"] == scheduler and r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    rows = []
    for workload, qps in dict.fromkeys((r["workload"], r["qps"]) for r in results):
        row: dict[str, Any] = {"workload": workload, "qps": qps}
        for scheduler in SCHEDULERS:
            for key in ("pods_per_s", "first_bind_s", "p50_ms", "p99_ms", "cpu_ms_per_pod",
                        "claims_made_to_bind_p50_ms", "steady_claims_made_to_bind_p50_ms",
                        "warm_pods_per_s", "warm_cpu_ms_per_pod"):
                row[f"{scheduler}_{key}"] = median(workload, qps, scheduler, key)
        ours, kube = row["ours_pods_per_s"], row["kube-scheduler_pods_per_s"]
        row["ratio"] = round(ours / kube, 2) if ours and kube else None
        warm_ours, warm_kube = row["ours_warm_pods_per_s"], row["kube-scheduler_warm_pods_per_s"]
        row["warm_ratio"] = round(warm_ours / warm_kube, 2) if warm_ours and warm_kube else None
        ceiling = row["ceiling_pods_per_s"]
        row["of_ceiling"] = round(ours / ceiling, 2) if ours and ceiling else None
        bounds = [bucket_bound(r["qps"], r["burst"], r["pods_bound"]) for r in results
                  if r["workload"] == workload and r["qps"] == qps
                  and r["scheduler"] in ("ours", "kube-scheduler")]
        known = [b for b in bounds if b is not None]
        bound = statistics.median(known) if known else None
        shares = {s: round(row[f"{s}_pods_per_s"] / bound, 2)
                  if bound and row[f"{s}_pods_per_s"] else None for s in ("ours", "kube-scheduler")}
        # Reported where it binds: a scheduler reaches 90% of it.
        if not any(v is not None and v >= 0.9 for v in shares.values()):
            bound, shares = None, dict.fromkeys(shares)
        row["bucket_bound_pods_per_s"] = round(bound, 1) if bound else None
        for scheduler, share in shares.items():
            row[f"{scheduler}_of_bound"] = share
        rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['workload']}\nQPS {r['qps']}" for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(max(8, 1.4 * len(rows)), 11))
    width = 0.27
    for ax, key, title in zip(axes, ("pods_per_s", "p50_ms", "p99_ms"),
                              ("pods/s (first to last bind)", "p50 latency (ms)",
                               "p99 latency (ms)"), strict=True):
        for i, scheduler in enumerate(SCHEDULERS):
            values = [r[f"{scheduler}_{key}"] or 0 for r in rows]
            ax.bar([x + (i - 1) * width for x in range(len(rows))], values, width,
                   label=scheduler)
        ax.set_title(title)
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| workload | QPS | kube-scheduler pods/s | ours pods/s | ours/kube | ceiling pods/s |"
          " ours/ceiling | token-bucket bound pods/s (kube/ours share) |"
          " first bind kube/ours (s) | p99 kube/ours (ms) | CPU per pod kube/ours (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        bound = r.get("bucket_bound_pods_per_s")
        shares = f" ({r['kube-scheduler_of_bound']} / {r['ours_of_bound']})" if bound else ""
        print(f"| {r['workload']} | {r['qps']} | {r['kube-scheduler_pods_per_s']} | "
              f"{r['ours_pods_per_s']} | {r['ratio']} | {r['ceiling_pods_per_s'] or '-'} | "
              f"{r['of_ceiling'] or '-'} | {bound or '-'}{shares} | "
              f"{r['kube-scheduler_first_bind_s']} / "
              f"{r['ours_first_bind_s']} | {r['kube-scheduler_p99_ms']} / {r['ours_p99_ms']} | "
              f"{r['kube-scheduler_cpu_ms_per_pod']} / {r['ours_cpu_ms_per_pod']} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--quick", action="store_true",
                        help="smoke: 100 nodes, a tenth of the pods, one repeat, QPS 50 only")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the pod counts")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--qps", default="50/100,1000/1000", help="QPS/burst settings")
    parser.add_argument("--workloads", default="all",
                        help="comma-separated names, 'all' (but DRA) or 'dra'")
    parser.add_argument("--schedulers", default="kube-scheduler,ours",
                        help="which of kube-scheduler and ours run (the ceiling runs with "
                             "SchedulingBasic; the table needs both)")
    parser.add_argument("--keep-cluster", action="store_true")
    parser.add_argument("--trivial-binder", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--report", metavar="JSON", type=Path,
                        help="no run: the table and plot again from a results file's runs")
    args = parser.parse_args(argv)
    if args.trivial_binder:
        trivial_binder(args.trivial_binder)
        return 0
    if args.report:
        report(args.report)
        return 0
    if args.quick:
        args.nodes, args.scale, args.repeats, args.qps = 100, 0.1, 1, "50/100"
    settings = [tuple(int(x) for x in s.split("/")) for s in args.qps.split(",")]
    table = workloads(args.scale, args.nodes)
    dra = [name for name, w in table.items() if w.init_claims is not None]
    names = ([n for n in table if n not in dra] if args.workloads == "all" else
             dra if args.workloads == "dra" else args.workloads.split(","))
    dra_run = any(name in dra for name in names)
    if dra_run and not all(name in dra for name in names):
        parser.error("the DRA workloads run alone (their nodes have no preemption group)")
    cluster = Cluster(os.environ.get("BENCH_CLUSTER_DIR") or ROOT / ".cluster-bench")
    cluster.up(node_lease_seconds=lease_seconds_for(args.nodes))
    workdir = cluster.state_dir / "bench"
    workdir.mkdir(exist_ok=True)
    results: list[dict[str, Any]] = []
    started = time.strftime("%Y%m%d-%H%M%S")
    try:
        bench = Bench(cluster, workdir)
        bench.setup(args.nodes, dra=dra_run)
        for name, (qps, burst), repeat in itertools.product(names, settings,
                                                            range(args.repeats)):
            # Alternate who goes first, so neither always runs on the fresher cluster.
            order = ["kube-scheduler", "ours"] if repeat % 2 == 0 else ["ours", "kube-scheduler"]
            order = [s for s in order if s in args.schedulers.split(",")]
            if name == "SchedulingBasic" and repeat == 0 and (qps, burst) == settings[0]:
                order.append("ceiling")
            for scheduler in order:
                try:
                    result = bench.run_one(table[name], scheduler, qps, burst, repeat)
                except RuntimeError as err:
                    # A setup the API server refuses, or a scheduler that exits, costs
                    # this workload, not the runs of the others.
                    print(f"  {name} ({scheduler}): {err}", file=sys.stderr, flush=True)
                    break
                results.append(result)
                print(json.dumps(result), flush=True)
        bench.clean()
    finally:
        if not args.keep_cluster:
            cluster.down()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"e2e-{started}.json"
    out.write_text(json.dumps({"nodes": args.nodes, "scale": args.scale, "repeats":
                               args.repeats, "runs": results}, indent=1))
    report(out)
    return 0


def report(path: Path) -> None:
    """The summary of a results file's runs: written into it, printed, plotted beside it."""
    data = json.loads(path.read_text())
    rows = ratios(data["runs"])
    data["summary"] = rows
    path.write_text(json.dumps(data, indent=1))
    print_table(rows)
    try:
        plot(rows, path.with_suffix(".png"))
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no plot", file=sys.stderr)
    print(f"results: {path}")


if __name__ == "__main__":
    sys.exit(main())
