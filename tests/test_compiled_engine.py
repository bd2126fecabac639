"""The placement engine compiled by mypyc (setup.py) answers exactly as its Python source does, and CI tests the
build users install: tox installs a wheel, in which the engine is compiled."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gpushare
from gpushare.placement import compiled
from gpushare.policy.rules import RULES

REPO = Path(__file__).resolve().parent.parent
#: The source tree, importable as it is: never compiled (setup.py compiles into the wheel only).
SOURCE = {**os.environ, "PYTHONPATH": str(REPO)}


def _gpushare(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run from the filesystem root: `python -m` puts the working directory first on the path, and in the
    repository that would be the source tree, not the installed build."""
    command = [sys.executable, "-m", "gpushare", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd="/")


def test_version_says_which_engine_runs() -> None:
    shown = _gpushare(["--version"])
    engine = "compiled by mypyc" if compiled() else "Python source"
    assert shown.returncode == 0 and shown.stdout == f"gpushare {gpushare.__version__} (placement engine: {engine})\n"
    source = _gpushare(["--version"], SOURCE)
    assert source.stdout.endswith("(placement engine: Python source)\n")


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI installs the wheel; a developer's tree is editable")
def test_ci_runs_the_compiled_engine() -> None:
    assert compiled(), f"the engine was not compiled: {gpushare.__file__}"


def _fleet(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(20, 60)):
        gpus = rng.choice([1, 2, 4, 8])
        capacity = {
            "cpu": str(rng.choice([16, 64, 192])),
            "memory": f"{rng.choice([64, 512, 1536])}Gi",
            "pods": "110",
            "aliyun.com/gpu-mem": str(gpus * rng.choice([16, 24, 80])),
            "aliyun.com/gpu-count": str(gpus),
        }
        labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}
        labels["ack.node.gpu.schedule"] = rng.choice(["share", "share", "cgpu"])
        spec: dict[str, Any] = {}
        if rng.random() < 0.2:
            spec["taints"] = [{"key": "busy", "value": "yes", "effect": "PreferNoSchedule"}]
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": labels},
                "spec": spec,
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    workloads = []
    for i in range(rng.randint(20, 40)):
        container = {
            "name": "c",
            "image": f"img{rng.randint(0, 3)}",
            "resources": {
                "limits": {"aliyun.com/gpu-mem": rng.choice([1, 2, 4, 8, 16])},
                "requests": {"cpu": rng.choice(["500m", "1", "4"]), "memory": rng.choice(["1Gi", "8Gi"])},
            },
        }
        template = {"metadata": {"labels": {"app": f"a{i}"}}, "spec": {"containers": [container]}}
        if rng.random() < 0.5:
            workloads.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"d{i}", "namespace": "ml"},
                    "spec": {
                        "replicas": rng.randint(1, 30),
                        "selector": {"matchLabels": {"app": f"a{i}"}},
                        "template": template,
                    },
                }
            )
        else:
            workloads.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", **template["metadata"]},
                              "spec": template["spec"]})  # fmt: skip
    node_file, workload_file = tmp_path / f"nodes{seed}.json", tmp_path / f"workloads{seed}.json"
    node_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    workload_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": workloads}))
    return node_file, workload_file


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("semantics", ["ack", "upstream"])
def test_the_installed_engine_answers_as_the_source_does(tmp_path: Path, seed: int, semantics: str) -> None:
    """On a developer's editable tree both runs are the source; in CI the first is the compiled wheel."""
    nodes, workloads = _fleet(tmp_path, seed)
    args = ["place", "--nodes", str(nodes), str(workloads), "-o", "json", "--semantics", semantics]
    args += ["--scheduler-name", "default-scheduler"]
    installed, source = _gpushare(args), _gpushare(args, SOURCE)
    assert installed.returncode == source.returncode == 0, installed.stderr + source.stderr
    assert installed.stdout == source.stdout
    assert json.loads(installed.stdout)["summary"]["placed"] > 0


def test_a_pod_copied_with_changes_keeps_every_other_field() -> None:
    """`with_changes` passes the fields by position to Pod's written-out constructor (`POD_FIELDS`, its order):
    were they ever listed in different orders, values would land in the wrong fields. Every field here holds a
    value no other does (but pod_affinity, left None), so any mismatch shows; compiled, a value of the wrong type
    is refused outright. A change to what the pod's `Ask` holds makes an Ask of its own; others share it, and
    `dataclasses.replace` of what an Ask holds is refused (it would keep the old one)."""
    import dataclasses
    import inspect

    from gpushare.kube.podspec import HostPort, Requirement, SpreadConstraint, Toleration, from_set
    from gpushare.placement.model import POD_FIELDS, Pod, with_changes

    if not compiled():  # the constructor's own parameters, in order (a compiled one may not say them)
        assert tuple(inspect.signature(Pod.__init__).parameters)[1:] == (*POD_FIELDS, "ask")
    spread = (SpreadConstraint("zone", 1, from_set({"app": "a"})),)
    pod = Pod(
        namespace="ns", name="p", gpu_mem=1, gpu_count=2, core=3, cpu=4, memory=5, node_gpu_mem=6, node_core=7,
        other=(("example.com/fpga", 8),), node_selector=(("pool", "a"),),
        affinity=((Requirement("k", "In", ("v",)),),), tolerations=(Toleration("t", "Exists", None, None),),
        node="n1", gpu_held=((9, 4),), invalid="no", source="f:10", labels=(("app", "a"),), nz_cpu=11,
        nz_memory=12, images=("img:1",), preferred=((13, (Requirement("w", "In", ("x",)),)),), spread=spread,
        spread_own=True, hard_spread=spread[::-1] + spread, owner=("ReplicaSet", "u"), pod_affinity=None,
        ns_labels=(("team", "b"),), template=14, scheduler_name="other-scheduler",
        host_ports=(HostPort("TCP", "", 8080),), priority=15, per_device=(16, 2), preempts=False,
        started="2026-01-01T00:00:17Z", created="2026-01-01T00:00:18Z",
        bind_error="failed bind",
    )  # fmt: skip
    default = Pod("", "")
    assert set(POD_FIELDS) - {"pod_affinity"} == {
        name for name in POD_FIELDS if getattr(pod, name) != getattr(default, name)
    }, "a field left at its default here would not show a mismatch"
    assert with_changes(pod) == pod and with_changes(pod).ask is pod.ask
    renamed = with_changes(pod, name="q", labels=(("app", "b"),))
    assert (renamed.name, renamed.labels) == ("q", (("app", "b"),)) and renamed.ask is pod.ask
    others = [name for name in POD_FIELDS if name not in ("name", "labels")]
    assert [getattr(renamed, name) for name in others] == [getattr(pod, name) for name in others]
    moved = with_changes(pod, cpu=40, name="r")
    assert (moved.cpu, moved.name, pod.cpu) == (40, "r", 4) and moved.ask != pod.ask
    assert [getattr(moved, n) for n in others if n != "cpu"] == [getattr(pod, n) for n in others if n != "cpu"]
    assert dataclasses.replace(pod, name="s").cpu == 4
    with pytest.raises(TypeError):
        dataclasses.replace(pod, cpu=40)


