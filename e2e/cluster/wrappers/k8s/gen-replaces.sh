#!/usr/bin/env bash
# Run inside a freshly `go mod init`ed wrapper module. Reads the published
# k8s.io/kubernetes@$1 go.mod through the module proxy and pins every staging
# module (required there at v0.0.0, replaced with ./staging/src/...) to its
# published v0.<minor>.<patch> tag. Also copies upstream's godebug lines.
set -euo pipefail
K8S="$1"; STG="v0.${K8S#v1.}"          # v1.37.2 -> v0.37.2
MODFILE="$(go mod download -json "k8s.io/kubernetes@$K8S" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
mods="$(sed -n 's|^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*|\1|p' "$MODFILE")"
[[ -n "$mods" ]] || { echo "no staging replaces found in $MODFILE" >&2; exit 1; }
args=()
for m in $mods; do args+=("-replace=$m=$m@$STG"); done
go mod edit "${args[@]}" -require="k8s.io/kubernetes@$K8S"
n=$(echo "$mods" | wc -w); echo "gen-replaces: $n staging modules pinned to $STG" >&2
# godebug lines of dependencies are ignored by go; copy upstream's into ours.
grep -E '^godebug[[:space:]]' "$MODFILE" | sed -E 's/^godebug[[:space:]]+//' | while read -r kv; do
  go mod edit -godebug="$kv"
done
