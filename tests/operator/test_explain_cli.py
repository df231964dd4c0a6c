"""The explain CLI, the ``/debug/explain`` endpoint and its route, against the scripted API.

The e2e suite (``e2e/test_explain.py``) runs the same against a real control plane; here are
the answers of an API that refuses or is not there, which a real one does not easily give.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.operator import main as main_module
from scheduler.operator.explain_cli import kubectl_why
from scheduler.operator.explain_endpoint import ExplainEndpoint
from scheduler.operator.health import HealthServer
from scheduler.operator.serving.auth import Authorizer, Caller, User
from scheduler.testing import node, pod
from tests.operator.fake_api import FakeApi, Reply
from tests.operator.serving_kit import FakeReviews, get, running, secure
from tests.test_explain import build

POD = "/api/v1/namespaces/default/pods/web"
ANYONE = Caller(User("dev"), Authorizer(None, allow_all=True))
LISTS = {
    "/api/v1/nodes": [node("a", cpu="1"), node("b", cpu="4")],
    "/api/v1/pods": [pod("web", cpu="2")],
    "/api/v1/namespaces": [],
    "/apis/policy/v1/poddisruptionbudgets": [],
    "/apis/scheduling.k8s.io/v1/priorityclasses": [],
}


def listing(items: list[dict[str, Any]]) -> Reply:
    return Reply(200, {"items": items, "metadata": {"resourceVersion": "7"}})


def forbidden(what: str) -> Reply:
    return Reply(403, {"kind": "Status", "code": 403, "message": f"{what} is forbidden"})


@pytest.fixture
def kubeconfig(api: FakeApi, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path, api.url)


def write_kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u",
                                               "namespace": "default"}}],
    }))
    return path


def serve_cluster(api: FakeApi, pending: dict[str, Any]) -> None:
    api.on("GET", POD, Reply(200, pending))
    for path, items in LISTS.items():
        api.on("GET", path, listing(items))


def test_one_shot_json_through_both_entry_points(
    api: FakeApi, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve_cluster(api, pod("web", cpu="2"))
    code = main_module.main(["explain", "default/web", "--kubeconfig", str(kubeconfig),
                             "-o", "json", "--scheduler-namespace", "nowhere"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["outcome"] == "schedulable" and answer["message"] == (
        "would be bound to b, the only feasible node")
    assert answer["source"].startswith("one-shot")
    assert {n["node"]: n["counted"] for n in answer["nodes"]} == {
        "a": ["Insufficient cpu"], "b": []}

    assert kubectl_why(["pod", "web", "--kubeconfig", str(kubeconfig), "--one-shot"]) == 0
    text = capsys.readouterr().out
    assert "explained with profile secondary-scheduler; one-shot" in " ".join(text.split())
    assert "cpu: the pod requests 2, 1 free (1 allocatable, 0 requested)" in text


@pytest.mark.parametrize(("replies", "error"), [
    pytest.param({POD: Reply(404, {"message": "pods \"web\" not found"})},
                 "error: pod default/web not found", id="unknown pod"),
    pytest.param({POD: forbidden("pods \"web\"")},
                 'error: no permission to read pod default/web: pods "web" is forbidden',
                 id="no permission to read the pod"),
    pytest.param({POD: Reply(200, pod("web", node_name="b"))},
                 "error: pod default/web is already bound to b", id="bound pod"),
    pytest.param({"/api/v1/nodes": forbidden("nodes")},
                 "error: no permission to list nodes: nodes is forbidden",
                 id="no permission to list nodes"),
])
def test_bad_input_is_one_line_and_exit_1(
    api: FakeApi, kubeconfig: Path, capsys: pytest.CaptureFixture[str],
    replies: dict[str, Reply], error: str,
) -> None:
    serve_cluster(api, pod("web", cpu="2"))
    for path, reply in replies.items():
        api.on("GET", path, reply)
    assert main_module.main(["explain", "default/web", "--kubeconfig", str(kubeconfig),
                             "--one-shot"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err == error + "\n"


def test_an_unreachable_api_server_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = write_kubeconfig(tmp_path, f"http://127.0.0.1:{port}")
    assert main_module.main(["explain", "default/web", "--kubeconfig", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach the API server: ") and err.count("\n") == 1


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main_module.main(["explain", "no-namespace"])
    assert exit_info.value.code == 2


# -- the endpoint -------------------------------------------------------------------------------
@pytest.fixture
def loop() -> Iterator[threading.Event]:
    """Stands in for the scheduling thread: drains the scheduler's inbox until stopped."""
    stop = threading.Event()
    yield stop
    stop.set()


