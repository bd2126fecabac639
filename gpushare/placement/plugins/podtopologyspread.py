"""PodTopologySpread (framework/plugins/podtopologyspread): the pod's DoNotSchedule constraints keep their skew
(PreFilter counts the matching pods per domain, Filter checks a node), and its ScheduleAnyway constraints, or the
system defaults, prefer the nodes whose domains hold fewer matching pods (Score, NormalizeScore).

A pod without constraints of its own gets the system defaults (spread over hosts and zones) with the selector of
what it belongs to: the Services that select it, and its ReplicaSet, StatefulSet or ReplicationController
(`helper/spread.go` DefaultSelector: from 1.22 the pod's controller reference, before it every such controller
whose selector matches the pod's labels). A pod that belongs to none of them is not spread.

A Deployment in the inputs stands for its ReplicaSet: its pods carry a `pod-template-hash` label and the
ReplicaSet's selector is the Deployment's plus that hash. The hash is the newest ReplicaSet of the Deployment found
among the inputs (the template is taken as unchanged), else one made up for the run.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gpushare.domain import kubescheduler as ks
from gpushare.domain.kubescheduler import MAX_NODE_SCORE, POD_TOPOLOGY_SPREAD, ScoringProfile, go_log, go_round
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping, sequence
from gpushare.kube.podspec import LabelSelector, SelectorError, SpreadConstraint, from_set, parse_selector, tolerates
from gpushare.placement.framework import SPREAD, Cycle, Plugin
from gpushare.placement.model import Node, Pod
from gpushare.placement.plugins.nodeaffinity import matches_required

SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_CONSTRAINTS + " (missing required label)"
#: Reasons a bind can lift: the scheduling queue retries such a pod (`hint`).
LIFTABLE = frozenset({SPREAD_CONSTRAINTS, SPREAD_MISSING_LABEL})
TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
#: The (apiVersion, kind) a controller reference must name for DefaultSelector to read it.
_OWNER_GVK = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}


# --- the system default constraints ------------------------------------------------------------------------------


@dataclass
class Owners:
    """The cluster's Services and pod controllers, by namespace: what the default spreading reads."""

    services: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: (namespace, kind, name) -> selector; ReplicationControllers hold an equality selector.
    controllers: dict[tuple[str, str, str], LabelSelector] = field(default_factory=dict)
    #: (namespace, Deployment name) -> (revision, pod-template-hash) of its newest ReplicaSet among the inputs.
    deployment_hashes: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    #: Controllers whose selector could not be read (their pods are not spread), for a warning.
    unreadable: list[str] = field(default_factory=list)

    def add(self, src: Source) -> None:
        """Take a Service, ReplicationController, ReplicaSet or StatefulSet; other kinds are ignored."""
        obj, kind = src.obj, src.kind
        meta, spec = mapping(obj.get("metadata")), mapping(obj.get("spec"))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if kind == "Service":
            raw = spec.get("selector")
            if isinstance(raw, dict):  # a Service without a selector selects nothing
                self.services.setdefault(namespace, []).append({str(k): str(v) for k, v in raw.items()})
        elif kind == "ReplicationController":
            raw = spec.get("selector")
            if isinstance(raw, dict) and raw:
                self.controllers[(namespace, kind, name)] = from_set(raw)
        elif kind in ("ReplicaSet", "StatefulSet"):
            try:
                self.controllers[(namespace, kind, name)] = parse_selector(spec.get("selector"), "spec.selector")
            except SelectorError as exc:
                self.unreadable.append(f"{kind} {namespace}/{name}: {exc}")
                return
            if kind == "ReplicaSet":
                self._note_revision(namespace, meta)

    def _note_revision(self, namespace: str, meta: dict[str, Any]) -> None:
        template_hash = mapping(meta.get("labels")).get(TEMPLATE_HASH)
        for ref in sequence(meta.get("ownerReferences")):
            ref = mapping(ref)
            if ref.get("kind") == "Deployment" and template_hash:
                try:
                    revision = int(str(mapping(meta.get("annotations")).get(REVISION, "0")))
                except ValueError:
                    revision = 0
                key = (namespace, str(ref.get("name", "")))
                if revision >= self.deployment_hashes.get(key, (-1, ""))[0]:
                    self.deployment_hashes[key] = (revision, str(template_hash))

    def template_hash(self, namespace: str, deployment: str) -> str:
        found = self.deployment_hashes.get((namespace, deployment))
        return found[1] if found else f"gpushare-{deployment}"

    def default_selector(
        self,
        namespace: str,
        labels: Mapping[str, str],
        controller: tuple[str, str, str, str] | None,
        profile: ScoringProfile,
    ) -> LabelSelector:
        """helper/spread.go DefaultSelector for this minor: Services merged, then the controller's selector."""
        merged: dict[str, str] = {}
        for selector in self.services.get(namespace, []):
            if from_set(selector).matches(labels):
                merged.update(selector)
        if profile.spread_selector_by_owner:
            result = from_set(merged)
            if controller is None or (controller[0], controller[1]) not in _OWNER_GVK:
                return result
            found = self.controllers.get((namespace, controller[1], controller[2]))
            if found is None:
                return result
            if controller[1] == "ReplicationController":
                merged.update({r.key: next(iter(r.values)) for r in found.requirements})
                return from_set(merged)
            return result.add(found.requirements) if not found.nothing else result
        # 1.20-1.21: every controller of the namespace whose selector matches the pod's labels
        if not labels:
            return from_set(merged)
        for (ns, kind, _), found in sorted(self.controllers.items()):
            if ns == namespace and kind == "ReplicationController" and found.matches(labels):
                merged.update({r.key: next(iter(r.values)) for r in found.requirements})
        result = from_set(merged)
        for (ns, kind, _), found in sorted(self.controllers.items()):
            if ns == namespace and kind != "ReplicationController" and not found.empty and found.matches(labels):
                result = result.add(found.requirements)
        return result


