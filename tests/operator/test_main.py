"""The command line: which kubeconfig the operator is started with."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scheduler import scheduler as scheduler_module
from scheduler.config import parse_config
from scheduler.framework.profile_config import DEFAULT_SCHEDULER_NAME
from scheduler.operator import main as entry
from scheduler.operator.app import Options, SchedulerApp
from scheduler.operator.reflector import Reflector
from scheduler.operator.serving.options import ServingOptions
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import GC_THRESHOLDS
from tests.operator.fake_api import FakeApi
from tests.operator.test_dra_watches import empty_list, serve_everything_but_dra, sync
from tests.operator.test_explain_cli import write_kubeconfig


class StartedError(Exception):
    """Raised by the stand-in SchedulerApp: the test needs only its arguments."""


@pytest.fixture(autouse=True)
def no_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests start no API server: the cluster serves no pod groups."""
    monkeypatch.setattr(entry, "discover_pod_group_paths", lambda kubeconfig: {})


class StubApp:
    """Stands in for a built SchedulerApp: its start goes into ``calls`` (each test's own)."""

    identity = "host_1234"
    calls: ClassVar[list[str]] = []

    def __init__(self, cfg: Any, registry: Any, options: Any, **_: Any) -> None:
        pass

    def start(self) -> None:
        self.calls.append("app started")

    def wait_until_first_cycle_over(self) -> None:
        self.calls.append("first cycle over")


def started_with(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[Any, Any]:
    """The configuration and options main() hands the SchedulerApp (which is not built)."""
    seen: list[tuple[Any, Any]] = []

    def app(cfg: Any, registry: Any, options: Any, **_: Any) -> None:
        seen.append((cfg, options))
        raise StartedError

    monkeypatch.setattr(entry, "SchedulerApp", app)
    with pytest.raises(StartedError):
        entry.main(["--log-format", "json", *argv])
    return seen[0]


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        pytest.param([], "/from/config", id="clientConnection.kubeconfig is used"),
        pytest.param(["--kubeconfig", "/from/flag"], "/from/flag", id="the flag wins"),
    ],
)
def test_the_kubeconfig_comes_from_the_flag_else_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], want: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("clientConnection:\n  kubeconfig: /from/config\n")
    _, options = started_with(monkeypatch, ["--config", str(config), *flags])
    assert options.kubeconfig == want


@pytest.mark.parametrize(
    ("file", "flags", "want"),
    [
        pytest.param("", [], True, id="on by default, as kube-scheduler"),
        pytest.param("leaderElection: {leaderElect: false}\n", [], False, id="the file"),
        pytest.param("leaderElection: {leaderElect: false}\n", ["--leader-elect"], True,
                     id="the bare flag wins"),
        pytest.param("", ["--leader-elect=false"], False, id="the flag with a value wins"),
    ],
)
def test_leader_election_comes_from_the_flag_else_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str, flags: list[str], want: bool
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(file)
    cfg, _ = started_with(monkeypatch, ["--config", str(config), *flags])
    assert cfg.leader_election.leader_elect is want


@pytest.mark.parametrize(("flags", "want"), [
    pytest.param([], True, id="one CPU by default"),
    pytest.param(["--cpu-affinity", "all"], False, id="all: the kernel places the threads"),
])
def test_the_cpu_affinity_flag(monkeypatch: pytest.MonkeyPatch, flags: list[str],
                               want: bool) -> None:
    _, options = started_with(monkeypatch, flags)
    assert options.single_cpu is want


def test_a_leader_elect_flag_that_is_not_a_boolean_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        entry.main(["--leader-elect=maybe"])
    assert exit_info.value.code == 2
    assert "expected true or false" in capsys.readouterr().err


def test_kopf_is_given_a_name_when_the_uid_has_no_passwd_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image runs as uid 65532, which has no passwd entry: kopf's own naming calls
    getpass.getuser(), which raises there, unless POD_ID names the process."""
    import getpass

    import kopf
    from kopf._core.engines import peering

    from scheduler.operator import handlers

    def no_passwd_entry() -> str:
        raise KeyError("getpwuid(): uid not found: 65532")

    monkeypatch.setattr(getpass, "getuser", no_passwd_entry)
    monkeypatch.setenv("POD_ID", "")
    monkeypatch.delenv("POD_ID")
    names: list[str] = []
    monkeypatch.setattr(StubApp, "calls", [])

    def run(**_: Any) -> None:
        names.append(peering.detect_own_id(manual=False))

    monkeypatch.setattr(entry, "SchedulerApp", StubApp)
    monkeypatch.setattr(handlers, "register", lambda registry, app: None)
    monkeypatch.setattr(kopf, "run", run)
    assert entry.main(["--log-format", "json"]) == 0
    assert names == ["host_1234"]


def test_the_scheduler_starts_and_syncs_before_kopf_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing, leader election and scheduling need only our client: they start before kopf,
    whose import and start-up wait for the synced start rather than compete with its
    listings for the interpreter."""
    import kopf

    from scheduler.operator import handlers

    calls: ClassVar[list[str]] = []
    monkeypatch.setattr(StubApp, "calls", calls)
    monkeypatch.setattr(entry, "SchedulerApp", StubApp)
    monkeypatch.setattr(handlers, "register", lambda registry, app: calls.append("handlers"))
    monkeypatch.setattr(kopf, "run", lambda **_: calls.append("kopf ran"))
    assert entry.main(["--log-format", "json"]) == 0
    assert calls == ["app started", "first cycle over", "handlers", "kopf ran"]


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        pytest.param([], "0.0.0.0", id="every interface by default, as kube-scheduler"),
        pytest.param(["--bind-address", "127.0.0.2"], "127.0.0.2", id="the flag"),
    ],
)
def test_the_health_port_listens_on_the_bind_address(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], want: str
) -> None:
    _, options = started_with(monkeypatch, flags)
    assert options.serving.bind_address == want


