"""What a plugin may ask of other profiles through its Handle: whether a scheduler name is one
of ours (DefaultPreemption's victimScope OwnProfiles), and that a pod's nomination was cleared
(its own profile's preempting PostFilter plugins drop their work for it). Nothing else of
another profile's runtime."""

from __future__ import annotations

from typing import Any

from scheduler.framework.interface import CycleState, Diagnosis, PostFilterResult, Status
from scheduler.framework.registry import PluginSpec
from scheduler.model.pod import PodInfo
from scheduler.scheduler import ProfileHandle
from scheduler.testing import pod_info, scheduler_of


class _Recorder:
    """A preempting PostFilter plugin that records what it is told to drop."""

    name = "Recorder"

    def __init__(self) -> None:
        self.superseded: list[str] = []

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        raise AssertionError("not run here")

    def supersede(self, uid: str) -> None:
        self.superseded.append(uid)


def _profile(name: str) -> dict[str, Any]:
    return {"schedulerName": name, "plugins": {"postFilter": {"enabled": [{"name": "Recorder"}]}}}


def test_supersede_reaches_the_preempting_plugins_of_the_pods_own_profile() -> None:
    spec = PluginSpec(name="Recorder", factory=lambda args, handle: _Recorder())
    s, _ = scheduler_of({"profiles": [_profile("a"), _profile("b")]}, plugins=[spec])
    recorders = {name: f.instances["Recorder"] for name, f in s.profiles.items()}
    handle = ProfileHandle("a", s)

    handle.supersede(pod_info("low", scheduler_name="b"))
    handle.supersede(pod_info("elsewhere", scheduler_name="default-scheduler"))

    assert [r.superseded for r in (recorders["a"], recorders["b"])] == [[], ["uid-default-low"]]
    assert handle.has_profile("b") and not handle.has_profile("default-scheduler")
