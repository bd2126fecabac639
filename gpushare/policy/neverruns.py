"""What can never run, said alike by every command: the error rules on a pod's spec and on a Node's numbers that
`validate` reports, run by the commands that answer about a fleet (place, capacity, doctor) on what they read. So no
command exits 0 on a pod it knows can never run or bind, or on a node of absurd size, and each says it in
validate's words (field, value read, what is allowed, rule ID)."""

from __future__ import annotations

from collections.abc import Iterable

from gpushare.kube.nodes import NodeInfo
from gpushare.kube.workloads import Workload
from gpushare.policy.engine import ClusterFacts, Finding, Subject, evaluate_one
from gpushare.policy.rules import nodes, workloads

#: Error rules the fleet commands report in their own terms: a GPU pod another scheduler serves runs, without a GPU
#: (place's NOT SERVED, doctor's GL604); the unit place refuses outright (GN309).
_SAID_ELSEWHERE = frozenset({"GW214", "GN309"})
#: Rules judged against the nodes there are (no GPU that large, no core_mem node): nodes a question adds (capacity's
#: pools) may serve such a pod, and the pools' sizing says which pods none serves.
ON_INVENTORY = frozenset({"GW206", "GW207"})
WORKLOAD_RULES = tuple(r for r in workloads.RULES if r.severity == "error" and r.id not in _SAID_ELSEWHERE)
NODE_RULES = tuple(r for r in nodes.RULES if r.severity == "error" and r.id not in _SAID_ELSEWHERE)


def of_workload(view: Workload, facts: ClusterFacts) -> list[Finding]:
    """The pod (or controller's pod template) can never run or bind, or asks an absurd size: validate's errors."""
    subject = Subject("workload", f"{view.kind}/{view.namespace}/{view.name}", view.source, view, view.located)
    return evaluate_one(view, facts, WORKLOAD_RULES, subject)


def of_nodes(infos: Iterable[NodeInfo], facts: ClusterFacts) -> list[Finding]:
    """The nodes' numbers no real node reports, and their other errors, as validate reports them."""
    return [
        finding
        for info in infos
        for finding in evaluate_one(info, facts, NODE_RULES, Subject("node", f"Node/{info.name}", info.source, info))
    ]