@pytest.mark.parametrize("argv", [["--version"], ["version"]])
def test_the_version_comes_from_the_package_metadata(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib.metadata import version

    try:
        code = entry.main(argv)
    except SystemExit as exit_info:  # argparse's version action exits
        code = int(exit_info.code or 0)
    assert code == 0
    assert capsys.readouterr().out == f"secondary-scheduler v{version('secondary-scheduler')}\n"


def test_the_startup_line_names_the_version(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    from importlib.metadata import version

    import kopf

    from scheduler.operator import handlers

    monkeypatch.setattr(entry, "SchedulerApp", StubApp)
    monkeypatch.setattr(handlers, "register", lambda registry, app: None)
    monkeypatch.setattr(kopf, "run", lambda **_: None)
    assert entry.main(["--log-format", "json"]) == 0
    starting = [json.loads(line) for line in capsys.readouterr().err.splitlines()
                if '"Starting"' in line]
    assert starting[0]["version"] == version("secondary-scheduler")


def test_help_lists_every_subcommand_and_explains_every_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        entry.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for subcommand in ("check-config", "explain NAMESPACE/POD", "version"):
        assert f"secondary-scheduler {subcommand}" in out
    for flag in ("--log-level LOG_LEVEL", "-v N, --v N", "--write-config-to FILE"):
        assert flag in out
    assert "debug, info, warning or error" in out


@pytest.mark.parametrize("kubeconfig", ["missing", "not-yaml"])
def test_a_bad_kubeconfig_is_one_line_not_a_traceback(
    tmp_path: Path, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / kubeconfig
    if kubeconfig == "not-yaml":
        path.write_text("apiVersion: v1\nclusters: {unclosed\n")
    code = entry.main(["--log-format", "json", "--kubeconfig", str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("secondary-scheduler: no usable kubeconfig: ") and err.count("\n") == 1


@pytest.mark.parametrize(("flags", "ours", "others"), [
    pytest.param([], "INFO", "WARNING", id="--log-level's default"),
    pytest.param(["--log-level", "debug"], "DEBUG", "WARNING", id="--log-level"),
    pytest.param(["-v", "4"], "DEBUG", "INFO", id="-v 4"),
    pytest.param(["--v=6"], "DEBUG", "DEBUG", id="--v=6, kube-scheduler's spelling"),
])
def test_verbosity_flags_set_the_levels(monkeypatch: pytest.MonkeyPatch, flags: list[str],
                                        ours: str, others: str) -> None:
    import logging

    from scheduler import logs

    seen: list[tuple[object, object]] = []

    def configure(level: object, *, json: object, others: object = None) -> None:
        seen.append((level, others))

    monkeypatch.setattr(logs, "configure", configure)
    started_with(monkeypatch, flags)
    level, other = seen[0]
    assert (logging.getLevelName(level) if isinstance(level, int) else str(level).upper()) == ours
    # None: the default, no lower than warning.
    assert (logging.getLevelName(other) if isinstance(other, int) else "WARNING") == others


@pytest.mark.parametrize(("file", "want"), [
    pytest.param("", ["app started", "first cycle over", "handlers", "kopf ran"],
                 id="kopf watches once synced"),
    pytest.param("delayCacheUntilActive: true\n",
                 ["app started", "leading", "first cycle over", "handlers", "kopf ran"],
                 id="delayCacheUntilActive: kopf's watches wait for leadership"),
])
def test_kopfs_watches_wait_for_leadership_under_delay_cache_until_active(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str, want: list[str]
) -> None:
    import kopf

    from scheduler.operator import handlers

    calls: list[str] = []

    class LeadingApp(StubApp):
        def wait_until_leading(self) -> None:
            calls.append("leading")

    config = tmp_path / "config.yaml"
    config.write_text(file)
    monkeypatch.setattr(StubApp, "calls", calls)
    monkeypatch.setattr(entry, "SchedulerApp", LeadingApp)
    monkeypatch.setattr(handlers, "register", lambda registry, app: calls.append("handlers"))
    monkeypatch.setattr(kopf, "run", lambda **_: calls.append("kopf ran"))
    assert entry.main(["--log-format", "json", "--config", str(config)]) == 0
    assert calls == want


class UnhandledSigtermError(Exception):
    """The test's own SIGTERM handler: reached only if main() installed none."""


@pytest.fixture(autouse=True)
def signal_handlers() -> Any:
    """main() installs SIGTERM/SIGINT handlers in the test process: put the old ones back."""
    import signal

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_sigterm_during_the_synced_start_stops_the_app_and_so_releases_the_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kopf handles SIGTERM only once it runs; before, the process would die holding the
    Lease acquired at start, and the standby would wait out its duration."""
    import os
    import signal

    def unhandled(signum: int, frame: object) -> None:
        raise UnhandledSigtermError

    signal.signal(signal.SIGTERM, unhandled)
    calls: list[str] = []

    class StoppedWhileSyncing(StubApp):
        def wait_until_first_cycle_over(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            calls.append("first cycle over")

        def stop(self) -> None:
            calls.append("stopped")

    monkeypatch.setattr(StubApp, "calls", calls)
    monkeypatch.setattr(entry, "SchedulerApp", StoppedWhileSyncing)
    with pytest.raises(SystemExit) as exit_info:
        entry.main(["--log-format", "json"])
    assert exit_info.value.code == 0
    assert calls == ["app started", "stopped"]


def test_the_schedulers_start_imports_neither_explain_nor_an_unconfigured_rescheduler() -> None:
    """Start-up cost (bench/startup.py): the explain sub-command, the explainer behind the
    explain endpoint (imported by its first request) and the rescheduler (off unless
    configured) are left out of what every start of the scheduler imports. A fresh
    interpreter: this one has imported them for other tests."""
    code = ("import sys\n"
            "import scheduler.operator.main, scheduler.operator.app\n"
            "print(sorted(m for m in sys.modules if m.startswith(("
            "'scheduler.operator.explain_cli', 'scheduler.explain', 'scheduler.rescheduling'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture
def app(api: FakeApi, tmp_path: Path) -> Iterator[SchedulerApp]:
    """A SchedulerApp on a fake API server that serves everything but DRA, with one pending
    pod of ours."""
    serve_everything_but_dra(api)
    api.on("GET", "/api/v1/pods", empty_list({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                     "resourceVersion": "3"},
        "spec": {"schedulerName": DEFAULT_SCHEDULER_NAME, "containers": [{"name": "c"}]}}))
    options = Options(kubeconfig=str(write_kubeconfig(tmp_path, api.url)),
                      serving=ServingOptions(secure_port=0, bind_address="127.0.0.1",
                                             insecure=True), single_cpu=False)
    made = SchedulerApp(parse_config({"leaderElection": {"leaderElect": False}},
                                     default_registry()), default_registry(), options)
    yield made
    made._stop.set()
    for reflector in made.reflectors:
        reflector.stop()
    made.scheduler.stop()


def test_kopf_and_the_heaps_settling_wait_for_the_first_scheduling_cycle_to_be_over(
    app: SchedulerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf's import, started during the first cycle, took half the interpreter from it, and
    settle_heap's full collection came before it: both delayed the first bind
    (bench/startup.py). The heap is settled, and main's wait ends, once the loop comes
    round after the cycle that popped the first pending pod."""
    turns: list[str] = []
    cycle = scheduler_module.schedule_one

    def recorded(s: Any, timeout: float | None = None) -> bool:
        popped = cycle(s, timeout)
        turns.append("cycle with a pod" if popped else "idle turn")
        return popped

    monkeypatch.setattr(scheduler_module, "schedule_one", recorded)
    monkeypatch.setattr("scheduler.operator.app.settle_heap", lambda: turns.append("settled"))
    sync(app)
    waiter = threading.Thread(target=app.wait_until_first_cycle_over, daemon=True)
    waiter.start()
    waiter.join(timeout=20)
    assert not waiter.is_alive(), "the first cycle was never over"
    assert turns[:2] == ["cycle with a pod", "settled"]


def test_the_listings_run_with_the_settled_collector_thresholds(
    app: SchedulerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's default thresholds tripled the decoding of a DRA listing (young collections
    every 700 objects that find no garbage, full passes over the growing heap): the synced
    start sets settle_heap's before its first listing starts."""
    at_start: list[tuple[int, int, int]] = []
    start = Reflector.start

    def recorded(reflector: Reflector) -> None:
        at_start.append(gc.get_threshold())
        start(reflector)

    monkeypatch.setattr(Reflector, "start", recorded)
    thresholds = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # Python's defaults
        sync(app)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert at_start
    assert set(at_start) == {GC_THRESHOLDS}
