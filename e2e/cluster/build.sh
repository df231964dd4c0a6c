#!/usr/bin/env bash
# Build (or find in the cache) the local control-plane binaries from upstream Go
# modules through the Go module proxy: etcd, kube-apiserver, kube-controller-manager,
# kwok and kube-scheduler (kube-scheduler adds only ~11 s to a cold build, since it
# shares almost all packages with the other two, so it is built by default).
#
# Usage: e2e/cluster/build.sh [--no-kube-scheduler | --only-kube-scheduler] [--with-node]
#   --with-node: also kubelet and kubectl (the real node of e2e/cluster/node.py, make deploy-e2e)
#   and the pause binary of its sandbox image.
#   The last line on stdout is the bin dir. Everything else goes to stderr.
#   Idempotent: a warm run finds the cached binaries and returns in well under a second.
# Env: SECONDARY_SCHEDULER_CACHE (default ~/.cache/secondary-scheduler)
#      BUILD_KUBE_SCHEDULER=0 same as --no-kube-scheduler
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

WANT_CORE=1
WANT_SCHED="${BUILD_KUBE_SCHEDULER:-1}"
WANT_NODE=0
for a in "$@"; do
  case "$a" in
    --with-kube-scheduler) WANT_SCHED=1 ;;   # the default; kept for compatibility
    --no-kube-scheduler) WANT_SCHED=0 ;;
    --only-kube-scheduler) WANT_SCHED=1; WANT_CORE=0 ;;
    --with-node) WANT_NODE=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done

CACHE="${SECONDARY_SCHEDULER_CACHE:-$HOME/.cache/secondary-scheduler}"
KEY="${K8S_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}"
BIN="$CACHE/bin/$KEY"
WORK="$CACHE/build/$KEY"
mkdir -p "$BIN" "$WORK"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
log() { echo "[build.sh $(date +%H:%M:%S)] $*" >&2; }

# Bump when the build recipe (flags, tags, ldflags) changes: forces a rebuild.
RECIPE=1
# Stamp = recipe + Go version + pinned versions + our wrapper sources; the bin dir key
# holds the upstream versions, the stamp catches everything else.
SRC_HASH="$( { echo "recipe=$RECIPE"; go version; cat "$HERE/versions.env" "$HERE"/wrappers/*/*; } | sha256sum | cut -c1-16)"

have() { # have NAME... : all binaries present and stamped with the current source hash
  local n
  for n in "$@"; do
    [[ -x "$BIN/$n" && -f "$BIN/.$n.stamp" && "$(cat "$BIN/.$n.stamp")" == "$SRC_HASH" ]] || return 1
  done
}
stamp() { local n; for n in "$@"; do echo "$SRC_HASH" > "$BIN/.$n.stamp"; done; }

