"""The scheduler side: the extender and the kube-scheduler that calls it, per scheduler mode.

secondary: a kube-scheduler Deployment with its own schedulerName and the extender as a sidecar that
the scheduler reaches on 127.0.0.1; a NetworkPolicy admits no ingress, so the extender's
unauthenticated HTTP API (and its pprof routes) is not reachable from other pods.
control-plane: RBAC for the extender running inside kubeadm's kube-scheduler static pod (it uses the
scheduler's own kubeconfig, so the binding names the `system:kube-scheduler` user); the static-pod
changes themselves are files (`gpushare.generate.controlplane`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from gpushare.generate import schedconfig
from gpushare.generate.components.common import (
    POD_SECURITY,
    RESTRICTED,
    container,
    deny_ingress,
    env,
    pod_template,
    scheduling,
)
from gpushare.generate.components.rbac import (
    EXTENDER_RULES,
    binding,
    cluster_role,
    role,
    service_account,
    subject_sa,
    subject_user,
)
from gpushare.generate.template import Expr
from gpushare.generate.values import ChartValues

#: The extender's container name in kubeadm's static pod, and the suffix of its RBAC objects' names.
EXTENDER = "gpushare-schd-extender"
SCHEDULER = "scheduler"
CONFIG_MAP = "scheduler-config"
SECURE_PORT = 10259
#: Seconds a stopping scheduler pod gets before SIGKILL (the extender beside it ignores the first SIGTERM).
EXTENDER_GRACE_SECONDS = 5


def config_text(ctx: ChartValues, text: str | None) -> Expr:
    """The configuration file, from the `gpushare.schedulerConfig` helper the chart generator writes."""
    return Expr('include "gpushare.schedulerConfig" .', text or "", literal=True)


def extender_container(ctx: ChartValues, host_network: bool = False, **extra: Any) -> dict[str, Any]:
    """The extender; in a host-network static pod its probe goes to the node's loopback."""
    port = ctx.v("extender.port")
    get: dict[str, Any] = {"path": "/version", "port": port, **({"host": "127.0.0.1"} if host_network else {})}
    probe = {"httpGet": get, "periodSeconds": 10, "timeoutSeconds": 5}
    return container(
        ctx,
        "extender",
        "extender",
        env=env(PORT=Expr("toString .Values.extender.port", str(port.value)), LOG_LEVEL=ctx.v("extender.logLevel")),
        livenessProbe=probe,
        readinessProbe=probe,
        **extra,
    )


def extender_rbac(ctx: ChartValues, subjects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        cluster_role(ctx, ctx.name("schd-extender"), "extender", EXTENDER_RULES),
        binding(ctx, ctx.name("schd-extender"), "extender", "ClusterRole", ctx.name("schd-extender"), subjects),
    ]


def control_plane_objects(ctx: ChartValues) -> list[dict[str, Any]]:
    return extender_rbac(ctx, [subject_user("system:kube-scheduler")])


