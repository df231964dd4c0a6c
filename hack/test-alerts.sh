#!/usr/bin/env bash
# Check the PrometheusRule's groups with promtool and run their unit tests (tests/alerts/).
# Usage: hack/test-alerts.sh PROMTOOL PYTHON
set -euo pipefail
promtool="$1" python="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
# promtool reads plain rule files: the PrometheusRule's spec is one.
"$python" - "$here/manifests/components/metrics/prometheusrule.yaml" "$tmp/rules.yaml" <<'PY'
import sys, yaml
with open(sys.argv[1]) as f:
    spec = yaml.safe_load(f)["spec"]
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(spec, f, sort_keys=False)
PY
cp "$here"/tests/alerts/*_test.yaml "$tmp/"
"$promtool" check rules "$tmp/rules.yaml"
"$promtool" test rules "$tmp"/*_test.yaml