def endpoint(api: FakeApi, stop: threading.Event) -> ExplainEndpoint:
    s, intake = build(LISTS["/api/v1/nodes"], [])

    def drain() -> None:
        while not stop.wait(0.005):
            s.refresh()

    threading.Thread(target=drain, daemon=True).start()
    return ExplainEndpoint(api.kube_api(), s, intake, timeout=60)


@pytest.mark.parametrize(("query", "reply", "status", "message"), [
    pytest.param({"namespace": ["default"]}, None, 400, "namespace and name are required",
                 id="name missing"),
    pytest.param({"namespace": ["default"], "name": ["web"]}, Reply(404, {}), 404,
                 "pod default/web not found", id="unknown pod"),
    pytest.param({"namespace": ["default"], "name": ["web"]}, forbidden("pods \"web\""), 403,
                 'reading pod default/web: pods "web" is forbidden',
                 id="the scheduler may not read it"),
    pytest.param({"namespace": ["default"], "name": ["web"]},
                 Reply(200, pod("web", node_name="a")), 409,
                 "pod default/web is already bound to a", id="bound pod"),
    pytest.param({"namespace": ["default"], "name": ["web"], "profile": ["x"]},
                 Reply(200, pod("web")), 400,
                 "no profile named 'x' (profiles: secondary-scheduler)", id="unknown profile"),
])
def test_endpoint_refusals(
    api: FakeApi, loop: threading.Event, query: dict[str, list[str]], reply: Reply | None,
    status: int, message: str,
) -> None:
    if reply is not None:
        api.on("GET", POD, reply)
    assert endpoint(api, loop)(query, ANYONE) == (status, {"message": message})


def test_endpoint_answers_from_the_live_cache_through_the_health_server(
    api: FakeApi, loop: threading.Event
) -> None:
    api.on("GET", POD, Reply(200, pod("web", cpu="2")))
    reviews = FakeReviews(tokens={"t": User("dev")}, rule=lambda spec: True)
    server = HealthServer(secure(reviews), live=lambda: (True, {}), ready=lambda: (True, {}),
                          explain=endpoint(api, loop))
    with running(server):
        status, body = get(server.port, "/debug/explain?namespace=default&name=web", token="t")
    assert status == 200
    answer = json.loads(body)
    assert answer["source"].startswith("live cache of the scheduler on ")
    assert answer["message"] == "would be bound to b, the only feasible node"