def soft_constraints(
    own: tuple[SpreadConstraint, ...],
    spreads: bool,
    namespace: str,
    labels: Mapping[str, str],
    controller: tuple[str, str, str, str] | None,
    owners: Owners,
    scheduler: ScoringProfile,
) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """(constraints the pod is scored by, whether they are its own): its own ScheduleAnyway ones when it has
    constraints at all (`spreads`), else the system defaults with its owners' selector."""
    if spreads:
        return own, True
    selector = owners.default_selector(namespace, labels, controller, scheduler)
    if selector.empty or selector.nothing:
        return (), False
    return tuple(SpreadConstraint(key, skew, selector) for key, skew in ks.SYSTEM_DEFAULT_SPREAD), False


# --- PreFilter and Filter: the hard constraints -------------------------------------------------------------------


@dataclass
class Counts:
    """One hard constraint's matching pods per topology value, and the least of them."""

    constraint: SpreadConstraint
    counts: dict[str, int] = field(default_factory=dict)  # topology value -> matching pods
    min_match: int = 2**31 - 1  # math.MaxInt32 when no domain is eligible


#: A number per (selector, namespace) counted, never given twice in a process: nodes keep their counts under it
#: (hashing a selector for every node and pod cost more than the count it saved). Forgotten past a size; a
#: forgotten pair gets a new number, and what nodes kept under the old one is simply never read again.
_NUMBERS: dict[tuple[LabelSelector, str], int] = {}
_NEXT = itertools.count()


def _number(selector: LabelSelector, namespace: str) -> int:
    found = _NUMBERS.get((selector, namespace))
    if found is None:
        if len(_NUMBERS) >= 65536:
            _NUMBERS.clear()
        found = _NUMBERS[(selector, namespace)] = next(_NEXT)
    return found


def matching_pods(node: Node, selector: LabelSelector, namespace: str, key: int) -> int:
    """countPodsMatchSelector: pods bound to the node, in the namespace, that the selector matches. Kept on the node
    under `key` (`_number` of the selector and namespace) until a pod comes or goes: a search scores the
    same nodes for pod after pod, and most did not change."""
    if selector.empty:
        return 0
    known = node.matching.get(key)
    if known is not None and known[0] == node.changes:
        return known[1]
    count = sum(1 for p in node.bound if p.namespace == namespace and selector.matches(p.label_map))
    node.matching[key] = (node.changes, count)
    return count


def included(node: Node, pod: Pod, constraint: SpreadConstraint) -> bool:
    """Whether a node's pods count towards a constraint's domains: the node inclusion policies (before 1.26 the
    reader leaves them at their defaults: the pod's node selector and required affinity honoured, taints not)."""
    if constraint.honor_affinity and not matches_required(node, pod):
        return False
    if constraint.honor_taints:
        return not any(
            t.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, t) for t in node.taints
        )
    return True


