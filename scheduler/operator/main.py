"""``secondary-scheduler`` / ``python -m scheduler``: parse flags, load config, run the operator."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from scheduler import logs
from scheduler.config import SchedulerConfig, default_config, load_config_file
from scheduler.config.effective import effective_yaml
from scheduler.framework.config_fields import AggregateConfigError
from scheduler.framework.registry import ConfigError, Registry
from scheduler.operator.app import Options, SchedulerApp
from scheduler.operator.kubeapi import KubeconfigError
from scheduler.operator.pod_group_watches import discover_pod_group_paths
from scheduler.operator.serving import options as serving
from scheduler.plugins.registry import installed_registry
from scheduler.version import version

PROG = "secondary-scheduler"
USAGE = f"""
  {PROG} [flags]                       run the scheduler
  {PROG} check-config [--config FILE]  check it, print it with defaults
  {PROG} explain NAMESPACE/POD         why a pod is pending (explain -h)
  {PROG} version                       print the version"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG, usage=USAGE,
        description="A secondary Kubernetes scheduler with kube-scheduler's semantics.",
    )
    parser.add_argument("--config", help="KubeSchedulerConfiguration-shaped YAML file")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the configuration's "
                        "clientConnection.kubeconfig, else in-cluster, then $KUBECONFIG or "
                        "~/.kube/config)")
    parser.add_argument("--leader-elect", type=_flag_bool, nargs="?", const=True, default=None,
                        metavar="true|false",
                        help="run leader election (default: the configuration's "
                        "leaderElection.leaderElect, true unless set)")
    parser.add_argument("--cpu-affinity", choices=("single", "all"), default="single",
                        help="single: run every thread on one CPU of those allowed, moved to a "
                             "quieter one when other work crowds it (Python runs one thread "
                             "at a time: see scheduler/operator/cpu_affinity.py); all: leave the "
                             "threads to the kernel")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"),
                        help="the scheduler's log level: debug, info, warning or error "
                             "(default: $LOG_LEVEL, else info); kopf's and the API client's "
                             "loggers log warnings and above")
    parser.add_argument("--log-format", choices=("auto", "json", "console"), default="auto",
                        help="json: one JSON object a line, every logger's; console: for a "
                             "terminal; auto (default): console on a terminal, else json")
    parser.add_argument("-v", "--v", type=int, default=None, metavar="N", dest="verbosity",
                        help="log verbosity as kube-scheduler's -v, instead of --log-level: "
                             "0-3 info, 4-5 debug (and kopf's and the client's info), 6 and "
                             "more the API requests too")
    parser.add_argument("--write-config-to", metavar="FILE",
                        help="write the effective configuration (defaults and flags applied) "
                             "to FILE and exit, as kube-scheduler's flag")
    parser.add_argument("--version", action="version", version=f"{PROG} v{version()}",
                        help="print the version and exit")
    serving.add_flags(parser)
    return parser.parse_args(argv)


def _flag_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _invalid_configuration(exc: ConfigError) -> int:
    """One line per error, and kube-scheduler's exit code for a bad configuration."""
    errors = exc.errors if isinstance(exc, AggregateConfigError) else (str(exc),)
    for error in errors:
        print(f"{PROG}: invalid configuration: {error}", file=sys.stderr)
    return 2


def load(path: str | None, *, gang_scheduling: bool = False
         ) -> tuple[SchedulerConfig, Registry]:
    """The installed plugins, and the configuration read with them; ConfigError.
    ``gang_scheduling``: the cluster serves pod groups (see parse_config)."""
    registry = installed_registry()
    config = (load_config_file(path, registry, gang_scheduling=gang_scheduling) if path
              else default_config(registry, gang_scheduling=gang_scheduling))
    return config, registry


def check_config(argv: Sequence[str]) -> int:
    """``check-config``: every error at once (exit 2), else the effective configuration."""
    parser = argparse.ArgumentParser(
        prog=f"{PROG} check-config",
        description="Load the installed plugins, check the configuration and print it with "
                    "every default filled in (the --write-config-to output). Talks to no "
                    "API server.")
    parser.add_argument("--config", help="KubeSchedulerConfiguration-shaped YAML file "
                                          "(default: the built-in defaults)")
    args = parser.parse_args(argv)
    try:
        config, registry = load(args.config)
    except ConfigError as exc:
        return _invalid_configuration(exc)
    print(effective_yaml(config, registry), end="")
    return 0


