"""Score and select: how kube-scheduler chooses among the nodes a pod fits (upstream semantics).

Each plugin of the modelled profile scores every feasible node, normalises over them, and is weighted; the
highest total wins (schedule_one.go prioritizeNodes, selectHost). The arithmetic is the scheduler's own, integer
division and float truncation included, per minor (`ScoringProfile`), so small differences vanish into ties as
they do in the real scheduler. kube-scheduler breaks ties at random; the dry run takes the first tied node by GPU
room and name (`tie_break`) and reports how many were tied, so a user sees where the real choice may differ.

Plugins read only the model: a node's allocatable and requested resources, labels, taints, images and bound
pods; a pod's requests, tolerations, affinities, images and spreading constraints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from gpushare.domain import kubescheduler as ks
from gpushare.domain.kubescheduler import MAX_NODE_SCORE, ScoringProfile, go_log, go_round
from gpushare.kube.selectors import LabelSelector
from gpushare.placement import interpod, matching, plugins
from gpushare.placement.model import Node, Pod, Semantics, SpreadConstraint

#: A plugin's scores over the feasible nodes, normalised; None when the plugin skips the pod.
Scorer = Callable[[Pod, Sequence[Node], Sequence[Node], ScoringProfile], list[int] | None]

_MB = 1024 * 1024
IMAGE_MIN = 23 * _MB
IMAGE_MAX_PER_CONTAINER = 1000 * _MB


def default_normalize(scores: list[int], reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore: scale to 0..100 by the highest score (reversed: 100 minus that)."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else scores
    scaled = [MAX_NODE_SCORE * s // top for s in scores]
    return [MAX_NODE_SCORE - s for s in scaled] if reverse else scaled


# --- node resources ------------------------------------------------------------------------------------------


def least_allocated_score(node: Node, cpu: int, memory: int, profile: ScoringProfile) -> int:
    """LeastAllocated on cpu and memory (weights 1), the non-zero requests of the node plus `cpu`/`memory`. Written
    out per resource: the fast engine asks it for every node a bind changes, in every kind of pod's view."""
    total = weights = 0
    allocatable = node.cpu
    if allocatable or not profile.skips_unallocatable:
        weights += 1
        requested = node.cpu_nz_used + cpu
        if allocatable and requested <= allocatable:
            total += (allocatable - requested) * MAX_NODE_SCORE // allocatable
    allocatable = node.memory
    if allocatable or not profile.skips_unallocatable:
        weights += 1
        requested = node.memory_nz_used + memory
        if allocatable and requested <= allocatable:
            total += (allocatable - requested) * MAX_NODE_SCORE // allocatable
    return total // weights if weights else 0


def balanced_score(node: Node, pod: Pod, profile: ScoringProfile) -> int:
    """BalancedAllocation: how evenly cpu and memory would be requested."""
    if not profile.balanced_by_deviation:  # 1.20-1.21: the non-zero requests, 1 - |cpu - memory|
        cpu = (node.cpu_nz_used + pod.nz_cpu) / node.cpu if node.cpu else 1.0
        memory = (node.memory_nz_used + pod.nz_memory) / node.memory if node.memory else 1.0
        if cpu >= 1 or memory >= 1:
            return 0
        return int((1 - abs(cpu - memory)) * MAX_NODE_SCORE)
    if profile.balanced_skips_best_effort and not pod.cpu and not pod.memory:
        return 0
    with_pod = _balance(node, pod.cpu, pod.memory)
    if profile.balanced_by_improvement:
        return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - _balance(node, 0, 0)) // 2
    return with_pod


def _balance(node: Node, cpu: int, memory: int) -> int:
    """1 - the standard deviation of the node's requested fractions of cpu and memory (each capped at 1), as a
    score: with two resources the deviation is half their difference; a resource the node has none of is left out
    (and with one left, the deviation is 0)."""
    if not (node.cpu and node.memory):
        return MAX_NODE_SCORE
    fraction_cpu = min((node.cpu_used + cpu) / node.cpu, 1.0)
    fraction_memory = min((node.memory_used + memory) / node.memory, 1.0)
    return int((1 - abs((fraction_cpu - fraction_memory) / 2)) * MAX_NODE_SCORE)


def _least_allocated(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], profile: ScoringProfile) -> list[int]:
    return [least_allocated_score(n, pod.nz_cpu, pod.nz_memory, profile) for n in feasible]


def _balanced(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], profile: ScoringProfile) -> list[int]:
    return [balanced_score(n, pod, profile) for n in feasible]


# --- node preferences --------------------------------------------------------------------------------------------


