"""Real kubelet nodes beside the kwok nodes: containerd + runc from Debian, kubelet built
like the other components, host networking only, every address on loopback.

The scheduler's own pods run here (make deploy-e2e); the nodes are tainted so that nothing
else lands on them, and the kwok nodes stay the scheduling targets. Node i is
``real-node-i`` at 127.0.0.(i+1), with its own containerd, state directory and kubelet ports,
so that two host-network replicas can each listen on their own node's address. The recipe,
and the reason for each setting, is ../shared/reference/local-kubelet-node.md; in short:

- containerd clamps every oom_score_adj to its own (``restrict_oom_score_adj``): root here has
  no CAP_SYS_RESOURCE, so runc would fail on the kubelet's -998 for pod sandboxes;
- the CNI config is loopback only (the CRI plugin needs one; host-network pods never use it);
- the kubelet refuses a loopback node IP, so the node's address is published once by hand
  (InternalIP 127.0.0.1 only: a Hostname address would send the API server to DNS);
- the sandbox image is a local ``FROM scratch`` image of a static pause binary (build.sh);
- no QoS cgroups (cgroupsPerQOS false): two kubelets on one host would otherwise share
  /kubepods, and each removes the pod cgroups it does not know.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from e2e.cluster.cluster import Cluster

# Taint and label of every real node: only pods that tolerate it land there, and they select it.
NODE_KEY = "secondary-scheduler.io/real-node"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
KUBELET_PORT, KUBELET_HEALTHZ_PORT = 10350, 10348  # node i adds 10 * i
MAX_NODES = 2


def components(index: int) -> tuple[str, str]:
    """The cluster's process names for node ``index``: its containerd and its kubelet."""
    return f"containerd-{index}", f"kubelet-{index}"
CNI_BIN = Path("/usr/lib/cni")
PACKAGES = {  # what the node needs from Debian, by the command or file that shows it is there
    "containerd": "containerd", "runc": "runc", "ctr": "containerd",
    "iptables": "iptables", "conntrack": "conntrack",
    str(CNI_BIN / "loopback"): "containernetworking-plugins", "dockerd": "docker.io",
}


class NodeError(RuntimeError):
    pass


def missing_packages() -> list[str]:
    """Debian packages the node needs that are not installed."""
    missing = {pkg for probe, pkg in PACKAGES.items()
               if not (Path(probe).exists() if probe.startswith("/") else shutil.which(probe))}
    return sorted(missing)


def require_packages() -> None:
    missing = missing_packages()
    if missing:
        raise NodeError("the real node needs Debian packages; install them with: "
                        f"apt-get install -y {' '.join(missing)}")


