"""The API-backed ports: status codes mapped to outcomes, transient retries, de-duplication."""

from __future__ import annotations

import threading

import pytest

from scheduler.config import default_config
from scheduler.framework.ports import BindOutcome, EvictionOutcome
from scheduler.intake import Intake
from scheduler.model.pod import PodInfo
from scheduler.model.pod_group import PodGroup
from scheduler.operator.api_ports import ApiPorts
from scheduler.operator.kubeapi import TokenBucket
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler
from scheduler.testing import ManualClock, node, pod, pod_info, run_cycles
from tests.operator.fake_api import FakeApi, Reply

POD = "/api/v1/namespaces/default/pods/web"
NO_WAIT = {"Retry-After": "0"}


def web() -> PodInfo:
    return pod_info("web", cpu="1")


def status(code: int, message: str = "", causes: list[dict[str, str]] | None = None) -> dict:
    body: dict = {"kind": "Status", "code": code, "message": message}
    if causes:
        body["details"] = {"causes": causes}
    return body


@pytest.mark.parametrize(
    ("replies", "outcome", "attempts"),
    [
        pytest.param([Reply(201, {})], BindOutcome.BOUND, 1, id="201 binds the pod"),
        pytest.param([Reply(404, status(404))], BindOutcome.GONE, 1,
                     id="404 means the pod is gone and is not retried"),
        pytest.param([Reply(409, status(409))], BindOutcome.CONFLICT, 1,
                     id="409 means the pod is already bound and is not retried"),
        pytest.param([Reply(500, status(500), NO_WAIT), Reply(503, status(503), NO_WAIT),
                      Reply(201, {})], BindOutcome.BOUND, 3,
                     id="5xx answers are retried until the bind succeeds"),
        pytest.param([Reply(429, status(429), NO_WAIT), Reply(201, {})], BindOutcome.BOUND, 2,
                     id="429 is retried honouring Retry-After"),
        pytest.param([Reply(403, status(403, "forbidden"))], BindOutcome.FAILED, 1,
                     id="403 fails at once without retries"),
        pytest.param([Reply(500, status(500), NO_WAIT)], BindOutcome.FAILED, 5,
                     id="a server that keeps failing gives up after five attempts"),
    ],
)
def test_bind_maps_answers_to_outcomes(api: FakeApi, replies: list[Reply],
                                       outcome: BindOutcome, attempts: int) -> None:
    api.on("POST", f"{POD}/binding", *replies)
    ports = ApiPorts(api.kube_api())
    result = ports.bind(web(), "n1")
    assert result.outcome is outcome
    calls = api.calls("POST", f"{POD}/binding")
    assert len(calls) == attempts
    assert calls[0].body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert calls[0].body["metadata"]["uid"] == web().uid
    ports.close()


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param(Reply(201, {}), EvictionOutcome.EVICTED, id="201 evicts"),
        pytest.param(Reply(404, status(404)), EvictionOutcome.GONE, id="404 is already gone"),
        pytest.param(
            Reply(429, status(429, "Cannot evict pod as it would violate the pod's disruption "
                               "budget.", [{"reason": "DisruptionBudget"}])),
            EvictionOutcome.BLOCKED_BY_PDB,
            id="429 from a disruption budget is reported, not retried",
        ),
        pytest.param(
            Reply(500, status(500, "This pod has more than one PodDisruptionBudget, which the "
                                   "eviction subresource does not support.")),
            EvictionOutcome.MULTIPLE_PDBS,
            id="500 for a pod under several budgets is reported, not retried",
        ),
    ],
)
def test_evict_maps_answers_to_outcomes(api: FakeApi, reply: Reply,
                                        outcome: EvictionOutcome) -> None:
    api.on("POST", f"{POD}/eviction", reply)
    ports = ApiPorts(api.kube_api())
    assert ports.evict(web()).outcome is outcome
    assert len(api.calls("POST", f"{POD}/eviction")) == 1
    body = api.calls("POST", f"{POD}/eviction")[0].body
    assert body["kind"] == "Eviction" and body["apiVersion"] == "policy/v1"
    assert "gracePeriodSeconds" not in body.get("deleteOptions", {})
    ports.close()


