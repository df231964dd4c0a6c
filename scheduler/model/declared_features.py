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
        return SchedulingInference(tuple(
            (bit, infer) for bit, infer, max_version in self._inferring
            if max_version is None or not target > max_version))


@dataclass(frozen=True, slots=True)
class SchedulingInference:
    """The tests of the features a pod may need at one version, with their bits."""

    tests: tuple[tuple[int, Callable[[PodSpec], bool]], ...]

    def infer(self, spec: PodSpec) -> int:
        """The set of features the pod spec needs."""
        mask = 0
        for bit, test in self.tests:
            if test(spec):
                mask |= bit
        return mask


# The two below run for every pod scheduled: plain loops, a generator costs several times more.
def needs_restart_all_containers(spec: PodSpec) -> bool:
    """``restartallcontainers``: a container or init container with a restart rule whose
    action is RestartAllContainers."""
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or ():
            for rule in c.get("restartPolicyRules") or ():
                if rule.get("action") == "RestartAllContainers":
                    return True
    return False


def needs_user_namespaces_host_network(spec: PodSpec) -> bool:
    """``usernamespaceshostnetwork``: host network in a user namespace (hostUsers false)."""
    return bool(spec.get("hostNetwork")) and spec.get("hostUsers") is False


def needs_volume_bind_mount_options(spec: PodSpec) -> bool:
    """``volumebindmountoptions``: a volume mount of any container, init or ephemeral
    container with bindMountOptions."""
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(field) or ():
            for mount in c.get("volumeMounts") or ():
                if mount.get("bindMountOptions"):
                    return True
    return False


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