def _with_flags(config: SchedulerConfig, args: argparse.Namespace) -> SchedulerConfig:
    """The flags win over the file, as kube-scheduler's --leader-elect and --kubeconfig."""
    if args.leader_elect is not None:
        config = dataclasses.replace(config, leader_election=dataclasses.replace(
            config.leader_election, leader_elect=args.leader_elect))
    if args.kubeconfig:
        config = dataclasses.replace(config, client_connection=dataclasses.replace(
            config.client_connection, kubeconfig=args.kubeconfig))
    return config


def _configure_logs(args: argparse.Namespace) -> None:
    json_logs = {"auto": None, "json": True, "console": False}[args.log_format]
    if args.verbosity is None:
        logs.configure(args.log_level, json=json_logs)
    else:
        ours, others = logs.levels_for_verbosity(args.verbosity)
        logs.configure(ours, json=json_logs, others=others)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = list(argv[:1])
    if command == ["explain"]:
        # Imported here: the scheduler's own start does without it.
        from scheduler.operator import explain_cli

        return explain_cli.main(argv[1:])
    if command == ["check-config"]:
        return check_config(argv[1:])
    if command == ["version"]:
        print(f"{PROG} v{version()}")
        return 0
    args = parse_args(argv)
    try:
        _configure_logs(args)
    except ValueError as exc:
        print(f"{PROG}: --log-level: {exc}", file=sys.stderr)
        return 2
    try:
        config, registry = load(args.config)
    except ConfigError as exc:
        return _invalid_configuration(exc)
    config = _with_flags(config, args)
    if args.write_config_to:
        try:
            Path(args.write_config_to).write_text(effective_yaml(config, registry))
        except OSError as exc:
            print(f"{PROG}: --write-config-to: {exc}", file=sys.stderr)
            return 1
        return 0
    return run(config, registry, args)


def run(config: SchedulerConfig, registry: Registry, args: argparse.Namespace) -> int:
    options = Options(kubeconfig=config.client_connection.kubeconfig,
                      serving=serving.from_args(args),
                      single_cpu=args.cpu_affinity == "single")
    try:
        pod_group_paths = discover_pod_group_paths(options.kubeconfig)
        if pod_group_paths:
            # Read again with GangScheduling in the default profile; it was valid without.
            config, registry = load(args.config, gang_scheduling=True)
            config = _with_flags(config, args)
        app = SchedulerApp(config, registry, options, pod_group_paths=pod_group_paths)
    except ConfigError as exc:
        return _invalid_configuration(exc)
    except KubeconfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    structlog.get_logger("scheduler").info(
        "Starting", version=version(), profiles=[p.scheduler_name for p in config.profiles])
    # The listings, leader election and scheduling need our client only: they start first.
    app.start()
    _stop_on_signal_until_kopf_runs(app)
    if config.delay_cache_until_active:
        # kopf's watches are caches too: a standby opens none until it leads.
        app.wait_until_leading()
    # kopf then runs the process and watches the low-volume kinds, which the synced start
    # lists itself: its import and start-up (a second of CPU on a loaded machine) come after
    # the listings rather than compete with them for the one interpreter, which delayed the
    # first cycle of a DRA burst (5,000 claims and 2,500 pods to decode), and after the
    # first cycle, which it halved: the first bind came 0.1-0.2 s later (bench/startup.py).
    app.wait_until_first_cycle_over()
    import kopf

    from scheduler.operator import handlers

    operator_registry = kopf.OperatorRegistry()
    handlers.register(operator_registry, app)
    # kopf names itself after the OS user unless POD_ID is set (its documented switch), and
    # the image's uid 65532 has no passwd entry: getpass would raise before any watch starts.
    os.environ.setdefault("POD_ID", app.identity)
    kopf.run(
        registry=operator_registry,
        settings=handlers.settings(),
        standalone=True,
        clusterwide=True,
    )
    return 0


def _stop_on_signal_until_kopf_runs(app: SchedulerApp) -> None:
    """Until kopf takes SIGTERM and SIGINT over (its run replaces these handlers), stop as its
    cleanup would: a replica stopped while it lists, or waits to lead, gives its Lease up
    rather than leave the standby to wait out the lease's duration."""
    def stop(signum: int, _frame: object) -> None:
        structlog.get_logger("scheduler").info(
            "Stopping during start-up", signal=signal.Signals(signum).name)
        app.stop()
        sys.exit(0)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)


if __name__ == "__main__":
    sys.exit(main())
