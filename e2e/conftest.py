"""Fixtures for the end-to-end suite.

Backends:

* default: a local control plane (etcd + kube-apiserver + kube-controller-manager + kwok, from
  ``e2e/cluster/cluster.py``) is brought up for the session in ``$E2E_CLUSTER_DIR`` (default
  ``<repo>/.cluster-e2e``) and torn down at the end (``E2E_KEEP_CLUSTER=1`` leaves it up; a
  later session reuses it). The scheduler runs as a child process,
  ``python -m scheduler --kubeconfig ... --secure-port ... --log-format json --config ...``,
  with its log in the pytest temp dir.
* ``E2E_KUBECONFIG=path``: that cluster (kind with kwok, for example). Tests create kwok
  nodes (annotation ``kwok.x-k8s.io/node=fake``), so a kwok controller must be running, with
  a pod-delete Stage that honours grace periods (``e2e/cluster/stages/pod-delete.yaml``).
  With ``E2E_SCHEDULER=deployed`` the scheduler is the Deployment in namespace
  ``secondary-scheduler`` and the suite starts none; "killing" it deletes its pod.

Other knobs: ``E2E_SCHEDULER_CONFIG=file`` (default ``manifests/config.yaml``, the deployed
config); ``E2E_SCHEDULER=kube-scheduler`` runs the suite against upstream kube-scheduler
(built by ``e2e/cluster/build.sh``) with a profile named ``secondary-scheduler``: a test it
fails expects something kube-scheduler does not do (by design, a few: the malformed-spec
message naming the full field path, the 10^30-cpu pod, which upstream's int64 overflow
binds).

    make e2e                                        # or: python -m pytest -q e2e
    E2E_KEEP_CLUSTER=1 python -m pytest -q e2e -k preemption
    E2E_SCHEDULER=kube-scheduler python -m pytest -q e2e

Each test gets an :class:`Env`: its own namespace, nodes with its own labels (pods select
them with a nodeSelector), priority classes with its own names, and a :class:`Recorder` of
every pod version and Event in the namespace. All of it is deleted at teardown.
On failure the report gets the tail of the scheduler's log and a dump of the namespace.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from e2e.cluster.cluster import FEATURE_GATES
from e2e.kube import (
    GROUP_LABEL,
    NAMESPACES,
    NODES,
    PRIORITY_CLASSES,
    SCHEDULER_NAME,
    TEST_LABEL,
    Kube,
    Recorder,
    condition,
    describe_namespace,
    node_of,
    node_ready,
    ns_path,
    pdb_manifest,
    pod_manifest,
    pods_path,
    priority_class_manifest,
    unschedulable_message,
    wait_until,
)

REPO = Path(__file__).resolve().parent.parent
DEPLOYED_NS = "secondary-scheduler"
DEPLOYED_SELECTOR = "app.kubernetes.io/name=secondary-scheduler"
DEFAULT_TEST_TIMEOUT = 240
SECURE_PORT = 10259  # the Deployment's

_state: dict[str, Any] = {}


# ----------------------------------------------------------------------------- scheduler
class LocalScheduler:
    """The scheduler as a child process of the test session."""

    deployed = False

    def __init__(self, kubeconfig: Path, log_path: Path, config: Path | None) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.config = config
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        argv = [sys.executable, "-m", "scheduler", "--kubeconfig", str(self.kubeconfig),
                "--secure-port", str(self.port), "--bind-address", "127.0.0.1",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}", "--log-format", "json"]
        if self.config is not None:
            argv += ["--config", str(self.config)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== e2e: start #{self.starts}: {' '.join(argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def url(self) -> str:
        """The secure port (HTTPS, a self-signed certificate), ours or kube-scheduler's."""
        return f"https://127.0.0.1:{self.port}"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2,
                                        context=ssl._create_unverified_context()) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def wait_ready(self, timeout: float = 90.0) -> None:
        def check() -> bool:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                raise RuntimeError(f"the scheduler exited (code {code}) before /readyz answered "
                                   f"200; log tail:\n{self.log_tail()}")
            return self.ready()

        wait_until(check, timeout, "the scheduler's /readyz", interval=0.25,
                   diagnose=lambda: self.log_tail())

    def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye."""
        if self.proc is not None and self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def restart(self) -> None:
        self.start()
        self.wait_ready()

    def stop(self) -> None:
        if self.proc is None or not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def ensure_running(self) -> None:
        if not self.alive():
            self.restart()

    def describe(self) -> str:
        if self.proc is None:
            return "scheduler: not started"
        state = "running" if self.alive() else f"EXITED with code {self.proc.returncode}"
        return f"scheduler: local process pid {self.proc.pid}, {state}; log {self.log_path}"

    def log_tail(self, lines: int = 80) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text[-lines:])


class ReferenceScheduler(LocalScheduler):
    """Upstream kube-scheduler (built by e2e/cluster/build.sh) with one profile named
    ``secondary-scheduler``: E2E_SCHEDULER=kube-scheduler runs the suite against it, which
    tells a test whose expectation is not kube-scheduler's from a bug of ours."""

    def __init__(self, kubeconfig: Path, log_path: Path, binary: Path, *,
                 leader_elect: bool = False, scheduler_name: str = SCHEDULER_NAME,
                 extra_config: str = "", profile_config: str = "") -> None:
        super().__init__(kubeconfig, log_path, None)
        self.binary = binary
        self.config = log_path.parent / f"{log_path.stem}-config.yaml"
        election = (f"{{leaderElect: true, resourceNamespace: {DEPLOYED_NS}, "
                    f"resourceName: secondary-scheduler}}" if leader_elect
                    else "{leaderElect: false}")
        self.config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            f"clientConnection: {{kubeconfig: {kubeconfig}}}\n"
            f"leaderElection: {election}\n"
            f"profiles: [{{schedulerName: {scheduler_name}{profile_config}}}]\n" + extra_config)

    def start(self) -> None:
        argv = [str(self.binary), f"--config={self.config}", f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1", f"--secure-port={self.port}",
                f"--cert-dir={self.log_path.parent / 'certs'}",
                f"--feature-gates={FEATURE_GATES}", "--v=2"]
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== e2e: start #{self.starts}: {' '.join(argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)


