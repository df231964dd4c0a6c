"""TeamZoneCap, tested with the testing kit only (scheduler.testing): caps from the watched
ConfigMap, changes to it, bad caps, and requeueing on the events that can help."""

from __future__ import annotations

from typing import Any

import pytest
from team_zone_cap import SPEC, TeamZoneCap

from scheduler.plugin_api import ConfigError, CycleState, PodInfo
from scheduler.testing import (
    ManualClock,
    filter_nodes,
    node,
    pod,
    pod_info,
    rejected_reasons,
    run_cycles,
    schedule,
    scheduler_of,
    set_config_map,
    snapshot_of,
    view_with,
)

TEAM = "example.com/team"
CAPS = ("kube-system", "team-zone-caps")
REASON = "node(s) in a zone where team payments runs its cap of {} pods"
NODES = [node("a1", zone="a"), node("a2", zone="a"), node("b1", zone="b"), node("x")]
CONFIG = {"profiles": [{"schedulerName": "secondary-scheduler", "plugins": {
    "multiPoint": {"enabled": [{"name": "TeamZoneCap"}]}}}]}


def team_pod(name: str, team: str = "payments", **kw: Any) -> dict[str, Any]:
    return pod(name, labels={TEAM: team}, cpu="100m", **kw)


@pytest.mark.parametrize(
    ("case", "caps", "incoming", "bound", "want"),
    [
        ("zone a is full, b and the zoneless node are not", {"payments": "1"}, team_pod("p"),
         [team_pod("q", node_name="a2")],
         {"a1": [REASON.format(1)], "a2": [REASON.format(1)], "b1": [], "x": []}),
        ("other teams do not count", {"payments": "1"}, team_pod("p"),
         [team_pod("q", team="search", node_name="a1")],
         {"a1": [], "a2": [], "b1": [], "x": []}),
        ("below the cap", {"payments": "2"}, team_pod("p"), [team_pod("q", node_name="a1")],
         {"a1": [], "a2": [], "b1": [], "x": []}),
        ("a team without a cap", {"search": "0"}, team_pod("p"), [],
         {"a1": [], "a2": [], "b1": [], "x": []}),
        ("a pod without a team", {"payments": "0"}, pod("p"), [],
         {"a1": [], "a2": [], "b1": [], "x": []}),
        ("no ConfigMap", None, team_pod("p"), [], {"a1": [], "a2": [], "b1": [], "x": []}),
        ("a cap of zero", {"payments": "0"}, team_pod("p"), [],
         {"a1": [REASON.format(0)], "a2": [REASON.format(0)], "b1": [REASON.format(0)],
          "x": []}),
    ],
)
def test_filter(case: str, caps: dict[str, str] | None, incoming: dict[str, Any],
                bound: list[dict[str, Any]], want: dict[str, list[str]]) -> None:
    config_maps = {CAPS: caps} if caps is not None else {}
    assert filter_nodes(SPEC, None, incoming, NODES, bound, config_maps) == want, case


def test_an_invalid_cap_refuses_the_teams_pods_naming_the_config_map() -> None:
    got = filter_nodes(SPEC, None, team_pod("p"), NODES, config_maps={CAPS: {"payments": "lots"}})
    message = ("team payments has an invalid cap 'lots' in ConfigMap kube-system/team-zone-caps:"
               " want a whole number >= 0")
    assert got == {n["metadata"]["name"]: [message] for n in NODES}


def test_pods_spread_over_zones_up_to_the_cap_and_the_rest_wait() -> None:
    nodes = [node("a1", zone="a"), node("b1", zone="b")]
    pods = [team_pod(f"p{i}") for i in range(5)]
    placed = schedule(CONFIG, nodes, pods, plugins=[SPEC],
                      config_maps={CAPS: {"payments": "2"}})
    assert sorted(placed.values()) == ["", "a1", "a1", "b1", "b1"]


