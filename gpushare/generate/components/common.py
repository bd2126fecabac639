"""Pieces every workload shares: container hardening, the pod-spec fields read from a component's values."""

from __future__ import annotations

from typing import Any

from gpushare.generate.template import Expr
from gpushare.generate.values import ChartValues

#: Hardening for containers that need no privilege at all.
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def container(ctx: ChartValues, component: str, name: str, **fields: Any) -> dict[str, Any]:
    """A container of `component`: image, pull policy and resources from its values, then `fields`."""
    return {
        "name": name,
        "image": ctx.image(component),
        "imagePullPolicy": ctx.v(f"{component}.image.pullPolicy"),
        **fields,
        "resources": ctx.v(f"{component}.resources"),
    }


def scheduling(ctx: ChartValues, component: str, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """nodeSelector, tolerations and priority class of a pod: the component's values, fixed labels winning."""
    user = ctx.v(f"{component}.nodeSelector")
    if node_selector:
        pairs = " ".join(f'"{k}" "{v}"' for k, v in node_selector.items())
        selector: Expr = Expr(
            f"mustMergeOverwrite (dict) .Values.{component}.nodeSelector (dict {pairs})",
            {**user.value, **node_selector},
        )
    else:
        selector = user
    return {
        "nodeSelector": selector,
        "tolerations": ctx.v(f"{component}.tolerations"),
        "priorityClassName": ctx.v(f"{component}.priorityClassName"),
    }


def pod_template(
    ctx: ChartValues,
    component: str,
    spec: dict[str, Any],
    annotations: dict[str, Any] | None = None,
    extra_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": ctx.labels(component, extra_labels)}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {**spec, "imagePullSecrets": ctx.v("imagePullSecrets")}}


def deny_ingress(ctx: ChartValues, name: Expr, component: str) -> dict[str, Any]:
    """A NetworkPolicy that admits no ingress to the component's pods: none of them serves other pods."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(name, component),
        "spec": {"podSelector": {"matchLabels": ctx.selector(component)}, "policyTypes": ["Ingress"]},
    }


POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}


def env(**pairs: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in pairs.items()]


NODE_NAME_ENV = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
