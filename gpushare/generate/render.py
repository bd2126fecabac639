"""`render`: settings in, a chart or manifests out; the library entry the CLI is a thin layer over."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from gpushare.domain import labels, products, versions
from gpushare.errors import InputError
from gpushare.generate import controlplane
from gpushare.generate.chart import chart_files
from gpushare.generate.notes import notes
from gpushare.generate.stack import Stack
from gpushare.generate.template import dump_all
from gpushare.output import Plan, write_file, write_tree
from gpushare.policy.engine import Finding
from gpushare.policy.validate import enforce
from gpushare.settings.load import build_settings
from gpushare.settings.model import AT_INSTALL, InstallerSettings
from gpushare.settings.options import BY_NAME

Format = Literal["chart", "manifests"]
FORMATS: tuple[str, ...] = ("chart", "manifests")


@dataclass(frozen=True)
class Rendered:
    """What `render` produced: files by relative path, the concrete objects, and the rule warnings."""

    format: Format
    settings: InstallerSettings
    files: dict[str, str]
    objects: list[dict[str, Any]]
    warnings: list[Finding]
    notes: str
    #: What the cluster must already run (e.g. ACK's scheduler version for compute allocation).
    requirements: dict[str, str]
    #: Where `render(output=...)` wrote, and the backup it kept of what was there (with force).
    written: Plan | None = None

    @property
    def install_values(self) -> list[str]:
        """Values the install must set: the chart refuses to install without them (the device plugin's image, left
        to the install with 128MiB units or compute allocation on ACK)."""
        if not self.settings.plugin_at_install:
            return []
        return ["devicePlugin.image.repository", "devicePlugin.image.tag"]

    @property
    def is_tree(self) -> bool:
        """A chart, or manifests that come with control-plane files, is a directory; else one file."""
        return self.format == "chart" or len(self.files) > 1

    def write(self, output: str | Path, force: bool = False) -> Plan:
        """Write to `output`: a directory for a chart (or manifests with control-plane files), else one file;
        a manifests file named by an existing directory or a path ending in / goes in it as manifests.yaml.
        Refuses (InputError) a target gpushare did not write unless `force`, which keeps it as a backup."""
        if self.is_tree:
            path = Path(output)
            if path.suffix.lower() in (".yaml", ".yml", ".json") and not path.exists() and not path.is_symlink():
                what = "the chart goes" if self.format == "chart" else "manifests.yaml and control-plane/ go"
                raise InputError("--output", str(output), f"a directory name ({what} in it), not a file name")
            return write_tree(output, self.files, force)
        path = Path(output)
        if str(output).endswith(("/", os.sep)) or (path.is_dir() and not path.is_symlink()):
            path = path / "manifests.yaml"
        return write_file(path, self.files["manifests.yaml"], force)


def _refuse_idle(model: InstallerSettings, options: Mapping[str, Any]) -> None:
    """A flag whose setting renders nothing with these settings is refused: the user meant it to do something (an
    extender port with ACK's managed scheduler, which runs no extender of the chart's; cGPU's image with no cGPU
    node mode served)."""
    managed = model.scheduler.mode == products.MANAGED
    for name, value in options.items():
        option = BY_NAME.get(name)
        if option is None:
            continue
        section = option.path[0]
        if managed and (section == "extender" or (section == "scheduler" and option.path[1] not in _ANY_MODE)):
            raise InputError(
                f"--{option.flag}",
                value,
                f"no {section} flag with scheduler mode {products.MANAGED}: ACK's managed scheduler schedules the "
                f"shares, the chart renders no {section} (--scheduler-mode {products.SECONDARY} or "
                f"{products.CONTROL_PLANE} renders one)",
            )
        if section == "cgpu" and not model.isolated_modes:
            raise InputError(
                f"--{option.flag}",
                value,
                f"no cGPU flag without a cGPU node mode served: the chart renders no cGPU installer (--isolation "
                f"{','.join(labels.ISOLATED_MODES)} serves them)",
            )


#: Scheduler settings that mean something in every mode (the mode itself; the API: GS111 warns in managed mode).
_ANY_MODE = ("mode", "configApi")


def render(
    settings: InstallerSettings | Mapping[str, Any] | None = None,
    *,
    format: Format = "chart",
    output: str | Path | None = None,
    config: str | Path | None = None,
    force: bool = False,
    **options: Any,
) -> Rendered:
    """Render the installer stack; with `output`, also write it (atomically).

    `options` are the CLI flags in Python spelling (`kube_version="1.22"`, `profile="open-source"`).
    Raises InputError, with nothing written, on any setting the product does not allow.
    """
    if format not in FORMATS:
        raise InputError("--format", format, "chart or manifests")
    model = build_settings(settings, config=config, **options)
    _refuse_idle(model, options)
    warnings = [f for f in enforce(model) if f.rule.severity == "warning"]
    stack = Stack(model)
    if model.scheduler.mode != products.MANAGED and model.version is None and format == "manifests":
        raise InputError(
            "kubernetesVersion",
            None,
            f"a version ({versions.SUPPORTED} or v1.X.Y) for manifests with scheduler "
            f"mode {model.scheduler.mode}; only a chart can adapt at install time",
        )
    if format == "manifests" and model.plugin_at_install:
        raise InputError(
            "devicePlugin.image.repository",
            AT_INSTALL,
            "an image for manifests (a chart asks for it at install time): --device-plugin-image-repository and "
            f"--device-plugin-image-tag; {model.ack_plugin_need} ACK's own device plugin, which "
            f"{products.ACK_PLUGIN_LOOKUP} shows",
        )
    if format == "manifests" and model.watch.enabled and model.watch.image.repository == AT_INSTALL:
        raise InputError(
            "watch.image.repository",
            AT_INSTALL,
            "gpushare's image for manifests with watch enabled (a chart asks for it at install time): build it from "
            "the Dockerfile in gpushare's repository, push it, and give --watch-image-repository",
        )
    objects = stack.objects()
    if format == "chart":
        files = chart_files(stack)
    else:
        files = {"manifests.yaml": dump_all(objects), **controlplane.files(stack)}
    chart = (str(output) if output is not None else "<chart directory>") if format == "chart" else None
    text = notes(model, stack.requirements, chart=chart)
    rendered = Rendered(format, model, files, objects, warnings, text, stack.requirements)
    if output is not None:
        if format == "chart" and str(output) == "-":
            raise InputError("--output", "-", "a directory for a chart (stdout takes --format manifests)")
        if format == "manifests" and rendered.is_tree and str(output) == "-":
            raise InputError(
                "--output",
                "-",
                "a directory in control-plane mode (manifests.yaml and control-plane/ are written there)",
            )
        if str(output) != "-":
            written = rendered.write(output, force)
            rendered = replace(rendered, written=written)
    return rendered