def intolerable_prefer_no_schedule(node: Node, pod: Pod) -> int:
    """TaintToleration's raw score: PreferNoSchedule taints none of the pod's tolerations (of that effect or of
    every effect) tolerates."""
    tolerations = tuple(t for t in pod.tolerations if not t.effect or t.effect == "PreferNoSchedule")
    return sum(1 for t in node.taints if t.effect == "PreferNoSchedule" and not matching.tolerates(tolerations, t))


def _taint_toleration(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], __: ScoringProfile) -> list[int]:
    return default_normalize([intolerable_prefer_no_schedule(n, pod) for n in feasible], reverse=True)


def preferred_affinity(node: Node, pod: Pod) -> int:
    """NodeAffinity's raw score: the weights of the preferred terms the node matches."""
    return sum(weight for weight, term in pod.preferred if matching.matches_term(term, node))


def _node_affinity(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], __: ScoringProfile) -> list[int]:
    return default_normalize([preferred_affinity(n, pod) for n in feasible], reverse=False)


def image_score(node: Node, pod: Pod) -> int:
    """ImageLocality: the node's share of the pod's image bytes, between 23 MB and 1000 MB per container."""
    total = sum(node.image_scores.get(image, 0) for image in pod.images)
    top = IMAGE_MAX_PER_CONTAINER * len(pod.images)
    if total < IMAGE_MIN:
        total = IMAGE_MIN
    elif total > top:
        total = top
    return MAX_NODE_SCORE * (total - IMAGE_MIN) // (top - IMAGE_MIN)


def _image_locality(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], __: ScoringProfile) -> list[int]:
    return [image_score(n, pod) for n in feasible]


def avoid_score(node: Node, pod: Pod) -> int:
    """NodePreferAvoidPods: 0 where the node's annotation names the pod's ReplicaSet or ReplicationController."""
    return 0 if pod.owner is not None and pod.owner in node.avoid else MAX_NODE_SCORE


def _prefer_avoid(pod: Pod, feasible: Sequence[Node], _: Sequence[Node], __: ScoringProfile) -> list[int]:
    return [avoid_score(n, pod) for n in feasible]


# --- topology spreading ----------------------------------------------------------------------------------------


def matching_pods(node: Node, selector: LabelSelector, namespace: str) -> int:
    """countPodsMatchSelector: pods bound to the node, in the namespace, that the selector matches."""
    if selector.empty:
        return 0
    return sum(1 for p in node.bound if p.namespace == namespace and selector.matches(p.label_map))


def _pod_topology_spread(
    pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node], profile: ScoringProfile
) -> list[int] | None:
    """PodTopologySpread's score: fewer matching pods in a node's domains scores higher (podtopologyspread/scoring.go).

    Weights are log(domains + 2) over the feasible nodes (hosts: the feasible nodes themselves); domain counts
    come from every node the pod could count (its node affinity), host counts from the node itself."""
    constraints = pod.spread
    if not constraints:
        return None if profile.spread_skips_without_constraints else [MAX_NODE_SCORE] * len(feasible)
    keys = [c.topology_key for c in constraints]
    ignored = {n.id for n in feasible if pod.spread_own and not all(k in n.labels for k in keys)}
    pair_counts: dict[tuple[str, str], int] = {}
    domains = [0] * len(constraints)
    for node in feasible:
        if node.id in ignored:
            continue
        for i, key in enumerate(keys):
            if key != ks.HOSTNAME_LABEL and (key, node.labels.get(key, "")) not in pair_counts:
                pair_counts[(key, node.labels.get(key, ""))] = 0
                domains[i] += 1
    weights = spread_weights(keys, len(feasible) - len(ignored), domains)
    for node in all_nodes:
        if pod.spread_own and not all(k in node.labels for k in keys):
            continue
        for c in constraints:
            pair = (c.topology_key, node.labels.get(c.topology_key, ""))
            if pair in pair_counts and interpod.included(node, pod, c, profile):
                pair_counts[pair] += matching_pods(node, c.selector, pod.namespace)
    raw = []
    for node in feasible:
        if node.id in ignored:
            raw.append(0)
            continue
        counts = [
            matching_pods(node, c.selector, pod.namespace)
            if c.topology_key == ks.HOSTNAME_LABEL
            else pair_counts.get((c.topology_key, node.labels.get(c.topology_key, "")), 0)
            for c in constraints
        ]
        raw.append(spread_raw(constraints, [node.labels.get(k) for k in keys], counts, weights, profile))
    return normalize_spread(raw, [n.id in ignored for n in feasible])


