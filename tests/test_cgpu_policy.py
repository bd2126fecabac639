"""The cGPU policy reaches the installer only when the settings name one: ACK's documents name no default, so an
unset policy leaves cGPU's own. Checked in the manifests and through the real helm, where `0` must survive a Go
template (whose `if` takes 0 for unset)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import helm_template

from gpushare import render

pytestmark = pytest.mark.helm


def _installer_env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (installer,) = [o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("cgpu-installer")]
    (container,) = installer["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize(("policy", "expected"), [(None, None), (0, "0"), (3, "3"), (5, "5")])
def test_manifests_pass_the_policy_only_when_set(policy: int | None, expected: str | None) -> None:
    options: dict[str, Any] = {"isolation": ["cgpu"]}
    if policy is not None:
        options["cgpu_policy"] = policy
    env = _installer_env(render(format="manifests", **options).objects)
    assert env.get("CGPU_POLICY") == expected
    assert "NODE_NAME" in env


def test_chart_default_passes_none_and_install_time_values_reach_the_installer(helm: Path, tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    render(format="chart", isolation=["cgpu"], kube_version="1.28").write(chart)
    assert "CGPU_POLICY" not in _installer_env(helm_template(helm, chart, "1.28.0"))
    for value in ("0", "3"):
        env = _installer_env(helm_template(helm, chart, "1.28.0", extra=("--set", f"cgpu.policy={value}")))
        assert env["CGPU_POLICY"] == value
    unset = helm_template(helm, chart, "1.28.0", extra=("--set", "cgpu.policy=3", "--set", "cgpu.policy=null"))
    assert "CGPU_POLICY" not in _installer_env(unset)
    refused = subprocess.run(
        [str(helm), "template", "x", str(chart), "--set", "cgpu.policy=7"], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "/cgpu/policy" in refused.stderr


def test_chart_with_a_policy_renders_what_the_manifests_hold(helm: Path, tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    render(format="chart", isolation=["cgpu"], kube_version="1.28", cgpu_policy=0).write(chart)
    manifests = render(format="manifests", isolation=["cgpu"], kube_version="1.28", cgpu_policy=0).objects
    assert _installer_env(helm_template(helm, chart, "1.28.0")) == _installer_env(manifests) != {}
