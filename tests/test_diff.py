"""`gpushare diff`: the stack's difference is exactly what turns one rendering into the other; the rules a change
introduces; running pods that lose their place as the side after's own device rules say; the command's forms,
exit codes and refusals."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from jsonschema import Draft202012Validator
from test_defrag import node, pod, running

from gpushare.cli import main
from gpushare.domain import cgpu
from gpushare.generate.matrix import combos
from gpushare.generate.render import render
from gpushare.kube.documents import from_objects
from gpushare.placement import Semantics, place
from gpushare.planner.change import Side, diff
from gpushare.planner.stackdiff import ABSENT, compare, leaves
from gpushare.settings.load import build_settings

SCHEMA = Draft202012Validator(json.loads((REPO / "schemas" / "change-report.schema.json").read_text()))
SCHEDULER = "default-scheduler"


def served(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for d in docs:
        d["spec"]["schedulerName"] = SCHEDULER
    return docs


def write(tmp_path: Path, name: str, docs: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _objects(options: dict[str, Any]) -> list[dict[str, Any]]:
    return render(format="chart", **options).objects


def _rendered(document: dict[str, Any]) -> list[dict[str, Any]]:
    return render(document, format="chart").objects


def _key(o: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = o["metadata"]
    return o["apiVersion"].rpartition("/")[0], o["kind"], meta.get("namespace") or "", meta["name"]


@pytest.mark.parametrize("seed", range(12))
def test_the_field_changes_turn_one_rendering_into_the_other(seed: int) -> None:
    """Any two settings of the matrix: the removed objects, the added ones and each changed object's fields
    applied to the first rendering give the second, leaf for leaf."""
    rng = random.Random(seed)
    settings = [c for c in combos() if c.get("kubernetesVersion")]
    a, b = rng.sample(settings, 2)
    before, after = _rendered(a), _rendered(b)
    changes = compare(before, after)
    rebuilt = {_key(o): dict(leaves(o)) for o in before}
    for change in changes:
        k = (change.api_version.rpartition("/")[0], change.kind, change.namespace or "", change.name)
        if change.change == "removed":
            del rebuilt[k]
            continue
        fields = rebuilt.setdefault(k, {})
        for f in change.fields:
            if f.after is ABSENT:
                del fields[f.path]
            else:
                fields[f.path] = f.after
    assert rebuilt == {_key(o): dict(leaves(o)) for o in after}, (a, b)
    assert (changes == []) == (before == after)


def test_a_minor_across_the_configuration_api_change_shows_the_api_field() -> None:
    before = _objects({"profile": "open-source", "kube_version": "1.22"})
    after = _objects({"profile": "open-source", "kube_version": "1.28"})
    (config,) = [c for c in compare(before, after) if c.kind == "ConfigMap"]
    paths = {f.path: (f.before, f.after) for f in config.fields}
    assert paths['data["scheduler-config.yaml"].apiVersion'] == (
        "kubescheduler.config.k8s.io/v1beta2",
        "kubescheduler.config.k8s.io/v1",
    )
    assert any(line.startswith("-    apiVersion: kubescheduler.config.k8s.io/v1beta2") for line in config.lines)


def fleet() -> tuple[list[Any], list[Any], list[Any]]:
    nodes = [node("n0", 2, 16), node("n1", 1, 16)]
    runs = served([running(pod("a", 6), "n0", (0,), 6), running(pod("b", 4), "n0", (0,), 4)])
    runs += served([running(pod("c", 6), "n1", (0,), 6)])
    return nodes, runs, served([pod("p", 12), pod("q", 3)])


def test_a_unit_switch_under_running_gpu_pods_is_blocked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, runs, _ = fleet()
    args = ["diff", "--set", "gpu-memory-unit=128MiB", "--nodes", write(tmp_path, "n.yaml", nodes)]
    assert main([*args, "--existing", write(tmp_path, "e.yaml", runs), "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    SCHEMA.validate(report)
    (error,) = [f for f in report["findings"] if f["severity"] == "error"]
    assert error["rule"] == "GC411" and "ml/a, ml/b, ml/c" in error["expected"]
    assert report["fleet"]["holding"] == ["ml/a", "ml/b", "ml/c"]
    (plugin,) = [o for o in report["objects"] if o["kind"] == "DaemonSet"]
    assert {"path": "spec.template.spec.containers[0].command[3]", "before": "--memory-unit=GiB",
            "after": "--memory-unit=128MiB"} in plugin["fields"]  # fmt: skip
    # with no pod running the same switch passes
    assert main([*args, "-o", "json"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("pods", [12, 16, 17, 21])
def test_a_relabel_to_cgpu_displaces_the_pods_over_the_cap_in_their_order(pods: int) -> None:
    """A GPU of a node relabelled cgpu keeps its first pods up to the cGPU cap; the rest are placed as the side
    after would, and `place` under the side after's semantics agrees on where."""
    nodes = [node("g0", 1, 24), node("g1", 1, 24)]
    runs = served([running(pod(f"s{i:02}", 1), "g0", (0,), 1) for i in range(pods)])
    before = Side(build_settings(None))
    after = Side(build_settings(None, isolation="share,cgpu"))
    answer = diff(
        before,
        after,
        labels=[("ack.node.gpu.schedule", "cgpu")],
        nodes=from_objects(nodes, "n"),
        existing=from_objects(runs, "e"),
    )
    assert answer.impact is not None
    lost = [x.key for x in answer.impact.displaced]
    assert lost == [f"ml/s{i:02}" for i in range(cgpu.MAX_PODS_PER_GPU, pods)]
    relabelled = [
        {**n, "metadata": {**n["metadata"], "labels": {**n["metadata"]["labels"], "ack.node.gpu.schedule": "cgpu"}}}
        for n in nodes
    ]
    kept = [r for r in runs if f"ml/{r['metadata']['name']}" not in lost]
    again = [pod(x.key.split("/")[1], 1) for x in answer.impact.displaced]
    by_place = place(relabelled, served(again), existing=kept, semantics=Semantics(scheduler_name=SCHEDULER))
    assert {a.key: a.node for a in by_place.placements} == {x.key: x.lands for x in answer.impact.displaced}
    ids = {f.rule.id for f in answer.findings}
    assert ids == {"GC416"} and not answer.blocked


