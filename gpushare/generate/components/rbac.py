"""Least-privilege RBAC: exactly the verbs each upstream program calls (facts sections 4 and 5)."""

from __future__ import annotations

from typing import Any

from gpushare.generate.template import Expr
from gpushare.generate.values import ChartValues

Rule = dict[str, Any]

EXTENDER_RULES: list[Rule] = [
    # informers over nodes, pods and the unhealthy-gpu ConfigMaps; bind patches pod annotations
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]

DEVICE_PLUGIN_RULES: list[Rule] = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "update", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]

#: What `gpushare doctor` and `gpushare snapshot` list (gpushare/live/snapshot.py FILES), and nothing else.
DOCTOR_RULES: list[Rule] = [
    {
        "apiGroups": [""],
        "resources": [
            "nodes",
            "pods",
            "configmaps",
            "namespaces",
            "services",
            "replicationcontrollers",
            "resourcequotas",
        ],
        "verbs": ["get", "list"],
    },
    {"apiGroups": ["apps"], "resources": ["daemonsets", "replicasets", "statefulsets"], "verbs": ["get", "list"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list"]},
]

RBAC = "rbac.authorization.k8s.io"


def service_account(ctx: ChartValues, name: Expr, component: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": ctx.metadata(name, component)}


def cluster_role(ctx: ChartValues, name: Expr, component: str, rules: list[Rule]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": ctx.metadata(name, component, namespaced=False),
        "rules": rules,
    }


def role(ctx: ChartValues, name: Expr, component: str, rules: list[Rule]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": ctx.metadata(name, component), "rules": rules}


def subject_sa(ctx: ChartValues, name: Expr) -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, "namespace": ctx.namespace}


def subject_user(name: str) -> dict[str, Any]:
    return {"kind": "User", "apiGroup": RBAC, "name": name}


def binding(
    ctx: ChartValues,
    name: Expr,
    component: str,
    role_kind: str,
    role_name: Expr | str,
    subjects: list[dict[str, Any]],
    namespace: Any = None,
) -> dict[str, Any]:
    """A ClusterRoleBinding, or a RoleBinding when `namespace` is given (a Role, or a ClusterRole there)."""
    namespaced = namespace is not None
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding" if namespaced else "ClusterRoleBinding",
        "metadata": ctx.metadata(name, component, namespaced=namespaced, namespace=namespace),
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


def doctor_objects(ctx: ChartValues) -> list[dict[str, Any]]:
    """A ServiceAccount that may only read what doctor and snapshot list (`doctor.rbac`)."""
    if not ctx.settings.doctor.rbac:
        return []
    name = ctx.name("doctor")
    return [
        service_account(ctx, name, "doctor"),
        cluster_role(ctx, name, "doctor", DOCTOR_RULES),
        binding(ctx, name, "doctor", "ClusterRole", name, [subject_sa(ctx, name)]),
    ]
