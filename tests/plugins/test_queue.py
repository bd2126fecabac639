"""The scheduling queue (gpushare.placement.queue): the order pods waiting together leave kube-scheduler's active
queue in (PrioritySort: priority, then the time they entered it), and the retries a victims' deletion causes (a pod
rejected for room is moved back and binds beside the preemptor). Whole runs through both engines; the real
scheduler judges the same cases in tests/e2e/test_queue_real.py."""

from __future__ import annotations

from typing import Any

import pytest
from test_defaultpreemption import CLASSES, ENGINES, gpu_node, gpu_pod, running

from gpushare.domain.minors import scoring_profile
from gpushare.placement import QueueMode, Semantics, place

Obj = dict[str, Any]
MINORS = pytest.mark.parametrize("minor", [20, 24, 28, 32, 36])


def created(obj: Obj, second: int) -> Obj:
    obj["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{second:02d}Z"
    return obj


def run(pods: list[Obj], existing: list[Obj], engine: str, minor: int = 36, queue: QueueMode = "auto") -> Any:
    semantics = Semantics(
        "upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(minor), scheduler_name="default-scheduler"
    )
    nodes = [gpu_node("n0", gpus=1, per_gpu=16)]
    return place(nodes, pods, existing=[*CLASSES, *existing], semantics=semantics, engine=engine, queue=queue)  # type: ignore[arg-type]


def outcome(result: Any) -> tuple[dict[str, str], list[str], list[str]]:
    return (
        {a.name: a.node for a in result.placements},
        sorted(p.name for p in result.pending),
        sorted(p.name for p in result.preempted),
    )


@ENGINES
@MINORS
def test_pods_waiting_together_leave_the_queue_by_priority(engine: str, minor: int) -> None:
    """Two low pods created before two high ones, all pending when the run starts (they have a creationTimestamp):
    the high pods are taken first and fill the GPU, the low ones find no victim. Arriving in the files' order
    instead, the low pods bind first and the high ones preempt them."""
    pods = [
        created(gpu_pod("low-a", 8, "low"), 1),
        created(gpu_pod("low-b", 8, "low"), 2),
        created(gpu_pod("high-a", 8, "high"), 3),
        created(gpu_pod("high-b", 8, "high"), 4),
    ]
    result = run(pods, [], engine, minor)
    assert outcome(result) == ({"high-a": "n0", "high-b": "n0"}, ["low-a", "low-b"], [])
    # 1.20's message says nothing of preemption
    assert all(minor == 20 or "No preemption victims found" in p.message for p in result.pending)
    arriving = run(pods, [], engine, minor, queue="arrival")
    assert outcome(arriving) == ({"high-a": "n0", "high-b": "n0"}, [], ["low-a", "low-b"])


@ENGINES
def test_equal_priorities_leave_by_creation_time_not_file_order(engine: str) -> None:
    """Three pods of one priority, the file listing the last created first: the two created first bind."""
    pods = [
        created(gpu_pod("c", 8, "low"), 9),
        created(gpu_pod("a", 8, "low"), 1),
        created(gpu_pod("b", 8, "low"), 5),
    ]
    assert outcome(run(pods, [], engine)) == ({"a": "n0", "b": "n0"}, ["c"], [])
    assert outcome(run(pods, [], engine, queue="arrival")) == ({"c": "n0", "a": "n0"}, ["b"], [])


@ENGINES
def test_together_takes_pods_without_a_timestamp_in_file_order_after_priority(engine: str) -> None:
    pods = [gpu_pod("low", 8, "low"), gpu_pod("high-a", 8, "high"), gpu_pod("high-b", 8, "high")]
    assert outcome(run(pods, [], engine, queue="together")) == ({"high-a": "n0", "high-b": "n0"}, ["low"], [])
    assert outcome(run(pods, [], engine)) == ({"high-a": "n0", "high-b": "n0"}, [], ["low"])  # arrival: preempted


@ENGINES
@MINORS
def test_a_pod_that_never_preempts_binds_beside_the_preemptor_once_the_victims_are_gone(
    engine: str, minor: int
) -> None:
    """The GPU is full with a low pod; a 4 GiB pod of a class with preemptionPolicy Never waits; an 8 GiB high pod
    preempts the low one. The deletion moves the waiting pod back, and it binds in the room the preemptor left."""
    existing = [running("victim", 0, 16, "low")]
    pods = [gpu_pod("never", 4, "never"), gpu_pod("preemptor", 8, "high")]
    result = run(pods, existing, engine, minor)
    assert outcome(result) == ({"preemptor": "n0", "never": "n0"}, [], ["victim"])


@ENGINES
def test_a_waiting_pod_the_freed_room_cannot_take_stays_pending(engine: str) -> None:
    """The same, but the waiting pod asks 12 GiB: the preemptor's 8 leave 8 free, and the pod stays pending with
    the message of its retry."""
    existing = [running("victim", 0, 16, "low")]
    pods = [gpu_pod("never", 12, "never"), gpu_pod("preemptor", 8, "high")]
    result = run(pods, existing, engine)
    assert outcome(result) == ({"preemptor": "n0"}, ["never"], ["victim"])
    (waiting,) = result.pending
    assert waiting.message.startswith("0/1 nodes are available: 1 Insufficient aliyun.com/gpu-mem.")


@ENGINES
def test_the_retry_respects_the_preemptors_nomination_for_lower_priorities(engine: str) -> None:
    """Two GPUs of 8 GiB, both full with low pods; a 4 GiB Never pod waits, then an 8 GiB high pod preempts one
    GPU's pod. The waiting pod, of lower priority, would take the freed GPU first in the real queue: the preemptor
    is nominated there, and counting it leaves the node no gpu-mem, so the pod stays pending and the preemptor
    binds."""
    nodes_existing = [running("v0", 0, 8, "low", start=1), running("v1", 1, 8, "low", start=2)]
    pods = [gpu_pod("never", 4, "low"), gpu_pod("preemptor", 8, "high")]
    pods[0]["spec"]["preemptionPolicy"] = "Never"
    semantics = Semantics(
        "upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(36), scheduler_name="default-scheduler"
    )
    result = place(
        [gpu_node("n0", gpus=2, per_gpu=8)],
        pods,
        existing=[*CLASSES, *nodes_existing],
        semantics=semantics,
        engine=engine,  # type: ignore[arg-type]
    )
    placed, pending, preempted = outcome(result)
    assert placed == {"preemptor": "n0"} and pending == ["never"] and len(preempted) == 1
