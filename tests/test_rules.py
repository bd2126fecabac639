"""Every rule fires on the case it exists for and stays quiet on a clean one; the CLI's contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from jsonschema import Draft202012Validator

from gpushare import render
from gpushare.cli import main
from gpushare.domain import products
from gpushare.errors import InputError, not_allowed
from gpushare.kube.fields import Problem
from gpushare.kube.installed import UnitReading
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.rules import BY_ID, RULES
from gpushare.policy.validate import validate

REPORT = Draft202012Validator(json.loads((REPO / "schemas" / "validation-report.schema.json").read_text()))
SETTINGS = {"apiVersion": "gpushare.io/v1alpha1", "kind": "InstallerSettings"}


def pod(
    limits: dict[str, Any] | None = None, labels: dict[str, str] | None = None, name: str = "p", **spec: Any
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"limits": limits or {"aliyun.com/gpu-mem": 2}}}
    if "env" in spec:
        container["env"] = spec.pop("env")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def node(
    mode: str | None = "share",
    gpus: int = 2,
    per_gpu: int = 16,
    core: int | None = None,
    labels: dict[str, str] | None = None,
    **info: str,
) -> dict[str, Any]:
    capacity: dict[str, Any] = {"aliyun.com/gpu-mem": gpus * per_gpu, "aliyun.com/gpu-count": gpus}
    if core is not None:
        capacity["aliyun.com/gpu-core.percentage"] = core
    all_labels = {**({"ack.node.gpu.schedule": mode} if mode else {}), **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": all_labels},
        "status": {"capacity": capacity, "nodeInfo": info},
    }


#: A device plugin image other than the open-source one, as 128MiB units on ACK need (GS119).
ACK_PLUGIN = {"image": {"repository": "registry.example.com/acs/ack-gpushare-device-plugin", "tag": "v1"}}
MEM_DEV_4 = {"name": "ALIYUN_COM_GPU_MEM_DEV", "value": "4"}
OPEN_SOURCE = {**SETTINGS, "profile": "open-source"}
SMALL_UNIT = {**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": ACK_PLUGIN}
OPEN_SOURCE_MIB = {**OPEN_SOURCE, "gpuMemoryUnit": "MiB"}
COMPUTE = {**SETTINGS, "isolation": ["core_mem"], "computeAllocation": True, "region": "cn-beijing"}
CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": pod()}}},
}
#: rule ID -> (objects, context flags) that must raise it
CASES: dict[str, tuple[list[dict[str, Any]], dict[str, str]]] = {
    "GS100": ([{**SETTINGS, "gpuMemoryUnits": "1GiB"}], {}),
    "GS101": ([{**SETTINGS, "profile": "open-source", "gpuMemoryUnit": "128MiB"}], {}),
    "GS102": ([{**SETTINGS, "profile": "open-source", "isolation": ["cgpu"]}], {}),
    "GS103": ([{**SETTINGS, "profile": "open-source", "scheduler": {"mode": "managed"}}], {}),
    "GS104": ([{**SETTINGS, "profile": "open-source", "computeAllocation": True}], {}),
    "GS105": ([{**SETTINGS, "isolation": ["core_mem"]}], {}),
    "GS106": ([{**COMPUTE, "scheduler": {"mode": "secondary"}}], {}),
    "GS107": ([{**COMPUTE, "region": "eu-central-1"}], {}),
    "GS108": ([{**COMPUTE, "region": None}], {}),
    "GS109": (
        [{**SETTINGS, "kubernetesVersion": "1.28", "scheduler": {"mode": "secondary", "configApi": "v1beta2"}}],
        {},
    ),
    "GS110": (
        [{**SETTINGS, "kubernetesVersion": "1.28", "scheduler": {"mode": "secondary", "configApi": "v1beta3"}}],
        {},
    ),
    "GS111": ([{**SETTINGS, "scheduler": {"configApi": "v1"}}], {}),
    "GS112": ([{**SETTINGS, "gpuMemoryUnit": "128MiB", "isolation": ["cgpu"], "devicePlugin": ACK_PLUGIN}], {}),
    "GS113": ([{**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": ACK_PLUGIN}], {}),
    "GS114": ([{**SETTINGS, "scheduler": {"mode": "control-plane"}}], {}),
    "GS116": ([{**COMPUTE, "cgpu": {"policy": 5}}], {}),
    "GS117": ([{**COMPUTE, "cgpu": {"policy": 0}}], {}),
    "GS118": ([{**SETTINGS, "gpuMemoryUnit": "128MiB", "isolation": ["core_mem"], "devicePlugin": ACK_PLUGIN}], {}),
    "GS122": (
        [
            {
                **COMPUTE,
                "devicePlugin": {"image": {"repository": "registry.example.com/acs/k8s-gpushare-plugin", "tag": "v2"}},
            }
        ],
        {},
    ),
    "GS119": (
        [
            {
                **SETTINGS,
                "gpuMemoryUnit": "128MiB",
                "devicePlugin": {"image": {"repository": "registry.example.com/acs/k8s-gpushare-plugin", "tag": "v2"}},
            }
        ],
        {},
    ),
    "GS123": ([OPEN_SOURCE_MIB], {}),
    "GS124": ([{**SETTINGS, "region": "cn-hangzou"}], {}),
    "GS125": ([{**SETTINGS, "region": "ap-southeast-4"}], {}),
    "GS120": ([{**SETTINGS, "isolation": ["cgpu"], "scheduler": {"mode": "secondary"}}], {}),
    "GS115": (
        [{**SETTINGS, "profile": "open-source", "kubernetesVersion": "1.22", "scheduler": {"configApi": "policy"}}],
        {},
    ),
    "GW201": ([pod({"aliyun.com/gpu-mem": "1.5"})], {}),
    "GW202": ([pod({"aliyun.com/gpu-mem": 2, "aliyun.com/gpu-core.percentage": 33})], {}),
    "GW203": ([pod({"aliyun.com/gpu-core.percentage": 30})], {}),
    "GW204": ([pod({"aliyun.com/gpu-mem": 5}, {"aliyun.com/gpu-count": "2"})], {}),
    "GW205": (
        [pod({"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 30}, {"aliyun.com/gpu-count": "2"})],
        {},
    ),
    "GW206": (
        [
            pod(
                {"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 30},
                nodeSelector={"ack.node.gpu.schedule": "share"},
            )
        ],
        {},
    ),
    "GW207": ([pod({"aliyun.com/gpu-mem": 17}), node(per_gpu=16)], {}),
    "GW208": (
        [
            pod({"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 30}, nodeName="n1"),
            {**pod({"aliyun.com/gpu-mem": 4}, nodeName="n1"), "metadata": {"name": "q"}},
        ],
        {},
    ),
    "GW209": ([pod(nodeSelector={"ack.node.gpu.schedule": "shared"})], {}),
    "GW210": ([pod(env=[{"name": "ALIYUN_COM_GPU_SCHD_WEIGHT", "value": "0"}])], {}),
    "GS121": ([{**SETTINGS, "kubernetesVersion": "v1.28.99"}], {}),
    "GW211": ([pod(env=[{"name": "ALIYUN_COM_GPU_MEM_CONTAINER", "value": "0"}])], {}),
    "GW212": ([pod(env=[{"name": "ALIYUN_COM_GPU_MEM_CONTAINER", "value": "8"}, MEM_DEV_4])], {}),
    "GW213": ([pod(env=[{"name": "ALIYUN_COM_GPU_SCHD_WEIGHT", "value": "3"}])], {}),
    "GW214": ([OPEN_SOURCE, pod()], {}),
    "GN301": ([node(gpus="two")], {}),  # type: ignore[arg-type]
    "GN302": ([node(mode="mem")], {}),
    "GN303": ([node(mode="core_mem", core=100)], {}),
    "GN304": (
        [node(gpus=3, per_gpu=5) | {"status": {"capacity": {"aliyun.com/gpu-mem": 16, "aliyun.com/gpu-count": 3}}}],
        {},
    ),
    "GN305": ([node(mode="cgpu", labels={"node.kubernetes.io/instance-type": "ecs.g7.xlarge"})], {}),
    "GN306": ([node(mode="cgpu", osImage="Windows Server 2019")], {}),
    "GN307": ([node(mode="cgpu", containerRuntimeVersion="docker://18.9.1")], {}),
    "GN308": ([node(mode="core_mem", core=200, labels={"topology.kubernetes.io/region": "eu-west-1"})], {}),
    "GN309": ([SMALL_UNIT, node(mode="core_mem", core=200)], {}),
    "GN310": ([OPEN_SOURCE, node(mode=None, containerRuntimeVersion="containerd://1.7")], {}),
    "GN311": ([node(mode="cgpu", containerRuntimeVersion="containerd://1.6.20")], {}),
    "GN312": ([OPEN_SOURCE_MIB, node(mode=None, gpus=8, per_gpu=12196)], {}),
    "GN313": ([SETTINGS, node(mode="cgpu")], {}),
    "GC401": ([], {"driver_version": "latest"}),
    "GC402": ([COMPUTE], {"chart_version": "1.1.9"}),
    "GC403": ([COMPUTE], {"kube_version": "1.24.6", "scheduler_version": "1.24.3-ack-1.9"}),
    "GC404": ([pod({"aliyun.com/gpu-mem": 2, "aliyun.com/gpu-core.percentage": 30})], {"region": "eu-central-1"}),
    "GC405": ([{**SETTINGS, "gpuMemoryUnit": "128MiB"}], {"kube_version": "1.18.6"}),
    "GC406": ([], {"cgpu_version": "1.5.7"}),
    "GC407": ([], {"cgpu_version": "1.5.8"}),
    "GC408": ([], {"cgpu_version": "1.5.2", "driver_version": "535.54.03"}),
    "GC409": ([], {"driver_version": "410.104"}),
    "GC410": ([], {"docker_version": "18.09.1"}),
    "GC411": ([{**SETTINGS, "gpuMemoryUnit": "128MiB"}], {}),
    "GC412": ([SMALL_UNIT], {"cluster_created": "2021-06-01T08:00:00Z"}),
    "GC413": ([COMPUTE], {"cluster_created": "2022-02-28T23:00:00Z"}),
    "GC414": ([COMPUTE], {"kube_version": "v1.32.1-aliyun.1"}),
    "GC415": ([], {}),
    "GC416": ([], {}),
    "GW215": ([{**CRONJOB, "apiVersion": "batch/v1beta1"}], {"kube_version": "1.28"}),
    "GW216": ([pod(), pod()], {}),
    "GW217": ([pod({"aliyun.com/gpu-mem": 0})], {}),
    "GW218": ([pod({"aliyun.com/gpu-mem": "4Gi"})], {}),
    "GW219": ([pod({"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 50})], {"semantics": "upstream"}),
    "GW220": (
        [{**CRONJOB, "apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 10**9, "template": pod()}}],
        {},
    ),
    "GN314": ([node(per_gpu=2**21)], {}),
}


#: What only a live read (preflight) or a change (diff) gives the cluster rules: ClusterFacts' fields.
READINGS: dict[str, dict[str, Any]] = {
    "GC411": {"current_units": [UnitReading("GiB", "DaemonSet x/y")], "gpu_pods": ["ml/a"]},
    "GC415": {"relabelled": [("n1", "share", "core_mem")]},
    "GC416": {"relabelled": [("n1", "share", "cgpu")], "gpu_pods_on": {"n1": ["ml/a"]}},
}


def fired(objects: list[dict[str, Any]], flags: dict[str, str], readings: dict[str, Any] | None = None) -> set[str]:
    return {f.rule.id for f in validate(objects, ClusterFacts(**flags, **(readings or {}))).findings}


def test_every_rule_has_a_case() -> None:
    """Each rule validate runs has its case here; the ledger's rules (doctor's) have theirs in test_doctor."""
    from test_doctor import FAULTS

    assert set(CASES) | set(FAULTS) == {r.id for r in RULES} and not set(CASES) & set(FAULTS)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires(rule_id: str) -> None:
    objects, flags = CASES[rule_id]
    assert rule_id in fired(objects, flags, READINGS.get(rule_id))


@pytest.mark.parametrize(
    ("settings", "fires"),
    [
        (None, True),  # the flags alone: a question about cGPU
        ({**SETTINGS, "isolation": ["share", "cgpu"]}, True),
        ({**SETTINGS, "isolation": ["core_mem"], "computeAllocation": True, "region": "cn-beijing"}, True),
        (SETTINGS, False),  # ACK, share only: no cGPU is installed
        (OPEN_SOURCE, False),
    ],
)
def test_the_driver_and_docker_floors_are_cgpus_prerequisites(settings: dict[str, object] | None, fires: bool) -> None:
    """Seed 004 lists driver >= 418.87.01 and Docker >= 19.03.5 as prerequisites of installing cGPU: they hold
    where the settings install it (cgpu or core_mem on ACK), not on share-only or open-source settings."""
    ids = fired([settings] if settings else [], {"driver_version": "410.104", "docker_version": "18.09.1"})
    assert ids & {"GC409", "GC410"} == ({"GC409", "GC410"} if fires else set())


@pytest.mark.parametrize(("policy", "fires"), [(0, True), (1, True), (4, True), (2, False), (3, False)])
def test_policies_that_split_a_gpu_evenly_warn_with_compute_allocation(policy: int, fires: bool) -> None:
    """Seed 004: 0 gives each container 1/max_inst; 1 and 4 share the GPU among the active containers: none gives a
    container its gpu-core.percentage (GS117); 5 isolates no compute (GS116, an error)."""
    ids = fired([{**COMPUTE, "cgpu": {"policy": policy}}], {})
    assert ("GS117" in ids) == fires and "GS116" not in ids
    assert "1, 2 or 4" not in BY_ID["GS116"].remediation


@pytest.mark.parametrize(
    ("shares", "refused"),
    [((3, 2), ["a", "b"]), ((5, 10), []), ((30, 7), ["b"]), ((60, 60), ["pod"]), ((0, 105), ["b"])],
)
def test_compute_is_checked_per_container(shares: tuple[int, int], refused: list[str]) -> None:
    """Seed 002: each container's gpu-core.percentage is a multiple of 5 from 5 to 100, so 3% + 2% is refused
    though the pod's 5% is one; the pod's total is at most one GPU's 100%. Each finding names its container."""
    made = pod({"aliyun.com/gpu-mem": 4})
    made["spec"]["containers"] = [
        {"name": name, "resources": {"limits": {"aliyun.com/gpu-mem": 2, "aliyun.com/gpu-core.percentage": share}}}
        for name, share in zip("ab", shares, strict=True)
    ]
    found = [f for f in validate([made]).findings if f.rule.id == "GW202"]
    where = ["pod" if f.field == "resources.limits.aliyun.com/gpu-core.percentage" else f.field[11] for f in found]
    assert where == refused


