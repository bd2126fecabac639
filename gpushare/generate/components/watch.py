"""`gpushare watch` in the cluster (`watch.enabled`, off by default): a Deployment of gpushare's own image with
doctor's read-only access (and watch), a Service for Prometheus, a ServiceMonitor and a PrometheusRule where the
cluster serves monitoring.coreos.com/v1, a Grafana dashboard as a ConfigMap the Grafana sidecar picks up.

The alerts are data (`ALERTS`): their PromQL reads the metrics `gpushare.live.metrics` serves (a test holds the
names to it, and promtool checks the rules).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from gpushare.generate.components.common import RESTRICTED, container, pod_template, scheduling
from gpushare.generate.components.rbac import DOCTOR_RULES, binding, cluster_role, service_account, subject_sa
from gpushare.generate.template import Expr
from gpushare.generate.values import ChartValues

COMPONENT = "watch"
TEMPLATES_DIR = "/etc/gpushare/templates"
MONITORING = "monitoring.coreos.com/v1"
#: Where each file is rendered: Helm's condition, and whether plain manifests hold its objects (they cannot ask the
#: cluster which APIs it serves: the ServiceMonitor and PrometheusRule come with the chart only).
GUARDS: dict[str, tuple[str, bool]] = {
    "watch/watch.yaml": (".Values.watch.enabled", True),
    "watch/dashboard.yaml": ("and .Values.watch.enabled .Values.watch.dashboard", True),
    "watch/servicemonitor.yaml": (
        f'and .Values.watch.enabled (.Capabilities.APIVersions.Has "{MONITORING}/ServiceMonitor")',
        False,
    ),
    "watch/prometheusrule.yaml": (
        f'and .Values.watch.enabled (.Capabilities.APIVersions.Has "{MONITORING}/PrometheusRule")',
        False,
    ),
}
#: The image is gpushare's, built from the repository's Dockerfile: given at install time.
IMAGE_GUARD = (
    "{{- if not .Values.watch.image.repository }}{{ fail \"watch.image.repository is empty: build gpushare's image "
    "(docker build -t <registry>/gpushare:<version> . in gpushare's repository), push it and set "
    'watch.image.repository (and watch.image.tag)" }}{{ end }}\n'
)

#: What watch reads: doctor's lists, and a watch on each (nothing is written, no Secret is read).
WATCH_RULES = [{**rule, "verbs": ["get", "list", "watch"]} for rule in DOCTOR_RULES]


class Alert(NamedTuple):
    """One alert: its name, the PromQL (a `%d` takes the threshold value named, times `scale`), severity, words."""

    name: str
    expr: str
    threshold: str | None
    scale: int
    severity: str
    summary: str


ALERTS: tuple[Alert, ...] = (
    Alert(
        "GpushareDoubleAllocation",
        'sum(gpushare_doctor_findings{rule="GL602"}) > 0',
        None,
        1,
        "critical",
        "Pods on one GPU hold more memory than it has (doctor GL602): gpushare doctor names them",
    ),
    Alert(
        "GpushareGpuMemoryZero",
        'sum(gpushare_doctor_findings{rule="GL605"}) > 0',
        None,
        1,
        "critical",
        "A node labelled to share GPUs reports aliyun.com/gpu-mem 0 (doctor GL605): its device plugin is not serving",
    ),
    Alert(
        "GpusharePendingFragmented",
        "gpushare_pending_gpu_pods_fit_after_moves_oldest_seconds > %d",
        "pendingMinutes",
        60,
        "warning",
        "A GPU pod has waited longer than the threshold though it would fit after moving running pods "
        "(fragmentation): gpushare capacity names the moves",
    ),
    Alert(
        "GpushareHeadroomLow",
        "gpushare_template_headroom_replicas < %d",
        "headroomBelow",
        1,
        "warning",
        "Fewer replicas of a template still fit than the threshold: add GPU nodes (gpushare capacity --pool)",
    ),
)


def _alert_rule(ctx: ChartValues, alert: Alert) -> dict[str, Any]:
    expr: Any = alert.expr
    if alert.threshold is not None:
        value = ctx.values["watch"]["alerts"][alert.threshold] * alert.scale
        helm = f'printf "{alert.expr}" (mul .Values.watch.alerts.{alert.threshold} {alert.scale} | int)'
        expr = Expr(helm, alert.expr % value)
    minutes = ctx.values["watch"]["alerts"]["forMinutes"]
    return {
        "alert": alert.name,
        "expr": expr,
        "for": Expr('printf "%dm" (.Values.watch.alerts.forMinutes | int)', f"{minutes}m"),
        "labels": {"severity": alert.severity},
        "annotations": {"summary": alert.summary},
    }


def rule_groups(ctx: ChartValues) -> list[dict[str, Any]]:
    """The PrometheusRule's spec.groups (promtool's rules file, `groups:`)."""
    return [{"name": "gpushare", "rules": [_alert_rule(ctx, a) for a in ALERTS]}]


def _templates(ctx: ChartValues) -> Expr:
    """The templates ConfigMap's data: each template as JSON (toJson in Helm: the same text both ways)."""
    found = ctx.values["watch"]["templates"]
    value = {f"{name}.json": json.dumps(t, sort_keys=True, separators=(",", ":")) for name, t in found.items()}
    return Expr('include "gpushare.watchTemplates" .', value, yaml=True)