def hint(waiting: Pod, reasons: set[str], bound: Pod) -> bool:
    """The queueing hint: a pod rejected for its hard constraints may fit once a pod in its namespace that one of
    their selectors matches is bound."""
    return bool(
        waiting.hard_spread
        and reasons & LIFTABLE
        and bound.namespace == waiting.namespace
        and any(c.selector.matches(bound.label_map) for c in waiting.hard_spread)
    )


# --- Score --------------------------------------------------------------------------------------------------------


def weights(keys: Sequence[str], hosts: int, domains: Sequence[int]) -> list[float]:
    """topologyNormalizingWeight per constraint: log(size + 2), the size being the feasible hosts for the hostname
    key and the number of domains among the feasible nodes for any other."""
    return [_log_of((hosts if key == ks.HOSTNAME_LABEL else domains[i]) + 2) for i, key in enumerate(keys)]


@lru_cache(maxsize=65536)
def _log_of(n: int) -> float:
    return go_log(float(n))


def raw_score(
    constraints: Sequence[SpreadConstraint],
    values: Sequence[str | None],
    counts: Sequence[int],
    weights: Sequence[float],
    scheduler: ScoringProfile,
) -> int:
    """A node's raw score: for each constraint whose key the node has (`values`), the matching pods in its domain
    times the constraint's weight, plus maxSkew - 1; truncated, or rounded from 1.24. (Summed in the constraints'
    order, as the scheduler sums: float addition is not associative.)"""
    score = 0.0
    for i in range(len(constraints)):
        if values[i] is not None:
            score += counts[i] * weights[i] + (constraints[i].max_skew - 1)
    return go_round(score) if scheduler.spread_rounds else int(score)


def normalize(raw: list[int], ignored: list[bool]) -> list[int]:
    """NormalizeScore: 100 * (max + min - score) / max over the nodes not ignored."""
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


