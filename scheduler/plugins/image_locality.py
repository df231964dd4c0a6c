"""ImageLocality: favour nodes that already hold the pod's container images.

Upstream ``imagelocality/image_locality.go`` (v1.37). For every image source of the pod (init
containers, containers and, since v1.35, image volumes), a node holding the image adds
``int(size × nodesWithImage / allNodes)``; the spread factor keeps a popular image from pulling
every pod to the same few nodes. The sum is clamped to [23 MiB, 1000 MiB × sources] and
scaled linearly to [0, 100]. No normalisation.

Only the pod's few images are looked up per row, and a row's score is kept until the row (or
the count of nodes holding one of the images) changes; an image no node has costs nothing.
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
from scheduler.plugins.helper.row_memo import RowMemo

# A pod's image sources, how many nodes hold each, and how many nodes there are.
_Key = tuple[tuple[str, ...], tuple[int, ...], int]

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def pod_image_sources(pod: PodInfo) -> tuple[str, ...]:
    """Normalised image of every image source, in upstream's order, duplicates kept."""
    spec = pod.raw.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    if not volumes:
        return pod.images  # init containers, then containers: normalised when parsed
    out = list(pod.images)
    for volume in volumes:
        image = volume.get("image")
        if image is not None and isinstance(image, (dict, Mapping)):
            out.append(normalized_image_name(str(image.get("reference") or "")))
    return tuple(out)


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

    def __init__(self) -> None:
        self._scores: RowMemo[_Key] = RowMemo(self._score_rows)

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeView) -> IntArray:
        sources = pod_image_sources(pod)
        holders = tuple(nodes.snapshot.nodes.image_nodes.get(name, 0) for name in sources)
        total_nodes = nodes.snapshot.num_nodes
        if total_nodes == 0 or not any(holders):
            # No node has any of the images: every sum is 0, and so is every score.
            return np.zeros(len(nodes), dtype=np.int64)
        # A row's score depends on its own images and on how many nodes hold each image,
        # which the key carries: kept per row until the row changes.
        return self._scores.values(nodes, (sources, holders, total_nodes))

    @staticmethod
    def _score_rows(nodes: NodeView, key: _Key) -> IntArray:
        sources, holders, total_nodes = key
        n = len(nodes)
        sums = np.zeros(n, dtype=np.int64)
        rows = nodes.idx.tolist()
        images = nodes.snapshot.nodes.images
        spread_of = dict(zip(sources, holders, strict=True))
        for name, times in Counter(sources).items():
            num_nodes = spread_of[name]
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
