"""``secondary-scheduler`` / ``python -m scheduler``: parse flags, load config, run the operator."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

import structlog

from scheduler import logs
from scheduler.config import default_config, load_config_file
from scheduler.framework.config_fields import AggregateConfigError
from scheduler.framework.registry import ConfigError
from scheduler.operator import explain_cli
from scheduler.operator.app import Options, SchedulerApp
from scheduler.plugins.registry import installed_registry


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="secondary-scheduler",
        description="A secondary Kubernetes scheduler with kube-scheduler's semantics. "
                    "`secondary-scheduler explain NAMESPACE/POD` says why a pod is pending.",
    )
    parser.add_argument("--config", help="KubeSchedulerConfiguration-shaped YAML file")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the configuration's "
                        "clientConnection.kubeconfig, else in-cluster, then $KUBECONFIG or "
                        "~/.kube/config)")
    parser.add_argument("--health-port", type=int, default=10259,
                        help="port of /healthz and /readyz (default 10259)")
    parser.add_argument("--bind-address", default="0.0.0.0",
                        help="address the health port listens on (default 0.0.0.0, every "
                             "interface), as kube-scheduler's flag")
    parser.add_argument("--leader-elect", type=_flag_bool, nargs="?", const=True, default=None,
                        metavar="true|false",
                        help="run leader election (default: the configuration's "
                        "leaderElection.leaderElect, true unless set)")
    parser.add_argument("--cpu-affinity", choices=("single", "all"), default="single",
                        help="single: run every thread on one CPU of those allowed, moved to a "
                             "quieter one when other work crowds it (Python runs one thread "
                             "at a time: see scheduler/cpu_affinity.py); all: leave the "
                             "threads to the kernel")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    parser.add_argument("--log-format", choices=("auto", "json", "console"), default="auto")
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
        print(f"secondary-scheduler: invalid configuration: {error}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if list(argv[:1]) == ["explain"]:
        return explain_cli.main(argv[1:])
    args = parse_args(argv)
    json_logs = {"auto": None, "json": True, "console": False}[args.log_format]
    try:
        logs.configure(args.log_level, json=json_logs)
    except ValueError as exc:
        print(f"secondary-scheduler: --log-level: {exc}", file=sys.stderr)
        return 2
    log = structlog.get_logger("scheduler")
    try:
        registry = installed_registry()
        config = (
            load_config_file(args.config, registry) if args.config else default_config(registry)
        )
    except ConfigError as exc:
        return _invalid_configuration(exc)
    if args.leader_elect is not None:
        # The flag wins over the file, as kube-scheduler's --leader-elect does.
        config = dataclasses.replace(config, leader_election=dataclasses.replace(
            config.leader_election, leader_elect=args.leader_elect))
    kubeconfig = args.kubeconfig or config.client_connection.kubeconfig
    options = Options(kubeconfig=kubeconfig, health_port=args.health_port,
                      bind_address=args.bind_address, single_cpu=args.cpu_affinity == "single")
    app = SchedulerApp(config, registry, options)
    log.info("Starting", profiles=[p.scheduler_name for p in config.profiles])
    # The listings, leader election and scheduling need our client only: they start while
    # Python imports kopf (a third of a second), which then runs the process and watches
    # the low-volume kinds.
    app.start()
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


if __name__ == "__main__":
    sys.exit(main())
