"""Fragmentation and defragmentation moves: each step of a plan checked with `place` itself (the copy created with
a node affinity lands on the node and GPU the plan says; once the original is gone, the pods the plan says bind
there do), on random fragmented fleets for both semantics; the command's table, JSON and limits."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from test_capacity import REPORT, node, pod_spec

from gpushare.cli import main
from gpushare.kube.documents import from_objects
from gpushare.placement import Semantics, place
from gpushare.planner import make_room
from gpushare.planner.defrag import Defrag, defragment

SCHEDULER = "default-scheduler"


def pod(name: str, mem: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {**pod_spec(mem, cpu), "schedulerName": SCHEDULER},
    }


def running(doc: dict[str, Any], node_name: str, gpus: tuple[int, ...], units: int) -> dict[str, Any]:
    """The pod as bound by the extender: its node, and the annotations naming its GPUs and share."""
    bound = copy.deepcopy(doc)
    bound["metadata"]["annotations"] = {
        "ALIYUN_COM_GPU_MEM_IDX": ",".join(map(str, gpus)),
        "ALIYUN_COM_GPU_MEM_POD": str(units),
    }
    bound["spec"]["nodeName"] = node_name
    bound["spec"].pop("affinity", None)
    bound["status"] = {"phase": "Running"}
    return bound


def pinned(doc: dict[str, Any], node_name: str) -> dict[str, Any]:
    """The copy a move creates: required node affinity on the target's hostname."""
    copied = copy.deepcopy(doc)
    copied["metadata"].pop("annotations", None)
    copied["spec"].pop("nodeName", None)
    copied.pop("status", None)
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}
    copied["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    return copied


def semantics_of(name: str) -> Semantics:
    return Semantics(name, gpu_memory_unit="1GiB" if name == "ack" else "GiB", scheduler_name=SCHEDULER)


def fragmented(seed: int, semantics: Semantics) -> tuple[list[Any], list[Any], list[Any]]:
    """Nodes, running pods (placed by `place` under spread, so memory is scattered) and pending pods."""
    rng = random.Random(seed)
    nodes = [node(f"n{i}", rng.choice([1, 2, 4]), rng.choice([16, 24])) for i in range(rng.randint(3, 6))]
    for n in nodes:
        n["metadata"]["labels"]["ack.node.gpu.placement"] = "spread"
    first = [pod(f"run{i}", rng.randint(2, 9)) for i in range(rng.randint(6, 24))]
    spread = Semantics(semantics.name, "spread", semantics.gpu_memory_unit, scheduler_name=SCHEDULER)
    result = place(nodes, first, semantics=spread)
    docs = {d["metadata"]["name"]: d for d in first}
    runs = [running(docs[a.name], a.node, tuple(i for i, _ in a.gpus), a.gpus[0][1]) for a in result.placements]
    for n in nodes:
        n["metadata"]["labels"].pop("ack.node.gpu.placement")
    pending = [pod(f"want{i}", rng.randint(6, 16)) for i in range(rng.randint(1, 5))]
    return nodes, runs, pending


def check_steps(nodes: list[Any], runs: list[Any], pending: list[Any], answer: Defrag, semantics: Semantics) -> int:
    """Walk the plan with `place`: returns how many pending pods it bound; fails on the first step that differs."""
    first = place(nodes, pending, existing=runs, semantics=semantics)
    docs = {f"ml/{d['metadata']['name']}": d for d in [*runs, *pending]}
    state = {a.key: running(docs[a.key], a.node, tuple(i for i, _ in a.gpus), a.gpus[0][1]) for a in first.placements}
    state.update({f"ml/{d['metadata']['name']}": d for d in runs})
    bound = 0
    for step in answer.plan.steps:
        move = step.move
        moved = place(
            nodes, [pinned(state[move.pod], move.target.node)], existing=list(state.values()), semantics=semantics
        )
        assert [(a.node, tuple(i for i, _ in a.gpus)) for a in moved.placements] == [
            (move.target.node, move.target.gpus)
        ]
        (landed,) = moved.placements
        del state[move.pod]
        freed = move.source.node
        for key in step.contested:  # it alone would take the freed room, as the first pod bound does
            one = place(nodes, [pinned(docs[key], freed)], existing=list(state.values()), semantics=semantics)
            assert [a.node for a in one.placements] == [freed], (key, one.pending)
        for key, node_name in step.bound:
            # the pod fits the freed node now (pinned there: that the scheduler would choose it is the replay's part)
            one = place(nodes, [pinned(docs[key], node_name)], existing=list(state.values()), semantics=semantics)
            assert [a.node for a in one.placements] == [node_name], (key, one.pending)
            (a,) = one.placements
            state[key] = running(docs[key], a.node, tuple(i for i, _ in a.gpus), a.gpus[0][1])
            bound += 1
        for key in step.contested:  # but the pods bound left it no room
            one = place(nodes, [pinned(docs[key], freed)], existing=list(state.values()), semantics=semantics)
            assert one.pending and not one.placements, key
        state[move.pod] = running(docs[move.pod], landed.node, tuple(i for i, _ in landed.gpus), landed.gpus[0][1])
    return bound


@pytest.mark.parametrize("semantics", ["ack", "upstream"])
@pytest.mark.parametrize("seed", range(24))
def test_each_step_of_a_plan_is_what_place_does(seed: int, semantics: str) -> None:
    model = semantics_of(semantics)
    nodes, runs, pending = fragmented(seed, model)
    answer = defragment(from_objects(nodes, "n"), from_objects(runs, "e"), from_objects(pending, "p"), model)
    assert answer.plan.confirmed
    bound = check_steps(nodes, runs, pending, answer, model)
    first = place(nodes, pending, existing=runs, semantics=model)
    assert len(answer.plan.still_pending) == len(first.pending) - bound
    assert [f.key for f in answer.pending] == [p.key for p in first.pending]
    for f in answer.pending:
        assert f.largest_free < f.per_gpu or f.why  # pending while a GPU had room only for another reason
        assert f.free >= f.largest_free


def test_fragmentation_and_plans_across_seeds_make_room() -> None:
    """The search is not vacuous: over the seeds, some pods are pending with enough memory free in total, and moves
    are found for some of them, some of whose freed room another pending pod could take first."""
    found = fragmented_pods = contested = 0
    for seed in range(24):
        model = semantics_of("ack")
        nodes, runs, pending = fragmented(seed, model)
        answer = defragment(from_objects(nodes, "n"), from_objects(runs, "e"), from_objects(pending, "p"), model)
        fragmented_pods += sum(f.free >= f.per_gpu > f.largest_free for f in answer.pending)
        found += len(answer.plan.steps)
        contested += sum(len(step.contested) for step in answer.plan.steps)
    assert fragmented_pods and found and contested


def hand_fleet(tmp_path: Path) -> list[str]:
    """n0: GPU 0 holds a (6) and b (4), GPU 1 holds d (10); n1: GPU 0 holds c (6). p and q ask 12, r asks 20."""
    nodes = [node("n0", 2, 16), node("n1", 1, 16)]
    runs = [
        running(pod("a", 6), "n0", (0,), 6),
        running(pod("b", 4), "n0", (0,), 4),
        running(pod("c", 6), "n1", (0,), 6),
        running(pod("d", 10), "n0", (1,), 10),
    ]
    pending = [pod("p", 12), pod("q", 12), pod("r", 20)]
    for name, docs in (("nodes", nodes), ("running", runs), ("pending", pending)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    return [
        "--nodes",
        str(tmp_path / "nodes.yaml"),
        "--existing",
        str(tmp_path / "running.yaml"),
        str(tmp_path / "pending.yaml"),
    ]


def test_hand_fleet_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # r asks more than any GPU of the fleet holds: validate's error (GW207), and capacity's exit 1
    assert main(["capacity", *hand_fleet(tmp_path), "--scheduler-name", SCHEDULER]) == 1
    out = capsys.readouterr().out
    assert "Pod/ml/r\n  error   GW207  resources.limits.aliyun.com/gpu-mem: 20: expected at most 16 per GPU" in out
    assert "ml/p         12       22    10            1      move ml/c from n1 GPU 0 to n0 GPU 0" in out
    assert "no GPU of 20 units on a node it may use, even empty" in out
    assert "  1. move ml/c from n1 GPU 0 to n0 GPU 0 (for ml/p): ml/p binds on n1" in out
    assert "still pending after the plan: 2" in out


def test_hand_fleet_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", *hand_fleet(tmp_path), "--scheduler-name", SCHEDULER, "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    REPORT.validate(doc)
    assert [(f["rule"], f["object"]) for f in doc["findings"]] == [("GW207", "Pod/ml/r")]
    p, q, r = doc["pending"]
    # each asked alone, on the fleet as it is: q would take the same move
    assert q["fits_after_moves"] and q["moves"] == [{**p["moves"][0], "for": "ml/q"}]
    assert p["fits_after_moves"] and p["moves"] == [
        {
            "pod": "ml/c",
            "for": "ml/p",
            "from": {"node": "n1", "gpu": 0, "gpus": [0]},
            "to": {"node": "n0", "gpu": 0, "gpus": [0]},
        }
    ]
    assert (p["free"], p["largest_free"]) == (22, 10)
    assert not r["fits_after_moves"] and r["moves"] == [] and "20 units" in r["why"]
    assert [s["bound"] for s in doc["defrag"]["steps"]] == [[{"pod": "ml/p", "node": "n1"}]]
    assert doc["defrag"]["still_pending"] == ["ml/q", "ml/r"] and doc["defrag"]["confirmed"]


def test_max_moves_zero_measures_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["capacity", *hand_fleet(tmp_path), "--scheduler-name", SCHEDULER, "--max-moves", "0", "-o", "json"]) == 1
    )  # r's GW207, as in test_hand_fleet_table
    doc = json.loads(capsys.readouterr().out)
    assert doc["defrag"]["steps"] == [] and all(not p["fits_after_moves"] for p in doc["pending"])
    assert doc["pending"][0]["largest_free"] == 10


