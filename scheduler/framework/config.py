"""Scheduler configuration in the shape of kube-scheduler's KubeSchedulerConfiguration.

Only what this scheduler implements is accepted: an unknown field, plugin or argument is an
error that names the field, so a typo never silently falls back to a default. The default
profile is upstream's default plugin list (v1.37) without the DRA plugins, which need
ResourceClaim watches this scheduler does not have.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from scheduler.framework.registry import ConfigError, Registry
from scheduler.model.resources import is_extended_resource_name
from scheduler.model.validation import is_qualified_name

API_VERSION = "kubescheduler.config.k8s.io/v1"
# The only wire format this scheduler speaks (upstream's default is protobuf).
JSON = "application/json"
DEFAULT_SCHEDULER_NAME = "secondary-scheduler"
# Upstream's DefaultExtenderTimeout, used when httpTimeout is absent or zero.
DEFAULT_EXTENDER_TIMEOUT = 5.0

# Upstream's MultiPoint defaults (pkg/scheduler/apis/config/v1/default_plugins.go, v1.37),
# in order, with their score weights, and AvoidBounceBack.
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("PrioritySort", 0),
    ("NodeName", 0),
    ("NodeUnschedulable", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    # Ours, not upstream's: scores nothing unless the rescheduler or a kubelet rejection
    # left a record for the pod's controller (scheduler/plugins/avoid_bounce_back.py).
    ("AvoidBounceBack", 100),
    ("DefaultBinder", 0),
)

EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

_TOP_FIELDS = {
    "apiVersion",
    "kind",
    "profiles",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "parallelism",
    "clientConnection",
    "leaderElection",
    "extenders",
    "rescheduler",
}
_PROFILE_FIELDS = {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int


@dataclass(frozen=True)
class ProfileConfig:
    scheduler_name: str
    # Per extension point (upstream's camelCase names), the plugins in order.
    points: Mapping[str, tuple[PluginRef, ...]]
    args: Mapping[str, Mapping[str, Any]]
    percentage_of_nodes_to_score: int | None = None


@dataclass(frozen=True)
class ClientConnection:
    qps: float = 50.0
    burst: int = 100
    # Used when no --kubeconfig flag is given (the flag wins, as in kube-scheduler).
    kubeconfig: str | None = None


@dataclass(frozen=True)
class LeaderElection:
    """Upstream's LeaderElectionConfiguration; durations in seconds. Defaults are
    kube-scheduler's, except the lease's name, which must not be the default scheduler's."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = DEFAULT_SCHEDULER_NAME
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class ExtenderTLS:
    """Upstream's ExtenderTLSConfig; the *Data fields are PEM bytes (base64 in the file)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True)
class ExtenderConfig:
    """One entry of ``extenders`` (upstream's Extender); ``http_timeout`` in seconds."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: ExtenderTLS | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: tuple[str, ...] = ()
    # managedResources marked ignoredByScheduler: NodeResourcesFit does not check them.
    ignored_resources: tuple[str, ...] = ()
    ignorable: bool = False


# What a move may be for: the Score plugins whose gain counts for each objective.
UNDERUTILIZED_NODES = "UnderutilizedNodes"
PREFERRED_TERMS = "PreferredTerms"
OBJECTIVE_PLUGINS: Mapping[str, frozenset[str]] = {
    UNDERUTILIZED_NODES: frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation"}),
    PREFERRED_TERMS: frozenset({"NodeAffinity", "InterPodAffinity", "PodTopologySpread"}),
}
AVOID_BOUNCE_BACK = "AvoidBounceBack"


@dataclass(frozen=True)
class ReschedulerLimits:
    """Evictions at most: from one node and in one namespace while their moves are in flight
    (evicted, the replacement not yet bound), and per pass."""

    per_node: int = 1
    per_namespace: int = 2
    per_pass: int = 5


@dataclass(frozen=True)
class ReschedulerConfig:
    """The ``rescheduler`` section (ours; off by default). Durations in seconds."""

    enabled: bool = False
    dry_run: bool = False
    interval: float = 60.0
    objectives: tuple[str, ...] = (UNDERUTILIZED_NODES, PREFERRED_TERMS)
    # The aggressiveness knob: how much higher, in weighted score points, the target must
    # score than the pod's node, counting only the objectives' plugins.
    min_score_gain: int = 10
    # How long a moved pod's controller stays off the node it left (AvoidBounceBack), and a
    # node whose kubelet rejected or evicted one of its pods.
    avoid_seconds: float = 600.0
    # A move is in flight until its replacement binds, or this long after the eviction.
    move_timeout: float = 300.0
    allow_local_storage: bool = False
    limits: ReschedulerLimits = field(default_factory=ReschedulerLimits)


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

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset(p.scheduler_name for p in self.profiles)


def load_config_file(path: str | Path, registry: Registry) -> SchedulerConfig:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration file: {exc}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    return parse_config(raw if raw is not None else {}, registry)


def default_config(registry: Registry) -> SchedulerConfig:
    return parse_config({}, registry)


def parse_config(raw: Any, registry: Registry) -> SchedulerConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError("the configuration must be a mapping (KubeSchedulerConfiguration)")
    _no_unknown(raw, _TOP_FIELDS, "")
    api_version = raw.get("apiVersion", API_VERSION)
    if api_version != API_VERSION:
        raise ConfigError(f"apiVersion: expected {API_VERSION!r}, got {api_version!r}")
    kind = raw.get("kind", "KubeSchedulerConfiguration")
    if kind != "KubeSchedulerConfiguration":
        raise ConfigError(f"kind: expected 'KubeSchedulerConfiguration', got {kind!r}")
    percentage = _percentage(raw.get("percentageOfNodesToScore", 0), "percentageOfNodesToScore")
    initial = _number(raw.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds", 1)
    maximum = _number(raw.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds", 1)
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds"
        )
    parallelism = raw.get("parallelism", 16)
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
        raise ConfigError("parallelism: must be an integer >= 1")
    client = raw.get("clientConnection") or {}
    _no_unknown(client, {"qps", "burst", "kubeconfig", "contentType"}, "clientConnection")
    content_type = client.get("contentType", JSON)
    if content_type != JSON:
        raise ConfigError(
            f"clientConnection.contentType: only {JSON!r} is supported, got {content_type!r}"
        )
    kubeconfig = client.get("kubeconfig") or None
    if kubeconfig is not None and not isinstance(kubeconfig, str):
        raise ConfigError("clientConnection.kubeconfig: must be a file path")
    connection = ClientConnection(
        qps=_number(client.get("qps", 50), "clientConnection.qps", 0),
        burst=int(_number(client.get("burst", 100), "clientConnection.burst", 0)),
        kubeconfig=kubeconfig,
    )
    leader_election = _parse_leader_election(raw.get("leaderElection") or {})
    raw_profiles = raw.get("profiles") or [{}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles: must be a list")
    profiles = tuple(
        _parse_profile(p, f"profiles[{i}]", registry, single=len(raw_profiles) == 1)
        for i, p in enumerate(raw_profiles)
    )
    names = [p.scheduler_name for p in profiles]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"profiles[{i}].schedulerName: duplicate name {name!r}")
    sorts = {p.points["queueSort"] for p in profiles}
    if len(sorts) > 1:
        raise ConfigError("profiles: all profiles must use the same queueSort plugin")
    extenders = _parse_extenders(raw.get("extenders") or [])
    ignored = [name for e in extenders for name in e.ignored_resources]
    if ignored:
        profiles = tuple(_ignore_resources(p, ignored) for p in profiles)
    rescheduler = _parse_rescheduler(raw.get("rescheduler") or {})
    if rescheduler.enabled:
        for i, profile in enumerate(profiles):
            if not any(ref.name == AVOID_BOUNCE_BACK for ref in profile.points["score"]):
                raise ConfigError(
                    f"profiles[{i}].plugins.score: the rescheduler is enabled, so "
                    f"{AVOID_BOUNCE_BACK} must score (or moved pods may land back)")
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=percentage or 0,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
        client_connection=connection,
        leader_election=leader_election,
        extenders=extenders,
        rescheduler=rescheduler,
    )


_RESCHEDULER_FIELDS = {
    "enabled", "dryRun", "interval", "objectives", "minScoreGain", "avoidDuration",
    "moveTimeout", "allowLocalStorage", "limits",
}
_LIMIT_FIELDS = {"perNode": "per_node", "perNamespace": "per_namespace", "perPass": "per_pass"}


def _parse_rescheduler(raw: Any) -> ReschedulerConfig:
    path = "rescheduler"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping")
    _no_unknown(raw, _RESCHEDULER_FIELDS, path)
    default = ReschedulerConfig()
    objectives = raw.get("objectives", list(default.objectives))
    if not isinstance(objectives, list) or not objectives:
        raise ConfigError(f"{path}.objectives: must be a non-empty list of "
                          f"{', '.join(OBJECTIVE_PLUGINS)}")
    for j, objective in enumerate(objectives):
        if objective not in OBJECTIVE_PLUGINS:
            raise ConfigError(f"{path}.objectives[{j}]: unknown objective {objective!r} "
                              f"(known: {', '.join(OBJECTIVE_PLUGINS)})")
    gain = raw.get("minScoreGain", default.min_score_gain)
    if not isinstance(gain, int) or isinstance(gain, bool) or gain < 1:
        raise ConfigError(f"{path}.minScoreGain: must be an integer >= 1")
    limits = raw.get("limits") or {}
    if not isinstance(limits, Mapping):
        raise ConfigError(f"{path}.limits: must be a mapping")
    _no_unknown(limits, set(_LIMIT_FIELDS), f"{path}.limits")
    counts = {}
    for key, attr in _LIMIT_FIELDS.items():
        value = limits.get(key, getattr(default.limits, attr))
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{path}.limits.{key}: must be an integer >= 1")
        counts[attr] = value

    def duration(key: str, fallback: float) -> float:
        value = raw.get(key)
        return fallback if value is None else _duration(value, f"{path}.{key}")

    return ReschedulerConfig(
        enabled=_flag(raw.get("enabled", False), f"{path}.enabled"),
        dry_run=_flag(raw.get("dryRun", False), f"{path}.dryRun"),
        interval=duration("interval", default.interval),
        objectives=tuple(dict.fromkeys(objectives)),
        min_score_gain=gain,
        avoid_seconds=duration("avoidDuration", default.avoid_seconds),
        move_timeout=duration("moveTimeout", default.move_timeout),
        allow_local_storage=_flag(raw.get("allowLocalStorage", False),
                                  f"{path}.allowLocalStorage"),
        limits=ReschedulerLimits(**counts),
    )


# client-go's leaderelection.JitterFactor: a standby waits up to 1.2 retry periods.
JITTER_FACTOR = 1.2
_MAX_LEASE_SECONDS = 2**31 - 1
_LEADER_FIELDS = {
    "leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
    "resourceName", "resourceNamespace",
}


def _parse_leader_election(raw: Any) -> LeaderElection:
    path = "leaderElection"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping")
    _no_unknown(raw, _LEADER_FIELDS, path)
    default = LeaderElection()
    elect = raw.get("leaderElect", default.leader_elect)
    if not isinstance(elect, bool):
        raise ConfigError(f"{path}.leaderElect: must be true or false")
    lock = raw.get("resourceLock", "leases")
    if lock != "leases":
        raise ConfigError(f"{path}.resourceLock: only 'leases' is supported, got {lock!r}")
    names = {}
    for key, fallback in (("resourceName", default.resource_name),
                          ("resourceNamespace", default.resource_namespace)):
        value = raw.get(key, fallback)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{path}.{key}: must be a non-empty string")
        names[key] = value
    lease = _duration(raw.get("leaseDuration", "15s"), f"{path}.leaseDuration")
    if lease > _MAX_LEASE_SECONDS:
        # The Lease stores it in whole seconds as an int32: longer (or infinite) cannot be
        # written, and the elector would fail at its first step instead of here.
        raise ConfigError(f"{path}.leaseDuration: must be at most {_MAX_LEASE_SECONDS}s "
                          f"(the Lease's leaseDurationSeconds is an int32), got "
                          f"{raw.get('leaseDuration')!r}")
    renew = _duration(raw.get("renewDeadline", "10s"), f"{path}.renewDeadline")
    retry = _duration(raw.get("retryPeriod", "2s"), f"{path}.retryPeriod")
    # client-go's NewLeaderElector checks (made even when leaderElect is off, since the flag
    # may turn it on), so a replica gives up renewing before the others may take over.
    if lease <= renew:
        raise ConfigError(f"{path}: leaseDuration must be greater than renewDeadline")
    if renew <= JITTER_FACTOR * retry:
        raise ConfigError(f"{path}: renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
    return LeaderElection(
        leader_elect=elect, lease_duration=lease, renew_deadline=renew, retry_period=retry,
        resource_name=names["resourceName"], resource_namespace=names["resourceNamespace"],
    )


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _duration(value: Any, path: str) -> float:
    """A metav1.Duration as Go prints it ("15s", "1m30s", "500ms"), in seconds, > 0."""
    if isinstance(value, str) and value and _DURATION_PART.sub("", value) == "":
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))
        if seconds > 0:
            return seconds
    raise ConfigError(f"{path}: must be a positive duration such as '15s', got {value!r}")