def test_marking_a_victim_adds_the_disruption_target_condition(api: FakeApi) -> None:
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    assert ports.mark_disruption_target(web(), "s: preempting to accommodate a higher priority pod")
    (call,) = api.calls("PATCH", f"{POD}/status")
    (condition,) = call.body["status"]["conditions"]
    assert condition["type"] == "DisruptionTarget" and condition["status"] == "True"
    assert condition["reason"] == "PreemptionByScheduler"
    ports.close()


def test_repeated_failures_make_one_event_series_and_one_status_patch(api: FakeApi) -> None:
    events_path = "/apis/events.k8s.io/v1/namespaces/default/events"
    api.on("POST", events_path, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    message = "0/1 nodes are available: 1 Insufficient cpu."
    for _ in range(3):
        ports.failed(web(), "Unschedulable", message, None)
    ports.close()
    # The second report turns the Event into a series (the third is only counted): the
    # fake API answers the series PATCH 404, so the Event is created again with it.
    event, again = api.calls("POST", events_path)
    assert event.body["note"] == message
    assert event.body["reason"] == "FailedScheduling"
    assert event.body["reportingController"] == "secondary-scheduler"
    assert event.body["regarding"]["resourceVersion"] == web().resource_version
    (series,) = api.calls("PATCH", f"{events_path}/{event.body['metadata']['name']}")
    assert series.body["series"]["count"] == 2
    assert again.body["metadata"]["name"] == event.body["metadata"]["name"]
    assert again.body["series"]["count"] == 2
    (patch,) = api.calls("PATCH", f"{POD}/status")
    condition = patch.body["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) \
        == ("PodScheduled", "False", "Unschedulable", message)


def test_a_nomination_is_written_with_the_condition_and_cleared_with_null(api: FakeApi) -> None:
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    ports.failed(web(), "Unschedulable", "m1", "n1")
    ports.failed(web(), "Unschedulable", "m2", "")
    ports.close()
    first, second = api.calls("PATCH", f"{POD}/status")
    assert first.body["status"]["nominatedNodeName"] == "n1"
    assert second.body["status"]["nominatedNodeName"] is None


def test_the_scheduled_event_names_pod_and_node(api: FakeApi) -> None:
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    ports = ApiPorts(api.kube_api())
    ports.scheduled(web(), "n1")
    ports.close()
    (event,) = api.calls("POST", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert event.body["reason"] == "Scheduled" and event.body["type"] == "Normal"
    assert event.body["note"] == "Successfully assigned default/web to n1"
    assert event.body["regarding"]["uid"] == web().uid


def test_events_take_tokens_from_their_own_bucket_not_the_binds(api: FakeApi) -> None:
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    binds, events = api.kube_api(qps=50), api.kube_api(qps=50)
    ports = ApiPorts(binds, events=events)
    ports.scheduled(web(), "n1")
    ports.close()
    assert len(api.calls("POST", "/apis/events.k8s.io/v1/namespaces/default/events")) == 1
    assert binds.bucket.tokens == binds.bucket.capacity
    assert events.bucket.tokens < events.bucket.capacity


def test_the_preempted_event_names_the_preemptor_uid(api: FakeApi) -> None:
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    ports = ApiPorts(api.kube_api())
    victim = pod_info("victim")
    ports.preempted_event(victim, web(), "n1")
    (event,) = api.calls("POST", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert event.body["note"] == f"Preempted by pod {web().uid} on node n1"
    assert event.body["related"]["name"] == "web"
    ports.close()


def test_a_pod_group_preemptions_event_names_the_pod_group(api: FakeApi) -> None:
    """executor.go: "Preempted by <preemptor.Type()> <UID>", related the PodGroup."""
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    ports = ApiPorts(api.kube_api())
    group = PodGroup(namespace="default", name="train", uid="pg-uid", resource_version="7")
    ports.preempted_event(pod_info("victim"), web(), "cluster", group)
    (event,) = api.calls("POST", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert event.body["note"] == "Preempted by podgroup pg-uid on node cluster"
    assert event.body["related"] == {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "namespace": "default",
        "name": "train", "uid": "pg-uid", "resourceVersion": "7"}
    ports.close()


def test_the_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(qps=50, burst=100, clock=lambda: now[0], sleep=sleep)
    for _ in range(100):
        bucket.acquire()
    assert slept == []
    bucket.acquire()
    assert slept == [pytest.approx(1 / 50)]


def test_the_token_bucket_serves_waiting_callers_in_the_order_they_asked() -> None:
    # Concurrent callers: nobody's sleep has ended when the next one asks.
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        assert len(slept) < 10, "a caller retried instead of waiting for its turn"

    bucket = TokenBucket(qps=50, burst=1, clock=lambda: 0.0, sleep=sleep)
    for _ in range(4):
        bucket.acquire()
    assert slept == [pytest.approx(k / 50) for k in (1, 2, 3)]


@pytest.mark.parametrize(
    ("api_key", "prefix", "expected"),
    [
        pytest.param({"BearerToken": "bearer abc"}, {}, ("Bearer", "abc"),
                     id="the in-cluster token stored with its scheme reaches kopf"),
        pytest.param({"authorization": "Bearer xyz"}, {}, ("Bearer", "xyz"),
                     id="a kubeconfig token reaches kopf"),
        pytest.param({"authorization": "xyz"}, {"authorization": "Bearer"}, ("Bearer", "xyz"),
                     id="a token with a separate prefix reaches kopf"),
        pytest.param({}, {}, (None, None), id="no token means client certificates alone"),
    ],
)
def test_kopf_login_uses_the_api_clients_credentials(
    api: FakeApi, api_key: dict[str, str], prefix: dict[str, str],
    expected: tuple[str | None, str | None],
) -> None:
    from scheduler.operator.handlers import connection_info

    configuration = api.kube_api().client.configuration
    configuration.api_key = api_key
    configuration.api_key_prefix = prefix
    info = connection_info(configuration)
    assert (info.scheme, info.token) == expected
    assert info.server == api.url


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param(Reply(200, {}), EvictionOutcome.EVICTED,
                     id="a deleted victim counts as evicted"),
        pytest.param(Reply(404, status(404)), EvictionOutcome.GONE,
                     id="a victim already gone is not reported as preempted"),
        pytest.param(Reply(403, status(403)), EvictionOutcome.FAILED, id="a refused delete fails"),
    ],
)
def test_delete_maps_answers_to_outcomes(api: FakeApi, reply: Reply,
                                         outcome: EvictionOutcome) -> None:
    api.on("DELETE", POD, reply)
    ports = ApiPorts(api.kube_api())
    assert ports.delete(web()) is outcome
    (call,) = api.calls("DELETE", POD)
    assert call.body == {"preconditions": {"uid": web().uid}}
    ports.close()


EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def test_a_failure_report_reaching_its_lane_after_the_binding_is_dropped(api: FakeApi) -> None:
    """Issue 14 item 2: attempt n's report must not land after attempt n+1 bound the pod."""
    api.on("POST", f"{POD}/binding", Reply(201, {}))
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    assert ports.bind(web(), "n1").outcome is BindOutcome.BOUND
    ports.failed(web(), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", "")
    ports.close()
    assert api.calls("PATCH", f"{POD}/status") == []
    assert api.calls("POST", EVENTS) == []


def pod_object(node: str = "", rv: str = "8", uid: str | None = None) -> dict:
    obj = {"metadata": {"name": "web", "namespace": "default", "uid": uid or web().uid,
                        "resourceVersion": rv}, "spec": {}}
    if node:
        obj["spec"]["nodeName"] = node
    return obj


@pytest.mark.parametrize(
    ("current", "patches"),
    [
        pytest.param(pod_object(node="n1"), 1, id="bound meanwhile (by anyone): dropped"),
        pytest.param(pod_object(uid="another"), 1, id="replaced by a pod of the same name"),
        pytest.param(None, 1, id="deleted meanwhile"),
        pytest.param(pod_object(rv="8"), 2, id="still pending: retried once on the new version"),
    ],
)
def test_the_status_patch_is_guarded_by_the_version_the_scheduler_saw(
    api: FakeApi, current: dict | None, patches: int
) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(409, status(409, "the object has been modified")),
           Reply(200, {}))
    api.on("GET", POD, Reply(200, current) if current else Reply(404, status(404)))
    ports = ApiPorts(api.kube_api())
    pod = web()
    ports.failed(pod, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", None)
    ports.close()
    sent = api.calls("PATCH", f"{POD}/status")
    assert len(sent) == patches
    assert sent[0].body["metadata"] == {"resourceVersion": pod.resource_version}
    if patches == 2:
        assert sent[1].body["metadata"] == {"resourceVersion": "8"}


def test_events_carry_the_schedulername_of_their_profile(api: FakeApi) -> None:
    """As upstream, each profile records Events as itself: a pod of profile "gpu" is
    reported by "gpu", and a victim's Preempted Event by the preemptor's profile."""
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", "/api/v1/namespaces/default/pods/train/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    train = pod_info("train", scheduler_name="gpu")
    ports.failed(train, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", None)
    ports.scheduled(train, "n1")
    ports.preempted_event(pod_info("victim", scheduler_name="secondary-scheduler"), train, "n1")
    ports.close()
    events = api.calls("POST", EVENTS)
    assert sorted((e.body["reason"], e.body["reportingController"]) for e in events) == [
        ("FailedScheduling", "gpu"), ("Preempted", "gpu"), ("Scheduled", "gpu")]
    assert all(e.body["reportingInstance"].startswith("gpu-") for e in events)


def test_a_fenced_replica_sends_no_write_but_still_reads(api: FakeApi) -> None:
    api.on("POST", f"{POD}/binding", Reply(201, {}))
    api.on("GET", POD, Reply(200, {"metadata": {"name": "web"}}))
    kube = api.kube_api()
    leading = [True]
    kube.may_write = lambda: leading[0]
    ports = ApiPorts(kube)
    assert ports.bind(web(), "n1").outcome is BindOutcome.BOUND
    leading[0] = False
    result = ports.bind(pod_info("other", cpu="1"), "n1")
    assert result.outcome is BindOutcome.FAILED and "not the leader" in result.message
    assert kube.get(POD).ok
    assert len(api.calls("POST", f"{POD}/binding")) == 1
    assert all(r.path != "/api/v1/namespaces/default/pods/other/binding" for r in api.requests)
    ports.close()


def test_only_the_newest_queued_failure_report_of_a_pod_is_written(api: FakeApi) -> None:
    """Reports waiting for their lane are merged: the newest says what is true now."""
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    lane_free = threading.Event()
    ports._background(web(), lane_free.wait, "block the pod's lane")
    ports.failed(web(), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", "")
    ports.failed(web(), "Unschedulable", "0/2 nodes are available: 2 Insufficient cpu.", "")
    lane_free.set()
    ports.close()
    (patch,) = api.calls("PATCH", f"{POD}/status")
    assert patch.body["status"]["conditions"][0]["message"].startswith("0/2 nodes")
    assert len(api.calls("POST", EVENTS)) == 1


def test_a_nomination_cleared_after_a_queued_failure_report_is_not_written_back(
    api: FakeApi,
) -> None:
    """A higher preemptor clears this pod's nomination while its older failure report (which
    nominated it there) still waits for its lane: the report writes its condition but not the
    stale node, or the watch would put the cleared reservation back in the nominator. A
    report decided after the clear nominates as it says."""
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    lane_free = threading.Event()
    ports._background(web(), lane_free.wait, "block the pod's lane")
    ports.failed(web(), "Unschedulable", "preempting on n-2", "n-2")
    assert ports.set_nominated_node(web(), "")
    lane_free.set()
    lane_done = threading.Event()
    ports._background(web(), lane_done.set, "after the stale report")
    assert lane_done.wait(5)
    ports.failed(web(), "Unschedulable", "preempting on n-3", "n-3")
    ports.close()
    clear, stale, fresh = api.calls("PATCH", f"{POD}/status")
    assert clear.body["status"] == {"nominatedNodeName": None}
    assert "nominatedNodeName" not in stale.body["status"]
    assert fresh.body["status"]["nominatedNodeName"] == "n-3"


@pytest.mark.parametrize(("exists", "writes"), [(True, 1), (False, 0)])
def test_a_failure_report_for_a_pod_deleted_meanwhile_is_not_sent(
    api: FakeApi, exists: bool, writes: int
) -> None:
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    ports.pod_exists = lambda uid: exists
    ports.failed(web(), "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", "")
    ports.close()
    assert len(api.calls("PATCH", f"{POD}/status")) == writes
    assert len(api.calls("POST", EVENTS)) == writes


def test_a_standby_sends_no_failure_report_and_forgets_it(api: FakeApi) -> None:
    """Fenced: no write, and nothing remembered as sent, so the same report goes out once
    the replica leads."""
    api.on("POST", EVENTS, Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    kube = api.kube_api()
    leading = [False]
    kube.may_write = lambda: leading[0]
    ports = ApiPorts(kube)
    message = "invalid pod spec: spec.containers[0].resources.requests.cpu: not a quantity"
    ports.failed(web(), "SchedulerError", message, None)
    lane_done = threading.Event()
    ports._background(web(), lane_done.set, "after the report")
    assert lane_done.wait(5)
    assert api.requests == []
    leading[0] = True
    ports.failed(web(), "SchedulerError", message, None)
    ports.close()
    assert len(api.calls("PATCH", f"{POD}/status")) == 1
    assert len(api.calls("POST", EVENTS)) == 1


def test_an_expected_node_is_written_and_a_later_identical_failure_clears_it(
    api: FakeApi,
) -> None:
    """NominatedNodeNameForExpectation: the node is written before PreBind works; the
    failure that follows writes its condition again (and clears the node) even though it
    repeats the last one."""
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    ports.failed(web(), "SchedulerError", "binding volumes: context deadline exceeded", "")
    ports.expecting(web(), "n1")
    ports.failed(web(), "SchedulerError", "binding volumes: context deadline exceeded", "")
    ports.expecting(pod_info("web", cpu="1", nominated_node_name="n1"), "n1")
    ports.close()
    patches = [p.body["status"] for p in api.calls("PATCH", f"{POD}/status")]
    assert [p.get("nominatedNodeName", "-") for p in patches] == [None, "n1", None]


def test_the_expected_node_is_answered_before_the_binding_cycle_goes_on(api: FakeApi) -> None:
    """upstream's bindingCycle writes the expected node with a synchronous updatePod before
    Permit and PreBind (schedule_one.go; SchedulerAsyncAPICalls is off in v1.37): expecting
    returns only once its patch is answered, after the reports queued before it."""
    api.on("POST", "/apis/events.k8s.io/v1/namespaces/default/events", Reply(201, {}))
    api.on("PATCH", f"{POD}/status", Reply(200, {}))
    ports = ApiPorts(api.kube_api())
    lane_free = threading.Event()
    # The failure report queued first holds the pod's lane until the test frees it.
    ports.pod_exists = lambda uid: lane_free.wait(30)
    ports.failed(web(), "Unschedulable", "0/1 nodes are available: 1 Too many pods.", "")
    returned = threading.Event()
    expecting = threading.Thread(
        target=lambda: (ports.expecting(web(), "n1"), returned.set()), daemon=True)
    expecting.start()
    returned_early = returned.wait(0.5)
    lane_free.set()
    expecting.join(30)
    ports.close()
    assert not returned_early
    patches = [p.body["status"] for p in api.calls("PATCH", f"{POD}/status")]
    assert [p.get("nominatedNodeName", "-") for p in patches] == [None, "n1"]


def bound_pod(node: str, uid: str) -> Reply:
    return Reply(200, {"metadata": {"name": "web", "namespace": "default", "uid": uid},
                       "spec": {"nodeName": node}})


ALREADY_BOUND = status(409, 'Operation cannot be fulfilled on pods/binding "web": pod web is '
                            'already assigned to node "n1"')


@pytest.mark.parametrize(
    ("binding", "current", "outcome"),
    [
        pytest.param([Reply(503, status(503), NO_WAIT), Reply(409, ALREADY_BOUND)],
                     bound_pod("n1", web().uid), BindOutcome.BOUND,
                     id="retried, answered 409, bound to our node: scheduled"),
        pytest.param([Reply(503, status(503), NO_WAIT), Reply(409, ALREADY_BOUND)],
                     bound_pod("n2", web().uid), BindOutcome.CONFLICT,
                     id="retried, answered 409, bound elsewhere: a conflict"),
        pytest.param([Reply(503, status(503), NO_WAIT), Reply(409, ALREADY_BOUND)],
                     bound_pod("n1", "another-uid"), BindOutcome.CONFLICT,
                     id="retried, answered 409, a pod of the same name recreated: a conflict"),
        pytest.param([Reply(409, ALREADY_BOUND)], bound_pod("n1", web().uid),
                     BindOutcome.CONFLICT,
                     id="409 at the first attempt: someone else bound it, not us"),
    ],
)
def test_a_retried_bind_answered_409_counts_as_bound_only_where_we_chose(
    api: FakeApi, binding: list[Reply], current: Reply, outcome: BindOutcome
) -> None:
    """The answer to the first POST is lost (503 here), the retry finds the binding done."""
    api.on("POST", f"{POD}/binding", *binding)
    api.on("GET", POD, current)
    ports = ApiPorts(api.kube_api())
    assert ports.bind(web(), "n1").outcome is outcome
    ports.close()


def test_a_bind_found_done_on_retry_drops_a_late_failure_report(api: FakeApi) -> None:
    """Counted as bound, it is remembered as bound like any other binding: a failure report
    of an earlier attempt reaching its lane afterwards writes nothing."""
    api.on("POST", f"{POD}/binding", Reply(503, status(503), NO_WAIT), Reply(409, ALREADY_BOUND))
    api.on("GET", POD, bound_pod("n1", web().uid))
    ports = ApiPorts(api.kube_api())
    assert ports.bind(web(), "n1").outcome is BindOutcome.BOUND
    ports.failed(web(), "Unschedulable", "0/1 nodes are available", None)
    ports.close()
    assert not api.calls("PATCH", f"{POD}/status")


def test_a_bind_found_done_on_retry_is_a_scheduled_pod_event_and_metrics(api: FakeApi) -> None:
    """Through the whole binding cycle: DefaultBinder succeeds, so the pod gets its
    Scheduled Event and is counted scheduled, as if the first answer had arrived."""
    events = "/apis/events.k8s.io/v1/namespaces/default/events"
    api.on("POST", f"{POD}/binding", Reply(503, status(503), NO_WAIT), Reply(409, ALREADY_BOUND))
    api.on("GET", POD, bound_pod("n1", web().uid))
    api.on("POST", events, Reply(201, {}))
    registry = default_registry()
    ports = ApiPorts(api.kube_api())
    clock = ManualClock()
    s = Scheduler(default_config(registry), registry, binder=ports, reporter=ports,
                  clock=clock, sleep=clock.advance)
    s.submit_binding = lambda fn, *args: fn(*args)  # type: ignore[method-assign]
    intake = Intake(s)
    intake.on_node(None, node("n1"))
    intake.on_pod(None, pod("web", cpu="1"))
    s.refresh()
    run_cycles(s)
    s.stop(timeout=5)
    ports.close()
    assert [e.body["reason"] for e in api.calls("POST", events)] == ["Scheduled"]
    sample = s.metrics.registry.get_sample_value
    assert sample("scheduler_schedule_attempts_total",
                  {"result": "scheduled", "profile": "secondary-scheduler"}) == 1
    assert sample("secondary_scheduler_bindings_total", {"outcome": "Bound"}) == 1
