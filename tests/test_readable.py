"""Answers for people: identical pods told once with their count, the constraint that keeps a pod out named with its
numbers (cpu, memory, pods, GPU memory on one GPU or at node level), `--explain`'s per-node numbers, and
"everything fits" said when it does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.cli import main


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


def burst(replicas: int, units: int, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": units}, "requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "burst", "namespace": "ml"},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    }


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([node("n0"), node("n1")]))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_a_burst_left_pending_is_one_row(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """400 replicas of 4 units on 4 GPUs of 16: 16 bind, 384 wait for the same reason: one row with the count, in
    place's PENDING and in capacity's table alike."""
    (fleet / "burst.yaml").write_text(yaml.safe_dump(burst(400, 4, "100m")))
    code, out = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "burst.yaml"))
    pending = out.split("PENDING\n")[1].split("\n\n")[0].splitlines()
    assert code == 0 and len(pending) == 1 and pending[0].startswith("ml/burst-16 and 383 more alike  0/2 nodes")
    code, out = run(capsys, "capacity", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "burst.yaml"))
    assert code == 0 and out.splitlines()[1].startswith("ml/burst-16 and 383 more alike")


def test_cpu_that_binds_is_named_with_its_numbers(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Replicas asking 3 cpu of nodes of 8: two a node bind, the next lacks cpu (2 free), not GPU memory (8 free on a
    GPU): capacity names cpu with the numbers, and place --explain gives each node's."""
    (fleet / "web.yaml").write_text(yaml.safe_dump(burst(1, 4, "3")))
    code, out = run(capsys, "capacity", "--nodes", str(fleet / "nodes.yaml"), "--template", str(fleet / "web.yaml"))
    assert code == 0 and out.splitlines()[1].split()[:2] == ["Deployment/ml/burst", "4"]
    assert "the next replica: Insufficient cpu on 2 of 2 nodes: asks 3, 2 free (the most on one node: n0)" in out
    (fleet / "many.yaml").write_text(yaml.safe_dump(burst(5, 4, "3")))
    code, out = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "many.yaml"), "--explain")
    assert "    n0: NodeResourcesFit: Insufficient cpu (asks 3, 2 free)" in out


def test_gpu_memory_on_one_gpu_is_named_with_its_numbers(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "big.yaml").write_text(yaml.safe_dump(burst(5, 10, "100m")))
    code, out = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "big.yaml"), "--explain")
    said = "GPUShare: Insufficient GPU Memory in one device (asks 10 on one GPU; free per GPU: 6, 6)"
    assert code == 0 and f"    n0: {said}" in out


def test_everything_fits_is_said(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "few.yaml").write_text(yaml.safe_dump(burst(2, 4, "100m")))
    code, out = run(capsys, "place", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "few.yaml"))
    assert code == 0 and "everything fits: every pod placed" in out
    code, out = run(capsys, "capacity", "--nodes", str(fleet / "nodes.yaml"), str(fleet / "few.yaml"))
    assert code == 0 and out == "everything fits: every pending pod schedules, nothing to make room for\n"
