"""Which pod-group kinds to watch: what the cluster serves, found by discovery at start.

The Workload API (``scheduling.k8s.io/v1beta1`` Workloads and PodGroups) is served only where
kube-apiserver runs with GenericWorkload and that group version in ``--runtime-config`` (beta,
off by default in v1.37); scheduler-plugins' Coscheduling PodGroup
(``scheduling.x-k8s.io/v1alpha1``) only where its CRD is installed. kube-scheduler starts its
PodGroup informers from its own feature gate; a secondary scheduler cannot know the API
server's gates, so it asks discovery, once: a kind served later is watched after a restart,
as scheduler-plugins' informers are.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import structlog

from scheduler.cache.pod_groups import COSCHEDULING_POD_GROUPS, POD_GROUPS, WORKLOADS
from scheduler.operator.kubeapi import KubeApi, api_client_from

log = structlog.get_logger("scheduler.pod_groups")

# A discovery request that failed is asked again this often.
RETRY_SECONDS = 2.0
# Per group version: the resource each watched kind is served as.
GROUP_VERSIONS: Mapping[str, Mapping[str, str]] = {
    "/apis/scheduling.k8s.io/v1beta1": {WORKLOADS: "workloads", POD_GROUPS: "podgroups"},
    "/apis/scheduling.x-k8s.io/v1alpha1": {COSCHEDULING_POD_GROUPS: "podgroups"},
}


def served_pod_group_paths(api: KubeApi) -> dict[str, str] | None:
    """The list path of every pod-group kind the cluster serves, by kind (empty when it
    serves none); None when a discovery request failed and should be asked again."""
    paths: dict[str, str] = {}
    for group_version, kinds in GROUP_VERSIONS.items():
        response = api.get(group_version)
        if response.status == 404:
            continue
        if not response.ok:
            log.warning("Discovery failed", group_version=group_version,
                        status=response.status, reason=response.message())
            return None
        served = {r.get("name") for r in response.body.get("resources") or []}
        paths.update({kind: f"{group_version}/{resource}" for kind, resource in kinds.items()
                      if resource in served})
    log.info("Pod-group kinds served", kinds=sorted(paths),
             not_served=sorted(k for kinds in GROUP_VERSIONS.values() for k in kinds
                               if k not in paths))
    return paths


def discover_pod_group_paths(kubeconfig: str | None) -> dict[str, str]:
    """``served_pod_group_paths`` at start, asked until it answers: the configuration's
    default profile depends on it (GangScheduling, as kube-scheduler's GenericWorkload gate
    adds it), so nothing starts before. KubeconfigError as the app's client."""
    api = KubeApi(api_client_from(kubeconfig, connections=1), qps=0, burst=0)
    while (paths := served_pod_group_paths(api)) is None:
        time.sleep(RETRY_SECONDS)
    return paths