def test_compute_allocation_leaves_the_plugin_image_to_the_install(tmp_path: Path) -> None:
    """Only ACK's device plugin reports gpu-core.percentage capacity (facts section 1): with compute allocation
    gpushare picks no plugin image (the chart asks at install, manifests need one at render), and the open-source
    image named is refused (GS122)."""
    rendered = render(COMPUTE, format="chart", output=tmp_path / "chart")
    assert rendered.settings.device_plugin.image.repository == "" and rendered.install_values
    assert "compute allocation needs ACK's own device plugin" in rendered.notes
    with pytest.raises(InputError, match="compute allocation needs ACK's own device plugin"):
        render(COMPUTE, format="manifests")
    helpers = (tmp_path / "chart" / "templates" / "_helpers.tpl").read_text()
    assert "[GS122]" in helpers and "[GS122]" not in render(SETTINGS, format="chart").files["templates/_helpers.tpl"]
    given = {**COMPUTE, "devicePlugin": ACK_PLUGIN}
    (plugin,) = [
        o
        for o in render(given, format="manifests").objects
        if o["kind"] == "DaemonSet" and "plugin" in o["metadata"]["name"]
    ]
    assert plugin["spec"]["template"]["spec"]["containers"][0]["image"].startswith(ACK_PLUGIN["image"]["repository"])


