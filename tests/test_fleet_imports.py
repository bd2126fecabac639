"""A fleet question loads what it uses: `capacity` and `place` on a small fleet never load the chart generator, the
settings model (pydantic), the templates (jinja2) or the fast readers (msgspec, rapidyaml: for Lists and large
files; a table is printed without them); `capacity` loads the defragmentation only for pending pods and the pools'
sizing only with --pool; a small fleet is answered by the reference engine, without numpy, a larger one by the fast
engine (`choose_engine`). Each command runs in a fresh interpreter, which then lists the modules it holds (their
time is benchmarks/small_fleet.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpushare.placement.simulation import SMALL_WORK

NEVER = ("pydantic", "jinja2", "gpushare.generate", "gpushare.settings", "msgspec", "ryml", "kubernetes")
PROBE = """
import json, sys
from gpushare.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded(tmp_path: Path, *args: str) -> set[str]:
    run = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, capture_output=True, text=True)
    report = json.loads(run.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, run.stderr
    return set(report["modules"])


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": capacity}} for i in range(8)]
    limits = {"aliyun.com/gpu-mem": "5"}
    pod = {
        "kind": "Pod",
        "metadata": {"name": "serve"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "template.yaml").write_text(yaml.safe_dump(pod))
    (tmp_path / "pending.yaml").write_text(yaml.safe_dump(pod | {"metadata": {"name": "waiting"}}))
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(nodes[0] | {"metadata": {"name": "pool"}}))
    return tmp_path


def _never(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in NEVER or m.startswith(NEVER))


def test_a_template_question_loads_neither_the_generator_nor_the_search_for_moves(fleet: Path) -> None:
    modules = loaded(fleet, "capacity", "--nodes", "nodes.yaml", "--template", "template.yaml")
    assert not _never(modules)
    assert "gpushare.planner.headroom" in modules  # the probe ran the question
    assert "gpushare.planner.defrag" not in modules and "gpushare.planner.pools" not in modules


def test_pending_pods_and_pools_load_what_answers_them(fleet: Path) -> None:
    modules = loaded(fleet, "capacity", "--nodes", "nodes.yaml", "pending.yaml", "--pool", "pool.yaml")
    assert not _never(modules)
    assert "gpushare.planner.defrag" in modules and "gpushare.planner.pools" in modules


def test_place_loads_no_planner(fleet: Path) -> None:
    modules = loaded(fleet, "place", "--nodes", "nodes.yaml", "pending.yaml")  # (-o json encodes with msgspec)
    assert not _never(modules)
    assert "gpushare.placement.reference" in modules and "gpushare.placement.fast.engine" not in modules
    assert "numpy" not in modules
    assert not any(m.startswith("gpushare.planner.") for m in modules)


def test_a_larger_fleet_runs_the_fast_engine(fleet: Path) -> None:
    """20 nodes x 900 replicas: past SMALL_WORK, where loading numpy costs less than the pods node by node."""
    template = yaml.safe_load((fleet / "template.yaml").read_text())
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "many"},
        "spec": {"replicas": 900, "template": {"spec": template["spec"]}},
    }
    nodes = list(yaml.safe_load_all((fleet / "nodes.yaml").read_text()))
    more = [n | {"metadata": {"name": f"m{i}"}} for i, n in enumerate(nodes * 2)][:12]
    (fleet / "nodes.yaml").write_text(yaml.safe_dump_all(nodes + more))
    (fleet / "many.yaml").write_text(yaml.safe_dump(deployment))
    assert len(nodes + more) * 900 > SMALL_WORK
    modules = loaded(fleet, "place", "-q", "--nodes", "nodes.yaml", "many.yaml")
    assert "gpushare.placement.fast.engine" in modules and "numpy" in modules


def test_auto_follows_the_work_given_to_the_reference_engine() -> None:
    """A fresh process: small runs go node by node until their work adds up to SMALL_WORK; numpy loaded by the
    caller sends every run to the fast engine."""
    probe = (
        "from gpushare.placement.simulation import SMALL_WORK, choose_engine\n"
        "half = SMALL_WORK // 2\n"
        "picked = [choose_engine(half, 1), choose_engine(half, 1), choose_engine(1, 1)]\n"
        "import numpy\n"
        "picked.append(choose_engine(0, 0))\n"
        "print(picked)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "['reference', 'reference', 'fast', 'fast']"