def test_one_shot_gives_plugins_the_config_maps_they_watch(
    api: FakeApi, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TeamZoneCap (examples/plugins, installed) reads its caps from a ConfigMap: the one-shot
    answer reads it too, as the running scheduler would have it."""
    config = tmp_path / "config.yaml"
    config.write_text("profiles:\n  - schedulerName: secondary-scheduler\n    plugins:\n"
                      "      multiPoint: {enabled: [{name: TeamZoneCap}]}\n")
    team_pod = pod("web", cpu="1", labels={"example.com/team": "payments"})
    serve_cluster(api, team_pod)
    api.on("GET", "/api/v1/nodes", listing([node("a", zone="z"), node("b", zone="z")]))
    api.on("GET", "/api/v1/namespaces/kube-system/configmaps/team-zone-caps",
           Reply(200, {"data": {"payments": "0"}}))
    assert main_module.main(["explain", "default/web", "--kubeconfig", str(kubeconfig),
                             "--config", str(config), "-o", "json", "--one-shot"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["message"] == ("0/2 nodes are available: 2 node(s) in a zone where team "
                                 "payments runs its cap of 0 pods. preemption: 0/2 nodes are "
                                 "available: 2 No preemption victims found for incoming pod.")


def test_kubectl_why_asks_the_running_scheduler_as_the_kubeconfigs_user(
    api: FakeApi, kubeconfig: Path, loop: threading.Event, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubeconfig's token goes to the scheduler's secure port, which has it reviewed:
    the user it names is the one whose right to get the pod is checked."""
    api.on("GET", POD, Reply(200, pod("web", cpu="2")))
    reviews = FakeReviews(tokens={"t": User("dev")}, rule=lambda spec: spec["user"] == "dev")
    server = HealthServer(secure(reviews), live=lambda: (True, {}), ready=lambda: (True, {}),
                          explain=endpoint(api, loop))
    with running(server):
        assert kubectl_why(["pod", "web", "--kubeconfig", str(kubeconfig), "-o", "json",
                            "--scheduler-url", f"https://127.0.0.1:{server.port}"]) == 0
    # The server's access log (structlog unconfigured: stdout) is not the CLI's output.
    out = [line for line in capsys.readouterr().out.splitlines() if "[debug    ]" not in line]
    answer = json.loads("\n".join(out))
    assert answer["source"].startswith("live cache of the scheduler on ")
    # The path, then the pod: both reviewed for the kubeconfig's user.
    reviewed = [(s["user"], s.get("nonResourceAttributes") or s["resourceAttributes"]["name"])
                for _, s in reviews.posted if "user" in s]
    assert reviewed == [("dev", {"path": "/debug/explain", "verb": "get"}), ("dev", "web")]


def test_the_users_credentials_go_unverified_only_to_the_loopback(
    api: FakeApi, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", POD, Reply(200, pod("web", cpu="2")))
    assert kubectl_why(["pod", "web", "--kubeconfig", str(kubeconfig),
                        "--scheduler-url", "https://scheduler.example:10259"]) == 1
    assert "pass --scheduler-ca-file" in capsys.readouterr().err


def test_a_429_is_asked_again_after_its_retry_after(
    api: FakeApi, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Explains are kept to a share of the scheduling thread: the CLI waits as told."""
    api.on("GET", POD, Reply(200, pod("web", cpu="2")))
    answers = [(429, {"message": "busy", "retryAfterSeconds": 1}),
               (200, {"source": "live", "outcome": "schedulable"})]
    reviews = FakeReviews(tokens={"t": User("dev")}, rule=lambda spec: True)
    server = HealthServer(secure(reviews), live=lambda: (True, {}), ready=lambda: (True, {}),
                          explain=lambda query, caller: answers.pop(0))
    with running(server):
        assert kubectl_why(["pod", "web", "--kubeconfig", str(kubeconfig), "-o", "json",
                            "--scheduler-url", f"https://127.0.0.1:{server.port}"]) == 0
    assert answers == []
    out = [line for line in capsys.readouterr().out.splitlines() if "[debug    ]" not in line]
    assert json.loads("\n".join(out))["outcome"] == "schedulable"


def test_a_configuration_with_several_errors_is_still_one_line(
    api: FakeApi, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve_cluster(api, pod("web", cpu="2"))
    config = tmp_path / "config.yaml"
    config.write_text("parallelism: 0\nclientConnection: {qps: .nan}\n")
    assert main_module.main(["explain", "default/web", "--kubeconfig", str(kubeconfig),
                             "--config", str(config), "--one-shot"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: invalid configuration: ")
    assert "parallelism: " in err and "clientConnection.qps: " in err
