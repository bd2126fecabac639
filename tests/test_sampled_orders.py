"""`place --runs K`: the node order kube-scheduler starts with, sampled. From 1.35 (and before 1.27) the order its
cache lists nodes in changes at every start; on a fleet where its search stops early, which nodes a pod's search
sees then cannot be known: the run says so, and `--runs` places the pods again with the nodes in random orders and
ties broken at random, counting how often each pod lands as the dry run says."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpushare.cli import main

SCHEMA = json.loads((Path(__file__).parent.parent / "schemas" / "placement-report.schema.json").read_text())


def fleet(tmp_path: Path, nodes: int) -> list[str]:
    rng = random.Random(7)
    docs = []
    for i in range(nodes):
        gpus = rng.choice([1, 2, 4])
        capacity = {
            "cpu": "32",
            "memory": "128Gi",
            "pods": "110",
            "aliyun.com/gpu-mem": str(gpus * 16),
            "aliyun.com/gpu-count": str(gpus),
        }
        name = f"n{i:03d}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": str(4 + 4 * (i % 3))}}}]
            },
        }
        for i in range(6)
    ]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    return ["place", "--semantics", "upstream", "--scheduler-name", "default-scheduler", "--nodes",
            str(tmp_path / "nodes.yaml"), str(tmp_path / "pods.yaml"), "-o", "json"]  # fmt: skip


def report(args: list[str], capsys: Any) -> dict[str, Any]:
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return doc


@pytest.mark.parametrize("minor", ["1.26", "1.36"])
def test_an_unknowable_order_is_said_and_sampled(tmp_path: Path, capsys: Any, minor: str) -> None:
    args = fleet(tmp_path, 160)
    doc = report([*args, "--kube-version", minor, "--runs", "8"], capsys)
    assert any("order that changes at every start" in w for w in doc["warnings"])
    sampled = doc["sampled"]
    assert sampled["runs"] == 8 and len(sampled["pods"]) == 6
    placed = {p["name"]: p["node"] for p in doc["placements"]}
    for pod in sampled["pods"]:
        assert pod["same"] + pod["elsewhere"] + pod["pending"] == 8
        assert pod["node"] == placed.get(pod["name"], "")
        assert 1 <= pod["likelyRuns"] <= 8
    # 160 nodes, each search stops at 100: the nodes a pod's search sees differ between orders
    assert any(pod["elsewhere"] for pod in sampled["pods"])


def test_a_knowable_order_is_not_flagged(tmp_path: Path, capsys: Any) -> None:
    """1.27-1.34 list nodes by name; a fleet under 100 nodes is searched whole whatever the order."""
    assert not any("order" in w for w in report([*fleet(tmp_path, 160), "--kube-version", "1.30"], capsys)["warnings"])
    small = report([*fleet(tmp_path, 40), "--kube-version", "1.36"], capsys)
    assert not any("order" in w for w in small["warnings"]) and "sampled" not in small


def test_runs_without_ties_agree_every_time(tmp_path: Path, capsys: Any) -> None:
    """Eight nodes of distinct sizes and a pod each that only one fits: every sampled run agrees."""
    nodes = []
    for i in range(8):
        capacity = {
            "cpu": "8",
            "memory": "32Gi",
            "pods": "110",
            "aliyun.com/gpu-mem": str(8 * (i + 1)),
            "aliyun.com/gpu-count": "1",
        }
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"m{i}"},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    limits = {"aliyun.com/gpu-mem": "64"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }
    (tmp_path / "n.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pod))
    args = [
        "place",
        "--semantics",
        "upstream",
        "--scheduler-name",
        "default-scheduler",
        "--nodes",
        str(tmp_path / "n.yaml"),
        str(tmp_path / "p.yaml"),
        "-o",
        "json",
        "--runs",
        "5",
    ]
    (only,) = report(args, capsys)["sampled"]["pods"]
    assert (only["node"], only["same"], only["likely"], only["likelyRuns"]) == ("m7", 5, "m7", 5)


def test_runs_refuse_compare_and_replay(tmp_path: Path, capsys: Any) -> None:
    args = fleet(tmp_path, 10)
    assert main([*args, "--runs", "2", "--compare", "placement=binpack,spread"]) == 2
    assert "--runs" in capsys.readouterr().err
