"""The chart and the kustomize base install the same objects: one source of truth, checked.

Usage: python hack/check-chart.py HELM

Renders charts/secondary-scheduler with its default values (release and namespace
"secondary-scheduler", the metrics objects switched on) and manifests/ with the metrics
component, and compares them object by object. The chart's own bookkeeping (Helm's labels,
the configuration checksum that rolls the pods) is set aside, and so is the Namespace, which a
chart leaves to `helm install --create-namespace`. Any other difference is printed as a diff
and fails `make lint`.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "manifests"
CHART = ROOT / "charts" / "secondary-scheduler"
RELEASE = NAMESPACE = "secondary-scheduler"
CHART_ONLY_KEYS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "checksum/config",
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace"}


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """The objects of a kustomization, for the features manifests/ uses."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        if path.is_dir():
            objects += kustomize(path)
        else:
            objects += [o for o in yaml.safe_load_all(path.read_text()) if o]
    for component in spec.get("components", []):
        objects += kustomize(directory / component)
    for generator in spec.get("configMapGenerator", []):
        data = {Path(f).name: (directory / f).read_text() for f in generator["files"]}
        metadata = {"name": generator["name"]}
        if "namespace" in generator:
            metadata["namespace"] = generator["namespace"]
        objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
                        "data": data})
    for label in spec.get("labels", []):
        if label.get("includeSelectors") or label.get("includeTemplates"):
            raise SystemExit("check-chart: only labels without selectors or templates are read")
        for o in objects:
            o["metadata"].setdefault("labels", {}).update(label["pairs"])
    namespace = spec.get("namespace")
    if namespace:
        for o in objects:
            if o["kind"] not in CLUSTER_SCOPED:
                o["metadata"]["namespace"] = namespace
    return objects


def with_metrics(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return objects + kustomize(BASE / "components" / "metrics")


def kube_version() -> str:
    """The Kubernetes version the e2e suite runs (helm template assumes an old one)."""
    for line in (ROOT / "e2e" / "cluster" / "versions.env").read_text().splitlines():
        if line.startswith("K8S_VERSION="):
            return line.split("=", 1)[1].strip()
    raise SystemExit("check-chart: no K8S_VERSION in e2e/cluster/versions.env")


def helm_template(helm: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE,
         "--kube-version", kube_version(),
         "--set", "metrics.serviceMonitor.enabled=true",
         "--set", "metrics.prometheusRule.enabled=true"],
        capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"check-chart: helm template failed:\n{done.stderr}")
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def normalized(value: Any) -> Any:
    """The object without the chart's bookkeeping, configurations compared as parsed YAML."""
    if isinstance(value, dict):
        kept = {k: normalized(v) for k, v in value.items() if k not in CHART_ONLY_KEYS}
        return {k: v for k, v in kept.items() if v != {} or k not in ("annotations", "labels")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def config_parsed(o: dict[str, Any]) -> dict[str, Any]:
    if o["kind"] == "ConfigMap":
        o["data"] = {k: yaml.safe_load(v) for k, v in o["data"].items()}
    return o


def keyed(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": normalized(config_parsed(o))
            for o in objects if o["kind"] != "Namespace"}


def main() -> int:
    base = keyed(with_metrics(kustomize(BASE)))
    chart = keyed(helm_template(sys.argv[1]))
    failed = False
    for key in sorted(base.keys() | chart.keys()):
        left = yaml.safe_dump(base.get(key), sort_keys=True).splitlines()
        right = yaml.safe_dump(chart.get(key), sort_keys=True).splitlines()
        if left != right:
            failed = True
            print(f"{key}: manifests/ and the chart differ")
            print("\n".join(difflib.unified_diff(left, right, "manifests", "chart", lineterm="")))
    if not failed:
        print(f"check-chart: the chart and manifests/ agree on {len(base)} objects")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
