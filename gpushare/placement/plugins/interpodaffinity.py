"""InterPodAffinity (framework/plugins/interpodaffinity): the pod's required pod affinity and anti-affinity, and
bound pods' anti-affinity, checked per topology domain (PreFilter counts, Filter checks); preferred terms, and bound
pods' terms, scored per domain."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpushare.domain.kubescheduler import INTER_POD_AFFINITY, MAX_NODE_SCORE, ScoringProfile
from gpushare.kube.podspec import AffinityTerm, PodAffinity
from gpushare.placement.framework import Cycle, Plugin
from gpushare.placement.model import Node, Pod

AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY_1_20 = "node(s) didn't match pod affinity/anti-affinity"  # 1.20-1.21 add it to each of the three
#: Reasons a bind can lift: the scheduling queue retries such a pod (`hint`).
LIFTABLE = frozenset({AFFINITY_RULES, AFFINITY_1_20})
#: HardPodAffinityWeight's default: an existing pod's required affinity counts this much when scoring.
HARD_POD_AFFINITY_WEIGHT = 1
_NONE = PodAffinity()


@dataclass
class State:
    """The PreFilter's counts per topology pair (key, value)."""

    existing_anti: Counter[tuple[str, str]] = field(default_factory=Counter)
    affinity: Counter[tuple[str, str]] = field(default_factory=Counter)
    anti: Counter[tuple[str, str]] = field(default_factory=Counter)


def _pair(node: Node, key: str) -> tuple[str, str] | None:
    value = node.labels.get(key)
    return None if value is None else (key, value)


def term_matches(term: AffinityTerm, pod: Pod) -> bool:
    return term.matches(pod.namespace, pod.ns_label_map, pod.label_map)


def _all_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    return bool(terms) and all(term_matches(t, pod) for t in terms)


def hint(waiting: Pod, reasons: set[str], bound: Pod) -> bool:
    """The queueing hint: a pod rejected for its required affinity may fit once a pod matching all its terms is
    bound."""
    affinity = waiting.pod_affinity.required if waiting.pod_affinity is not None else ()
    return bool(affinity and reasons & LIFTABLE and all(term_matches(term, bound) for term in affinity))


class InterPodAffinity(Plugin):
    name = INTER_POD_AFFINITY
    liftable = LIFTABLE
    unresolvable_reasons = frozenset({AFFINITY_RULES})

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def needs_cycle(self, pod: Pod, anti_affinity_bound: bool) -> bool:
        own = pod.pod_affinity is not None and (pod.pod_affinity.required or pod.pod_affinity.required_anti)
        return bool(own or anti_affinity_bound)

    def prefilter(self, pod: Pod, nodes: Sequence[Node]) -> State:
        state = State()
        affinity = pod.pod_affinity or _NONE
        for node in nodes:
            for other in node.bound:
                anti = other.pod_affinity.required_anti if other.pod_affinity else ()
                for term in anti:  # a bound pod's anti-affinity that the new pod matches keeps it out of the domain
                    pair = _pair(node, term.topology_key)
                    if pair and term_matches(term, pod):
                        state.existing_anti[pair] += 1
                if _all_match(affinity.required, other):
                    for term in affinity.required:
                        pair = _pair(node, term.topology_key)
                        if pair:
                            state.affinity[pair] += 1
                for term in affinity.required_anti:
                    pair = _pair(node, term.topology_key)
                    if pair and term_matches(term, other):
                        state.anti[pair] += 1
        return state

    def unresolvable(self, reasons: Sequence[str], node: Node, pod: Pod) -> bool:
        """The pod's required affinity unmet is UnschedulableAndUnresolvable (no deletion can bring a matching pod);
        anti-affinity, the pod's or the bound pods', is not."""
        return AFFINITY_RULES in reasons

    def hint(self, waiting: Pod, reasons: set[str], bound: Pod) -> bool:
        return hint(waiting, reasons, bound)

    def indexed(self, pod: Pod) -> bool:
        """The filter reads the pod's PreFilter counts: a pod that needs none (`needs_cycle`) it never rejects."""
        return True

    def scores_alike(self, pods: Sequence[Pod], nodes: Sequence[Node]) -> bool:
        """No pod to place and none bound has pod affinity: every node scores 0. Otherwise its score depends on other
        pods' domains, which the index does not hold (every pod is then scored node by node)."""
        return all(p.pod_affinity is None for p in pods) and all(b.pod_affinity is None for n in nodes for b in n.bound)

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        """Required affinity met in the node's domains, no anti-affinity either way."""
        if cycle is None:
            return []
        state: State = cycle.states[self.name]
        prefix = [AFFINITY_1_20] if self.scheduler.affinity_reason_generic else []
        affinity = pod.pod_affinity or _NONE
        exists = True
        for term in affinity.required:
            pair = _pair(node, term.topology_key)
            if pair is None:
                return [*prefix, AFFINITY_RULES]
            if state.affinity[pair] <= 0:
                exists = False
        if not exists and not (not state.affinity and _all_match(affinity.required, pod)):
            return [*prefix, AFFINITY_RULES]
        if state.anti:
            for term in affinity.required_anti:
                pair = _pair(node, term.topology_key)
                if pair and state.anti[pair] > 0:
                    return [*prefix, ANTI_AFFINITY_RULES]
        if state.existing_anti and any(state.existing_anti[pair] > 0 for pair in node.labels.items()):
            return [*prefix, EXISTING_ANTI_AFFINITY]
        return []

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        """Weights of preferred terms (and existing pods' required affinity) summed per topology domain, min-max
        normalised; None when no term applies (the score then stays 0 everywhere)."""
        own = pod.pod_affinity or _NONE
        scores: dict[tuple[str, str], int] = {}

        def add(term: AffinityTerm, weight: int, target: Pod, node: Node) -> None:
            pair = _pair(node, term.topology_key)
            if pair and term_matches(term, target):
                scores[pair] = scores.get(pair, 0) + weight

        for node in all_nodes:
            if not node.labels:
                continue
            for other in node.bound:
                theirs = other.pod_affinity
                if not (own.preferred or own.preferred_anti) and theirs is None:
                    continue
                for weight, term in own.preferred:
                    add(term, weight, other, node)
                for weight, term in own.preferred_anti:
                    add(term, -weight, other, node)
                if theirs is not None:
                    for term in theirs.required:
                        add(term, HARD_POD_AFFINITY_WEIGHT, pod, node)
                    for weight, term in theirs.preferred:
                        add(term, weight, pod, node)
                    for weight, term in theirs.preferred_anti:
                        add(term, -weight, pod, node)
        if not scores:
            return None
        raw = [sum(scores.get(pair, 0) for pair in node.labels.items()) for node in feasible]
        if self.scheduler.affinity_score_from_zero:
            low, high = min(0, *raw), max(0, *raw)
        else:
            low, high = min(raw), max(raw)
        if high - low <= 0:
            return [0] * len(raw)
        return [int(float(MAX_NODE_SCORE) * ((s - low) / (high - low))) for s in raw]