def secondary_objects(ctx: ChartValues, api: str | None, text: str | None) -> list[dict[str, Any]]:
    """Everything the secondary scheduler needs; `api`/`text` are None for a chart that picks them at install."""
    account = ctx.name(SCHEDULER)
    sa = [subject_sa(ctx, account)]
    name = ctx.v("scheduler.name")
    kind = schedconfig.file_kind(api) if api else "yaml"
    lease_rules: list[dict[str, Any]] = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [name],
            "verbs": ["get", "update"],
        },
    ]
    if kind == "json":
        command: list[Any] = [
            "kube-scheduler",
            f"--policy-config-file={schedconfig.CONFIG_DIR}/{schedconfig.CONFIG_FILE['json']}",
            Expr('printf "--scheduler-name=%s" .Values.scheduler.name', f"--scheduler-name={name.value}"),
            "--leader-elect=true",
            "--profiling=false",
            "--leader-elect-resource-lock=leases",
            Expr(
                'printf "--leader-elect-resource-name=%s" .Values.scheduler.name',
                f"--leader-elect-resource-name={name.value}",
            ),
            Expr(
                'printf "--leader-elect-resource-namespace=%s" .Release.Namespace',
                f"--leader-elect-resource-namespace={ctx.settings.namespace}",
            ),
        ]
    else:
        command = ["kube-scheduler", f"--config={schedconfig.CONFIG_DIR}/{schedconfig.CONFIG_FILE['yaml']}"]
    probe = {
        "httpGet": {"path": "/healthz", "port": SECURE_PORT, "scheme": "HTTPS"},
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "timeoutSeconds": 5,
    }
    checksum = Expr(
        'include "gpushare.schedulerConfig" . | sha256sum', hashlib.sha256((text or "").encode()).hexdigest()
    )
    pod_spec = {
        # the upstream extender ignores the first SIGTERM (facts section 4): without a short grace period every
        # rollout of this pod waits the default 30 s for the kill
        "terminationGracePeriodSeconds": EXTENDER_GRACE_SECONDS,
        "serviceAccountName": account,
        "securityContext": {"runAsNonRoot": True, **POD_SECURITY},
        "containers": [
            container(
                ctx,
                "scheduler",
                "kube-scheduler",
                command=command,
                ports=[{"name": "https", "containerPort": SECURE_PORT, "protocol": "TCP"}],
                livenessProbe=probe,
                readinessProbe=probe,
                securityContext=RESTRICTED,
                volumeMounts=[{"name": "config", "mountPath": schedconfig.CONFIG_DIR, "readOnly": True}],
            ),
            extender_container(ctx, securityContext=RESTRICTED),
        ],
        **scheduling(ctx, "scheduler"),
        "volumes": [{"name": "config", "configMap": {"name": ctx.name(CONFIG_MAP)}}],
    }
    pod_spec["containers"][0]["image"] = Expr('include "gpushare.schedulerImage" .', scheduler_image(ctx))
    return [
        service_account(ctx, account, "scheduler"),
        *extender_rbac(ctx, sa),
        binding(ctx, ctx.name(f"{SCHEDULER}-kube-scheduler"), "scheduler", "ClusterRole", "system:kube-scheduler", sa),
        binding(
            ctx, ctx.name(f"{SCHEDULER}-volume-scheduler"), "scheduler", "ClusterRole", "system:volume-scheduler", sa
        ),
        binding(
            ctx,
            ctx.name(f"{SCHEDULER}-auth-reader"),
            "scheduler",
            "Role",
            "extension-apiserver-authentication-reader",
            sa,
            namespace="kube-system",
        ),
        role(ctx, ctx.name(f"{SCHEDULER}-leader-election"), "scheduler", lease_rules),
        binding(
            ctx,
            ctx.name(f"{SCHEDULER}-leader-election"),
            "scheduler",
            "Role",
            ctx.name(f"{SCHEDULER}-leader-election"),
            sa,
            namespace=ctx.namespace,
        ),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": ctx.metadata(ctx.name(CONFIG_MAP), "scheduler"),
            "data": {schedconfig.CONFIG_FILE[kind]: config_text(ctx, text)},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": ctx.workload_metadata(account, "scheduler"),
            "spec": {
                "replicas": ctx.v("scheduler.replicas"),
                "selector": {"matchLabels": ctx.selector("scheduler")},
                "template": pod_template(ctx, "scheduler", pod_spec, annotations={"checksum/config": checksum}),
            },
        },
        deny_ingress(ctx, account, "scheduler"),
    ]


def scheduler_image(ctx: ChartValues) -> str:
    """kube-scheduler at the cluster's own version unless a tag or digest is pinned (mirrors the helper)."""
    image = ctx.values["scheduler"]["image"]
    version = ctx.settings.version
    if image.get("digest"):
        return f"{image['repository']}@{image['digest']}"
    tag = image["tag"] or (version.full if version else "")
    return f"{image['repository']}:{tag}"
