"""The generated chart, rendered by the real helm, equals the Python manifests and every object is valid
for the minor it targets (kubernetes-validate's strict schemas; scheduler configs by our own schemas)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml
from helpers import REPO, by_key, helm_template
from jsonschema import Draft202012Validator

from gpushare import render
from gpushare.domain.versions import MINORS, POLICY_SCHEDULER_NAME_UNTIL, parse_kube_version, served_apis
from gpushare.errors import InputError
from gpushare.generate.matrix import EXAMPLE_ACK_PLUGIN, combos
from gpushare.settings.model import load_settings

SCHEDULER_SCHEMAS = {
    p.name.split(".")[0]: Draft202012Validator(json.loads(p.read_text()))
    for p in (REPO / "schemas" / "kube-scheduler").glob("*.schema.json")
}

pytestmark = pytest.mark.helm


def _id(doc: dict[str, Any]) -> str:
    return "-".join(
        [
            doc.get("kubernetesVersion", "any"),
            doc["profile"],
            "+".join(doc["isolation"]),
            doc["gpuMemoryUnit"],
            doc["scheduler"]["mode"],
        ]
    )


_VALID: set[tuple[int, str]] = set()


#: Minors whose OpenAPI schemas kubernetes-validate bundles (1.20-1.28); the newer minors' objects are checked by
#: their real kube-apiserver's server-side dry-run in tests/e2e/test_server_dry_run.py.
SCHEMA_MINORS = frozenset(int(v.split(".")[1]) for v in kubernetes_validate.utils.all_versions())


def validate_objects(objects: list[dict[str, Any]], minor: int) -> None:
    """kubernetes-validate, strict, for the target minor where it has the schemas, and the scheduler configuration
    by its own schema; identical objects are checked once per session."""
    configs = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-scheduler-config")]
    secondary = any(o["kind"] == "Deployment" for o in objects)
    assert len(configs) == secondary, "a secondary scheduler has exactly one configuration"
    for obj in objects:
        seen = (minor, json.dumps(obj, sort_keys=True))
        if seen in _VALID:
            continue
        try:
            if minor in SCHEMA_MINORS:
                kubernetes_validate.validate(obj, f"1.{minor}", strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{obj['kind']}/{obj['metadata']['name']} invalid for 1.{minor}: {exc}") from None
        if obj in configs:
            for name, text in obj["data"].items():
                validate_scheduler_config(name, text)
        _VALID.add(seen)  # only once every check passed


def validate_scheduler_config(name: str, text: str) -> None:
    config = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    api = "policy" if config["kind"] == "Policy" else config["apiVersion"].rsplit("/", 1)[1]
    errors = sorted(SCHEDULER_SCHEMAS[api].iter_errors(config), key=str)
    assert not errors, f"{name} ({api}): {errors[0].message}"


def lint(helm: Path, chart: Path, kube_version: str) -> None:
    result = subprocess.run(
        [str(helm), "lint", "--strict", str(chart), "--kube-version", kube_version], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


VERSIONED = list(combos())


@pytest.mark.parametrize("doc", VERSIONED, ids=[_id(d) for d in VERSIONED])
def test_chart_equals_manifests(helm: Path, tmp_path: Path, doc: dict[str, Any]) -> None:
    chart = tmp_path / "chart"
    render(doc, format="chart", output=chart)
    manifests = render(doc, format="manifests").objects
    version = parse_kube_version(doc["kubernetesVersion"])
    lint(helm, chart, version.full)
    rendered = helm_template(helm, chart, version.full)
    assert by_key(rendered) == by_key(manifests)
    validate_objects(manifests, version.minor)


UNIVERSAL = list(combos((None,)))


@pytest.mark.parametrize("doc", UNIVERSAL, ids=[_id(d) for d in UNIVERSAL])
def test_universal_chart_adapts_to_every_minor(helm: Path, tmp_path: Path, doc: dict[str, Any]) -> None:
    chart = tmp_path / "chart"
    render(doc, format="chart", output=chart)
    lint(helm, chart, f"1.{MINORS[-1]}")
    for minor in MINORS:
        version = parse_kube_version(f"1.{minor}")
        expected = render({**doc, "kubernetesVersion": version.text}, format="manifests").objects
        assert by_key(helm_template(helm, chart, version.full)) == by_key(expected), f"1.{minor}"


@pytest.mark.parametrize("mode", ["secondary", "control-plane"])
@pytest.mark.parametrize(("minor", "api"), [(m, a) for m in MINORS for a in served_apis(m)])
def test_every_served_config_api(helm: Path, tmp_path: Path, minor: int, api: str, mode: str) -> None:
    doc = {"profile": "open-source", "kubernetesVersion": f"1.{minor}", "scheduler": {"mode": mode, "configApi": api}}
    if mode == "secondary" and api == "policy" and minor > POLICY_SCHEDULER_NAME_UNTIL:
        with pytest.raises(InputError, match="GS115"):
            render(doc, format="chart")
        return
    chart = tmp_path / "chart"
    rendered = render(doc, format="chart", output=chart)
    manifests = render(doc, format="manifests")
    version = parse_kube_version(f"1.{minor}")
    assert by_key(helm_template(helm, chart, version.full)) == by_key(manifests.objects)
    validate_objects(manifests.objects, minor)
    texts = {k: v for k, v in rendered.files.items() if k.startswith("control-plane/gpushare-scheduler-")}
    for name, text in texts.items():
        validate_scheduler_config(name, text)
    if mode == "control-plane":
        assert len(texts) == 1


def test_values_override_reaches_the_objects(helm: Path, tmp_path: Path) -> None:
    """A value set at install time lands where the chart promises (the chart is not a frozen copy)."""
    doc = {"profile": "open-source", "kubernetesVersion": "1.26"}
    render(doc, format="chart", output=tmp_path / "c")
    digest = "sha256:" + "a" * 64
    objects = helm_template(
        helm,
        tmp_path / "c",
        "v1.26.15",
        extra=(
            "--set",
            "extender.port=23456",
            "--set",
            f"devicePlugin.image.digest={digest}",
            "--set",
            "gpuMemoryUnit=MiB",
        ),
    )
    config = next(o for o in objects if o["kind"] == "ConfigMap")
    assert "http://127.0.0.1:23456/gpushare-scheduler" in config["data"]["scheduler-config.yaml"]
    plugin = next(o for o in objects if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    assert plugin["image"].endswith("@" + digest)
    assert "--memory-unit=MiB" in plugin["command"]
    expected = render(
        {
            **doc,
            "extender": {"port": 23456},
            "gpuMemoryUnit": "MiB",
            "devicePlugin": {
                "image": {**load_settings(doc).device_plugin.image.model_dump(by_alias=True), "digest": digest}
            },
        },
        format="manifests",
    ).objects
    assert by_key(objects) == by_key(expected)


def test_chart_conventions_reach_every_workload(helm: Path, tmp_path: Path) -> None:
    """imagePullSecrets, nameOverride/fullnameOverride and each component's priorityClassName, set at install,
    give what render gives for the same settings; every pod pulls with the secret, every object takes the name."""
    doc = {"profile": "ack", "kubernetesVersion": "1.28", "isolation": ["share", "cgpu"]}
    render(doc, format="chart", output=tmp_path / "c")
    sets = ("imagePullSecrets[0].name=regcred", "fullnameOverride=gpu", "devicePlugin.priorityClassName=gpu-node")
    objects = helm_template(helm, tmp_path / "c", "v1.28.15", extra=tuple(a for s in sets for a in ("--set", s)))
    pods = [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "DaemonSet"]
    assert len(pods) == 3 and all(p["imagePullSecrets"] == [{"name": "regcred"}] for p in pods)
    assert {p["priorityClassName"] for p in pods} == {"gpu-node", "system-node-critical"}
    assert all(o["metadata"]["name"].startswith("gpu-") for o in objects)
    expected = {
        **doc,
        "imagePullSecrets": [{"name": "regcred"}],
        "fullnameOverride": "gpu",
        "devicePlugin": {"priorityClassName": "gpu-node"},
    }
    assert by_key(objects) == by_key(render(expected, format="manifests").objects)
    validate_objects(objects, 28)
    named = helm_template(helm, tmp_path / "c", "v1.28.15", release="prod", extra=("--set", "nameOverride=gpus"))
    assert {o["metadata"]["name"].split("-")[0:2] == ["prod", "gpus"] for o in named} == {True}
    assert by_key(named) == by_key(
        render({**doc, "releaseName": "prod", "nameOverride": "gpus"}, format="manifests").objects
    )


def test_values_schema_refuses_a_unit_of_the_other_profile(helm: Path, tmp_path: Path) -> None:
    render({"profile": "open-source", "kubernetesVersion": "1.26"}, format="chart", output=tmp_path / "c")
    result = subprocess.run(
        [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.26", "--set", "gpuMemoryUnit=128MiB"],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "gpuMemoryUnit" in result.stderr


def test_chart_refuses_a_cluster_outside_its_minor(helm: Path, tmp_path: Path) -> None:
    render({"kubernetesVersion": "1.24", "profile": "open-source"}, format="chart", output=tmp_path / "c")
    result = subprocess.run(
        [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.25.0"], capture_output=True, text=True
    )
    assert result.returncode != 0 and "kubeVersion" in result.stderr


def test_a_128mib_chart_asks_for_acks_plugin_image_at_install(helm: Path, tmp_path: Path) -> None:
    """The headline, `render --gpu-memory-unit 128MiB`: gpushare picks no plugin image (ACK's is not public); the
    chart refuses to install without one, saying how to read it from the cluster, and installs with it."""
    render({"gpuMemoryUnit": "128MiB", "kubernetesVersion": "1.26"}, format="chart", output=tmp_path / "c")
    command = [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.26"]
    refused = subprocess.run(command, capture_output=True, text=True)
    assert refused.returncode != 0
    assert "devicePlugin.image.repository is empty" in refused.stderr and "kubectl -n kube-system" in refused.stderr
    given = ["--set", f"devicePlugin.image.repository={EXAMPLE_ACK_PLUGIN},devicePlugin.image.tag=v1"]
    accepted = subprocess.run([*command, *given], capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stderr
    assert f'image: "{EXAMPLE_ACK_PLUGIN}:v1"' in accepted.stdout and "--memory-unit=128MiB" in accepted.stdout


def test_a_compute_chart_refuses_the_open_source_plugin_at_install(helm: Path, tmp_path: Path) -> None:
    """GS122 at install time: compute allocation needs ACK's plugin (the only one reporting gpu-core.percentage)."""
    settings = {
        "isolation": ["core_mem"],
        "computeAllocation": True,
        "region": "cn-beijing",
        "kubernetesVersion": "1.28",
    }
    render(settings, format="chart", output=tmp_path / "c")
    command = [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.28", "--set"]
    open_source = "devicePlugin.image.repository=registry.example.com/acs/k8s-gpushare-plugin,devicePlugin.image.tag=v2"
    refused = subprocess.run([*command, open_source], capture_output=True, text=True)
    assert refused.returncode != 0 and "[GS122]" in refused.stderr
    ack = f"devicePlugin.image.repository={EXAMPLE_ACK_PLUGIN},devicePlugin.image.tag=v1"
    accepted = subprocess.run([*command, ack], capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stderr
    # ACK's own plugin may share the open-source image name: another tag than the open-source v2 releases passes
    same_name = "devicePlugin.image.repository=registry-cn-beijing.ack.aliyuncs.com/acs/k8s-gpushare-plugin"
    accepted = subprocess.run([*command, f"{same_name},devicePlugin.image.tag=v4.1.0"], capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stderr


def test_a_core_mem_chart_refuses_128mib_at_install(helm: Path, tmp_path: Path) -> None:
    """GS118 at install time: 128MiB units are not supported on core_mem nodes, which the chart serves."""
    settings = {"isolation": ["share", "core_mem"], "computeAllocation": True, "region": "cn-beijing"}
    render({**settings, "kubernetesVersion": "1.28"}, format="chart", output=tmp_path / "c")
    image = f"devicePlugin.image.repository={EXAMPLE_ACK_PLUGIN},devicePlugin.image.tag=v1"
    command = [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.28", "--set", image]
    refused = subprocess.run([*command, "--set", "gpuMemoryUnit=128MiB"], capture_output=True, text=True)
    assert refused.returncode != 0 and "[GS118]" in refused.stderr
    assert subprocess.run(command, capture_output=True, text=True).returncode == 0


def test_chart_refuses_128mib_with_the_open_source_plugin(helm: Path, tmp_path: Path) -> None:
    """GS119 at install time: a chart user who sets 128MiB must also name ACK's plugin image."""
    render({"kubernetesVersion": "1.26"}, format="chart", output=tmp_path / "c")
    command = [str(helm), "template", "x", str(tmp_path / "c"), "--kube-version", "1.26", "--set"]
    refused = subprocess.run([*command, "gpuMemoryUnit=128MiB"], capture_output=True, text=True)
    assert refused.returncode != 0 and "[GS119]" in refused.stderr
    accepted = subprocess.run(
        [*command, f"gpuMemoryUnit=128MiB,devicePlugin.image.repository={EXAMPLE_ACK_PLUGIN}"],
        capture_output=True,
        text=True,
    )
    assert accepted.returncode == 0, accepted.stderr
    assert "--memory-unit=128MiB" in accepted.stdout
