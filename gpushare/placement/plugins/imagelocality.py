"""ImageLocality (framework/plugins/imagelocality): a node that already holds the pod's images scores higher, by the
images' sizes spread over the nodes that hold them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpushare.domain.kubescheduler import IMAGE_LOCALITY, MAX_NODE_SCORE
from gpushare.kube.nodes import NodeInfo
from gpushare.placement.framework import Plugin
from gpushare.placement.model import Node, Pod

_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


def normalized_image(name: str) -> str:
    """The lookup name: `:latest` added when the reference names no tag."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def node_scores(nodes: Sequence[Node], infos: Sequence[NodeInfo]) -> None:
    """Each node's image scores: an image's size times the share of all nodes that hold it.

    kube-scheduler's cache keeps one size per image name, the one the first node to report it gave; the dry run
    takes the first node in input order (`kubectl get nodes` lists them by name, as the scheduler's informer does
    when it starts). Its count of nodes holding an image is refreshed when a node is updated, which kubelets do every
    few minutes; the dry run counts every node."""
    holders: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    for info in infos:
        for names, size in info.images:
            for name in names:
                sizes.setdefault(name, size)
        holders.update({n for names, _ in info.images for n in names})
    for node, info in zip(nodes, infos, strict=True):
        for names, _ in info.images:
            for name in names:
                node.image_scores[name] = int(sizes[name] * (holders[name] / len(nodes)))


def score(node: Node, pod: Pod) -> int:
    """The node's share of the pod's image bytes, between 23 MB and 1000 MB per container."""
    total = sum(node.image_scores.get(image, 0) for image in pod.images)
    top = MAX_CONTAINER_THRESHOLD * len(pod.images)
    if total < MIN_THRESHOLD:
        total = MIN_THRESHOLD
    elif total > top:
        total = top
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


class ImageLocality(Plugin):
    name = IMAGE_LOCALITY

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [score(n, pod) for n in feasible]
