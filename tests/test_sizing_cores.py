"""Pools sized on several cores: forked copies of the process size some pools, their answers cross by pickle and
their replays' nodes are rebuilt here (`Fleet.settle`). The answers and the nodes' final state are those of one
core, on random fleets with running pods, preemption and pods that name their node; a copy that fails or raises
changes nothing; Ctrl-C ends the command with one line and no process left."""

from __future__ import annotations

import os
import pickle
import random
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import children_of, interrupt_when_forked
from test_capacity import node, pod_spec, pool

from gpushare import process
from gpushare.kube.documents import from_objects
from gpushare.placement import Semantics
from gpushare.placement.model import Node
from gpushare.placement.result import Assignment, Pending, PlacementResult
from gpushare.planner import pools as sizing
from gpushare.planner.pools import Blend, Fleet, Pool, Sizing, read_pool, size, size_all, size_mix

POOLS = ["--pool", "one.yaml", "--pool", "two.yaml"]
SEMANTICS = {
    "ack": Semantics(),
    "upstream": Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler"),
}


def state(nodes: Sequence[Node]) -> list[tuple[Any, ...]]:
    """All a node's final state holds: what it charged, the pods bound, each GPU's use, each pod's GPUs. The pods'
    order is not compared: preemption's search takes a node's pods off and puts back those it spares, last."""
    return [
        (
            n.name,
            n.cpu_used,
            n.memory_used,
            n.cpu_nz_used,
            n.memory_nz_used,
            n.pods_used,
            n.gpu_mem_used,
            sorted(n.other_used.items()),
            n.compute_pods,
            n.mem_only_pods,
            sorted(n.ports),
            n.room,
            sorted(p.key for p in n.bound),
            [(g.index, g.used, g.core_used, g.pods) for g in n.gpus],
            sorted((p.key, tuple(g.index for g in n.devices_of(p))) for p in n.bound),
        )
        for n in nodes
    ]


def _running(rng: random.Random, nodes: list[dict[str, Any]], model: Semantics) -> list[dict[str, Any]]:
    """Pods already bound, annotated as the extender leaves them, filling some GPUs whole (where a pod of higher
    priority fits only by preempting them), all of priority 0."""
    pods: list[dict[str, Any]] = []
    for n in nodes:
        gpus = n["status"]["capacity"]["aliyun.com/gpu-count"]
        per_gpu = n["status"]["capacity"]["aliyun.com/gpu-mem"] // gpus
        for gpu in range(gpus):
            left = per_gpu if rng.random() < 0.7 else rng.randint(0, per_gpu // 2)
            while left:
                mem = min(left, rng.randint(1, per_gpu // 2))
                left -= mem
                spec: dict[str, Any] = {**pod_spec(mem), "nodeName": n["metadata"]["name"]}
                if model.scheduler_name:
                    spec["schedulerName"] = model.scheduler_name
                annotations = {"ALIYUN_COM_GPU_MEM_IDX": str(gpu), "ALIYUN_COM_GPU_MEM_POD": str(mem)}
                meta = {"name": f"run-{len(pods)}", "namespace": "ml", "annotations": annotations}
                status = {"phase": "Running"}
                pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    return pods


def _fleet(seed: int, semantics: str) -> tuple[Fleet, list[Pool]]:
    """A full-ish fleet, Deployments pending (one of high priority, which preempts), a pod naming its node, and
    three pools (one whose nodes refuse the largest pods)."""
    rng = random.Random(seed)
    model = SEMANTICS[semantics]
    nodes = [node(f"n{i}", rng.choice([1, 2, 4]), rng.choice([8, 16, 24])) for i in range(rng.randint(2, 6))]
    running = _running(rng, nodes, model)
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    pending: list[dict[str, Any]] = []
    for i in range(rng.randint(1, 4)):
        replicas, mem = rng.randint(1, 8), rng.randint(2, 20)
        spec = pod_spec(mem)
        if model.scheduler_name:
            spec["schedulerName"] = model.scheduler_name
        if i == 0 and rng.random() < 0.6:
            spec["priorityClassName"] = "high"
        template = {"metadata": {"labels": {"app": f"a{i}"}}, "spec": spec}
        selector = {"matchLabels": {"app": f"a{i}"}}
        pending.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"a{i}", "namespace": "ml"},
                "spec": {"replicas": replicas, "selector": selector, "template": template},
            }
        )
    if rng.random() < 0.5:  # bound at creation: charged as `run` charges it
        spec = {**pod_spec(rng.randint(1, 4)), "nodeName": nodes[0]["metadata"]["name"]}
        pending.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "preset", "namespace": "ml"}, "spec": spec}
        )
    fleet = Fleet(
        from_objects(nodes, "nodes"), from_objects([high, *running], "existing"), from_objects(pending, "p"), model
    )
    pools = [
        read_pool(from_objects([pool("one", 1, 16, **{"gpushare.io/pool-max": "40"})], "pools")[0]),
        read_pool(from_objects([pool("two", 2, 24, **{"gpushare.io/pool-cost": "2"})], "pools")[0]),
        read_pool(from_objects([pool("four", 4, 8, **{"gpushare.io/pool-cost": "3"})], "pools")[0]),
    ]
    return fleet, pools


