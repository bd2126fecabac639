"""What a node's labels, fields and taints say to a pod: tolerations, node selector terms, required node affinity.

Shared by the filters, the scores and the rules between pods, as kube-scheduler shares component-helpers'
`nodeaffinity` and `v1.Toleration.ToleratesTaint`.
"""

from __future__ import annotations

from gpushare.placement.model import Node, Pod, Requirement, Taint, Toleration


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """v1 Toleration.ToleratesTaint for any of them: an empty effect or key matches every one; Exists ignores the
    value, Equal (or no operator) compares it."""
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        if t.operator == "Exists" or (t.operator in ("", "Equal") and (t.value or "") == taint.value):
            return True
    return False


def _matches(requirement: Requirement, node: Node) -> bool:
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
