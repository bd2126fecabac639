"""NodePreferAvoidPods (framework/plugins/nodepreferavoidpods, to 1.21): a node's annotation asks to keep the pods
of named ReplicaSets and ReplicationControllers away."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpushare.domain.kubescheduler import MAX_NODE_SCORE, PREFER_AVOID_PODS
from gpushare.kube.fields import mapping, sequence
from gpushare.placement.framework import Plugin
from gpushare.placement.model import Node, Pod

#: The node annotation it reads (v1.PreferAvoidPodsAnnotationKey).
ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"
#: The controllers whose pods it knows (a pod's owner is kept for these kinds only).
KINDS = ("ReplicationController", "ReplicaSet")


def avoided(annotations: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    """Controllers (kind, uid) the node's annotation names; unreadable JSON avoids nothing, as in kube-scheduler."""
    raw = annotations.get(ANNOTATION)
    try:
        entries = json.loads(raw).get("preferAvoidPods") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        return frozenset()
    result = set()
    for entry in sequence(entries):
        ref = mapping(mapping(mapping(entry).get("podSignature")).get("podController"))
        result.add((str(ref.get("kind", "")), str(ref.get("uid", ""))))
    return frozenset(result)


def score(node: Node, pod: Pod) -> int:
    """0 where the node's annotation names the pod's ReplicaSet or ReplicationController."""
    return 0 if pod.owner is not None and pod.owner in node.avoid else MAX_NODE_SCORE


class NodePreferAvoidPods(Plugin):
    name = PREFER_AVOID_PODS

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return [score(n, pod) for n in feasible]