def _same(one: Sizing, many: Sizing) -> None:
    assert (many.pool, many.nodes, many.cost) == (one.pool, one.nodes, one.cost)
    assert many.unservable == one.unservable
    for a, b in ((one.result, many.result), (one.one_fewer, many.one_fewer)):
        if a is None or b is None:
            assert a is b
            continue
        assert (b.placements, b.pending, b.preempted, b.invalid, b.not_served) == (
            a.placements,
            a.pending,
            a.preempted,
            a.invalid,
            a.not_served,
        )
        assert b.warnings == a.warnings and b.semantics == a.semantics
        assert state(b.nodes) == state(a.nodes)


@pytest.mark.parametrize("semantics", ["ack", "upstream"])
@pytest.mark.parametrize("seed", range(6))
def test_pools_sized_in_copies_answer_as_on_one_core(
    seed: int, semantics: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizing, "AT_ONCE_FROM", 0)
    came: list[list[bool]] = []
    each = process.each

    def counted(*args: Any) -> Any:
        answers = each(*args)
        came.append([elsewhere for _, elsewhere in answers])
        return answers

    monkeypatch.setattr(process, "each", counted)
    fleet, pools = _fleet(seed, semantics)
    one = size(fleet, pools, cores=1)
    fleet, pools = _fleet(seed, semantics)
    many = size(fleet, pools, cores=3)
    assert len(one) == len(many) == 3
    for a, b in zip(one, many, strict=True):
        _same(a, b)
    assert not any(came[0])
    # copies sized some pools, unless every pod fits as the fleet is (then no pool adds a node: none is made)
    assert any(came[1]) == bool(fleet.with_pools([]).pending)


def test_copies_size_pools_on_the_fleets_that_need_them() -> None:
    """The test above ran copies (not only this process) on most fleets: it proves something."""
    forked = 0
    for seed in range(6):
        for semantics in SEMANTICS:
            fleet, _ = _fleet(seed, semantics)
            forked += bool(fleet.with_pools([]).pending)
    assert forked >= 8


@pytest.mark.parametrize("semantics", ["ack", "upstream"])
@pytest.mark.parametrize("seed", range(12))
def test_settle_gives_the_state_the_run_leaves(seed: int, semantics: str) -> None:
    """From a replay's answers alone, pickled as a copy sends them, rebuilt by a fleet that never placed them: the
    nodes' state `run` left, preemption and pods bound at creation included."""
    fleet, pools = _fleet(seed, semantics)
    rng = random.Random(seed)
    for counts in ([], [(pools[0], rng.randint(1, 4))], [(pools[1], rng.randint(1, 3)), (pools[2], 1)]):
        result = fleet.with_pools(counts)
        sent = pickle.loads(process._dumps(replace(result, nodes=[])))
        assert sent.nodes == [] and sent.placements == result.placements
        settled = _fleet(seed, semantics)[0].settle(counts, sent)
        assert state(settled.nodes) == state(result.nodes)
        assert settled.pending == result.pending and settled.preempted == result.preempted


def test_the_random_fleets_preempt_and_bind_at_creation() -> None:
    """What the settle test must rebuild occurs in its fleets: victims taken off, a pod bound where it names."""
    preempted = preset = 0
    for seed in range(12):
        for semantics in SEMANTICS:
            result = _fleet(seed, semantics)[0].with_pools([])
            preempted += bool(result.preempted)
            preset += any(p.name == "preset" for p in result.placements)
    assert preempted and preset


