"""The extension points a plugin may serve, what the runtime calls at each, and the check that
a plugin has it, made when the plugin is registered and again when a profile builds it.

Upstream's Go compiler checks a plugin against ``fwk.FilterPlugin`` and the rest; here the
same contract is the table :data:`POINTS`, one :class:`Point` per configuration name, with
the method, its arguments and its protocol (``scheduler.framework.interface``), and
:data:`PLUGIN_HOOKS`, the optional methods any plugin may have. A plugin that does not keep
it is refused at load time with its name and the point, never left to fail every pod.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.framework.errors import ConfigError
from scheduler.framework.interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    FilterPodListsHook,
    IdleWhenPreFilterSkipsHook,
    PermitPlugin,
    PlacementFeasibleHook,
    PodGroupPostFilterHook,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightHook,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SortKeyHook,
    WaitForActuationsHook,
)


@dataclass(frozen=True)
class Hook:
    """A member the runtime reads: a method called with ``args``, or (``args`` None) a plain
    value of type ``kind``."""

    attr: str
    args: tuple[str, ...] | None
    returns: str
    kind: type | None = None

    @property
    def signature(self) -> str:
        if self.args is None:
            return f"{self.attr}: {self.returns}"
        return f"{self.attr}({', '.join(self.args)}) -> {self.returns}"


@dataclass(frozen=True)
class Point:
    """One extension point: its configuration name, the method (``call``) the runtime calls
    for it, any method it needs beside (``required``) and optional hooks (``optional``)."""

    name: str
    call: Hook
    protocol: type
    required: tuple[Hook, ...] = ()
    optional: tuple[tuple[Hook, type], ...] = ()


_NODE_CALL = ("state", "pod", "node")

# In the order a pod meets them (upstream's configuration names).
POINTS: tuple[Point, ...] = (
    Point("preEnqueue", Hook("pre_enqueue", ("pod",), "Status"), PreEnqueuePlugin),
    Point("queueSort", Hook("less", ("a", "b"), "bool"), QueueSortPlugin,
          optional=((Hook("sort_key", ("pod",), "key"), SortKeyHook),)),
    Point("preFilter", Hook("pre_filter", ("state", "pod", "snapshot"),
                            "tuple[PreFilterResult | None, Status]"), PreFilterPlugin,
          optional=((Hook("idle_when_pre_filter_skips", None, "frozenset[str]", frozenset),
                     IdleWhenPreFilterSkipsHook),)),
    Point("filter", Hook("filter", ("state", "pod", "nodes"), "FilterResult"), FilterPlugin,
          optional=((Hook("filter_reads_pod_lists", None, "bool", bool), FilterPodListsHook),)),
    Point("postFilter", Hook("post_filter", ("state", "pod", "diagnosis"),
                             "tuple[PostFilterResult | None, Status]"), PostFilterPlugin,
          optional=((Hook("pod_group_post_filter", ("group", "members", "simulation"),
                          "tuple[PodGroupPostFilterResult | None, Status]"),
                     PodGroupPostFilterHook),)),
    Point("preScore", Hook("pre_score", ("state", "pod", "nodes"), "Status"), PreScorePlugin),
    Point("score", Hook("score", ("state", "pod", "nodes"), "IntArray"), ScorePlugin,
          optional=((Hook("normalize", ("state", "pod", "scores"), "IntArray"), ScorePlugin),)),
    Point("reserve", Hook("reserve", _NODE_CALL, "Status"), ReservePlugin,
          required=(Hook("unreserve", _NODE_CALL, "None"),)),
    Point("permit", Hook("permit", _NODE_CALL, "PermitDecision"), PermitPlugin),
    Point("preBind", Hook("pre_bind", _NODE_CALL, "Status"), PreBindPlugin,
          optional=((Hook("pre_bind_pre_flight", _NODE_CALL, "Status"), PreBindPreFlightHook),)),
    Point("bind", Hook("bind", _NODE_CALL, "Status"), BindPlugin),
    Point("postBind", Hook("post_bind", _NODE_CALL, "None"), PostBindPlugin),
)

# The points a PreFilter plugin may say it is idle at after its PreFilter said Skip (the
# runtime leaves it out of them for the pod): Unreserve goes with Reserve, PreBindPreFlight
# with PreBind, Score with PreScore.
IDLE_POINTS = frozenset({"preScore", "reserve", "preBind"})

# Optional methods of any plugin, whatever its points.
PLUGIN_HOOKS: tuple[tuple[Hook, type], ...] = (
    (Hook("events_to_register", (), "Sequence[ClusterEventWithHint]"), EnqueueExtensions),
    (Hook("wait_for_actuations", ("timeout",), "bool"), WaitForActuationsHook),
    (Hook("placement_feasible", ("group", "scheduled", "remaining"), "Status"),
     PlacementFeasibleHook),
)

# Extension point (upstream's configuration name) -> the method a plugin implements for it.
POINT_METHODS: Mapping[str, str] = {point.name: point.call.attr for point in POINTS}
_BY_NAME = {point.name: point for point in POINTS}
_POINT_LIST = ", ".join(POINT_METHODS)


def check_point_names(plugin: str, points: Iterable[str]) -> None:
    """ConfigError naming the plugin and the first name in ``points`` that is not a point."""
    for point in sorted(points):
        if point not in _BY_NAME:
            raise ConfigError(f"plugin {plugin!r}: {_unknown_point(point)}")


def _unknown_point(point: str) -> str:
    message = f"unknown extension point {point!r} in points"
    folded = point.replace("_", "").lower()
    if folded == "normalizescore":
        message += ("; NormalizeScore is not a point of its own but a Score plugin's optional "
                    "normalize(state, pod, scores) -> IntArray")
    else:
        like = next((p for p in POINT_METHODS if p.lower() == folded), None)
        if like is not None:
            message += f"; did you mean {like!r}?"
    return f"{message} (the points are: {_POINT_LIST})"


def points_of(plugin: object) -> frozenset[str]:
    """The points whose method ``plugin`` has."""
    return frozenset(
        point for point, method in POINT_METHODS.items()
        if callable(getattr(plugin, method, None))
    )


def check_plugin(name: str, points: frozenset[str], plugin: object) -> None:
    """ConfigError naming the plugin and what breaks the contract of ``points``: a point's
    method missing or taking other arguments, a method needed beside it missing, a hook of
    the wrong kind, or a point's method the plugin has but does not list (no profile would
    call it). ``plugin`` is an instance, or the class its factory is."""
    check_point_names(name, points)
    problems = [
        *_name_problems(name, plugin),
        *(p for point in POINTS if point.name in points for p in _point_problems(point, plugin)),
        *(f"has {point.call.attr} but {point.name!r} is not in its points, so no profile "
          "would call it" for point in POINTS
          if point.name not in points and callable(getattr(plugin, point.call.attr, None))),
        *(p for hook, _ in PLUGIN_HOOKS for p in _hook_problems(hook, plugin, required=False)),
        *_idle_problems(points, plugin),
    ]
    if problems:
        raise ConfigError(f"plugin {name!r}: {'; '.join(problems)}")


def _idle_problems(points: frozenset[str], plugin: object) -> list[str]:
    """``idle_when_pre_filter_skips`` names only points it may, of the plugin's own, and
    the plugin has a PreFilter that can skip."""
    idle: object = getattr(plugin, "idle_when_pre_filter_skips", None)
    if not isinstance(idle, frozenset) or not idle:
        return []  # the wrong kind is _point_problems' to report
    if "preFilter" not in points:
        return ["has idle_when_pre_filter_skips but no preFilter"]
    return [f"idle_when_pre_filter_skips: {point!r} is not one of {sorted(IDLE_POINTS)} "
            "among its points" for point in sorted(idle)
            if point not in IDLE_POINTS or point not in points]


def _name_problems(name: str, plugin: object) -> list[str]:
    """The runtime names the plugin by its ``name`` (statuses, skips, metrics, hints): it
    must be the spec's."""
    own = getattr(plugin, "name", None)
    if own == name:
        return []
    if isinstance(plugin, type) and isinstance(own, property | type(None)):
        return []  # set per instance: the build checks it
    return [f"its name attribute is {own!r}, not {name!r}"]