@pytest.mark.parametrize("value", ["-1", "65", "many"])
def test_max_moves_refused(value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["capacity", *hand_fleet(tmp_path), "--max-moves", value])
    assert exited.value.code == 2
    assert f"--max-moves {value!r}: expected a whole number from 0 to 64" in capsys.readouterr().err


def test_a_pool_named_where_no_move_helps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = node("big", 1, 32)
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(big))
    args = [*hand_fleet(tmp_path), "--scheduler-name", SCHEDULER, "--pool", str(tmp_path / "pool.yaml"), "-o", "json"]
    assert main(["capacity", *args]) == 0
    r = json.loads(capsys.readouterr().out)["pending"][2]
    assert r["name"] == "r" and r["pool"] == "big"


def test_the_readmes_example_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    text = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```\n(\$ gpushare capacity [^\n]*--existing running.yaml[^\n]*\n.*?)```", text, re.S)
    command, printed = block.split("\n", 1)
    hand_fleet(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(command.split()[2:]) == 1  # r's GW207
    assert capsys.readouterr().out == printed


def test_make_room_from_python(tmp_path: Path) -> None:
    """The library call on plain objects gives the command's answer."""
    hand_fleet(tmp_path)
    read = {
        name: list(yaml.safe_load_all((tmp_path / f"{name}.yaml").read_text()))
        for name in ("nodes", "running", "pending")
    }
    answer = make_room(read["nodes"], pods=read["pending"], existing=read["running"])
    assert [(f.name, f.moves is not None) for f in answer.pending] == [("p", True), ("q", True), ("r", False)]
    assert [(s.move.pod, s.bound) for s in answer.plan.steps] == [("ml/c", (("ml/p", "n1"),))]


def test_the_picture_of_fragmentation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picture = tmp_path / "capacity.svg"
    assert main(["capacity", *hand_fleet(tmp_path), "--plot", str(picture)]) == 1  # r's GW207
    text = picture.read_text()
    assert "Free memory per GPU (unit 1GiB): usable by a 12-unit request, or stranded" in text
    assert f"wrote {picture}" in capsys.readouterr().err
    (tmp_path / "mine.txt").write_text("the user's")
    assert main(["capacity", *hand_fleet(tmp_path), "--plot", str(tmp_path / "mine.txt")]) == 2
    assert (tmp_path / "mine.txt").read_text() == "the user's" and "--plot" in capsys.readouterr().err
