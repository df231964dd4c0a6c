"""Plugins installed with pip (the packages under examples/plugins) run in the scheduler
process like built-in ones: found by their entry points, enabled and configured by the
configuration file. `make install` installs them into the development venv.

Ours only: kube-scheduler has no Python plugins, and the image carries none.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.conftest import Env, LocalScheduler
from e2e.kube import wait_until

BACKEND = os.environ.get("E2E_SCHEDULER", "")
pytestmark = pytest.mark.skipif(BACKEND != "", reason="a Python plugin runs in our process only")

PROFILE = "e2e-prefer-label"
SPOT = "node.example.com/spot"


@pytest.mark.timeout(180)
def test_an_installed_plugin_places_pods_as_configured(
    env: Env, kubeconfig: Path, tmp_path: Path
) -> None:
    # The default scores prefer the two big empty nodes; the plugin, the small labelled one.
    env.nodes("big", 2, cpu="32", pods=110)
    (spot,) = env.nodes("spot", 1, cpu="4", pods=110, labels={SPOT: "true"})
    scheduler = start_with(kubeconfig, tmp_path, PROFILE, f"""\
    plugins:
      score:
        enabled: [{{name: PreferLabel, weight: 50}}]
    pluginConfig:
      - name: PreferLabel
        args: {{label: {SPOT}, value: "true"}}
""")
    try:
        names = [f"batch-{i}" for i in range(3)]
        for name in names:
            env.create_pod(name, cpu="100m", scheduler=PROFILE)
        placed = env.wait_all_bound(names, timeout=60)
        assert set(placed.values()) == {spot}, placed
    finally:
        scheduler.stop()


def start_with(kubeconfig: Path, tmp_path: Path, profile: str, plugins: str) -> LocalScheduler:
    config = tmp_path / "config.yaml"
    config.write_text(f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
  - schedulerName: {profile}
{plugins}""")
    scheduler = LocalScheduler(kubeconfig, tmp_path / f"{profile}.log", config)
    scheduler.start()
    scheduler.wait_ready()
    return scheduler


PRICE = "node.example.com/hourly-price"


@pytest.mark.timeout(180)
def test_node_price_sends_pods_to_the_cheapest_node_that_fits(
    env: Env, kubeconfig: Path, tmp_path: Path
) -> None:
    profile = "e2e-node-price"
    env.nodes("dear", cpu="16", labels={PRICE: "3.0"})
    (cheap,) = env.nodes("cheap", cpu="2", labels={PRICE: "0.5"})
    (mid,) = env.nodes("mid", cpu="4", labels={PRICE: "1.0"})
    scheduler = start_with(kubeconfig, tmp_path, profile, """\
    plugins:
      score:
        enabled: [{name: NodePrice, weight: 10}]
""")
    try:
        env.create_pod("small", cpu="1", scheduler=profile)
        assert env.wait_bound("small") == cheap
        # "big" no longer fits on the cheapest node: the next cheapest, not the emptiest.
        env.create_pod("big", cpu="3", scheduler=profile)
        assert env.wait_bound("big") == mid
    finally:
        scheduler.stop()


TEAM = "example.com/team"
CAP_REASON = "node(s) in a zone where team payments runs its cap of 1 pods"


@pytest.mark.timeout(180)
def test_team_zone_cap_follows_its_config_map(env: Env, kubeconfig: Path, tmp_path: Path) -> None:
    profile = "e2e-team-zone-cap"
    caps = f"/api/v1/namespaces/{env.ns}/configmaps"
    env.kube.create(caps, {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "team-zone-caps"}, "data": {"payments": "1"}})
    env.nodes("a", 2, zone="zone-a")
    env.nodes("b", 1, zone="zone-b")
    scheduler = start_with(kubeconfig, tmp_path, profile, f"""\
    plugins:
      multiPoint:
        enabled: [{{name: TeamZoneCap}}]
    pluginConfig:
      - name: TeamZoneCap
        args: {{configMapNamespace: {env.ns}, configMapName: team-zone-caps}}
""")
    try:
        names = ["pay-0", "pay-1", "pay-2"]
        for name in names:
            env.create_pod(name, cpu="100m", scheduler=profile, labels={TEAM: "payments"})
        # One per zone; the third waits with the plugin's reason on all three nodes.
        wait_until(lambda: sum(1 for p in env.pods() if p["spec"].get("nodeName")) == 2, 30,
                   "two payments pods bound", diagnose=env.diagnose)
        (waiting,) = [p["metadata"]["name"] for p in env.pods() if not p["spec"].get("nodeName")]
        condition = env.wait_unschedulable(waiting)
        assert f"3 {CAP_REASON}" in condition["message"], condition
        zones = {env.kube.get(f"/api/v1/nodes/{p['spec']['nodeName']}")["metadata"]["labels"][
            "topology.kubernetes.io/zone"] for p in env.pods() if p["spec"].get("nodeName")}
        assert zones == {"zone-a", "zone-b"}
        # Raising the cap in the ConfigMap retries the waiting pod: it lands in zone-a.
        env.kube.patch(f"{caps}/team-zone-caps", {"data": {"payments": "2"}})
        env.wait_all_bound(names, timeout=30)
    finally:
        scheduler.stop()
