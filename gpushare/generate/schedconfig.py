"""kube-scheduler configuration for each API: KubeSchedulerConfiguration v1beta1..v1 and the legacy Policy.

The extender stanza is data built once and spelled per API (facts section 6): the same fields in every
`kubescheduler.config.k8s.io` version, `enableHttps` and a timeout in nanoseconds in the Policy file.
"""

from __future__ import annotations

import json
from typing import Any

from gpushare.domain import labels
from gpushare.domain.kubescheduler import rendered_policy_priorities
from gpushare.domain.versions import CONFIG_GROUP, POLICY
from gpushare.generate.template import Expr, dump
from gpushare.generate.values import ChartValues

#: Where the secondary scheduler's pod mounts its ConfigMap, and the file names in it.
CONFIG_DIR = "/etc/gpushare"
CONFIG_FILE = {"yaml": "scheduler-config.yaml", "json": "scheduler-policy.json"}
#: kubeadm's paths on control-plane nodes.
KUBEADM_SCHEDULER_CONF = "/etc/kubernetes/scheduler.conf"
CONTROL_PLANE_FILE = {
    "yaml": "/etc/kubernetes/gpushare-scheduler-config.yaml",
    "json": "/etc/kubernetes/gpushare-scheduler-policy.json",
}


def file_kind(api: str | None) -> str:
    return "json" if api == POLICY else "yaml"


def extender_url(ctx: ChartValues) -> Expr:
    port = ctx.v("extender.port")
    return Expr(
        'printf "http://127.0.0.1:%v/gpushare-scheduler" .Values.extender.port',
        f"http://127.0.0.1:{port.value}/gpushare-scheduler",
    )


def extender_stanza(ctx: ChartValues, api: str | None) -> dict[str, Any]:
    seconds = ctx.v("extender.httpTimeoutSeconds")
    policy = api == POLICY
    timeout = (
        Expr("mul .Values.extender.httpTimeoutSeconds 1000000000", seconds.value * 10**9)
        if policy
        else Expr('printf "%vs" .Values.extender.httpTimeoutSeconds', f"{seconds.value}s")
    )
    return {
        "urlPrefix": extender_url(ctx),
        "filterVerb": "filter",
        "bindVerb": "bind",
        "enableHttps" if policy else "enableHTTPS": False,
        "httpTimeout": timeout,
        "nodeCacheCapable": True,
        "managedResources": [{"name": labels.GPU_MEM, "ignoredByScheduler": False}],
        "ignorable": False,
    }


def api_version(api: str | None) -> Expr:
    """`apiVersion` of a KubeSchedulerConfiguration: the API a minor's chart was rendered for, or, in a universal
    chart, the one the cluster's minor serves (`gpushare.schedulerConfigApi`; `api` is then None)."""
    return Expr(
        f'printf "{CONFIG_GROUP}/%s" (include "gpushare.schedulerConfigApi" .)',
        f"{CONFIG_GROUP}/{api or 'v1'}",
        raw=True,
    )


def configuration(ctx: ChartValues, api: str | None, control_plane: bool, minor: int | None = None) -> dict[str, Any]:
    """The configuration document for `api` (None: chosen at install); a secondary scheduler gets its own name and
    lease."""
    if api == POLICY:
        policy: dict[str, Any] = {"kind": "Policy", "apiVersion": "v1"}
        priorities = rendered_policy_priorities(minor) if minor is not None else None
        if (
            priorities is not None
        ):  # the placement model scores nodes by the same list (scoringprofiles.scoring_profile)
            policy["priorities"] = [{"name": name, "weight": weight} for name, weight in priorities]
        policy["extenders"] = [extender_stanza(ctx, api)]
        return policy
    config: dict[str, Any] = {"apiVersion": api_version(api), "kind": "KubeSchedulerConfiguration"}
    if control_plane:
        config["clientConnection"] = {"kubeconfig": KUBEADM_SCHEDULER_CONF}
        config["leaderElection"] = {"leaderElect": True}
    else:
        name = ctx.v("scheduler.name")
        config["leaderElection"] = {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceName": name,
            "resourceNamespace": ctx.namespace,
        }
        config["profiles"] = [{"schedulerName": name}]
    config["enableProfiling"] = False
    config["extenders"] = [extender_stanza(ctx, api)]
    return config


def serialise(api: str | None) -> Any:
    """The function that writes a configuration of `api` as its file text."""
    if api == POLICY:
        return lambda obj: json.dumps(obj, indent=2) + "\n"
    return dump
