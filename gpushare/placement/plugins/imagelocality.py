"""ImageLocality (framework/plugins/imagelocality): a node that already holds the pod's images scores higher, by the
images' sizes spread over the nodes that hold them (the scheduler cache's image states, which the model build
keeps on each node: `Node.image_scores`; the pod's images are named as it looks them up: `podspec.normalized_image`)."""

from __future__ import annotations

from collections.abc import Sequence

from gpushare.domain.kubescheduler import IMAGE_LOCALITY, MAX_NODE_SCORE
from gpushare.placement.framework import LOCAL, Plugin
from gpushare.placement.model import Node, Pod

_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


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

    def score_hook(self) -> str | None:
        return LOCAL

    def node_score(self, node: Node, pod: Pod) -> int:
        return score(node, pod)

    def prepare(self, nodes: Sequence[Node]) -> object:
        """The images some node holds: only these score anywhere."""
        return frozenset(image for node in nodes for image in node.image_scores)

    def pod_key(self, pod: Pod, prepared: object) -> object:
        """The pod's images some node holds, and (for its ceiling) how many it names; with none held anywhere it
        scores 0 on every node, whatever the pod names."""
        held = tuple(image for image in pod.images if isinstance(prepared, frozenset) and image in prepared)
        return (held, len(pod.images)) if held else ((), 0)
