"""Priority and preemption: minimal victims, preemptionPolicy, PodDisruptionBudgets, and the
nominated-node reservation that keeps a preemptor from starving while its victims terminate.

Running pods are placed with ``spec.nodeName`` (no scheduler involved) so each test controls
exactly what is where; kwok makes them Running and honours their termination grace period.
Assertions on short-lived states (a nomination that is later cleared, a victim's
DisruptionTarget condition) use the namespace recorder, which keeps every version seen.
"""

from __future__ import annotations

from typing import Any

from e2e.conftest import Env
from e2e.kube import (
    INSUFFICIENT_CPU,
    NEVER_PREEMPT,
    NO_VICTIMS,
    REPORTING_CONTROLLER,
    UNTOLERATED_TAINT,
    condition,
    node_of,
    nominated,
    terminating,
    wait_until,
)

GRACE = 6  # seconds: victims' terminationGracePeriodSeconds where waiting for them is the point
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."


def disruption_target(pod: dict[str, Any]) -> bool:
    c = condition(pod, "DisruptionTarget")
    return bool(c and c.get("status") == "True" and c.get("reason") == "PreemptionByScheduler")


def running_pod(env: Env, name: str, node: str, cpu: str, priority_class: str,
                grace: int = GRACE, labels: dict[str, str] | None = None) -> None:
    env.create_pod(name, cpu=cpu, node_name=node, priority_class=priority_class, grace=grace,
                   labels=labels)


def wait_nominated(env: Env, pod: str, node: str, timeout: float = 30) -> None:
    wait_until(lambda: env.rec.ever(pod, lambda p: nominated(p) == node), timeout,
               f"{pod} nominated to {node}", diagnose=env.diagnose)


def assert_preempted(env: Env, victim: str, preemptor_uid: str, node: str) -> None:
    wait_until(lambda: env.rec.ever(victim, disruption_target), 30,
               f"{victim} marked DisruptionTarget (PreemptionByScheduler)", diagnose=env.diagnose)
    (event,) = wait_until(lambda: env.rec.events_for(victim, "Preempted"), 30,
                          f"a Preempted event on {victim}", diagnose=env.diagnose)
    assert event["type"] == "Normal"
    assert event["note"] == f"Preempted by pod {preemptor_uid} on node {node}"
    assert event["reportingController"] == REPORTING_CONTROLLER
    wait_until(lambda: env.rec.ever(victim, terminating) or env.rec.deleted_at(victim), 30,
               f"{victim} evicted", diagnose=env.diagnose)


def assert_untouched(env: Env, *names: str) -> None:
    for name in names:
        assert not env.rec.ever(name, disruption_target), f"{name} was marked for preemption"
        assert not env.rec.ever(name, terminating), f"{name} was deleted"
        assert not env.rec.events_for(name, "Preempted"), f"{name} got a Preempted event"


def never_bound(env: Env, name: str) -> bool:
    return env.rec.bound_at(name) is None


# ----------------------------------------------------------------------------- the basics
def test_design_example_only_the_priority_2_pod_is_preempted(env: Env) -> None:
    """Node of 10 cpu; running pods of priority 0, 1, 2, 3 requesting 3, 1, 5, 1; a
    priority-10 pod requesting 5. Removing all four and reprieving the most important first
    keeps 3 (1), fails 2 (5), keeps 1 (1) and 0 (3): only the priority-2 pod goes."""
    (node,) = env.nodes("n", 1, cpu="10", memory="64Gi")
    pcs = {p: env.priority_class(f"p{p}", p) for p in (0, 1, 2, 3, 10)}
    running = {0: "3", 1: "1", 2: "5", 3: "1"}
    for prio, cpu in running.items():
        running_pod(env, f"prio-{prio}", node, cpu, pcs[prio])
    env.wait_running([f"prio-{p}" for p in running])

    preemptor = env.create_pod("preemptor", cpu="5", priority_class=pcs[10])
    uid = preemptor["metadata"]["uid"]
    wait_nominated(env, "preemptor", node)
    assert_preempted(env, "prio-2", uid, node)
    assert env.wait_bound("preemptor", timeout=GRACE + 30) == node
    gone = env.rec.deleted_at("prio-2")
    assert gone is not None and env.rec.bound_at("preemptor") >= gone, \
        "the preemptor was bound before its victim was gone"
    assert_untouched(env, "prio-0", "prio-1", "prio-3")
    assert {node_of(env.pod(f"prio-{p}")) for p in (0, 1, 3)} == {node}


