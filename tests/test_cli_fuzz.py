"""The CLI on generated hostile inputs and paths (render, validate, place, preflight with a kubeconfig that
reaches nothing): an exit code of 0, 1 or 2, never a traceback, nothing written outside the target, an
existing target unchanged when the command fails, and time and memory bounded."""

from __future__ import annotations

import copy
import hashlib
import os
import resource
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import assert_answered
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
    assert_answered(code, captured.out, captured.err)
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


#: A workload using every pod field the dry-run reads, each of which the next test replaces by a value of a wrong type.
FULL = yaml.safe_load("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns1, labels: {app: a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}, annotations: {x: y}}
    spec:
      schedulerName: default-scheduler
      nodeSelector: {gpushare: "true"}
      tolerations: [{key: a, operator: Equal, value: v, effect: NoSchedule, tolerationSeconds: 5}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: gpushare, operator: In, values: ["true"]}]
              matchFields: [{key: metadata.name, operator: In, values: [n]}]
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 5
            preference: {matchExpressions: [{key: z, operator: Exists}]}
        podAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 3
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: a}}
              namespaces: [ns1]
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchExpressions: [{key: app, operator: In, values: [b]}]}
            namespaceSelector: {matchLabels: {t: x}}
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector: {matchLabels: {app: a}}
        matchLabelKeys: [pod-template-hash]
        nodeAffinityPolicy: Honor
        nodeTaintsPolicy: Ignore
        minDomains: 1
      overhead: {cpu: 100m}
      initContainers: [{name: i, image: busybox, resources: {requests: {cpu: 200m}}}]
      containers:
      - name: c
        image: "x:1"
        resources:
          limits: {aliyun.com/gpu-mem: 2, aliyun.com/gpu-core.percentage: 10}
          requests: {cpu: "1", memory: 1Gi}
""")


#: The same pod already bound to the node.
BOUND = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns1", **FULL["spec"]["template"]["metadata"]},
    "spec": {**FULL["spec"]["template"]["spec"], "nodeName": "n"},
}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _paths(inner, (*path, key))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where=st.sampled_from([(False, p) for p in _paths(FULL)] + [(True, p) for p in _paths(BOUND)]),
    value=st.sampled_from([[1], {"a": 1}, 1.5, -1, True, None, "x"]),
    semantics=st.sampled_from(["upstream", "ack"]),
)
def test_a_field_of_the_wrong_type_is_answered_never_a_traceback(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    where: tuple[bool, tuple[Any, ...]],
    value: Any,
    semantics: str,
) -> None:
    """Each field of a pod the dry-run reads, set to a list, a mapping, a number or nothing, in a Deployment's new
    pods or in a pod already bound: the pod is placed or reported, never a traceback (a list or mapping once
    reached the engine's hashing as a toleration's value or an affinity's key)."""
    bound, path = where
    document = copy.deepcopy(BOUND if bound else FULL)
    inner = document
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    work = tmp_path_factory.mktemp("fields")
    (work / "nodes.yaml").write_text(NODE)
    (work / "pods.yaml").write_text(yaml.safe_dump(document))
    capsys.readouterr()
    for args in (["place", "--semantics", semantics, "--nodes", str(work / "nodes.yaml")], ["validate"]):
        try:
            code = main([*args, str(work / "pods.yaml"), "-o", "json"])
        finally:
            captured = capsys.readouterr()
        assert_answered(code, captured.out, captured.err)
