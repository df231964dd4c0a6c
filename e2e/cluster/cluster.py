#!/usr/bin/env python3
"""Local Kubernetes control plane for e2e tests: etcd + kube-apiserver +
kube-controller-manager + kwok (+ optional kube-scheduler), all on 127.0.0.1.

CLI:
    python3 e2e/cluster/cluster.py up [--nodes SPEC.yaml] [--with-kube-scheduler]
                                      [--with-node IMAGE ... [--real-nodes 2]]
    python3 e2e/cluster/cluster.py down
    python3 e2e/cluster/cluster.py status
    python3 e2e/cluster/cluster.py nodes SPEC.yaml | --delete-all | (no arg: list)

Python API (for a pytest session fixture):
    from e2e.cluster.cluster import Cluster      # or put e2e/cluster on sys.path
    with Cluster(state_dir).up(nodes=spec) as c:  # down() on exit / exception
        load_kube_config(c.kubeconfig_path)

State lives in <repo>/.cluster/ (env CLUSTER_DIR overrides): pki/, logs/, pids/,
etcd/, kubeconfig (admin), state.json. Binaries come from build.sh (cached);
env CLUSTER_BIN_DIR skips build.sh and uses that directory.

Python deps: kubernetes, cryptography, PyYAML (all on PyPI).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
STAGES_DIR = HERE / "stages"
# CustomResourceDefinitions installed on every cluster: scheduler-plugins' Coscheduling PodGroup.
CRDS_DIR = HERE / "crds"
# Gang scheduling with the Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup) is
# beta and off by default in v1.37: the API server, the controller manager (its
# podgroup-protection controller removes the PodGroup finalizer) and kube-scheduler (the
# GangScheduling plugin, pod-group queueing) each need the gate, and the API server the beta
# group version. Every cluster runs with it: for pods without spec.schedulingGroup it changes
# nothing in kube-scheduler (GangScheduling's PreEnqueue and Permit return at once and its
# queueing hints skip them; pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go).
FEATURE_GATES = "GenericWorkload=true"
RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true"
# What healthy() asks the API server for: a cluster started without the gate or the CRD
# (an older state dir kept with E2E_KEEP_CLUSTER=1) is replaced, not reused.
# kubelet's node Lease duration (kube-controller-manager's node grace period is 10 s more).
NODE_LEASE_SECONDS = 40
# kwok renews every node's Lease each quarter of its duration, in 4 workers: at 40 s and
# 5,000 nodes that is 500 writes/s, more than kwok and the API server keep up with on two
# shared cores; late renewals make kube-controller-manager set Ready to Unknown. The duration
# grows with the node count, keeping the renewals at ~100/s (1,000 nodes: kubelet's 40 s).
LEASE_RENEWALS_PER_SECOND = 100


def lease_seconds_for(nodes: int) -> int:
    return max(NODE_LEASE_SECONDS, nodes // LEASE_RENEWALS_PER_SECOND * 4)


SERVED_GROUPS = ("/apis/scheduling.k8s.io/v1beta1", "/apis/scheduling.x-k8s.io/v1alpha1")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_LABEL = "type"  # label type=kwok on every fake node, used by --delete-all
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
# Start order; down() stops in reverse.
# containerd-i and kubelet-i: the optional real nodes (node.py).
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kube-scheduler",
              "containerd-0", "kubelet-0", "containerd-1", "kubelet-1"]


def log(msg: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class ClusterError(RuntimeError):
    pass


# ----------------------------------------------------------------------------- helpers
def free_ports(n: int) -> list[int]:
    """Distinct free TCP ports on 127.0.0.1 (all sockets held open until all are picked)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def proc_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks): guards against pid reuse."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces/parens: split after the last ')'
    rest = data.rsplit(")", 1)[1].split()
    return rest[19] if len(rest) > 19 else None


def pid_alive(pid: int, start_time: str | None = None) -> bool:
    st = proc_start_time(pid)
    if st is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return False
    except OSError:
        return False
    return start_time is None or st == start_time


