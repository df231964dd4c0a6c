"""Random preemption cases on the live control plane: which node and victims a scheduler picks.

Each case (seeded: the same cases for every scheduler) has 3 to 5 nodes of 4 cpu, filled
with pods of priorities 0 to 30 placed directly (``spec.nodeName``), some of them covered by
a PodDisruptionBudget, and then a preemptor of priority 20 to 40 that fits on no node until
pods are evicted. Before the preemptor comes, every pod is Running and the budget's status
counts them (what both schedulers' watches could know). A case records the node the
preemptor was bound to and the pods evicted for it. ``expected`` is the choice worked out
here with upstream's rules (minimal victims by reprieve, PDB-violating ones reprieved first;
fewest violations, lowest top priority, smallest priority sum, fewest victims); ``tie`` when
the start times of the victims must decide between nodes. Pods started in the same second
tie on that too, and kube-scheduler's pickOneNodeForPreemption then takes the first node of
a Go map's iteration: at random. So agreement is counted apart on the cases without a tie.

Runs with a core kept busy (``--busy N``: N cores, 0 for none), as
bench/preemption_burst_stress.py does, against ours or, with ``E2E_SCHEDULER=kube-scheduler``,
upstream's; under the e2e lock. JSON lands in bench/results/preemption-random-<scheduler>.json;
``--compare`` reads both files and counts the cases where the two chose the same node and the
same victims.

    flock /tmp/e2e.lock python bench/preemption_random_compare.py --cases 30
    E2E_SCHEDULER=kube-scheduler flock /tmp/e2e.lock python bench/preemption_random_compare.py
    python bench/preemption_random_compare.py --compare
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from preemption_burst_stress import RESULTS, live_env, scheduler_name

from e2e.conftest import Env
from e2e.kube import node_of, pod_manifest, pods_path, terminating, wait_until

NODE_CPU = 4000
SIZES = (500, 1000, 1500)
PRIORITIES = (0, 10, 20, 30)


@dataclass
class Pod:
    name: str
    node: int
    cpu: int
    priority: int
    pdb: bool


@dataclass
class Case:
    index: int
    nodes: int
    pods: list[Pod]
    preemptor_cpu: int
    preemptor_priority: int
    max_unavailable: int | None
    expected: dict[str, Any] = field(default_factory=dict)


def random_case(index: int, seed: int) -> Case:
    """Full nodes of mixed priorities and a preemptor that fits only after evictions."""
    rng = random.Random(seed * 1000 + index)
    nodes = rng.randint(3, 5)
    pods: list[Pod] = []
    for node in range(nodes):
        used, k = 0, 0
        while True:
            cpu = rng.choice(SIZES)
            if used + cpu > NODE_CPU:
                break
            pods.append(Pod(f"c{index}-n{node}-p{k}", node, cpu, rng.choice(PRIORITIES),
                            rng.random() < 0.3))
            used, k = used + cpu, k + 1
    free = max(NODE_CPU - sum(p.cpu for p in pods if p.node == n) for n in range(nodes))
    cpu = rng.choice([c for c in (1000, 1500, 2000, 2500) if c > free])
    budget = rng.choice((None, 0, 1)) if any(p.pdb for p in pods) else None
    case = Case(index, nodes, pods, cpu, rng.choice((20, 25, 40)), budget)
    case.expected = expected_choice(case)
    return case


def victims_on(case: Case, node: int) -> tuple[tuple[int, int, int, int], list[str]] | None:
    """upstream SelectVictimsOnNode for one node of the case, and the node's sort key."""
    here = [p for p in case.pods if p.node == node]
    lower = sorted((p for p in here if p.priority < case.preemptor_priority),
                   key=lambda p: -p.priority)
    free = NODE_CPU - sum(p.cpu for p in here) + sum(p.cpu for p in lower)
    if free < case.preemptor_cpu:
        return None
    allowed = case.max_unavailable if case.max_unavailable is not None else 0
    violating: list[Pod] = []
    others: list[Pod] = []
    for p in lower:
        if p.pdb and case.max_unavailable is not None:
            allowed -= 1
            if allowed < 0:
                violating.append(p)
                continue
        others.append(p)
    victims: list[Pod] = []
    violations = 0
    for p in violating + others:
        if free - p.cpu >= case.preemptor_cpu:
            free -= p.cpu
        else:
            victims.append(p)
            violations += p in violating
    key = (violations, max(v.priority for v in victims),
           sum(v.priority for v in victims), len(victims))
    return key, sorted(v.name for v in victims)


def expected_choice(case: Case) -> dict[str, Any]:
    options = {n: found for n in range(case.nodes) if (found := victims_on(case, n))}
    if not options:
        return {"node": None, "victims": [], "tie": False}
    best = min(key for key, _ in options.values())
    nodes = sorted(n for n, (key, _) in options.items() if key == best)
    return {"node": nodes[0], "victims": options[nodes[0]][1], "tie": len(nodes) > 1,
            "tied_nodes": nodes}


