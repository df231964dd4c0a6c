"""The component's sections of the configuration: how the scheduler talks to the API server
(``clientConnection``), elects its leader (``leaderElection``), calls extenders
(``extenders``) and moves running pods (``rescheduler``, ours). Upstream's types are
component-base's ClientConnectionConfiguration and LeaderElectionConfiguration and
kube-scheduler's Extender; their checks are upstream's validation, every error reported.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.framework.config_fields import Section
from scheduler.model.resources import is_extended_resource_name
from scheduler.model.validation import is_qualified_name

# The only wire format this scheduler speaks (upstream's default is protobuf).
JSON = "application/json"
PROTOBUF_REFUSED = (
    "this scheduler's API client reads and writes JSON only (the Python Kubernetes client "
    "has no protobuf codec); use 'application/json'")
# Upstream's DefaultExtenderTimeout, used when httpTimeout is absent or zero.
DEFAULT_EXTENDER_TIMEOUT = 5.0
# client-go's leaderelection.JitterFactor: a standby waits up to 1.2 retry periods.
JITTER_FACTOR = 1.2
# Go's longest time.Duration: a longer one does not parse upstream.
MAX_DURATION_SECONDS = (2**63 - 1) / 1e9


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
    resource_name: str = "secondary-scheduler"
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


# -- clientConnection ------------------------------------------------------------------------
# Go's int32, the width of clientConnection.burst and of a Lease's leaseDurationSeconds.
_MAX_INT32 = 2**31 - 1

_CLIENT_FIELDS = ("qps", "burst", "kubeconfig", "contentType", "acceptContentTypes")


def parse_client_connection(top: Section) -> ClientConnection:
    section = top.section("clientConnection", _CLIENT_FIELDS)
    content_type = section.string("contentType", JSON)
    if content_type not in ("", JSON):
        section.problems.invalid(section.at("contentType"), content_type, PROTOBUF_REFUSED)
    accept = section.string("acceptContentTypes", "")
    if accept and any(t.split(";")[0].strip() != JSON for t in accept.split(",")):
        section.problems.invalid(section.at("acceptContentTypes"), accept, PROTOBUF_REFUSED)
    return ClientConnection(
        qps=section.number("qps", 50.0, minimum=0),
        burst=section.integer("burst", 100, minimum=0, maximum=_MAX_INT32),
        kubeconfig=section.string("kubeconfig") or None,
    )


# -- leaderElection --------------------------------------------------------------------------
_LEADER_FIELDS = ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                  "resourceLock", "resourceName", "resourceNamespace")


def parse_leader_election(top: Section) -> LeaderElection:
    section = top.section("leaderElection", _LEADER_FIELDS)
    default = LeaderElection()
    lock = section.string("resourceLock", "leases")
    if lock != "leases":
        section.problems.invalid(section.at("resourceLock"), lock,
                                 "client-go removed the endpoints and configmaps locks: only "
                                 "'leases' remains")
    names = {}
    for key, fallback in (("resourceName", default.resource_name),
                          ("resourceNamespace", default.resource_namespace)):
        names[key] = section.string(key, fallback)
        if not names[key]:
            section.problems.add(section.at(key), "must be a non-empty string")
    wrong_so_far = len(section.problems.errors)
    durations = {key: duration(section, key, fallback) for key, fallback in (
        ("leaseDuration", default.lease_duration), ("renewDeadline", default.renew_deadline),
        ("retryPeriod", default.retry_period))}
    lease, renew, retry = durations.values()
    if lease > _MAX_INT32:
        # The Lease stores it in whole seconds as an int32: a longer one cannot be written,
        # and the elector would fail at its first step instead of here.
        section.problems.add(section.at("leaseDuration"),
                             f"must be at most {_MAX_INT32}s (the Lease's "
                             "leaseDurationSeconds is an int32)")
    # client-go's NewLeaderElector checks (made even when leaderElect is off, since the flag
    # may turn it on), so a replica gives up renewing before the others may take over; only
    # between durations that were read, not a wrong one's default.
    if len(section.problems.errors) == wrong_so_far:
        if lease <= renew:
            section.problems.add(section.path,
                                 "leaseDuration must be greater than renewDeadline")
        if renew <= JITTER_FACTOR * retry:
            section.problems.add(
                section.path, f"renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
    return LeaderElection(
        leader_elect=section.flag("leaderElect", default.leader_elect), lease_duration=lease,
        renew_deadline=renew, retry_period=retry, resource_name=names["resourceName"],
        resource_namespace=names["resourceNamespace"],
    )


def duration(section: Section, key: str, default: float) -> float:
    """A positive metav1.Duration no longer than Go's time.Duration can hold."""
    seconds = section.duration(key, default)
    if seconds > MAX_DURATION_SECONDS:
        section.problems.invalid(section.at(key), section.get(key),
                                 "longer than a Go duration can be (about 292 years)")
        return default
    return seconds


# -- extenders -------------------------------------------------------------------------------
_EXTENDER_FIELDS = ("urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight",
                    "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                    "managedResources", "ignorable")
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData",
               "keyData", "caData")
_VERBS = ("filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb")


def parse_extenders(top: Section) -> tuple[ExtenderConfig, ...]:
    """The ``extenders`` list, checked as upstream's validateExtenders."""
    problems = top.problems
    out = [parse_extender(Section(item, f"{top.at('extenders')}[{i}]", problems,
                                  _EXTENDER_FIELDS))
           for i, item in enumerate(top.items("extenders"))]
    seen: set[str] = set()
    for i, extender in enumerate(out):
        for j, name in enumerate(extender.managed_resources):
            if name in seen:
                problems.invalid(f"extenders[{i}].managedResources[{j}].name", name,
                                 "duplicate extender managed resource name")
            seen.add(name)
    binders = sum(1 for e in out if e.bind_verb)
    if binders > 1:
        problems.invalid("extenders", f"found {binders} extenders implementing bind",
                         "only one extender can implement bind")
    return tuple(out)


