"""A plugin installed with pip (examples/plugins: PreferLabel) runs in the scheduler process
like a built-in one: found by its entry point, enabled and configured by the configuration
file. `make install` installs it into the development venv.

Ours only: kube-scheduler has no Python plugins, and the image carries none.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.conftest import Env, LocalScheduler

BACKEND = os.environ.get("E2E_SCHEDULER", "")
pytestmark = pytest.mark.skipif(BACKEND != "", reason="a Python plugin runs in our process only")

PROFILE = "e2e-prefer-label"
SPOT = "node.example.com/spot"


@pytest.mark.timeout(180)
def test_an_installed_plugin_places_pods_as_configured(
    env: Env, kubeconfig: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
  - schedulerName: {PROFILE}
    plugins:
      score:
        enabled: [{{name: PreferLabel, weight: 50}}]
    pluginConfig:
      - name: PreferLabel
        args: {{label: {SPOT}, value: "true"}}
""")
    # The default scores prefer the two big empty nodes; the plugin, the small labelled one.
    env.nodes("big", 2, cpu="32", pods=110)
    (spot,) = env.nodes("spot", 1, cpu="4", pods=110, labels={SPOT: "true"})
    scheduler = LocalScheduler(kubeconfig, tmp_path / "plugin-scheduler.log", config)
    scheduler.start()
    try:
        scheduler.wait_ready()
        names = [f"batch-{i}" for i in range(3)]
        for name in names:
            env.create_pod(name, cpu="100m", scheduler=PROFILE)
        placed = env.wait_all_bound(names, timeout=60)
        assert set(placed.values()) == {spot}, placed
    finally:
        scheduler.stop()
