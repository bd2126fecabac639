"""Helpers the tests share: where the repository is, rendering with the real helm, and what the CLI owes any input."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


#: A refusal, as the CLI's contract has it: `gpushare: error: ` and one line saying what and why.
REFUSAL = re.compile(r"gpushare: error: [^\n]*\S[^\n]*\n")


def assert_answered(code: int, out: str, err: str) -> None:
    """What `main` owes any input, however odd: an exit code the CLI documents and, when it refuses (2), nothing on
    stdout and exactly one line on stderr. An uncaught exception never reaches here: `main` called in-process
    raises it into the test, which fails on it; a Traceback can only be looked for on a process's stderr
    (`run_gpushare`)."""
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert out == "", out[:500]
        assert REFUSAL.fullmatch(err), err


def run_gpushare(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The `gpushare` command in a process of its own, as a user runs it: what an escaped exception prints there
    (a Traceback, exit 1) is visible, unlike in-process, where it propagates."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "gpushare", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def assert_no_crash(result: subprocess.CompletedProcess[str]) -> None:
    """A process's answer: no Traceback, an exit code the CLI documents, a refusal as one line."""
    assert "Traceback" not in result.stderr, result.stderr
    assert_answered(result.returncode, result.stdout, result.stderr)
