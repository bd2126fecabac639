"""NodeAffinity (framework/plugins/nodeaffinity): the pod's node selector and required node affinity (filter), and
its preferred node affinity (score); the matching itself is component-helpers' nodeaffinity, which the spreading
plugin reads too."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from gpushare.domain.kubescheduler import NODE_AFFINITY, ScoringProfile
from gpushare.kube.podspec import Requirement
from gpushare.placement.framework import GROUPED, Cycle, Plugin, default_normalize
from gpushare.placement.model import Node, Pod

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


@lru_cache(maxsize=4096)
def _valid_values(values: tuple[str, ...]) -> bool:
    """Every value a label value (validation.IsValidLabelValue): labels.NewRequirement refuses the requirement
    otherwise, and a term with a requirement it cannot read matches no node (the API server lets such a pod in)."""
    return all(len(v) <= 63 and _LABEL_VALUE.fullmatch(v) is not None for v in values)


def _matches(requirement: Requirement, node: Node) -> bool:
    if requirement.operator in ("In", "NotIn") and not requirement.field and not _valid_values(requirement.values):
        return False
    if requirement.field:
        present, value = requirement.key == "metadata.name", node.name
    else:
        present, value = requirement.key in node.labels, node.labels.get(requirement.key, "")
    op = requirement.operator
    if op == "In":
        return present and value in requirement.values
    if op == "NotIn":
        return not present or value not in requirement.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present:
        try:
            number, bound = int(value), int(requirement.values[0])
        except (ValueError, IndexError):
            return False
        return number > bound if op == "Gt" else number < bound
    return False


def matches_term(term: tuple[Requirement, ...], node: Node) -> bool:
    return all(_matches(r, node) for r in term)


def matches_required(node: Node, pod: Pod) -> bool:
    """nodeSelector and required node affinity (component-helpers RequiredNodeAffinity.Match)."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector):
        return False
    return not pod.affinity or any(matches_term(term, node) for term in pod.affinity)


def raw_score(node: Node, pod: Pod) -> int:
    """The weights of the preferred terms the node matches; the fast engine groups nodes by it."""
    return sum(weight for weight, term in pod.preferred if matches_term(term, node))


def normalize(raws: list[int]) -> list[int]:
    return default_normalize(raws, reverse=False)


class NodeAffinity(Plugin):
    name = NODE_AFFINITY
    static = True

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        return [] if matches_required(node, pod) else [self.scheduler.affinity_reason]

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        return normalize([raw_score(n, pod) for n in feasible])

    def score_hook(self) -> str | None:
        return GROUPED

    def pod_key(self, pod: Pod, prepared: object) -> object:
        return pod.preferred

    def raw_score(self, node: Node, pod: Pod) -> int:
        return raw_score(node, pod)

    def normalize(self, raws: list[int]) -> list[int]:
        return normalize(raws)
