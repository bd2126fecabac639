"""Every command says alike what can never run: a pod the API server takes but that never runs or binds, and a node
of absurd size, are validate's errors, and validate, place, capacity and doctor each report the rule and exit 1 (or
refuse the input with exit 2 where no dry run can take it: more pods than it models). Each case runs through all four
commands as a user types them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare import ClusterFacts, validate
from gpushare.cli import main


def gpu_pod(name: str, limits: dict[str, Any], *, init: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    containers = [{"name": "c", "image": "app:1", "resources": {"limits": limits} if limits else {}}]
    body: dict[str, Any] = {"containers": containers, **spec}
    if init is not None:
        body["initContainers"] = [{"name": "i", "image": "init:1", "resources": {"limits": init}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": body}


def node(name: str, gpu_mem: str = "32", gpus: str = "2") -> dict[str, Any]:
    capacity = {
        "cpu": "32",
        "memory": "128Gi",
        "pods": "110",
        "aliyun.com/gpu-mem": gpu_mem,
        "aliyun.com/gpu-count": gpus,
    }
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


MANY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "many", "namespace": "ml"},
    "spec": {"replicas": 10**9, "template": {"spec": gpu_pod("t", {"aliyun.com/gpu-mem": 4})["spec"]}},
}
UPSTREAM = ["--semantics", "upstream"]

#: case -> (the pods, the nodes, semantics flags, the rule every command names, place's and capacity's exit)
CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], str, int]] = {
    "bytes": ([gpu_pod("p", {"aliyun.com/gpu-mem": "4Gi"})], [node("n1")], [], "GW218", 1),
    "zero": ([gpu_pod("p", {"aliyun.com/gpu-mem": 0})], [node("n1")], [], "GW217", 1),
    "init only": ([gpu_pod("p", {}, init={"aliyun.com/gpu-mem": 2})], [node("n1")], UPSTREAM, "GW217", 1),
    "more than any GPU": ([gpu_pod("p", {"aliyun.com/gpu-mem": "1e38"})], [node("n1")], [], "GW207", 1),
    "compute upstream": (
        [gpu_pod("p", {"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 50})],
        [node("n1")],
        UPSTREAM,
        "GW219",
        1,
    ),
    "replicas": ([MANY], [node("n1")], [], "GW220", 2),
    "node memory": ([gpu_pod("p", {"aliyun.com/gpu-mem": 4})], [node("n1"), node("huge", "1e24", "8")], [], "GN314", 1),
}


def _served(pods: list[dict[str, Any]], flags: list[str]) -> list[dict[str, Any]]:
    """The pods naming the scheduler the semantics serves: no GW214 beside the case's own rule."""
    if flags != UPSTREAM:
        return pods
    return [
        {**p, "spec": {**p["spec"], "schedulerName": "gpushare-scheduler"}} if p["kind"] == "Pod" else p for p in pods
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_command_says_it_never_runs(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, nodes, flags, rule, fleet_exit = CASES[case]
    pods = _served(pods, flags)
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    files = [str(tmp_path / "pods.yaml"), str(tmp_path / "nodes.yaml")]

    assert main(["validate", *files, *flags, "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert rule in {f["rule"] for f in report["findings"] if f["severity"] == "error"}

    fleet = ["--nodes", str(tmp_path / "nodes.yaml"), *flags]
    for command in (["place", *fleet, files[0]], ["capacity", *fleet, files[0]]):
        code = main([*command, "-o", "json"])
        out, err = capsys.readouterr()
        assert code == fleet_exit, (command[0], err)
        if fleet_exit == 2:  # refused: one line, nothing printed
            assert not out and len(err.splitlines()) == 1 and "at most 5,000,000 pods" in err
        else:
            assert rule in {f["rule"] for f in json.loads(out)["findings"]}, command[0]

    if case == "replicas":  # doctor reads a cluster's pods and nodes: a Deployment is not among them
        return
    semantics = ["--semantics", "upstream"] if flags == UPSTREAM else []
    assert main(["doctor", *files, *semantics, "-o", "json"]) == 1
    assert rule in {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}


def test_a_pod_that_runs_is_no_finding_anywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: a pod asking 4 of a fleet's 16-unit GPUs, on a node of real size: exit 0 from all four."""
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(gpu_pod("p", {"aliyun.com/gpu-mem": 4})))
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("n1")))
    files = [str(tmp_path / "pods.yaml"), str(tmp_path / "nodes.yaml")]
    fleet = ["--nodes", files[1], files[0]]
    for command in (["validate", *files], ["place", *fleet], ["capacity", *fleet], ["doctor", *files]):
        assert main(command) == 0, command[0]
        capsys.readouterr()


def test_the_library_validates_as_the_command_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`validate(objects, ClusterFacts())` gives the findings `gpushare validate` gives on the same file: the same
    defaults (GPU pods must name default-scheduler, as place serves it), the same rules; with the semantics said,
    the open-source stack's."""
    pods = [
        gpu_pod("other", {"aliyun.com/gpu-mem": 4}, schedulerName="my-scheduler"),
        gpu_pod("bytes", {"aliyun.com/gpu-mem": "4Gi"}),
        gpu_pod("compute", {"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 50}),
    ]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    for flags, facts in (([], ClusterFacts()), (UPSTREAM, ClusterFacts(semantics="upstream"))):
        assert main(["validate", str(tmp_path / "pods.yaml"), *flags, "-o", "json"]) == 1
        command = [(f["rule"], f["object"], f["field"]) for f in json.loads(capsys.readouterr().out)["findings"]]
        library = [(f.rule.id, f.subject, f.field) for f in validate(pods, facts).findings]
        assert library == command
        assert ("GW214", "Pod/ml/other", "spec.schedulerName") in library
        assert (("GW219", "Pod/ml/compute", "resources.limits.aliyun.com/gpu-core.percentage") in library) == bool(
            flags
        )


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize("semantics", [[], ["--semantics", "upstream", "--scheduler-name", "default-scheduler"]])
def test_any_number_a_file_holds_is_answered(
    engine: str, semantics: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPU memory past any int64 (the capacity index once overflowed on it): modelled as written, GN314 said, exit 1;
    the same answer from both engines."""
    huge = [node(f"n{i}", "99999999999999999999", "4") for i in range(3)]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(huge))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(gpu_pod("p", {"aliyun.com/gpu-mem": "20000000000000000000"})))
    args = ["place", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pods.yaml"), "--engine", engine]
    assert main([*args, *semantics, "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {f["rule"] for f in report["findings"]} == {"GN314"}
    assert [(p["name"], p["gpus"][0]["units"]) for p in report["placements"]] == [("p", 20000000000000000000)]