def test_preemption_policy_never_stays_pending(env: Env) -> None:
    (node,) = env.nodes("n", 1, cpu="2")
    low = env.priority_class("low", 0)
    never = env.priority_class("never", 10, preemption_policy="Never")
    running_pod(env, "low", node, "2", low)
    env.wait_running(["low"])

    env.create_pod("polite", cpu="1", priority_class=never)
    expected = env.expected_message({node: INSUFFICIENT_CPU}, preemption=NEVER_PREEMPT)
    assert expected.endswith(" preemption: not eligible due to preemptionPolicy=Never.")
    env.wait_unschedulable("polite", expected)
    (event,) = wait_until(
        lambda: [e for e in env.rec.events_for("polite", "FailedScheduling")
                 if e["note"] == expected], 20, "the FailedScheduling event", diagnose=env.diagnose)
    assert event["reportingController"] == REPORTING_CONTROLLER
    assert not env.rec.ever("polite", nominated)
    assert never_bound(env, "polite")
    assert_untouched(env, "low")


# ----------------------------------------------------------------------------- PDBs
def wait_pdb_settled(env: Env, name: str, expected_pods: int, allowed: int) -> None:
    def settled() -> bool:
        pdb = env.get_pdb(name) or {}
        st = pdb.get("status") or {}
        return (st.get("observedGeneration") == pdb.get("metadata", {}).get("generation")
                and st.get("expectedPods") == expected_pods
                and st.get("disruptionsAllowed") == allowed)

    wait_until(settled, 60, f"PDB {name} status (disruption controller)", diagnose=env.diagnose)


def test_pdb_best_effort_prefers_victims_that_violate_no_budget_on_a_node(env: Env) -> None:
    """Two candidate victims on one node, only one needed. The guarded one has a lower
    priority (so a PDB-unaware choice would take it), but PDB-violating victims are
    reprieved first: the unguarded one goes."""
    (node,) = env.nodes("n", 1, cpu="4")
    p1, p2, p10 = (env.priority_class(f"p{v}", v) for v in (1, 2, 10))
    running_pod(env, "guarded", node, "2", p1, grace=2, labels={"app": "guarded"})
    running_pod(env, "unguarded", node, "2", p2, grace=2)
    env.pdb("guarded", {"app": "guarded"}, min_available=1)
    env.wait_running(["guarded", "unguarded"])
    wait_pdb_settled(env, "guarded", expected_pods=1, allowed=0)

    preemptor = env.create_pod("preemptor", cpu="2", priority_class=p10)
    assert_preempted(env, "unguarded", preemptor["metadata"]["uid"], node)
    assert env.wait_bound("preemptor", timeout=30) == node
    assert_untouched(env, "guarded")


def test_pdb_best_effort_prefers_the_node_without_violations(env: Env) -> None:
    """Fewest PDB violations comes before the lowest highest-victim priority."""
    (guarded_node,) = env.nodes("g", 1, cpu="4")
    (free_node,) = env.nodes("f", 1, cpu="4")
    p1, p2, p10 = (env.priority_class(f"p{v}", v) for v in (1, 2, 10))
    running_pod(env, "guarded", guarded_node, "4", p1, grace=2, labels={"app": "guarded"})
    running_pod(env, "unguarded", free_node, "4", p2, grace=2)
    env.pdb("guarded", {"app": "guarded"}, min_available=1)
    env.wait_running(["guarded", "unguarded"])
    wait_pdb_settled(env, "guarded", expected_pods=1, allowed=0)

    preemptor = env.create_pod("preemptor", cpu="4", priority_class=p10)
    assert_preempted(env, "unguarded", preemptor["metadata"]["uid"], free_node)
    assert env.wait_bound("preemptor", timeout=30) == free_node
    assert_untouched(env, "guarded")


