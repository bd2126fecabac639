"""NodePreferAvoidPods (framework/plugins/nodepreferavoidpods, to 1.21): a node's annotation asks to keep the pods
of named ReplicaSets and ReplicationControllers away (the node reader gives them: `NodeInfo.avoided`)."""

from __future__ import annotations

from collections.abc import Sequence

from gpushare.domain.kubescheduler import MAX_NODE_SCORE, PREFER_AVOID_PODS
from gpushare.placement.framework import LOCAL, Plugin
from gpushare.placement.model import Node, Pod

#: The controllers whose pods it knows (a pod's owner is kept for these kinds only).
KINDS = ("ReplicationController", "ReplicaSet")


def score(node: Node, pod: Pod) -> int:
    """0 where the node's annotation names the pod's ReplicaSet or ReplicationController."""
    return 0 if pod.owner is not None and pod.owner in node.avoid else MAX_NODE_SCORE


class NodePreferAvoidPods(Plugin):
    name = PREFER_AVOID_PODS

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [score(n, pod) for n in feasible]

    def score_hook(self) -> str | None:
        return LOCAL

    def node_score(self, node: Node, pod: Pod) -> int:
        return score(node, pod)

    def prepare(self, nodes: Sequence[Node]) -> object:
        """The owners some node's annotation names: pods of any other owner score alike."""
        return frozenset(owner for node in nodes for owner in node.avoid)

    def pod_key(self, pod: Pod, prepared: object) -> object:
        return pod.owner if isinstance(prepared, frozenset) and pod.owner in prepared else None
