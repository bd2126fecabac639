"""cGPU installer DaemonSet: loads the cGPU kernel module on `cgpu` and `core_mem` nodes and sets the policy.

The policy is passed only when the settings name one: ACK's documents name no default, so otherwise cGPU keeps
its own.

The one privileged workload of the stack: loading a kernel module and writing /proc/cgpu_km need it.
It talks to no API, so it gets no ServiceAccount token.
"""

from __future__ import annotations

from typing import Any

from gpushare.domain import labels
from gpushare.generate.components.common import (
    NODE_NAME_ENV,
    POD_SECURITY,
    container,
    deny_ingress,
    pod_template,
    scheduling,
)
from gpushare.generate.template import Expr, dump
from gpushare.generate.values import ChartValues

NAME = "cgpu-installer"
POLICY_ENV = "CGPU_POLICY"

#: The installer's env in a chart: CGPU_POLICY only while cgpu.policy holds a value (`0` is a value: a Go template's
#: `if` would take it for unset, so the test is on the value's kind).
ENV_HELPER = (
    "\n{{/* The cGPU installer's env: CGPU_POLICY only when cgpu.policy is set (unset: cGPU's own default). */}}\n"
    '{{- define "gpushare.cgpuEnv" -}}\n'
    + dump([NODE_NAME_ENV])
    + '{{- if not (kindIs "invalid" .Values.cgpu.policy) }}\n'
    f"- name: {POLICY_ENV}\n"
    "  value: {{ toString .Values.cgpu.policy | quote }}\n"
    "{{- end }}\n"
    "{{- end -}}\n"
)


def _env(policy: int | None) -> list[dict[str, Any]]:
    return [NODE_NAME_ENV] + ([] if policy is None else [{"name": POLICY_ENV, "value": str(policy)}])


def objects(ctx: ChartValues) -> list[dict[str, Any]]:
    modes = ctx.settings.isolated_modes
    if not modes:
        return []
    installer = container(
        ctx,
        "cgpu",
        NAME,
        env=Expr('include "gpushare.cgpuEnv" .', _env(ctx.v("cgpu.policy").value), yaml=True),
        securityContext={"privileged": True},
        volumeMounts=[{"name": "modules", "mountPath": "/lib/modules", "readOnly": True}],
    )
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": labels.SCHEDULE_LABEL, "operator": "In", "values": list(modes)}]}
                ]
            }
        }
    }
    spec = {
        "automountServiceAccountToken": False,
        "securityContext": POD_SECURITY,
        "affinity": affinity,
        "containers": [installer],
        **scheduling(ctx, "cgpu"),
        "volumes": [{"name": "modules", "hostPath": {"path": "/lib/modules", "type": "Directory"}}],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": ctx.workload_metadata(ctx.name(NAME), NAME),
            "spec": {
                "selector": {"matchLabels": ctx.selector(NAME)},
                # cGPU upgrades cold (seed 004): every container using cGPU on the node stops first, so a new
                # installer pod starts only when its old one is deleted by hand, never under running containers
                "updateStrategy": {"type": "OnDelete"},
                "template": pod_template(ctx, NAME, spec),
            },
        },
        deny_ingress(ctx, ctx.name(NAME), NAME),
    ]
