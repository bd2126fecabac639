"""A fleet question loads what it uses: `capacity` and `place` on a small fleet never load the chart generator, the
settings model (pydantic), the templates (jinja2) or the fast readers (msgspec, rapidyaml: for Lists and large
files; a table is printed without them); `capacity` loads the defragmentation only for pending pods and the pools'
sizing only with --pool. Each command runs in a fresh interpreter, which then lists the modules it holds (their
time is benchmarks/small_fleet.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
    assert "gpushare.placement.fast.engine" in modules
    assert not any(m.startswith("gpushare.planner.") for m in modules)
