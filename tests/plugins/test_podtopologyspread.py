"""PodTopologySpread's filter and score, on kube-scheduler's own cases (podtopologyspread/filtering_test.go
TestSingleConstraint and TestMultipleConstraints; scoring_test.go TestPodTopologySpreadScore). A node's raw score is
truncated before 1.24 and rounded from it, so the score tables hold both columns, each as upstream's test file of
that time expects it (release-1.23 and master)."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import cluster, node, pod

from gpushare.domain.minors import scoring_profile
from gpushare.placement.plugins.podtopologyspread import PodTopologySpread

HOST = "kubernetes.io/hostname"
CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
MISSING = CONSTRAINTS + " (missing required label)"


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def spread(skew: int, key: str, selector: dict[str, Any] | None, hard: bool = True, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        **extra,
    }
    if selector is not None:
        found["labelSelector"] = selector
    return found


def labelled(name: str, **labels: str) -> dict[str, Any]:
    return node(name, labels=labels)


def bound(name: str, on: str, *labels: str, namespace: str = "default") -> dict[str, Any]:
    return pod(name, namespace=namespace, labels=dict.fromkeys(labels, ""), on=on)


def incoming(*constraints: dict[str, Any], labels: tuple[str, ...] = ("foo",), **spec: Any) -> dict[str, Any]:
    return pod(labels=dict.fromkeys(labels, ""), topologySpreadConstraints=list(constraints), **spec)


ZONED = [
    labelled("node-a", zone="zone1", node="node-a"),
    labelled("node-b", zone="zone1", node="node-b"),
    labelled("node-x", zone="zone2", node="node-x"),
    labelled("node-y", zone="zone2", node="node-y"),
]
# matching pods spread as 2/1/0/3 over the nodes, 3/3 over the zones
SPREAD_2103 = [
    bound("p-a1", "node-a", "foo"),
    bound("p-a2", "node-a", "foo"),
    bound("p-b1", "node-b", "foo"),
    bound("p-y1", "node-y", "foo"),
    bound("p-y2", "node-y", "foo"),
    bound("p-y3", "node-y", "foo"),
]

# (name, pod, nodes, bound pods, expected reason per node ("" fits))
FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]] = [
    # TestSingleConstraint
    ("no existing pods", incoming(spread(1, "zone", exists("foo"))), ZONED, [], dict.fromkeys("abxy", "")),
    (
        "no existing pods, incoming pod doesn't match itself",
        incoming(spread(1, "zone", exists("bar"))),
        ZONED,
        [],
        dict.fromkeys("abxy", ""),
    ),
    (
        "existing pods with mis-matched namespace doesn't count",
        incoming(spread(1, "zone", exists("foo"))),
        ZONED,
        [
            bound("p-a1", "node-a", "foo", namespace="ns1"),
            bound("p-b1", "node-a", "foo", namespace="ns2"),
            bound("p-x1", "node-x", "foo"),
            bound("p-y1", "node-y", "foo"),
        ],
        {"a": "", "b": "", "x": CONSTRAINTS, "y": CONSTRAINTS},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        incoming(spread(1, "zone", exists("foo"))),
        ZONED,
        SPREAD_2103,
        dict.fromkeys("abxy", ""),
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        incoming(spread(1, "zone", exists("foo"))),
        [ZONED[0], labelled("node-b", zon="zone1", node="node-b"), *ZONED[2:]],
        [
            bound("p-a1", "node-a", "foo"),
            bound("p-b1", "node-b", "foo"),
            bound("p-x1", "node-x", "foo"),
            bound("p-y1", "node-y", "foo"),
        ],
        {"a": "", "b": MISSING, "x": CONSTRAINTS, "y": CONSTRAINTS},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        incoming(spread(1, "node", exists("foo"))),
        ZONED,
        SPREAD_2103,
        {"a": CONSTRAINTS, "b": CONSTRAINTS, "x": "", "y": CONSTRAINTS},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        incoming(spread(2, "node", exists("foo"))),
        ZONED,
        SPREAD_2103,
        {"a": CONSTRAINTS, "b": "", "x": "", "y": CONSTRAINTS},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        incoming(spread(1, "node", exists("foo")), labels=("bar",)),
        ZONED,
        SPREAD_2103,
        {"a": CONSTRAINTS, "b": "", "x": "", "y": CONSTRAINTS},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        incoming(
            spread(1, "node", exists("foo")),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}
                        ]
                    }
                }
            },
        ),
        ZONED,
        SPREAD_2103,
        # node-b and node-x: "in real case, it's false" (NodeAffinity rejects them; this plugin does not)
        {"a": "", "b": "", "x": "", "y": CONSTRAINTS},
    ),
    # TestMultipleConstraints
    (
        "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        incoming(spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))),
        ZONED,
        SPREAD_2103,
        {"a": CONSTRAINTS, "b": CONSTRAINTS, "x": "", "y": CONSTRAINTS},
    ),
    (
        "two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        incoming(spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))),
        ZONED,
        [*SPREAD_2103, bound("p-y4", "node-y", "foo")],
        dict.fromkeys("abxy", CONSTRAINTS),
    ),
    (
        "constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        incoming(spread(1, "zone", exists("foo")), spread(1, "node", exists("bar")), labels=("foo", "bar")),
        ZONED,
        [bound("p-a1", "node-a", "foo"), bound("p-y1", "node-y", "bar")],
        {"a": CONSTRAINTS, "b": CONSTRAINTS, "x": "", "y": CONSTRAINTS},
    ),
]


@pytest.mark.parametrize("minor", [20, 23, 24, 28, 36])
@pytest.mark.parametrize(("name", "new", "nodes", "existing", "expected"), FILTER, ids=[c[0] for c in FILTER])
def test_filter(
    name: str,
    new: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    expected: dict[str, str],
    minor: int,
) -> None:
    case = cluster(nodes, new, existing=existing, minor=minor)
    plugin = PodTopologySpread(scoring_profile(minor))
    got = {n.name[-1]: "; ".join(case.filter(plugin, n.name)) for n in case.nodes}
    assert got == expected


@pytest.mark.parametrize(("minor", "fits"), [(24, True), (26, True), (27, False), (36, False)])
def test_filter_min_domains_from_1_27(minor: int, fits: bool) -> None:
    # written: two zones hold one matching pod each; minDomains 3 counts the missing third zone as empty (global
    # minimum 0) from 1.27, where MinDomainsInPodTopologySpread is on by default: 1 + 1 - 0 > maxSkew 1
    nodes = [labelled("node-a", zone="zone1"), labelled("node-x", zone="zone2")]
    existing = [bound("p-a1", "node-a", "foo"), bound("p-x1", "node-x", "foo")]
    case = cluster(nodes, incoming(spread(1, "zone", exists("foo"), minDomains=3)), existing=existing, minor=minor)
    assert case.filter(PodTopologySpread(scoring_profile(minor)), "node-a") == ([] if fits else [CONSTRAINTS])


def hosts(*names: str, **labels: str) -> list[dict[str, Any]]:
    return [node(n, labels={HOST: n, **labels}) for n in names]


def many(node_name: str, count: int, *labels: str, prefix: str = "") -> list[dict[str, Any]]:
    return [bound(f"p-{prefix or node_name[-1]}{i}", node_name, *labels) for i in range(1, count + 1)]


FOO_HOST_1 = incoming(spread(1, HOST, exists("foo"), hard=False))
SPREAD_4213 = [
    *many("node-a", 4, "foo"),
    *many("node-b", 2, "foo"),
    *many("node-x", 1, "foo"),
    *many("node-y", 3, "foo"),
]
ZONES_ABXY = [
    node("node-a", labels={"zone": "zone1", HOST: "node-a"}),
    node("node-b", labels={"zone": "zone1", HOST: "node-b"}),
    node("node-x", labels={"zone": "zone2", HOST: "node-x"}),
    node("node-y", labels={"zone": "zone2", HOST: "node-y"}),
]
TWO_SELECTORS = incoming(
    spread(1, "zone", exists("foo"), hard=False), spread(1, HOST, exists("bar"), hard=False), labels=("foo", "bar")
)
MIXED = [
    bound("p-a1", "node-a", "foo"),
    bound("p-b1", "node-b", "foo", "bar"),
    bound("p-y1", "node-y", "foo"),
    bound("p-y2", "node-y", "bar"),
]

# (name, pod, all nodes, feasible nodes (None: all), bound pods, other objects, 1.20-1.23 scores, 1.24 on)
SCORE: list[
    tuple[
        str,
        dict[str, Any],
        list[dict[str, Any]],
        list[str] | None,
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[int],
        list[int],
    ]
] = [
    # TestPodTopologySpreadScore
    (
        "one constraint on node, no existing pods",
        FOO_HOST_1,
        hosts("node-a", "node-b"),
        None,
        [],
        [],
        [100, 100],
        [100, 100],
    ),
    (
        "one constraint on node, only one node is candidate",
        FOO_HOST_1,
        hosts("node-a", "node-b"),
        ["node-a"],
        [*many("node-a", 2, "foo"), *many("node-b", 1, "foo")],
        [],
        [100],
        [100],
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        FOO_HOST_1,
        hosts("node-a", "node-b"),
        None,
        [*many("node-a", 1, "foo"), *many("node-b", 1, "foo")],
        [],
        [100, 100],
        [100, 100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        FOO_HOST_1,
        hosts("node-a", "node-b", "node-c", "node-d"),
        None,
        [*many("node-a", 2, "foo"), *many("node-b", 1, "foo"), *many("node-d", 3, "foo")],
        [],
        [40, 80, 100, 0],
        [20, 60, 100, 0],
    ),
    (
        "one constraint on node, null selector",
        incoming(spread(1, HOST, None, hard=False)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        None,
        [*many("node-a", 2, "foo"), *many("node-b", 1, "foo"), *many("node-d", 3, "foo")],
        [],
        [100, 100, 100, 100],
        [100, 100, 100, 100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        incoming(spread(2, HOST, exists("foo"), hard=False)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        None,
        [*many("node-a", 2, "foo"), *many("node-b", 1, "foo"), *many("node-d", 3, "foo")],
        [],
        [50, 83, 100, 16],
        [33, 66, 100, 16],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        incoming(spread(3, HOST, exists("foo"), hard=False)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        None,
        [*many("node-a", 4, "foo"), *many("node-b", 3, "foo"), *many("node-c", 2, "foo"), *many("node-d", 1, "foo")],
        [],
        [33, 55, 77, 100],
        [44, 66, 77, 100],
    ),
    (
        "system defaulting, nodes don't have zone, pods match service",
        incoming(),
        hosts("node-a", "node-b", "node-c", "node-d"),
        None,
        [*many("node-a", 4, "foo"), *many("node-b", 3, "foo"), *many("node-c", 2, "foo"), *many("node-d", 1, "foo")],
        [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s", "namespace": "default"},
                "spec": {"selector": {"foo": ""}},
            }
        ],
        [33, 55, 77, 100],
        [44, 66, 77, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        FOO_HOST_1,
        hosts("node-a", "node-b", "node-x", "node-y"),
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        [],
        [16, 66, 100],
        [33, 83, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        FOO_HOST_1,
        [*hosts("node-a"), node("node-b", labels={"n": "node-b"}), *hosts("node-x", "node-y")],
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        [],
        [20, 0, 100],
        [16, 0, 100],
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        incoming(spread(1, "zone", exists("foo"), hard=False)),
        ZONES_ABXY,
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        [],
        [62, 62, 100],
        [75, 75, 100],
    ),
    (
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        incoming(spread(1, "zone", exists("foo"), hard=False), spread(1, HOST, exists("foo"), hard=False)),
        ZONES_ABXY,
        ["node-a", "node-x"],
        [*many("node-a", 2, "foo"), *many("node-b", 1, "foo"), *many("node-x", 2, "foo"), *many("node-y", 4, "foo")],
        [],
        [100, 54],
        [100, 63],
    ),
    (
        "two Constraints on zone and node, with different labelSelectors",
        TWO_SELECTORS,
        ZONES_ABXY,
        None,
        MIXED,
        [],
        [75, 25, 100, 50],
        [60, 20, 100, 60],
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        TWO_SELECTORS,
        ZONES_ABXY,
        None,
        [bound("p-b1", "node-b", "bar"), bound("p-x1", "node-x", "foo"), bound("p-y1", "node-y", "foo", "bar")],
        [],
        [100, 75, 50, 0],
        [100, 60, 40, 0],
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        TWO_SELECTORS,
        ZONES_ABXY,
        ["node-a", "node-b", "node-x"],
        MIXED,
        [],
        [75, 25, 100],
        [50, 25, 100],
    ),
    (
        "existing pods in a different namespace do not count",
        FOO_HOST_1,
        hosts("node-a", "node-b"),
        None,
        [
            bound("p-a1", "node-a", "foo", namespace="ns1"),
            bound("p-a2", "node-a", "foo"),
            *many("node-b", 2, "foo"),
        ],
        [],
        [100, 50],
        [100, 33],
    ),
]


@pytest.mark.parametrize("minor", [20, 21, 23, 24, 28, 36])
@pytest.mark.parametrize(
    ("name", "new", "nodes", "feasible", "existing", "extra", "truncated", "rounded"), SCORE, ids=[c[0] for c in SCORE]
)
def test_score(
    name: str,
    new: dict[str, Any],
    nodes: list[dict[str, Any]],
    feasible: list[str] | None,
    existing: list[dict[str, Any]],
    extra: list[dict[str, Any]],
    truncated: list[int],
    rounded: list[int],
    minor: int,
) -> None:
    case = cluster(nodes, new, existing=existing, extra=extra, minor=minor)
    assert case.scores(PodTopologySpread(scoring_profile(minor)), feasible) == (truncated if minor < 24 else rounded)


INCLUSION_NODES = [
    node("node-a", labels={"node": "node-a", "foo": ""}),
    node("node-b", labels={"node": "node-b", "foo": ""}),
    node("node-c", labels={"node": "node-c"}),
]
INCLUSION_PODS = [*many("node-a", 2, "foo"), *many("node-b", 1, "foo"), *many("node-c", 1, "foo")]
TAINTED = [
    node("node-a", labels={"node": "node-a"}),
    node("node-b", labels={"node": "node-b"}),
    node("node-c", labels={"node": "node-c"}, taints=[{"key": "foo", "value": "", "effect": "NoSchedule"}]),
]
FOO_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}]
        }
    }
}

# TestPodTopologySpreadScore, the node inclusion policies (1.26 on): (name, pod, nodes, expected)
INCLUSION: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[int]]] = [
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(spread(1, "node", exists("foo"), hard=False), nodeSelector={"foo": ""}),
        INCLUSION_NODES,
        [0, 33, 100],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(spread(1, "node", exists("foo"), hard=False, nodeAffinityPolicy="Ignore"), nodeSelector={"foo": ""}),
        INCLUSION_NODES,
        [66, 100, 100],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        incoming(spread(1, "node", exists("foo"), hard=False), affinity=FOO_AFFINITY),
        INCLUSION_NODES,
        [0, 33, 100],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        incoming(spread(1, "node", exists("foo"), hard=False, nodeAffinityPolicy="Ignore"), affinity=FOO_AFFINITY),
        INCLUSION_NODES,
        [66, 100, 100],
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(spread(1, "node", exists("foo"), hard=False, nodeTaintsPolicy="Honor")),
        TAINTED,
        [0, 33, 100],
    ),
    ("NodeTaintsPolicy ignored", incoming(spread(1, "node", exists("foo"), hard=False)), TAINTED, [66, 100, 100]),
]


@pytest.mark.parametrize("minor", [26, 28, 36])
@pytest.mark.parametrize(("name", "new", "nodes", "expected"), INCLUSION, ids=[c[0] for c in INCLUSION])
def test_score_node_inclusion_policies(
    name: str, new: dict[str, Any], nodes: list[dict[str, Any]], expected: list[int], minor: int
) -> None:
    case = cluster(nodes, new, existing=INCLUSION_PODS, minor=minor)
    assert case.scores(PodTopologySpread(scoring_profile(minor))) == expected


@pytest.mark.xfail(
    strict=True,
    reason="gpushare counts a terminating pod (metadata.deletionTimestamp set) towards spreading; kube-scheduler's "
    "countPodsMatchSelector skips it (the model keeps no deletion mark on a bound pod)",
)
@pytest.mark.parametrize("minor", [23, 28])
def test_score_terminating_pods_are_excluded(minor: int) -> None:
    # TestPodTopologySpreadScore "terminating Pods should be excluded"
    terminating = bound("p-a", "node-a", "foo")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    case = cluster(
        hosts("node-a", "node-b"), FOO_HOST_1, existing=[terminating, bound("p-b", "node-b", "foo")], minor=minor
    )
    assert case.scores(PodTopologySpread(scoring_profile(minor))) == [100, 0]


UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}
POLICY_NODES = [
    node("node-a", labels={"node": "node-a", "foo": ""}),
    node("node-b", labels={"node": "node-b", "foo": ""}),
    node("node-c", labels={"node": "node-c", "bar": ""}),
]
TAINT_NODES = [
    node("node-a", labels={"node": "node-a"}),
    node("node-b", labels={"node": "node-b"}),
    node("node-c", labels={"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
]
POLICY_PODS = [
    bound("p-a", "node-a", "bar"),
    bound("p-b", "node-b", "bar"),
    bound("p-c", "node-b", "bar"),
    bound("p-d", "node-c"),
]
ZONED_FOO = [
    node("node-a", labels={"zone": "zone1", "node": "node-a", "foo": ""}),
    node("node-b", labels={"zone": "zone1", "node": "node-b"}),
    node("node-x", labels={"zone": "zone2", "node": "node-x", "foo": ""}),
]
B2_X1 = [bound("p-b1", "node-b", "foo"), bound("p-b2", "node-b", "foo"), bound("p-x1", "node-x", "foo")]
BAR_NODE = spread(1, "node", exists("bar"))

# filtering_test.go TestPreFilterState, the node inclusion policies (1.26 on): (name, pod, nodes, bound pods,
# per constraint the matching pods per domain (TpPairToMatchNum) and the least of them (the first critical path))
PREFILTER: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[tuple[dict[str, int], int]]]
] = [
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(BAR_NODE, nodeSelector={"foo": ""}),
        POLICY_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(spread(1, "node", exists("bar"), nodeAffinityPolicy="Ignore"), nodeSelector={"foo": ""}),
        POLICY_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        incoming(BAR_NODE, affinity=FOO_AFFINITY),
        POLICY_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        incoming(spread(1, "node", exists("bar"), nodeAffinityPolicy="Ignore"), affinity=FOO_AFFINITY),
        POLICY_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy ignored",
        incoming(BAR_NODE),
        TAINT_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(spread(1, "node", exists("bar"), nodeTaintsPolicy="Honor")),
        TAINT_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        incoming(
            spread(1, "node", exists("bar"), nodeTaintsPolicy="Honor"),
            tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
        ),
        TAINT_NODES,
        POLICY_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        incoming(
            spread(1, "zone", exists("foo")),
            spread(1, "node", exists("foo"), nodeAffinityPolicy="Ignore"),
            nodeSelector={"foo": ""},
        ),
        ZONED_FOO,
        B2_X1,
        [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)],
    ),
]


@pytest.mark.parametrize("minor", [26, 28, 36])
@pytest.mark.parametrize(("name", "new", "nodes", "existing", "expected"), PREFILTER, ids=[c[0] for c in PREFILTER])
def test_prefilter_node_inclusion_policies(
    name: str,
    new: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    expected: list[tuple[dict[str, int], int]],
    minor: int,
) -> None:
    case = cluster(nodes, new, existing=existing, minor=minor)
    states = PodTopologySpread(scoring_profile(minor)).prefilter(case.pod, case.nodes)
    assert [(s.counts, s.min_match) for s in states] == expected
