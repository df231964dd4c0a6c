#!/usr/bin/env bash
# Prepare a kind cluster (current kubectl context) for the e2e suite: kwok fake nodes with a
# pod-delete stage that honours grace periods, and DaemonSets kept off the fake nodes.
# Used by `make kind-e2e` and .github/workflows/ci.yml.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source e2e/cluster/versions.env

# kindnet and kube-proxy tolerate every taint: their pods would land on the kwok nodes the
# tests create and use up the capacity the tests account for.
patch='{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"type","operator":"NotIn","values":["kwok"]}]}]}}}}}}}'
kubectl get daemonsets -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' |
  while read -r ns name; do
    kubectl -n "$ns" patch daemonset "$name" --type=strategic -p "$patch"
  done

base="https://github.com/kubernetes-sigs/kwok/releases/download/${KWOK_VERSION}"
kubectl apply -f "${base}/kwok.yaml"
kubectl wait --for=condition=Established --timeout=60s crd/stages.kwok.x-k8s.io
kubectl apply -f "${base}/stage-fast.yaml"
# The release's fast pod-delete stage removes a deleted pod at once; ours waits for
# metadata.deletionTimestamp, i.e. honours the grace period as a kubelet does. The
# preemption tests depend on it (victims terminate gracefully).
kubectl apply -f e2e/cluster/stages/pod-delete.yaml
kubectl -n kube-system rollout status deployment/kwok-controller --timeout=180s