_EXTENDER_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
    "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
    "ignorable",
}
_TLS_FIELDS = {
    "insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData",
}


def _parse_extenders(raw: Any) -> tuple[ExtenderConfig, ...]:
    """The ``extenders`` list, checked as upstream's validateExtenders."""
    if not isinstance(raw, list):
        raise ConfigError("extenders: must be a list")
    out = [_parse_extender(item, f"extenders[{i}]") for i, item in enumerate(raw)]
    seen: set[str] = set()
    for i, extender in enumerate(out):
        for j, name in enumerate(extender.managed_resources):
            if name in seen:
                raise ConfigError(f"extenders[{i}].managedResources[{j}].name: Invalid value: "
                                  f"{name!r}: duplicate extender managed resource name")
            seen.add(name)
    binders = sum(1 for e in out if e.bind_verb)
    if binders > 1:
        raise ConfigError(f"extenders: Invalid value: 'found {binders} extenders implementing "
                          "bind': only one extender can implement bind")
    return tuple(out)


def _parse_extender(raw: Any, path: str) -> ExtenderConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping")
    _no_unknown(raw, _EXTENDER_FIELDS, path)
    url = raw.get("urlPrefix")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{path}.urlPrefix: required")
    if urlsplit(url).scheme not in ("http", "https"):
        # Go's client would refuse any other scheme at each call; refused here at once.
        raise ConfigError(f"{path}.urlPrefix: Invalid value: {url!r}: must be an http:// or "
                          "https:// URL")
    verbs = {key: _string(raw.get(key, ""), f"{path}.{key}")
             for key in ("filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb")}
    weight = raw.get("weight", 0)
    if not isinstance(weight, int) or isinstance(weight, bool):
        raise ConfigError(f"{path}.weight: must be an integer")
    if verbs["prioritizeVerb"] and weight <= 0:
        raise ConfigError(f"{path}.weight: Invalid value: {weight}: "
                          "must have a positive weight applied to it")
    flags = {key: _flag(raw.get(key, False), f"{path}.{key}")
             for key in ("enableHTTPS", "nodeCacheCapable", "ignorable")}
    timeout = raw.get("httpTimeout")
    seconds = DEFAULT_EXTENDER_TIMEOUT
    if timeout not in (None, "", 0, "0", "0s"):
        seconds = _duration(timeout, f"{path}.httpTimeout")
    managed, ignored = _parse_managed_resources(raw.get("managedResources") or [], path)
    tls = raw.get("tlsConfig")
    return ExtenderConfig(
        url_prefix=url,
        filter_verb=verbs["filterVerb"],
        preempt_verb=verbs["preemptVerb"],
        prioritize_verb=verbs["prioritizeVerb"],
        bind_verb=verbs["bindVerb"],
        weight=weight,
        enable_https=flags["enableHTTPS"],
        tls=None if tls is None else _parse_tls(tls, f"{path}.tlsConfig"),
        http_timeout=seconds,
        node_cache_capable=flags["nodeCacheCapable"],
        managed_resources=managed,
        ignored_resources=ignored,
        ignorable=flags["ignorable"],
    )


