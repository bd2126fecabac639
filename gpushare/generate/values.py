"""What every component builder reads: the settings, the chart values and the Helm names for them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpushare import __version__
from gpushare.generate import security
from gpushare.generate.template import Expr
from gpushare.settings.model import InstallerSettings

APP = "gpushare"
#: Settings fixed when the chart is generated; everything else is a chart value a user may override.
STRUCTURAL = (
    "apiVersion",
    "kind",
    "kubernetesVersion",
    "profile",
    "isolation",
    "computeAllocation",
    "region",
    "namespace",
    "releaseName",
)
STRUCTURAL_SCHEDULER = ("mode", "configApi")


def unused_sections(settings: InstallerSettings) -> set[str]:
    """Settings sections no rendered object reads (no scheduler objects in managed mode, no cGPU without isolation)."""
    unused = set()
    if settings.scheduler.mode == "managed":
        unused |= {"scheduler", "extender"}
    if not settings.isolated_modes:
        unused.add("cgpu")
    return unused


def chart_values(settings: InstallerSettings) -> dict[str, Any]:
    """The chart's values: the settings document less what fixes the chart's structure or goes unused."""
    document = settings.document()
    skip = set(STRUCTURAL) | unused_sections(settings)
    values = {k: v for k, v in document.items() if k not in skip}
    if "scheduler" in values:
        values["scheduler"] = {k: v for k, v in values["scheduler"].items() if k not in STRUCTURAL_SCHEDULER}
        version = settings.version
        if version is not None and version.patch is not None and not values["scheduler"]["image"]["tag"]:
            values["scheduler"]["image"] = {**values["scheduler"]["image"], "tag": version.full}
    return values


@dataclass(frozen=True)
class ChartValues:
    settings: InstallerSettings

    @cached_property
    def values(self) -> dict[str, Any]:
        return chart_values(self.settings)

    def v(self, path: str) -> Expr:
        """The chart value at a dotted path."""
        node: Any = self.values
        for part in path.split("."):
            node = node[part]
        return Expr(f".Values.{path}", node)

    @property
    def namespace(self) -> Expr:
        return Expr(".Release.Namespace", self.settings.namespace)

    @property
    def release(self) -> Expr:
        return Expr(".Release.Name", self.settings.release_name)

    def image(self, component: str) -> Expr:
        """The image reference, pinned by digest when one is set (mirrors `gpushare.image` in _helpers.tpl)."""
        return Expr(f'include "gpushare.image" .Values.{component}.image', image_ref(self.values[component]["image"]))

    def selector(self, component: str) -> dict[str, Any]:
        return {
            "app.kubernetes.io/name": APP,
            "app.kubernetes.io/instance": self.release,
            "app.kubernetes.io/component": component,
        }

    def labels(self, component: str) -> dict[str, Any]:
        return {**self.selector(component), "app.kubernetes.io/part-of": APP, "app.kubernetes.io/version": __version__}

    def metadata(
        self,
        name: str,
        component: str,
        namespaced: bool = True,
        namespace: Any = None,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if namespaced:
            meta["namespace"] = self.namespace if namespace is None else namespace
        meta["labels"] = self.labels(component)
        if annotations:
            meta["annotations"] = annotations
        return meta

    def workload_metadata(self, name: str, component: str) -> dict[str, Any]:
        """Metadata of a Deployment or DaemonSet, with the reasons for the privileges it holds."""
        return self.metadata(name, component, annotations=security.skip_annotations(component))


def image_ref(image: dict[str, Any]) -> str:
    if image.get("digest"):
        return f"{image['repository']}@{image['digest']}"
    return f"{image['repository']}:{image['tag']}"
