"""NodeUnschedulable's filter, on kube-scheduler's own cases (nodeunschedulable/node_unschedulable_test.go
TestNodeUnschedulable) and on the tolerations the API allows for its taint."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import ALL_MINORS, cluster, node, pod, toleration

from gpushare.placement.plugins.nodeunschedulable import NodeUnschedulable

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

# (name, node unschedulable, pod tolerations, expected reasons)
CASES: list[tuple[str, bool, list[dict[str, Any]], list[str]]] = [
    # TestNodeUnschedulable
    ("does not schedule pod to unschedulable node", True, [], [REASON]),
    ("schedule pod to normal node", False, [], []),
    (
        "schedule pod with toleration to unschedulable node",
        True,
        [toleration(UNSCHEDULABLE_TAINT, effect="NoSchedule")],
        [],
    ),
    # written: v1 ToleratesTaint as the plugin applies it to the taint a cordon stands for
    ("a toleration of every taint (operator Exists, no key)", True, [toleration(operator="Exists")], []),
    (
        "the taint's key with operator Exists and no effect",
        True,
        [toleration(UNSCHEDULABLE_TAINT, operator="Exists")],
        [],
    ),
    ("the taint's key with another effect", True, [toleration(UNSCHEDULABLE_TAINT, effect="NoExecute")], [REASON]),
    (
        "the taint's key with a value (Equal: the taint has none)",
        True,
        [toleration(UNSCHEDULABLE_TAINT, "x")],
        [REASON],
    ),
    ("another key", True, [toleration("node.kubernetes.io/not-ready", operator="Exists")], [REASON]),
    ("tolerations do not matter on a schedulable node", False, [toleration("x", operator="Exists")], []),
]


@pytest.mark.parametrize("minor", [ALL_MINORS[0], 28, ALL_MINORS[-1]])
@pytest.mark.parametrize(("name", "unschedulable", "tolerations", "expected"), CASES, ids=[c[0] for c in CASES])
def test_filter(
    name: str, unschedulable: bool, tolerations: list[dict[str, Any]], expected: list[str], minor: int
) -> None:
    case = cluster([node("n", unschedulable=unschedulable)], pod(tolerations=tolerations), minor=minor)
    assert case.filter(NodeUnschedulable(), "n") == expected