def spread_weights(keys: Sequence[str], hosts: int, domains: Sequence[int]) -> list[float]:
    """topologyNormalizingWeight per constraint: log(size + 2), the size being the feasible hosts for the hostname
    key and the number of domains among the feasible nodes for any other."""
    return [_log_of((hosts if key == ks.HOSTNAME_LABEL else domains[i]) + 2) for i, key in enumerate(keys)]


@lru_cache(maxsize=65536)
def _log_of(n: int) -> float:
    return go_log(float(n))


def spread_raw(
    constraints: Sequence[SpreadConstraint],
    values: Sequence[str | None],
    counts: Sequence[int],
    weights: Sequence[float],
    profile: ScoringProfile,
) -> int:
    """A node's raw PodTopologySpread score: for each constraint whose key the node has (`values`), the matching
    pods in its domain times the constraint's weight, plus maxSkew - 1; truncated, or rounded from 1.24. (Summed in
    the constraints' order, as the scheduler sums: float addition is not associative.)"""
    score = 0.0
    for i in range(len(constraints)):
        if values[i] is not None:
            score += counts[i] * weights[i] + (constraints[i].max_skew - 1)
    return go_round(score) if profile.spread_rounds else int(score)


def normalize_spread(raw: list[int], ignored: list[bool]) -> list[int]:
    """PodTopologySpread.NormalizeScore: 100 * (max + min - score) / max over the nodes not ignored."""
    counted = False
    low = high = 0
    for i in range(len(raw)):
        if not ignored[i]:
            s = raw[i]
            if not counted:
                counted, low, high = True, s, s
            elif s < low:
                low = s
            elif s > high:
                high = s
    result = [0] * len(raw)
    if not counted:
        return result
    high = max(0, high)
    for i in range(len(raw)):
        if not ignored[i]:
            result[i] = MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - raw[i]) // high
    return result


# --- the profile -------------------------------------------------------------------------------------------------

SCORERS: dict[str, Scorer] = {
    ks.NODE_RESOURCES_FIT: _least_allocated,
    ks.LEAST_ALLOCATED: _least_allocated,
    ks.BALANCED_ALLOCATION: _balanced,
    ks.IMAGE_LOCALITY: _image_locality,
    ks.INTER_POD_AFFINITY: interpod.affinity_scores,
    ks.NODE_AFFINITY: _node_affinity,
    ks.PREFER_AVOID_PODS: _prefer_avoid,
    ks.POD_TOPOLOGY_SPREAD: _pod_topology_spread,
    ks.TAINT_TOLERATION: _taint_toleration,
}


def prioritize(pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node], profile: ScoringProfile) -> list[int]:
    """Each feasible node's total: every plugin's normalised score times its weight, summed."""
    totals = [0] * len(feasible)
    for name, weight in profile.weights:
        scorer = SCORERS.get(name)
        scores = scorer(pod, feasible, all_nodes, profile) if scorer is not None else None
        if scores is None:
            continue
        for i, score in enumerate(scores):
            totals[i] += score * weight
    return totals


def select(feasible: Sequence[Node], totals: Sequence[int]) -> tuple[Node, int]:
    """selectHost: a node with the highest total, and how many nodes shared it. kube-scheduler picks among tied
    nodes at random; the dry run takes the one with the most GPU memory free on one device, then the first by name
    (`tie_break`), so the choice is repeatable and the fast engine finds it by bisection."""
    best = max(totals)
    tied = [n for n, t in zip(feasible, totals, strict=True) if t == best]
    return min(tied, key=tie_break), len(tied)


def tie_break(node: Node) -> tuple[int, str]:
    return -plugins.gpu_room(node), node.name


def choose(pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node], profile: ScoringProfile) -> tuple[Node, int]:
    """The node kube-scheduler binds the pod to, and the number of nodes tied with it. A single feasible node is
    taken without scoring, as the scheduler does."""
    if len(feasible) == 1:
        return feasible[0], 1
    return select(feasible, prioritize(pod, feasible, all_nodes, profile))


def choose_node(
    pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node], semantics: Semantics
) -> tuple[Node, int]:
    """The node a fitting pod goes to, and how many nodes tied for it. upstream: kube-scheduler's scoring; ack: the
    binpack/spread order by GPU memory allocated (ACK's own node scoring is not public; ties go by name, none is
    reported)."""
    if semantics.name == "upstream":
        return choose(pod, feasible, all_nodes, semantics.scheduler)
    return min(feasible, key=lambda n: plugins.score_key(n, semantics)), 1