def test_pods_sharing_a_name_are_placed_again_here() -> None:
    """The answers cannot tell two pods of one name apart: the replay is made again in this process instead."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "twin"}, "spec": pod_spec(m)} for m in (4, 6)]
    fleet = Fleet(from_objects([node("n", 1, 8)], "n"), [], from_objects(pods, "p"), Semantics())
    extra = read_pool(from_objects([pool("x", 1, 8)], "pools")[0])
    result = fleet.with_pools([(extra, 1)])
    settled = fleet.settle([(extra, 1)], replace(result, nodes=[]))
    assert state(settled.nodes) == state(result.nodes) and len(settled.placements) == 2


def _parent_only(value: int) -> int:
    if os.getpid() != PARENT:
        raise ValueError("a copy fails")
    return value * value


PARENT = os.getpid()


def test_each_answers_in_order_from_copies_and_here() -> None:
    def where(value: int) -> tuple[int, int]:
        time.sleep(0.05)  # long enough that the copy takes some
        return value, os.getpid()

    answers = process.each(list(range(6)), where, 2)
    assert [a[0] for a, _ in answers] == list(range(6))
    assert {elsewhere for _, elsewhere in answers} == {True, False}
    assert all((pid != os.getpid()) == elsewhere for (_, pid), elsewhere in answers)
    assert not children_of(os.getpid())  # every copy reaped


def test_what_a_copy_does_not_hand_back_is_worked_here() -> None:
    global PARENT
    PARENT = os.getpid()
    answers = process.each(list(range(5)), _parent_only, 3)
    assert answers == [(i * i, False) for i in range(5)]

    def killed(value: int) -> int:
        if os.getpid() != PARENT:
            os.kill(os.getpid(), signal.SIGKILL)
        return value

    assert process.each(list(range(4)), killed, 2) == [(i, False) for i in range(4)]
    assert not children_of(os.getpid())


def test_an_error_is_raised_here_as_on_one_core() -> None:
    def refused(value: int) -> int:
        if value == 3:
            raise ValueError(f"item {value} refused")
        return value

    for workers in (1, 2):
        with pytest.raises(ValueError, match="item 3 refused"):
            process.each(list(range(6)), refused, workers)
    assert not children_of(os.getpid())


def test_compiled_frozen_answers_cross_by_their_constructors() -> None:
    """A compiled frozen dataclass has no `__dict__` for plain pickle to fill, and refuses attributes set one by one:
    `forks` pickles dataclasses by their constructors."""
    result = PlacementResult(
        Semantics("upstream", gpu_memory_unit="GiB"),
        placements=[Assignment("ml", "a", "n0", ((1, 4),), 0, 2)],
        pending=[Pending("ml", "b", 3, (("Insufficient cpu", 3),), 4, post_filter=" no preemption")],
    )
    back = pickle.loads(process._dumps(result))
    assert back == result and back is not result


def test_ctrl_c_while_pools_are_sized_on_two_cores_ends_with_one_line(tmp_path: Path) -> None:
    """A fleet large enough to size pools in a copy, interrupted while both size them: exit 130, one line, no
    process left."""
    if process.cores() < 2:
        pytest.skip("one core: no copy is made")  # pragma: no cover - CI has two
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("full", 1, 8)))
    pods = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec(5 + i % 7)}
        for i in range(sizing.AT_ONCE_FROM + 500)
    ]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    for name, gpus in (("one", 1), ("two", 2)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(pool(name, gpus, 8, **{"gpushare.io/pool-max": "3000"})))
    code, out, err = interrupt_when_forked(["capacity", "--nodes", "nodes.yaml", "pods.yaml", *POOLS], tmp_path, 0.3)
    assert code == 130 and err == "gpushare: interrupted\n" and out == ""


@pytest.mark.parametrize(
    ("cpu_max", "most"), [("max 100000", None), ("150000 100000", 1), ("50000 100000", 1), ("x", None)]
)
def test_a_containers_cpu_limit_caps_the_cores(
    cpu_max: str, most: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod's CPU limit of 1.5 CPUs leaves one core's worth: no copy would run beside this process."""
    (tmp_path / "cpu.max").write_text(cpu_max + "\n")
    monkeypatch.setattr(process, "CPU_MAX", str(tmp_path / "cpu.max"))
    assert process.cores() == (most or len(os.sched_getaffinity(0)))


def test_only_this_process_writes_the_status_line(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A copy sizes quietly: the terminal's status line is this process's (a copy writing to it could also wait
    forever on a lock another thread held when the process forked)."""
    monkeypatch.setattr(sizing, "AT_ONCE_FROM", 0)
    lines: list[str] = []

    def said(text: str) -> None:
        lines.append(text)
        print(text, file=sys.stderr, flush=True)

    fleet, pools = _fleet(0, "ack")
    fleet.said = said
    capfd.readouterr()
    size(fleet, pools, cores=3)
    assert capfd.readouterr().err.splitlines() == lines


def _same_mix(one: Blend | None, many: Blend | None) -> None:
    assert (one is None) == (many is None)
    if one is None or many is None:
        return
    assert (many.counts, many.cost, many.unservable, many.searched) == (
        one.counts,
        one.cost,
        one.unservable,
        one.searched,
    )
    assert many.result.placements == one.result.placements and state(many.result.nodes) == state(one.result.nodes)
    assert [(pool, r.pending) for pool, r in many.one_fewer] == [(pool, r.pending) for pool, r in one.one_fewer]


@pytest.mark.parametrize("seed", range(6))
def test_the_mix_searched_in_a_copy_is_the_mix_searched_here(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`size_all`, as the command runs it: the pools alone and the mix's search shared out over copies, the same
    answers as `size` then `size_mix` on one core."""
    monkeypatch.setattr(sizing, "AT_ONCE_FROM", 0)
    fleet, pools = _fleet(seed, "upstream")
    alone = size(fleet, pools, cores=1)
    mix = size_mix(fleet, pools, alone)
    fleet, pools = _fleet(seed, "upstream")
    alone_many, mix_many = size_all(fleet, pools, cores=4)
    for a, b in zip(alone, alone_many, strict=True):
        _same(a, b)
    _same_mix(mix, mix_many)
    assert mix is not None and mix.replays >= 0


def test_a_random_fleet_mixes_pools() -> None:
    """The test above weighs a real mix (two pools at once), not only a pool alone that costs no more."""
    mixes = []
    for seed in range(6):
        fleet, pools = _fleet(seed, "upstream")
        mix = size_mix(fleet, pools, size(fleet, pools, cores=1))
        mixes.append(mix is not None and len(mix.counts) > 1)
    assert any(mixes)
