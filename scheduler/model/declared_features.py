"""Node declared features: which features a node says it has (``status.declaredFeatures``)
and which of them a pod needs, as ``k8s.io/component-helpers/nodedeclaredfeatures`` v0.37.2
defines them.

The registry (``features/registry.go``, ``AllFeatures``) is a list of features, each with a
name, an optional maximum version (past it every node has the feature, so no pod needs it)
and a test of a pod spec saying whether scheduling the pod needs it. A set of features is a
bitmask over the registry sorted by name, as upstream's ``FeatureSet`` is a bitmap: a node's
declared features map to it ignoring names the registry does not know (``TryMap``), so the
node table holds one integer per node and NodeDeclaredFeatures' Filter is one vector test.

Only scheduling inference is ported: ``InferForUpdate`` and ``Discover`` serve the API server
and the kubelet, not a scheduler.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import total_ordering
from typing import Any

PodSpec = Mapping[str, Any]

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A semantic version, compared as ``k8s.io/apimachinery/pkg/util/version`` compares
    them: numbers first, then a pre-release sorts before its release."""

    major: int
    minor: int
    patch: int
    pre_release: tuple[int | str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"could not parse {text!r} as version")
        pre = match.group(4)
        ids = tuple(int(p) if p.isdigit() else p for p in pre.split(".")) if pre else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), ids)

    def __lt__(self, other: Version) -> bool:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return mine < theirs
        if not self.pre_release or not other.pre_release:
            return bool(self.pre_release)  # a pre-release precedes its release
        return _pre_release_key(self.pre_release) < _pre_release_key(other.pre_release)


def _pre_release_key(ids: tuple[int | str, ...]) -> tuple[tuple[int, int, str], ...]:
    """Semver: numeric identifiers sort numerically and before alphanumeric ones."""
    return tuple((0, i, "") if isinstance(i, int) else (1, 0, i) for i in ids)


@dataclass(frozen=True, slots=True)
class DeclaredFeature:
    """One entry of the registry: upstream's ``types.Feature`` as far as scheduling reads it."""

    name: str
    # None: the feature matters to the kubelet or to pod updates, never to where a pod goes.
    infer_for_scheduling: Callable[[PodSpec], bool] | None
    max_version: Version | None = None


class FeatureRegistry:
    """Upstream's ``nodedeclaredfeatures.Framework``: the features sorted by name, a feature
    set being the bitmask of their positions."""

    def __init__(self, features: Iterable[DeclaredFeature]) -> None:
        self.features = tuple(sorted(features, key=lambda f: f.name))
        if len(self.features) > 63:
            raise ValueError("a feature set is one int64: at most 63 features")
        self._bit = {f.name: 1 << i for i, f in enumerate(self.features)}
        # Every pod is asked: only the features scheduling may need, each once.
        self._inferring: list[tuple[int, Callable[[PodSpec], bool], Version | None]] = [
            (1 << i, infer, f.max_version) for i, f in enumerate(self.features)
            if (infer := f.infer_for_scheduling) is not None]

    def try_map(self, names: Iterable[str]) -> int:
        """The set of the known features among ``names`` (upstream's ``TryMap``)."""
        bit = self._bit
        mask = 0
        for name in names:
            mask |= bit.get(name, 0)
        return mask

    def unmap(self, mask: int) -> list[str]:
        """The names in a feature set, sorted."""
        return [f.name for i, f in enumerate(self.features) if mask >> i & 1]

    def infer_for_pod_scheduling(self, spec: PodSpec, target: Version) -> int:
        """The features scheduling the pod needs on a node (``InferForPodScheduling``): those
        whose maximum version, if any, the target version has not passed."""
        return self.inference_for(target).infer(spec)

    def inference_for(self, target: Version) -> SchedulingInference:
        """:meth:`infer_for_pod_scheduling` at one target version, the features it leaves
        out found once: a scheduler has one version and asks for every pod."""
        return SchedulingInference.of(
            (bit, infer) for bit, infer, max_version in self._inferring
            if max_version is None or not target > max_version)


