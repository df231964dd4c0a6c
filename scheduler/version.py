"""The scheduler's version: the installed package's metadata (pyproject.toml's version), the
one source for ``--version``, the startup log line and the build-info metric."""

from __future__ import annotations

import platform
from importlib import metadata

PACKAGE = "secondary-scheduler"
# Go's GOARCH names, which kube-scheduler's build info and image platforms use.
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        # A source tree run without being installed (pip install -e . installs it).
        return "0.0.0+unknown"


def build_platform() -> str:
    """As Go's GOOS/GOARCH: ``linux/amd64``."""
    machine = platform.machine().lower()
    return f"{platform.system().lower()}/{_GOARCH.get(machine, machine)}"