class DeployedScheduler:
    """The scheduler Deployment in the cluster (E2E_SCHEDULER=deployed)."""

    deployed = True

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.killed: set[str] = set()

    def pods(self) -> list[dict[str, Any]]:
        return self.kube.list(pods_path(DEPLOYED_NS), label_selector=DEPLOYED_SELECTOR)

    def _ready_pod(self) -> dict[str, Any] | None:
        for p in self.pods():
            ready = condition(p, "Ready")
            meta = p["metadata"]
            if (ready and ready.get("status") == "True" and not meta.get("deletionTimestamp")
                    and meta["uid"] not in self.killed):
                return p
        return None

    def alive(self) -> bool:
        return self._ready_pod() is not None

    def ready(self) -> bool:
        return self.alive()

    def leader(self) -> dict[str, Any] | None:
        """The pod that holds the lease: the one whose log says it became the leader last."""
        for pod in self.pods():
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or pod["metadata"]["uid"] in self.killed:
                continue
            status, body = self.kube.request("GET", pods_path(DEPLOYED_NS, name) + "/log",
                                             accept="*/*")
            if status == 200 and '"event": "Became the leader"' in str(body):
                return pod
        return None

    def direct_url(self) -> str | None:
        """The leader's secure port, where the test can reach it: a host-network pod on a
        local real node has a loopback IP."""
        wait_until(self.leader, 60, "a leading secondary-scheduler pod", interval=0.5,
                   diagnose=self.describe)
        ip = ((self.leader() or {}).get("status") or {}).get("podIP", "")
        return f"https://{ip}:{SECURE_PORT}" if ip.startswith("127.") else None

    @property
    def url(self) -> str | None:
        return self.direct_url()

    def wait_ready(self, timeout: float = 180.0) -> None:
        wait_until(self._ready_pod, timeout, "a Ready secondary-scheduler pod", interval=1.0,
                   diagnose=self.describe)

    def kill(self) -> None:
        """Delete the pod with no grace period: the container is killed, the Deployment
        starts a new one."""
        for p in self.pods():
            self.killed.add(p["metadata"]["uid"])
            self.kube.delete(pods_path(DEPLOYED_NS, p["metadata"]["name"]), grace=0)

    def start(self) -> None:
        pass  # the Deployment's controller does it

    def restart(self) -> None:
        self.wait_ready()

    def stop(self) -> None:
        pass

    def ensure_running(self) -> None:
        self.wait_ready()

    def describe(self) -> str:
        rows = []
        for p in self.pods():
            ready = condition(p, "Ready") or {}
            rows.append(f"{p['metadata']['name']} node={node_of(p)} "
                        f"phase={p['status'].get('phase')} ready={ready.get('status')}")
        return "scheduler: deployed; pods: " + ("; ".join(rows) or "none")

    def log_tail(self, lines: int = 80) -> str:
        out = []
        for p in self.pods():
            name = p["metadata"]["name"]
            status, body = self.kube.request(
                "GET", pods_path(DEPLOYED_NS, name) + "/log", query={"tailLines": lines},
                accept="*/*")
            out.append(f"--- {name} (HTTP {status})\n{body}")
        return "\n".join(out) or "(no scheduler pods)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------- session
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    has_timeout = config.pluginmanager.hasplugin("timeout")
    for item in items:
        if Path(str(item.fspath)).resolve().parent == here:
            item.add_marker(pytest.mark.e2e)
            if has_timeout and item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(DEFAULT_TEST_TIMEOUT))


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[Path]:
    external = os.environ.get("E2E_KUBECONFIG")
    if external:
        yield Path(external).expanduser()
        return
    from e2e.cluster.cluster import Cluster

    state_dir = Path(os.environ.get("E2E_CLUSTER_DIR") or REPO / ".cluster-e2e")
    cluster = Cluster(state_dir)
    _state["cluster"] = cluster
    cluster.up(nodes=None)
    try:
        yield cluster.kubeconfig_path
    finally:
        if os.environ.get("E2E_KEEP_CLUSTER") != "1":
            cluster.down()


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Kube:
    k = Kube(kubeconfig)
    wait_until(lambda: k.request("GET", "/readyz")[0] == 200, 60, "the API server's /readyz")
    return k


