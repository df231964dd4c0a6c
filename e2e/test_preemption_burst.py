"""A burst of pods of mixed priorities, all created at once, on a full cluster.

6 nodes of 2 cpu, 20 one-cpu bare pods with priorities 0, 10, 20 and 30 (five each). Only 12
fit: whatever lands first, preemption must end with the 12 most important bound (5 x 30,
5 x 20, 2 x 10), as kube-scheduler does. Several preemptors then race for the same victims
and nodes; before issue 14 one of them could be left waiting on a preemption that had become
someone else's. The burst is repeated, since the race does not show every time;
``bench/preemption_burst_stress.py`` repeats it many more times with a core kept busy, and
times each round.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from e2e.conftest import Env
from e2e.kube import condition, node_of, overcommitted, pods_path, terminating, wait_until

ROUNDS = 3
PRIORITIES = (0, 10, 20, 30)
PER_PRIORITY = 5
EXPECTED_BOUND = {30: 5, 20: 5, 10: 2}
# Generous for a loaded CI machine; kube-scheduler settles in about a second, and the stuck
# preemptor of issue 14 stayed pending for 12 s and more (until the 5-minute flush).
SETTLE_SECONDS = 10


def bound_by_priority(pods: list[dict[str, Any]]) -> Counter[int]:
    return Counter(
        int(p["metadata"]["labels"]["prio"])
        for p in pods
        if node_of(p) and not terminating(p)
    )


def unschedulable_while_bound(pod: dict[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled") or {}
    return bool(node_of(pod)) and (
        scheduled.get("status") == "False" or scheduled.get("reason") == "Unschedulable"
    )


def of_round(env: Env, round_: int) -> list[dict[str, Any]]:
    return [p for p in env.pods() if p["metadata"]["labels"]["round"] == str(round_)]


def create_burst(env: Env, classes: dict[int, str], round_: int) -> None:
    """The round's 20 pods, created at once from four threads."""
    def create(item: tuple[str, int]) -> None:
        name, prio = item
        env.create_pod(name, cpu="1", priority_class=classes[prio],
                       labels={"round": str(round_), "prio": str(prio)})

    names = [(f"r{round_}-p{prio}-{i}", prio) for i in range(PER_PRIORITY) for prio in PRIORITIES]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, names))


def settled(env: Env, round_: int) -> bool:
    """The placement kube-scheduler ends with: the 12 most important pods bound."""
    return bound_by_priority(of_round(env, round_)) == Counter(EXPECTED_BOUND)


def clear_round(env: Env, round_: int) -> None:
    """Delete the round's pods (no grace: kwok removes them at once) and wait until gone."""
    env.kube.request("DELETE", pods_path(env.ns),
                     query={"labelSelector": f"round={round_}", "gracePeriodSeconds": 0})
    wait_until(lambda: not of_round(env, round_), 30, f"round {round_} cleared",
               diagnose=env.diagnose)


def burst(env: Env, nodes: list[str], classes: dict[int, str], round_: int) -> None:
    create_burst(env, classes, round_)
    wait_until(lambda: settled(env, round_), SETTLE_SECONDS,
               f"round {round_}: 5 x 30, 5 x 20 and 2 x 10 bound", diagnose=env.diagnose)
    pods = of_round(env, round_)
    assert overcommitted([env.kube.get(f"/api/v1/nodes/{n}") for n in nodes], pods) == []
    assert [p["metadata"]["name"] for p in pods
            if int(p["metadata"]["labels"]["prio"]) >= 20 and not node_of(p)] == []
    # No failure report of an earlier attempt landed after a binding (issue 14 item 2).
    assert [p["metadata"]["name"] for p in pods
            if env.rec.ever(p["metadata"]["name"], unschedulable_while_bound)] == []
    clear_round(env, round_)


def test_a_burst_of_mixed_priorities_ends_with_the_twelve_most_important_bound(env: Env) -> None:
    nodes = env.nodes("n", 6, cpu="2", memory="8Gi")
    classes = {prio: env.priority_class(f"p{prio}", prio) for prio in PRIORITIES}
    for round_ in range(ROUNDS):
        burst(env, nodes, classes, round_)