def test_old_clusters_and_charts_are_reinstalled_not_upgraded() -> None:
    """Seed 002: a cluster created before 2022-03-01 takes a ticket for the preview, the old ack-ai-installer
    deleted and the latest installed; a chart below 1.2.0 is the old memory-only one: deleted, then installed."""
    old_cluster = BY_ID["GC413"].remediation
    assert (
        "ticket" in old_cluster
        and "delete the old ack-ai-installer" in old_cluster
        and "install the latest" in old_cluster
    )
    old_chart = BY_ID["GC402"].remediation
    assert (
        "delete it" in old_chart
        and "then install the latest" in old_chart
        and "Upgrade the cluster or cGPU" in old_chart
    )


def test_an_extended_resource_requested_without_a_limit_is_refused_as_the_api_server_does() -> None:
    """The API server refuses `aliyun.com/gpu-mem` in requests only ("Limit must be set for non overcommitable
    resources"): validate says so where it used to place such a pod."""
    made = pod()
    made["spec"]["containers"][0]["resources"] = {"requests": {"aliyun.com/gpu-mem": 2}}
    (finding,) = [f for f in validate([made]).findings if f.rule.id == "GW201"]
    assert finding.field == "containers[c].resources.limits.aliyun.com/gpu-mem"
    assert "Limit must be set for non overcommitable resources" in finding.allowed
    made["spec"]["containers"][0]["resources"]["limits"] = {"aliyun.com/gpu-mem": 2}
    assert not [f for f in validate([made]).findings if f.rule.id == "GW201"]