def test_pdb_best_effort_violates_a_budget_when_nothing_else_helps(env: Env) -> None:
    (node,) = env.nodes("n", 1, cpu="4")
    p1, p10 = env.priority_class("p1", 1), env.priority_class("p10", 10)
    running_pod(env, "guarded", node, "4", p1, grace=2, labels={"app": "guarded"})
    env.pdb("guarded", {"app": "guarded"}, min_available=1)
    env.wait_running(["guarded"])
    wait_pdb_settled(env, "guarded", expected_pods=1, allowed=0)

    preemptor = env.create_pod("preemptor", cpu="4", priority_class=p10)
    assert_preempted(env, "guarded", preemptor["metadata"]["uid"], node)
    assert env.wait_bound("preemptor", timeout=30) == node


# ----------------------------------------------------------------------------- starvation
def test_starvation_1_preemptor_waits_for_both_victims_and_keeps_its_space(env: Env) -> None:
    """One node. The preemptor needs the room of two victims that terminate at different
    times. Between the first and the second going, a lower-priority pod would fit in the
    freed room; it must not get it: the space is reserved for the nominated preemptor."""
    (node,) = env.nodes("n", 1, cpu="4")
    p1, p2, p5, p10, p30 = (env.priority_class(f"p{v}", v) for v in (1, 2, 5, 10, 30))
    running_pod(env, "keeper", node, "2", p30)
    running_pod(env, "victim-short", node, "1", p1, grace=2)
    running_pod(env, "victim-long", node, "1", p2, grace=GRACE + 2)
    env.wait_running(["keeper", "victim-short", "victim-long"])

    preemptor = env.create_pod("preemptor", cpu="2", priority_class=p10)
    uid = preemptor["metadata"]["uid"]
    wait_nominated(env, "preemptor", node)
    assert_preempted(env, "victim-short", uid, node)
    assert_preempted(env, "victim-long", uid, node)
    env.create_pod("lower", cpu="1", priority_class=p5)

    assert env.wait_bound("preemptor", timeout=GRACE + 30) == node
    long_gone = env.rec.deleted_at("victim-long")
    assert long_gone is not None and env.rec.bound_at("preemptor") >= long_gone, \
        "the preemptor was bound before both victims were gone"
    assert never_bound(env, "lower"), "a lower-priority pod took the preemptor's space"
    expected = env.expected_message({node: INSUFFICIENT_CPU}, preemption={node: NO_VICTIMS})
    env.wait_unschedulable("lower", expected)
    assert never_bound(env, "lower")
    assert_untouched(env, "keeper")


def test_starvation_2_another_node_frees_up_first(env: Env) -> None:
    """The preemptor is nominated to a node whose victim terminates slowly; meanwhile a
    second node frees up: the preemptor goes there, without waiting."""
    (slow,) = env.nodes("slow", 1, cpu="4")
    (other,) = env.nodes("other", 1, cpu="4")
    p1, p10, p50 = (env.priority_class(f"p{v}", v) for v in (1, 10, 50))
    running_pod(env, "victim", slow, "4", p1, grace=60)
    running_pod(env, "blocker", other, "4", p50, grace=0)
    env.wait_running(["victim", "blocker"])

    preemptor = env.create_pod("preemptor", cpu="4", priority_class=p10)
    wait_nominated(env, "preemptor", slow)
    assert_preempted(env, "victim", preemptor["metadata"]["uid"], slow)
    env.delete_pod("blocker", grace=0)

    assert env.wait_bound("preemptor", timeout=30) == other
    assert env.rec.deleted_at("victim") is None, "the preemptor waited for its victim"
    assert not env.rec.ever("blocker", disruption_target)


