"""ImageLocality: favour nodes that already hold the pod's container images.

Upstream ``imagelocality/image_locality.go`` (v1.37). For every image source of the pod (init
containers, containers and, since v1.35, image volumes), a node holding the image adds
``int(size × nodesWithImage / allNodes)``; the spread factor keeps a popular image from pulling
every pod to the same few nodes. The sum is clamped to [23 MiB, 1000 MiB × sources] and
scaled linearly to [0, 100]. No normalisation.

Only the pod's few images are looked up per row; an image no node has costs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler.plugin_api import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    IntArray,
    NodeView,
    PluginSpec,
    PodInfo,
    normalized_image_name,
)

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def pod_image_sources(pod: PodInfo) -> list[str]:
    """Normalised image of every image source, in upstream's order, duplicates kept."""
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping):
        return [normalized_image_name(i) for i in pod.images]
    out: list[str] = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            out.append(normalized_image_name(str(c.get("image") or "")))
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if isinstance(image, Mapping):
            out.append(normalized_image_name(str(image.get("reference") or "")))
    return out


def calculate_priority(sum_scores: IntArray, image_count: int) -> IntArray:
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    clamped = np.maximum(sum_scores, MIN_THRESHOLD)
    clamped = np.where(sum_scores > max_threshold, max_threshold, clamped)
    # Go truncates towards zero; the numerator is never negative, the divisor only for a pod
    # with no image at all (then the numerator is 0).
    numerator = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)
    divisor = max_threshold - MIN_THRESHOLD
    return np.where(numerator == 0, 0, numerator // divisor).astype(np.int64)


class ImageLocality:
    name = NAME

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        n = len(nodes)
        table = nodes.snapshot.nodes
        total_nodes = nodes.snapshot.num_nodes
        sources = pod_image_sources(pod)
        sums = np.zeros(n, dtype=np.int64)
        counted = Counter(sources)
        nodes_with = {name: table.image_nodes.get(name, 0) for name in counted}
        if total_nodes == 0 or not any(num > 0 for num in nodes_with.values()):
            # No node has any of the images: every sum is 0, and so is every score.
            return sums
        rows = nodes.idx.tolist()
        images = table.images
        for name, times in counted.items():
            num_nodes = nodes_with[name]
            if num_nodes <= 0:
                continue
            spread = num_nodes / total_nodes
            sizes = np.fromiter((images[r].get(name, -1) for r in rows), dtype=np.int64, count=n)
            scaled = (np.maximum(sizes, 0).astype(np.float64) * spread).astype(np.int64)
            sums += times * np.where(sizes >= 0, scaled, 0)
        return calculate_priority(sums, len(sources))

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return scores


def new(args: Mapping[str, Any], handle: Handle) -> ImageLocality:
    return ImageLocality()


SPEC = PluginSpec(name=NAME, factory=new)