class PodTopologySpread(Plugin):
    name = POD_TOPOLOGY_SPREAD
    liftable = LIFTABLE
    unresolvable_reasons = frozenset({SPREAD_MISSING_LABEL})

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler
        #: (pod, nodes, their changes, counts) of the last `_domain_counts`
        self.domain_memo: tuple[Pod, Sequence[Node], int, dict[tuple[str, str], int]] | None = None

    def needs_cycle(self, pod: Pod, anti_affinity_bound: bool) -> bool:
        return bool(pod.hard_spread)

    def prefilter(self, pod: Pod, nodes: Sequence[Node]) -> list[Counts]:
        return [self._counts(c, pod, nodes) for c in pod.hard_spread]

    def _counts(self, constraint: SpreadConstraint, pod: Pod, nodes: Sequence[Node]) -> Counts:
        """The matching pods per domain of a hard constraint. From 1.24 only eligible nodes count (the pod's node
        affinity, every topology key of the pod's hard constraints, the inclusion policies); before, every node in a
        domain some eligible node opened."""
        state = Counts(constraint)
        keys = [c.topology_key for c in pod.hard_spread]
        eligible = [n for n in nodes if all(k in n.labels for k in keys) and included(n, pod, constraint)]
        number = _number(constraint.selector, pod.namespace)
        if self.scheduler.spread_counts_eligible_only:
            for node in eligible:
                value = node.labels[constraint.topology_key]
                state.counts[value] = state.counts.get(value, 0) + matching_pods(
                    node, constraint.selector, pod.namespace, number
                )
        else:
            for node in eligible:
                state.counts.setdefault(node.labels[constraint.topology_key], 0)
            for node in nodes:  # a node without the key counts in the domain "" if an eligible node opened it
                value = node.labels.get(constraint.topology_key, "")
                if value in state.counts:
                    state.counts[value] += matching_pods(node, constraint.selector, pod.namespace, number)
        if state.counts:
            state.min_match = min(state.counts.values())
            if self.scheduler.spread_min_domains and len(state.counts) < constraint.min_domains:
                state.min_match = 0
        return state

    def unresolvable(self, reasons: Sequence[str], node: Node, pod: Pod) -> bool:
        """A node without a hard constraint's topology key is UnschedulableAndUnresolvable; a skew is not."""
        return SPREAD_MISSING_LABEL in reasons

    def hint(self, waiting: Pod, reasons: set[str], bound: Pod) -> bool:
        return hint(waiting, reasons, bound)

    # --- what the fast path reads: the soft constraints' counts (`fast.scoreindex.Spread`) ------------------------

    def indexed(self, pod: Pod) -> bool:
        """Without hard constraints the filter has nothing to say (with them, the pod needs its PreFilter counts)."""
        return not pod.hard_spread

    def score_hook(self) -> str | None:
        return SPREAD

    def pod_key(self, pod: Pod, prepared: object) -> object:
        """The constraints' shape (their selectors are counted by a `Spread` each)."""
        shape = tuple((c.topology_key, c.max_skew, c.honor_affinity, c.honor_taints) for c in pod.spread)
        return (shape, pod.spread_own)

    def spread_included(self, node: Node, pod: Pod, constraint: SpreadConstraint) -> bool:
        return included(node, pod, constraint)

    def spread_weights(self, keys: Sequence[str], hosts: int, domains: Sequence[int]) -> list[float]:
        return weights(keys, hosts, domains)

    def spread_raw(
        self,
        constraints: Sequence[SpreadConstraint],
        values: Sequence[str | None],
        counts: Sequence[int],
        weights: Sequence[float],
    ) -> int:
        return raw_score(constraints, values, counts, weights, self.scheduler)

    def spread_normalize(self, raw: list[int], ignored: list[bool]) -> list[int]:
        return normalize(raw, ignored)

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        """Placing the pod here must keep each hard constraint's skew within maxSkew."""
        if cycle is None:
            return []
        states: list[Counts] = cycle.states[self.name]
        for state in states:
            c = state.constraint
            value = node.labels.get(c.topology_key)
            if value is None:
                return [SPREAD_MISSING_LABEL]
            skew = state.counts.get(value, 0) + (1 if c.selector.matches(pod.label_map) else 0) - state.min_match
            if skew > c.max_skew:
                return [SPREAD_CONSTRAINTS]
        return []

    def _domain_counts(
        self, pod: Pod, all_nodes: Sequence[Node], keys: list[str], numbers: list[int]
    ) -> dict[tuple[str, str], int]:
        """The matching pods of every domain but hosts, over the nodes the pod could count. Kept while the same pod
        is scored on the same nodes and no pod came or went (a search scores the nodes it found, then every node
        that fits)."""
        changes = sum(n.changes for n in all_nodes)
        memo = self.domain_memo
        if memo is not None and memo[0] is pod and memo[1] is all_nodes and memo[2] == changes:
            return memo[3]
        counts: dict[tuple[str, str], int] = {}
        for node in all_nodes:
            if pod.spread_own and not all(k in node.labels for k in keys):
                continue
            for c, number in zip(pod.spread, numbers, strict=True):
                if c.topology_key == ks.HOSTNAME_LABEL or not included(node, pod, c):
                    continue
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                counts[pair] = counts.get(pair, 0) + matching_pods(node, c.selector, pod.namespace, number)
        self.domain_memo = (pod, all_nodes, changes, counts)
        return counts

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        """Fewer matching pods in a node's domains scores higher (podtopologyspread/scoring.go).

        Weights are log(domains + 2) over the feasible nodes (hosts: the feasible nodes themselves); domain counts
        come from every node the pod could count (its node affinity), host counts from the node itself."""
        constraints = pod.spread
        if not constraints:
            return None if self.scheduler.spread_skips_without_constraints else [MAX_NODE_SCORE] * len(feasible)
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
        found = weights(keys, len(feasible) - len(ignored), domains)
        numbers = [_number(c.selector, pod.namespace) for c in constraints]
        every = self._domain_counts(pod, all_nodes, keys, numbers)
        for pair in pair_counts:
            pair_counts[pair] = every.get(pair, 0)
        raw = []
        for node in feasible:
            if node.id in ignored:
                raw.append(0)
                continue
            counts = [
                matching_pods(node, c.selector, pod.namespace, number)
                if c.topology_key == ks.HOSTNAME_LABEL
                else pair_counts.get((c.topology_key, node.labels.get(c.topology_key, "")), 0)
                for c, number in zip(constraints, numbers, strict=True)
            ]
            raw.append(raw_score(constraints, [node.labels.get(k) for k in keys], counts, found, self.scheduler))
        return normalize(raw, [n.id in ignored for n in feasible])