# build_pkgs DIR LDFLAGS NAME=PKG... : go build into a temp dir, then move the
# binaries into $BIN (rename = atomic, so an interrupted build leaves no half binary).
build_pkgs() {
  local dir="$1" ld="$2"; shift 2
  local tmp; tmp="$(mktemp -d "$BIN/.tmp.XXXXXX")"
  local pair pkgs=()
  for pair in "$@"; do pkgs+=("${pair#*=}"); done
  if [[ ${#pkgs[@]} -eq 1 ]]; then
    ( cd "$dir" && go build -trimpath -tags=selinux,notest -ldflags "$ld" -o "$tmp/${1%%=*}" "${pkgs[0]}" ) >&2
  else
    ( cd "$dir" && go build -trimpath -tags=selinux,notest -ldflags "$ld" -o "$tmp/" "${pkgs[@]}" ) >&2
  fi
  for pair in "$@"; do mv -f "$tmp/${pair%%=*}" "$BIN/"; done
  rm -rf "$tmp"
}

# ---------------------------------------------------------------- etcd
build_etcd() {
  have etcd && { log "etcd: cached"; return; }
  log "etcd $ETCD_VERSION: generating wrapper module"
  local d="$WORK/etcd"; rm -rf "$d"; mkdir -p "$d"
  cp "$HERE/wrappers/etcd/main.go" "$d/"
  ( cd "$d"
    go mod init local/secondary-scheduler/etcd-bin
    go mod edit -go=1.26.0
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go mod tidy ) >&2
  log "etcd: building"
  build_pkgs "$d" "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ETCD_VERSION" etcd=.
  stamp etcd
}

# ---------------------------------------------------------------- kwok
build_kwok() {
  have kwok && { log "kwok: cached"; return; }
  log "kwok $KWOK_VERSION: generating wrapper module"
  local d="$WORK/kwok"; rm -rf "$d"; mkdir -p "$d"
  ( cd "$d"
    go mod init local/secondary-scheduler/kwok-bin
    go mod edit -go=1.26.0 -require="sigs.k8s.io/kwok@$KWOK_VERSION" -tool=sigs.k8s.io/kwok/cmd/kwok
    go mod tidy ) >&2
  log "kwok: building"
  build_pkgs "$d" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.PreRelease=GA" \
    kwok=sigs.k8s.io/kwok/cmd/kwok
  stamp kwok
}

# ---------------------------------------------------------------- kubernetes
k8s_module() {
  local d="$WORK/k8s"
  if [[ -f "$d/go.mod" && -f "$d/.done" && "$(cat "$d/.done")" == "$SRC_HASH" ]]; then return; fi
  log "kubernetes $K8S_VERSION: generating wrapper module"
  rm -rf "$d"; mkdir -p "$d"
  ( cd "$d"
    go mod init local/secondary-scheduler/k8s-bins
    go mod edit -go=1.26.0
    bash "$HERE/wrappers/k8s/gen-replaces.sh" "$K8S_VERSION"
    go mod edit \
      -tool=k8s.io/kubernetes/cmd/kube-apiserver \
      -tool=k8s.io/kubernetes/cmd/kube-controller-manager \
      -tool=k8s.io/kubernetes/cmd/kube-scheduler
    go mod tidy ) >&2
  echo "$SRC_HASH" > "$d/.done"
}

k8s_ldflags() {
  local v="$K8S_VERSION" maj min
  maj="$(echo "${v#v}" | cut -d. -f1)"; min="$(echo "${v#v}" | cut -d. -f2)"
  local x=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$maj -X $pkg.gitMinor=$min"
    x+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$x"
}

build_k8s_core() {
  have kube-apiserver kube-controller-manager && { log "kube-apiserver, kube-controller-manager: cached"; return; }
  k8s_module
  log "kube-apiserver + kube-controller-manager: building"
  build_pkgs "$WORK/k8s" "$(k8s_ldflags)" \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager
  stamp kube-apiserver kube-controller-manager
}

build_k8s_sched() {
  have kube-scheduler && { log "kube-scheduler: cached"; return; }
  k8s_module
  log "kube-scheduler: building"
  build_pkgs "$WORK/k8s" "$(k8s_ldflags)" kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
  stamp kube-scheduler
}

# kubelet and kubectl: their packages are already in the wrapper module's graph, so this is
# mostly linking (~1 min warm). The version ldflags matter: without them the node reports
# kubeletVersion v0.0.0-master. pause: the sandbox image's only binary, a static Go program.
build_node() {
  if have kubelet kubectl pause; then log "kubelet, kubectl, pause: cached"; return; fi
  k8s_module
  log "kubelet + kubectl: building"
  build_pkgs "$WORK/k8s" "$(k8s_ldflags)" \
    kubelet=k8s.io/kubernetes/cmd/kubelet kubectl=k8s.io/kubernetes/cmd/kubectl
  log "pause: building"
  local d="$WORK/pause"; rm -rf "$d"; mkdir -p "$d"
  cp "$HERE/pause/main.go" "$d/"
  ( cd "$d" && go mod init local/secondary-scheduler/pause && go mod edit -go=1.26.0 ) >&2
  build_pkgs "$d" "-s -w" pause=.
  stamp kubelet kubectl pause
}

t0=$SECONDS
if [[ "$WANT_CORE" == 1 ]]; then
  s=$SECONDS; build_etcd;       log "etcd step: $((SECONDS-s))s"
  s=$SECONDS; build_kwok;       log "kwok step: $((SECONDS-s))s"
  s=$SECONDS; build_k8s_core;   log "apiserver+kcm step: $((SECONDS-s))s"
fi
if [[ "$WANT_SCHED" == 1 ]]; then
  s=$SECONDS; build_k8s_sched;  log "kube-scheduler step: $((SECONDS-s))s"
fi
if [[ "$WANT_NODE" == 1 ]]; then
  s=$SECONDS; build_node;       log "node step: $((SECONDS-s))s"
fi
log "done in $((SECONDS-t0))s"
echo "$BIN"