@dataclass(frozen=True, slots=True)
class SchedulingInference:
    """The tests of the features a pod may need at one version, with their bits: those of
    :func:`scheduling_flags` (``flag_bits``: its flag, the feature's bit), found in one walk
    of the spec, and any other (``tests``)."""

    tests: tuple[tuple[int, Callable[[PodSpec], bool]], ...]
    flag_bits: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, tests: Iterable[tuple[int, Callable[[PodSpec], bool]]]) -> SchedulingInference:
        tests = tuple(tests)
        return cls(tuple((bit, test) for bit, test in tests if not isinstance(test, FlagTest)),
                   tuple((test.flag, bit) for bit, test in tests if isinstance(test, FlagTest)))

    @property
    def flags_alone(self) -> Callable[[PodSpec], int] | None:
        """:func:`scheduling_flags` when every test is one of its flags: a spec in which it
        finds none (nearly every pod's) needs no feature, told without :meth:`infer`."""
        return None if self.tests else scheduling_flags

    def infer(self, spec: PodSpec) -> int:
        """The set of features the pod spec needs."""
        mask = 0
        if self.flag_bits:
            flags = scheduling_flags(spec)
            if flags:  # nearly every pod needs none
                for flag, bit in self.flag_bits:
                    if flags & flag:
                        mask |= bit
        for bit, test in self.tests:
            if test(spec):
                mask |= bit
        return mask


# What scheduling_flags finds; each flag is a feature's InferForScheduling.
RESTART_ALL_CONTAINERS = 1
USER_NAMESPACES_HOST_NETWORK = 2
VOLUME_BIND_MOUNT_OPTIONS = 4


def scheduling_flags(spec: PodSpec) -> int:
    """The tests of the registry's features that scheduling reads, in one walk of the spec
    (every pod scheduled is asked; a walk per feature cost three times as much):

    - ``restartallcontainers``: a container or init container with a restart rule whose
      action is RestartAllContainers;
    - ``usernamespaceshostnetwork``: host network in a user namespace (hostUsers false);
    - ``volumebindmountoptions``: a volume mount of any container, init or ephemeral
      container with bindMountOptions.
    """
    flags = USER_NAMESPACES_HOST_NETWORK if (
        spec.get("hostNetwork") and spec.get("hostUsers") is False) else 0
    containers = spec.get("containers") or ()
    init = spec.get("initContainers")
    # Plain loops, no generator: several times cheaper for the one container most pods have.
    for c in (*containers, *init) if init else containers:
        for rule in c.get("restartPolicyRules") or ():
            if rule.get("action") == "RestartAllContainers":
                flags |= RESTART_ALL_CONTAINERS
        for mount in c.get("volumeMounts") or ():
            if mount.get("bindMountOptions"):
                flags |= VOLUME_BIND_MOUNT_OPTIONS
    for c in spec.get("ephemeralContainers") or ():
        for mount in c.get("volumeMounts") or ():
            if mount.get("bindMountOptions"):
                flags |= VOLUME_BIND_MOUNT_OPTIONS
    return flags


@dataclass(frozen=True, slots=True)
class FlagTest:
    """A feature's test that is one flag of :func:`scheduling_flags`: a registry finds all
    of them in one walk."""

    flag: int

    def __call__(self, spec: PodSpec) -> bool:
        return bool(scheduling_flags(spec) & self.flag)


needs_restart_all_containers = FlagTest(RESTART_ALL_CONTAINERS)
needs_user_namespaces_host_network = FlagTest(USER_NAMESPACES_HOST_NETWORK)
needs_volume_bind_mount_options = FlagTest(VOLUME_BIND_MOUNT_OPTIONS)


# features/registry.go AllFeatures (v0.37.2), by declared name.
ALL_FEATURES: Sequence[DeclaredFeature] = (
    DeclaredFeature("RestartAllContainersOnContainerExits", needs_restart_all_containers),
    DeclaredFeature("InPlacePodLevelResourcesVerticalScaling", None),
    DeclaredFeature("ExtendWebSocketsToKubelet", None),
    DeclaredFeature("InPlacePodVerticalScalingInitContainers", None),
    DeclaredFeature("InPlacePodVerticalScalingMemoryBackedVolumes", None),
    DeclaredFeature("UserNamespacesHostNetworkSupport", needs_user_namespaces_host_network),
    DeclaredFeature("DRANodeAllocatableResources", None),
    DeclaredFeature("VolumeBindMountOptions", needs_volume_bind_mount_options),
    # Its claims are checked by DynamicResources: an allocation is not known at PreFilter.
    DeclaredFeature("DRAOptionalNodeOperations", None),
)

# Upstream's DefaultFramework: what node tables map declared features with.
DEFAULT_FEATURES = FeatureRegistry(ALL_FEATURES)


def declared_features(node: Mapping[str, Any]) -> tuple[str, ...]:
    """A Node's ``status.declaredFeatures`` as the API server keeps it (sorted, unique)."""
    return tuple((node.get("status") or {}).get("declaredFeatures") or ())