TEMPLATES_HELPER = """{{/* watch's templates, one JSON file each (a ConfigMap's data). */}}
{{- define "gpushare.watchTemplates" -}}
{{- range $name, $template := .Values.watch.templates }}
{{ printf "%s.json" $name }}: {{ toJson $template | quote }}
{{- else }}
{}
{{- end }}
{{- end -}}
"""


def objects(ctx: ChartValues) -> dict[str, list[dict[str, Any]]]:
    """Template file -> objects (each file rendered under its `GUARDS` condition)."""
    name = ctx.name(COMPONENT)
    port = ctx.v("watch.port")
    args: list[Any] = [
        "watch",
        Expr('printf "--listen=0.0.0.0:%d" (.Values.watch.port | int)', f"--listen=0.0.0.0:{port.value}"),
        Expr('printf "--pool-label=%s" .Values.watch.poolLabel', f"--pool-label={ctx.values['watch']['poolLabel']}"),
        f"--templates-dir={TEMPLATES_DIR}",
    ]
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 10, "timeoutSeconds": 5}
    ready = {"httpGet": {"path": "/readyz", "port": "metrics"}, "periodSeconds": 5, "timeoutSeconds": 5}
    pod_spec = {
        "serviceAccountName": name,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            container(
                ctx,
                COMPONENT,
                COMPONENT,
                command=["gpushare"],
                args=args,
                ports=[{"name": "metrics", "containerPort": port, "protocol": "TCP"}],
                livenessProbe={**probe, "initialDelaySeconds": 30, "failureThreshold": 6},
                readinessProbe=ready,
                securityContext=RESTRICTED,
                volumeMounts=[{"name": "templates", "mountPath": TEMPLATES_DIR, "readOnly": True}],
            )
        ],
        **scheduling(ctx, COMPONENT),
        "volumes": [{"name": "templates", "configMap": {"name": ctx.name(f"{COMPONENT}-templates")}}],
    }
    selector = {"matchLabels": ctx.selector(COMPONENT)}
    watch = [
        service_account(ctx, name, COMPONENT),
        cluster_role(ctx, name, COMPONENT, WATCH_RULES),
        binding(ctx, name, COMPONENT, "ClusterRole", name, [subject_sa(ctx, name)]),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": ctx.metadata(ctx.name(f"{COMPONENT}-templates"), COMPONENT),
            "data": _templates(ctx),
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": ctx.metadata(name, COMPONENT),
            "spec": {
                "selector": ctx.selector(COMPONENT),
                "ports": [{"name": "metrics", "port": port, "targetPort": "metrics", "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": ctx.workload_metadata(name, COMPONENT),
            "spec": {
                "replicas": 1,
                "selector": selector,
                "template": pod_template(ctx, COMPONENT, pod_spec),
            },
        },
        {  # Prometheus scrapes the metrics port; nothing else reaches the pod
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": ctx.metadata(name, COMPONENT),
            "spec": {
                "podSelector": selector,
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": "metrics", "protocol": "TCP"}]}],
            },
        },
    ]
    monitor_labels = Expr(
        'include "gpushare.labels" (dict "root" . "component" "watch" "version" .Values.watch.image.tag '
        '"extra" .Values.watch.serviceMonitorLabels)',
        {**ctx.labels(COMPONENT).value, **ctx.values["watch"]["serviceMonitorLabels"]},
        yaml=True,
    )
    servicemonitor = {
        "apiVersion": MONITORING,
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": monitor_labels},
        "spec": {
            "selector": {"matchLabels": ctx.selector(COMPONENT)},
            "namespaceSelector": {"matchNames": [ctx.namespace]},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
        },
    }
    rule = {
        "apiVersion": MONITORING,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": monitor_labels},
        "spec": {"groups": rule_groups(ctx)},
    }
    dashboard = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ctx.name(f"{COMPONENT}-dashboard"),
            "namespace": ctx.namespace,
            "labels": Expr(
                'include "gpushare.labels" (dict "root" . "component" "watch" "version" .Values.watch.image.tag '
                '"extra" (dict "grafana_dashboard" "1"))',
                {**ctx.labels(COMPONENT).value, "grafana_dashboard": "1"},
                yaml=True,
            ),
        },
        "data": {"gpushare.json": _literal(json.dumps(DASHBOARD, indent=1, sort_keys=True))},
    }
    return {
        "watch/watch.yaml": watch,
        "watch/dashboard.yaml": [dashboard],
        "watch/servicemonitor.yaml": [servicemonitor],
        "watch/prometheusrule.yaml": [rule],
    }


