"""ImageLocality's score, on kube-scheduler's own cases (imagelocality/image_locality_test.go
TestImageLocalityPriority and TestNormalizedImageName): an image counts its size times the share of nodes holding
it, the sum is clamped between 23 MB and 1000 MB per container and scaled to 0..100; from 1.30 the init containers'
images count too, and count as containers in the ceiling."""

from __future__ import annotations

import hashlib

import pytest
from plugintables import cluster, container, node, pod

from gpushare.kube.podspec import normalized_image
from gpushare.placement.plugins.imagelocality import ImageLocality

MB = 1024 * 1024
NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)]
NODE_600_40_900 = [(["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)]
NODE_300_600_900 = [(["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)]
NODE_20_30_40 = [(["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)]
NO_IMAGES: list[tuple[list[str], int]] = []

Images = list[tuple[list[str], int]]

# (name, the pod's images, the nodes' images (sizes in MB), expected scores)
CASES: list[tuple[str, list[str], list[Images], list[int]]] = [
    # TestImageLocalityPriority
    (
        "two images spread on two nodes, prefer the larger image one",
        ["gcr.io/40", "gcr.io/250"],
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    ("two images on one node, prefer this node", ["gcr.io/40", "gcr.io/300"], [NODE_40_300_2000, NODE_250_10], [7, 0]),
    ("if exceed limit, use limit", ["gcr.io/10", "gcr.io/4000"], [NODE_4000_30, NODE_250_10], [100, 0]),
    (
        "if exceed limit, use limit (with node which has no images present)",
        ["gcr.io/10", "gcr.io/4000"],
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        ["gcr.io/300", "gcr.io/600", "gcr.io/900"],
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    ("pod with multiple small images", ["gcr.io/30", "gcr.io/40"], [NODE_20_30_40, NODE_4000_30], [1, 0]),
    # written: a tag other than latest is looked up as written; a digest as well
    ("an image named with its tag", ["gcr.io/300:v1", "gcr.io/40:v1"], [NODE_40_300_2000, NODE_250_10], [7, 0]),
    ("an image the node holds under another tag only", ["gcr.io/2000:v2"], [NODE_40_300_2000], [0]),
]


def nodes_with(images: list[Images]) -> list[dict[str, object]]:
    return [node(f"node{i}", images=[(names, size * MB) for names, size in held]) for i, held in enumerate(images)]


@pytest.mark.parametrize("minor", [20, 24, 29, 30, 36])
@pytest.mark.parametrize(("name", "images", "held", "expected"), CASES, ids=[c[0] for c in CASES])
def test_score(name: str, images: list[str], held: list[Images], expected: list[int], minor: int) -> None:
    case = cluster(nodes_with(held), pod(containers=[container(image=i) for i in images]), minor=minor)
    assert case.scores(ImageLocality()) == expected


@pytest.mark.parametrize(("minor", "expected"), [(20, [0, 0]), (29, [0, 0]), (30, [6, 0]), (36, [6, 0])])
def test_score_init_containers_from_1_30(minor: int, expected: list[int]) -> None:
    # TestImageLocalityPriority "include InitContainers: two images spread on two nodes, prefer the larger image one"
    # (1.30 on); before 1.30 only gcr.io/30 counts, which node2 holds at 30 MB / 2 < 23 MB: 0 on both
    new = pod(containers=[container(image="gcr.io/30")], init=[container(image="gcr.io/300")])
    case = cluster(nodes_with([NODE_40_300_2000, NODE_20_30_40]), new, minor=minor)
    assert case.scores(ImageLocality()) == expected


DIGEST = "sha256:" + hashlib.sha256(b"root").hexdigest()


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        # TestNormalizedImageName
        ("add :latest postfix 1", "root", "root:latest"),
        ("add :latest postfix 2", "gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("keep it as is 1", "root:tag", "root:tag"),
        ("keep it as is 2", f"root@{DIGEST}", f"root@{DIGEST}"),
    ],
)
def test_normalized_image_name(name: str, given: str, expected: str) -> None:
    assert normalized_image(given) == expected