@pytest.fixture(scope="session")
def scheduler(
    kube: Kube, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalScheduler | DeployedScheduler]:
    if os.environ.get("E2E_SCHEDULER") == "deployed":
        if not os.environ.get("E2E_KUBECONFIG"):
            raise pytest.UsageError("E2E_SCHEDULER=deployed needs E2E_KUBECONFIG (the cluster "
                                    "where the Deployment runs)")
        deployed = DeployedScheduler(kube)
        _state["scheduler"] = deployed
        deployed.wait_ready()
        yield deployed
        return
    log_dir = tmp_path_factory.mktemp("scheduler")
    if os.environ.get("E2E_SCHEDULER") == "kube-scheduler":
        from e2e.cluster.cluster import Cluster

        binary = Cluster().bin_dir(with_kube_scheduler=True) / "kube-scheduler"
        local: LocalScheduler = ReferenceScheduler(kubeconfig, log_dir / "scheduler.log", binary)
    else:
        config = os.environ.get("E2E_SCHEDULER_CONFIG")
        config_path = Path(config) if config else REPO / "manifests" / "config.yaml"
        local = LocalScheduler(kubeconfig, log_dir / "scheduler.log",
                               config_path if config_path.exists() else None)
    _state["scheduler"] = local
    kube.ensure_namespace(DEPLOYED_NS)  # where manifests/config.yaml keeps the lease
    local.start()
    try:
        local.wait_ready()
        yield local
    finally:
        local.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    sched = _state.get("scheduler")
    if isinstance(sched, LocalScheduler):
        terminalreporter.write_line(f"e2e scheduler log: {sched.log_path}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    env = getattr(item, "funcargs", {}).get("env")
    if isinstance(env, Env):
        report.sections.append(("e2e namespace", env.describe()))
    sched = _state.get("scheduler")
    if sched is not None:
        try:
            report.sections.append(("scheduler", sched.describe() + "\n" + sched.log_tail()))
        except Exception as exc:
            report.sections.append(("scheduler", f"(could not read: {exc!r})"))


def start_own_scheduler(kubeconfig: Path, log: Path, profile: str, *, shared: str = "",
                        ours: str = "", lease: tuple[str, str] | None = None,
                        profile_config: str = "") -> LocalScheduler:
    """A scheduler process of a test's own, with one profile named ``profile``: ours, or
    upstream kube-scheduler with E2E_SCHEDULER=kube-scheduler. ``shared`` is configuration
    both read (extenders); ``ours`` only ours (the rescheduler); ``profile_config`` more
    fields of the profile, both read (``pluginConfig``), in YAML flow style. Ours elects a
    leader on ``lease`` (namespace, name) when given, else runs without leader election."""
    extra = f", {profile_config}" if profile_config else ""
    scheduler: LocalScheduler
    if os.environ.get("E2E_SCHEDULER") == "kube-scheduler":
        from e2e.cluster.cluster import Cluster

        binary = Cluster().bin_dir(with_kube_scheduler=True) / "kube-scheduler"
        scheduler = ReferenceScheduler(kubeconfig, log, binary, scheduler_name=profile,
                                       extra_config=shared, profile_config=extra)
    else:
        election = ("{leaderElect: false}" if lease is None else
                    f"{{leaderElect: true, resourceNamespace: {lease[0]}, "
                    f"resourceName: {lease[1]}}}")
        config = log.parent / f"{log.stem}-config.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            f"leaderElection: {election}\n"
            f"profiles: [{{schedulerName: {profile}{extra}}}]\n" + shared + ours)
        scheduler = LocalScheduler(kubeconfig, log, config)
    scheduler.start()
    scheduler.wait_ready()
    return scheduler

