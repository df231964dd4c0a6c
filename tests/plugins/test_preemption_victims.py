"""The victims of a single pod's preemption as the dry run keeps them between preemptors:
a node's lone pods, sorted once (``LonePodsMemo``), until the node table's change log names
the node; a node with a Workload-API group's member always through its group units
(upstream's GetVictimsOnNode, framework/preemption, v1.37.2)."""

from __future__ import annotations

from scheduler.plugins.preemption_victims import LonePodsMemo
from tests.plugins.test_default_preemption import (
    HIGH,
    LARGE,
    LOW,
    MID,
    SMALL,
    cluster,
    in_group,
    info,
    n,
    p,
    pod_group,
)

PREEMPTOR = p("preemptor", prio=HIGH, res=LARGE)


def test_a_node_whose_pods_changed_between_two_preemptions_gives_its_new_pods() -> None:
    """The first dry run keeps node1's pods; the second must see the pod that replaced one."""
    c = cluster([n("node1")], [p("old", on="node1", prio=LOW, res=LARGE),
                               p("keep", on="node1", prio=LOW, res=SMALL)])
    assert c.dry_run(info(PREEMPTOR)) == {"node1": (["old"], 0)}
    c.s.cache.remove_pod("old")
    c.s.cache.upsert_pod(info(p("new", on="node1", prio=LOW, res=LARGE)))
    assert c.dry_run(info(PREEMPTOR)) == {"node1": (["new"], 0)}


def test_a_group_member_arriving_on_a_kept_node_counts_at_its_groups_priority() -> None:
    """node1's lone pods are kept after the first dry run; a member of a PodGroup of a higher
    priority than the preemptor's lands there: at its group's priority it is no victim, though
    its own priority is lower."""
    c = cluster([n("node1")], [p("plain", on="node1", prio=LOW, res=SMALL)],
                pod_groups=[pod_group("pg", HIGH + 1, mode="single")])
    assert c.dry_run(info(p("small", prio=HIGH, res={"cpu": "450m", "memory": "450"}))) == {
        "node1": (["plain"], 0)}
    member = p("member", on="node1", prio=LOW, res=LARGE, spec=in_group("pg"))
    c.s.cache.upsert_pod(info(member))
    c.s.pod_groups.pod_changed(None, info(member))
    assert c.dry_run(info(PREEMPTOR)) == {}


def test_the_kept_order_serves_preemptors_of_every_priority() -> None:
    """One sorted list per node: each preemptor takes the pods below its own priority (the
    first may not take ``mid``, so it finds no room)."""
    c = cluster([n("node1", {"cpu": "300m", "memory": "300"})],
                [p("low", on="node1", prio=LOW, res=SMALL),
                 p("mid", on="node1", prio=MID, res=SMALL)])
    assert c.dry_run(info(p("a", prio=MID, res=LARGE))) == {}
    assert c.dry_run(info(p("b", prio=HIGH, res=LARGE))) == {"node1": (["low", "mid"], 0)}


def test_the_memo_starts_over_for_another_table() -> None:
    """A mark read from one node table means nothing in another: a new cache, new pods."""
    memo = LonePodsMemo()
    first = cluster([n("node1")], [p("a", on="node1", prio=LOW)])
    second = cluster([n("node1")], [p("b", on="node1", prio=LOW)])
    for c, name in ((first, "a"), (second, "b")):
        table = c.s.snapshot.nodes
        memo.follow(table)
        lone = memo.of(table, 0)
        assert lone is not None and [q.name for q in lone.pods] == [name]
