"""The whole configuration file: upstream's KubeSchedulerConfiguration v1 (and our
``rescheduler`` section), read with every error reported at once.

Every field of v1 either works as upstream's or is refused with the reason this scheduler
cannot honour it; none is accepted and ignored (docs/configuration.md lists them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.config.component import (
    AVOID_BOUNCE_BACK,
    ClientConnection,
    ExtenderConfig,
    LeaderElection,
    ReschedulerConfig,
    parse_client_connection,
    parse_extenders,
    parse_leader_election,
    parse_rescheduler,
)
from scheduler.framework.config_fields import AggregateConfigError, Problems, Section
from scheduler.framework.profile_config import ProfileConfig, parse_profiles
from scheduler.framework.registry import Registry

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
PROFILING_REFUSED = (
    "this scheduler serves no /debug/pprof: a Python process has none of Go's runtime "
    "profiles; profile it from outside with py-spy (docs/configuration.md)")
_TOP_FIELDS = (
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
    "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds",
    "profiles", "extenders", "delayCacheUntilActive", "rescheduler",
)


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[ProfileConfig, ...]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    # Upstream's parallelism: how many API calls one preemption makes at once (the filters
    # and scores run vectorised, so it has nothing to bound there).
    parallelism: int = 16
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    extenders: tuple[ExtenderConfig, ...] = ()
    rescheduler: ReschedulerConfig = field(default_factory=ReschedulerConfig)
    # With leader election on, a standby lists and watches nothing until it leads.
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset(p.scheduler_name for p in self.profiles)


def load_config_file(
    path: str | Path, registry: Registry, *, gang_scheduling: bool = False
) -> SchedulerConfig:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise AggregateConfigError([f"{path}: cannot read the configuration file: {exc}"]) from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = str(exc).replace("\n", " ")
        raise AggregateConfigError([f"{path}: not valid YAML: {problem}"]) from exc
    return parse_config(raw if raw is not None else {}, registry, gang_scheduling=gang_scheduling)


def default_config(registry: Registry, *, gang_scheduling: bool = False) -> SchedulerConfig:
    return parse_config({}, registry, gang_scheduling=gang_scheduling)


def parse_config(raw: Any, registry: Registry, *, gang_scheduling: bool = False
                 ) -> SchedulerConfig:
    """The configuration, or :class:`AggregateConfigError` listing every error in it.

    ``gang_scheduling``: the cluster serves pod groups (the Workload API's
    ``scheduling.k8s.io/v1beta1`` PodGroups, or scheduler-plugins' PodGroup CRD), as the
    operator learns by discovery: the default profile then gets GangScheduling, as
    kube-scheduler's does with its GenericWorkload feature gate on."""
    problems = Problems()
    config = _read(Section(raw, "", problems, _TOP_FIELDS), registry, gang_scheduling)
    problems.raise_if_any()
    return config


def _read(top: Section, registry: Registry, gang_scheduling: bool) -> SchedulerConfig:
    problems = top.problems
    _check_type(top)
    for key in ("enableProfiling", "enableContentionProfiling"):
        if top.flag(key, False):
            problems.invalid(key, True, PROFILING_REFUSED)
    initial = top.integer("podInitialBackoffSeconds", 1, minimum=1)
    maximum = top.integer("podMaxBackoffSeconds", 10, minimum=1)
    if maximum < initial:
        problems.add("podMaxBackoffSeconds",
                     "must be greater than or equal to podInitialBackoffSeconds")
    profiles = parse_profiles(top.get("profiles"), "profiles", registry, problems,
                              gang_scheduling=gang_scheduling)
    extenders = parse_extenders(top)
    ignored = [name for e in extenders for name in e.ignored_resources]
    if ignored:
        profiles = tuple(_ignore_resources(p, ignored, problems) for p in profiles)
    rescheduler = parse_rescheduler(top)
    if rescheduler.enabled:
        _check_avoid_bounce_back(profiles, problems)
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=top.integer("percentageOfNodesToScore", 0, minimum=0,
                                                 maximum=100),
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        parallelism=top.integer("parallelism", 16, minimum=1),
        client_connection=parse_client_connection(top),
        leader_election=parse_leader_election(top),
        extenders=extenders,
        rescheduler=rescheduler,
        delay_cache_until_active=top.flag("delayCacheUntilActive", False),
    )


def _check_type(top: Section) -> None:
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        got = top.get(key)
        if got is not None and got != want:
            top.problems.add(key, f"expected {want!r}, got {got!r}")


def _ignore_resources(profile: ProfileConfig, ignored: list[str],
                      problems: Problems) -> ProfileConfig:
    """As upstream's buildExtenders: the extenders' ignoredByScheduler resources replace
    NodeResourcesFit's ignoredResources in every profile."""
    fit = profile.args.get("NodeResourcesFit")
    if fit is None:
        problems.add("profiles", f"{profile.scheduler_name!r}: extenders ignore resources "
                     "but the profile has no NodeResourcesFit plugin to ignore them")
        return profile
    args = {**profile.args, "NodeResourcesFit": {**fit, "ignoredResources": list(ignored)}}
    return dataclasses.replace(profile, args=args)


def _check_avoid_bounce_back(profiles: tuple[ProfileConfig, ...], problems: Problems) -> None:
    for i, profile in enumerate(profiles):
        if not any(ref.name == AVOID_BOUNCE_BACK for ref in profile.points["score"]):
            problems.add(f"profiles[{i}].plugins.score",
                         f"the rescheduler is enabled, so {AVOID_BOUNCE_BACK} must score "
                         "(or moved pods may land back)")
