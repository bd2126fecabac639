"""`gpushare doctor` on a snapshot's objects: each ledger rule fires on the fault it exists for, naming the objects
involved, and a healthy fleet gives no finding; the command's forms and exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from jsonschema import Draft202012Validator

from gpushare.cli import main
from gpushare.kube.documents import from_objects
from gpushare.live.doctor import doctor
from gpushare.policy.rules import RULES

REPORT = Draft202012Validator(json.loads((REPO / "schemas" / "validation-report.schema.json").read_text()))
NOW = 10_000 * 10**9  # the clock doctor is given (ns)
CONFIG_API = "kubescheduler.config.k8s.io/v1"


def node(name: str, mode: str | None = "share", gpus: int = 2, per_gpu: int = 16, **extra: Any) -> dict[str, Any]:
    capacity: dict[str, Any] = {"aliyun.com/gpu-mem": str(gpus * per_gpu), "aliyun.com/gpu-count": str(gpus)}
    capacity.update(extra)
    labels = {"kubernetes.io/hostname": name, **({"ack.node.gpu.schedule": mode} if mode else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def daemonset(name: str, image: str, args: list[str] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": image, "args": args or []}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "uid": f"uid-{name}"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


PLUGIN = daemonset("gpushare-device-plugin-share", "acs/k8s-gpushare-plugin:v2", ["--memory-unit=GiB"])
INSTALLER = daemonset("gpushare-cgpu-installer", "acs/cgpu-installer:1.5.10")


def agent(ds: dict[str, Any], node_name: str) -> dict[str, Any]:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": ds["metadata"]["name"],
        "uid": ds["metadata"]["uid"],
        "controller": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{ds['metadata']['name']}-{node_name}",
            "namespace": "kube-system",
            "ownerReferences": [owner],
        },
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }


#: Other device plugins as their manifests ship them (gpushare.domain.deviceplugins names the sources).
NVIDIA = daemonset("nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.20.0")
HAMI = daemonset("hami-device-plugin", "docker.io/projecthami/hami:v2.6.0")
ACK_PLUGIN = daemonset(
    "gpushare-device-plugin-ds", "registry-cn-beijing-vpc.ack.aliyuncs.com/acs/k8s-gpushare-plugin:v3"
)
EVICT = daemonset("device-plugin-evict-ds", "registry.cn-beijing.aliyuncs.com/acs/nvidia-device-plugin-evict:v1")
CHART_LABELS = {"app.kubernetes.io/part-of": "gpushare", "app.kubernetes.io/component": "device-plugin"}


def plugin_pod(ds: dict[str, Any], node_name: str, **labels: str) -> dict[str, Any]:
    """A running pod of `ds` on the node, with its DaemonSet's image (what the ledger knows a plugin by)."""
    pod = agent(ds, node_name)
    pod["spec"]["containers"][0]["image"] = ds["spec"]["template"]["spec"]["containers"][0]["image"]
    pod["metadata"]["labels"] = labels
    return pod


def gpu_pod(name: str, node_name: str, units: int, idx: str | None = "0", **notes: str) -> dict[str, Any]:
    annotations = {}
    if idx is not None:
        annotations = {
            "ALIYUN_COM_GPU_MEM_IDX": idx,
            "ALIYUN_COM_GPU_MEM_POD": str(units),
            "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
            "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(NOW - 60 * 10**9),
        }
    annotations.update(notes)
    container = {"name": "c", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"nodeName": node_name, "schedulerName": "default-scheduler", "containers": [container]},
        "status": {"phase": "Running"},
    }


def healthy() -> list[dict[str, Any]]:
    """Two share nodes and a cgpu one, each with its device plugin (and the cgpu one its installer), GPU pods
    within every GPU's memory, a scheduler configuration the minor serves."""
    objects = [node("a"), node("b"), node("c", "cgpu"), PLUGIN, INSTALLER]
    objects += [agent(PLUGIN, n) for n in ("a", "b", "c")] + [agent(INSTALLER, "c")]
    objects += [gpu_pod("p1", "a", 10, "0"), gpu_pod("p2", "a", 6, "0"), gpu_pod("p3", "b", 16, "1")]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gpushare-scheduler-config", "namespace": "kube-system"},
            "data": {"scheduler-config.yaml": f"apiVersion: {CONFIG_API}\nkind: KubeSchedulerConfiguration\n"},
        }
    )
    return objects


