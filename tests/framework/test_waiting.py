"""Pods waiting at Permit (upstream's ``runtime/waiting_pods_map.go``): one timeout per
plugin that answered Wait, allowed once every one of them allowed."""

from __future__ import annotations

from scheduler.framework.interface import Code
from scheduler.framework.waiting import WaitingPods
from scheduler.testing import pod_info

P = pod_info("p")


def test_the_pod_goes_on_once_every_waiting_plugin_allowed_it() -> None:
    waiting = WaitingPods()
    waiting.add(P, [("A", 60.0), ("B", 0.05)])
    waiting.allow(P.uid, "B")  # B's short timeout no longer applies
    waiting.allow(P.uid, "A")
    assert waiting.wait(P.uid).is_success() and P.uid not in waiting


def test_the_first_timeout_of_a_plugin_still_waited_for_rejects_naming_it() -> None:
    waiting = WaitingPods()
    waiting.add(P, [("A", 0.05), ("B", 0.0)])
    waiting.allow(P.uid, "B")
    status = waiting.wait(P.uid)
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE, "rejected due to timeout after waiting 50ms at plugin A", "A")


def test_a_rejection_wins_over_later_allows() -> None:
    waiting = WaitingPods()
    waiting.add(P, [("A", 60.0)])
    waiting.reject(P.uid, "gang incomplete", "A")
    waiting.allow(P.uid, "A")
    assert waiting.wait(P.uid).message == "gang incomplete"
