"""The reference engine: plain loops over every node for every pod, obviously correct and slow.

The fast engine must agree with it exactly (tests/test_placement_properties.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from gpushare.placement import interpod, plugins, requeue, scoring
from gpushare.placement.model import Node, Pod, Semantics
from gpushare.placement.result import Assignment, Pending, PlacementResult


def place(
    nodes: list[Node],
    pods: list[Pod],
    semantics: Semantics,
    node_order: dict[str, str] | None = None,
    explain: bool = False,
    tick: Callable[[], None] = lambda: None,
) -> PlacementResult:
    result = PlacementResult(semantics, nodes=nodes)
    order = node_order or {}

    def attempt(pod: Pod) -> Assignment | Pending:
        fixed = order.get(pod.key)
        candidates = [n for n in nodes if n.name == fixed] if fixed is not None else nodes
        cycle = interpod.prefilter(pod, nodes, semantics.scheduler)
        fitting = []
        why: Counter[str] = Counter()
        by_node = []
        for node in candidates:
            rejected = plugins.rejection(node, pod, semantics, cycle)
            if rejected:
                why.update(rejected.reasons)
                by_node.append((node.name, rejected))
            else:
                fitting.append(node)
        if not fitting:
            explained = tuple(by_node) if explain else ()
            return Pending(pod.namespace, pod.name, len(candidates), tuple(sorted(why.items())), pod.per_gpu, explained)
        best, tied = (fitting[0], 1) if fixed is not None else scoring.choose_node(pod, fitting, nodes, semantics)
        gpus = plugins.choose_gpus(best, pod, semantics)
        plugins.charge(best, pod, gpus)
        return Assignment(
            pod.namespace, pod.name, best.name, tuple((g.index, pod.per_gpu) for g in gpus), pod.core, tied
        )

    requeue.drive(pods, attempt, semantics, result, tick, lambda pod: pod.key in order)
    return result
