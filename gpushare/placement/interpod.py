"""Rules between pods: pod affinity and anti-affinity, and topology spread constraints that must hold.

kube-scheduler's InterPodAffinity and PodTopologySpread plugins count other pods per topology domain before they
look at a node (PreFilter), then check each node against those counts (Filter); InterPodAffinity also scores
(`interpodaffinity/filtering.go`, `scoring.go`, `podtopologyspread/filtering.go`). Counting needs every bound pod,
so it is done once per pod to place, in a `Cycle`, and only when a rule asks for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain.kubescheduler import MAX_NODE_SCORE, ScoringProfile
from gpushare.kube import selectors
from gpushare.kube.fields import mapping, sequence
from gpushare.kube.selectors import LabelSelector
from gpushare.placement import matching
from gpushare.placement.model import Node, Pod, SpreadConstraint

AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY_1_20 = "node(s) didn't match pod affinity/anti-affinity"  # 1.20-1.21 add it to each of the three
SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_CONSTRAINTS + " (missing required label)"
#: HardPodAffinityWeight's default: an existing pod's required affinity counts this much when scoring.
HARD_POD_AFFINITY_WEIGHT = 1


@dataclass(frozen=True)
class AffinityTerm:
    """A pod (anti-)affinity term: pods its selector matches, in its namespaces, share a topology domain."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector  # NOTHING when the term names none
    topology_key: str

    def matches(self, pod: Pod) -> bool:
        """framework.AffinityTerm.Matches: the pod's namespace is one of the term's (by name or by its labels) and the
        selector matches the pod's labels."""
        in_namespace = pod.namespace in self.namespaces or self.namespace_selector.matches(pod.ns_label_map)
        return in_namespace and self.selector.matches(pod.label_map)


@dataclass(frozen=True)
class PodAffinity:
    required: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred: tuple[tuple[int, AffinityTerm], ...] = ()
    preferred_anti: tuple[tuple[int, AffinityTerm], ...] = ()


def _term(raw: Any, namespace: str, profile: ScoringProfile, where: str) -> AffinityTerm:
    raw = mapping(raw)
    names = frozenset(str(n) for n in sequence(raw.get("namespaces")))
    ns_raw = raw.get("namespaceSelector") if profile.minor >= 22 else None  # beta, on by default, from 1.22
    if not names and ns_raw is None:
        names = frozenset({namespace})
    return AffinityTerm(
        selectors.parse(raw.get("labelSelector"), f"{where}.labelSelector"),
        names,
        selectors.parse(ns_raw, f"{where}.namespaceSelector"),
        str(raw.get("topologyKey", "")),
    )


def parse_pod_affinity(spec: dict[str, Any], namespace: str, profile: ScoringProfile) -> PodAffinity | None:
    """The pod's podAffinity and podAntiAffinity (None when it has neither). Raises SelectorError."""
    affinity = mapping(spec.get("affinity"))
    if affinity.get("podAffinity") is None and affinity.get("podAntiAffinity") is None:
        return None
    parts: list[Any] = []
    for kind in ("podAffinity", "podAntiAffinity"):
        section = mapping(affinity.get(kind))
        where = f"spec.affinity.{kind}"
        required = sequence(section.get("requiredDuringSchedulingIgnoredDuringExecution"))
        preferred = sequence(section.get("preferredDuringSchedulingIgnoredDuringExecution"))
        parts.append(tuple(_term(t, namespace, profile, f"{where}.required[{i}]") for i, t in enumerate(required)))
        parts.append(
            tuple(
                (
                    int(mapping(t).get("weight") or 0),
                    _term(mapping(t).get("podAffinityTerm"), namespace, profile, f"{where}.preferred[{i}]"),
                )
                for i, t in enumerate(preferred)
            )
        )
    return PodAffinity(parts[0], parts[2], parts[1], parts[3])


# --- PreFilter: the counts a pod's rules are checked against -----------------------------------------------------