@pytest.mark.parametrize(
    ("case", "elsewhere", "want"),
    [
        ("nothing removed elsewhere: zone a is at its cap", [], [REASON.format(2)]),
        ("a team pod removed on another node of the zone frees room", ["q2"], []),
        ("a team pod removed in another zone does not", ["r"], [REASON.format(2)]),
        ("another team's pod removed in the zone does not", ["s"], [REASON.format(2)]),
    ],
)
def test_a_pod_removed_on_another_node_of_the_zone_counts(
    case: str, elsewhere: list[str], want: list[str]
) -> None:
    """A preemption dry run for a1 that evicts a pod group whole also removes its pods on
    other nodes (NodeView.removed_elsewhere, API 2.7): one on a2 leaves zone a below the
    cap."""
    bound = [team_pod("q1", node_name="a1"), team_pod("q2", node_name="a2"),
             team_pod("r", node_name="b1"), team_pod("s", team="search", node_name="a2")]
    s, _ = scheduler_of(CONFIG, plugins=[SPEC], config_maps={CAPS: {"payments": "2"}})
    plugin = s.profiles["secondary-scheduler"].instances["TeamZoneCap"]
    assert isinstance(plugin, TeamZoneCap)
    snapshot = snapshot_of(NODES, bound)
    state = CycleState()
    incoming = PodInfo.from_pod(team_pod("p"))
    _, status = plugin.pre_filter(state, incoming, snapshot)
    assert status.is_success()
    by_name = {p["metadata"]["name"]: PodInfo.from_pod(p) for p in bound}
    view = view_with(snapshot, "a1", removed_elsewhere=[by_name[n] for n in elsewhere])
    assert rejected_reasons(plugin.filter(state, incoming, view), ["a1"]) == {"a1": want}, case


def test_raising_the_cap_in_the_config_map_retries_the_refused_pods() -> None:
    clock = ManualClock()
    s, ports = scheduler_of(CONFIG, plugins=[SPEC], nodes=[node("a1", zone="a")],
                            pods=[team_pod("p0"), team_pod("p1")],
                            config_maps={CAPS: {"payments": "1"}}, clock=clock)
    run_cycles(s)
    assert len(ports.bound) == 1
    assert s.queue.pending_pods()["unschedulable"] == ["default/p1"]
    set_config_map(s, *CAPS, {"payments": "2"})
    assert s.queue.pending_pods()["backoff"] == ["default/p1"]
    clock.advance(2)  # the first backoff is 1 s
    s.queue.flush_backoff_completed()
    run_cycles(s)
    assert len(ports.bound) == 2


@pytest.mark.parametrize(
    ("case", "old", "new", "want"),
    [
        ("a pod of the team deleted", team_pod("q", node_name="a1"), None, "Queue"),
        ("a pod of another team deleted", team_pod("q", team="search", node_name="a1"), None,
         "Skip"),
        ("a pod of the team relabelled away", team_pod("q", node_name="a1"),
         team_pod("q", team="search", node_name="a1"), "Queue"),
    ],
)
def test_only_a_pod_of_the_same_team_leaving_requeues(
    case: str, old: dict[str, Any], new: dict[str, Any] | None, want: str
) -> None:
    s, _ = scheduler_of(CONFIG, plugins=[SPEC], config_maps={CAPS: {"payments": "1"}})
    plugin = s.profiles["secondary-scheduler"].instances["TeamZoneCap"]
    assert isinstance(plugin, TeamZoneCap)
    after = None if new is None else PodInfo.from_pod(new)
    hint = plugin._team_pod_left(pod_info("p", labels={TEAM: "payments"}),
                                 PodInfo.from_pod(old), after)
    assert hint.name.title() == want, case


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"teamLabel": "bad label/x/y"}, r"args\.teamLabel: Invalid value"),
        ({"configMapName": ""}, r"args\.configMapName: Invalid value: '': must not be empty"),
    ],
)
def test_bad_arguments_are_refused(args: dict[str, Any], message: str) -> None:
    config = {"profiles": [{"schedulerName": "s", "plugins": {
        "multiPoint": {"enabled": [{"name": "TeamZoneCap"}]}},
        "pluginConfig": [{"name": "TeamZoneCap", "args": args}]}]}
    with pytest.raises(ConfigError, match=message):
        schedule(config, [node("n")], [], plugins=[SPEC])
