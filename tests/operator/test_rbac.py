"""The scheduler's RBAC (manifests/rbac.yaml) as upstream's system:kube-scheduler: every rule
granted to its ServiceAccount is here with the reason it is needed, and nothing more. Leases
only in its namespace and by name; TokenReview/SubjectAccessReview through
system:auth-delegator; the client CA through extension-apiserver-authentication-reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SA = ("secondary-scheduler", "secondary-scheduler")

# (namespace or "" for cluster-wide, api group, resource, verb, resource name or "") -> why.
REASONS = {
    **{("", "", r, v, ""): "the cache: informers of pods, nodes and namespaces (list+watch), "
       "and the pod explain and the binding read (get)"
       for r in ("pods", "nodes", "namespaces") for v in ("get", "list", "watch")},
    **{("", "policy", "poddisruptionbudgets", v, ""): "DefaultPreemption respects PDBs"
       for v in ("get", "list", "watch")},
    **{("", "scheduling.k8s.io", "priorityclasses", v, ""): "a pod's priority from its class"
       for v in ("get", "list", "watch")},
    **{("", "", r, v, ""): "VolumeBinding: claims and volumes read, claimRef and "
       "selected-node written (update)"
       for r in ("persistentvolumeclaims", "persistentvolumes")
       for v in ("get", "list", "watch", "update")},
    **{("", "storage.k8s.io", r, v, ""): "the volume plugins' inputs"
       for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities")
       for v in ("get", "list", "watch")},
    **{("", "scheduling.k8s.io", r, v, ""): "gang scheduling: the Workload API's pod groups "
       "(and Workloads, for explain) where GenericWorkload serves them"
       for r in ("workloads", "podgroups") for v in ("get", "list", "watch")},
    **{("", "scheduling.k8s.io", "podgroups/status", v, ""): "the PodGroupInitiallyScheduled "
       "condition, as kube-scheduler writes it" for v in ("patch", "update")},
    **{("", "scheduling.x-k8s.io", "podgroups", v, ""): "gang scheduling: Coscheduling's "
       "PodGroups where scheduler-plugins' CRD is installed" for v in ("get", "list", "watch")},
    **{("", "scheduling.x-k8s.io", "podgroups/status", v, ""): "the Coscheduling PodGroup "
       "status its users read (phase, running)" for v in ("patch", "update")},
    **{("", "resource.k8s.io", r, v, ""): "DynamicResources: the devices, their classes "
       "and taint rules" for r in ("deviceclasses", "resourceslices", "devicetaintrules")
       for v in ("get", "list", "watch")},
    **{("", "resource.k8s.io", "resourceclaims", v, ""): "DynamicResources: claims read, "
       "allocated and reserved, created and deleted for DRA-backed extended resources"
       for v in ("get", "list", "watch", "update", "patch", "create", "delete")},
    **{("", "resource.k8s.io", "resourceclaims/status", v, ""): "DynamicResources writes a "
       "claim's allocation and reservedFor" for v in ("get", "list", "watch", "update", "patch")},
    **{("", "resource.k8s.io", "resourceclaims/binding", v, ""): "DynamicResources: the "
       "claim's binding fields (DRAResourceClaimGranularStatusAuthorization, on in v1.37)"
       for v in ("update", "patch")},
    ("", "", "pods/finalizers", "update", ""): "the extended-resource claim's owner reference "
       "to its pod blocks the pod's deletion",
    ("", "", "pods/binding", "create", ""): "DefaultBinder binds",
    ("", "", "pods/eviction", "create", ""): "preemption evicts its victims",
    ("", "", "pods/status", "patch", ""): "the PodScheduled condition and nominatedNodeName",
    ("", "", "pods/status", "update", ""): "the PodScheduled condition and nominatedNodeName",
    ("", "", "pods", "delete", ""): "BestEffort preemption deletes a victim a PDB protects",
    **{("", g, "events", v, ""): "Scheduled/FailedScheduling/Preempted Events, as series"
       for g in ("", "events.k8s.io") for v in ("create", "patch", "update")},
    ("secondary-scheduler", "coordination.k8s.io", "leases", "create", ""):
        "leader election creates its Lease the first time (RBAC cannot name a create)",
    ("secondary-scheduler", "coordination.k8s.io", "leases", "get", "secondary-scheduler"):
        "leader election reads its own Lease",
    ("secondary-scheduler", "coordination.k8s.io", "leases", "update", "secondary-scheduler"):
        "leader election renews, takes over and releases its own Lease",
    ("", "authentication.k8s.io", "tokenreviews", "create", ""):
        "the secure port authenticates bearer tokens (system:auth-delegator)",
    ("", "authorization.k8s.io", "subjectaccessreviews", "create", ""):
        "the secure port authorizes callers (system:auth-delegator)",
    **{("kube-system", "", "configmaps", v, "extension-apiserver-authentication"):
       "the client CA for client certificates (read at start; list and watch come with the "
       "built-in reader Role)" for v in ("get", "list", "watch")},
}
# The built-in roles the manifests bind, as the API server's bootstrap policy defines them.
BUILT_IN = {
    ("ClusterRole", "system:auth-delegator"): [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
         "verbs": ["create"]}],
    ("Role", "extension-apiserver-authentication-reader"): [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
         "resourceNames": ["extension-apiserver-authentication"]}],
}


def documents() -> list[dict[str, Any]]:
    out = []
    for path in sorted((REPO / "manifests").rglob("*.yaml")):
        # Kubernetes objects only (not kustomizations, not the scheduler's configuration).
        out += [d for d in yaml.safe_load_all(path.read_text())
                if isinstance(d, dict) and "metadata" in d]
    return out


def granted() -> set[tuple[str, str, str, str, str]]:
    """Every (namespace, group, resource, verb, name) the scheduler's ServiceAccount gets."""
    docs = documents()
    roles = {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", "")): d["rules"]
             for d in docs if d.get("kind") in ("Role", "ClusterRole")}
    out = set()
    for binding in docs:
        if binding.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any((s.get("namespace"), s["name"]) == SA for s in binding["subjects"]):
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace", "")
        rules = roles.get((ref["kind"], ref["name"], namespace if ref["kind"] == "Role" else ""))
        if rules is None:
            rules = BUILT_IN[(ref["kind"], ref["name"])]
        for rule in rules:
            names = rule.get("resourceNames") or [""]
            out |= {(namespace, group, resource, verb, name)
                    for group in rule["apiGroups"] for resource in rule["resources"]
                    for verb in rule["verbs"] for name in names}
    return out