def findings(objects: list[dict[str, Any]], minor: str = "1.28") -> list[tuple[str, str]]:
    report = doctor(from_objects(objects, "snapshot"), kube_version=minor, now_ns=NOW)
    return [(f.rule.id, f.subject) for f in report.findings]


def without(objects: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["metadata"]["name"] != name]


def test_a_healthy_fleet_gives_no_finding() -> None:
    assert findings(healthy()) == []


def _faults() -> dict[str, tuple[list[dict[str, Any]], str]]:
    """Each ledger rule: the fleet with its fault planted, and the object the finding must name."""
    base = healthy()
    stale = {"ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(NOW - 3600 * 10**9)}
    policy = copy.deepcopy(base[-1])
    policy["data"] = {"policy.cfg": json.dumps({"kind": "Policy", "apiVersion": "v1", "extenders": []})}
    zero = node("b", per_gpu=0)
    installed = agent(INSTALLER, "c")
    installed["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    early = gpu_pod("early", "c", 4, "0")
    early["status"]["startTime"] = "2026-01-01T00:00:00Z"  # before the installer: started without isolation
    whole = node("b", **{"nvidia.com/gpu": "2"})
    split = [
        *without(base, "gpushare-device-plugin-share"),
        daemonset("gpushare-device-plugin-share", "acs/k8s-gpushare-plugin:v2", ["--memory-unit=128MiB"]),
    ]
    return {
        "GL601": ([*base, gpu_pod("bad", "b", 4, "5")], "Pod/ml/bad"),
        "GL602": ([*base, gpu_pod("twice", "a", 8, "0")], "Node/a"),
        "GL603": ([*base, gpu_pod("stale", "b", 4, "0", **stale)], "Pod/ml/stale"),
        "GL604": ([*base, gpu_pod("preset", "b", 4, None)], "Pod/ml/preset"),
        "GL605": ([*without(base, "b"), zero], "Node/b"),
        "GL606": (without(base, "gpushare-device-plugin-share-b"), "Node/b"),
        "GL607": ([*without(base, "b"), node("b", None)], "Node/b"),
        "GL608": (without(base, "gpushare-cgpu-installer-c"), "Node/c"),
        "GL609": ([*without(base, "b"), whole], "Node/b"),
        "GL610": ([*base[:-1], policy], "cluster"),
        "GL611": (split, "cluster"),
        "GL612": ([*without(base, "gpushare-cgpu-installer-c"), installed, early], "Node/c"),
        "GL613": ([*base, NVIDIA, plugin_pod(NVIDIA, "a")], "Node/a"),
    }


FAULTS = _faults()


def test_every_ledger_rule_has_a_fault() -> None:
    assert set(FAULTS) == {r.id for r in RULES if r.target in ("gpu-pod", "gpu-node", "ledger")}


@pytest.mark.parametrize("rule_id", sorted(FAULTS))
def test_each_fault_is_found_with_its_id_and_object(rule_id: str) -> None:
    objects, subject = FAULTS[rule_id]
    found = findings(objects)
    assert (rule_id, subject) in found, found
    assert {r for r, _ in found} <= {rule_id, "GN304"}, found  # one fault, one finding (capacity 0 splits no GPU)


@pytest.mark.parametrize(
    ("other", "labels", "said"),
    [
        (ACK_PLUGIN, {}, "uninstall that component, or this release"),
        (NVIDIA, {}, "keep NVIDIA's or HAMi's off GPU-sharing nodes"),
        (HAMI, {}, "keep NVIDIA's or HAMi's off GPU-sharing nodes"),
        (HAMI, CHART_LABELS, "two releases or DaemonSets of one plugin"),  # labelled as the chart's: ours twice
    ],
)
def test_two_device_plugins_on_one_node(other: dict[str, Any], labels: dict[str, str], said: str) -> None:
    """This chart's plugin beside ACK's own (or the open-source manifests'), NVIDIA's or HAMi's: GL613 on that node
    only, both pods named, with the fix for the pair; the gpushare installer's evict pod is no plugin."""
    ours = plugin_pod(PLUGIN, "a", **CHART_LABELS)
    objects = [*without(healthy(), "gpushare-device-plugin-share-a"), ours, other, plugin_pod(other, "a", **labels)]
    report = doctor(from_objects(objects, "s"), kube_version="1.28", now_ns=NOW)
    (finding,) = [f for f in report.findings if f.rule.id == "GL613"]
    assert finding.subject == "Node/a" and said in finding.allowed
    assert (
        f"kube-system/{other['metadata']['name']}-a" in finding.value
        and "gpushare-device-plugin-share-a" in finding.value
    )
    evicting = [*without(healthy(), "gpushare-device-plugin-share-a"), ours, EVICT, plugin_pod(EVICT, "a")]
    assert findings(evicting) == []


def test_without_kube_system_pods_the_agents_are_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl get nodes,pods -n ml -o yaml`: no plugin or installer pod can be seen, so none is said missing
    (GL606, GL608): the report says what was not checked and how to give a full snapshot, exit 0."""
    partial = [o for o in healthy() if o["kind"] == "Node" or o["metadata"].get("namespace") == "ml"]
    (tmp_path / "ml.yaml").write_text(yaml.safe_dump_all(partial))
    assert main(["doctor", str(tmp_path / "ml.yaml"), "--kube-version", "1.28"]) == 0
    out = capsys.readouterr().out
    assert "not checked: which device plugin and cGPU installer pods run on each node (GL606, GL608)" in out
    assert "gpushare snapshot" in out and "GL606" not in out.split("not checked")[0]
    assert main(["doctor", str(tmp_path / "ml.yaml"), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    REPORT.validate(report)
    assert report["findings"] == [] and report["notChecked"][0]["rules"] == "GL606, GL608"


def test_a_gpu_node_without_its_label_tells_which_plugin_runs_there() -> None:
    objects, _ = FAULTS["GL607"]
    report = doctor(from_objects(objects, "s"), kube_version="1.28", now_ns=NOW)
    (finding,) = [f for f in report.findings if f.rule.id == "GL607"]
    assert "kube-system/gpushare-device-plugin-share-b" in finding.allowed


def test_the_command_on_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean, faulty = tmp_path / "clean.yaml", tmp_path / "faulty.yaml"
    clean.write_text(yaml.safe_dump_all(healthy()))
    faulty.write_text(yaml.safe_dump_all(FAULTS["GL602"][0]))
    assert main(["doctor", str(clean), "--kube-version", "1.28"]) == 0
    capsys.readouterr()
    assert main(["doctor", str(faulty), "--kube-version", "1.28", "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    REPORT.validate(report)
    assert [f["rule"] for f in report["findings"]] == ["GL602"]
    assert "ml/p1 (10) + ml/p2 (6) + ml/twice (8) = 24" in report["findings"][0]["value"]
    assert main(["doctor", str(faulty), "-o", "sarif"]) == 1
    assert json.loads(capsys.readouterr().out)["runs"][0]["results"][0]["ruleId"] == "GL602"
    assert main(["doctor", str(tmp_path / "nothing.yaml")]) == 2
    pods_only = tmp_path / "pods.yaml"
    pods_only.write_text(yaml.safe_dump(gpu_pod("x", "a", 1)))
    assert main(["doctor", str(pods_only)]) == 2 and "with its Nodes" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse's own refusal: one line, exit 2
        main(["doctor", str(clean), "--assume-timeout", "0"])
    assert usage.value.code == 2 and "--assume-timeout '0'" in capsys.readouterr().err


def test_the_readmes_example_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    text = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```\n(\$ gpushare doctor [^\n]*\n.*?)```", text, re.S)
    command, printed = block.split("\n", 1)
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([*healthy(), gpu_pod("twice", "a", 8, "0")]))
    monkeypatch.chdir(tmp_path)
    assert main(command.split()[2:]) == 1
    assert capsys.readouterr().out == printed


def test_the_ledger_is_read_in_the_grammar_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pod ACK's scheduler placed names its GPU in its allocation, which the open-source extender does not read:
    under `--semantics ack` (the default) its GPU is counted, under `upstream` it names none (GL601)."""
    allocated = gpu_pod("multi", "b", 8, idx=None)
    allocated["metadata"]["annotations"] = {"scheduler.framework.gpushare.allocation": '{"0":{"0":8}}'}
    objects = [*healthy(), allocated]
    assert findings(objects) == []
    upstream = doctor(from_objects(objects, "f"), kube_version="1.28", now_ns=NOW, semantics="upstream")
    assert [(f.rule.id, f.subject) for f in upstream.findings] == [("GL601", "Pod/ml/multi")]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump_all(objects))
    for semantics, expected in (("ack", []), ("upstream", ["GL601"])):
        code = main(
            ["doctor", str(tmp_path / "snap.yaml"), "--semantics", semantics, "--kube-version", "1.28", "-o", "json"]
        )
        found = [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"].startswith("GL6")]
        assert (code, found) == (1 if expected else 0, expected)