def test_validate_and_place_call_the_same_gpu_pods_not_served(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without --scheduler-name or settings, `validate` checks GW214 against the scheduler `place` serves by
    default (default-scheduler), so a GPU pod `place` reports as not served is an error of `validate` too."""
    made = pod(schedulerName="my-scheduler")
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(made))
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1 and "GW214" in out and "expected default-scheduler" in out
    assert run(capsys, "validate", str(path), "--scheduler-name", "my-scheduler")[0] == 0


def test_one_prerequisite_list_says_why_its_severities_differ() -> None:
    """Seed 004 lists families, OS, driver and Docker together: the family and OS rules warn and say why (a list
    of what was tested), the driver and Docker floors refuse."""
    for rule_id in ("GN305", "GN306"):
        assert BY_ID[rule_id].severity == "warning" and "not an error like the driver" in BY_ID[rule_id].explanation
    assert {BY_ID[r].severity for r in ("GN307", "GC409", "GC410")} == {"error"}


def test_docker_is_checked_on_docker_nodes_only_and_said_elsewhere() -> None:
    """GN307 reads a docker:// runtime; a cgpu node on containerd gets GN311 (cannot be checked), not silence."""
    assert fired([node(mode="cgpu", containerRuntimeVersion="docker://20.10.7")], {}).isdisjoint({"GN307", "GN311"})
    on_containerd = fired([node(mode="cgpu", containerRuntimeVersion="containerd://1.6.20")], {})
    assert "GN311" in on_containerd and "GN307" not in on_containerd
    assert "GN311" not in fired([node(mode="share", containerRuntimeVersion="containerd://1.6.20")], {})


def test_the_node_rule_on_the_unit_reads_the_flag_without_settings() -> None:
    """`place` has --gpu-memory-unit and no settings: GN309 reads the unit as a fact; the settings' unit wins."""
    core_mem = node(mode="core_mem", core=200)
    assert "GN309" in fired([core_mem], {"gpu_memory_unit": products.UNIT_128MIB})
    assert "GN309" not in fired([core_mem], {"gpu_memory_unit": products.UNIT_1GIB})
    assert "GN309" not in fired([SETTINGS, core_mem], {"gpu_memory_unit": products.UNIT_128MIB})


@pytest.mark.parametrize(("one", "other"), [("GS118", "GN309"), ("GN307", "GC410")])
def test_one_fact_on_two_targets_is_two_rules_that_name_each_other(one: str, other: str) -> None:
    """A fact checked on two targets is a rule per target; each says what it checks and names its twin."""
    first, second = BY_ID[one], BY_ID[other]
    assert first.target != second.target and first.source == second.source
    assert other in first.summary + first.explanation and one in second.summary + second.explanation
    assert first.summary != second.summary


def test_every_refusal_is_one_sentence() -> None:
    """Settings, flags, a rule's finding and a malformed object refuse in the same words."""
    sentence = not_allowed("--gpu-memory-unit", "128MiB", "1GiB")
    assert sentence == "--gpu-memory-unit: '128MiB' is not allowed; expected 1GiB"
    assert str(InputError("--gpu-memory-unit", "128MiB", "1GiB")) == sentence
    assert str(InputError("--gpu-memory-unit", "128MiB", "1GiB", "a.yaml:3")) == f"a.yaml:3: {sentence}"
    assert Problem("GN301", "--gpu-memory-unit", "128MiB", "1GiB").message == f"{sentence} [GN301]"
    (finding,) = validate([node(mode="core_mem", core=200)], ClusterFacts(gpu_memory_unit="128MiB")).findings
    field = "metadata.labels.ack.node.gpu.schedule"
    assert finding.message == not_allowed(field, "core_mem", finding.allowed) + " [GN309]"


def test_clean_inputs_give_no_findings() -> None:
    objects = [
        {**SETTINGS, "isolation": ["share", "core_mem"], "computeAllocation": True, "region": "cn-beijing"},
        pod(
            {"aliyun.com/gpu-mem": 4, "aliyun.com/gpu-core.percentage": 30},
            nodeSelector={"ack.node.gpu.schedule": "core_mem"},
        ),
        pod({"aliyun.com/gpu-mem": 8}, {"aliyun.com/gpu-count": "4"}, name="q"),
        node(
            mode="core_mem",
            core=200,
            labels={
                "node.kubernetes.io/instance-type": "ecs.gn7i-c8g1.2xlarge",
                "topology.kubernetes.io/region": "cn-beijing",
            },
            osImage="Alibaba Cloud Linux 3",
            containerRuntimeVersion="docker://20.10.7",
        ),
    ]
    flags = {
        "kube_version": "1.26.3",
        "scheduler_version": "v1.26.3-aliyun-4.1-a520c096",
        "cgpu_version": "1.5.10",
        "driver_version": "535.161.08",
        "docker_version": "20.10.7",
        "chart_version": "1.2.1",
    }
    assert fired(objects, flags) == set()


@pytest.mark.parametrize(
    ("cgpu", "driver", "ok"),
    [
        ("1.5.20", "575.51.03", True),
        ("1.5.3", "450.80.02", False),
        ("1.5.2", "525.89.03", True),
        ("1.5.2", "525.105.17", False),
        ("1.0.5", "470.161.03", True),
        ("1.0.3", "460.91.03", True),
        ("1.0.3", "510.47.03", False),
    ],
)
def test_cgpu_driver_table(cgpu: str, driver: str, ok: bool) -> None:
    assert ("GC408" not in fired([], {"cgpu_version": cgpu, "driver_version": driver})) == ok


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "0")], {"GW211"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "0,3")], {"GW211"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "1,0,0")], {"GW211"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "3,1")], set()),
        ([("ALIYUN_COM_GPU_MEM_DEV", "15")], {"GW212"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "9,x"), ("ALIYUN_COM_GPU_MEM_DEV", "4")], {"GW210"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "3,16"), ("ALIYUN_COM_GPU_MEM_DEV", "15")], {"GW212"}),
        ([("ALIYUN_COM_GPU_MEM_CONTAINER", "6"), ("ALIYUN_COM_GPU_MEM_DEV", "15")], set()),
        ([("ALIYUN_COM_GPU_SCHD_WEIGHT", "1")], set()),
    ],
)
def test_cgpu_memory_env_forms(env: list[tuple[str, str]], expected: set[str]) -> None:
    """Seed 004's forms: what turns isolation off, CONTAINER above DEV per GPU, DEV without CONTAINER."""
    found = fired([pod(env=[{"name": n, "value": v} for n, v in env])], {})
    assert found & {"GW210", "GW211", "GW212", "GW213"} == expected


