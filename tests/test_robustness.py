"""Malformed YAML, odd quantities, wrong types and unknown kinds: never a traceback, always a finding or exit 2.

Hypothesis calls `main` in-process for speed, where an escaped exception fails the test by propagating; the
process tests at the end run the `gpushare` command itself, whose stderr is where a Traceback would show."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO, assert_answered, assert_no_crash, run_gpushare
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpushare.cli import main

QUANTITIES = st.one_of(
    st.sampled_from(["1.5", "1e3", "128Mi", "-1", "1e400", "NaN", "", "0x10", "1Gi", "5", "100", "7", "3m", "Inf"]),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
ANY = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
KINDS = st.sampled_from(["Pod", "Deployment", "CronJob", "DaemonSet", "Node", "InstallerSettings", "Widget", None, 7])


@st.composite
def objects(draw: st.DrawFn) -> Any:
    kind = draw(KINDS)
    limits = {
        draw(st.sampled_from(["aliyun.com/gpu-mem", "aliyun.com/gpu-core.percentage", "cpu", "memory"])): draw(
            QUANTITIES
        )
        for _ in range(draw(st.integers(0, 3)))
    }
    container = draw(st.one_of(st.just({"name": "c", "resources": {"limits": limits, "requests": limits}}), ANY))
    spec = draw(st.one_of(st.just({"containers": [container], "nodeSelector": draw(ANY)}), ANY))
    obj: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["v1", "apps/v1", "gpushare.io/v1alpha1"])),
        "kind": kind,
        "metadata": draw(st.one_of(st.just({"name": "x", "labels": {"aliyun.com/gpu-count": draw(QUANTITIES)}}), ANY)),
    }
    if kind in ("Deployment", "DaemonSet"):
        obj["spec"] = {"replicas": draw(QUANTITIES), "template": {"spec": spec}}
    elif kind == "Node":
        obj["status"] = {"capacity": {"aliyun.com/gpu-mem": draw(QUANTITIES), "aliyun.com/gpu-count": draw(QUANTITIES)}}
    elif kind == "InstallerSettings":
        obj.update(
            draw(
                st.dictionaries(
                    st.sampled_from(
                        ["profile", "gpuMemoryUnit", "isolation", "scheduler", "kubernetesVersion", "extender", "nope"]
                    ),
                    ANY,
                    max_size=3,
                )
            )
        )
    else:
        obj["spec"] = spec
    return draw(st.one_of(st.just(obj), ANY))


def run_cli(args: list[str], stdin: str, monkeypatch: Any, capsys: Any) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(docs=st.lists(objects(), min_size=1, max_size=4))
def test_validate_never_crashes_on_odd_objects(docs: list[Any], monkeypatch: Any, capsys: Any) -> None:
    text = yaml.safe_dump_all(docs)
    code, out, err = run_cli(["validate", "-", "-o", "json"], text, monkeypatch, capsys)
    assert_answered(code, out, err)
    if code != 2:
        report = json.loads(out)
        assert code == (1 if report["summary"]["errors"] else 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("kind: Pod\n-[]{}'\"&*!|>%@`#,?ab01 \t")), max_size=80))
def test_malformed_yaml_is_exit_2_or_handled(text: str, monkeypatch: Any, capsys: Any) -> None:
    for command in (["validate", "-"], ["place", "--nodes", "-"]):
        code, out, err = run_cli(command, text, monkeypatch, capsys)
        assert_answered(code, out, err)


@pytest.fixture(scope="module")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One GPU node written once, under pytest's own temporary tree, so 200 examples leave nothing behind."""
    path = tmp_path_factory.mktemp("nodes") / "node.yaml"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"aliyun.com/gpu-mem": 8, "aliyun.com/gpu-count": 1}},
    }
    path.write_text(yaml.safe_dump(node))
    return path


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(docs=st.lists(objects(), min_size=1, max_size=4))
def test_place_never_crashes_on_odd_objects(docs: list[Any], one_node: Path, monkeypatch: Any, capsys: Any) -> None:
    text = yaml.safe_dump_all(docs)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["place", "--nodes", str(one_node), "-", "-o", "json"])
    out = capsys.readouterr()
    assert_answered(code, out.out, out.err)
    if code != 2:
        json.loads(out.out)


#: Inputs that once reached, or could reach, an unguarded path: broken YAML, a non-mapping document, a wrong type
#: where a mapping or quantity belongs, an unknown kind, a settings document of the wrong shape.
ODD_INPUTS = (
    "kind: Pod\nmetadata: {name: [x\n",
    "- 1\n- 2\n",
    "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {aliyun.com/gpu-mem: [1]}}}]}\n",
    "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1e400, template: 7}\n",
    "kind: Node\nmetadata: {name: n}\nstatus: {capacity: {aliyun.com/gpu-mem: NaN, aliyun.com/gpu-count: -1}}\n",
    "apiVersion: gpushare.io/v1alpha1\nkind: InstallerSettings\nscheduler: [managed]\n",
    "kind: 7\n",
    "\t:\n",
)


@pytest.mark.parametrize("text", ODD_INPUTS)
def test_the_command_answers_odd_inputs_without_a_traceback(text: str, one_node: Path) -> None:
    for command in (["validate", "-", "-o", "json"], ["place", "--nodes", str(one_node), "-", "-o", "json"]):
        assert_no_crash(run_gpushare(*command, stdin=text))


def test_a_crash_is_seen_in_a_process() -> None:
    """The process check itself can fail: an exception escaping the command shows as a Traceback there."""
    boom = subprocess.run(
        [sys.executable, "-c", "import gpushare.cli as c; c._main = lambda argv: 1 / 0; c.entry()"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert boom.returncode == 1 and "ZeroDivisionError" in boom.stderr
    with pytest.raises(AssertionError, match="Traceback"):
        assert_no_crash(boom)
