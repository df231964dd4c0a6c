"""``secondary-scheduler explain`` / ``kubectl why``: the explanation of a pending pod matches
what the scheduler writes and then does.

Two sources are checked: the one-shot mode (the CLI lists the cluster and runs the framework
in-process), which works against any cluster and so also runs with
``E2E_SCHEDULER=kube-scheduler`` (its FailedScheduling message and its preemption victims must
then be upstream's); and the ``/debug/explain`` endpoint of our running scheduler (its live
cache), which is ours only: kube-scheduler has no such endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import REPO, DeployedScheduler, Env, LocalScheduler, ReferenceScheduler
from e2e.kube import condition, nominated, pod_manifest, pods_path, wait_until
from e2e.test_preemption import assert_preempted, assert_untouched, running_pod, wait_pdb_settled

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
GATE = "e2e.secondary-scheduler.io/hold"


def sources(env: Env) -> dict[str, list[str]]:
    """CLI arguments per source: one-shot always; our live scheduler when it is ours."""
    out = {"one-shot": ["--one-shot"]}
    sched = env.scheduler
    if isinstance(sched, LocalScheduler) and not isinstance(sched, ReferenceScheduler):
        out["live"] = ["--scheduler-url", sched.url]
    elif isinstance(sched, DeployedScheduler):
        url = sched.direct_url()
        # Else the CLI finds it and port-forwards to it.
        out["live"] = ["--scheduler-url", url] if url else []
    return out


def cli(env: Env, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "scheduler", "explain", target,
            "--kubeconfig", env.kube.kubeconfig, *args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def explain_json(env: Env, name: str, *args: str) -> dict[str, Any]:
    done = cli(env, f"{env.ns}/{name}", "-o", "json", *args)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def by_node(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in answer["nodes"]}


def failing(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["plugin"]: v for v in report["filters"] if v["code"] not in ("Success", "Skip")}


def test_every_node_and_plugin_named_and_the_failed_scheduling_message_matched(env: Env) -> None:
    (small,) = env.nodes("small", 1, cpu="1")
    (gpu,) = env.nodes("gpu", 1, cpu="8", taints=[GPU_TAINT])
    (busy,) = env.nodes("busy", 1, cpu="4")
    env.create_pod("filler", cpu="3", node_name=busy)
    env.wait_running(["filler"])
    env.create_pod("web", cpu="2", memory="1Gi")
    env.wait_unschedulable("web")
    (event, *_) = wait_until(lambda: env.rec.events_for("web", "FailedScheduling"), 30,
                             "a FailedScheduling event", diagnose=env.diagnose)

    for source, args in sources(env).items():
        answer = explain_json(env, "web", *args)
        assert answer["outcome"] == "unschedulable", source
        # The counts the scheduler wrote, reproduced from the per-node first failures.
        assert answer["message"] == event["note"], source
        reports = by_node(answer)
        assert reports[small]["counted"] == ["Insufficient cpu"]
        assert reports[gpu]["counted"] == ["node(s) had untolerated taint(s)"]
        assert reports[busy]["counted"] == ["Insufficient cpu"]
        assert failing(reports[small])["NodeResourcesFit"]["details"] == [
            "cpu: the pod requests 2, 1 free (1 allocatable, 0 requested)"]
        assert failing(reports[busy])["NodeResourcesFit"]["details"] == [
            "cpu: the pod requests 2, 1 free (4 allocatable, 3 requested)"]
        assert failing(reports[gpu])["TaintToleration"]["details"] == [
            "untolerated taint dedicated=gpu:NoSchedule"]
        assert "tolerate dedicated=gpu:NoSchedule: 1 node would then pass every filter" in \
            answer["hints"], answer["hints"]
        assert "2 nodes would fit with 1 less cpu" in answer["hints"], answer["hints"]
        if source == "live":
            assert answer["source"].startswith("live cache of the scheduler")

    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        path = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
        done = subprocess.run(
            [kubectl, "why", "pod", "web", "-n", env.ns, "--kubeconfig", env.kube.kubeconfig,
             "--one-shot"], capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PATH=path))
        assert done.returncode == 0, done.stderr
        assert max(len(line) for line in done.stdout.splitlines()) <= 100
        assert "untolerated taint dedicated=gpu:NoSchedule" in done.stdout
        assert event["note"].split(". ")[0] in " ".join(done.stdout.split())


def test_preemption_preview_names_the_victims_the_scheduler_then_evicts(env: Env) -> None:
    """The preemptor is held by a scheduling gate while it is explained, then released."""
    (guarded_node,) = env.nodes("a", 1, cpu="4")
    (free_node,) = env.nodes("b", 1, cpu="4")
    low = env.priority_class("low", 0)
    mid = env.priority_class("mid", 5)
    high = env.priority_class("high", 100)
    running_pod(env, "guarded", guarded_node, "3", low, labels={"app": "guarded"})
    running_pod(env, "b-1", free_node, "2", mid)
    running_pod(env, "b-2", free_node, "2", mid)
    env.pdb("guarded", {"app": "guarded"}, min_available=1)
    env.wait_running(["guarded", "b-1", "b-2"])
    wait_pdb_settled(env, "guarded", expected_pods=1, allowed=0)

    manifest = pod_manifest("urgent", cpu="3", priority_class=high,
                            node_selector=env.selector())
    manifest["spec"]["schedulingGates"] = [{"name": GATE}]
    preemptor = env.kube.create(pods_path(env.ns), manifest)

    for source, args in sources(env).items():
        answer = explain_json(env, "urgent", *args)
        preview = answer["preemption"]
        assert preview["nominate"] == free_node, (source, preview)
        best, other = preview["candidates"]
        assert sorted(v["pod"] for v in best["victims"]) == [f"{env.ns}/b-1", f"{env.ns}/b-2"]
        assert best["pdb_violations"] == 0
        assert other["node"] == guarded_node and other["pdb_violations"] == 1
        assert [(v["pod"], v["violates"]) for v in other["victims"]] == [
            (f"{env.ns}/guarded", f"{env.ns}/guarded")]
        assert any("scheduling gates" in n for n in answer["notes"])
    assert_untouched(env, "guarded", "b-1", "b-2")  # explaining evicts nothing

    env.kube.patch(pods_path(env.ns, "urgent"), {"spec": {"schedulingGates": None}})
    uid = preemptor["metadata"]["uid"]
    wait_until(lambda: env.rec.ever("urgent", lambda p: nominated(p) == free_node), 60,
               f"urgent nominated to {free_node}", diagnose=env.diagnose)
    assert_preempted(env, "b-1", uid, free_node)
    assert_preempted(env, "b-2", uid, free_node)
    assert env.wait_bound("urgent", timeout=60) == free_node
    assert_untouched(env, "guarded")


@pytest.mark.parametrize("case", ["unknown pod", "bound pod", "unknown profile"])
def test_bad_input_is_one_line_and_a_non_zero_exit(env: Env, case: str) -> None:
    """No permission (403) and an unreachable API server are in the unit tests
    (tests/operator/test_explain_cli.py): the local control plane has one all-powerful user."""
    (n,) = env.nodes("n", 1, cpu="4")
    if case == "unknown pod":
        runs = {s: (f"{env.ns}/nope", a) for s, a in sources(env).items()}
        expected = f"error: pod {env.ns}/nope not found\n"
    elif case == "bound pod":
        env.create_pod("placed", cpu="1", node_name=n)
        runs = {s: (f"{env.ns}/placed", a) for s, a in sources(env).items()}
        expected = f"error: pod {env.ns}/placed is already bound to {n}\n"
    else:
        env.create_pod("web", cpu="1", scheduler="nobody")
        runs = {s: (f"{env.ns}/web", [*a, "--profile", "nope"]) for s, a in sources(env).items()}
        expected = "error: no profile named 'nope' (profiles: secondary-scheduler)\n"
    for source, (target, args) in runs.items():
        done = cli(env, target, *args)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", expected), source
    assert condition(env.pod("web") if case == "unknown profile" else None, "PodScheduled") \
        is None, "a pod of another scheduler is explained, never scheduled"
