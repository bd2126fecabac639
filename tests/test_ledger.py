"""The one reader of the GPU-sharing annotations (`gpushare.kube.ledger`), held to the programs that read them back:
the open-source extender and device plugin (Go's strconv.Atoi on ALIYUN_COM_GPU_MEM_IDX and _POD: upstream-extender
pkg/utils/pod.go, pkg/cache/nodeinfo.go; upstream-plugin pkg/gpu/nvidia/podutils.go) and ACK's scheduler as
Koordinator reads its pods back (the allocation JSON, else the extender's annotations: apis/extension/ack
GetPodResourceFromV2 and GetPodResourceFromV1, whose test table's cases are among these). `place` charges a running
pod by it and `doctor` counts each GPU by it: the table test holds both to every case."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpushare.kube.documents import Source
from gpushare.kube.ledger import Grammar, assumption, held, read_ledger
from gpushare.placement import Semantics, Simulation

IDX, POD, ALLOCATION = "ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_MEM_POD", "scheduler.framework.gpushare.allocation"
BIG = "9" * 20  # beyond Go's int: Atoi clamps it to MaxInt64 and says so
MAX_INT64 = 2**63 - 1

#: (annotations, the extender's reading, ACK's reading): (GPU index, units) per GPU, None where none is named.
CASES: list[tuple[str, dict[str, str], Any, Any]] = [
    ("the extender's bind", {IDX: "1", POD: "6"}, ((1, 6),), ((1, 6),)),
    ("Koordinator: ACK v1 GPU pod", {POD: "8", IDX: "1"}, ((1, 8),), ((1, 8),)),
    ("no POD share: the extender reads 0, ACK no allocation", {IDX: "1"}, ((1, 0),), None),
    ("a share Atoi refuses", {IDX: "1", POD: "six"}, ((1, 0),), None),
    ("a negative share reads 0", {IDX: "1", POD: "-2"}, ((1, 0),), ((1, 0),)),
    ("a share beyond int64: Atoi's clamp, ACK's error", {IDX: "1", POD: BIG}, ((1, MAX_INT64),), None),
    ("Atoi takes a sign", {IDX: "+1", POD: "+6"}, ((1, 6),), ((1, 6),)),
    ("and leading zeros", {IDX: "01", POD: "6"}, ((1, 6),), ((1, 6),)),
    ("but no space", {IDX: " 1", POD: "6"}, None, None),
    ("nor a list", {IDX: "0,1", POD: "6"}, None, None),
    ("a negative index names no device", {IDX: "-1", POD: "6"}, None, ((-1, 6),)),
    ("an index beyond the node's devices", {IDX: "7", POD: "6"}, ((7, 6),), ((7, 6),)),
    (
        "Koordinator: ACK v2 GPU pod (two containers, one GPU)",
        {ALLOCATION: '{"0":{"1":1},"1":{"1":7}}'},
        None,
        ((1, 8),),
    ),
    ("a multi-GPU pod's allocation", {ALLOCATION: '{"0":{"0":2,"1":2}}'}, None, ((0, 2), (1, 2))),
    ("unequal shares, one container a GPU", {ALLOCATION: '{"0":{"0":4},"1":{"1":2}}'}, None, ((0, 4), (1, 2))),
    (
        "the allocation wins over the extender's",
        {ALLOCATION: '{"0":{"0":3}}', IDX: "1", POD: "6"},
        ((1, 6),),
        ((0, 3),),
    ),
    ("an allocation that is no JSON: the extender's", {ALLOCATION: "{", IDX: "1", POD: "6"}, ((1, 6),), ((1, 6),)),
    ("a container key no int: not read", {ALLOCATION: '{"a":{"0":4}}', IDX: "1", POD: "6"}, ((1, 6),), ((1, 6),)),
    ("units no integer: not read", {ALLOCATION: '{"0":{"0":1.5}}'}, None, None),
    (
        "a GPU index Atoi refuses: read, and none held",
        {ALLOCATION: '{"0":{"x":4}}', IDX: "1", POD: "6"},
        ((1, 6),),
        None,
    ),
    ("an empty allocation", {ALLOCATION: "{}"}, None, None),
    ("nothing", {}, None, None),
]


@pytest.mark.parametrize(("name", "annotations", "upstream", "ack"), CASES, ids=[c[0] for c in CASES])
def test_each_grammar_reads_the_annotations_as_its_program_does(
    name: str, annotations: dict[str, str], upstream: Any, ack: Any
) -> None:
    assert held(annotations, "upstream") == upstream
    assert held(annotations, "ack") == ack


def _fleet(annotations: dict[str, str], grammar: Grammar) -> tuple[list[Source], Semantics]:
    unit = "GiB" if grammar == "upstream" else "1GiB"
    capacity = {"aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "2", "cpu": "8", "memory": "32Gi", "pods": "50"}
    node = {
        "kind": "Node",
        "metadata": {"name": "a", "labels": {"gpushare": "true", "ack.node.gpu.schedule": "share"}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
    pod = {
        "kind": "Pod",
        "metadata": {"name": "old", "namespace": "ml", "annotations": annotations},
        "spec": {
            "nodeName": "a",
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": "6"}}}],
        },
        "status": {"phase": "Running"},
    }
    semantics = Semantics(grammar, gpu_memory_unit=unit, scheduler_name="default-scheduler")
    return [Source(node, "nodes.yaml", 1), Source(pod, "pods.yaml", 1)], semantics


@pytest.mark.parametrize("grammar", ["upstream", "ack"])
@pytest.mark.parametrize(("name", "annotations", "upstream", "ack"), CASES, ids=[c[0] for c in CASES])
def test_place_and_doctor_read_each_annotation_alike(
    grammar: Grammar, name: str, annotations: dict[str, str], upstream: Any, ack: Any
) -> None:
    """What `place` charges each GPU of the node is what `doctor` counts on it, for every case and grammar; where
    the annotations name no GPU, doctor counts none, and so does the extender's reading in `place` (ACK's scheduler
    knows where its pods run: the dry run places such a pod as a bind would, and doctor reports it, GL601/GL604)."""
    sources, semantics = _fleet(annotations, grammar)
    simulation = Simulation.from_sources(sources[:1], sources[1:], [], semantics)
    simulation.charge()
    charged = {g.index: g.used for g in simulation.nodes[0].gpus}
    ledger = read_ledger(sources, ("default-scheduler",), 0, grammar=grammar)
    counted = dict.fromkeys(charged, 0)
    for index, pods in ledger.nodes["a"].held().items():
        if index in counted:
            counted[index] += sum(units for _, units in pods)
    expected = upstream if grammar == "upstream" else ack
    if expected is None and grammar == "ack":
        assert counted == {0: 0, 1: 0} and sum(charged.values()) == 6
    else:
        assert charged == counted
        assert simulation.nodes[0].gpu_mem_used == 6  # kube-scheduler's node level: the pod's limits, whatever


def test_unequal_shares_are_charged_and_given_back_exactly() -> None:
    """A pod holding 4 units on GPU 0 and 2 on GPU 1 (ACK's allocation) is charged so, and unbinding it gives each
    GPU back what it took."""
    sources, semantics = _fleet({ALLOCATION: json.dumps({"0": {"0": 4}, "1": {"1": 2}})}, "ack")
    simulation = Simulation.from_sources(sources[:1], sources[1:], [], semantics)
    simulation.charge()
    node = simulation.nodes[0]
    assert [g.used for g in node.gpus] == [4, 2]
    mark = simulation.mark()
    simulation.unbind(node.bound[0], node)
    assert [g.used for g in node.gpus] == [0, 0]
    simulation.rollback(mark)
    assert [g.used for g in node.gpus] == [4, 2]


@pytest.mark.parametrize(
    ("annotations", "grammar", "expected"),
    [
        ({"ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "17"}, "upstream", ("false", 17)),
        ({"ALIYUN_COM_GPU_MEM_ASSIGNED": "true", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "+17"}, "upstream", ("true", None)),
        ({"ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(2**64)}, "upstream", (None, None)),  # beyond ParseUint's 64 bits
        ({"ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(2**64 - 1)}, "upstream", (None, 2**64 - 1)),
        (
            {"scheduler.framework.gpushare.assigned": "false", "scheduler.framework.gpushare.assume-time": "5"},
            "ack",
            ("false", 5),
        ),
        ({"scheduler.framework.gpushare.assigned": "false"}, "upstream", (None, None)),  # not the extender's flag
    ],
)
def test_the_assumed_flag_and_time_are_read_as_the_device_plugin_reads_them(
    annotations: dict[str, str], grammar: Grammar, expected: tuple[str | None, int | None]
) -> None:
    assert assumption(annotations, grammar) == expected
