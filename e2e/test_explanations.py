"""Explanations: FailedScheduling Events and PodScheduled conditions, as kube-scheduler writes
them, and what happens to a pod spec the API accepts but no scheduler can act on."""

from __future__ import annotations

from e2e.conftest import Env
from e2e.kube import (
    INSUFFICIENT_CPU,
    NODE_SELECTOR_MISMATCH,
    REPORTING_CONTROLLER,
    node_of,
    wait_until,
)


def test_unschedulable_pod_is_explained_then_placed_when_a_node_fits(env: Env) -> None:
    (target,) = env.nodes("target", 1, cpu="2")
    others = env.nodes("other", 2, cpu="8")
    pod = env.create_pod("big", cpu="3", memory="1Gi", group="target")

    # On the local control plane: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s)
    # didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available:
    # 3 Preemption is not helpful for scheduling." (3 cpu > the node's allocatable 2: no
    # victim could help, so NodeResourcesFit says UnschedulableAndUnresolvable.)
    expected = env.expected_message(
        {target: INSUFFICIENT_CPU, **dict.fromkeys(others, NODE_SELECTOR_MISMATCH)},
        preemption={})
    cond = env.wait_unschedulable("big", expected)
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"

    def failed_event() -> list[dict]:
        return [e for e in env.rec.events_for("big", "FailedScheduling") if e["note"] == expected]

    (event,) = wait_until(failed_event, 20, "a FailedScheduling event with the message",
                          diagnose=env.diagnose)
    assert event["type"] == "Warning"
    assert event["reportingController"] == REPORTING_CONTROLLER
    assert event["regarding"]["uid"] == pod["metadata"]["uid"]
    assert not node_of(env.pod("big"))

    # A node that fits arrives: the pod is placed there, and said so.
    (fits,) = env.nodes("target", 1, cpu="8", prefix="target-big")
    assert env.wait_bound("big", timeout=30) == fits
    (scheduled,) = wait_until(lambda: env.rec.events_for("big", "Scheduled"), 20,
                              "the Scheduled event", diagnose=env.diagnose)
    assert scheduled["note"] == f"Successfully assigned {env.ns}/big to {fits}"
    assert scheduled["reportingController"] == REPORTING_CONTROLLER


# The API validates label values in node affinity, not that a Gt/Lt operand is an integer.
# kube-scheduler cannot parse such a preferred term: NodeAffinity's PreScore fails and the
# pod gets PodScheduled=False with reason SchedulerError (v1.PodReasonSchedulerError).
MALFORMED_PREFERENCE = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
    "weight": 10, "preference": {"matchExpressions": [
        {"key": "e2e-rank", "operator": "Gt", "values": ["abc"]}]}}]}}
MALFORMED_FIELD = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"


def test_malformed_pod_gets_a_clear_condition_and_others_are_served(env: Env) -> None:
    env.nodes("n", 2, cpu="4")
    env.create_pod("malformed", cpu="100m", affinity=MALFORMED_PREFERENCE)
    # Absurd but valid: 10^30 cores. The API accepts it. (kube-scheduler's int64 milli-cores
    # overflow to 0 and it would bind this pod; we only ask that it is not placed and that
    # the condition says why, as Insufficient cpu or as an invalid request.)
    env.create_pod("absurd", cpu="1e30")

    cond = env.wait_unschedulable("malformed", reason="SchedulerError")
    message = cond["message"]
    assert MALFORMED_FIELD in message, message
    assert "abc" in message and "integer" in message, message
    (event,) = wait_until(lambda: env.rec.events_for("malformed", "FailedScheduling"), 20,
                          "a FailedScheduling event for the malformed pod", diagnose=env.diagnose)
    assert event["type"] == "Warning" and MALFORMED_FIELD in event["note"], event
    assert event["reportingController"] == REPORTING_CONTROLLER

    # The scheduler keeps serving everyone else.
    names = [f"ok-{i}" for i in range(3)]
    for name in names:
        env.create_pod(name, cpu="100m")
    env.wait_all_bound(names)
    absurd = wait_until(lambda: env.scheduled_condition("absurd"), 20,
                        "a PodScheduled condition on the absurd pod", diagnose=env.diagnose)
    assert absurd["status"] == "False" and "cpu" in absurd["message"], absurd
    assert not node_of(env.pod("malformed")) and not node_of(env.pod("absurd"))
    assert env.scheduler.alive(), env.scheduler.describe()

    # Still serving after the malformed pod is fixed... by replacing it (the field is immutable).
    env.delete_pod("malformed", grace=0)
    env.wait_gone("malformed")
    env.create_pod("malformed", cpu="100m")
    env.wait_bound("malformed")