def test_one_gpu_pods_share_the_nodes_tuple_of_their_gpu() -> None:
    """The devices a one-GPU pod holds are its node's own tuple of that GPU, shared by the pods on it, compiled as
    in the source (compiled, a tuple typed of one Gpu was held unboxed, and each pod bound made one of its own)."""
    from gpushare.kube.documents import Source
    from gpushare.placement import Simulation

    capacity = {"cpu": "32", "memory": "64Gi", "pods": "110", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    nodes = [
        Source({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": capacity}}, "n")
    ]
    pods = [
        Source({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns", "annotations": {
            "ALIYUN_COM_GPU_MEM_IDX": str(i % 2), "ALIYUN_COM_GPU_MEM_POD": "2"}},
         "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": "2"}}}]},
         "status": {"phase": "Running"}}, f"p{i}")
        for i in range(6)
    ]  # fmt: skip
    fleet = Simulation.from_sources(nodes, pods, [])
    fleet.charge()  # the running pods bound where their annotations say
    node = fleet.node("n")
    assert len(node.held) == 6 and {h[0].index for h in node.held} == {0, 1}
    assert all(h is node.alone[h[0].index] and h[0] is node.gpus[h[0].index] for h in node.held)


#: Every rule's case from test_rules run through `validate`, printed with where the rules ran (compiled or source).
_RULE_CASES = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_rules import CASES
from gpushare.policy import engine
from gpushare.policy.rules import workloads
from gpushare.policy.validate import validate
findings = {
    rule: [[f.rule.id, f.message, f.where, f.subject] for f in validate(objects, engine.ClusterFacts(**flags)).findings]
    for rule, (objects, flags) in sorted(CASES.items())
}
compiled = [not m.__file__.endswith(".py") for m in (engine, workloads)]
print(json.dumps({"compiled": compiled, "findings": findings}))
"""


def test_the_installed_rules_find_what_the_source_finds() -> None:
    """`validate`'s engine and its workload and Node rules are compiled too (setup.py): every rule's case gives
    the same findings, word for word, as the source's."""
    tests = str(REPO / "tests")
    runs = [
        subprocess.run([sys.executable, "-c", _RULE_CASES, tests], capture_output=True, text=True, env=env, cwd="/")
        for env in (None, SOURCE)
    ]
    assert all(r.returncode == 0 for r in runs), "".join(r.stderr for r in runs)
    installed, source = (json.loads(r.stdout) for r in runs)
    assert source["compiled"] == [False, False] and installed["compiled"] == [compiled(), compiled()]
    assert installed["findings"] == source["findings"]
    fired = {finding[0] for found in source["findings"].values() for finding in found}
    # what preflight or diff reads (no flag gives it), and the ledger's rules (doctor's, test_doctor)
    assert fired == {r.id for r in RULES if r.target not in ("gpu-pod", "gpu-node", "ledger")} - {
        "GC411",
        "GC415",
        "GC416",
    }


def test_the_public_api_keeps_its_help_when_compiled() -> None:
    """help() on the public API shows the source's docstrings and signatures, compiled or not (mypyc drops a
    class's docstring and shows `type = None` for its fields; gpushare.helptext gives them back)."""
    import inspect
    import typing

    import gpushare.placement as placement

    public = [getattr(gpushare, n) for n in gpushare.__all__ if n != "__version__"]
    public += [getattr(placement, n) for n in placement.__all__]
    for obj in public:
        if not callable(obj) or isinstance(obj, str | int | typing.NewType) or typing.get_origin(obj) is not None:
            continue  # a constant (a hook's name, a limit) or a type alias
        assert (obj.__doc__ or "").strip(), f"{obj!r} has no docstring"
        if not (isinstance(obj, type) and issubclass(obj, Exception)):  # their signature is Exception's
            assert "type = None" not in str(inspect.signature(obj)), f"{obj!r}: {inspect.signature(obj)}"
    assert "kube_version: 'str | None' = None" in str(inspect.signature(gpushare.ClusterFacts))
