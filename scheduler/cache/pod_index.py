"""An inverted index of accounted pods by namespace and label, for affinity and spreading.

Inter-pod affinity and topology spreading ask "which pods in these namespaces match this
selector?" for every pending pod. Scanning 50,000 pods per cycle would dominate the cycle, so
candidates come from the index of the selector's most selective positive requirement and only
those candidates are matched in full.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from scheduler.model.selectors import LabelSelector

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo

K = TypeVar("K")


class PodLabelIndex:
    def __init__(self) -> None:
        self.by_uid: dict[str, PodInfo] = {}
        self._by_ns: dict[str, set[str]] = defaultdict(set)
        self._by_key: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._by_pair: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        # Pods whose own terms constrain others (symmetry of anti-affinity, scoring).
        self.with_required_anti_affinity: dict[str, PodInfo] = {}
        self.with_affinity_terms: dict[str, PodInfo] = {}
        # Pods by (namespace, controller kind, controller name): the default spreading's siblings.
        self.by_owner: dict[tuple[str, str, str], dict[str, PodInfo]] = {}
        # How many pods name each claim ("namespace/name") in their volumes (upstream's
        # PVCRefCounts, summed over the nodes).
        self.claim_refs: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.by_uid)

    def add(self, pod: PodInfo) -> None:
        self.remove(pod.uid)
        self.by_uid[pod.uid] = pod
        ns = pod.namespace
        self._by_ns[ns].add(pod.uid)
        for key, value in pod.labels.items():
            self._by_key[(ns, key)].add(pod.uid)
            self._by_pair[(ns, key, value)].add(pod.uid)
        if pod.required_anti_affinity:
            self.with_required_anti_affinity[pod.uid] = pod
        if (
            pod.required_affinity
            or pod.required_anti_affinity
            or pod.preferred_affinity
            or pod.preferred_anti_affinity
        ):
            self.with_affinity_terms[pod.uid] = pod
        if pod.owner_kind and pod.owner_name:
            self.by_owner.setdefault((ns, pod.owner_kind, pod.owner_name), {})[pod.uid] = pod
        for claim, _ in pod.claims:
            self.claim_refs[f"{ns}/{claim}"] += 1

    def remove(self, uid: str) -> PodInfo | None:
        pod = self.by_uid.pop(uid, None)
        if pod is None:
            return None
        ns = pod.namespace
        self.with_required_anti_affinity.pop(uid, None)
        self.with_affinity_terms.pop(uid, None)
        owner = (ns, pod.owner_kind, pod.owner_name)
        siblings = self.by_owner.get(owner)
        if siblings is not None:
            siblings.pop(uid, None)
            if not siblings:
                del self.by_owner[owner]
        for claim, _ in pod.claims:
            key = f"{ns}/{claim}"
            self.claim_refs[key] -= 1
            if self.claim_refs[key] <= 0:
                del self.claim_refs[key]
        _discard(self._by_ns, ns, uid)
        for key, value in pod.labels.items():
            _discard(self._by_key, (ns, key), uid)
            _discard(self._by_pair, (ns, key, value), uid)
        return pod

    def namespaces(self) -> Iterable[str]:
        return self._by_ns.keys()

    def matching(self, namespaces: Iterable[str], selector: LabelSelector) -> list[PodInfo]:
        """Pods in ``namespaces`` whose labels match ``selector``."""
        if selector.matches_nothing:
            return []
        out: list[PodInfo] = []
        for ns in namespaces:
            for uid in self._candidates(ns, selector):
                pod = self.by_uid[uid]
                if selector.matches(pod.labels):
                    out.append(pod)
        return out

    def _candidates(self, ns: str, selector: LabelSelector) -> Iterable[str]:
        best: set[str] | None = None
        for req in selector.requirements:
            if req.operator == "In":
                cand: set[str] = set()
                for value in req.values:
                    cand |= self._by_pair.get((ns, req.key, value), set())
            elif req.operator in ("Exists", "Gt", "Lt"):
                cand = self._by_key.get((ns, req.key), set())
            else:
                continue
            if best is None or len(cand) < len(best):
                best = cand
            if not best:
                return ()
        if best is None:
            return tuple(self._by_ns.get(ns, ()))
        return tuple(best)


def _discard(index: dict[K, set[str]], key: K, uid: str) -> None:
    bucket = index.get(key)
    if bucket is None:
        return
    bucket.discard(uid)
    if not bucket:
        del index[key]