# ----------------------------------------------------------------------------- PKI
def _pki(pki_dir: Path) -> None:
    """CA, apiserver serving cert, client certs, service-account key (EC P-256)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki_dir.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    until = now + dt.timedelta(days=365)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def write_key(name: str, k: ec.EllipticCurvePrivateKey) -> None:
        p = pki_dir / f"{name}.key"
        p.write_bytes(
            k.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        p.chmod(0o600)

    def write_cert(name: str, c: x509.Certificate) -> None:
        (pki_dir / f"{name}.crt").write_bytes(c.public_bytes(serialization.Encoding.PEM))

    def name(cn: str, orgs: Iterable[str] = ()) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
        return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = key()
    ca_name = name("secondary-scheduler-e2e-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    write_key("ca", ca_key)
    write_cert("ca", ca)

    def leaf(
        fname: str,
        cn: str,
        orgs: Iterable[str] = (),
        server: bool = False,
        dns: Iterable[str] = (),
        ips: Iterable[str] = (),
    ) -> None:
        k = key()
        b = (
            x509.CertificateBuilder()
            .subject_name(name(cn, orgs))
            .issuer_name(ca_name)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                    if server
                    else [ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
            sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        write_key(fname, k)
        write_cert(fname, b.sign(ca_key, hashes.SHA256()))

    leaf(
        "apiserver",
        "kube-apiserver",
        server=True,
        dns=[
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
        ips=["127.0.0.1", SERVICE_IP],
    )
    leaf("kwok-serving", "kwok", server=True, dns=["localhost"], ips=["127.0.0.1"])
    leaf("front-proxy-client", "front-proxy-client")  # aggregation-layer client identity
    leaf("admin", "kubernetes-admin", ["system:masters"])
    leaf("kube-controller-manager", "system:kube-controller-manager")
    leaf("kube-scheduler", "system:kube-scheduler")
    # kwok updates node/pod status, renews node leases and deletes pods for many
    # "nodes": it is no single node identity, so it gets cluster-admin.
    leaf("kwok", "kwok-controller", ["system:masters"])
    sa = key()
    write_key("sa", sa)
    (pki_dir / "sa.pub").write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def _kubeconfig(path: Path, server: str, pki_dir: Path, user: str) -> None:
    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "e2e",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": b64(pki_dir / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(pki_dir / f"{user}.crt"),
                    "client-key-data": b64(pki_dir / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        "current-context": "e2e",
    }
    # JSON is valid YAML; no yaml dependency needed here.
    path.write_text(json.dumps(cfg, indent=2) + "\n")
    path.chmod(0o600)


# ----------------------------------------------------------------------------- node spec
def load_spec(spec: str | Path | dict | None) -> dict:
    if spec is None:
        return {"groups": []}
    if isinstance(spec, dict):
        return spec
    import yaml

    return yaml.safe_load(Path(spec).read_text()) or {"groups": []}


def node_objects(spec: dict) -> list[dict]:
    nodes = []
    for g in spec.get("groups", []):
        prefix = g["namePrefix"]
        cap = {
            "cpu": str(g.get("cpu", "4")),
            "memory": str(g.get("memory", "8Gi")),
            "pods": str(g.get("pods", 110)),
            "ephemeral-storage": str(g.get("ephemeralStorage", "100Gi")),
        }
        cap.update({k: str(v) for k, v in (g.get("extraResources") or {}).items()})
        for i in range(int(g.get("count", 1))):
            name = f"{prefix}-{i}"
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                KWOK_LABEL: "kwok",
            }
            if g.get("zone"):
                labels["topology.kubernetes.io/zone"] = str(g["zone"])
            if g.get("region"):
                labels["topology.kubernetes.io/region"] = str(g["region"])
            labels.update({str(k): str(v) for k, v in (g.get("labels") or {}).items()})
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": labels,
                        "annotations": {
                            KWOK_ANNOTATION: "fake",
                            "node.alpha.kubernetes.io/ttl": "0",
                        },
                    },
                    "spec": {
                        "providerID": f"kwok://{name}",
                        "taints": [dict(t) for t in (g.get("taints") or [])],
                    },
                    "status": {"capacity": dict(cap), "allocatable": dict(cap)},
                }
            )
    return nodes


# ----------------------------------------------------------------------------- cluster
class Cluster:
    def __init__(self, state_dir: str | Path | None = None, bin_dir: str | Path | None = None):
        self.state_dir = Path(
            state_dir or os.environ.get("CLUSTER_DIR") or REPO / ".cluster"
        ).resolve()
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self.pki = self.state_dir / "pki"
        self.logs = self.state_dir / "logs"
        self.pids = self.state_dir / "pids"
        self.state_file = self.state_dir / "state.json"

    # -------------------------------------------------------------- paths / state
    @property
    def kubeconfig_path(self) -> Path:
        return self.state_dir / "kubeconfig"

    def _state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def _save_state(self, st: dict) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(st, indent=2))
        tmp.replace(self.state_file)

    def bin_dir(self, with_kube_scheduler: bool = False) -> Path:
        if self._bin_dir is None and os.environ.get("CLUSTER_BIN_DIR"):
            self._bin_dir = Path(os.environ["CLUSTER_BIN_DIR"])
        if self._bin_dir is not None and (
            not with_kube_scheduler or (self._bin_dir / "kube-scheduler").exists()
        ):
            return self._bin_dir
        args = ["bash", str(HERE / "build.sh")]  # cached: returns in well under a second
        out = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout
        self._bin_dir = Path(out.strip().splitlines()[-1])
        return self._bin_dir

    # -------------------------------------------------------------- processes
    def _pidfile(self, comp: str) -> Path:
        return self.pids / f"{comp}.pid"

    def _read_pid(self, comp: str) -> tuple[int, str | None] | None:
        try:
            parts = self._pidfile(comp).read_text().split()
            return int(parts[0]), (parts[1] if len(parts) > 1 else None)
        except (OSError, ValueError, IndexError):
            return None

    def running(self) -> dict[str, bool]:
        out = {}
        for comp in COMPONENTS:
            p = self._read_pid(comp)
            if p is not None:
                out[comp] = pid_alive(*p)
        return out

    def _start(self, comp: str, argv: list[str]) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)
        logf = open(self.logs / f"{comp}.log", "ab")  # noqa: SIM115 (handed to the child)
        try:
            # New session => own process group (pgid == pid): down() kills the group,
            # and a Ctrl-C in the terminal that ran `up` does not reach it.
            p = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=str(self.state_dir),
                close_fds=True,
            )
        finally:
            logf.close()
        st = proc_start_time(p.pid) or ""
        self._pidfile(comp).write_text(f"{p.pid} {st}\n")
        (self.pids / f"{comp}.argv").write_text(json.dumps(argv))
        self._popen = getattr(self, "_popen", {})
        self._popen[comp] = p  # keeps the Popen so it can be reaped (no zombies in-process)

    def _stop(self, comp: str, timeout: float = 10.0) -> None:
        p = self._read_pid(comp)
        if p is None:
            self._pidfile(comp).unlink(missing_ok=True)
            return
        pid, st = p
        ours = pid_alive(pid, st)  # same pid AND same start time as recorded: not a reused pid
        if ours:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)  # we started it with start_new_session: pgid == pid
                deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 5)
                while time.monotonic() < deadline:
                    popen = getattr(self, "_popen", {}).get(comp)
                    if popen is not None:
                        popen.poll()
                    if not pid_alive(pid, st):
                        break
                    time.sleep(0.05)
                if not pid_alive(pid, st):
                    break
            if pid_alive(pid, st):
                raise ClusterError(f"{comp} (pid {pid}) did not exit")
        # also kill anything left in its group (children), by pgid; only if the leader
        # was verified ours above (a stale pid file must never kill a stranger's group)
        if ours:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        popen = getattr(self, "_popen", {}).pop(comp, None)
        if popen is not None:
            with contextlib.suppress(Exception):
                popen.wait(timeout=1)
        self._pidfile(comp).unlink(missing_ok=True)

    def restart(self, comp: str, timeout: float = 60.0) -> None:
        """Stop one component and start it again with the same command line (chaos tests)."""
        argv = json.loads((self.pids / f"{comp}.argv").read_text())
        self._stop(comp)
        self._start(comp, argv)
        if comp == "kube-apiserver":
            self._wait("kube-apiserver /readyz", lambda: self._get("/readyz")[0] == 200,
                       timeout, [comp])

    def _check_alive(self, comps: Iterable[str]) -> None:
        for comp in comps:
            p = self._read_pid(comp)
            if p is None or not pid_alive(*p):
                tail = ""
                with contextlib.suppress(OSError):
                    tail = "".join(
                        (self.logs / f"{comp}.log")
                        .read_text(errors="replace")
                        .splitlines(True)[-25:]
                    )
                raise ClusterError(f"{comp} exited during start-up; last log lines:\n{tail}")

    # -------------------------------------------------------------- HTTP to the apiserver
    def _ssl_ctx(self, user: str = "admin") -> ssl.SSLContext:
        contexts = self.__dict__.setdefault("_ssl_contexts", {})
        if user not in contexts:  # loading the chain for each of 5,000 requests adds up
            contexts[user] = self._new_ssl_ctx(user)
        return contexts[user]

    def _new_ssl_ctx(self, user: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / f"{user}.crt"), str(self.pki / f"{user}.key"))
        return ctx

    def _get(self, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
        url = self._state()["server"] + path
        try:
            with urllib.request.urlopen(url, context=self._ssl_ctx(), timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def _send(self, method: str, path: str, obj: dict, timeout: float = 30.0) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self._state()["server"] + path, data=json.dumps(obj).encode(), method=method,
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self._ssl_ctx(), timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def _wait(self, what: str, cond, timeout: float, comps: Iterable[str],
              interval: float = 0.2) -> None:
        deadline = time.monotonic() + timeout
        comps = list(comps)
        while True:
            self._check_alive(comps)
            try:
                if cond():
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)

    def healthy(self) -> bool:
        st = self._state()
        if not st.get("server"):
            return False
        run = self.running()
        need = ["etcd", "kube-apiserver", "kube-controller-manager", "kwok"]
        if not all(run.get(c) for c in need):
            return False
        try:
            return all(self._get(path)[0] == 200 for path in ("/readyz", *SERVED_GROUPS))
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _install_crds(self, timeout: float) -> None:
        """Create every CRD in CRDS_DIR and wait until the API server serves it."""
        import yaml

        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for file in sorted(CRDS_DIR.glob("*.yaml")):
            for crd in yaml.safe_load_all(file.read_text()):
                if not crd:
                    continue
                code, body = self._send("POST", path, crd)
                if code not in (201, 409):
                    raise ClusterError(f"creating CRD {crd['metadata']['name']}: {code} {body!r}")
                name = crd["metadata"]["name"]

                def established(name: str = name) -> bool:
                    code, body = self._get(f"{path}/{name}")
                    status = json.loads(body).get("status") or {}
                    conditions = status.get("conditions") or []  # null until the first
                    return code == 200 and any(
                        c["type"] == "Established" and c["status"] == "True" for c in conditions)

                self._wait(f"CRD {name} Established", established, timeout, ["kube-apiserver"])
        log("CRDs installed: " + ", ".join(f.name for f in sorted(CRDS_DIR.glob("*.yaml"))))

    # -------------------------------------------------------------- up / down
    def up(
        self,
        nodes: str | Path | dict | None = None,
        with_kube_scheduler: bool = False,
        timeout: float = 180.0,
        node_lease_seconds: int = NODE_LEASE_SECONDS,
    ) -> Cluster:
        """Start the control plane (no-op if it is already up and healthy).

        ``node_lease_seconds``: the kwok nodes' Lease duration (kwok renews a quarter of it),
        with kube-controller-manager's node grace period 10 s longer, as kubelet's 40 s is
        with its 50 s. Thousands of nodes need a longer one (see lease_seconds_for)."""
        if self.healthy():
            log(f"already up ({self.state_dir})")
            if with_kube_scheduler and not self.running().get("kube-scheduler"):
                self._guarded(lambda: self._start_kube_scheduler(timeout), only=["kube-scheduler"])
            if nodes is not None:
                self.apply_nodes(nodes)
            return self
        if self.state_dir.exists() and (self.running() or self.state_file.exists()):
            log("found stale or unhealthy state from an earlier run: cleaning it up")
            self.down()
        self._guarded(lambda: self._up(nodes, with_kube_scheduler, timeout, node_lease_seconds))
        return self

    def start_nodes(self, images: list[str], count: int = 1, timeout: float = 180.0) -> None:
        """``count`` real kubelet nodes (node.py), each with these local Docker images."""
        from e2e.cluster.node import MAX_NODES, RealNode

        if not 1 <= count <= MAX_NODES:
            raise ClusterError(f"1 to {MAX_NODES} real nodes, not {count}")
        for index in range(count):
            node = RealNode(self, index)
            if self.running().get(node.kubelet):
                log(f"{node.name} is already up")
                continue
            t0 = time.monotonic()
            self._guarded(lambda node=node: node.up(images, timeout),
                          only=[node.kubelet, node.containerd])
            log(f"{node.name} with {images} up in {time.monotonic() - t0:.1f}s")

    def _guarded(self, fn, only: list[str] | None = None) -> None:
        """Run fn; on ANY exception (incl. KeyboardInterrupt/SIGTERM) stop what it started."""
        old = {}

        def _term(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        if hasattr(signal, "SIGTERM") and _is_main_thread():
            for s in (signal.SIGTERM, signal.SIGHUP):
                old[s] = signal.signal(s, _term)
        try:
            fn()
        except BaseException:
            log("start-up failed or interrupted: stopping what was started")
            with contextlib.suppress(Exception):
                if only:
                    for c in only:
                        self._stop(c)
                else:
                    self.down()
            raise
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def _up(self, nodes, with_kube_scheduler: bool, timeout: float,
            node_lease_seconds: int) -> None:
        t0 = time.monotonic()
        bins = self.bin_dir(with_kube_scheduler)
        for d in (self.state_dir, self.logs, self.pids):
            d.mkdir(parents=True, exist_ok=True)
        _pki(self.pki)
        etcd_c, etcd_p, api_p, kcm_p, kwok_p, sched_p = free_ports(6)
        server = f"https://127.0.0.1:{api_p}"
        self._save_state(
            {
                "server": server,
                "bin_dir": str(bins),
                "ports": {
                    "etcd": etcd_c,
                    "etcd-peer": etcd_p,
                    "kube-apiserver": api_p,
                    "kube-controller-manager": kcm_p,
                    "kwok": kwok_p,
                    "kube-scheduler": sched_p,
                },
                "started_at": time.time(),
            }
        )
        _kubeconfig(self.kubeconfig_path, server, self.pki, "admin")
        for comp in ("kube-controller-manager", "kube-scheduler", "kwok"):
            _kubeconfig(self.state_dir / f"{comp}.kubeconfig", server, self.pki, comp)
        pki = self.pki

        self._start(
            "etcd",
            [
                str(bins / "etcd"),
                "--name=e2e",
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_c}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_c}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_p}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_p}",
                f"--initial-cluster=e2e=http://127.0.0.1:{etcd_p}",
                "--unsafe-no-fsync=true",  # throwaway test data: no fsync
                "--quota-backend-bytes=4294967296",
                "--auto-compaction-retention=1",
                "--log-level=warn",
            ],
        )
        self._start(
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_c}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_p}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                # request-header (aggregation) config, as kubeadm sets it; without it every
                # delegating component (KCM, scheduler) logs "missing content for CA bundle".
                f"--requestheader-client-ca-file={pki / 'ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                # admission: the defaults (incl. Priority, ServiceAccount, DefaultTolerationSeconds)
                "--allow-privileged=true",
                f"--feature-gates={FEATURE_GATES}",
                f"--runtime-config={RUNTIME_CONFIG}",
                # the endpoint reconciler would publish 127.0.0.1 for the `kubernetes` Service,
                # which Endpoints validation rejects (loopback); nothing runs in pods here.
                "--endpoint-reconciler-type=none",
                f"--cert-dir={self.state_dir / 'apiserver-certs'}",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._wait(
            "etcd + kube-apiserver /readyz",
            lambda: self._get("/readyz")[0] == 200,
            timeout,
            ["etcd", "kube-apiserver"],
        )
        log(f"kube-apiserver ready at {server} ({time.monotonic() - t0:.1f}s)")
        self._install_crds(timeout)

        kcm_kc = self.state_dir / "kube-controller-manager.kubeconfig"
        self._start(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={kcm_kc}",
                f"--authentication-kubeconfig={kcm_kc}",
                f"--authorization-kubeconfig={kcm_kc}",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_p}",
                f"--cert-dir={self.state_dir / 'kcm-certs'}",
                "--leader-elect=false",
                # default controller set: includes disruption, serviceaccount(-token), namespace,
                # garbage-collector, podgc, nodelifecycle, replicaset, deployment, ...
                "--controllers=*",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                f"--feature-gates={FEATURE_GATES}",
                f"--node-monitor-grace-period={node_lease_seconds + 10}s",
                "--v=1",
            ],
        )
        self._start(
            "kwok",
            [
                str(bins / "kwok"),
                f"--kubeconfig={self.state_dir / 'kwok.kubeconfig'}",
                "--config=" + ",".join(
                    str(p) for p in [HERE / "kwok.yaml", *sorted(STAGES_DIR.glob("*.yaml"))]),
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                f"--server-address=127.0.0.1:{kwok_p}",
                f"--tls-cert-file={pki / 'kwok-serving.crt'}",
                f"--tls-private-key-file={pki / 'kwok-serving.key'}",
                "--node-ip=10.240.0.1",
                "--cidr=10.244.0.0/16",
                f"--node-lease-duration-seconds={node_lease_seconds}",
            ],
        )
        if with_kube_scheduler:
            self._start_kube_scheduler(timeout)

        def default_sa() -> bool:
            return self._get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200

        comps = ["etcd", "kube-apiserver", "kube-controller-manager", "kwok"]
        self._wait(
            "the default/default ServiceAccount (kube-controller-manager)",
            default_sa,
            timeout,
            comps,
        )
        time.sleep(0.3)
        self._check_alive(comps + (["kube-scheduler"] if with_kube_scheduler else []))
        log(f"cluster up in {time.monotonic() - t0:.1f}s; kubeconfig: {self.kubeconfig_path}")
        if nodes is not None:
            self.apply_nodes(nodes, timeout=timeout)

    def _start_kube_scheduler(self, timeout: float) -> None:
        bins = self.bin_dir(with_kube_scheduler=True)
        st = self._state()
        kc = self.state_dir / "kube-scheduler.kubeconfig"
        port = st["ports"]["kube-scheduler"]
        self._start(
            "kube-scheduler",
            [
                str(bins / "kube-scheduler"),
                f"--kubeconfig={kc}",
                f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.state_dir / 'kube-scheduler-certs'}",
                "--leader-elect=false",
                f"--feature-gates={FEATURE_GATES}",
                "--v=1",
            ],
        )
        st["with_kube_scheduler"] = True
        self._save_state(st)
        # its /readyz needs no auth
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE

        def ready() -> bool:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2
            ) as r:
                return r.status == 200

        self._wait("kube-scheduler /readyz", ready, timeout, ["kube-scheduler"])

    def down(self) -> None:
        """Stop our processes (by pid / process group, never by name) and remove the state."""
        from e2e.cluster.node import MAX_NODES, RealNode

        t0 = time.monotonic()
        errors = []
        nodes = [RealNode(self, i) for i in range(MAX_NODES)]
        for node in nodes:
            if self.running().get(node.kubelet):
                node.drain()
        for comp in reversed(COMPONENTS):
            try:
                self._stop(comp)
            except Exception as e:  # keep going: stop the others
                errors.append(str(e))
        if errors:
            raise ClusterError("; ".join(errors))
        for node in nodes:
            node.cleanup()
        if self.state_dir.exists():
            import shutil

            shutil.rmtree(self.state_dir, ignore_errors=True)
        log(f"down in {time.monotonic() - t0:.1f}s")

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    # -------------------------------------------------------------- status / nodes
    def status(self) -> dict:
        st = self._state()
        out: dict[str, Any] = {
            "state_dir": str(self.state_dir),
            "server": st.get("server"),
            "kubeconfig": str(self.kubeconfig_path) if st else None,
            "components": {},
            "ready": False,
        }
        for comp, alive in self.running().items():
            p = self._read_pid(comp)
            out["components"][comp] = {
                "pid": p[0] if p else None,
                "alive": alive,
                "port": st.get("ports", {}).get(comp),
            }
        out["ready"] = self.healthy()
        if out["ready"]:
            code, body = self._get("/api/v1/nodes")
            if code == 200:
                items = json.loads(body)["items"]
                out["nodes"] = len(items)
                out["nodes_ready"] = sum(
                    1
                    for n in items
                    for c in n.get("status", {}).get("conditions", [])
                    if c["type"] == "Ready" and c["status"] == "True"
                )
        return out

    def core_api(self):
        from kubernetes import client, config

        api_client = config.new_client_from_config(config_file=str(self.kubeconfig_path))
        return client.CoreV1Api(api_client)

    def apply_nodes(self, spec: str | Path | dict, timeout: float = 120.0) -> list[str]:
        """Create (or replace) the fake nodes in SPEC and wait until kwok makes them Ready.

        Thousands of nodes: created 16 requests at a time, and readiness read from one plain
        JSON listing a second (the client's typed listing of 5,000 nodes took seconds of CPU
        each, every 0.2 s, on the cores kwok and the API server need)."""
        from concurrent.futures import ThreadPoolExecutor

        objs = node_objects(load_spec(spec))
        t0 = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(self._create_node, objs))
        names = {o["metadata"]["name"] for o in objs}
        log(f"{len(names)} nodes created in {time.monotonic() - t0:.1f}s")
        progress = {"at": time.monotonic(), "ready": 0}

        def all_ready() -> bool:
            ready = self._ready_nodes() & names
            if time.monotonic() - progress["at"] >= 10 and len(ready) != progress["ready"]:
                log(f"{len(ready)}/{len(names)} nodes Ready")
                progress.update(at=time.monotonic(), ready=len(ready))
            return len(ready) == len(names)

        self._wait(f"{len(names)} kwok nodes Ready", all_ready, timeout, ["kwok"],
                   interval=0.2 if len(names) <= 100 else 1.0)
        log(f"{len(names)} nodes created and Ready in {time.monotonic() - t0:.1f}s")
        return sorted(names)

    def _create_node(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        code, body = self._send("POST", "/api/v1/nodes", obj)
        if code == 409:  # replaced: deleted, then created again
            self._send("DELETE", f"/api/v1/nodes/{name}", {})
            deadline = time.monotonic() + 30
            while self._get(f"/api/v1/nodes/{name}")[0] != 404 and time.monotonic() < deadline:
                time.sleep(0.2)
            code, body = self._send("POST", "/api/v1/nodes", obj)
        if code != 201:
            raise ClusterError(f"creating node {name}: {code} {body[:300]!r}")

    def _ready_nodes(self) -> set[str]:
        """The kwok nodes whose Ready condition is True (from the API server's cache)."""
        code, body = self._get(f"/api/v1/nodes?labelSelector={KWOK_LABEL}%3Dkwok"
                               "&resourceVersion=0", timeout=30)
        if code != 200:
            return set()
        return {n["metadata"]["name"] for n in json.loads(body)["items"]
                if any(c["type"] == "Ready" and c["status"] == "True"
                       for c in n.get("status", {}).get("conditions", []))}

    def delete_all_nodes(self) -> int:
        api = self.core_api()
        n = 0
        for node in api.list_node().items:
            if (node.metadata.annotations or {}).get(KWOK_ANNOTATION) == "fake":
                api.delete_node(node.metadata.name)
                n += 1
        log(f"deleted {n} kwok nodes")
        return n


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start the control plane (idempotent)")
    p_up.add_argument("--nodes", metavar="SPEC.yaml", help="create fake nodes from this spec")
    p_up.add_argument(
        "--with-kube-scheduler",
        action="store_true",
        help="also run the default kube-scheduler (builds it on demand)",
    )
    p_up.add_argument(
        "--with-node",
        metavar="IMAGE",
        action="append",
        help="also start real kubelet nodes with this local Docker image loaded (repeatable)",
    )
    p_up.add_argument("--real-nodes", type=int, default=1, help="how many (default 1, max 2)")
    p_up.add_argument("--timeout", type=float, default=180.0)
    sub.add_parser("down", help="stop everything and remove the state dir")
    sub.add_parser("status", help="print JSON status; exit 0 if up and ready")
    p_nodes = sub.add_parser("nodes", help="create fake nodes from SPEC (or list / delete them)")
    p_nodes.add_argument("spec", nargs="?")
    p_nodes.add_argument("--delete-all", action="store_true")
    args = ap.parse_args(argv)

    c = Cluster()
    try:
        if args.cmd == "up":
            c.up(
                nodes=args.nodes, with_kube_scheduler=args.with_kube_scheduler, timeout=args.timeout
            )
            if args.with_node:
                c.start_nodes(args.with_node, args.real_nodes, timeout=args.timeout)
            print(c.kubeconfig_path)
        elif args.cmd == "down":
            c.down()
        elif args.cmd == "status":
            s = c.status()
            print(json.dumps(s, indent=2))
            return 0 if s["ready"] else 1
        elif args.cmd == "nodes":
            if not c.healthy():
                raise ClusterError("cluster is not up")
            if args.delete_all:
                c.delete_all_nodes()
            elif args.spec:
                for n in c.apply_nodes(args.spec):
                    print(n)
            else:
                for n in c.core_api().list_node().items:
                    ready = next(
                        (x.status for x in (n.status.conditions or []) if x.type == "Ready"), "?"
                    )
                    print(f"{n.metadata.name}\tReady={ready}")
    except ClusterError as e:
        log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # run as a script: e2e.cluster.node is imported by name
    sys.exit(main())
