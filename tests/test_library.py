"""The library as a pipeline author meets it: names listed, Lists taken, errors naming the arguments."""

from __future__ import annotations

from typing import Any

import pytest

import gpushare
from gpushare import ClusterFacts, InputError, place, validate
from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics


def gpu_pod(name: str, mem: Any = 2) -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": mem}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"ack.node.gpu.schedule": "share"}},
    "status": {
        "allocatable": {"aliyun.com/gpu-mem": 16, "aliyun.com/gpu-count": 1, "cpu": 8, "memory": "32Gi", "pods": 110}
    },
}


def as_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_dir_lists_the_public_api() -> None:
    assert {"place", "validate", "render", "ClusterFacts", "load_settings", "InputError"} <= set(dir(gpushare))


def test_a_kubectl_list_is_read_by_validate_and_place_alone_or_among_objects() -> None:
    """`kubectl get -o yaml` writes a List: validate checks its items, place places them, whether it is passed
    alone or in a list; the items are named by their place in it."""
    bad = as_list(gpu_pod("ok"), gpu_pod("half", "1.5"))
    for given in (bad, [bad]):
        (finding,) = validate(given).findings
        assert finding.rule.id == "GW201" and finding.where == "objects[0].items[1]"
    result = place(as_list(NODE), [as_list(gpu_pod("a"), gpu_pod("b"))])
    assert sorted(a.key for a in result.placements) == ["default/a", "default/b"]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: validate("pods.yaml"), "objects"),
        (lambda: place("nodes.yaml", []), "nodes"),
        (lambda: place([NODE], [gpu_pod("a"), 3]), "pods[1]"),
        (lambda: place([NODE], [], existing=[["x"]]), "existing[0]"),
    ],
)
def test_what_is_not_objects_is_refused_naming_the_argument(call: Any, named: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.field == named


def test_findings_on_facts_name_the_arguments_in_the_library_and_the_flags_in_the_cli() -> None:
    in_library = validate([], ClusterFacts(kube_version="latest")).findings
    on_cli = validate([], ClusterFacts(kube_version="latest", flags=True)).findings
    assert [f.field for f in in_library] == ["kube_version"] and [f.field for f in on_cli] == ["--kube-version"]


def test_scoring_profile_takes_the_minor_as_users_write_it() -> None:
    assert scoring_profile("1.24") == scoring_profile(24) == scoring_profile("v1.24.3")
    Semantics("upstream", scheduler=scoring_profile("1.24", "v1beta3"))
    for bad, field in (("1.2x", "minor"), ("1.19", "minor"), (19, "minor")):
        with pytest.raises(InputError) as caught:
            scoring_profile(bad)
        assert caught.value.field == field
    with pytest.raises(InputError) as caught:
        scoring_profile("1.28", "v1beta1")
    assert caught.value.field == "api" and "v1beta3, v1" in str(caught.value)


def test_the_readmes_python_example_runs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """The README's library example, run as written over a pods file and a List of nodes."""
    import re

    import yaml
    from helpers import REPO

    text = (REPO / "README.md").read_text()
    (code,) = re.findall(r"## Python\n\n```python\n(.*?)```", text, re.S)
    served = gpu_pod("a")
    served["spec"]["schedulerName"] = "gpushare-scheduler"  # the upstream semantics' secondary scheduler
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([served, gpu_pod("b", "1.5"), gpu_pod("c")]))
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(as_list(NODE)))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert (
        "GW201" in out
        and "objects[0] GW214 spec.schedulerName: 'gpushare-scheduler'" in out  # the command's default: ack's
        and "default/a n1" in out
        and "[] ['default/c']" in out
        and (tmp_path / "out" / "manifests.yaml").is_file()
    )
