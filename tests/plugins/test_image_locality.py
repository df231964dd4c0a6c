"""ImageLocality table, ported from upstream's image_locality_test.go (v1.37)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.plugins import image_locality
from scheduler.plugins.image_locality import ImageLocality
from scheduler.testing import cache_of, container, full_view, node, pod_info, snapshot_of

MB = 1024 * 1024

Images = Sequence[tuple[Sequence[str], int]]

NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []


def spec(*images: str, init: Sequence[str] = (), volumes: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "containers": [container(f"c{i}", image=img) for i, img in enumerate(images)],
        "init_containers": [container(f"i{i}", image=img) for i, img in enumerate(init)],
        "spec": {"volumes": [{"name": f"v{i}", "image": {"reference": ref}}
                             for i, ref in enumerate(volumes)]},
    }


CASES = [
    pytest.param(spec("gcr.io/40", "gcr.io/250"), [NODE_40_300_2000, NODE_250_10], [0, 5],
                 id="two images spread on two nodes, prefer the larger image one"),
    pytest.param(spec("gcr.io/40", "gcr.io/300"), [NODE_40_300_2000, NODE_250_10], [7, 0],
                 id="two images on one node, prefer this node"),
    pytest.param(spec("gcr.io/10", "gcr.io/4000"), [NODE_4000_30, NODE_250_10], [100, 0],
                 id="if exceed limit, use limit"),
    pytest.param(spec("gcr.io/10", "gcr.io/4000"), [NODE_4000_30, NODE_250_10, NO_IMAGES],
                 [66, 0, 0], id="if exceed limit, use limit (with node which has no images)"),
    pytest.param(spec("gcr.io/300", "gcr.io/600", "gcr.io/900"),
                 [NODE_600_40_900, NODE_300_600_900, NO_IMAGES], [32, 36, 0],
                 id="pod with multiple large images, node2 is preferred"),
    pytest.param(spec("gcr.io/30", "gcr.io/40"), [NODE_20_30_40, NODE_4000_30], [1, 0],
                 id="pod with multiple small images"),
    pytest.param(spec("gcr.io/30", volumes=["gcr.io/300"]), [NODE_300_600_900, NODE_4000_30],
                 [6, 0], id="pod with ImageVolume"),
    pytest.param(spec("gcr.io/30", "gcr.io/300"), [NODE_300_600_900, NODE_4000_30], [6, 0],
                 id="same images as ImageVolume pod but as regular container images"),
    pytest.param(spec("gcr.io/30", init=["gcr.io/300"]), [NODE_40_300_2000, NODE_20_30_40],
                 [6, 0],
                 id="include InitContainers: two images spread on two nodes, prefer the larger"),
    pytest.param(spec("gcr.io/nowhere:1"), [NODE_40_300_2000, NO_IMAGES], [0, 0],
                 id="an image no node has scores nothing anywhere"),
]


@pytest.mark.parametrize(("pod_spec", "node_images", "want"), CASES)
def test_score(pod_spec: dict[str, Any], node_images: list[Images], want: list[int]) -> None:
    nodes = [node(f"node{i + 1}", images=imgs) for i, imgs in enumerate(node_images)]
    snapshot = snapshot_of(nodes)
    view = full_view(snapshot)
    pod = pod_info("p", **pod_spec)
    plugin = ImageLocality()
    state = CycleState()
    scores = plugin.normalize(state, pod, plugin.score(state, pod, view))
    assert scores.tolist() == want


def test_scores_only_the_rows_of_the_view() -> None:
    nodes = [node("node1", images=NODE_4000_30), node("node2", images=NODE_250_10)]
    snapshot = snapshot_of(nodes)
    view = full_view(snapshot)
    pod = pod_info("p", **spec("gcr.io/10", "gcr.io/4000"))
    scores = ImageLocality().score(CycleState(), pod, view.subset(view.idx[1:] * 0 + 1))
    assert scores.tolist() == [0]


def test_image_sources_keep_duplicates_and_order() -> None:
    pod = pod_info("p", **spec("a", "b:1", init=["reg/c"], volumes=["d@sha256:00"]))
    assert image_locality.pod_image_sources(pod) == (
        "reg/c:latest", "a:latest", "b:1", "d@sha256:00"
    )


def _pull(cache: Cache) -> None:
    cache.upsert_node(node("node2", images=NODE_4000_30))


def _forget(cache: Cache) -> None:
    cache.upsert_node(node("node1", images=NO_IMAGES))


def _add_holder(cache: Cache) -> None:
    cache.upsert_node(node("node4", images=NODE_250_10))


def _remove_holder(cache: Cache) -> None:
    cache.remove_node("node1")


@pytest.mark.parametrize("change", [
    pytest.param(_pull, id="a node pulls the image"),
    pytest.param(_forget, id="a node loses its images"),
    pytest.param(_add_holder, id="another node with an image joins"),
    pytest.param(_remove_holder, id="a node holding the image leaves"),
])
def test_kept_scores_follow_node_images(change: Callable[[Cache], None]) -> None:
    # A row's score depends on its images and on how many nodes hold each image: a change
    # of either shows in the next cycle, rows that did not change included.
    cache = cache_of([node("node1", images=NODE_4000_30), node("node2", images=NODE_250_10),
                      node("node3", images=NODE_4000_30)], [])
    snapshot = Snapshot(cache)
    pod = pod_info("p", **spec("gcr.io/10", "gcr.io/4000"))
    kept = ImageLocality()
    before = kept.score(CycleState(), pod, full_view(snapshot)).tolist()
    change(cache)
    after = kept.score(CycleState(), pod, full_view(snapshot)).tolist()
    assert after == ImageLocality().score(CycleState(), pod, full_view(snapshot)).tolist()
    assert after != before
