"""NodeDeclaredFeatures on the local control plane: a pod whose spec needs a node feature goes
only to nodes that declare it in ``status.declaredFeatures``, and waits, explained, until one
does.

The feature is RestartAllContainersOnContainerExits (a container restart rule with action
RestartAllContainers): its gate and ContainerRestartRules are beta and on in v1.37, so the API
server keeps such a pod. Of the other features the registry infers for scheduling,
UserNamespacesHostNetworkSupport and VolumeBindMountOptions are alpha and off: the API server
refuses or drops what would need them. NodeDeclaredFeatures itself is GA and locked on, so the
API server keeps a node's ``status.declaredFeatures``; kwok's status patches leave it alone.
"""

from __future__ import annotations

from typing import Any

from e2e.conftest import Env
from e2e.kube import NODE_SELECTOR_MISMATCH, NODES, node_of, pod_manifest, pods_path, wait_until

FEATURE = "RestartAllContainersOnContainerExits"
NDF_MISMATCH = "node(s) didn't match Pod's required features"


def declare(env: Env, node: str, *features: str) -> None:
    """What the kubelet publishes: the node status's declaredFeatures, sorted."""
    env.kube.patch(f"{NODES}/{node}/status", {"status": {"declaredFeatures": sorted(features)}})
    kept = (env.kube.get(f"{NODES}/{node}") or {}).get("status", {}).get("declaredFeatures")
    assert kept == sorted(features), f"the API server kept {kept!r} of {node}'s declaredFeatures"


def restart_all_pod(
    env: Env, name: str, group: str | None = None, cpu: str = "100m"
) -> dict[str, Any]:
    """A pod needing the feature (a restart rule whose action is RestartAllContainers) that
    selects this test's nodes (``group``: one group of them)."""
    manifest = pod_manifest(name, cpu=cpu, node_selector=env.selector(group))
    container = manifest["spec"]["containers"][0]
    container["restartPolicy"] = "Never"
    container["restartPolicyRules"] = [{
        "action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
    return env.kube.create(pods_path(env.ns), manifest)


def test_a_pod_goes_only_where_its_required_feature_is_declared(env: Env) -> None:
    (declaring,) = env.nodes("declaring", cpu="4")
    env.nodes("plain", 2, cpu="8")
    declare(env, declaring, FEATURE, "SomeFeatureNoSchedulerKnows")

    names = ["needs-it-0", "needs-it-1"]
    for name in names:
        created = restart_all_pod(env, name, cpu="1")
        assert created["spec"]["containers"][0]["restartPolicyRules"], "the API dropped it"
    # Only the node that declares the feature passes, though LeastAllocated would rather
    # have the plain ones, with twice its room (a feature the registry does not know is
    # ignored).
    assert env.wait_all_bound(names) == dict.fromkeys(names, declaring)
    assert not any(env.rec.events_for(name, "FailedScheduling") for name in names)


def test_a_pod_waits_explained_until_a_node_declares_the_feature(env: Env) -> None:
    (target,) = env.nodes("target", cpu="4")
    others = env.nodes("other", 2, cpu="4")
    for other in others:
        declare(env, other, FEATURE)
    restart_all_pod(env, "waits", "target")

    # Every node rejects it without hope: NodeAffinity on the others, NodeDeclaredFeatures
    # (UnschedulableAndUnresolvable) on the target, so preemption is not helpful anywhere.
    expected = env.expected_message(
        {target: NDF_MISMATCH, **dict.fromkeys(others, NODE_SELECTOR_MISMATCH)}, preemption={})
    env.wait_unschedulable("waits", expected)

    def failed_event() -> list[dict[str, Any]]:
        return [e for e in env.rec.events_for("waits", "FailedScheduling")
                if e["note"] == expected]

    wait_until(failed_event, 20, "a FailedScheduling event with the message",
               diagnose=env.diagnose)
    assert not node_of(env.pod("waits"))

    # The node declares it now (a node update of its declared features): the pod is placed.
    declare(env, target, FEATURE)
    assert env.wait_bound("waits", timeout=30) == target
