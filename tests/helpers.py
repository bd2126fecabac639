"""Helpers the tests share: where the repository is, and rendering with the real helm."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent


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
