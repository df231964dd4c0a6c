"""The shipped Deployment, read as the kubelet will run it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def deployment() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text())
    return doc


def test_the_temporary_directory_is_writable_under_a_read_only_root() -> None:
    """The API client writes a kubeconfig's inline certificates to tempfile's directory;
    with readOnlyRootFilesystem that fails ('No usable temporary directory found') unless a
    volume is mounted there."""
    spec = deployment()["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    tmpdir = env.get("TMPDIR", "/tmp")
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert tmpdir in mounts, f"nothing writable is mounted at {tmpdir}"
    assert not mounts[tmpdir].get("readOnly", False)
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "emptyDir" in volumes[mounts[tmpdir]["name"]]

