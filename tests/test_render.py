"""Library-level behaviour of render: what is rendered for which settings, and what is recorded."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare import render
from gpushare.errors import InputError

COMPUTE = {"isolation": ["share", "core_mem"], "computeAllocation": True, "region": "cn-hangzhou"}


def kinds(rendered: object) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in rendered.objects)  # type: ignore[attr-defined]


def test_managed_mode_renders_no_scheduler_objects_and_records_the_required_scheduler() -> None:
    rendered = render({**COMPUTE, "kubernetesVersion": "1.24"}, format="chart")
    assert kinds(rendered) == [  # device plugin and cGPU installer only: no scheduler, no extender RBAC
        ("ClusterRole", "gpushare-device-plugin"),
        ("ClusterRoleBinding", "gpushare-device-plugin"),
        ("DaemonSet", "gpushare-cgpu-installer"),
        ("DaemonSet", "gpushare-device-plugin-core-mem"),
        ("DaemonSet", "gpushare-device-plugin-share"),
        ("NetworkPolicy", "gpushare-cgpu-installer"),
        ("NetworkPolicy", "gpushare-device-plugin"),
        ("ServiceAccount", "gpushare-device-plugin"),
    ]
    chart = yaml.safe_load(rendered.files["Chart.yaml"])
    # ACK's documented minimum for compute allocation on 1.24 (seed 002), not read back from the table
    assert chart["annotations"]["gpushare.io/requires-ack-scheduler"] == "at least 1.24.3-ack-2.0"
    assert "1.24.3-ack-2.0" in rendered.files["templates/NOTES.txt"]
    values = yaml.safe_load(rendered.files["values.yaml"])
    assert "scheduler" not in values and "extender" not in values and "cgpu" in values


def test_device_plugin_per_mode_and_cgpu_only_on_isolated_nodes() -> None:
    rendered = render({"isolation": ["share", "cgpu"], "kubernetesVersion": "1.28"}, format="manifests")
    daemonsets = {o["metadata"]["name"]: o for o in rendered.objects if o["kind"] == "DaemonSet"}
    assert set(daemonsets) == {"gpushare-device-plugin-share", "gpushare-device-plugin-cgpu", "gpushare-cgpu-installer"}
    share = daemonsets["gpushare-device-plugin-share"]["spec"]["template"]["spec"]
    assert share["nodeSelector"] == {"ack.node.gpu.schedule": "share"}
    assert share["priorityClassName"] == "system-node-critical"
    terms = daemonsets["gpushare-cgpu-installer"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    expression = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expression["values"] == ["cgpu"]
    privileged = [
        c["name"]
        for d in daemonsets.values()
        for c in d["spec"]["template"]["spec"]["containers"]
        if c.get("securityContext", {}).get("privileged")
    ]
    assert privileged == ["cgpu-installer"]
    assert not any(
        o["kind"] == "DaemonSet" and "cgpu-installer" in o["metadata"]["name"]
        for o in render({"isolation": ["share"]}, format="manifests").objects
    )


def test_user_node_selector_cannot_override_the_mode_label() -> None:
    rendered = render(
        {"devicePlugin": {"nodeSelector": {"pool": "gpu", "ack.node.gpu.schedule": "default"}}}, format="manifests"
    )
    ds = next(o for o in rendered.objects if o["kind"] == "DaemonSet")
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu", "ack.node.gpu.schedule": "share"}


def test_secondary_scheduler_is_reached_on_loopback_only() -> None:
    rendered = render({"profile": "open-source", "kubernetesVersion": "v1.27.4"}, format="manifests")
    assert not any(o["kind"] == "Service" for o in rendered.objects)
    deployment = next(o for o in rendered.objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["kube-scheduler", "extender"]
    assert pod["containers"][0]["image"] == "registry.k8s.io/kube-scheduler:v1.27.4"
    assert not pod.get("hostNetwork")
    policy = next(
        o for o in rendered.objects if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "gpushare-scheduler"
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"] and "ingress" not in policy["spec"]
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    config = yaml.safe_load(
        next(o for o in rendered.objects if o["kind"] == "ConfigMap")["data"]["scheduler-config.yaml"]
    )
    assert config["profiles"] == [{"schedulerName": "gpushare-scheduler"}]
    assert config["extenders"][0]["urlPrefix"].startswith("http://127.0.0.1:")


def test_checksum_follows_the_config() -> None:
    """The Deployment rolls when, and only when, the configuration file changes."""

    def rendered(**settings: object) -> tuple[str, str]:
        objects = render(
            {"profile": "open-source", "kubernetesVersion": "1.25", **settings}, format="manifests"
        ).objects
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        text = next(o for o in objects if o["kind"] == "ConfigMap")["data"]["scheduler-config.yaml"]
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"], text

    checksum, text = rendered()
    assert checksum == hashlib.sha256(text.encode()).hexdigest()
    assert rendered(extender={"port": 12346})[0] != checksum
    assert rendered(scheduler={"replicas": 2})[0] == checksum  # not in the file: no roll


def test_cgpu_updates_cold_and_the_scheduler_pod_stops_fast() -> None:
    """cGPU must not be swapped under running containers (seed 004: cold upgrade), so its installer DaemonSet
    updates OnDelete; the upstream extender ignores the first SIGTERM, so the scheduler pod's grace period is short."""
    cgpu = render({"isolation": ["share", "cgpu"]}, format="manifests").objects
    (installer,) = [o for o in cgpu if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("cgpu-installer")]
    assert installer["spec"]["updateStrategy"] == {"type": "OnDelete"}
    notes = render({"isolation": ["share", "cgpu"]}).notes
    assert "stop all running\ncontainers" in notes and "not only those using cGPU" in notes  # seed 004's cold upgrade
    secondary = render(profile="open-source", kube_version="1.24", format="manifests").objects
    (deployment,) = [o for o in secondary if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5


def test_the_plugin_is_told_the_unit_in_its_own_words() -> None:
    """The open-source plugin knows GiB and MiB only: ACK's 1GiB is GiB to it; ACK's own plugin takes 1GiB."""

    def unit_arg(**options: str) -> list[str]:
        objects = render(format="manifests", **options).objects
        plugins = [o for o in objects if o["kind"] == "DaemonSet" and "device-plugin" in o["metadata"]["name"]]
        return [a for p in plugins for a in p["spec"]["template"]["spec"]["containers"][0]["command"] if "unit" in a]

    assert unit_arg() == ["--memory-unit=GiB"]
    ack_image = "registry.example.com/acs/ack-gpushare-device-plugin"
    assert unit_arg(device_plugin_image_repository=ack_image, device_plugin_image_tag="v1") == ["--memory-unit=1GiB"]


def test_a_chart_says_how_to_install_it_and_what_a_pinned_minor_needs() -> None:
    """The next steps of a chart start with its install command (with the namespace, created when it is not
    kube-system); a chart pinned to one minor says `helm template` needs --kube-version; the chart's README holds
    the same, and how it is regenerated."""
    pinned = render(kube_version="1.28", output=None)
    assert "helm install gpushare <chart directory> -n kube-system\n" in pinned.notes
    assert "need --kube-version v1.28.15" in pinned.notes
    readme = pinned.files["README.md"]
    assert "helm install gpushare . -n kube-system" in readme and "need --kube-version v1.28.15" in readme
    assert "gpushare render --config gpushare-settings.yaml" in readme and "Kubernetes 1.28" in readme
    universal = render(namespace="gpu-system", output=None)
    assert "helm install gpushare <chart directory> -n gpu-system --create-namespace" in universal.notes
    assert "--kube-version" not in universal.notes
    manifests = render(kube_version="1.28", format="manifests", output=None)
    assert "helm install" not in manifests.notes and "README.md" not in manifests.files


def test_the_notes_and_chart_say_which_cluster_and_hold_only_what_is_rendered() -> None:
    """The default renders for ACK Pro's managed scheduler: the notes say so and how to render for other clusters;
    Chart.yaml's description names the device plugin alone, the open-source stack's names its extender too."""
    ack = render()
    lines = ack.notes.splitlines()
    assert lines[0] == "gpushare ack stack: device plugin."
    said = " ".join(lines[1:6])
    assert "For an ACK Pro cluster" in said and "--profile open-source" in said and "ack-ai-installer" in said
    description = yaml.safe_load(ack.files["Chart.yaml"])["description"]
    assert description.startswith("GPU sharing on Kubernetes: device plugin (") and "extender" not in description
    upstream = yaml.safe_load(render(profile="open-source").files["Chart.yaml"])["description"]
    assert "device plugin, scheduler extender (secondary)" in upstream


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            {"extender_port": 9999},
            "--extender-port: 9999 is not allowed; expected no extender flag with scheduler mode managed",
        ),
        ({"scheduler_replicas": 2}, "--scheduler-replicas: 2 is not allowed; expected no scheduler flag"),
        ({"cgpu_policy": 2}, "--cgpu-policy: 2 is not allowed; expected no cGPU flag without a cGPU node mode"),
    ],
)
def test_a_flag_that_renders_nothing_is_refused(options: dict[str, Any], said: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=re.escape(said)):
        render(output=tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()
    render(scheduler_mode="secondary", extender_port=9999)  # where the extender is rendered, it is taken
    render(isolation="share,cgpu", cgpu_policy=2)