def _pair(node: Node, key: str) -> tuple[str, str] | None:
    value = node.labels.get(key)
    return None if value is None else (key, value)


@dataclass
class SpreadState:
    constraint: SpreadConstraint
    counts: dict[str, int] = field(default_factory=dict)  # topology value -> matching pods
    min_match: int = 2**31 - 1  # math.MaxInt32 when no domain is eligible


@dataclass
class Cycle:
    """One pod's PreFilter state: pod (anti-)affinity counts per topology pair, and its hard spreading domains."""

    existing_anti: Counter[tuple[str, str]] = field(default_factory=Counter)
    affinity: Counter[tuple[str, str]] = field(default_factory=Counter)
    anti: Counter[tuple[str, str]] = field(default_factory=Counter)
    spread: list[SpreadState] = field(default_factory=list)


def needs_cycle(pod: Pod, anti_affinity_bound: bool) -> bool:
    """Whether any rule between pods can reject a node for this pod: its own required pod (anti-)affinity or hard
    spreading, or a bound pod's required anti-affinity."""
    own = pod.pod_affinity is not None and (pod.pod_affinity.required or pod.pod_affinity.required_anti)
    return bool(own or pod.hard_spread or anti_affinity_bound)


def _all_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    return bool(terms) and all(t.matches(pod) for t in terms)


def prefilter(pod: Pod, nodes: Sequence[Node], profile: ScoringProfile) -> Cycle:
    """InterPodAffinity's and PodTopologySpread's PreFilter for this pod, over every node and its bound pods."""
    cycle = Cycle()
    affinity = pod.pod_affinity or PodAffinity()
    for node in nodes:
        for other in node.bound:
            anti = other.pod_affinity.required_anti if other.pod_affinity else ()
            for term in anti:  # a bound pod's anti-affinity that the new pod matches keeps it out of the domain
                pair = _pair(node, term.topology_key)
                if pair and term.matches(pod):
                    cycle.existing_anti[pair] += 1
            if _all_match(affinity.required, other):
                for term in affinity.required:
                    pair = _pair(node, term.topology_key)
                    if pair:
                        cycle.affinity[pair] += 1
            for term in affinity.required_anti:
                pair = _pair(node, term.topology_key)
                if pair and term.matches(other):
                    cycle.anti[pair] += 1
    cycle.spread = [_spread_state(c, pod, nodes, profile) for c in pod.hard_spread]
    return cycle


def _spread_state(
    constraint: SpreadConstraint, pod: Pod, nodes: Sequence[Node], profile: ScoringProfile
) -> SpreadState:
    """The matching pods per domain of a hard constraint. From 1.24 only eligible nodes count (the pod's node
    affinity, every topology key of the pod's hard constraints, the inclusion policies from 1.26); before, every
    node in a domain some eligible node opened."""
    state = SpreadState(constraint)
    keys = [c.topology_key for c in pod.hard_spread]
    eligible = [n for n in nodes if all(k in n.labels for k in keys) and included(n, pod, constraint, profile)]
    if profile.minor >= 24:
        for node in eligible:
            value = node.labels[constraint.topology_key]
            state.counts[value] = state.counts.get(value, 0) + _matching(node, constraint.selector, pod.namespace)
    else:
        for node in eligible:
            state.counts.setdefault(node.labels[constraint.topology_key], 0)
        for node in nodes:  # a node without the key counts in the domain "" if an eligible node opened it
            value = node.labels.get(constraint.topology_key, "")
            if value in state.counts:
                state.counts[value] += _matching(node, constraint.selector, pod.namespace)
    if state.counts:
        state.min_match = min(state.counts.values())
        if profile.minor >= 27 and len(state.counts) < constraint.min_domains:  # MinDomainsInPodTopologySpread
            state.min_match = 0
    return state