@pytest.mark.parametrize(
    ("objects", "flags", "fires"),
    [
        ([OPEN_SOURCE, pod()], {}, True),  # secondary gpushare-scheduler, the pod names none
        ([OPEN_SOURCE, pod(schedulerName="gpushare-scheduler")], {}, False),
        ([{**OPEN_SOURCE, "scheduler": {"name": "gpu"}}, pod(schedulerName="gpushare-scheduler")], {}, True),
        ([{**SETTINGS, "scheduler": {"mode": "managed"}}, pod()], {}, False),  # ACK's managed default-scheduler
        ([SETTINGS, pod(schedulerName="volcano")], {}, True),
        ([pod()], {"scheduler_name": "gpushare-scheduler"}, True),  # no settings: the flag (or a live read) says
        ([pod()], {}, False),  # nobody says which scheduler serves GPUs: not checked
        ([pod({"cpu": "1"})], {"scheduler_name": "gpushare-scheduler"}, False),  # no GPU asked
    ],
)
def test_gpu_pods_name_the_served_scheduler(objects: list[dict[str, Any]], flags: dict[str, str], fires: bool) -> None:
    assert ("GW214" in fired(objects, flags)) is fires


@pytest.mark.parametrize(
    ("release", "floor", "faq"),
    [
        ("1.0.5", True, False),
        ("1.5.7", True, False),
        ("1.5.8", False, True),
        ("1.5.9", False, True),
        ("1.5.10", False, False),
        ("1.5.20", False, False),
    ],
)
def test_cgpu_release_floor_and_faq_advice(release: str, floor: bool, faq: bool) -> None:
    """The document's floor (>= 1.5.8) is an error; the FAQ's newer advice (>= 1.5.10) a warning above it."""
    found = fired([], {"cgpu_version": release})
    assert ("GC406" in found, "GC407" in found) == (floor, faq)


