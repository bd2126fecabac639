"""The CLI on generated hostile inputs and paths (render, validate, place, preflight with a kubeconfig that
reaches nothing): an exit code of 0, 1 or 2, never a traceback, nothing written outside the target, an
existing target unchanged when the command fails, and time and memory bounded."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpushare.cli import main

SETTINGS = "apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\n"
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\n"
    "spec: {containers: [{name: c, resources: {limits: {aliyun.com/gpu-mem: 2}}}]}\n"
)
NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    "status: {capacity: {cpu: '8', memory: 32Gi, pods: '110', aliyun.com/gpu-mem: '16', aliyun.com/gpu-count: '1'}}\n"
)
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
FRAGMENTS = [
    SETTINGS,
    SETTINGS + "profile: open-source\ngpuMemoryUnit: 128MiB\n",
    SETTINGS + "kubernetesVersion: 1.20\n",
    SETTINGS + "profile: ack\nprofile: open-source\n",
    SETTINGS + BOMB,
    POD,
    POD.replace("name: p", "name: [p"),
    NODE,
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 100000000, template: {}}\n",
    "apiVersion: v1\nkind: List\nitems:\n- " + POD.replace("\n", "\n  ").rstrip() + "\n",
    '{"apiVersion": "v1", "kind": "List", "items": [1, "x", {"kind": "Pod"}]}',
    "[" * 5000 + "]" * 5000,
    "- - - - x\n",
    "\t\x00\x01binary\xff\n",
    "\ufeffkind: Pod\n",
    "---\n---\n",
    "",
    "kind: Pod\nmetadata: {name: " + "x" * 100_000 + "}\n",
]
TEXTS = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map("---\n".join)
TARGETS = st.sampled_from(
    ["", ".", "..", "~", "out", "out/sub/deeper", "file.txt", "folder", "chart", "dangling", "file.txt/x", "link"]
)
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: t}}]
"""


def snapshot(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "<dir>"
    return found


def under(rel: str, target: str) -> bool:
    return bool(target) and (rel == target or rel.startswith(target.rstrip("/") + "/"))


@settings(
    max_examples=60,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    command=st.sampled_from(["render", "validate", "place", "preflight"]),
    text=TEXTS,
    target=TARGETS,
    bad_kubeconfig=st.booleans(),
)
def test_the_cli_answers_every_input(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    text: str,
    target: str,
    bad_kubeconfig: bool,
) -> None:
    sandbox = tmp_path_factory.mktemp("fuzz")
    home, work = sandbox / "home", sandbox / "home" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    (work / "input.yaml").write_text(text, errors="surrogateescape")
    (work / "nodes.yaml").write_text(NODE)
    (work / "file.txt").write_text("mine\n")
    (work / "folder").mkdir()
    (work / "folder" / "notes.txt").write_text("mine\n")
    os.symlink(work / "nowhere", work / "dangling")
    os.symlink(work / "folder", work / "link")
    (work / "kubeconfig").write_text("::\n" if bad_kubeconfig else KUBECONFIG)
    if target == "chart":
        assert main(["render", "-o", "chart", "-q"]) == 0
        (work / "chart" / "values.yaml").write_text("edited\n")
    args = {
        "render": ["render", "--config", "input.yaml", "-o", target],
        "validate": ["validate", "input.yaml", "-o", "json"],
        "place": ["place", "--nodes", "nodes.yaml", "input.yaml", "-o", "json"],
        "preflight": ["preflight", "--config", "input.yaml", "--kubeconfig", "kubeconfig"],
    }[command]
    capsys.readouterr()
    before = snapshot(sandbox)
    try:
        code = main(args)
    finally:
        captured = capsys.readouterr()
    assert code in (0, 1, 2), (args, captured.err)
    assert "Traceback" not in captured.err + captured.out, captured.err
    after = snapshot(sandbox)
    written = "home/work/" + target if command == "render" and target not in ("", ".", "..", "~") else None
    outside = {k: v for k, v in after.items() if not (written and under(k, written))}
    assert outside == {k: v for k, v in before.items() if not (written and under(k, written))}, args
    if code != 0 and written:
        assert {k: v for k, v in after.items() if under(k, written)} == {
            k: v for k, v in before.items() if under(k, written)
        }, "a failed render changed its target"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 3 * 2**20, "over 3 GiB"  # KiB on Linux
    shutil.rmtree(sandbox)
