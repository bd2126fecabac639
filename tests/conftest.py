"""Shared fixtures: the real helm binary, and helpers to render with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from toolchain import HELM, ToolUnavailable

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"


def need_tool(tool: Any) -> Path:
    """The built tool; without Go the test skips with what to install, except in CI where that is a failure."""
    try:
        return tool.ensure()
    except ToolUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI=true but {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def helm() -> Path:
    return need_tool(HELM)


def helm_template(
    helm: Path,
    chart: Path,
    kube_version: str,
    namespace: str = "kube-system",
    release: str = "gpushare",
    extra: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Objects `helm template` renders from `chart` for a cluster of `kube_version`."""
    result = subprocess.run(
        [str(helm), "template", release, str(chart), "-n", namespace, "--kube-version", kube_version, *extra],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise AssertionError(f"helm template failed for {kube_version}:\n{result.stderr}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    result = {key(o): o for o in objects}
    assert len(result) == len(objects), "duplicate objects"
    return result
