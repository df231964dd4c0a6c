#!/usr/bin/env bash
# Build (or find in the cache) the release-kit tools from their upstream Go modules, as
# e2e/cluster/build.sh builds the control plane: helm (chart lint, template and install),
# actionlint (the GitHub workflows) and promtool (the alerting rules' unit tests).
#
# Usage: hack/build-tools.sh [helm|actionlint|promtool]...   (default: all three)
#   The last line on stdout is the bin dir; build output goes to stderr.
#   Idempotent: a warm run finds the cached binaries at once.
# Env: SECONDARY_SCHEDULER_CACHE (default ~/.cache/secondary-scheduler)
set -euo pipefail

HELM_VERSION=v3.22.0
ACTIONLINT_VERSION=v1.7.12
PROMETHEUS_VERSION=v0.316.0   # Go module version of Prometheus 3.x's promtool

CACHE="${SECONDARY_SCHEDULER_CACHE:-$HOME/.cache/secondary-scheduler}"
BIN="$CACHE/tools/helm-$HELM_VERSION-actionlint-$ACTIONLINT_VERSION-prometheus-$PROMETHEUS_VERSION"
mkdir -p "$BIN"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
log() { echo "[build-tools.sh $(date +%H:%M:%S)] $*" >&2; }

# build NAME MODULE@VERSION PACKAGE: `go install` into a scratch GOBIN, then an atomic move.
build() {
  local name="$1" mod="$2" pkg="$3"
  [[ -x "$BIN/$name" ]] && { log "$name: cached"; return; }
  log "$name: building $pkg from $mod"
  local tmp; tmp="$(mktemp -d "$BIN/.tmp.XXXXXX")"
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "$pkg@${mod##*@}" >&2
  mv -f "$tmp/$name" "$BIN/$name"
  rm -rf "$tmp"
}

want=("$@"); ((${#want[@]})) || want=(helm actionlint promtool)
for t in "${want[@]}"; do
  case "$t" in
    helm) build helm "helm.sh/helm/v3@$HELM_VERSION" helm.sh/helm/v3/cmd/helm ;;
    actionlint) build actionlint "github.com/rhysd/actionlint@$ACTIONLINT_VERSION" \
                  github.com/rhysd/actionlint/cmd/actionlint ;;
    promtool) build promtool "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" \
                github.com/prometheus/prometheus/cmd/promtool ;;
    *) echo "unknown tool: $t" >&2; exit 2 ;;
  esac
done
echo "$BIN"
