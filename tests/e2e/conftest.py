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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "minor" in metafunc.fixturenames:
        metafunc.parametrize("minor", selected_minors(), ids=lambda m: f"1.{m}", scope="module")


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