class RealNode:
    def __init__(self, cluster: Cluster, index: int = 0) -> None:
        self.cluster = cluster
        self.name = f"real-node-{index}"
        self.ip = f"127.0.0.{index + 1}"
        self.ports = (KUBELET_PORT + 10 * index, KUBELET_HEALTHZ_PORT + 10 * index)
        self.containerd, self.kubelet = components(index)
        self.dir = cluster.state_dir / self.name
        self.sock = self.dir / "containerd.sock"

    # -- up -------------------------------------------------------------------------------
    def up(self, images: list[str], timeout: float = 120.0) -> None:
        """Start containerd and the kubelet, load ``images`` (local Docker images) and the
        pause image, and wait for the node to be Ready with its address published."""
        require_packages()
        bins = self.cluster.bin_dir()
        if not (bins / "kubelet").exists():
            raise NodeError(f"no kubelet in {bins}: run e2e/cluster/build.sh --with-node")
        for sub in ("cni", "manifests", "podlogs", "kubelet", "pki", "containerd"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._write_configs()
        self.cluster._start(self.containerd, ["containerd", "--config",
                                              str(self.dir / "containerd.toml")])
        self.cluster._wait(self.containerd, lambda: self._ctr("version").returncode == 0,
                           timeout, [self.containerd])
        self._load_images([*images, self._pause_image(bins)])
        self.cluster._start(self.kubelet, [
            str(bins / "kubelet"), "--config", str(self.dir / "kubelet.yaml"),
            "--kubeconfig", str(self.cluster.kubeconfig_path),
            "--hostname-override", self.name, "--root-dir", str(self.dir / "kubelet"),
            "--node-labels", f"{NODE_KEY}=true",
            "--cert-dir", str(self.dir / "pki"), "--node-ip", self.ip, "--v=1"])
        api = self.cluster.core_api()
        self.cluster._wait(f"{self.name} Ready", lambda: self._ready(api), timeout,
                           [self.containerd, self.kubelet])
        api.patch_node_status(self.name, [{"op": "replace", "path": "/status/addresses",
                                           "value": [{"type": "InternalIP",
                                                      "address": self.ip}]}])

    def _write_configs(self) -> None:
        d = self.dir
        (d / "cni" / "10-lo.conflist").write_text(json.dumps(
            {"cniVersion": "0.4.0", "name": "lo-only", "plugins": [{"type": "loopback"}]}))
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        (d / "containerd.toml").write_text(f"""version = 2
root = "{d / 'containerd' / 'root'}"
state = "{d / 'containerd' / 'state'}"
[grpc]
  address = "{self.sock}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / 'containerd' / 'opt'}"
[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{d / 'cni'}"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{d / 'runc'}"
""")
        kubelet: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "cgroupDriver": "cgroupfs", "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            # The API server reaches the kubelet (logs, exec) without a client certificate;
            # acceptable only because the kubelet listens on a loopback address.
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "address": self.ip, "port": self.ports[0],
            "healthzBindAddress": self.ip, "healthzPort": self.ports[1],
            "readOnlyPort": 0, "failSwapOn": False,
            "registerWithTaints": [{"key": NODE_KEY, "effect": "NoSchedule"}],
            "staticPodPath": str(d / "manifests"), "podLogsDir": str(d / "podlogs"),
            "evictionHard": {}, "localStorageCapacityIsolation": False,
        }
        (d / "kubelet.yaml").write_text(json.dumps(kubelet, indent=2))

    def _ctr(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["ctr", "-a", str(self.sock), *args], capture_output=True,
                              check=False, **kw)

    def _pause_image(self, bins: Path) -> str:
        with tempfile.TemporaryDirectory() as ctx:
            shutil.copy(bins / "pause", Path(ctx) / "pause")
            (Path(ctx) / "Dockerfile").write_text(
                'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n')
            _run(["docker", "build", "-q", "-t", PAUSE_IMAGE, ctx])
        return PAUSE_IMAGE

    def _load_images(self, images: list[str]) -> None:
        """docker save | ctr import, into the namespace the CRI plugin reads (k8s.io)."""
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "images.tar"
            _run(["docker", "save", "-o", str(tar), *images])
            result = self._ctr("-n", "k8s.io", "images", "import", str(tar))
            if result.returncode != 0:
                raise NodeError(f"ctr images import: {result.stderr.decode(errors='replace')}")

    def _ready(self, api: Any) -> bool:
        try:
            node = api.read_node(self.name)
        except Exception:
            return False
        return any(c.type == "Ready" and c.status == "True"
                   for c in node.status.conditions or [])

    # -- down -----------------------------------------------------------------------------
    def drain(self, timeout: float = 30.0) -> None:
        """Before the kubelet stops: its pods deleted and their containers gone, so that no
        container outlives the node (containerd's shims are not its children)."""
        with contextlib.suppress(Exception):
            api = self.cluster.core_api()
            # Cordoned first, so that no replacement pod is placed here meanwhile.
            api.patch_node(self.name, {"spec": {"unschedulable": True}})
            for pod in api.list_pod_for_all_namespaces(
                    field_selector=f"spec.nodeName={self.name}").items:
                with contextlib.suppress(Exception):
                    api.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace,
                                              grace_period_seconds=0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tasks = self._ctr("-n", "k8s.io", "tasks", "ls", "-q")
            if tasks.returncode != 0 or not tasks.stdout.strip():
                return
            time.sleep(0.25)

    def cleanup(self) -> None:
        """After the kubelet and containerd are stopped: any shim of ours still running (and
        its containers) and the mounts left under the state directory (deepest first)."""
        if not self.dir.exists():
            return
        self._kill_shims()
        prefix = str(self.dir.resolve())
        with open("/proc/self/mounts") as mounts:
            points = [line.split()[1] for line in mounts]
        for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)

    def _kill_shims(self) -> None:
        """Shims started by this node's containerd (its socket is on their command line),
        and their children: found through /proc, never by name alone."""
        sock = str(self.sock).encode()
        parents: dict[int, int] = {}
        shims: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes()
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1]
                                               .split()[1])
                if b"containerd-shim" in cmdline and sock in cmdline:
                    shims.add(int(entry.name))
        victims = shims | {pid for pid, ppid in parents.items() if ppid in shims}
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, check=False)
    if result.returncode != 0:
        raise NodeError(f"{' '.join(argv[:3])}: {result.stderr.decode(errors='replace')[-2000:]}")

