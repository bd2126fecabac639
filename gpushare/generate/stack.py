"""The installer stack for a set of settings: which objects, in which template files, with which config.

Validated settings come in; the component builders are called only for what the settings call for;
the scheduler configuration is resolved here once for both output forms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpushare.domain import products, versions
from gpushare.generate import schedconfig
from gpushare.generate.components import cgpu, device_plugin, rbac, scheduler, watch
from gpushare.generate.template import resolve, text_of
from gpushare.generate.values import ChartValues
from gpushare.settings.model import InstallerSettings


@dataclass(frozen=True)
class SchedulerConfig:
    """The configuration file: its API (None in a universal chart, which picks it at install), its concrete text and
    the same text as a Helm template body."""

    api: str | None
    text: str
    helm: str


@dataclass
class Stack:
    settings: InstallerSettings
    ctx: ChartValues = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = ChartValues(self.settings)

    @property
    def mode(self) -> str:
        return self.settings.scheduler.mode

    @cached_property
    def config(self) -> SchedulerConfig | None:
        """The scheduler configuration, for the version given or (universal chart) for the cluster's at install."""
        if self.mode == products.MANAGED:
            return None
        version = self.settings.version
        api = versions.choose_api(self.settings.scheduler.config_api, version.minor) if version else None
        minor = version.minor if version else None
        obj = schedconfig.configuration(self.ctx, api, self.mode == products.CONTROL_PLANE, minor)
        text, helm = text_of(obj, schedconfig.serialise(api))
        return SchedulerConfig(api, text, helm)

    @cached_property
    def templates(self) -> dict[str, list[dict[str, Any]]]:
        """Template file (relative to templates/) -> the objects in it, with Exprs."""
        ctx = self.ctx
        files: dict[str, list[dict[str, Any]]] = {"device-plugin/device-plugin.yaml": device_plugin.objects(ctx)}
        cgpu_objects = cgpu.objects(ctx)
        if cgpu_objects:
            files["cgpu/cgpu-installer.yaml"] = cgpu_objects
        doctor = rbac.doctor_objects(ctx)
        if doctor:
            files["doctor/rbac.yaml"] = doctor
        if self.mode == products.SECONDARY:
            config = self.config
            assert config is not None
            files["scheduler/scheduler.yaml"] = scheduler.secondary_objects(
                ctx, config.api, config.text if config.api else None
            )
        elif self.mode == products.CONTROL_PLANE:
            files["scheduler/extender-rbac.yaml"] = scheduler.control_plane_objects(ctx)
        files.update(watch.objects(ctx))
        return files

    def guard(self, path: str) -> str | None:
        """The Helm condition a template file is rendered under (None: always)."""
        found = watch.GUARDS.get(path)
        return None if found is None else found[0]

    def in_manifests(self, path: str) -> bool:
        """Whether plain manifests hold a template file's objects: the watch's as the settings enable them, and
        never what needs the cluster's APIs asked (the ServiceMonitor, the PrometheusRule)."""
        found = watch.GUARDS.get(path)
        if found is None:
            return True
        settings = self.settings.watch
        return found[1] and settings.enabled and (path != "watch/dashboard.yaml" or settings.dashboard)

    @property
    def requirements(self) -> dict[str, str]:
        """What the cluster must already run for these settings (managed mode: ACK's own scheduler)."""
        settings = self.settings
        version = settings.version
        if settings.scheduler.mode != products.MANAGED or not settings.compute_allocation:
            return {}
        if version is None:
            table = ", ".join(f"1.{m}: {v}" for m, v in products.ACK_MIN_SCHEDULER_FOR_COMPUTE.items())
            return {"ack-scheduler": f"at least, by cluster minor: {table}"}
        minimum = products.ACK_MIN_SCHEDULER_FOR_COMPUTE.get(version.minor)
        if minimum:
            return {"ack-scheduler": f"at least {minimum}"}
        return {
            "ack-scheduler": f"an ACK 1.{version.minor} release with compute allocation (ACK documents no minimum "
            f"for 1.{version.minor}; its table ends at 1.{max(products.ACK_MIN_SCHEDULER_FOR_COMPUTE)})"
        }

    def objects(self) -> list[dict[str, Any]]:
        """Concrete objects, in Helm's install order."""
        objs = [resolve(o) for path, group in self.templates.items() if self.in_manifests(path) for o in group]
        return sorted(objs, key=install_order)


#: Helm's install order of kinds (helm/pkg/releaseutil/kind_sorter.go), so `kubectl apply` meets dependencies first.
INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)


def install_order(obj: dict[str, Any]) -> tuple[int, str, str]:
    kind = obj.get("kind", "")
    rank = INSTALL_ORDER.index(kind) if kind in INSTALL_ORDER else len(INSTALL_ORDER)
    return rank, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