# ----------------------------------------------------------------------------- per test
class Env:
    """One test's namespace, nodes, priority classes and recorder."""

    def __init__(
        self, kube: Kube, scheduler: LocalScheduler | DeployedScheduler, name: str
    ) -> None:
        self.kube = kube
        self.scheduler = scheduler
        self.id = "t" + secrets.token_hex(3)
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower().removeprefix("test_"))[:40].strip("-")
        self.ns = f"e2e-{slug}-{self.id}"
        self.node_names: list[str] = []
        self.priority_classes: list[str] = []
        self.recorder: Recorder | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def setup(self) -> None:
        self.kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": self.ns, "labels": {TEST_LABEL: self.id}}})
        # ServiceAccount admission refuses pods until the namespace's default SA exists.
        wait_until(lambda: self.kube.get(ns_path(self.ns, "serviceaccounts", "default")), 30,
                   f"the default ServiceAccount in {self.ns}")
        self.recorder = Recorder(self.kube, self.ns).start()

    def teardown(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()
        errors = []
        mine = {"labelSelector": f"{TEST_LABEL}={self.id}"}
        # Nodes first, so the scheduler does not place pending pods in the room that
        # deleting the others makes.
        steps = [
            lambda: self.kube.request("DELETE", NODES, query=mine),
            lambda: self.kube.request("DELETE", pods_path(self.ns),
                                      query={"gracePeriodSeconds": 0}),
            lambda: self.kube.request("DELETE", PRIORITY_CLASSES, query=mine),
            lambda: self.kube.delete(f"{NAMESPACES}/{self.ns}"),
        ]
        for step in steps:
            try:
                step()
            except Exception as exc:
                errors.append(repr(exc))
        if errors:
            print(f"teardown of {self.ns}: {errors}", file=sys.stderr)

    def describe(self) -> str:
        return describe_namespace(self.kube, self.ns, self.node_names)

    def diagnose(self) -> str:
        return self.describe() + "\n" + self.scheduler.describe()

    # -- nodes ----------------------------------------------------------------------------
    def nodes(self, group: str, count: int = 1, *, cpu: str = "4", memory: str = "8Gi",
              pods: int = 110, zone: str | None = None, labels: Mapping[str, str] | None = None,
              taints: Sequence[Mapping[str, str]] = (), prefix: str | None = None,
              wait: bool = True) -> list[str]:
        """Create ``count`` kwok nodes ``<test id>-<prefix or group>-<i>`` labelled for this
        test and group."""
        from e2e.cluster.cluster import node_objects

        spec = {"groups": [{
            "count": count, "namePrefix": f"{self.id}-{prefix or group}", "zone": zone, "cpu": cpu,
            "memory": memory, "pods": pods, "taints": [dict(t) for t in taints],
            "labels": {TEST_LABEL: self.id, GROUP_LABEL: group, **(labels or {})},
        }]}
        names = []
        for obj in node_objects(spec):
            self.kube.create(NODES, obj)
            names.append(obj["metadata"]["name"])
            self.node_names.append(obj["metadata"]["name"])
        if wait:
            self.wait_nodes_ready(names)
        return names

    def wait_nodes_ready(self, names: Sequence[str], timeout: float = 60) -> None:
        def ready() -> bool:
            return all(node_ready(self.kube.get(f"{NODES}/{n}") or {}) for n in names)

        wait_until(ready, timeout, f"nodes {list(names)} Ready", diagnose=self.diagnose)

    def delete_node(self, name: str) -> None:
        self.kube.delete(f"{NODES}/{name}")

    def all_nodes(self) -> list[dict[str, Any]]:
        return self.kube.list(NODES)

    def selector(self, group: str | None = None) -> dict[str, str]:
        sel = {TEST_LABEL: self.id}
        if group is not None:
            sel[GROUP_LABEL] = group
        return sel

    # -- cluster-scoped helpers -----------------------------------------------------------
    def priority_class(self, name: str, value: int, preemption_policy: str | None = None) -> str:
        full = f"{self.id}-{name}"
        self.kube.create(PRIORITY_CLASSES, priority_class_manifest(
            full, value, preemption_policy, labels={TEST_LABEL: self.id}))
        self.priority_classes.append(full)
        return full

    def pdb(self, name: str, match_labels: Mapping[str, str], **kw: Any) -> dict[str, Any]:
        return self.kube.create(ns_path(self.ns, "poddisruptionbudgets", group="policy/v1"),
                                pdb_manifest(name, match_labels, **kw))

    def get_pdb(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(ns_path(self.ns, "poddisruptionbudgets", name, group="policy/v1"))

    # -- pods -----------------------------------------------------------------------------
    def create_pod(self, name: str, *, group: str | None = None, **kw: Any) -> dict[str, Any]:
        """A pod for the secondary scheduler that selects this test's nodes (``group``: one
        group of them) unless it names its node or brings its own nodeSelector."""
        if "node_name" not in kw and "node_selector" not in kw:
            kw["node_selector"] = self.selector(group)
        return self.kube.create(pods_path(self.ns), pod_manifest(name, **kw))

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(pods_path(self.ns, name))

    def pods(self) -> list[dict[str, Any]]:
        return self.kube.list(pods_path(self.ns))

    def delete_pod(self, name: str, grace: int | None = None) -> None:
        self.kube.delete(pods_path(self.ns, name), grace=grace)

    def wait_bound(self, name: str, timeout: float = 30) -> str:
        return self.wait_all_bound([name], timeout)[name]

    def wait_all_bound(self, names: Sequence[str], timeout: float = 60) -> dict[str, str]:
        """Once the API shows every pod bound and the recorder has seen each binding (its
        watch may lag the listing, e.g. while it reconnects), so tests can read it."""
        def bound() -> dict[str, str] | None:
            placed = {p["metadata"]["name"]: node_of(p) for p in self.pods()}
            if not all(placed.get(n) for n in names):
                return None
            return placed if all(self.rec.bound_at(n) is not None for n in names) else None

        return dict(wait_until(bound, timeout, f"pods {list(names)} bound", diagnose=self.diagnose))

    def wait_gone(self, name: str, timeout: float = 60) -> None:
        wait_until(lambda: self.pod(name) is None, timeout, f"pod {name} deleted",
                   diagnose=self.diagnose)

    def wait_running(self, names: Sequence[str], timeout: float = 60) -> None:
        def running() -> bool:
            phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase")
                      for p in self.pods()}
            return all(phases.get(n) == "Running" for n in names)

        wait_until(running, timeout, f"pods {list(names)} Running", diagnose=self.diagnose)

    def scheduled_condition(self, name: str) -> dict[str, Any] | None:
        return condition(self.pod(name), "PodScheduled")

    def wait_unschedulable(self, name: str, message: str | None = None,
                           reason: str = "Unschedulable", timeout: float = 30) -> dict[str, Any]:
        """Wait for PodScheduled=False with this reason (and exactly this message)."""
        seen: list[Any] = []

        def check() -> dict[str, Any] | None:
            c = self.scheduled_condition(name)
            seen[:] = [c]
            if c and c.get("status") == "False" and c.get("reason") == reason and (
                    message is None or c.get("message") == message):
                return c
            return None

        return dict(wait_until(
            check, timeout, f"pod {name}: PodScheduled=False reason={reason}"
            + (f" message={message!r}" if message else ""),
            diagnose=lambda: f"last condition: {seen[0] if seen else None}\n{self.diagnose()}"))

    def expected_message(self, filter_reasons: Mapping[str, str],
                         preemption: Mapping[str, str] | str | None = None,
                         tolerations: Sequence[Mapping[str, Any]] = ()) -> str:
        return unschedulable_message(self.all_nodes(), filter_reasons, preemption, tolerations)

    @property
    def rec(self) -> Recorder:
        assert self.recorder is not None
        return self.recorder


@pytest.fixture
def env(request: pytest.FixtureRequest, kube: Kube,
        scheduler: LocalScheduler | DeployedScheduler) -> Iterator[Env]:
    scheduler.ensure_running()
    e = Env(kube, scheduler, request.node.name)
    e.setup()
    try:
        yield e
    finally:
        e.teardown()
