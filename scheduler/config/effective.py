"""The effective configuration, defaults filled in, as a KubeSchedulerConfiguration v1 file:
what ``--write-config-to`` writes and ``check-config`` prints. It loads back to the same
configuration (tests/config/test_effective.py)."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from scheduler.config.component import (
    JSON,
    ClientConnection,
    ExtenderConfig,
    ExtenderTLS,
    LeaderElection,
    ReschedulerConfig,
)
from scheduler.config.scheduler_config import API_VERSION, KIND, SchedulerConfig
from scheduler.framework.config_fields import format_duration
from scheduler.framework.profile_config import encode_profile
from scheduler.framework.registry import Registry


def effective_yaml(config: SchedulerConfig, registry: Registry) -> str:
    return yaml.safe_dump(effective(config, registry), sort_keys=False, allow_unicode=True)


def effective(config: SchedulerConfig, registry: Registry) -> dict[str, Any]:
    """Upstream's field order; ``rescheduler`` (ours) last."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": config.parallelism,
        "leaderElection": _leader_election(config.leader_election),
        "clientConnection": _client_connection(config.client_connection),
        # Refused when true (scheduler_config.PROFILING_REFUSED): what runs is false.
        "enableProfiling": False,
        "enableContentionProfiling": False,
        "percentageOfNodesToScore": config.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": int(config.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": int(config.pod_max_backoff_seconds),
        "profiles": [encode_profile(p, registry) for p in config.profiles],
        "extenders": [_extender(e) for e in config.extenders],
        "delayCacheUntilActive": config.delay_cache_until_active,
        "rescheduler": _rescheduler(config.rescheduler),
    }


def _leader_election(le: LeaderElection) -> dict[str, Any]:
    return {
        "leaderElect": le.leader_elect,
        "leaseDuration": format_duration(le.lease_duration),
        "renewDeadline": format_duration(le.renew_deadline),
        "retryPeriod": format_duration(le.retry_period),
        "resourceLock": "leases",
        "resourceName": le.resource_name,
        "resourceNamespace": le.resource_namespace,
    }


def _client_connection(cc: ClientConnection) -> dict[str, Any]:
    return {"kubeconfig": cc.kubeconfig or "", "acceptContentTypes": JSON, "contentType": JSON,
            "qps": cc.qps, "burst": cc.burst}


def _extender(e: ExtenderConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"urlPrefix": e.url_prefix}
    verbs = {"filterVerb": e.filter_verb, "preemptVerb": e.preempt_verb,
             "prioritizeVerb": e.prioritize_verb, "bindVerb": e.bind_verb}
    out.update({key: verb for key, verb in verbs.items() if verb})
    out.update({"weight": e.weight, "enableHTTPS": e.enable_https})
    if e.tls is not None:
        out["tlsConfig"] = _tls(e.tls)
    out.update({
        "httpTimeout": format_duration(e.http_timeout),
        "nodeCacheCapable": e.node_cache_capable,
        "managedResources": [{"name": name, "ignoredByScheduler": name in e.ignored_resources}
                             for name in e.managed_resources],
        "ignorable": e.ignorable,
    })
    return out


def _tls(tls: ExtenderTLS) -> dict[str, Any]:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return {"insecure": tls.insecure, "serverName": tls.server_name,
            "certFile": tls.cert_file, "keyFile": tls.key_file, "caFile": tls.ca_file,
            "certData": b64(tls.cert_data), "keyData": b64(tls.key_data),
            "caData": b64(tls.ca_data)}


def _rescheduler(r: ReschedulerConfig) -> dict[str, Any]:
    return {
        "enabled": r.enabled,
        "dryRun": r.dry_run,
        "interval": format_duration(r.interval),
        "objectives": list(r.objectives),
        "minScoreGain": r.min_score_gain,
        "avoidDuration": format_duration(r.avoid_seconds),
        "moveTimeout": format_duration(r.move_timeout),
        "allowLocalStorage": r.allow_local_storage,
        "limits": {"perNode": r.limits.per_node, "perNamespace": r.limits.per_namespace,
                   "perPass": r.limits.per_pass},
    }
