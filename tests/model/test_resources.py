"""PodRequests / NonZeroRequested facts from component-helpers resource/helpers_test.go
(TestPodResourceRequests, TestPodLevelResourceRequests) and kube-scheduler framework/types_test.go
(TestPodInfoCalculateResources, TestCalculatePodResourcesWithResize), v1.36."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    ResourceList,
    is_extended_resource_name,
    is_scalar_resource,
    node_allocatable,
    parse_resource_list,
    pod_non_zero_requests,
    pod_requests,
    pod_resources,
)

MI = 1024 * 1024
INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
DEFERRED = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]


def c(
    name: str = "c", *, sidecar: bool = False, extra: dict[str, str] | None = None,
    **requests: str,
) -> dict[str, Any]:
    """A container; keyword names use _ for - (ephemeral_storage, hugepages_2Mi)."""
    reqs = {k.replace("_", "-"): v for k, v in requests.items()}
    out: dict[str, Any] = {"name": name, "resources": {"requests": {**reqs, **(extra or {})}}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def cs(name: str, *, allocated: dict[str, str] | None = None, **requests: str) -> dict[str, Any]:
    """A container status with status.resources.requests (and allocatedResources)."""
    reqs = {k.replace("_", "-"): v for k, v in requests.items()}
    out: dict[str, Any] = {"name": name, "resources": {"requests": reqs}}
    if allocated is not None:
        out["allocatedResources"] = allocated
    return out


def pod(
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    *,
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, str] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    pod_status: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers if containers is not None else []}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    status: dict[str, Any] = {}
    if statuses:
        status["containerStatuses"] = statuses
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if conditions:
        status["conditions"] = conditions
    if pod_status is not None:
        status["resources"] = {"requests": pod_status}
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec, "status": status}


REQUEST_CASES = [
    pytest.param(pod([c(cpu="1")], [c("i", cpu="4")]), {CPU: 4000},
                 id="a larger init container sets the pod request"),
    pytest.param(pod([c("a", cpu="2"), c("b", cpu="3")], [c("i", cpu="2")]), {CPU: 5000},
                 id="app containers are summed and win over a smaller init container"),
    pytest.param(
        pod([c("a", cpu="2"), c("b", cpu="3")], [c("i", cpu="2")], overhead={"cpu": "1",
                                                                             "memory": "1Gi"}),
        {CPU: 6000, MEMORY: 1024 * MI},
        id="pod overhead is added on top of the containers",
    ),
    pytest.param(pod([c("c1", cpu="1")], [c("s1", sidecar=True, cpu="1")]), {CPU: 2000},
                 id="a restartable init container runs beside the app containers"),
    pytest.param(
        pod([c("c1", cpu="1")], [c("i1", cpu="5"), c("s1", sidecar=True, cpu="1"),
                                 c("s2", sidecar=True, cpu="2"), c("s3", sidecar=True, cpu="3")]),
        {CPU: 7000},
        id="several sidecars plus the app container beat an earlier larger init container",
    ),
    pytest.param(
        pod([c("c1", cpu="1")], [c("i1", cpu="5"), c("s1", sidecar=True, cpu="1"),
                                 c("s2", sidecar=True, cpu="2"), c("i2", cpu="5"),
                                 c("s3", sidecar=True, cpu="3")]),
        {CPU: 8000},
        id="an init container counts with the sidecars started before it but not after it",
    ),
    pytest.param(pod([c("c1", cpu="100")], [c("s1", sidecar=True, cpu="10"), c("i1", cpu="200")]),
                 {CPU: 210_000}, id="a sidecar started before an init container adds to it"),
    pytest.param(
        pod([c("c1", cpu="2", memory="1G"), c("c2", cpu="1", memory="1G")],
            [c("i1", cpu="2", memory="1G"), c("i2", cpu="2", memory="3G")]),
        {CPU: 3000, MEMORY: 3 * 10**9},
        id="the max of app sum and init containers is taken per resource",
    ),
    pytest.param(pod([c(), c()]), {}, id="containers without requests request nothing"),
    pytest.param(pod([c(cpu="0", memory="0")]), {},
                 id="explicit zero requests are left out of the resource list"),
    pytest.param(pod([c(cpu="0.5m"), c(cpu="0.5m")]), {CPU: 1},
                 id="quantities are summed exactly before rounding to millicores"),
    pytest.param(
        pod([c(cpu="250m", memory="64Mi", ephemeral_storage="1Gi",
               extra={"example.com/gpu": "2"})]),
        {CPU: 250, MEMORY: 64 * MI, EPHEMERAL_STORAGE: 1024 * MI, "example.com/gpu": 2},
        id="extended resources and ephemeral storage are counted in base units",
    ),
    pytest.param(pod([], pod_level={"memory": "2Mi"}), {MEMORY: 2 * MI},
                 id="a pod-level memory request alone is the pod request"),
    pytest.param(pod([c(cpu="2m")], pod_level={"memory": "2Mi"}), {CPU: 2, MEMORY: 2 * MI},
                 id="pod-level memory and container-level cpu combine"),
    pytest.param(pod([c(storage="3Mi")], pod_level={"storage": "2Mi"}), {"storage": 3 * MI},
                 id="an unsupported pod-level resource does not override containers"),
    pytest.param(pod([c(memory="3Mi")], pod_level={"storage": "2Mi"}), {MEMORY: 3 * MI},
                 id="only unsupported pod-level resources mean pod-level requests are unset"),
    pytest.param(pod([c(cpu="2m", memory="3Mi")], pod_level={"cpu": "8m", "memory": "6Mi"}),
                 {CPU: 8, MEMORY: 6 * MI},
                 id="pod-level requests override container requests"),
    pytest.param(
        pod([c(cpu="2m", memory="3Mi")], [c("s", sidecar=True, cpu="4m", memory="5Mi"),
                                          c("i", cpu="8m", memory="6Mi")]),
        {CPU: 12, MEMORY: 11 * MI},
        id="an init container after a sidecar sets the request when it is larger",
    ),
    pytest.param(
        pod([c(cpu="2m", memory="3Mi")], [c("s", sidecar=True, cpu="4m", memory="5Mi"),
                                          c("i", cpu="8m", memory="6Mi")],
            pod_level={"cpu": "18m", "memory": "15Mi"}),
        {CPU: 18, MEMORY: 15 * MI},
        id="pod-level requests override sidecars and init containers too",
    ),
    pytest.param(
        pod([c(memory="4Mi", hugepages_1Gi="1Gi")],
            pod_level={"cpu": "1", "hugepages-2Mi": "10Mi"}),
        {CPU: 1000, MEMORY: 4 * MI, "hugepages-2Mi": 10 * MI, "hugepages-1Gi": 1024 * MI},
        id="pod-level hugepages override only the page sizes set at pod level",
    ),
    pytest.param(pod([c(cpu="1")], pod_level={"cpu": "500m"}, overhead={"cpu": "100m"}),
                 {CPU: 600}, id="overhead is added after pod-level requests apply"),
    pytest.param(
        pod([c("container-1", cpu="4")], statuses=[cs("container-1", cpu="2")],
            conditions=INFEASIBLE),
        {CPU: 2000},
        id="an infeasible resize counts what the container actually has",
    ),
    pytest.param(
        pod([c("container-1", cpu="6")],
            statuses=[cs("container-1", cpu="2", allocated={"cpu": "4"})], conditions=INFEASIBLE),
        {CPU: 4000},
        id="an infeasible resize takes the max of actuated and allocated resources",
    ),
    pytest.param(
        pod([c("container-1", cpu="4")], statuses=[cs("container-1", cpu="2")]),
        {CPU: 4000},
        id="a pending resize counts the larger of spec and status",
    ),
    pytest.param(
        pod([c("container-1", cpu="30m", memory="20M", ephemeral_storage="10G")],
            statuses=[cs("container-1", cpu="10m", memory="30M", ephemeral_storage="20G",
                         allocated={"cpu": "20m", "memory": "10M",
                                    "ephemeral-storage": "30G"})]),
        {CPU: 30, MEMORY: 30 * 10**6, EPHEMERAL_STORAGE: 30 * 10**9},
        id="the three-way maximum is taken per resource",
    ),
    pytest.param(
        pod([], [c("restartable-init-1", sidecar=True, cpu="4")],
            init_statuses=[cs("restartable-init-1", cpu="2")], conditions=INFEASIBLE),
        {CPU: 2000},
        id="an infeasible resize of a sidecar counts its actual resources",
    ),
    pytest.param(
        pod([], [c("restartable-init-1", sidecar=True, cpu="4")],
            init_statuses=[cs("restartable-init-1", cpu="2")]),
        {CPU: 4000},
        id="a sidecar without an infeasible resize counts its spec",
    ),
    pytest.param(
        pod([], [c("init-1", cpu="4")], init_statuses=[cs("init-1", cpu="2")],
            conditions=INFEASIBLE),
        {CPU: 4000},
        id="status resources of a regular init container are ignored",
    ),
    pytest.param(
        pod([c("c1", cpu="700m", memory="800Mi")], statuses=[cs("c1", cpu="500m",
                                                                memory="500Mi")],
            conditions=DEFERRED),
        {CPU: 700, MEMORY: 800 * MI},
        id="a deferred resize counts the larger spec",
    ),
    pytest.param(
        pod([c("c1", cpu="500m", memory="500Mi")], statuses=[cs("c1", cpu="700m",
                                                                memory="500Mi")],
            pod_level={"cpu": "700m", "memory": "500Mi"},
            pod_status={"cpu": "500m", "memory": "500Mi"}),
        {CPU: 700, MEMORY: 500 * MI},
        id="pod-level requests use the larger of pod spec and pod status",
    ),
    pytest.param(
        pod([c("c1", cpu="1")], pod_level={"cpu": "2"}, pod_status={"cpu": "1"},
            conditions=INFEASIBLE),
        {CPU: 1000},
        id="an infeasible pod-level resize counts the pod's actual resources",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), REQUEST_CASES)
def test_pod_requests(raw: dict[str, Any], expected: ResourceList) -> None:
    assert pod_requests(raw) == expected
    assert pod_resources(raw)[0] == expected


NON_ZERO_CASES = [
    pytest.param(pod([c()]), (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
                 id="a container without requests gets the 100m and 200Mi defaults"),
    pytest.param(pod([c(cpu="500m", memory="500Mi")]), (500, 500 * MI),
                 id="a container with requests keeps them"),
    pytest.param(pod([c(cpu="500m", memory="500Mi"), c(cpu="700m", memory="800Mi")]),
                 (1200, 1300 * MI), id="two containers with requests are summed"),
    pytest.param(pod([c(), c()]), (200, 2 * DEFAULT_MEMORY_REQUEST),
                 id="each container without requests gets its own default"),
    pytest.param(pod([c(cpu="1")]), (1000, DEFAULT_MEMORY_REQUEST),
                 id="only the missing resource is defaulted"),
    pytest.param(pod([c(cpu="0", memory="0")]), (0, 0),
                 id="an explicit zero request is not replaced by the default"),
    pytest.param(pod([c()], [c("i")]), (100, DEFAULT_MEMORY_REQUEST),
                 id="an init container without requests does not add to the app defaults"),
    pytest.param(pod([c()], [c("s", sidecar=True)]), (200, 2 * DEFAULT_MEMORY_REQUEST),
                 id="a sidecar without requests adds its own defaults"),
    pytest.param(pod([c(cpu="500m", memory="500Mi")], [c("i", cpu="500m", memory="500Mi")],
                     pod_level={"cpu": "1200m", "memory": "1200Mi"}),
                 (1200, 1200 * MI), id="pod-level requests are the non-zero requests"),
    pytest.param(pod([c()], [c("i")], pod_level={"memory": "1200Mi"}),
                 (DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
                 id="with pod-level memory only cpu is defaulted per container"),
    pytest.param(pod([c()], [c("i")], pod_level={"cpu": "500m"}),
                 (500, DEFAULT_MEMORY_REQUEST),
                 id="with pod-level cpu only memory is defaulted per container"),
    pytest.param(pod([c(ephemeral_storage="800Mi")], pod_level={"cpu": "500m"}),
                 (500, DEFAULT_MEMORY_REQUEST),
                 id="unsupported container resources do not stop the memory default"),
    pytest.param(pod([c()], overhead={"cpu": "100m", "memory": "200Mi"}),
                 (200, 2 * DEFAULT_MEMORY_REQUEST),
                 id="overhead is added to the defaulted requests"),
    pytest.param(
        pod([c("c1", cpu="500m", memory="500Mi")], [c("i1", cpu="700m", memory="800Mi"),
                                                    c("s1", sidecar=True, cpu="700m",
                                                      memory="800Mi")],
            statuses=[cs("c1", cpu="500m", memory="500Mi")],
            init_statuses=[cs("i1", cpu="700m", memory="800Mi"),
                           cs("s1", cpu="700m", memory="800Mi")]),
        (1200, 1300 * MI),
        id="a running pod with a sidecar counts app plus sidecar",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), NON_ZERO_CASES)
def test_pod_non_zero_requests(raw: dict[str, Any], expected: tuple[int, int]) -> None:
    assert pod_non_zero_requests(raw) == expected
    assert pod_resources(raw)[1:] == expected


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(pod([c(cpu="abc")]), "spec.containers[0].resources.requests.cpu",
                     id="a malformed app container request names its container"),
        pytest.param(pod([c()], [c("i"), c("j", memory="1Kb")]),
                     "spec.initContainers[1].resources.requests.memory",
                     id="a malformed init container request names the init container"),
        pytest.param(pod([c()], overhead={"cpu": "x"}), "spec.overhead.cpu",
                     id="malformed overhead is reported"),
        pytest.param(pod([c()], pod_level={"memory": "5 Gi"}), "spec.resources.requests.memory",
                     id="a malformed pod-level request is reported"),
        pytest.param(pod([c("a")], statuses=[cs("a", cpu="?")]),
                     "status.containerStatuses[0].resources.requests.cpu",
                     id="a malformed status request is reported"),
        pytest.param({"spec": {"containers": "nope"}}, "spec.containers",
                     id="containers that are not a list are reported"),
        pytest.param({"spec": {"containers": [{"resources": {"requests": ["1"]}}]}},
                     "spec.containers[0].resources.requests",
                     id="requests that are not a map are reported"),
    ],
)
def test_errors_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        pod_resources(raw)
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("name", "scalar", "extended"),
    [
        pytest.param("cpu", False, False, id="cpu is native and not scalar"),
        pytest.param("memory", False, False, id="memory is native and not scalar"),
        pytest.param("ephemeral-storage", False, False, id="ephemeral storage is not scalar"),
        pytest.param("pods", False, False, id="pods is not scalar"),
        pytest.param("example.com/gpu", True, True, id="a prefixed name is an extended resource"),
        pytest.param("nvidia.com/gpu", True, True, id="the nvidia gpu is an extended resource"),
        pytest.param("kubernetes.io/foo", True, False,
                     id="a kubernetes.io prefixed name is scalar but not extended"),
        pytest.param("foo.kubernetes.io/bar", True, False,
                     id="a sub-namespace of kubernetes.io is still native"),
        pytest.param("hugepages-2Mi", True, False, id="hugepages are scalar"),
        pytest.param("attachable-volumes-csi-x", True, False,
                     id="attachable volumes are scalar"),
        pytest.param("foo", False, False, id="an unprefixed unknown name is not scalar"),
        pytest.param("requests.example.com/x", False, False,
                     id="a name with the quota requests prefix is not extended"),
        pytest.param("example.com/bad name", False, False,
                     id="a name that is not a qualified name is not extended"),
    ],
)
def test_resource_name_classes(name: str, scalar: bool, extended: bool) -> None:
    assert is_scalar_resource(name) is scalar
    assert is_extended_resource_name(name) is extended


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(
            {"status": {"allocatable": {"cpu": "3900m", "memory": "7Gi", "pods": "110"},
                        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
            {"cpu": 3900, "memory": 7 * 1024 * MI, "pods": 110},
            id="allocatable is used when present",
        ),
        pytest.param(
            {"status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": 110}}},
            {"cpu": 4000, "memory": 8 * 1024 * MI, "pods": 110},
            id="capacity stands in when allocatable is absent",
        ),
        pytest.param({"status": {"allocatable": {}, "capacity": {"cpu": "4"}}}, {},
                     id="an empty allocatable is not replaced by capacity"),
        pytest.param({}, {}, id="a node without status has nothing allocatable"),
    ],
)
def test_node_allocatable(node: dict[str, Any], expected: ResourceList) -> None:
    assert node_allocatable(node) == expected


def test_node_allocatable_error_names_the_field() -> None:
    with pytest.raises(InvalidSpecError) as raised:
        node_allocatable({"status": {"allocatable": {"cpu": "four"}}})
    assert raised.value.field == "status.allocatable.cpu"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, {}, id="a missing list is empty"),
        pytest.param({"cpu": "1", "memory": "1Gi"}, {"cpu": 1000, "memory": 1024 * MI},
                     id="cpu is in millicores and memory in bytes"),
        pytest.param({"cpu": "0", "example.com/x": "0"}, {}, id="zero entries are omitted"),
        pytest.param({"memory": "1.5"}, {"memory": 2}, id="fractional bytes round up"),
    ],
)
def test_parse_resource_list(raw: dict[str, Any] | None, expected: ResourceList) -> None:
    assert parse_resource_list(raw, "f") == expected
