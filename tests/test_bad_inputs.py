"""The bad and hostile inputs of issue #11's table, one row each: the command, the exit code and the message it now
gives, and that nothing was written. Rows that need a process of their own are tested where they live: Ctrl-C and
SIGTERM (test_output_safety.py::test_an_interrupt_is_one_line_and_leaves_no_output), 100 MB of pods (progress:
test_output_safety.py; memory and time: benchmarks/inputs.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import assert_answered

from gpushare.cli import main

CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "aliyun.com/gpu-mem": "16", "aliyun.com/gpu-count": "1"}
SETTINGS = "apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\n"
BOMB = "\n".join(
    [
        SETTINGS.strip(),
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def pod(name: str | None, namespace: str = "ml") -> dict[str, Any]:
    meta = {"namespace": namespace, **({"name": name} if name else {})}
    container = {"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 2}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


def deployment(replicas: int) -> dict[str, Any]:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": pod("x")["spec"]}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"a": "b"}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"}, "spec": spec}


def files(work: Path) -> None:
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "status": {"capacity": CAPACITY}} for n in "ab"
    ]
    (work / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (work / "pods.yaml").write_text(yaml.safe_dump_all([pod("p"), pod("q")]))
    (work / "empty.yaml").write_text("")
    (work / "nameless.yaml").write_text(yaml.safe_dump_all([pod("p"), pod(None)]))
    (work / "twice.yaml").write_text(yaml.safe_dump_all([pod("p"), pod("p")]))
    (work / "huge.yaml").write_text(yaml.safe_dump(deployment(100_000_000)))
    (work / "order.txt").write_text("ml/p gone\n")
    (work / "bomb.yaml").write_text(BOMB)
    (work / "file.txt").write_text("mine\n")
    (work / "folder").mkdir()
    (work / "folder" / "notes.txt").write_text("mine\n")
    (work / "manifests").mkdir()
    (work / "manifests" / "cm.yaml").write_text("kind: ConfigMap\n")
    os.symlink(work / "nowhere" / "x", work / "dangling")
    for name, text in {
        "unquoted.yaml": "kubernetesVersion: 1.20\n",
        "ack-version.yaml": 'kubernetesVersion: "v1.24.7-aliyun.1"\n',
        "future-patch.yaml": 'kubernetesVersion: "v1.28.99"\n',
        "spaced.yaml": 'kubernetesVersion: " 1.24"\n',
        "lots.yaml": "devicePlugin:\n  resources:\n    limits:\n      memory: lots\n",
    }.items():
        (work / name).write_text(SETTINGS + text)
    (work / "no-api.yaml").write_text("kind: InstallerSettings\n")


def edited_chart(work: Path) -> None:
    assert main(["render", "-o", "chart", "-q"]) == 0
    (work / "chart" / "values.yaml").write_text((work / "chart" / "values.yaml").read_text() + "# mine\n")


#: (row of the issue's table, preparation, arguments, exit code, what stderr says, what stdout says)
ROWS: list[tuple[str, Callable[[Path], None] | None, str, int, str, str]] = [
    ("-o ''", None, "render -o ''", 2, "--output: '' is not allowed; expected a new or gpushare-written path", ""),
    ("-o .", None, "render -o .", 2, "--output: '.' is not allowed; expected a new or gpushare-written path", ""),
    ("-o an existing file", None, "render -o file.txt", 2, "file.txt is a file gpushare did not write", ""),
    ("-o a non-chart folder", None, "render -o folder", 2, "folder is a directory gpushare did not write", ""),
    ("-o a chart with user edits", edited_chart, "render -o chart", 2, "or one with changes since", ""),
    ("-o a dangling symlink", None, "render -o dangling", 2, "dangling is a symbolic link (gpushare never writes", ""),
    ("-o a path that cannot be written", None, "render -o file.txt/out", 2, "file.txt is not a directory", ""),
    ("-o a dir of manifests", None, "render -o manifests", 2, "manifests is a directory gpushare did not write", ""),
    ("alias bomb, render", None, "render --config bomb.yaml -o out", 2, "aliases expand to at most 1,000,000", ""),
    ("alias bomb, validate", None, "validate bomb.yaml", 2, "aliases expand to at most 1,000,000 nodes", ""),
    ("replicas: 100000000", None, "place --nodes nodes.yaml huge.yaml", 2, "expected at most 5,000,000 pods", ""),
    ("swapped --nodes", None, "place --nodes pods.yaml nodes.yaml", 2, "expected Node objects", ""),
    ("empty file", None, "place --nodes empty.yaml pods.yaml", 2, "it holds nothing", ""),
    (
        "--node-order naming a missing node",
        None,
        "place --nodes nodes.yaml pods.yaml --node-order order.txt -o json",
        0,
        "",
        "--node-order: ml/p -> gone: no node gone in the fleet, the pod stays pending",
    ),
    ("object without a name, place", None, "place --nodes nodes.yaml nameless.yaml", 2, "metadata.name: unset", ""),
    ("object without a name, validate", None, "validate nameless.yaml", 1, "", "metadata.name: unset: expected a name"),
    ("same namespace/name, place", None, "place --nodes nodes.yaml twice.yaml", 2, "one object per kind", ""),
    ("same namespace/name, validate", None, "validate twice.yaml", 1, "", "one object per kind, namespace and name"),
    ("kubernetesVersion: 1.20 unquoted", None, "render --config unquoted.yaml -o out", 2, "a quoted version", ""),
    ("v1.24.7-aliyun.1", None, "render --config ack-version.yaml -o out", 0, "wrote chart", ""),
    ("v1.28.99", None, "render --config future-patch.yaml -o out", 0, "is accepted; advised: a released patch", ""),
    ("' 1.24'", None, "render --config spaced.yaml -o out", 0, "wrote chart", ""),
    ("memory=lots", None, "render --config lots.yaml -o out", 2, "'lots' is not allowed; expected a Kubernetes", ""),
    ("empty image tag", None, "render --device-plugin-image-tag= -o out", 2, "expected a tag (--device-plugin", ""),
    ("settings without apiVersion", None, "render --config no-api.yaml -o out", 2, "apiVersion: unset is not", ""),
]


@pytest.mark.parametrize(("row", "prepare", "command", "code", "err", "out"), ROWS, ids=[r[0] for r in ROWS])
def test_each_row_of_the_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    row: str,
    prepare: Callable[[Path], None] | None,
    command: str,
    code: int,
    err: str,
    out: str,
) -> None:
    work = tmp_path / "home" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    files(work)
    if prepare is not None:
        prepare(work)
        capsys.readouterr()
    before = sorted(p.relative_to(work).as_posix() for p in work.rglob("*"))
    args = [a.replace("''", "") for a in command.split()]
    result = main(args)
    captured = capsys.readouterr()
    assert result == code, captured.err
    assert err in captured.err and out in captured.out, (captured.err, captured.out[:500])
    assert_answered(result, captured.out, captured.err)
    after = sorted(p.relative_to(work).as_posix() for p in work.rglob("*"))
    if code == 2:
        assert after == before, "a refused command wrote something"
    if "is not allowed" in captured.err:
        assert "error" in captured.err.splitlines()[0], "a warning that says `is not allowed`"


def test_a_tag_flag_keeps_the_default_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--device-plugin-image-tag v2` sets the tag of the default image (it once dropped the repository)."""
    assert main(["render", "--device-plugin-image-tag", "v2", "-o", str(tmp_path / "out"), "-q"]) == 0
    image = yaml.safe_load((tmp_path / "out" / "values.yaml").read_text())["devicePlugin"]["image"]
    assert image["tag"] == "v2" and image["repository"].endswith("/k8s-gpushare-plugin")