def test_a_coarser_unit_rounds_requests_up_and_displaces_what_no_longer_fits(tmp_path: Path) -> None:
    """128MiB -> 1GiB: pods of 3 x 128MiB each take 1 GiB; a 16 GiB GPU keeps 16 of 20."""
    nodes = [node("m0", 1, 128)]
    runs = served([running(pod(f"s{i:02}", 3), "m0", (0,), 3) for i in range(20)])
    plugin = {"devicePlugin": {"image": {"repository": "x/k8s-gpushare-plugin-ack", "tag": "v1"}}}
    before = Side(build_settings({"gpuMemoryUnit": "128MiB", **plugin}))
    after = Side(build_settings({"gpuMemoryUnit": "1GiB", **plugin}))
    answer = diff(before, after, nodes=from_objects(nodes, "n"), existing=from_objects(runs, "e"))
    assert answer.impact is not None
    assert [x.key for x in answer.impact.displaced] == [f"ml/s{i}" for i in range(16, 20)]
    assert all(x.lands is None for x in answer.impact.displaced)
    assert answer.blocked and "GC411" in {f.rule.id for f in answer.findings}


def test_relabelling_existing_nodes_core_mem_is_refused_and_an_unserved_mode_named() -> None:
    nodes, runs, _ = fleet()
    answer = diff(
        Side(build_settings(None)),
        Side(build_settings(None)),
        labels=[("ack.node.gpu.schedule", "core_mem")],
        nodes=from_objects(nodes, "n"),
        existing=from_objects(runs, "e"),
    )
    ids = {f.rule.id for f in answer.findings}
    assert {"GC415", "GN313", "GC416"} <= ids and answer.blocked
    assert answer.objects == ()


def test_a_profile_switch_changes_which_pods_are_served() -> None:
    nodes, runs, pending = fleet()
    answer = diff(
        Side(build_settings(None, profile="open-source")),
        Side(build_settings(None)),
        nodes=from_objects(nodes, "n"),
        existing=from_objects(runs, "e"),
        pending=from_objects(pending, "p"),
    )
    assert answer.impact is not None
    outcomes = {o.key: (o.before, o.after) for o in answer.impact.pending}
    # the open-source stack serves gpushare-scheduler's pods only; ACK's managed scheduler serves these
    assert outcomes == {"ml/p": (None, "n0"), "ml/q": (None, "n0")}
    assert all("schedulerName" in o.why_before for o in answer.impact.pending)


def test_a_change_that_changes_nothing_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "s.yaml"
    config.write_text("apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\ngpuMemoryUnit: 1GiB\n")
    assert main(["diff", "--config", str(config), "--to", str(config)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "expected a change" in err
    assert main(["diff", "--set", "gpu-memory-unit=1GiB"]) == 2  # the default, set again
    assert main(["diff", "--placement", "spread", "--to-placement", "spread"]) == 2
    capsys.readouterr()
    assert main(["diff", "--to-placement", "spread"]) == 0


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--set", "gpu-mem=3"], "--set: 'gpu-mem=3'"),
        (["--set", "gpu-memory-unit"], "--set: 'gpu-memory-unit'"),
        (["--set", "scheduler-replicas=9"], "scheduler.replicas"),
        (["--label", "nokey"], "--label: 'nokey'"),
        (["--to", "/nonexistent.yaml"], "--to: '/nonexistent.yaml'"),
        (["--set", "profile=ack", "p.yaml"], "--nodes"),
        (["--kube-version", "1.99", "--set", "profile=open-source"], "--kube-version"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err, err


def test_the_unified_view_and_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--set", "kube-version=1.28", "--set", "profile=open-source", "--unified"]) == 0
    text = capsys.readouterr().out
    assert "+ kube-system, gpushare-scheduler, Deployment (apps) added" in text
    assert "- kube-system, gpushare-device-plugin-share, DaemonSet (apps) removed" in text
    assert text.rstrip().endswith("no rule blocks the change")


def test_the_readmes_example_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    text = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```\n(\$ gpushare diff [^\n]*\n.*?)```", text, re.S)
    command, printed = block.split("\n", 1)
    write(tmp_path, "nodes.yaml", [node("g0", 1, 24), node("g1", 1, 24)])
    write(tmp_path, "running.yaml", served([running(pod(f"s{i:02}", 1), "g0", (0,), 1) for i in range(18)]))
    write(tmp_path, "pending.yaml", served([pod("big", 12)]))
    monkeypatch.chdir(tmp_path)
    assert main(command.split()[2:]) == 0
    assert capsys.readouterr().out == printed


def test_diff_from_python_on_plain_objects() -> None:
    nodes, runs, pending = fleet()
    answer = diff(
        None, {"gpuMemoryUnit": "1GiB", "profile": "open-source"}, nodes=nodes, existing=runs, pending=pending
    )
    assert answer.before.settings.profile == "ack" and answer.after.settings.profile == "open-source"
    assert answer.impact is not None and [o.key for o in answer.impact.pending] == ["ml/p", "ml/q"]