def _point_problems(point: Point, plugin: object) -> list[str]:
    problems = [f"point {point.name!r}: {p}" for p in _hook_problems(point.call, plugin,
                                                                      required=True)]
    for hook in point.required:
        problems += [f"point {point.name!r}: {p}" for p in _hook_problems(hook, plugin,
                                                                          required=True)]
    for hook, _ in point.optional:
        problems += [f"point {point.name!r}: {p}" for p in _hook_problems(hook, plugin,
                                                                          required=False)]
    return problems


def _hook_problems(hook: Hook, plugin: object, *, required: bool) -> list[str]:
    """What is wrong with ``plugin``'s ``hook.attr``, in words."""
    missing = object()
    value = inspect.getattr_static(plugin, hook.attr, missing)
    if value is missing:
        return [f"needs a method {hook.signature}"] if required else []
    value = getattr(plugin, hook.attr)
    if hook.args is None:
        assert hook.kind is not None
        if not isinstance(value, hook.kind):
            return [f"{hook.attr} must be a {hook.kind.__name__}, not "
                    f"{type(value).__name__}"]
        return []
    if not callable(value):
        return [f"{hook.attr} must be a method {hook.signature}, not {type(value).__name__}"]
    if not _accepts(value, len(hook.args), unbound=isinstance(plugin, type)):
        return [f"{hook.attr}{_shown(value)} cannot be called as {hook.signature}"]
    return []


def _accepts(method: object, count: int, *, unbound: bool) -> bool:
    """Whether ``method`` takes ``count`` positional arguments (plus ``self`` when it is a
    function read off the class, or bound to an instance)."""
    function = getattr(method, "__func__", None)
    if function is not None:
        return _takes(function, count + 1)
    if inspect.isfunction(method):
        return _takes(method, count + 1 if unbound else count)
    return _takes.__wrapped__(method, count)


@functools.lru_cache(maxsize=1024)
def _takes(function: object, count: int) -> bool:
    """Memoised: a profile builds each plugin class again, and reading a signature costs a
    tenth of a millisecond."""
    try:
        signature = inspect.signature(function)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin without one: nothing to check
        return True
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _shown(method: object) -> str:
    """The method's parameters as written, ``self`` left out."""
    try:
        params = list(inspect.signature(method).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    return f"({', '.join(p for p in params if p != 'self')})"
