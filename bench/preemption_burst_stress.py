"""The preemption burst of ``e2e/test_preemption_burst.py``, many rounds, with a core kept busy.

6 nodes of 2 cpu; each round creates 20 one-cpu pods of priorities 0, 10, 20 and 30 at once
onto a cluster whose 12 slots the previous round left empty, and times how long until the
placement kube-scheduler ends with (5 x 30, 5 x 20, 2 x 10 bound) holds. A round that has not
settled after ``--stall`` seconds is a stall; its pending pods of priority 20 and 30 and their
PodScheduled conditions are printed, and the round is cleared before the next. Meanwhile a
child process spins on one core (``--busy N``: N of them, 0 to leave the machine as it is),
as the other work of a shared CI machine would.

Runs on the e2e suite's local control plane (``E2E_CLUSTER_DIR``, default ``.cluster-e2e``),
against ours or, with ``E2E_SCHEDULER=kube-scheduler``, upstream's; take the e2e lock, as for
any e2e run. JSON lands in bench/results/preemption-burst-stress-<scheduler>.json.

    flock /tmp/e2e.lock python bench/preemption_burst_stress.py --rounds 50
    E2E_SCHEDULER=kube-scheduler flock /tmp/e2e.lock python bench/preemption_burst_stress.py
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from e2e.cluster.cluster import Cluster  # noqa: E402
from e2e.conftest import (  # noqa: E402
    DEPLOYED_NS,
    REPO,
    Env,
    LocalScheduler,
    ReferenceScheduler,
)
from e2e.kube import Kube, condition, events, node_of, wait_until  # noqa: E402
from e2e.test_preemption_burst import (  # noqa: E402
    PRIORITIES,
    clear_round,
    create_burst,
    of_round,
    settled,
)

RESULTS = ROOT / "bench" / "results"
POLL = 0.05


def start_scheduler(kubeconfig: Path, log: Path) -> LocalScheduler:
    local: LocalScheduler
    if os.environ.get("E2E_SCHEDULER") == "kube-scheduler":
        binary = Cluster().bin_dir(with_kube_scheduler=True) / "kube-scheduler"
        local = ReferenceScheduler(kubeconfig, log, binary)
    else:
        local = LocalScheduler(kubeconfig, log, REPO / "manifests" / "config.yaml")
    local.start()
    local.wait_ready()
    return local


def scheduler_name() -> str:
    return "kube-scheduler" if os.environ.get("E2E_SCHEDULER") == "kube-scheduler" else "ours"


@contextlib.contextmanager
def live_env(name: str, *, busy: int) -> Iterator[tuple[Env, Path]]:
    """The e2e control plane, the scheduler under test, ``busy`` cores kept busy, and an Env
    of the suite's kind; yields it with the scheduler's log path, and tears all down."""
    cluster = Cluster(Path(os.environ.get("E2E_CLUSTER_DIR") or REPO / ".cluster-e2e"))
    cluster.up(nodes=None)
    kube = Kube(cluster.kubeconfig_path)
    wait_until(lambda: kube.request("GET", "/readyz")[0] == 200, 60, "the API server's /readyz")
    kube.ensure_namespace(DEPLOYED_NS)
    log = Path(tempfile.mkdtemp(prefix=f"{name}-")) / "scheduler.log"
    scheduler = start_scheduler(cluster.kubeconfig_path, log)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                 stdin=subprocess.DEVNULL) for _ in range(busy)]
    env = Env(kube, scheduler, name)
    env.setup()
    try:
        yield env, log
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        env.teardown()
        scheduler.stop()
        if os.environ.get("E2E_KEEP_CLUSTER") != "1":
            cluster.down()


def stuck_preemptors(env: Env, round_: int) -> list[dict[str, Any]]:
    """The round's pending pods that outrank a bound one (priority 20 and 30 left pending, or
    a priority-10 pod while a priority-0 pod runs, as the e2e test once saw), with their
    PodScheduled condition."""
    pods = of_round(env, round_)
    lowest_bound = min((int(p["metadata"]["labels"]["prio"]) for p in pods if node_of(p)),
                       default=0)
    out = []
    for p in pods:
        prio = int(p["metadata"]["labels"]["prio"])
        if (prio >= 20 or prio > lowest_bound) and not node_of(p):
            scheduled = condition(p, "PodScheduled") or {}
            out.append({"pod": p["metadata"]["name"],
                        "nominated": (p.get("status") or {}).get("nominatedNodeName"),
                        "reason": scheduled.get("reason"), "message": scheduled.get("message")})
    return out


def run_round(env: Env, classes: dict[int, str], round_: int, stall: float) -> dict[str, Any]:
    start = time.monotonic()
    create_burst(env, classes, round_)
    created = time.monotonic()
    while time.monotonic() - start < stall:
        if settled(env, round_):
            return {"round": round_, "settled_s": round(time.monotonic() - start, 3),
                    "create_s": round(created - start, 3), "evicted": evicted(env, round_)}
        time.sleep(POLL)
    return {"round": round_, "settled_s": None, "create_s": round(created - start, 3),
            "evicted": evicted(env, round_), "stuck": stuck_preemptors(env, round_)}


def evicted(env: Env, round_: int) -> int:
    """How many of the round's pods preemption removed so far (the fewest that reach the
    final placement depends on where the first pods landed; extra ones are waste)."""
    prefix = f"r{round_}-"
    return sum(1 for name in env.rec.names()
               if name.startswith(prefix) and env.rec.deleted_at(name) is not None)


def preemptions(env: Env, round_: int) -> dict[str, int]:
    """The round's Preempted events, by preemptor. In this burst one victim makes room for
    one preemptor (1 cpu of a 2-cpu node), so each event is one preemption, and every event
    after a preemptor's first is a repeat: its earlier victim's room went to another pod, or
    it preempted again before the cache showed the victim gone."""
    prefix = f"r{round_}-"
    by_preemptor: dict[str, int] = {}
    for event in events(env.kube, env.ns):
        regarding = (event.get("regarding") or {}).get("name") or ""
        if event.get("reason") != "Preempted" or not regarding.startswith(prefix):
            continue
        # "Preempted by pod <uid> on node <node>", from both schedulers (kube-scheduler's
        # events carry no related object).
        words = str(event.get("note") or "").split()
        preemptor = words[3] if len(words) > 3 and words[:3] == ["Preempted", "by", "pod"] \
            else "?"
        by_preemptor[preemptor] = by_preemptor.get(preemptor, 0) + 1
    return by_preemptor


def count_preemptions(env: Env, result: dict[str, Any]) -> None:
    """Add the round's preemptions and repeats to ``result`` (after the round, so that the
    events of its last preemptions are written)."""
    by_preemptor = preemptions(env, result["round"])
    result["preemptions"] = sum(by_preemptor.values())
    result["repeats"] = sum(n - 1 for n in by_preemptor.values())
    if result["repeats"]:
        result["repeated_by"] = {p: n for p, n in sorted(by_preemptor.items()) if n > 1}


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    times = sorted(r["settled_s"] for r in rounds if r["settled_s"] is not None)
    return {
        "rounds": len(rounds),
        "settled": len(times),
        "stalled": len(rounds) - len(times),
        "p50_s": statistics.median(times) if times else None,
        "p90_s": times[int(0.9 * (len(times) - 1))] if times else None,
        "max_s": times[-1] if times else None,
        "evicted": sum(r["evicted"] for r in rounds),
        "preemptions": sum(r["preemptions"] for r in rounds),
        "repeats_per_round": round(sum(r["repeats"] for r in rounds) / len(rounds), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--stall", type=float, default=10.0,
                        help="seconds after which an unsettled round counts as stalled")
    parser.add_argument("--busy", type=int, default=1,
                        help="how many busy-loop processes run meanwhile")
    args = parser.parse_args()
    name = scheduler_name()
    rounds: list[dict[str, Any]] = []
    with live_env("burst-stress", busy=args.busy) as (env, log):
        env.nodes("n", 6, cpu="2", memory="8Gi")
        classes = {prio: env.priority_class(f"p{prio}", prio) for prio in PRIORITIES}
        for round_ in range(args.rounds):
            result = run_round(env, classes, round_, args.stall)
            clear_round(env, round_)
            count_preemptions(env, result)
            rounds.append(result)
            print(json.dumps(result), flush=True)
    report = {"scheduler": name, "busy_cores": args.busy, "stall_s": args.stall,
              "load_avg": os.getloadavg(), "scheduler_log": str(log),
              "summary": summary(rounds), "rounds": rounds}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"preemption-burst-stress-{name}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"scheduler": name, **report["summary"], "log": str(log)}))


if __name__ == "__main__":
    main()
