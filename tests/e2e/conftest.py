"""End-to-end fixtures: a real control plane per Kubernetes minor.

`GPUSHARE_E2E_MINORS` (comma-separated, e.g. `1.20,1.28`, or `all`) selects the minors (tests/toolchain.py
holds the default: one per scheduler configuration API). The programs are built beforehand by
`python tests/toolchain.py build`; missing, the tests skip saying so, and under CI=true that is a failure.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cluster import ControlPlane
from toolchain import control_plane_tools, need_tool, selected_minors

E2E_DIR = Path(__file__).resolve().parent


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each minor's tests form one xdist group (tox runs `--dist loadgroup`): one worker runs them all, so no
    other worker starts that minor's control planes too. A module naming `MINORS` runs on those of the selected
    minors only (what it needs is built for them alone)."""
    if "minor" in metafunc.fixturenames:
        only = getattr(metafunc.module, "MINORS", None)  # a module that needs what only some minors build
        chosen = [m for m in selected_minors() if only is None or m in only]
        minors = [pytest.param(m, marks=pytest.mark.xdist_group(f"e2e-1.{m}")) for m in chosen]
        metafunc.parametrize("minor", minors, ids=lambda m: f"1.{m}", scope="module")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each module's end-to-end tests run minor by minor, so each module starts a minor's control plane once. As
    collected (and as pytest orders them), a module's tests alternate between minors, pytest not regrouping a
    module-scoped parameter that another parametrize multiplies: a test often started a plane anew (7 s).

    Where the workers start is not this order's to say: xdist's loadgroup hands out the largest groups first (each
    minor's end-to-end tests, which with `.ci/run`'s builds beside them wait on their minor's build), and groups
    alike in size in this order, which is the order the minors are built in."""
    first: dict[Path, int] = {}  # modules keep their places; within each, its tests regroup by minor (stably)
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    items.sort(key=lambda item: (first[item.path], _minor(item)))


def _minor(item: pytest.Item) -> int:
    """The minor an end-to-end test runs on; -1 for any other test."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or E2E_DIR not in item.path.parents:
        return -1
    return int(callspec.params.get("minor", -1))


@pytest.fixture(scope="module")
def binaries(minor: int) -> dict[str, Path]:
    return {name: need_tool(tool) for name, tool in control_plane_tools(minor).items()}


@pytest.fixture(scope="module")
def cluster(minor: int, binaries: dict[str, Path]) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver of `minor`, stopped and removed even when a test fails."""
    workdir = Path(tempfile.mkdtemp(prefix=f"gpushare-e2e-1.{minor}-"))
    plane = ControlPlane(minor, workdir, binaries)
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(workdir, ignore_errors=True)
