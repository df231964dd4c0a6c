#!/usr/bin/env python3
"""make deploy-e2e: the image built here, deployed onto a real kubelet node of the local control
plane, first with `kubectl apply -k` and the whole e2e suite run against it
(E2E_SCHEDULER=deployed), then with `helm install` of charts/secondary-scheduler and the
Deployment's own tests (HELM_TESTS) run against that.

Steps: check the prerequisites (printing the install command for what is missing), start
dockerd if it is not running (no bridge, no iptables: builds use the host's network), build the
binaries (kubelet and kubectl included) and the image, start the control plane with upstream
kube-scheduler as the cluster's default scheduler (it places the Deployment's pod, as in a real
cluster) and the real node, `kubectl apply -k` the e2e overlay, wait for the rollout, run the
suite, delete it all, `helm install` the chart with this machine's values (helm_values), run
HELM_TESTS, and take everything down again (--keep leaves it up).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from e2e.cluster.cluster import Cluster, log  # noqa: E402
from e2e.cluster.node import MAX_NODES, NODE_KEY, missing_packages  # noqa: E402

IMAGE = os.environ.get("IMAGE", "secondary-scheduler:dev")
NAMESPACE = "secondary-scheduler"
CHART = REPO / "charts" / "secondary-scheduler"
# What the chart's install is checked with: the Deployment as installed (admission, the running
# pod, take-over, permissions) and placement through it.
HELM_TESTS = ["e2e/test_deployed.py", "e2e/test_placement.py"]


def require_prerequisites() -> None:
    missing = missing_packages()
    if not shutil.which("debootstrap"):
        missing.append("debootstrap")
    if missing:
        sys.exit("make deploy-e2e needs Debian packages; install them with:\n"
                 f"  apt-get install -y {' '.join(sorted(missing))}")


def ensure_dockerd(state: Path) -> subprocess.Popen[bytes] | None:
    """Start dockerd unless one answers; the caller stops the one it started."""
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0:
        return None
    log("starting dockerd (no bridge, no iptables)")
    state.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        ["dockerd", "--bridge=none", "--iptables=false", "--ip6tables=false"],
        stdin=subprocess.DEVNULL, stdout=open(state / "dockerd.log", "ab"),  # noqa: SIM115
        stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while subprocess.run(["docker", "info"], capture_output=True, check=False).returncode:
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit(f"dockerd did not start; see {state / 'dockerd.log'}")
        time.sleep(0.5)
    return proc


def local_overlay(cluster: Cluster) -> Path:
    """The e2e overlay plus what only this machine needs: the pods on the real nodes, and the
    API server's address (no kube-proxy, so the kubernetes Service's ClusterIP leads nowhere)."""
    server = urllib.parse.urlsplit(cluster.status()["server"])
    out = cluster.state_dir / "overlay"
    out.mkdir(parents=True, exist_ok=True)
    (out / "kustomization.yaml").write_text(f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [{os.path.relpath(HERE / "host-network", out)}]
patches:
  - target: {{kind: Deployment, name: secondary-scheduler}}
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: secondary-scheduler, namespace: {NAMESPACE}}}
      spec:
        template:
          spec:
            nodeSelector: {{{NODE_KEY}: "true"}}
            containers:
              - name: scheduler
                env:
                  - {{name: KUBERNETES_SERVICE_HOST, value: "{server.hostname}"}}
                  - {{name: KUBERNETES_SERVICE_PORT, value: "{server.port}"}}
""")
    return out


def helm_values(cluster: Cluster) -> Path:
    """The chart's values for this machine: what local_overlay does to the kustomize base."""
    server = urllib.parse.urlsplit(cluster.status()["server"])
    repository, tag = IMAGE.rsplit(":", 1)
    values = {
        "image": {"repository": f"docker.io/library/{repository}", "tag": tag,
                  "pullPolicy": "Never"},
        "hostNetwork": True,
        "nodeSelector": {NODE_KEY: "true"},
        "tolerations": [{"key": "secondary-scheduler.io/real-node", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "extraArgs": ["--bind-address", "$(POD_IP)"],
        "extraEnv": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "KUBERNETES_SERVICE_HOST", "value": server.hostname},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(server.port)},
        ],
    }
    out = cluster.state_dir / "helm-values.json"
    out.write_text(json.dumps(values, indent=2))
    return out


def helm(cluster: Cluster, *args: str) -> None:
    tools = subprocess.run(["bash", str(REPO / "hack" / "build-tools.sh"), "helm"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.split()[-1]
    argv = [str(Path(tools) / "helm"), "--kubeconfig", str(cluster.kubeconfig_path), *args]
    subprocess.run(argv, check=True)


def run_suite(cluster: Cluster, state_dir: Path, tests: list[str]) -> int:
    env = dict(os.environ, E2E_KUBECONFIG=str(cluster.kubeconfig_path),
               E2E_SCHEDULER="deployed", E2E_CLUSTER_DIR=str(state_dir))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *tests], cwd=REPO, env=env,
                          check=False).returncode


def install_with_helm(cluster: Cluster) -> None:
    """The chart installed where the kustomize base was: the namespace made first, with the
    Pod Security level host networking needs (as e2e/deploy/host-network does)."""
    kubectl(cluster, "create", "namespace", NAMESPACE)
    kubectl(cluster, "label", "namespace", NAMESPACE,
            "pod-security.kubernetes.io/enforce=privileged")
    helm(cluster, "install", "secondary-scheduler", str(CHART), "--namespace", NAMESPACE,
         "--values", str(helm_values(cluster)))


def kubectl(cluster: Cluster, *args: str) -> None:
    argv = [str(cluster.bin_dir() / "kubectl"), "--kubeconfig", str(cluster.kubeconfig_path),
            *args]
    subprocess.run(argv, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="leave the cluster and node up")
    ap.add_argument("--no-helm", action="store_true",
                    help="only the kustomize install, not the chart's after it")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest (default: e2e)")
    args = ap.parse_args(argv)
    require_prerequisites()
    state_dir = Path(os.environ.get("CLUSTER_DIR") or REPO / ".cluster-deploy")
    dockerd = ensure_dockerd(state_dir.parent / ".dockerd")
    cluster = Cluster(state_dir)
    try:
        subprocess.run(["bash", str(REPO / "e2e/cluster/build.sh"), "--with-node"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["make", "-C", str(REPO), "image", f"IMAGE={IMAGE}"], check=True)
        t0 = time.monotonic()
        cluster.up(with_kube_scheduler=True)
        cluster.start_nodes([IMAGE], MAX_NODES)
        overlay = local_overlay(cluster)
        kubectl(cluster, "apply", "-k", str(overlay))
        kubectl(cluster, "-n", NAMESPACE, "rollout", "status", "deployment/secondary-scheduler",
                "--timeout=180s")
        log(f"deployed and Ready {time.monotonic() - t0:.1f}s after the cluster started")
        failed = run_suite(cluster, state_dir, args.pytest_args or ["e2e"])
        if args.no_helm:
            return failed
        kubectl(cluster, "delete", "-k", str(overlay), "--wait=true", "--ignore-not-found")
        install_with_helm(cluster)
        kubectl(cluster, "-n", NAMESPACE, "rollout", "status", "deployment/secondary-scheduler",
                "--timeout=180s")
        log("installed with helm and Ready")
        return failed or run_suite(cluster, state_dir, HELM_TESTS)
    finally:
        if not args.keep:
            cluster.down()
            if dockerd is not None:
                dockerd.terminate()
                dockerd.wait(30)


if __name__ == "__main__":
    sys.exit(main())