def setup_case(env: Env, case: Case, classes: dict[int, str]) -> list[str]:
    names = env.nodes(f"c{case.index}", case.nodes, cpu="4", memory="8Gi",
                      prefix=f"c{case.index}-n")
    for p in case.pods:
        labels = {"case": str(case.index), **({"pdb": str(case.index)} if p.pdb else {})}
        env.kube.create(pods_path(env.ns), pod_manifest(
            p.name, cpu=f"{p.cpu}m", priority_class=classes[p.priority],
            node_name=names[p.node], labels=labels))
    if case.max_unavailable is not None:
        # The pods have no controller: the disruption controller computes a budget over
        # them only with an integer minAvailable (maxUnavailable needs their scale).
        covered = sum(p.pdb for p in case.pods)
        env.pdb(f"c{case.index}", {"pdb": str(case.index)},
                min_available=max(0, covered - case.max_unavailable))
    wait_until(lambda: settled_before(env, case), 60, f"case {case.index} Running",
               diagnose=env.diagnose)
    return names


def settled_before(env: Env, case: Case) -> bool:
    """Every pod Running with a start time, and the budget's status counting them."""
    pods = {p["metadata"]["name"]: p for p in env.pods()}
    for p in case.pods:
        status = (pods.get(p.name) or {}).get("status") or {}
        if status.get("phase") != "Running" or not status.get("startTime"):
            return False
    if case.max_unavailable is None:
        return True
    pdb = env.get_pdb(f"c{case.index}") or {}
    status = pdb.get("status") or {}
    covered = sum(p.pdb for p in case.pods)
    return (status.get("observedGeneration") == pdb["metadata"].get("generation")
            and status.get("expectedPods") == covered
            and status.get("currentHealthy") == covered)


def run_case(env: Env, case: Case, classes: dict[int, str], preemptor_classes: dict[int, str],
             timeout: float) -> dict[str, Any]:
    names = setup_case(env, case, classes)
    name = f"c{case.index}-preemptor"
    started = time.monotonic()
    env.create_pod(name, group=f"c{case.index}", cpu=f"{case.preemptor_cpu}m",
                   priority_class=preemptor_classes[case.preemptor_priority],
                   labels={"case": str(case.index)})

    def bound() -> str | None:
        return node_of(env.pod(name) or {}) or None

    try:
        node = wait_until(bound, timeout, f"{name} bound")
    except AssertionError:
        node = None
    elapsed = time.monotonic() - started
    own = {p.name for p in case.pods}
    victims = sorted(n for n in own if env.rec.deleted_at(n) is not None
                     or env.rec.ever(n, terminating))
    result = {"case": case.index, "node": names.index(node) if node else None,
              "victims": victims, "seconds": round(elapsed, 3), "expected": case.expected}
    env.kube.request("DELETE", pods_path(env.ns),
                     query={"labelSelector": f"case={case.index}", "gracePeriodSeconds": 0})
    for n in names:
        env.delete_node(n)
    if case.max_unavailable is not None:
        env.kube.delete(f"/apis/policy/v1/namespaces/{env.ns}/poddisruptionbudgets/"
                        f"c{case.index}")
    return result


def compare() -> None:
    runs = {s: json.loads((RESULTS / f"preemption-random-{s}.json").read_text())
            for s in ("ours", "kube-scheduler")}
    ours = {c["case"]: c for c in runs["ours"]["cases"]}
    theirs = {c["case"]: c for c in runs["kube-scheduler"]["cases"]}
    agree, ties, untied, differ = 0, 0, 0, []
    for index in sorted(set(ours) & set(theirs)):
        a, b = ours[index], theirs[index]
        same = (a["node"], a["victims"]) == (b["node"], b["victims"])
        agree += same
        ties += same and a["expected"]["tie"]
        untied += not a["expected"]["tie"]
        if not same:
            differ.append({"case": index, "ours": [a["node"], a["victims"]],
                           "kube-scheduler": [b["node"], b["victims"]],
                           "expected": a["expected"]})
    print(json.dumps({"cases": len(set(ours) & set(theirs)), "agree": agree,
                      "cases_without_a_tie": untied, "agree_without_a_tie": agree - ties,
                      "agree_on_a_tie": ties, "differ": differ}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--busy", type=int, default=1,
                        help="how many busy-loop processes run meanwhile")
    parser.add_argument("--compare", action="store_true", help="compare the two result files")
    args = parser.parse_args()
    if args.compare:
        compare()
        return
    name = scheduler_name()
    results: list[dict[str, Any]] = []
    with live_env("preemption-random", busy=args.busy) as (env, log):
        classes = {prio: env.priority_class(f"p{prio}", prio) for prio in PRIORITIES}
        preemptor_classes = {prio: env.priority_class(f"q{prio}", prio) for prio in (25, 40)}
        preemptor_classes[20] = classes[20]
        for index in range(args.cases):
            result = run_case(env, random_case(index, args.seed), classes, preemptor_classes,
                              args.timeout)
            results.append(result)
            print(json.dumps(result), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"preemption-random-{name}.json"
    out.write_text(json.dumps({"scheduler": name, "busy_cores": args.busy,
                               "scheduler_log": str(log), "cases": results}, indent=1) + "\n")
    print(json.dumps({"scheduler": name, "log": str(log), "cases": len(results)}))


if __name__ == "__main__":
    main()
