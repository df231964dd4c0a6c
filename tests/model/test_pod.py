"""PodInfo.from_pod: field extraction, upstream defaults and error containment."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.model.errors import InvalidSpecError
from scheduler.model.pod import (
    AffinityTerm,
    HostPort,
    PodInfo,
    SpreadConstraint,
    normalized_image_name,
    parse_affinity_term,
)
from scheduler.model.selectors import EVERYTHING, NOTHING, LabelSelector, Requirement
from scheduler.model.taints import Toleration

MI = 1024 * 1024


def make_pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "uid-1",
                     "resourceVersion": "42", "labels": {"app": "web", "hash": "abc"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                                 "resources": {"requests": {"cpu": "250m",
                                                            "memory": "128Mi"}}}],
                 **spec},
        "status": {"phase": "Pending"},
    }


def with_(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    *parents, last = path.split(".")
    target = out
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return out


def test_a_simple_pod_is_read_completely() -> None:
    raw = make_pod(schedulerName="secondary-scheduler", priority=10, priorityClassName="high",
                   nodeSelector={"disk": "ssd"},
                   tolerations=[{"key": "k", "operator": "Exists"}])
    info = PodInfo.from_pod(raw)
    assert info.parse_error is None
    assert (info.uid, info.namespace, info.name, info.key) == ("uid-1", "shop", "web-1",
                                                               "shop/web-1")
    assert info.raw is raw
    assert info.resource_version == "42"
    assert info.labels == {"app": "web", "hash": "abc"}
    assert info.scheduler_name == "secondary-scheduler"
    assert (info.priority, info.priority_set, info.priority_class_name) == (10, True, "high")
    assert info.preemption_policy == "PreemptLowerPriority"
    assert info.requests == {"cpu": 250, "memory": 128 * MI}
    assert (info.non_zero_cpu, info.non_zero_memory) == (250, 128 * MI)
    assert info.node_selector == {"disk": "ssd"}
    assert info.tolerations == (Toleration("k", "Exists", "", "", None),)
    assert info.images == ("nginx:1.25",)
    assert info.phase == "Pending"
    assert (info.node_name, info.nominated_node_name) == ("", "")
    assert info.required_node_affinity is None
    assert info.host_ports == () and info.spread_constraints == ()
    assert (info.deletion_timestamp, info.start_time) == (None, None)
    assert (info.owner_kind, info.owner_name) == ("", "")
    assert not info.is_terminating and not info.is_terminal
    assert not info.has_required_pod_affinity_terms


def test_defaults_apply_when_fields_are_absent() -> None:
    info = PodInfo.from_pod({"metadata": {"name": "p", "namespace": "ns"},
                             "spec": {"containers": [{"name": "c"}]}})
    assert info.parse_error is None
    assert info.uid == "ns/p"
    assert info.scheduler_name == "default-scheduler"
    assert (info.priority, info.priority_set) == (0, False)
    assert info.preemption_policy == "PreemptLowerPriority"
    assert info.requests == {}
    assert (info.non_zero_cpu, info.non_zero_memory) == (100, 200 * MI)
    assert info.images == (":latest",) and info.phase == ""


@pytest.mark.parametrize(
    ("path", "value", "attribute", "expected"),
    [
        pytest.param("spec.nodeName", "node-1", "node_name", "node-1",
                     id="the bound node name is read"),
        pytest.param("status.nominatedNodeName", "node-2", "nominated_node_name", "node-2",
                     id="the nominated node name is read from the status"),
        pytest.param("spec.preemptionPolicy", "Never", "preemption_policy", "Never",
                     id="a Never preemption policy is read"),
        pytest.param("metadata.deletionTimestamp", "2024-05-01T10:00:00Z",
                     "deletion_timestamp", "2024-05-01T10:00:00Z",
                     id="the deletion timestamp is kept as written"),
        pytest.param("status.startTime", "2024-05-01T10:00:00Z", "start_time",
                     datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
                     id="the start time is parsed as an aware datetime"),
        pytest.param("status.startTime", "yesterday", "start_time", None,
                     id="an unreadable start time counts as not started"),
        pytest.param("spec.priority", 0, "priority_set", True,
                     id="an explicit zero priority is a set priority"),
        pytest.param("metadata.ownerReferences",
                     [{"kind": "Node", "name": "n"},
                      {"kind": "ReplicaSet", "name": "web-abc", "controller": True}],
                     "owner_kind", "ReplicaSet",
                     id="the controller owner reference gives the owner kind"),
        pytest.param("metadata.ownerReferences",
                     [{"kind": "ReplicaSet", "name": "web-abc", "controller": True}],
                     "owner_name", "web-abc",
                     id="the controller owner reference gives the owner name"),
        pytest.param("metadata.ownerReferences", [{"kind": "ReplicaSet", "name": "x"}],
                     "owner_kind", "", id="an owner that is not the controller is ignored"),
    ],
)
def test_single_fields(path: str, value: Any, attribute: str, expected: Any) -> None:
    info = PodInfo.from_pod(with_(make_pod(), path, value))
    assert info.parse_error is None
    assert getattr(info, attribute) == expected


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [
        pytest.param("Succeeded", True, id="a succeeded pod is terminal"),
        pytest.param("Failed", True, id="a failed pod is terminal"),
        pytest.param("Running", False, id="a running pod is not terminal"),
        pytest.param("Pending", False, id="a pending pod is not terminal"),
    ],
)
def test_is_terminal(phase: str, terminal: bool) -> None:
    assert PodInfo.from_pod(with_(make_pod(), "status.phase", phase)).is_terminal is terminal


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param([{"type": "DisruptionTarget", "status": "True",
                       "reason": "PreemptionByScheduler"}], True,
                     id="a true preemption disruption target"),
        pytest.param([{"type": "DisruptionTarget", "status": "False",
                       "reason": "PreemptionByScheduler"}], False,
                     id="a false disruption target does not count"),
        pytest.param([{"type": "DisruptionTarget", "status": "True",
                       "reason": "EvictionByEvictionAPI"}], False,
                     id="a disruption for another reason does not count"),
        pytest.param([{"type": "DisruptionTarget", "status": "True", "reason": "Other"},
                      {"type": "DisruptionTarget", "status": "True",
                       "reason": "PreemptionByScheduler"}], False,
                     id="only the first disruption target condition is read"),
        pytest.param([{"type": "Ready", "status": "True"}], False,
                     id="other conditions do not count"),
        pytest.param(None, False, id="no conditions"),
    ],
)
def test_has_preemption_disruption_target(conditions: Any, expected: bool) -> None:
    info = PodInfo.from_pod(with_(make_pod(), "status.conditions", conditions))
    assert info.has_preemption_disruption_target() is expected


BOUND = {"nodeName": "n1", "terminationGracePeriodSeconds": 30}


@pytest.mark.parametrize(
    ("spec", "phase", "finalizers", "expected"),
    [
        pytest.param(BOUND, "Running", None, False, id="bound with a grace period: terminates"),
        pytest.param({**BOUND, "terminationGracePeriodSeconds": 0}, "Running", None, True,
                     id="bound without a grace period: deleted at once"),
        pytest.param({"terminationGracePeriodSeconds": 30}, "Pending", None, True,
                     id="not bound: deleted at once whatever its grace period"),
        pytest.param(BOUND, "Succeeded", None, True, id="terminal: deleted at once"),
        pytest.param({**BOUND, "terminationGracePeriodSeconds": 0}, "Running", ["x/keep"],
                     False, id="a finalizer holds it"),
    ],
)
def test_deleted_at_once(
    spec: dict[str, Any], phase: str, finalizers: Any, expected: bool
) -> None:
    raw = with_(make_pod(**spec), "status.phase", phase)
    info = PodInfo.from_pod(with_(raw, "metadata.finalizers", finalizers))
    assert info.deleted_at_once() is expected


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        pytest.param("nginx", "nginx:latest", id="an untagged image gets latest"),
        pytest.param("nginx:1.25", "nginx:1.25", id="a tagged image is unchanged"),
        pytest.param("registry:5000/app", "registry:5000/app:latest",
                     id="a registry port is not a tag"),
        pytest.param("registry:5000/app:v2", "registry:5000/app:v2",
                     id="a tag after a registry port is kept"),
        pytest.param("repo/app@sha256:abcd", "repo/app@sha256:abcd",
                     id="a digest counts as a tag"),
    ],
)
def test_normalized_image_name(image: str, normalized: str) -> None:
    assert normalized_image_name(image) == normalized


def test_images_list_init_containers_first() -> None:
    raw = make_pod(initContainers=[{"name": "i", "image": "busybox"}])
    assert PodInfo.from_pod(raw).images == ("busybox:latest", "nginx:1.25")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"containers": [{"name": "a", "ports": [
            {"containerPort": 80, "hostPort": 8080},
            {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]}]},
            (HostPort("0.0.0.0", "TCP", 8080), HostPort("10.0.0.1", "UDP", 53)),
            id="host ports default to all addresses and TCP"),
        pytest.param({"containers": [{"name": "a", "ports": [{"containerPort": 80},
                                                             {"hostPort": 0}]}]},
                     (), id="container ports without a host port do not count"),
        pytest.param({"containers": [{"name": "a", "ports": [{"hostPort": 80}]}],
                      "initContainers": [
                          {"name": "s", "restartPolicy": "Always", "ports": [{"hostPort": 9000}]},
                          {"name": "i", "ports": [{"hostPort": 7000}]}]},
                     (HostPort("0.0.0.0", "TCP", 9000), HostPort("0.0.0.0", "TCP", 80)),
                     id="sidecar host ports count first and regular init container ports not"),
    ],
)
def test_host_ports(spec: dict[str, Any], expected: tuple[HostPort, ...]) -> None:
    info = PodInfo.from_pod({"metadata": {"name": "p", "namespace": "n"}, "spec": spec})
    assert info.parse_error is None
    assert info.host_ports == expected


APP_WEB = LabelSelector((Requirement("app", "In", ("web",)),))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({"labelSelector": {"matchLabels": {"app": "web"}},
                      "topologyKey": "zone"},
                     AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone"),
                     id="no namespaces and no namespace selector mean the pod's namespace"),
        pytest.param({"labelSelector": {"matchLabels": {"app": "web"}},
                      "namespaces": ["a", "b"], "topologyKey": "zone"},
                     AffinityTerm(APP_WEB, frozenset({"a", "b"}), None, "zone"),
                     id="listed namespaces replace the pod's namespace"),
        pytest.param({"labelSelector": {"matchLabels": {"app": "web"}},
                      "namespaceSelector": {}, "topologyKey": "zone"},
                     AffinityTerm(APP_WEB, frozenset(), EVERYTHING, "zone"),
                     id="an empty namespace selector selects every namespace"),
        pytest.param({"topologyKey": "zone", "namespaces": ["a"],
                      "namespaceSelector": {"matchLabels": {"team": "x"}}},
                     AffinityTerm(NOTHING, frozenset({"a"}),
                                  LabelSelector((Requirement("team", "In", ("x",)),)), "zone"),
                     id="namespaces and a namespace selector combine and a nil selector "
                        "matches no pod"),
    ],
)
def test_parse_affinity_term(raw: dict[str, Any], expected: AffinityTerm) -> None:
    assert parse_affinity_term(raw, "shop", "f") == expected


@pytest.mark.parametrize(
    ("term", "namespace", "labels", "ns_labels", "matches"),
    [
        pytest.param(AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone"),
                     "shop", {"app": "web"}, {}, True,
                     id="a pod in a listed namespace with matching labels"),
        pytest.param(AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone"),
                     "other", {"app": "web"}, {}, False,
                     id="a pod in another namespace"),
        pytest.param(AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone"),
                     "shop", {"app": "db"}, {}, False,
                     id="a pod with other labels"),
        pytest.param(AffinityTerm(APP_WEB, frozenset(), EVERYTHING, "zone"),
                     "any", {"app": "web"}, {}, True,
                     id="an everything namespace selector admits any namespace"),
        pytest.param(AffinityTerm(APP_WEB, frozenset(),
                                  LabelSelector((Requirement("team", "In", ("x",)),)), "zone"),
                     "ns", {"app": "web"}, {"team": "y"}, False,
                     id="a namespace selector checks the namespace's labels"),
        pytest.param(AffinityTerm(EVERYTHING, frozenset({"shop"}), None, "zone"),
                     "shop", {}, {}, True,
                     id="an empty label selector matches every pod of the namespace"),
    ],
)
def test_affinity_term_matches_pod(
    term: AffinityTerm, namespace: str, labels: dict[str, str], ns_labels: dict[str, str],
    matches: bool,
) -> None:
    assert term.matches_pod(namespace, labels, ns_labels) is matches


def test_pod_affinity_sections_are_parsed_into_four_lists() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    raw = make_pod(affinity={
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": term}]},
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term, term],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": term}]},
    })
    info = PodInfo.from_pod(raw)
    assert info.parse_error is None
    plain = AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone")
    assert info.required_affinity == (plain,)
    assert info.required_anti_affinity == (plain, plain)
    assert info.preferred_affinity == (AffinityTerm(APP_WEB, frozenset({"shop"}), None, "zone",
                                                    5),)
    assert [t.weight for t in info.preferred_anti_affinity] == [7]
    assert info.has_required_pod_affinity_terms


def test_node_affinity_is_parsed() -> None:
    raw = make_pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "preference": {"matchExpressions": [
                {"key": "disk", "operator": "Exists"}]}}],
    }})
    info = PodInfo.from_pod(raw)
    assert info.parse_error is None
    assert info.required_node_affinity is not None
    assert info.required_node_affinity.matches({"zone": "a"}, "n")
    assert not info.required_node_affinity.matches({"zone": "b"}, "n")
    assert [p.weight for p in info.preferred_node_affinity] == [3]


def test_an_invalid_required_node_affinity_term_never_matches_but_is_no_parse_error() -> None:
    raw = make_pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["abc"]}]},
            {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]}}})
    info = PodInfo.from_pod(raw)
    assert info.parse_error is None
    assert info.required_node_affinity is not None
    assert not info.required_node_affinity.matches({"zone": "5"}, "n")
    assert info.required_node_affinity.matches({"disk": ""}, "n")


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        pytest.param(
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}},
            SpreadConstraint(1, "zone", "DoNotSchedule", APP_WEB, 1, "Honor", "Ignore"),
            id="minDomains defaults to 1 and the policies to Honor and Ignore"),
        pytest.param(
            {"maxSkew": 2, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 3,
             "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"},
            SpreadConstraint(2, "host", "ScheduleAnyway", APP_WEB, 3, "Ignore", "Honor"),
            id="explicit minDomains and inclusion policies are kept"),
        pytest.param(
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}},
             "matchLabelKeys": ["hash", "missing"]},
            SpreadConstraint(1, "zone", "DoNotSchedule",
                             LabelSelector((Requirement("app", "In", ("web",)),
                                            Requirement("hash", "In", ("abc",)))),
                             1, "Honor", "Ignore"),
            id="matchLabelKeys add the pod's values for the keys it has"),
        pytest.param(
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "matchLabelKeys": ["hash"]},
            SpreadConstraint(1, "zone", "DoNotSchedule", NOTHING, 1, "Honor", "Ignore"),
            id="a nil label selector stays match-nothing despite matchLabelKeys"),
    ],
)
def test_spread_constraints(constraint: dict[str, Any], expected: SpreadConstraint) -> None:
    info = PodInfo.from_pod(make_pod(topologySpreadConstraints=[constraint]))
    assert info.parse_error is None
    assert info.spread_constraints == (expected,)


ERROR_CASES = [
    pytest.param("spec.containers",
                 [{"name": "app", "resources": {"requests": {"cpu": "lots"}}}],
                 "spec.containers[0].resources.requests.cpu", "requests",
                 id="a malformed cpu request empties the requests"),
    pytest.param("spec.initContainers",
                 [{"name": "i"}, {"name": "j", "resources": {"requests": {"memory": "1.2.3"}}}],
                 "spec.initContainers[1].resources.requests.memory", "requests",
                 id="a malformed init container request names the init container"),
    pytest.param("spec.affinity",
                 {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchExpressions": [
                         {"key": "app", "operator": "Gt", "values": ["1"]}]},
                      "topologyKey": "zone"}]}},
                 "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                 "[0].labelSelector.matchExpressions[0].operator",
                 "required_anti_affinity",
                 id="a bad label selector operator empties the anti-affinity terms"),
    pytest.param("spec.affinity",
                 {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                     {"weight": 1, "preference": {"matchFields": [
                         {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}}]}},
                 "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
                 "[0].preference",
                 "preferred_node_affinity",
                 id="an invalid weighted node preference empties the preferences"),
    pytest.param("spec.tolerations", [{"key": "k", "operator": "Like"}],
                 "spec.tolerations[0].operator", "tolerations",
                 id="a bad toleration operator empties the tolerations"),
    pytest.param("spec.topologySpreadConstraints",
                 [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "not valid"}}}],
                 "spec.topologySpreadConstraints[0].labelSelector.matchLabels.app",
                 "spread_constraints",
                 id="an invalid spread selector empties the spread constraints"),
    pytest.param("spec.topologySpreadConstraints",
                 [{"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
                 "spec.topologySpreadConstraints[0].maxSkew", "spread_constraints",
                 id="a missing maxSkew is an error"),
    pytest.param("spec.priority", "high", "spec.priority", "priority",
                 id="a priority that is not an integer"),
    pytest.param("spec.nodeSelector", ["disk"], "spec.nodeSelector", "node_selector",
                 id="a node selector that is not a map"),
    pytest.param("metadata.labels", {"app": 5}, "metadata.labels.app", "labels",
                 id="a label value that is not a string"),
]


@pytest.mark.parametrize(("path", "value", "field", "emptied"), ERROR_CASES)
def test_bad_content_is_contained_in_parse_error(
    path: str, value: Any, field: str, emptied: str
) -> None:
    info = PodInfo.from_pod(with_(make_pod(), path, value))
    assert isinstance(info.parse_error, InvalidSpecError)
    assert info.parse_error.field == field
    assert not getattr(info, emptied)
    assert info.key == "shop/web-1"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({}, id="an empty object"),
        pytest.param({"metadata": ["x"], "spec": {}}, id="metadata that is a list"),
        pytest.param({"metadata": {"name": "p"}, "spec": "x"}, id="a spec that is a string"),
        pytest.param({"metadata": {"name": "p"}, "spec": {"containers": {"a": 1}}},
                     id="containers that are a map"),
        pytest.param({"metadata": {"name": "p"}, "spec": {"containers": [5]}},
                     id="a container that is a number"),
        pytest.param({"metadata": {"name": "p"}, "spec": {"containers": [
            {"ports": ["x"]}]}}, id="a port that is a string"),
        pytest.param({"metadata": {"name": "p"}, "spec": {"affinity": {"podAffinity": [1]}}},
                     id="pod affinity that is a list"),
        pytest.param({"metadata": {"name": "p"}, "spec": {"affinity": "x"}},
                     id="affinity that is a string"),
        pytest.param({"metadata": {"name": "p", "ownerReferences": ["x"]}},
                     id="an owner reference that is a string"),
    ],
)
def test_from_pod_never_raises(raw: dict[str, Any]) -> None:
    info = PodInfo.from_pod(raw)
    assert info.uid
    if raw != {}:
        assert info.parse_error is not None


@pytest.mark.parametrize("changes", [
    {},
    {"node_name": "node-a"},
    {"node_name": "", "nominated_node_name": "", "uid": "uid-1-stand-in"},
    {"priority": 7, "preemption_policy": "Never"},
])
def test_replace_is_dataclasses_replace(changes: dict[str, Any]) -> None:
    pod = PodInfo.from_pod(make_pod(nodeName="node-z", priority=3))
    copied = pod.replace(**changes)
    assert copied == dataclasses.replace(pod, **changes)
    assert copied is not pod
    assert pod == PodInfo.from_pod(make_pod(nodeName="node-z", priority=3))


def test_replace_refuses_an_unknown_field() -> None:
    with pytest.raises(AttributeError):
        PodInfo.from_pod(make_pod()).replace(node="node-a")