def _parse_managed_resources(raw: Any, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not isinstance(raw, list):
        raise ConfigError(f"{path}.managedResources: must be a list")
    names: list[str] = []
    ignored: list[str] = []
    for j, item in enumerate(raw):
        item_path = f"{path}.managedResources[{j}]"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{item_path}: must be a mapping with name")
        _no_unknown(item, {"name", "ignoredByScheduler"}, item_path)
        name = item.get("name")
        if not isinstance(name, str) or not is_qualified_name(name):
            raise ConfigError(f"{item_path}.name: Invalid value: {name!r}: must be a qualified "
                              "name (e.g. 'example.com/gpu')")
        if not is_extended_resource_name(name):
            raise ConfigError(f"{item_path}.name: Invalid value: {name!r}: "
                              "is an invalid extended resource name")
        names.append(name)
        if _flag(item.get("ignoredByScheduler", False), f"{item_path}.ignoredByScheduler"):
            ignored.append(name)
    return tuple(names), tuple(ignored)


def _parse_tls(raw: Any, path: str) -> ExtenderTLS:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping")
    _no_unknown(raw, _TLS_FIELDS, path)
    data: dict[str, bytes] = {}
    for key in ("certData", "keyData", "caData"):
        value = _string(raw.get(key, ""), f"{path}.{key}")
        try:
            data[key] = base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ConfigError(f"{path}.{key}: must be base64: {exc}") from exc
    return ExtenderTLS(
        insecure=_flag(raw.get("insecure", False), f"{path}.insecure"),
        server_name=_string(raw.get("serverName", ""), f"{path}.serverName"),
        cert_file=_string(raw.get("certFile", ""), f"{path}.certFile"),
        key_file=_string(raw.get("keyFile", ""), f"{path}.keyFile"),
        ca_file=_string(raw.get("caFile", ""), f"{path}.caFile"),
        cert_data=data["certData"],
        key_data=data["keyData"],
        ca_data=data["caData"],
    )


def _ignore_resources(profile: ProfileConfig, ignored: list[str]) -> ProfileConfig:
    """As upstream's buildExtenders: the extenders' ignoredByScheduler resources replace
    NodeResourcesFit's ignoredResources in every profile."""
    fit = profile.args.get("NodeResourcesFit")
    if fit is None:
        raise ConfigError(f"profiles: {profile.scheduler_name!r}: extenders ignore resources "
                          "but the profile has no NodeResourcesFit plugin to ignore them")
    args = {**profile.args, "NodeResourcesFit": {**fit, "ignoredResources": list(ignored)}}
    return ProfileConfig(profile.scheduler_name, profile.points, args,
                         profile.percentage_of_nodes_to_score)


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: must be a string")
    return value


def _flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: must be true or false")
    return value


def _parse_profile(raw: Any, path: str, registry: Registry, *, single: bool) -> ProfileConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping")
    _no_unknown(raw, _PROFILE_FIELDS, path)
    name = raw.get("schedulerName")
    if name is None:
        if not single:
            raise ConfigError(f"{path}.schedulerName: required when there are several profiles")
        name = DEFAULT_SCHEDULER_NAME
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.schedulerName: must be a non-empty string")
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise ConfigError(f"{path}.plugins: must be a mapping")
    _no_unknown(plugins, {"multiPoint", *EXTENSION_POINTS}, f"{path}.plugins")
    multi = _apply_set(
        [PluginRef(n, w) for n, w in DEFAULT_PLUGINS],
        plugins.get("multiPoint"),
        f"{path}.plugins.multiPoint",
        registry,
    )
    enabled_names = {ref.name for ref in multi}
    points: dict[str, tuple[PluginRef, ...]] = {}
    for point in EXTENSION_POINTS:
        base = [ref for ref in multi if _implements(registry, ref.name, point)]
        refs = _apply_set(
            base, plugins.get(point), f"{path}.plugins.{point}", registry, point=point
        )
        if point == "score":
            refs = [PluginRef(r.name, r.weight or 1) for r in refs]
        points[point] = tuple(refs)
        enabled_names |= {ref.name for ref in refs}
    if len(points["queueSort"]) != 1:
        raise ConfigError(f"{path}.plugins.queueSort: exactly one queueSort plugin is required")
    if not points["bind"]:
        raise ConfigError(f"{path}.plugins.bind: at least one bind plugin is required")
    args = _parse_plugin_config(raw.get("pluginConfig") or [], path, registry, enabled_names)
    percentage = raw.get("percentageOfNodesToScore")
    return ProfileConfig(
        scheduler_name=name,
        points=points,
        args=args,
        percentage_of_nodes_to_score=None
        if percentage is None
        else _percentage(percentage, f"{path}.percentageOfNodesToScore"),
    )


def _apply_set(
    base: list[PluginRef], raw: Any, path: str, registry: Registry, *, point: str | None = None
) -> list[PluginRef]:
    """Upstream's merge: ``disabled`` removes (``*`` removes all), ``enabled`` appends/overrides."""
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping with 'enabled' and/or 'disabled'")
    _no_unknown(raw, {"enabled", "disabled"}, path)
    out = list(base)
    for j, item in enumerate(raw.get("disabled") or []):
        name = _plugin_name(item, f"{path}.disabled[{j}]", registry, allow_star=True)
        out = [] if name == "*" else [ref for ref in out if ref.name != name]
    for j, item in enumerate(raw.get("enabled") or []):
        item_path = f"{path}.enabled[{j}]"
        name = _plugin_name(item, item_path, registry, allow_star=False)
        _no_unknown(item, {"name", "weight"}, item_path)
        if point is not None and not _implements(registry, name, point):
            raise ConfigError(f"{item_path}.name: plugin {name!r} does not implement {point}")
        weight = item.get("weight", 0) if isinstance(item, Mapping) else 0
        if not isinstance(weight, int) or weight < 0 or weight > 100:
            raise ConfigError(f"{item_path}.weight: must be an integer in [0, 100]")
        existing = next((ref for ref in out if ref.name == name), None)
        if existing is not None:
            out = [PluginRef(name, weight or existing.weight) if r is existing else r for r in out]
        else:
            out.append(PluginRef(name, weight))
    return out


def _plugin_name(item: Any, path: str, registry: Registry, *, allow_star: bool) -> str:
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
        raise ConfigError(f"{path}.name: required")
    name: str = item["name"]
    if name == "*" and allow_star:
        return name
    if registry.get(name) is None:
        known = ", ".join(registry.names())
        raise ConfigError(f"{path}.name: unknown plugin {name!r} (known: {known})")
    return name


def _parse_plugin_config(
    raw: Any, path: str, registry: Registry, enabled: set[str]
) -> dict[str, Mapping[str, Any]]:
    if not isinstance(raw, list):
        raise ConfigError(f"{path}.pluginConfig: must be a list")
    out: dict[str, Mapping[str, Any]] = {}
    for j, entry in enumerate(raw):
        entry_path = f"{path}.pluginConfig[{j}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{entry_path}: must be a mapping with name and args")
        _no_unknown(entry, {"name", "args"}, entry_path)
        name = _plugin_name(entry, entry_path, registry, allow_star=False)
        if name in out:
            raise ConfigError(f"{entry_path}.name: duplicate pluginConfig for {name!r}")
        spec = registry.get(name)
        assert spec is not None
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            raise ConfigError(f"{entry_path}.args: must be a mapping")
        args = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
        merged = {**spec.default_args, **args}
        if spec.validate is not None:
            spec.validate(merged, f"{entry_path}.args")
        elif args:
            raise ConfigError(f"{entry_path}.args: plugin {name!r} takes no arguments")
        out[name] = merged
    for name in enabled:
        if name not in out:
            spec = registry.get(name)
            assert spec is not None
            defaults = dict(spec.default_args)
            if spec.validate is not None:
                # A plugin whose args have a required field must be given a pluginConfig.
                spec.validate(defaults, f"{path}.pluginConfig[{name}].args")
            out[name] = defaults
    return out


def _implements(registry: Registry, name: str, point: str) -> bool:
    spec = registry.get(name)
    return spec is not None and point in spec.points


def _no_unknown(raw: Mapping[str, Any], known: set[str], path: str) -> None:
    for key in raw:
        if key not in known:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(f"{where}: unknown field")


def _percentage(value: Any, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise ConfigError(f"{path}: must be an integer in [0, 100]")
    return value


def _number(value: Any, path: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ConfigError(f"{path}: must be a number >= {minimum:g}")
    return float(value)