def parse_extender(section: Section) -> ExtenderConfig:
    problems = section.problems
    url = section.string("urlPrefix")
    if section.get("urlPrefix") in (None, ""):
        problems.add(section.at("urlPrefix"), "required")
    elif url and not url.lower().startswith(("http://", "https://")):
        problems.invalid(section.at("urlPrefix"), url, "must be an http:// or https:// URL")
    verbs = {key: section.string(key) for key in _VERBS}
    wrong_so_far = len(problems.errors)
    weight = section.integer("weight", 0)
    if verbs["prioritizeVerb"] and weight <= 0 and len(problems.errors) == wrong_so_far:
        problems.invalid(section.at("weight"), weight,
                         "must have a positive weight applied to it")
    timeout = DEFAULT_EXTENDER_TIMEOUT
    if section.get("httpTimeout") not in (None, "", 0, "0", "0s"):
        timeout = duration(section, "httpTimeout", DEFAULT_EXTENDER_TIMEOUT)
    managed, ignored = _parse_managed_resources(section)
    return ExtenderConfig(
        url_prefix=url, filter_verb=verbs["filterVerb"], preempt_verb=verbs["preemptVerb"],
        prioritize_verb=verbs["prioritizeVerb"], bind_verb=verbs["bindVerb"], weight=weight,
        enable_https=section.flag("enableHTTPS", False),
        tls=_parse_tls(section.section("tlsConfig", _TLS_FIELDS))
        if section.has("tlsConfig") else None,
        http_timeout=timeout, node_cache_capable=section.flag("nodeCacheCapable", False),
        managed_resources=managed, ignored_resources=ignored,
        ignorable=section.flag("ignorable", False),
    )


def _parse_managed_resources(extender: Section) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names: list[str] = []
    ignored: list[str] = []
    for j, item in enumerate(extender.items("managedResources")):
        section = Section(item, f"{extender.at('managedResources')}[{j}]", extender.problems,
                          ("name", "ignoredByScheduler"))
        name = section.get("name")
        if not isinstance(name, str) or not is_qualified_name(name):
            section.problems.invalid(section.at("name"), name,
                                     "must be a qualified name (e.g. 'example.com/gpu')")
            continue
        if not is_extended_resource_name(name):
            section.problems.invalid(section.at("name"), name,
                                     "is an invalid extended resource name")
            continue
        names.append(name)
        if section.flag("ignoredByScheduler", False):
            ignored.append(name)
    return tuple(names), tuple(ignored)


def _parse_tls(section: Section) -> ExtenderTLS:
    data: dict[str, bytes] = {}
    for key in ("certData", "keyData", "caData"):
        try:
            data[key] = base64.b64decode(section.string(key), validate=True)
        except binascii.Error as exc:
            section.problems.add(section.at(key), f"must be base64: {exc}")
            data[key] = b""
    return ExtenderTLS(
        insecure=section.flag("insecure", False), server_name=section.string("serverName"),
        cert_file=section.string("certFile"), key_file=section.string("keyFile"),
        ca_file=section.string("caFile"), cert_data=data["certData"],
        key_data=data["keyData"], ca_data=data["caData"],
    )


# -- rescheduler -----------------------------------------------------------------------------
_RESCHEDULER_FIELDS = ("enabled", "dryRun", "interval", "objectives", "minScoreGain",
                       "avoidDuration", "moveTimeout", "allowLocalStorage", "limits")
_LIMIT_FIELDS = {"perNode": "per_node", "perNamespace": "per_namespace", "perPass": "per_pass"}


def parse_rescheduler(top: Section) -> ReschedulerConfig:
    section = top.section("rescheduler", _RESCHEDULER_FIELDS)
    default = ReschedulerConfig()
    objectives = _objectives(section, default.objectives)
    limits = section.section("limits", _LIMIT_FIELDS)
    counts = {attr: limits.integer(key, getattr(default.limits, attr), minimum=1)
              for key, attr in _LIMIT_FIELDS.items()}
    return ReschedulerConfig(
        enabled=section.flag("enabled", False),
        dry_run=section.flag("dryRun", False),
        interval=duration(section, "interval", default.interval),
        objectives=objectives,
        min_score_gain=section.integer("minScoreGain", default.min_score_gain, minimum=1),
        avoid_seconds=duration(section, "avoidDuration", default.avoid_seconds),
        move_timeout=duration(section, "moveTimeout", default.move_timeout),
        allow_local_storage=section.flag("allowLocalStorage", False),
        limits=ReschedulerLimits(**counts),
    )


def _objectives(section: Section, default: tuple[str, ...]) -> tuple[str, ...]:
    if not section.has("objectives"):
        return default
    known = ", ".join(OBJECTIVE_PLUGINS)
    objectives = section.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        section.problems.invalid(section.at("objectives"), objectives,
                                 f"must be a non-empty list of {known}")
        return default
    for j, objective in enumerate(objectives):
        if not isinstance(objective, str) or objective not in OBJECTIVE_PLUGINS:
            section.problems.add(f"{section.at('objectives')}[{j}]",
                                 f"unknown objective {objective!r} (known: {known})")
            return default
    return tuple(dict.fromkeys(objectives))