def test_every_rule_has_its_reason_and_every_reason_its_rule() -> None:
    rules = granted()
    assert sorted(rules - set(REASONS)) == []
    assert sorted(set(REASONS) - rules) == []


def test_no_rule_grants_leases_cluster_wide_or_another_lease() -> None:
    leases = [r for r in granted() if r[2] == "leases"]
    assert leases and all(ns == "secondary-scheduler" for ns, *_ in leases)
    assert all(name == "secondary-scheduler" for _, _, _, verb, name in leases
               if verb != "create")


def test_the_lease_role_names_the_configured_lease() -> None:
    config = yaml.safe_load((REPO / "manifests" / "config.yaml").read_text())
    election = config["leaderElection"]
    (role,) = [d for d in documents() if d.get("kind") == "Role"
               and d["metadata"]["name"] == "secondary-scheduler-lease"]
    assert role["metadata"]["namespace"] == election["resourceNamespace"]
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                      "resourceNames": [election["resourceName"]], "verbs": ["get", "update"]}]


def test_metrics_and_explain_roles_grant_only_their_path() -> None:
    roles = {d["metadata"]["name"]: d["rules"] for d in documents()
             if d.get("kind") == "ClusterRole"}
    assert roles["secondary-scheduler:metrics-reader"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert roles["secondary-scheduler:explain"] == [
        {"nonResourceURLs": ["/debug/explain"], "verbs": ["get"]}]


def test_kustomize_keeps_the_kube_system_binding_where_it_is() -> None:
    """A kustomization-wide namespace would rewrite every namespaced object's, the RoleBinding
    to extension-apiserver-authentication-reader in kube-system included."""
    kustomization = yaml.safe_load((REPO / "manifests" / "kustomization.yaml").read_text())
    assert "namespace" not in kustomization
    namespaced = [d for d in documents() if d.get("kind") not in (
        "Namespace", "ClusterRole", "ClusterRoleBinding")]
    assert all(d["metadata"].get("namespace") for d in namespaced)
