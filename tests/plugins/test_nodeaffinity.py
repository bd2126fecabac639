"""NodeAffinity's filter and score, on kube-scheduler's own cases (nodeaffinity/node_affinity_test.go TestNodeAffinity
and TestNodeAffinityPriority). The filter's words: "node(s) didn't match Pod's node affinity" in 1.20, with
"/selector" from 1.21."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import cluster, node, pod

from gpushare.domain.minors import scoring_profile
from gpushare.placement.plugins.nodeaffinity import NodeAffinity

MINORS = [20, 21, 28, 36]


def reason(minor: int) -> str:
    return "node(s) didn't match Pod's node affinity" + ("" if minor == 20 else "/selector")


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def exprs(*requirements: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(requirements)}


def fields(*requirements: dict[str, Any]) -> dict[str, Any]:
    return {"matchFields": list(requirements)}


# (name, pod spec fields, node name, node labels, fits)
FILTER: list[tuple[str, dict[str, Any], str, dict[str, str], bool]] = [
    # TestNodeAffinity
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, "node1", {}, False),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, "node1", {"foo": "bar"}, True),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, "node1", {"foo": "bar", "baz": "blah"}, True),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, "node1", {"foo": "bar"}, False),
    (
        "matchExpressions using In operator that matches the existing node",
        {"affinity": required(exprs(expr("foo", "In", "bar", "value2")))},
        "node1",
        {"foo": "bar"},
        True,
    ),
    (
        "matchExpressions using Gt operator that matches the existing node",
        {"affinity": required(exprs(expr("kernel-version", "Gt", "0204")))},
        "node1",
        {"kernel-version": "0206"},
        True,
    ),
    (
        "matchExpressions using NotIn operator that matches the existing node",
        {"affinity": required(exprs(expr("mem-type", "NotIn", "DDR", "DDR2")))},
        "node1",
        {"mem-type": "DDR3"},
        True,
    ),
    (
        "matchExpressions using Exists operator that matches the existing node",
        {"affinity": required(exprs(expr("GPU", "Exists")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    (
        "affinity that doesn't match node's labels won't schedule onto the node",
        {"affinity": required(exprs(expr("foo", "In", "value1", "value2")))},
        "node1",
        {"foo": "bar"},
        False,
    ),
    (
        "empty MatchExpressions match no objects and won't schedule onto the node",
        {"affinity": required(exprs())},
        "node1",
        {"foo": "bar"},
        False,
    ),
    ("no Affinity will schedule onto a node", {}, "node1", {"foo": "bar"}, True),
    ("Affinity but nil NodeSelector will schedule onto a node", {"affinity": {"nodeAffinity": {}}}, "node1", {}, True),
    (
        "multiple matchExpressions ANDed that matches the existing node",
        {"affinity": required(exprs(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    (
        "multiple matchExpressions ANDed that doesn't match the existing node",
        {"affinity": required(exprs(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        False,
    ),
    (
        "multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
        {
            "affinity": required(
                exprs(expr("foo", "In", "bar", "value2")), exprs(expr("diffkey", "In", "wrong", "value2"))
            )
        },
        "node1",
        {"foo": "bar"},
        True,
    ),
    (
        "an Affinity and a PodSpec.NodeSelector both satisfied",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(exprs(expr("foo", "Exists")))},
        "node1",
        {"foo": "bar"},
        True,
    ),
    (
        "an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(exprs(expr("foo", "Exists")))},
        "node1",
        {"foo": "barrrrrr"},
        False,
    ),
    (
        "matchFields using In operator that matches the existing node",
        {"affinity": required(fields(name_in("node1")))},
        "node1",
        {},
        True,
    ),
    (
        "matchFields using In operator that does not match the existing node",
        {"affinity": required(fields(name_in("node1")))},
        "node2",
        {},
        False,
    ),
    (
        "two terms: matchFields does not match, but matchExpressions matches",
        {"affinity": required(fields(name_in("node1")), exprs(expr("foo", "In", "bar")))},
        "node2",
        {"foo": "bar"},
        True,
    ),
    (
        "one term: matchFields does not match, but matchExpressions matches",
        {"affinity": required(fields(name_in("node1")) | exprs(expr("foo", "In", "bar")))},
        "node2",
        {"foo": "bar"},
        False,
    ),
    (
        "one term: both matchFields and matchExpressions match",
        {"affinity": required(fields(name_in("node1")) | exprs(expr("foo", "In", "bar")))},
        "node1",
        {"foo": "bar"},
        True,
    ),
    (
        "two terms: both matchFields and matchExpressions do not match",
        {"affinity": required(fields(name_in("node1")), exprs(expr("foo", "In", "not-match-to-bar")))},
        "node2",
        {"foo": "bar"},
        False,
    ),
    (
        "two terms of node.Name affinity",
        {"affinity": required(fields(name_in("node1")), fields(name_in("node2")))},
        "node2",
        {},
        True,
    ),
    (
        "two conflicting matchFields requirements",
        {"affinity": required(fields(name_in("node1"), name_in("node2")))},
        "node2",
        {"foo": "bar"},
        False,
    ),
    (
        "an invalid value in an Affinity term won't be scheduled onto the node",
        {"affinity": required(exprs(expr("foo", "NotIn", "invalid value: ___@#$%^")))},
        "node1",
        {"foo": "bar"},
        False,
    ),
    # written: the other operators' edges (component-helpers nodeaffinity)
    (
        "In with a valid value the node has beside an invalid one: the requirement is unreadable, so no match",
        {"affinity": required(exprs(expr("foo", "In", "bar", "not valid!")))},
        "node1",
        {"foo": "bar"},
        False,
    ),
    (
        "a term with an unreadable requirement beside one that matches: the terms are ORed",
        {"affinity": required(exprs(expr("foo", "NotIn", "-bad")), exprs(expr("foo", "In", "bar")))},
        "node1",
        {"foo": "bar"},
        True,
    ),
    (
        "Gt on a label that is not an integer matches nothing",
        {"affinity": required(exprs(expr("kernel-version", "Gt", "1")))},
        "node1",
        {"kernel-version": "v2"},
        False,
    ),
    (
        "Lt compares as integers",
        {"affinity": required(exprs(expr("rank", "Lt", "10")))},
        "node1",
        {"rank": "9"},
        True,
    ),
    (
        "NotIn matches a node without the label",
        {"affinity": required(exprs(expr("mem-type", "NotIn", "DDR")))},
        "node1",
        {},
        True,
    ),
    (
        "DoesNotExist rejects a node with the label",
        {"affinity": required(exprs(expr("GPU", "DoesNotExist")))},
        "node1",
        {"GPU": "x"},
        False,
    ),
    (
        "an empty term beside one that matches: the terms are ORed",
        {"affinity": required(exprs(), exprs(expr("foo", "Exists")))},
        "node1",
        {"foo": "bar"},
        True,
    ),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "spec", "node_name", "labels", "fits"), FILTER, ids=[c[0] for c in FILTER])
def test_filter(
    name: str, spec: dict[str, Any], node_name: str, labels: dict[str, str], fits: bool, minor: int
) -> None:
    case = cluster([node(node_name, labels=labels)], pod(**spec), minor=minor)
    assert case.filter(NodeAffinity(scoring_profile(minor)), node_name) == ([] if fits else [reason(minor)])


def preferred(*terms: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    entries = [{"weight": w, "preference": exprs(*requirements)} for w, requirements in terms]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": entries}}


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred(
    (2, [expr("foo", "In", "bar")]),
    (4, [expr("key", "In", "value")]),
    (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
)

# (name, pod affinity, node labels in order, expected normalised scores)
SCORE: list[tuple[str, dict[str, Any] | None, list[dict[str, str]], list[int]]] = [
    # TestNodeAffinityPriority
    ("all nodes are same priority as NodeAffinity is nil", None, [LABEL1, LABEL2, LABEL3], [0, 0, 0]),
    ("no node matches preferred scheduling requirements", AFFINITY1, [LABEL4, LABEL2, LABEL3], [0, 0, 0]),
    ("only node1 matches the preferred scheduling requirements", AFFINITY1, [LABEL1, LABEL2, LABEL3], [100, 0, 0]),
    (
        "all nodes match the preferred requirements with different priorities",
        AFFINITY2,
        [LABEL1, LABEL5, LABEL2],
        [18, 100, 36],
    ),
    # written: a term of weight 0 counts nothing; the scores scale by the best node's raw score, not by 100
    (
        "a preferred term of weight 0 adds nothing",
        preferred((0, [expr("foo", "In", "bar")]), (1, [expr("key", "Exists")])),
        [LABEL1, LABEL2],
        [0, 100],
    ),
    (
        "raw 3 and 1: 100 and 100 * 1 // 3",
        preferred((1, [expr("foo", "Exists")]), (2, [expr("key", "Exists")])),
        [LABEL5, LABEL1],
        [100, 33],
    ),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "affinity", "labels", "expected"), SCORE, ids=[c[0] for c in SCORE])
def test_score(
    name: str, affinity: dict[str, Any] | None, labels: list[dict[str, str]], expected: list[int], minor: int
) -> None:
    nodes = [node(f"node{i}", labels=lab) for i, lab in enumerate(labels)]
    case = cluster(nodes, pod(**({"affinity": affinity} if affinity else {})), minor=minor)
    assert case.scores(NodeAffinity(scoring_profile(minor))) == expected