def test_starvation_3_lower_priority_pod_fits_elsewhere_meanwhile(env: Env) -> None:
    (busy,) = env.nodes("busy", 1, cpu="4")
    (small,) = env.nodes("small", 1, cpu="2")
    p1, p5, p10 = (env.priority_class(f"p{v}", v) for v in (1, 5, 10))
    running_pod(env, "victim", busy, "4", p1, grace=GRACE)
    env.wait_running(["victim"])

    preemptor = env.create_pod("preemptor", cpu="4", priority_class=p10)
    wait_nominated(env, "preemptor", busy)
    assert_preempted(env, "victim", preemptor["metadata"]["uid"], busy)
    env.create_pod("lower", cpu="1", priority_class=p5)

    assert env.wait_bound("lower", timeout=20) == small
    assert never_bound(env, "preemptor"), "the lower-priority pod should not wait"
    assert env.wait_bound("preemptor", timeout=GRACE + 30) == busy
    assert env.rec.bound_at("lower") < env.rec.bound_at("preemptor")


def test_starvation_4_higher_priority_pod_takes_the_node_and_clears_the_nomination(
    env: Env,
) -> None:
    """While the first preemptor waits for its victim, a higher-priority pod arrives. It
    takes the node; the first preemptor's nominatedNodeName is cleared, and it stays
    pending."""
    (node,) = env.nodes("n", 1, cpu="4")
    p1, p10, p20 = (env.priority_class(f"p{v}", v) for v in (1, 10, 20))
    running_pod(env, "victim", node, "4", p1, grace=GRACE)
    env.wait_running(["victim"])

    first = env.create_pod("first", cpu="4", priority_class=p10)
    wait_nominated(env, "first", node)
    assert_preempted(env, "victim", first["metadata"]["uid"], node)
    env.create_pod("second", cpu="4", priority_class=p20)
    wait_nominated(env, "second", node)

    def nomination_cleared() -> bool:
        t_nominated = env.rec.first(
            "first", lambda p: nominated(p) == node) or float("inf")
        return any(t > t_nominated and not nominated(p)
                   for t, etype, p in env.rec.history("first") if etype != "DELETED")

    wait_until(nomination_cleared, 30, "first's nominatedNodeName cleared",
               diagnose=env.diagnose)
    assert env.wait_bound("second", timeout=GRACE + 30) == node
    assert never_bound(env, "first")
    expected = env.expected_message({node: INSUFFICIENT_CPU}, preemption={node: NO_VICTIMS})
    env.wait_unschedulable("first", expected)
    assert not nominated(env.pod("first"))
    assert never_bound(env, "first")


def test_no_second_preemption_while_the_victims_terminate(env: Env) -> None:
    """A preemptor retried while its victim terminates (here: a node arrives that is big
    enough but tainted) must wait, not preempt again elsewhere: kube-scheduler's "not
    eligible due to a terminating pod on the nominated node"."""
    (first,) = env.nodes("first", 1, cpu="4")
    (second,) = env.nodes("second", 1, cpu="4")
    p1, p2, p10 = (env.priority_class(f"p{v}", v) for v in (1, 2, 10))
    running_pod(env, "victim", first, "4", p1, grace=GRACE + 2)
    running_pod(env, "bystander", second, "4", p2)  # a victim too, but a costlier one
    env.wait_running(["victim", "bystander"])

    preemptor = env.create_pod("preemptor", cpu="4", priority_class=p10)
    wait_nominated(env, "preemptor", first)
    assert_preempted(env, "victim", preemptor["metadata"]["uid"], first)

    taint = {"key": f"e2e-{env.id}", "value": "x", "effect": "NoSchedule"}
    (tainted,) = env.nodes("tainted", 1, cpu="8", taints=[taint])
    expected = env.expected_message(
        {first: INSUFFICIENT_CPU, second: INSUFFICIENT_CPU, tainted: UNTOLERATED_TAINT},
        preemption=TERMINATING_ON_NOMINATED)
    env.wait_unschedulable("preemptor", expected, timeout=GRACE)
    assert env.wait_bound("preemptor", timeout=GRACE + 30) == first
    assert_untouched(env, "bystander")
