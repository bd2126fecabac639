"""NodeUnschedulable (framework/plugins/nodeunschedulable): a cordoned node takes only pods that tolerate its
unschedulable taint."""

from __future__ import annotations

from gpushare.domain.kubescheduler import NODE_UNSCHEDULABLE
from gpushare.kube.podspec import Taint, tolerates
from gpushare.placement.framework import Cycle, Plugin
from gpushare.placement.model import Node, Pod

REASON = "node(s) were unschedulable"
#: The taint a cordoned node stands for (v1.TaintNodeUnschedulable); DaemonSet pods tolerate it.
TAINT: Taint = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(Plugin):
    name = NODE_UNSCHEDULABLE
    static = True

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        return [REASON] if node.unschedulable and not tolerates(pod.tolerations, TAINT) else []
