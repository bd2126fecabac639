"""The chart's `gpushare watch` (off by default), rendered by the real helm: enabled, it equals the manifests and
its objects are valid for each minor; the ServiceMonitor and PrometheusRule come only where the cluster serves
monitoring.coreos.com/v1; an install without gpushare's image is refused; promtool checks the rules and its unit
tests fire each alert on the series that should fire it; the alerts and the dashboard read metrics watch serves."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml
from helpers import by_key, gpu_deployment, helm_template
from toolchain import PROMTOOL, need_tool

from gpushare import render
from gpushare.generate.components.watch import ALERTS, DASHBOARD
from gpushare.live.metrics import METRICS

SCHEMA_MINORS = frozenset(int(v.split(".")[1]) for v in kubernetes_validate.utils.all_versions())
MONITORING = ("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
RULES = ("--api-versions", "monitoring.coreos.com/v1/PrometheusRule")
TEMPLATE = gpu_deployment("llm", "ml", 8)
ENABLED = {
    "watch": {
        "enabled": True,
        "image": {"repository": "registry.example.com/gpushare"},
        "templates": {"llm": TEMPLATE},
        "serviceMonitorLabels": {"release": "kube-prometheus-stack"},
    }
}


def watch_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["metadata"]["labels"].get("app.kubernetes.io/component") == "watch"]


def served_names() -> set[str]:
    names = {d.name for d in METRICS}
    return names | {f"{d.name}_bucket" for d in METRICS}


def test_the_alerts_and_the_dashboard_read_metrics_watch_serves() -> None:
    exprs = [a.expr for a in ALERTS] + [t["expr"] for p in DASHBOARD["panels"] for t in p["targets"]]
    read = {name for expr in exprs for name in re.findall(r"\bgpushare_[a-z_]+", expr)}
    assert read and read <= served_names(), read - served_names()


@pytest.mark.helm
@pytest.mark.parametrize("minor", [20, 24, 28, 36])
def test_enabled_it_equals_the_manifests_and_is_valid(helm: Path, tmp_path: Path, minor: int) -> None:
    doc = {**ENABLED, "kubernetesVersion": f"1.{minor}"}
    render(doc, format="chart", output=tmp_path / "chart")
    manifests = render(doc, format="manifests").objects
    mine = watch_objects(manifests)
    kinds = sorted(o["kind"] for o in mine)
    assert kinds == [
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "ConfigMap", "Deployment", "NetworkPolicy", "Service",
        "ServiceAccount",
    ]  # fmt: skip
    version = f"1.{minor}.0"
    lint = subprocess.run([str(helm), "lint", "--strict", str(tmp_path / "chart"), "--kube-version", version],
                          capture_output=True, text=True)  # fmt: skip
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert by_key(helm_template(helm, tmp_path / "chart", version)) == by_key(manifests)
    if minor in SCHEMA_MINORS:
        for obj in mine:
            kubernetes_validate.validate(obj, f"1.{minor}", strict=True)
    templates = next(o for o in mine if o["metadata"]["name"].endswith("-watch-templates"))
    assert json.loads(templates["data"]["llm.json"]) == TEMPLATE  # what --templates-dir reads
    deployment = next(o for o in mine if o["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.example.com/gpushare:{render(doc).settings.watch.image.tag}"
    assert container["securityContext"]["readOnlyRootFilesystem"] and container["args"][0] == "watch"


@pytest.mark.helm
def test_off_by_default_and_monitoring_only_where_the_cluster_serves_it(helm: Path, tmp_path: Path) -> None:
    render({"kubernetesVersion": "1.28"}, format="chart", output=tmp_path / "chart")
    chart, version = tmp_path / "chart", "1.28.0"
    assert not watch_objects(helm_template(helm, chart, version, extra=(*MONITORING, *RULES)))
    on = ("--set", "watch.enabled=true", "--set", "watch.image.repository=registry.example.com/gpushare")
    kinds = {o["kind"] for o in watch_objects(helm_template(helm, chart, version, extra=on))}
    assert "Deployment" in kinds and not kinds & {"ServiceMonitor", "PrometheusRule"}
    kinds = {o["kind"] for o in watch_objects(helm_template(helm, chart, version, extra=(*on, *MONITORING)))}
    assert "ServiceMonitor" in kinds and "PrometheusRule" not in kinds
    kinds = {o["kind"] for o in watch_objects(helm_template(helm, chart, version, extra=(*on, *MONITORING, *RULES)))}
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds
    dashboards = [
        o
        for o in helm_template(helm, chart, version, extra=on)
        if o["kind"] == "ConfigMap" and o["metadata"]["labels"].get("grafana_dashboard") == "1"
    ]
    assert len(dashboards) == 1 and json.loads(dashboards[0]["data"]["gpushare.json"])["uid"] == "gpushare-watch"


@pytest.mark.helm
def test_an_install_without_gpushares_image_is_refused(helm: Path, tmp_path: Path) -> None:
    render({"kubernetesVersion": "1.28"}, format="chart", output=tmp_path / "chart")
    result = subprocess.run(
        [
            str(helm),
            "template",
            "r",
            str(tmp_path / "chart"),
            "--kube-version",
            "1.28.0",
            "--set",
            "watch.enabled=true",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "watch.image.repository is empty" in result.stderr


def _rules(helm: Path, tmp_path: Path, *values: str) -> Path:
    render({"kubernetesVersion": "1.28", **ENABLED}, format="chart", output=tmp_path / "chart")
    objects = helm_template(helm, tmp_path / "chart", "1.28.0", extra=(*RULES, *values))
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    return path


@pytest.mark.helm
def test_promtool_checks_the_rules_and_fires_each_alert(helm: Path, tmp_path: Path) -> None:
    """promtool's own unit tests of the chart's rules (thresholds set at install): each alert fires on the series
    that should fire it, after its `for`, and not before; none fires on a healthy fleet."""
    rules = _rules(helm, tmp_path, "--set", "watch.alerts.pendingMinutes=10", "--set", "watch.alerts.headroomBelow=2")
    promtool = str(need_tool(PROMTOOL))
    checked = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert checked.returncode == 0 and "4 rules found" in checked.stdout, checked.stdout + checked.stderr
    series = [
        {"series": 'gpushare_doctor_findings{rule="GL602",severity="error"}', "values": "0 1x20"},
        {"series": 'gpushare_doctor_findings{rule="GL605",severity="error"}', "values": "0x20"},
        {"series": "gpushare_pending_gpu_pods_fit_after_moves_oldest_seconds", "values": "0+60x20"},
        {"series": 'gpushare_template_headroom_replicas{template="Deployment/ml/llm"}', "values": "5 1x20"},
    ]

    def alert(name: str, at: str, fires: bool) -> dict[str, Any]:
        found = next(a for a in ALERTS if a.name == name)
        labels = {"severity": found.severity}
        if name == "GpushareHeadroomLow":
            labels["template"] = "Deployment/ml/llm"
        expected = [{"exp_labels": labels, "exp_annotations": {"summary": found.summary}}] if fires else []
        return {"eval_time": at, "alertname": name, "exp_alerts": expected}

    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    alert("GpushareDoubleAllocation", "3m", False),  # for 5m: pending
                    alert("GpushareDoubleAllocation", "7m", True),
                    alert("GpushareGpuMemoryZero", "15m", False),
                    alert("GpusharePendingFragmented", "12m", False),  # waited 12 min, over 10 for 2 min only
                    alert("GpusharePendingFragmented", "17m", True),
                    alert("GpushareHeadroomLow", "4m", False),
                    alert("GpushareHeadroomLow", "7m", True),
                ],
            }
        ],
    }
    path = tmp_path / "tests.yml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