def included(node: Node, pod: Pod, constraint: SpreadConstraint, profile: ScoringProfile) -> bool:
    """Whether a node's pods count towards a constraint's domains: the node inclusion policies from 1.26 (affinity
    honoured, taints ignored by default); before, the pod's node selector and required affinity."""
    if (constraint.honor_affinity or profile.minor < 26) and not matching.matches_required(node, pod):
        return False
    if constraint.honor_taints and profile.minor >= 26:
        return not any(
            t.effect in ("NoSchedule", "NoExecute") and not matching.tolerates(pod.tolerations, t) for t in node.taints
        )
    return True


def _matching(node: Node, selector: LabelSelector, namespace: str) -> int:
    if selector.empty:
        return 0
    return sum(1 for p in node.bound if p.namespace == namespace and selector.matches(p.label_map))


# --- Filter ------------------------------------------------------------------------------------------------------


def spread_rejection(node: Node, pod: Pod, cycle: Cycle) -> list[str]:
    """PodTopologySpread's Filter: placing the pod here must keep each hard constraint's skew within maxSkew."""
    for state in cycle.spread:
        c = state.constraint
        value = node.labels.get(c.topology_key)
        if value is None:
            return [SPREAD_MISSING_LABEL]
        skew = state.counts.get(value, 0) + (1 if c.selector.matches(pod.label_map) else 0) - state.min_match
        if skew > c.max_skew:
            return [SPREAD_CONSTRAINTS]
    return []


def affinity_rejection(node: Node, pod: Pod, cycle: Cycle, profile: ScoringProfile) -> list[str]:
    """InterPodAffinity's Filter: required affinity met in the node's domains, no anti-affinity either way."""
    prefix = [AFFINITY_1_20] if profile.minor <= 21 else []
    affinity = pod.pod_affinity or PodAffinity()
    exists = True
    for term in affinity.required:
        pair = _pair(node, term.topology_key)
        if pair is None:
            return [*prefix, AFFINITY_RULES]
        if cycle.affinity[pair] <= 0:
            exists = False
    if not exists and not (not cycle.affinity and _all_match(affinity.required, pod)):
        return [*prefix, AFFINITY_RULES]
    if cycle.anti:
        for term in affinity.required_anti:
            pair = _pair(node, term.topology_key)
            if pair and cycle.anti[pair] > 0:
                return [*prefix, ANTI_AFFINITY_RULES]
    if cycle.existing_anti and any(cycle.existing_anti[pair] > 0 for pair in node.labels.items()):
        return [*prefix, EXISTING_ANTI_AFFINITY]
    return []


# --- Score -------------------------------------------------------------------------------------------------------


def affinity_scores(
    pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node], profile: ScoringProfile
) -> list[int] | None:
    """InterPodAffinity's score: weights of preferred terms (and existing pods' required affinity) summed per
    topology domain, min-max normalised; None when no term applies (the score then stays 0 everywhere)."""
    own = pod.pod_affinity or PodAffinity()
    scores: dict[tuple[str, str], int] = {}

    def add(term: AffinityTerm, weight: int, target: Pod, node: Node) -> None:
        pair = _pair(node, term.topology_key)
        if pair and term.matches(target):
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
    if profile.minor <= 20:  # 1.20 starts both bounds at 0
        low, high = min(0, *raw), max(0, *raw)
    else:
        low, high = min(raw), max(raw)
    if high - low <= 0:
        return [0] * len(raw)
    return [int(float(MAX_NODE_SCORE) * ((s - low) / (high - low))) for s in raw]


def namespace_labels(
    namespace: str, objects: Mapping[str, Mapping[str, str]], profile: ScoringProfile
) -> dict[str, str]:
    """A namespace's labels as the scheduler's lister gives them: the Namespace object's, with the name label the
    API server sets on every namespace from 1.21 (NamespaceDefaultLabelName); empty for one not in the inputs."""
    labels = dict(objects.get(namespace, {}))
    if profile.minor >= 21:
        labels.setdefault("kubernetes.io/metadata.name", namespace)
    return labels