def _literal(text: str) -> Expr:
    """A text holding `{{` (Grafana's legends) as a Go string literal, which Helm leaves as it is."""
    return Expr(json.dumps(text), text)


def _panel(i: int, title: str, exprs: list[tuple[str, str]], unit: str, kind: str = "timeseries") -> dict[str, Any]:
    return {
        "id": i,
        "type": kind,
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": chr(65 + j), "expr": e, "legendFormat": legend} for j, (e, legend) in enumerate(exprs)],
    }


#: The Grafana dashboard: each panel a PromQL over the metrics watch serves.
DASHBOARD: dict[str, Any] = {
    "title": "GPU sharing (gpushare)",
    "uid": "gpushare-watch",
    "schemaVersion": 39,
    "tags": ["gpushare", "gpu"],
    "time": {"from": "now-6h", "to": "now"},
    "templating": {
        "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}]
    },
    "panels": [
        _panel(
            0,
            "GPU memory allocated, by node",
            [
                (
                    "sum by (node) (gpushare_gpu_memory_allocated_bytes) / sum by (node) (gpushare_gpu_memory_bytes)",
                    "{{node}}",
                )
            ],
            "percentunit",
        ),
        _panel(
            1,
            "Free GPU memory by pool: free, stranded for the templates",
            [
                ("gpushare_pool_gpu_memory_free_bytes", "free {{pool}}"),
                ("gpushare_pool_gpu_memory_stranded_bytes", "stranded {{pool}}"),
            ],
            "bytes",
        ),
        _panel(2, "Fragmentation by pool", [("gpushare_pool_gpu_fragmentation_ratio", "{{pool}}")], "percentunit"),
        _panel(
            3,
            "Headroom by template (replicas that still fit)",
            [("gpushare_template_headroom_replicas", "{{template}}")],
            "short",
        ),
        _panel(
            4,
            "Pending GPU pods by reason; those moves would fit",
            [
                ("gpushare_pending_gpu_pods", "{{reason}}"),
                ("gpushare_pending_gpu_pods_fit_after_moves", "fit after moves"),
            ],
            "short",
        ),
        _panel(5, "doctor's findings by rule", [("gpushare_doctor_findings", "{{rule}} ({{severity}})")], "short"),
        _panel(
            6,
            "Watch: events per second, lag",
            [
                ("sum(rate(gpushare_watch_events_total[5m]))", "events/s"),
                ("gpushare_watch_lag_seconds", "lag (s)"),
            ],
            "short",
        ),
        _panel(
            7,
            "Largest free GPU memory on one GPU, by node",
            [("gpushare_node_gpu_memory_largest_free_bytes", "{{node}}")],
            "bytes",
        ),
    ],
}
