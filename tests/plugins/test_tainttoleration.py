"""TaintToleration's filter and score, on kube-scheduler's own cases (tainttoleration/taint_toleration_test.go
TestTaintTolerationFilter and TestTaintTolerationScore). The filter's words changed twice: 1.20-1.23 name the taint
"that the pod didn't tolerate", 1.24-1.33 say "untolerated taint {key: value}", 1.34 on no longer name it."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import cluster, node, pod, taint, toleration

from gpushare.domain.minors import scoring_profile
from gpushare.placement.plugins.tainttoleration import TaintToleration

MINORS = [20, 23, 24, 28, 33, 34, 36]


def reason(minor: int, key: str, value: str) -> str:
    if minor <= 23:
        return f"node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate"
    if minor <= 33:
        return f"node(s) had untolerated taint {{{key}: {value}}}"
    return "node(s) had untolerated taint(s)"


def eq(key: str, value: str, effect: str = "NoSchedule") -> dict[str, Any]:
    return toleration(key, value, effect, operator="Equal")


# (name, tolerations, taints, the untolerated taint (key, value) or None)
FILTER: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], tuple[str, str] | None]] = [
    # TestTaintTolerationFilter
    (
        "a pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [taint("dedicated", "user1")],
        ("dedicated", "user1"),
    ),
    (
        "a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [toleration("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1")],
        None,
    ),
    (
        "a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [eq("dedicated", "user2")],
        [taint("dedicated", "user1")],
        ("dedicated", "user1"),
    ),
    (
        "a toleration with operator Exists tolerates the taints on the node",
        [toleration("foo", effect="NoSchedule", operator="Exists")],
        [taint("foo", "bar")],
        None,
    ),
    (
        "multiple tolerations, multiple taints, all tolerated",
        [eq("dedicated", "user2"), toleration("foo", effect="NoSchedule", operator="Exists")],
        [taint("dedicated", "user2"), taint("foo", "bar")],
        None,
    ),
    (
        "key and value match but the (non-empty) effect doesn't",
        [eq("foo", "bar", "PreferNoSchedule")],
        [taint("foo", "bar")],
        ("foo", "bar"),
    ),
    (
        "key and value match, the toleration's effect is empty",
        [toleration("foo", "bar", operator="Equal")],
        [taint("foo", "bar")],
        None,
    ),
    (
        "key and value don't match but the taint is PreferNoSchedule",
        [eq("dedicated", "user2")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        None,
    ),
    ("no toleration, the taint is PreferNoSchedule", [], [taint("dedicated", "user1", "PreferNoSchedule")], None),
    # written: NoExecute keeps pods out as NoSchedule does; the first untolerated taint is the one named
    ("a NoExecute taint", [], [taint("evict", "now", "NoExecute")], ("evict", "now")),
    (
        "the first untolerated taint in the node's order is named",
        [eq("a", "1")],
        [taint("a", "1"), taint("b", "2"), taint("c", "3", "NoExecute")],
        ("b", "2"),
    ),
    ("a taint without a value", [], [taint("gpu")], ("gpu", "")),
    ("tolerate everything (operator Exists, no key)", [toleration(operator="Exists")], [taint("x", "y")], None),
]


@pytest.mark.parametrize("minor", MINORS)
@pytest.mark.parametrize(("name", "tolerations", "taints", "untolerated"), FILTER, ids=[c[0] for c in FILTER])
def test_filter(
    name: str,
    tolerations: list[dict[str, Any]],
    taints: list[dict[str, Any]],
    untolerated: tuple[str, str] | None,
    minor: int,
) -> None:
    case = cluster([node("nodeA", taints=taints)], pod(tolerations=tolerations), minor=minor)
    expected = [] if untolerated is None else [reason(minor, *untolerated)]
    assert case.filter(TaintToleration(scoring_profile(minor)), "nodeA") == expected


def prefer(key: str, value: str) -> dict[str, Any]:
    return taint(key, value, "PreferNoSchedule")


# (name, tolerations, taints per node, expected normalised scores)
SCORE: list[tuple[str, list[dict[str, Any]], list[list[dict[str, Any]]], list[int]]] = [
    # TestTaintTolerationScore
    (
        "node with taints tolerated by the pod gets a higher score than those with intolerable taints",
        [eq("foo", "bar", "PreferNoSchedule")],
        [[prefer("foo", "bar")], [prefer("foo", "blah")]],
        [100, 0],
    ),
    (
        "nodes whose taints are all tolerated get the same score, however many they have",
        [eq("cpu-type", "arm64", "PreferNoSchedule"), eq("disk-type", "ssd", "PreferNoSchedule")],
        [[], [prefer("cpu-type", "arm64")], [prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")]],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets",
        [eq("foo", "bar", "PreferNoSchedule")],
        [[], [prefer("cpu-type", "arm64")], [prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")]],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations with effect PreferNoSchedule count",
        [eq("cpu-type", "arm64"), eq("disk-type", "ssd")],
        [[], [taint("cpu-type", "arm64")], [prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")]],
        [100, 100, 0],
    ),
    (
        "default behaviour: no taints and tolerations, lands on node with no taints",
        [],
        [[], [prefer("cpu-type", "arm64")]],
        [100, 0],
    ),
    # written: a toleration without an effect counts for PreferNoSchedule taints; three intolerable against one
    (
        "a toleration without an effect tolerates a PreferNoSchedule taint",
        [toleration("foo", operator="Exists")],
        [[prefer("foo", "bar")], [prefer("baz", "1")]],
        [100, 0],
    ),
    (
        "scores scale by the most intolerable taints (100 - 100 * n // max)",
        [],
        [[prefer("a", "1")], [prefer("a", "1"), prefer("b", "1"), prefer("c", "1")], []],
        [67, 0, 100],
    ),
]


@pytest.mark.parametrize("minor", [20, 28, 36])
@pytest.mark.parametrize(("name", "tolerations", "taints", "expected"), SCORE, ids=[c[0] for c in SCORE])
def test_score(
    name: str, tolerations: list[dict[str, Any]], taints: list[list[dict[str, Any]]], expected: list[int], minor: int
) -> None:
    nodes = [node(f"node{i}", taints=t) for i, t in enumerate(taints)]
    case = cluster(nodes, pod(tolerations=tolerations), minor=minor)
    assert case.scores(TaintToleration(scoring_profile(minor))) == expected
