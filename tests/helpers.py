"""Helpers the tests share: where the repository is, rendering with the real helm, and what the CLI owes any input."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
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


def children_of(pid: int) -> list[int]:
    """The processes `pid` forked that still exist (zombies too, until reaped)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def as_from_a_terminal() -> None:
    """A child's SIGINT as a terminal's Ctrl-C finds it (`preexec_fn`): a shell without job control starts background
    jobs (a CI script's `&`) with SIGINT ignored, which children inherit, and Python then leaves Ctrl-C ignored, as it
    should; a test sending SIGINT must not depend on how its runner was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_when_forked(args: list[str], cwd: Path | None = None, settle: float = 0.0) -> tuple[int, str, str]:
    """`gpushare ARGS` run until it has forked a copy of itself (then `settle` seconds more, both at work), then
    Ctrl-C as a terminal sends it, to the whole process group: the process and its copies alike. Its exit code,
    output and error, after asserting that the copies are gone (reaped, or zombies of a dead parent)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gpushare", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,
    )
    deadline = time.monotonic() + 120
    while not children_of(process.pid) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    copies = children_of(process.pid)
    assert copies, "no copy was forked"
    time.sleep(settle)
    process.send_signal(signal.SIGINT)
    for pid in copies:
        os.kill(pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    for pid in copies:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    return process.returncode, out, err


def assert_no_crash(result: subprocess.CompletedProcess[str]) -> None:
    """A process's answer: no Traceback, an exit code the CLI documents, a refusal as one line."""
    assert "Traceback" not in result.stderr, result.stderr
    assert_answered(result.returncode, result.stdout, result.stderr)


def gpu_deployment(name: str, namespace: str, units: int, replicas: int = 1) -> dict[str, Any]:
    """A Deployment whose pods ask `units` of aliyun.com/gpu-mem: a model server's template."""
    limits = {"aliyun.com/gpu-mem": str(units)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
            },
        },
    }
