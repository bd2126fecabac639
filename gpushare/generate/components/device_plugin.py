"""Device plugin DaemonSets: one per served node mode on ACK, one on `gpushare=true` nodes upstream."""

from __future__ import annotations

from typing import Any

from gpushare.domain import labels, products
from gpushare.generate.components.common import (
    NODE_NAME_ENV,
    POD_SECURITY,
    container,
    deny_ingress,
    pod_template,
    scheduling,
)
from gpushare.generate.components.rbac import DEVICE_PLUGIN_RULES, binding, cluster_role, service_account, subject_sa
from gpushare.generate.template import Expr
from gpushare.generate.values import ChartValues
from gpushare.settings.model import is_open_source_plugin

NAME = "device-plugin"
KUBELET_DIR = "/var/lib/kubelet/device-plugins"


def daemonset_name(mode: str | None) -> str:
    return NAME if mode is None else f"{NAME}-{mode.replace('_', '-')}"


#: The label that tells the per-mode DaemonSets' pods apart (upstream: the single `gpushare` one).
NODE_MODE_LABEL = "gpushare.io/node-mode"


def node_selectors(ctx: ChartValues) -> dict[str | None, dict[str, str]]:
    """Node mode -> the labels that pick its nodes (None: the single upstream DaemonSet)."""
    if ctx.settings.profile == products.OPEN_SOURCE:
        key, value = labels.OPEN_SOURCE_NODE_LABEL
        return {None: {key: value}}
    return {mode: {labels.SCHEDULE_LABEL: mode} for mode in ctx.settings.isolation}


def daemonset(ctx: ChartValues, mode: str | None, selector: dict[str, str]) -> dict[str, Any]:
    unit = ctx.v("gpuMemoryUnit").value
    if unit == products.UNIT_1GIB and is_open_source_plugin(ctx.settings.device_plugin.image):
        unit = products.UNIT_GIB  # the open-source plugin knows GiB and MiB only (upstream-plugin cmd/nvidia/main.go)
    plugin = container(
        ctx,
        "devicePlugin",
        "device-plugin",
        command=[
            "gpushare-device-plugin-v2",
            "-logtostderr",
            "--v=5",
            Expr('include "gpushare.memoryUnitArg" .', f"--memory-unit={unit}"),
        ],
        env=[NODE_NAME_ENV],
        # Root only to write the kubelet's device-plugin socket directory; nothing else is granted.
        securityContext={
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsUser": 0,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        volumeMounts=[{"name": "device-plugin", "mountPath": KUBELET_DIR}],
    )
    component = "device-plugin"
    spec = {
        "serviceAccountName": ctx.name(NAME),
        "securityContext": POD_SECURITY,
        "containers": [plugin],
        **scheduling(ctx, "devicePlugin", selector),
        "volumes": [{"name": "device-plugin", "hostPath": {"path": KUBELET_DIR, "type": "Directory"}}],
    }
    mode_label = {NODE_MODE_LABEL: mode or "gpushare"}
    template = pod_template(ctx, component, spec, extra_labels=mode_label)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": ctx.workload_metadata(ctx.name(daemonset_name(mode)), component),
        "spec": {
            "selector": {"matchLabels": ctx.selector(component, mode_label)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": template,
        },
    }


def objects(ctx: ChartValues) -> list[dict[str, Any]]:
    name = ctx.name(NAME)
    return [
        service_account(ctx, name, "device-plugin"),
        cluster_role(ctx, name, "device-plugin", DEVICE_PLUGIN_RULES),
        binding(ctx, name, "device-plugin", "ClusterRole", name, [subject_sa(ctx, name)]),
        *(daemonset(ctx, mode, selector) for mode, selector in node_selectors(ctx).items()),
        deny_ingress(ctx, name, "device-plugin"),
    ]
