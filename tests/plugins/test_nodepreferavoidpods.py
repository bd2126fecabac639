"""NodePreferAvoidPods' score (1.20-1.21, weight 10000), on kube-scheduler's own cases
(nodepreferavoidpods/node_prefer_avoid_pods_test.go TestNodePreferAvoidPods): a node whose
scheduler.alpha.kubernetes.io/preferAvoidPods annotation names the pod's ReplicationController or ReplicaSet scores 0,
every other node 100; pods of other controllers, or of none, score 100 everywhere."""

from __future__ import annotations

import json

import pytest
from plugintables import cluster, node, pod

from gpushare.placement.plugins.nodepreferavoidpods import NodePreferAvoidPods

ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"


def avoid(*controllers: tuple[str, str]) -> dict[str, str]:
    """The annotation naming controllers (kind, uid); upstream's pods name theirs without an apiVersion."""
    entries = [
        {
            "podSignature": {"podController": {"apiVersion": "v1", "kind": kind, "name": "foo", "uid": uid}},
            "reason": "some reason",
            "message": "some message",
        }
        for kind, uid in controllers
    ]
    return {ANNOTATION: json.dumps({"preferAvoidPods": entries})}


RC = ("ReplicationController", "abcdef123456")
RS = ("ReplicaSet", "qwert12345")
NODES = [
    node("machine1", annotations=avoid(RC)),
    node("machine2", annotations=avoid(RS)),
    node("machine3"),
]

# (name, the pod's controller (apiVersion, kind, uid) or None, expected scores)
CASES: list[tuple[str, tuple[str, str, str] | None, list[int]]] = [
    # TestNodePreferAvoidPods
    (
        "pod managed by ReplicationController should avoid a node, this node get lowest priority score",
        ("", *RC),
        [0, 100, 100],
    ),
    ("ownership by random controller should be ignored", ("", "RandomController", RC[1]), [100, 100, 100]),
    ("owner without Controller field set should be ignored", None, [100, 100, 100]),
    (
        "pod managed by ReplicaSet should avoid a node, this node get lowest priority score",
        ("", *RS),
        [100, 0, 100],
    ),
]


@pytest.mark.parametrize("minor", [20, 21])
@pytest.mark.parametrize(("name", "owner", "expected"), CASES, ids=[c[0] for c in CASES])
def test_score(name: str, owner: tuple[str, str, str] | None, expected: list[int], minor: int) -> None:
    new = pod()
    if owner is not None:
        api, kind, uid = owner
        ref = {"apiVersion": api, "kind": kind, "name": "foo", "uid": uid, "controller": True}
        new["metadata"]["ownerReferences"] = [{k: v for k, v in ref.items() if v}]
    else:  # the upstream case: a ReplicationController reference without controller: true
        new["metadata"]["ownerReferences"] = [{"kind": RC[0], "name": "foo", "uid": RC[1]}]
    case = cluster(NODES, new, minor=minor)
    assert case.scores(NodePreferAvoidPods()) == expected


def test_unreadable_annotation_avoids_nothing() -> None:
    # written: an annotation that is not JSON names no controller (the scheduler logs the error and scores 100)
    bad = node("machine1", annotations={ANNOTATION: "{not json"})
    new = pod()
    new["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": RC[0], "name": "foo", "uid": RC[1], "controller": True}
    ]
    case = cluster([bad, node("machine2")], new, minor=21)
    assert case.scores(NodePreferAvoidPods()) == [100, 100]
