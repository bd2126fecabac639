"""The rendered installer against a real kube-apiserver and kube-scheduler of each minor."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from cluster import ControlPlane, tail
from kube import api
from toolchain import HELM, need_tool

from gpushare import render
from gpushare.domain.versions import CONFIG_APIS, CONFIG_GROUP, POLICY, POLICY_SCHEDULER_NAME_UNTIL, served_apis
from gpushare.errors import InputError
from gpushare.generate import schedconfig
from gpushare.generate.matrix import EXAMPLE_ACK_PLUGIN
from gpushare.generate.template import text_of
from gpushare.generate.values import CHART_VERSION, ChartValues
from gpushare.settings.model import load_settings

pytestmark = pytest.mark.e2e


def helm(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(need_tool(HELM)), *args, "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "doc",
    [
        {"profile": "open-source"},
        {
            "profile": "ack",
            "gpuMemoryUnit": "128MiB",
            "devicePlugin": {"image": {"repository": EXAMPLE_ACK_PLUGIN, "tag": "v1"}},
            "scheduler": {"mode": "secondary"},
        },
        {
            "profile": "ack",
            "isolation": ["share", "cgpu", "core_mem"],
            "computeAllocation": True,
            "region": "cn-beijing",
            "devicePlugin": {"image": {"repository": EXAMPLE_ACK_PLUGIN, "tag": "v1"}},
        },
    ],
    ids=["open-source", "ack-secondary-128mib", "ack-managed-compute"],
)
def test_helm_install_every_object_accepted(cluster: ControlPlane, tmp_path: Path, doc: dict) -> None:
    for version in (f"1.{cluster.minor}", None):  # the chart for this minor, then the universal chart
        settings = {**doc, **({"kubernetesVersion": version} if version else {})}
        chart = tmp_path / f"chart-{version}"
        rendered = render(settings, format="chart", output=chart)
        result = helm(
            "install", "gpushare", str(chart), "-n", "kube-system", "--wait=false", kubeconfig=cluster.kubeconfig
        )
        assert result.returncode == 0, result.stderr
        manifest = helm("get", "manifest", "gpushare", "-n", "kube-system", kubeconfig=cluster.kubeconfig)
        installed = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifest.stdout) if d}
        expected = {
            (o["kind"], o["metadata"]["name"])
            for o in render(
                {**settings, "kubernetesVersion": version or f"1.{cluster.minor}"}, format="manifests"
            ).objects
        }
        assert installed == expected
        core = api(cluster.kubeconfig)
        config_maps = [name for kind, name in installed if kind == "ConfigMap"]
        assert len(config_maps) == (rendered.settings.scheduler.mode == "secondary")
        for name in config_maps:  # the universal chart chose the API this minor serves by default
            (text,) = core.read_namespaced_config_map(name, "kube-system").data.values()
            assert f"apiVersion: kubescheduler.config.k8s.io/{served_apis(cluster.minor)[-1]}\n" in text
        releases = json.loads(helm("list", "-n", "kube-system", "-o", "json", kubeconfig=cluster.kubeconfig).stdout)
        assert [(r["name"], r["status"], r["chart"]) for r in releases] == [
            ("gpushare", "deployed", f"ack-ai-installer-{CHART_VERSION}")
        ]
        result = helm("uninstall", "gpushare", "-n", "kube-system", "--wait", kubeconfig=cluster.kubeconfig)
        assert result.returncode == 0, result.stderr


def scheduler_args(cluster: ControlPlane, tmp_path: Path, api_name: str) -> list[str]:
    """What the rendered scheduler runs (secondary mode; on 1.22 a Policy scheduler can only be the control
    plane's), with a kubeconfig instead of the in-cluster config."""
    secondary = not (api_name == POLICY and cluster.minor > POLICY_SCHEDULER_NAME_UNTIL)
    settings = load_settings({"profile": "open-source", "scheduler": {"mode": "secondary"}})
    values = ChartValues(settings)
    config = schedconfig.configuration(values, api_name, control_plane=not secondary, minor=cluster.minor)
    text, _ = text_of(config, schedconfig.serialise(api_name))
    if api_name == POLICY:
        path = tmp_path / "policy.json"
        path.write_text(text)
        name = ["--scheduler-name=gpushare-scheduler"] if secondary else []
        return [f"--policy-config-file={path}", *name, "--leader-elect=false", f"--kubeconfig={cluster.kubeconfig}"]
    path = tmp_path / f"config-{api_name}.yaml"
    path.write_text(yaml.safe_dump(cluster.outside_a_pod(yaml.safe_load(text))))
    return [f"--config={path}"]


def test_two_releases_install_side_by_side_and_upgrade(cluster: ControlPlane, tmp_path: Path) -> None:
    """Names derive from the release: a second release in another namespace installs beside the first (no
    cluster-scoped name clash), an upgrade of the first keeps working (and refuses to change the memory unit the
    release was installed with: the unit is chosen at install), and NOTES read the values set."""
    chart = tmp_path / "chart"
    render({"profile": "open-source", "kubernetesVersion": f"1.{cluster.minor}"}, format="chart", output=chart)
    core = api(cluster.kubeconfig)
    installed = {}
    for release, namespace in (("gpushare", "team-a"), ("second", "team-b")):
        result = helm(
            "install",
            release,
            str(chart),
            "-n",
            namespace,
            "--create-namespace",
            "--wait=false",
            "--set",
            "gpuMemoryUnit=MiB",
            "--set",
            f"scheduler.name={release}-scheduler",
            kubeconfig=cluster.kubeconfig,
        )
        assert result.returncode == 0, result.stderr
        assert "unit: MiB" in result.stdout and "aliyun.com/gpu-mem: 2048   # 2 GiB" in result.stdout
        assert f"spec.schedulerName: {release}-scheduler" in result.stdout
        manifest = helm("get", "manifest", release, "-n", namespace, kubeconfig=cluster.kubeconfig).stdout
        installed[release] = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifest) if d}
    assert ("ClusterRole", "gpushare-device-plugin") in installed["gpushare"]
    assert ("ClusterRole", "second-gpushare-device-plugin") in installed["second"]
    assert not installed["gpushare"] & installed["second"]
    upgrade = ["upgrade", "gpushare", str(chart), "-n", "team-a", "--wait=false", "--set", "extender.port=23456"]
    # without the unit the release was installed with, the upgrade would change it under running pods (GC411)
    refused = helm(*upgrade, kubeconfig=cluster.kubeconfig)
    assert refused.returncode != 0 and "gpuMemoryUnit GiB is not the installed MiB" in refused.stderr
    assert "[GC411]" in refused.stderr
    result = helm(*upgrade, "--reuse-values", kubeconfig=cluster.kubeconfig)
    assert result.returncode == 0, result.stderr
    config = core.read_namespaced_config_map("gpushare-scheduler-config", "team-a").data
    assert "127.0.0.1:23456" in next(iter(config.values()))
    for release, namespace in (("gpushare", "team-a"), ("second", "team-b")):
        result = helm("uninstall", release, "-n", namespace, "--wait", kubeconfig=cluster.kubeconfig)
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("api_name", CONFIG_APIS)
def test_scheduler_accepts_exactly_the_apis_the_generator_allows(
    cluster: ControlPlane, tmp_path: Path, api_name: str
) -> None:
    served = api_name in served_apis(cluster.minor)

    def render_with(api: str) -> object:
        doc = {"profile": "open-source", "kubernetesVersion": f"1.{cluster.minor}", "scheduler": {"configApi": api}}
        return render(doc, format="manifests")

    process, port = cluster.start_scheduler(scheduler_args(cluster, tmp_path, api_name), name=f"sched-{api_name}")
    try:
        if served:
            cluster.wait_http(process, f"https://127.0.0.1:{port}/healthz", cert=False, timeout=60)
            if api_name == POLICY and cluster.minor > POLICY_SCHEDULER_NAME_UNTIL:
                # the generator refuses a secondary Policy scheduler here, as the real one has no --scheduler-name
                with pytest.raises(InputError, match="GS115"):
                    render_with(api_name)
                unknown, _ = cluster.start_scheduler(
                    [*scheduler_args(cluster, tmp_path, api_name), "--scheduler-name=gpushare-scheduler"],
                    name="sched-name",
                )
                assert unknown.popen.wait(60) != 0
                assert "unknown flag: --scheduler-name" in unknown.log.read_text()
        else:
            try:
                process.popen.wait(60)
            except subprocess.TimeoutExpired:
                pytest.fail(f"1.{cluster.minor} kube-scheduler kept running with {api_name}:\n{tail(process.log)}")
            assert process.popen.returncode != 0
            log = process.log.read_text(errors="replace").replace('\\"', '"')  # structured logs escape quotes
            refused = (
                "unknown flag: --policy-config-file"
                if api_name == POLICY
                else f'no kind "KubeSchedulerConfiguration" is registered for version "{CONFIG_GROUP}/{api_name}"'
            )
            assert refused in log, log[-2000:]
            with pytest.raises(InputError, match="is not allowed"):
                render_with(api_name)
    finally:
        process.stop()