def test_driver_table_is_a_warning_beside_the_floor() -> None:
    """Outside the FAQ's row: a warning; below the seed's 418.87.01: the error."""
    findings = validate([], ClusterFacts(cgpu_version="1.5.2", driver_version="535.54.03")).findings
    (table,) = [f for f in findings if f.rule.id == "GC408"]
    assert table.rule.id == "GC408" and table.rule.severity == "warning"
    floor = {f.rule.id: f.rule.severity for f in validate([], ClusterFacts(driver_version="410.104")).findings}
    assert floor == {"GC409": "error"}


def test_128mib_on_ack_needs_acks_plugin_also_in_the_chart(tmp_path: Path) -> None:
    """GS119 in render where the settings name the open-source plugin, and the same refusal from helm when a chart
    user sets the unit at install time."""
    named = {"image": {"repository": "registry.example.com/acs/k8s-gpushare-plugin", "tag": "v2"}}
    with pytest.raises(InputError, match="GS119"):
        render({**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": named})
    rendered = render({**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": ACK_PLUGIN}, format="manifests")
    (plugin,) = [o for o in rendered.objects if o["kind"] == "DaemonSet"]
    assert "--memory-unit=128MiB" in plugin["spec"]["template"]["spec"]["containers"][0]["command"]
    chart = tmp_path / "chart"
    render(SETTINGS, format="chart", output=chart)
    helpers = (chart / "templates" / "_helpers.tpl").read_text()
    assert 'eq .Values.gpuMemoryUnit "128MiB"' in helpers and "[GS119]" in helpers


def test_render_refuses_with_the_same_id_and_message() -> None:
    doc = {**SETTINGS, "profile": "open-source", "gpuMemoryUnit": "128MiB"}
    with pytest.raises(InputError) as exc:
        render(doc)
    finding = next(f for f in validate([doc]).findings if f.rule.id == "GS101")
    assert str(exc.value) == finding.message


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_exit_codes_and_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = tmp_path / "clean.yaml"
    clean.write_text(yaml.safe_dump(pod()))
    warn = tmp_path / "warn.yaml"
    warn.write_text(yaml.safe_dump({**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": ACK_PLUGIN}))
    bad = tmp_path / "deploy"
    bad.mkdir()
    second = yaml.safe_dump(pod(name="q"))
    (bad / "a.yaml").write_text(yaml.safe_dump(pod({"aliyun.com/gpu-mem": -1})) + "---\n" + second)
    assert run(capsys, "validate", str(clean))[0] == 0
    assert run(capsys, "validate", str(warn))[0] == 0
    assert run(capsys, "validate", str(warn), "--strict")[0] == 1
    code, out, _ = run(capsys, "validate", str(bad), "-o", "json")
    report = json.loads(out)
    assert code == 1 and not list(REPORT.iter_errors(report))
    (finding,) = report["findings"]
    assert finding["rule"] == "GW201" and finding["location"] == f"{bad / 'a.yaml'}:1"
    code, out, _ = run(capsys, "validate", str(bad), "-o", "sarif")
    sarif = json.loads(out)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "GW201" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} == {r.id for r in RULES}
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\nmetadata: {name: [x\n")
    code, out, err = run(capsys, "validate", str(clean), str(broken))
    assert code == 2 and out == "" and f"{broken}:" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err


def test_rules_listing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "-o", "json")
    listed = json.loads(out)["rules"]
    assert code == 0 and [r["id"] for r in listed] == [r.id for r in RULES]
    assert all(r["summary"] and r["remediation"] and r["source"] for r in listed)
    # what cGPU isolation does not do is said beside every rule about cGPU's memory variables, policies, release
    explained = {r["id"] for r in listed if "cudaMallocManaged (UVM) is not isolated" in r["explanation"]}
    assert {"GS116", "GS117", "GW210", "GW211", "GW212", "GW213", "GC406", "GC409"} <= explained
    assert all("P4, P100, T4, V100 and A10" in r["explanation"] for r in listed if r["id"] in explained)
    _, text, _ = run(capsys, "rules")
    assert "       why: Memory isolation makes a container that allocates beyond its share fail" in text


def test_rules_shows_the_ids_asked_for_with_their_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """`gpushare rules GS119` answers with that rule's fix and reasons; an unknown ID is a usage error."""
    code, text, _ = run(capsys, "rules", "gs119", "GN312")
    lines = text.splitlines()
    assert code == 0 and lines[0].startswith("GS119  error") and lines[1].startswith("       fix: Leave devicePlugin")
    assert [line[:5] for line in lines if not line.startswith(" ")] == ["GS119", "GN312"]
    assert "why: In MiB units" in text and "aliyun.com/gpu-mem unhealthy" in " ".join(text.split())
    code, out, _ = run(capsys, "rules", "GN312", "-o", "json")
    assert code == 0 and [r["id"] for r in json.loads(out)["rules"]] == ["GN312"]
    code, out, err = run(capsys, "rules", "GS999")
    assert code == 2 and out == "" and "'GS999'" in err and len(err.strip().splitlines()) == 1


def test_mib_units_warn_where_the_device_list_outgrows_kubelets_bound() -> None:
    """GN312 on nodes whose MiB list is over kubelet's gRPC bound (8 x 12,196 MiB, as reported upstream; 1 x 81,920)
    and not on those under it (4 x 16,384) nor in GiB units; GS123 says the limits where the unit is chosen."""
    over = [node(mode=None, gpus=8, per_gpu=12196), node(mode=None, gpus=1, per_gpu=81920)]
    for big in over:
        assert "GN312" in fired([OPEN_SOURCE_MIB, big], {})
        assert "GN312" not in fired([OPEN_SOURCE, {**big, "status": {"capacity": {"aliyun.com/gpu-mem": 8}}}], {})
    assert "GN312" not in fired([OPEN_SOURCE_MIB, node(mode=None, gpus=4, per_gpu=16384)], {})
    (finding,) = [f for f in validate([OPEN_SOURCE_MIB, over[0]], ClusterFacts()).findings if f.rule.id == "GN312"]
    assert "5,862,768 bytes" in finding.message and "at most 8,756 MiB per GPU over 8 GPU(s)" in finding.message
    (warning,) = [f for f in validate([OPEN_SOURCE_MIB], ClusterFacts()).findings if f.rule.id == "GS123"]
    assert "1 x 68,941, 2 x 34,561, 4 x 17,371 or 8 x 8,756 MiB" in warning.message


def test_findings_point_at_the_object_inside_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl get -o yaml` writes a List: a finding names the bad item's own line, in text, JSON and SARIF."""
    listing = {"apiVersion": "v1", "kind": "List", "items": [pod(), pod({"aliyun.com/gpu-mem": "1.5"}, name="q")]}
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(listing, sort_keys=False))
    lines = path.read_text().splitlines()
    second = [i for i, line in enumerate(lines, start=1) if line.startswith("- ")][1]
    code, out, _ = run(capsys, "validate", str(path), "-o", "sarif")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert code == 1 and result["locations"][0]["physicalLocation"]["region"]["startLine"] == second
    code, out, _ = run(capsys, "validate", str(path), "-o", "json")
    assert json.loads(out)["findings"][0]["location"] == f"{path}:{second}"


@pytest.mark.parametrize(
    ("api_version", "kube_version", "fires"),
    [
        ("batch/v1beta1", "1.24", False),
        ("batch/v1beta1", "v1.25.0", True),
        ("batch/v1", "1.20", True),  # batch/v1 CronJob arrives in 1.21
        ("batch/v1", "1.36", False),
        ("batch/v1beta1", None, False),  # the cluster's minor unknown: nothing to say
    ],
)
def test_workload_apis_by_minor(api_version: str, kube_version: str | None, fires: bool) -> None:
    flags = {"kube_version": kube_version} if kube_version else {}
    assert ("GW215" in fired([{**CRONJOB, "apiVersion": api_version}], flags)) is fires


@pytest.mark.parametrize(("kube_version", "fires"), [("1.28.3", False), ("1.30", True), (None, False)])
def test_undocumented_ack_scheduler_minimum_is_said(kube_version: str | None, fires: bool) -> None:
    flags = {"kube_version": kube_version} if kube_version else {}
    assert ("GC414" in fired([COMPUTE], flags)) is fires


def test_a_controllers_findings_name_the_field_in_its_template() -> None:
    """A Deployment's pod fields are under spec.template (a CronJob's under spec.jobTemplate.spec.template), as
    the user finds them in the file; the controller's own fields (spec.replicas) stay as written."""
    template = pod({"aliyun.com/gpu-mem": "1.5"}, schedulerName="mine", nodeSelector={"ack.node.gpu.schedule": "x"})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": "two", "selector": {}, "template": {"metadata": {}, "spec": template["spec"]}},
    }
    fields = {f.field for f in validate([deployment], ClusterFacts(scheduler_name="default-scheduler")).findings}
    assert fields == {
        "spec.replicas",
        "spec.template.spec.containers[c].resources.limits.aliyun.com/gpu-mem",
        "spec.template.spec.nodeSelector.ack.node.gpu.schedule",
    }
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = 2
    job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "j"}}
    job["spec"] = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": deployment["spec"]["template"]}}}
    located = {f.field for f in validate([deployment, job], ClusterFacts(scheduler_name="default-scheduler")).findings}
    assert {"spec.template.spec.schedulerName", "spec.jobTemplate.spec.template.spec.schedulerName"} <= located
    assert "spec.schedulerName" not in located
    (bare,) = [
        f
        for f in validate([pod(schedulerName="mine")], ClusterFacts(scheduler_name="s")).findings
        if f.rule.id == "GW214"
    ]
    assert bare.field == "spec.schedulerName"


def test_gpu_memory_written_in_bytes_is_said_to_count_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`aliyun.com/gpu-mem: 4Gi` is a valid pod asking 4,294,967,296 units: validate's error names the container's
    field and the count meant, and place says it beside the pod left pending and exits 1; plain numbers (4, "4", 4.0,
    1e3) say nothing."""
    (finding,) = [f for f in validate([pod({"aliyun.com/gpu-mem": "4Gi"})], ClusterFacts()).findings]
    assert finding.rule.id == "GW218" and finding.field == "containers[c].resources.limits.aliyun.com/gpu-mem"
    assert "'4Gi' is 4,294,967,296 units" in finding.message
    for plain in (4, "4", "4.0", "1e3"):
        assert "GW218" not in fired([pod({"aliyun.com/gpu-mem": plain})], {})
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pod({"aliyun.com/gpu-mem": "4Gi"})))
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(node()))
    code, out, _ = run(capsys, "place", str(tmp_path / "p.yaml"), "--nodes", str(tmp_path / "n.yaml"))
    assert code == 1 and "pending 1" in out and "ERRORS IN THE INPUTS" in out
    assert "'4Gi': expected a count of units: 4 (in 1GiB units; 32 in 128MiB units)" in out and "GW218" in out


def test_a_misspelt_region_is_refused_and_a_new_one_taken_with_a_warning() -> None:
    """`cn-hangzou` would name registry-cn-hangzou.ack.aliyuncs.com, which does not exist: refused with the region
    meant; a numbered sibling of a known region (a newer region) warns; every listed region passes."""
    with pytest.raises(InputError, match=r"region: 'cn-hangzou' is not allowed; expected .*: cn-hangzhou\?"):
        render(region="cn-hangzou")
    assert fired([{**SETTINGS, "region": "cn-beijng"}], {}) >= {"GS124"}
    assert "GS124" not in fired([{**SETTINGS, "region": "ap-southeast-4"}], {})
    for region in products.REGIONS:
        assert fired([{**SETTINGS, "region": region}], {}).isdisjoint({"GS124", "GS125"}), region
    assert set(products.COMPUTE_REGIONS) <= set(products.REGIONS)


def test_acks_plugin_sharing_the_open_source_name_is_not_refused() -> None:
    """The open-source plugin is known by its name and its v2 release tags: an image of that name with another tag
    (ACK's own plugin, as the cluster shows it) serves 128MiB units and compute allocation unrefused."""
    for tag, refused in (("v2-1.11-aff8a23", True), ("v2", True), ("v4.1.0-aliyun", False), ("1.3.0", False)):
        image = {"image": {"repository": "registry-cn-beijing.ack.aliyuncs.com/acs/k8s-gpushare-plugin", "tag": tag}}
        small = fired([{**SETTINGS, "gpuMemoryUnit": "128MiB", "devicePlugin": image}], {})
        compute = fired([{**COMPUTE, "devicePlugin": image}], {})
        assert ("GS119" in small, "GS122" in compute) == (refused, refused), tag
