"""The reference engine: plain loops over every node for every pod, obviously correct and slow.

The fast engine must agree with it exactly (tests/test_placement_properties.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from gpushare.placement import queue
from gpushare.placement.model import Gpu, Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.preemption import unresolvable_statuses
from gpushare.placement.priorities import DisruptionBudget
from gpushare.placement.result import Assignment, Pending, PlacementResult
from gpushare.placement.sampling import Sampler


def place(
    nodes: list[Node],
    pods: list[Pod],
    profile: Profile,
    node_order: dict[str, str] | None = None,
    explain: bool = False,
    tick: Callable[[], None] = lambda: None,
    budgets: Sequence[DisruptionBudget] = (),
    draws: bool = True,
    queue_mode: queue.QueueMode = "auto",
) -> PlacementResult:
    result = PlacementResult(profile.semantics, nodes=nodes)
    order = node_order or {}
    engine = Plain(nodes, profile)
    sampler = engine.sampler
    if sampler is not None:
        sampler.draws = draws

    def attempt(pod: Pod) -> Assignment | Pending:
        if pod.node is not None:  # created with spec.nodeName: bound at creation, past every filter
            for node in nodes:
                if node.name == pod.node:
                    charged, gpus, _ = profile.bound_gpus(node, pod)
                    return bind(profile, node, charged, gpus=gpus)
            return Pending(pod.namespace, pod.name, 0, (), pod.per_gpu)
        fixed = order.get(pod.key)
        candidates = [n for n in nodes if n.name == fixed] if fixed is not None else nodes
        cycle = profile.prefilter(pod, nodes)
        if sampler is not None and sampler.cuts:
            if fixed is not None:  # the pod's real cycle searched as any other did
                sampler.advance(profile, pod, cycle)
            else:
                found = sampler.schedule(profile, pod, cycle, explain)
                return found if isinstance(found, Pending) else bind(profile, found[0], pod, found[1])
        fitting = []
        why: Counter[str] = Counter()
        by_node = []
        for node in candidates:
            rejected = profile.rejection(node, pod, cycle)
            if rejected:
                why.update(rejected.reasons)
                by_node.append((node.name, rejected))
            else:
                fitting.append(node)
        if not fitting:
            explained = tuple(by_node) if explain else ()
            return Pending(pod.namespace, pod.name, len(candidates), tuple(sorted(why.items())), pod.per_gpu, explained)
        best, tied = (fitting[0], 1) if fixed is not None else profile.choose(pod, fitting, nodes)
        return bind(profile, best, pod, tied)

    queue.drive(pods, attempt, profile, result, tick, order, engine, budgets, explain, queue_mode)
    return result


class Plain:
    """The reference engine as preemption sees it: every answer by asking every node."""

    def __init__(self, nodes: list[Node], profile: Profile) -> None:
        self.nodes = nodes
        self.profile = profile
        self.sampler = Sampler(nodes, profile.scheduler) if profile.scored else None

    def unresolvable(self, pod: Pod, pending: Pending) -> int:
        return sum(unresolvable_statuses(self.profile, self.nodes, pod))

    def evict(self, node: Node, pod: Pod) -> None:
        node.remove_pod(pod)

    def nominations_changed(self, highest: int | None) -> None:
        """Every filter runs on every node here: nothing to do."""

    def nominated(self, pod: Pod, name: str) -> Assignment | None:
        cycle = self.profile.prefilter(pod, self.nodes)
        for node in self.nodes:
            if node.name == name and self.profile.rejection(node, pod, cycle) is None:
                return bind(self.profile, node, pod)
        return None


def bind(profile: Profile, node: Node, pod: Pod, tied: int = 1, gpus: list[Gpu] | None = None) -> Assignment:
    """Charge the pod to the node, on `gpus` or those the device choice gives it."""
    if gpus is None:
        gpus = profile.gpus.choose_gpus(node, pod)
    node.add_pod(pod, gpus)
    return Assignment(pod.namespace, pod.name, node.name, tuple((g.index, pod.per_gpu) for g in gpus), pod.core, tied)
