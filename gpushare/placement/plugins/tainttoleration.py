"""TaintToleration (framework/plugins/tainttoleration): a node's NoSchedule and NoExecute taints keep out the pods
that do not tolerate them (filter); PreferNoSchedule taints count against a node (score, fewer is better)."""

from __future__ import annotations

from collections.abc import Sequence

from gpushare.domain.kubescheduler import TAINT_TOLERATION, ScoringProfile
from gpushare.kube.podspec import tolerates
from gpushare.placement.framework import GROUPED, Cycle, Plugin, default_normalize
from gpushare.placement.model import Node, Pod


def raw_score(node: Node, pod: Pod) -> int:
    """PreferNoSchedule taints none of the pod's tolerations (of that effect or of every effect) tolerates; the fast
    engine groups nodes by it."""
    tolerations = tuple(t for t in pod.tolerations if not t.effect or t.effect == "PreferNoSchedule")
    return sum(1 for t in node.taints if t.effect == "PreferNoSchedule" and not tolerates(tolerations, t))


def normalize(raws: list[int]) -> list[int]:
    """Fewer intolerable taints score higher: reversed DefaultNormalizeScore."""
    return default_normalize(raws, reverse=True)


class TaintToleration(Plugin):
    name = TAINT_TOLERATION
    static = True

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        """The first NoSchedule or NoExecute taint the pod does not tolerate."""
        for taint in node.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
                return [self.scheduler.taint_reason(taint.key, taint.value)]
        return []

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return normalize([raw_score(n, pod) for n in feasible])

    def score_hook(self) -> str | None:
        return GROUPED

    def pod_key(self, pod: Pod, prepared: object) -> object:
        return pod.tolerations

    def raw_score(self, node: Node, pod: Pod) -> int:
        return raw_score(node, pod)

    def normalize(self, raws: list[int]) -> list[int]:
        return normalize(raws)
