"""What every component builder reads: the settings, the chart values and the Helm names for them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpushare.domain.kinds import VERSION as __version__
from gpushare.domain.products import INSTALLER_CHART
from gpushare.generate import security
from gpushare.generate.template import Expr
from gpushare.settings.model import InstallerSettings

APP = "gpushare"
#: The ack-ai-installer release whose behaviour the chart reproduces: memory sharing in 1 GiB or 128 MiB units,
#: cGPU memory isolation and compute allocation, which ACK documents from chart 1.2.0 (seed 002).
INSTALLER_BEHAVIOUR = "1.2.0"
#: SemVer: the installer behaviour reproduced, then, as build metadata, the gpushare release that generated it
#: (`1.2.0+gpushare.0.1.0`): version checks such as GC402 read 1.2.0, and the generator stays visible.
CHART_VERSION = f"{INSTALLER_BEHAVIOUR}+gpushare.{__version__}"
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
    "doctor",
)
STRUCTURAL_SCHEDULER = ("mode", "configApi")


def unused_sections(settings: InstallerSettings) -> set[str]:
    """Settings sections no template reads: no scheduler objects in managed mode, the scheduler and extender of
    control-plane mode live in the control-plane files (written at render time), no cGPU without isolation."""
    unused = set()
    if settings.scheduler.mode in ("managed", "control-plane"):
        unused |= {"scheduler", "extender"}
    if not settings.isolated_modes:
        unused.add("cgpu")
    return unused


def chart_values(settings: InstallerSettings, published: bool = True) -> dict[str, Any]:
    """The chart's values: the settings document less what fixes the chart's structure (and, when `published`,
    less the sections no template reads). Unset optional values are listed as null, so values.yaml shows them."""
    document = settings.model_dump(by_alias=True, mode="json")
    skip = set(STRUCTURAL) | (unused_sections(settings) if published else set())
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
        """Every value, the unpublished sections too (control-plane files read them at render time)."""
        return chart_values(self.settings, published=False)

    @cached_property
    def published(self) -> dict[str, Any]:
        """The values of values.yaml: those a template reads."""
        return chart_values(self.settings)

    def v(self, path: str) -> Expr:
        """The chart value at a dotted path; one that values.yaml does not publish enters a template as a constant."""
        node: Any = self.values
        for part in path.split("."):
            node = node[part]
        if path.split(".")[0] not in self.published:  # read at render time (control-plane files), or a constant
            helm = json.dumps(node) if isinstance(node, str) else f'fail "{path} is not a value of this chart"'
            return Expr(helm, node)
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

    def name(self, suffix: str) -> Expr:
        """An object's name: the release's prefix (`gpushare.fullname`) and what the object is."""
        return Expr(f'printf "%s-{suffix}" (include "gpushare.fullname" .)', f"{fullname(self.settings)}-{suffix}")

    def version(self, component: str) -> Expr:
        """The version the component runs: its image tag (kube-scheduler: the cluster's own by default)."""
        if component == "scheduler":
            return Expr('include "gpushare.schedulerVersion" .', scheduler_version(self))
        if component not in COMPONENT_VALUES:  # no image of its own (doctor's access): gpushare's, the chart's app
            return Expr(".Chart.AppVersion", __version__)
        return self.v(f"{COMPONENT_VALUES[component]}.image.tag")

    def selector(self, component: str, extra: dict[str, str] | None = None) -> Expr:
        """The labels that select a component's pods; never changed, as selectors are immutable."""
        value = {
            "app.kubernetes.io/name": APP,
            "app.kubernetes.io/instance": self.settings.release_name,
            "app.kubernetes.io/component": component,
            **(extra or {}),
        }
        return Expr(f'include "gpushare.selectorLabels" {_helper_args(component, extra)}', value, yaml=True)

    def labels(self, component: str, extra: dict[str, str] | None = None) -> Expr:
        """Every object's labels: the selector labels, the component's version, who manages it."""
        version = self.version(component)
        value = {
            **self.selector(component, extra).value,
            "app.kubernetes.io/part-of": APP,
            "app.kubernetes.io/version": version.value,
            "app.kubernetes.io/managed-by": "Helm",
            "helm.sh/chart": f"{INSTALLER_CHART}-{CHART_VERSION}".replace("+", "_"),
        }
        args = _helper_args(component, extra, f"({version.helm})")
        return Expr(f'include "gpushare.labels" {args}', value, yaml=True)

    def metadata(
        self,
        name: Expr,
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

    def workload_metadata(self, name: Expr, component: str) -> dict[str, Any]:
        """Metadata of a Deployment or DaemonSet, with the reasons for the privileges it holds."""
        return self.metadata(name, component, annotations=security.skip_annotations(component))


#: Component -> its section of the values.
COMPONENT_VALUES = {
    "device-plugin": "devicePlugin",
    "cgpu-installer": "cgpu",
    "extender": "extender",
    "scheduler": "scheduler",
    "watch": "watch",
}


def _helper_args(component: str, extra: dict[str, str] | None, version: str | None = None) -> str:
    """The `dict` a labels helper takes: the root context, the component, its version and extra labels."""
    args = f'(dict "root" . "component" "{component}"'
    if version is not None:
        args += f' "version" {version}'
    if extra:
        args += ' "extra" (dict ' + " ".join(f'"{k}" "{v}"' for k, v in extra.items()) + ")"
    return args + ")"


def fullname(settings: InstallerSettings) -> str:
    """Prefix of every object's name (mirrors `gpushare.fullname`): fullnameOverride when set, else the release
    name when it says the name (nameOverride, default gpushare), else `<release>-<name>`; two releases never share a
    cluster-scoped name, and the default release keeps its names."""
    release, app = settings.release_name, settings.name_override or APP
    name = settings.fullname_override or (release if app in release else f"{release}-{app}")
    return name[:40].rstrip("-")


def scheduler_version(ctx: ChartValues) -> str:
    """kube-scheduler's version: the pinned tag, else the cluster's (the chart's `gpushare.schedulerVersion`)."""
    version = ctx.settings.version
    return str(ctx.values["scheduler"]["image"]["tag"]) or (version.full if version else "")


def image_ref(image: dict[str, Any]) -> str:
    if image.get("digest"):
        return f"{image['repository']}@{image['digest']}"
    return f"{image['repository']}:{image['tag']}"
