"""The chart form: Chart.yaml, documented values.yaml, values.schema.json, templates and NOTES.txt.

Templates come from the same object builders as the manifests (`gpushare.generate.template.to_helm`), so a
chart rendered by Helm with its default values equals the manifests object by object.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any, get_args

from pydantic import BaseModel

from gpushare import output
from gpushare.domain import products, versions
from gpushare.domain.kinds import VERSION as __version__
from gpushare.domain.labels import GPU_MEM
from gpushare.domain.products import (
    ACK_PLUGIN_LOOKUP,
    INSTALLER_CHART,
    MIB_PER_UNIT,
    UNIT_1GIB,
    UNIT_128MIB,
    UNIT_GIB,
    UNIT_MIB,
)
from gpushare.generate import controlplane
from gpushare.generate.components import cgpu, watch
from gpushare.generate.notes import components, notes
from gpushare.generate.stack import Stack
from gpushare.generate.template import dump, to_helm
from gpushare.generate.values import CHART_VERSION, STRUCTURAL, STRUCTURAL_SCHEDULER, unused_sections
from gpushare.settings.model import OPEN_SOURCE_PLUGIN, OPEN_SOURCE_PLUGIN_TAG, InstallerSettings, settings_schema

_HELPERS = """{{/* Prefix of every object's name: fullnameOverride, else the release name when it holds the name (nameOverride, default gpushare), else "<release>-<name>". */}}
{{- define "gpushare.fullname" -}}
{{- $name := .Release.Name -}}
{{- $app := .Values.nameOverride | default "gpushare" -}}
{{- if .Values.fullnameOverride -}}{{- $name = .Values.fullnameOverride -}}
{{- else if not (contains $app $name) -}}{{- $name = printf "%s-%s" $name $app -}}{{- end -}}
{{- $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "gpushare.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select a component's pods; never change them (selectors are immutable).
Takes (dict "root" $ "component" NAME ["extra" (dict ...)]). */}}
{{- define "gpushare.selectorLabels" -}}
app.kubernetes.io/name: gpushare
app.kubernetes.io/instance: {{ .root.Release.Name | quote }}
app.kubernetes.io/component: {{ .component }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Every object's labels: the selector labels, the component's version, who manages it.
Takes (dict "root" $ "component" NAME "version" VERSION ["extra" (dict ...)]). */}}
{{- define "gpushare.labels" -}}
{{ include "gpushare.selectorLabels" . }}
app.kubernetes.io/part-of: gpushare
app.kubernetes.io/version: {{ .version | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "gpushare.chart" .root }}
{{- end -}}

{{/* Image reference: pinned by digest when one is set, else repository:tag. */}}
{{- define "gpushare.image" -}}
{{- if .digest -}}{{ .repository }}@{{ .digest }}{{- else -}}{{ .repository }}:{{ .tag }}{{- end -}}
{{- end -}}

{{/* The cluster's minor as a number ("28+" on some managed clusters). */}}
{{- define "gpushare.kubeMinor" -}}
{{- trimSuffix "+" .Capabilities.KubeVersion.Minor | int -}}
{{- end -}}

{{/* kube-scheduler's version: the tag pinned in the values, else the cluster's own version. */}}
{{- define "gpushare.schedulerVersion" -}}
{{- .Values.scheduler.image.tag | default (regexFind "^v[0-9]+\\\\.[0-9]+\\\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- end -}}

{{/* kube-scheduler matches the cluster's version unless a tag or digest is pinned. */}}
{{- define "gpushare.schedulerImage" -}}
{{- $image := .Values.scheduler.image -}}
{{- $tag := include "gpushare.schedulerVersion" . -}}
{{- include "gpushare.image" (dict "repository" $image.repository "tag" $tag "digest" $image.digest) -}}
{{- end -}}
"""


#: `is_open_source_plugin` in a template: the open-source plugin's name and one of its release tags.
_OPEN_SOURCE_TEST = (
    f'and (eq (base .Values.devicePlugin.image.repository) "{OPEN_SOURCE_PLUGIN}") '
    f'(regexMatch "{OPEN_SOURCE_PLUGIN_TAG}" (toString .Values.devicePlugin.image.tag))'
)

#: Compute allocation needs ACK's own plugin, the only one that reports aliyun.com/gpu-core.percentage capacity.
_COMPUTE_GUARD = f"""{{{{- if {_OPEN_SOURCE_TEST} -}}}}
{{{{- fail "compute allocation needs ACK's own device plugin image in devicePlugin.image.repository: the open-source plugin reports no aliyun.com/gpu-core.percentage capacity [GS122]" -}}}}
{{{{- end -}}}}
"""


def _memory_unit_helper(settings: InstallerSettings) -> str:
    """`gpushare.memoryUnitArg`, which every device plugin DaemonSet includes: the device plugin's --memory-unit,
    refusing at install time what `render` refuses (a chart user may set the unit or the image there): an image left
    to the install and not given; 128MiB with the open-source image (GS119) or on core_mem nodes (GS118); with
    compute allocation the open-source image, which reports no gpu-core.percentage (GS122); and on `helm upgrade`
    a unit other than the installed device plugin's (GC411: the unit is chosen at install)."""
    guards = _COMPUTE_GUARD if settings.compute_allocation else ""
    if "core_mem" in settings.isolation:
        guards += _CORE_MEM_GUARD
    sizes = " ".join(f'"{unit}" {mib}' for unit, mib in MIB_PER_UNIT.items())
    return f"""
{{{{/* The device plugin's --memory-unit: 128MiB needs ACK's own plugin image (gpushare rule GS119); the
open-source plugin's word for ACK's 1GiB unit is GiB (it knows GiB and MiB only). On upgrade the unit must stay
the installed plugin's (GC411): pods hold GPU memory counted in it. */}}}}
{{{{- define "gpushare.memoryUnitArg" -}}}}
{guards}{{{{- if not .Values.devicePlugin.image.repository -}}}}
{{{{- fail "devicePlugin.image.repository is empty: set it (and devicePlugin.image.tag or .digest) to the device plugin image to run; {UNIT_128MIB} units and compute allocation on ACK need ACK's own, which {ACK_PLUGIN_LOOKUP} shows" -}}}}
{{{{- end -}}}}
{{{{- $openSource := {_OPEN_SOURCE_TEST} -}}}}
{{{{- if and (eq .Values.gpuMemoryUnit "{UNIT_128MIB}") $openSource -}}}}
{{{{- fail "gpuMemoryUnit {UNIT_128MIB} needs ACK's own device plugin image in devicePlugin.image.repository: the open-source plugin knows {UNIT_GIB} and {UNIT_MIB} only and would report {UNIT_GIB} [GS119]" -}}}}
{{{{- end -}}}}
{{{{- $unit := .Values.gpuMemoryUnit -}}}}
{{{{- if and (eq $unit "{UNIT_1GIB}") $openSource -}}}}{{{{- $unit = "{UNIT_GIB}" -}}}}{{{{- end -}}}}
{{{{- if .Release.IsUpgrade -}}}}
{{{{- $sizes := dict {sizes} -}}}}
{{{{- range (lookup "apps/v1" "DaemonSet" .Release.Namespace "").items -}}}}
{{{{- $labels := .metadata.labels | default dict -}}}}
{{{{- if and (eq (get $labels "app.kubernetes.io/instance") $.Release.Name) (eq (get $labels "app.kubernetes.io/component") "device-plugin") -}}}}
{{{{- range (first .spec.template.spec.containers).command -}}}}
{{{{- if hasPrefix "--memory-unit=" . -}}}}
{{{{- $installed := trimPrefix "--memory-unit=" . -}}}}
{{{{- if ne (toString (get $sizes $installed)) (toString (get $sizes $unit)) -}}}}
{{{{- fail (printf "gpuMemoryUnit %s is not the installed %s: the unit is chosen at install; delete every pod requesting {GPU_MEM}, uninstall, then install with the new unit (or keep it: helm upgrade --reuse-values) [GC411]" $unit $installed) -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
--memory-unit={{{{ $unit }}}}
{{{{- end -}}}}
"""


#: 128MiB units are not supported on core_mem nodes (seed 000): a chart serving them refuses the unit at install.
_CORE_MEM_GUARD = f"""{{{{- if eq .Values.gpuMemoryUnit "{UNIT_128MIB}" -}}}}
{{{{- fail "gpuMemoryUnit {UNIT_128MIB} is not supported on core_mem nodes, which this chart serves [GS118]" -}}}}
{{{{- end -}}}}
"""


def _config_helpers(stack: Stack) -> str:
    """`gpushare.schedulerConfigApi` (the API: fixed, or by the cluster's minor in a universal chart) and
    `gpushare.schedulerConfig` (the configuration file, one body for every API)."""
    config = stack.config
    if config is None or stack.mode != products.SECONDARY:  # control-plane: the configuration is a file
        return ""
    if config.api is not None:
        api = config.api
    else:
        branches = []
        for i, (api_name, minors) in enumerate(_default_apis().items()):
            word = "if" if i == 0 else "else if"
            branches.append(f"{{{{- {word} and (ge $minor {minors[0]}) (le $minor {minors[-1]}) -}}}}{api_name}")
        low, high = versions.MINORS[0], versions.MINORS[-1]
        api = (
            '\n{{- $minor := include "gpushare.kubeMinor" . | int -}}\n'
            + "\n".join(branches)
            + f'\n{{{{- else -}}}}{{{{ fail (printf "gpushare: Kubernetes 1.%d is not supported; '
            f'this chart serves 1.{low}-1.{high}" $minor) }}}}\n{{{{- end -}}}}\n'
        )
    return (
        "\n{{/* The kube-scheduler configuration API for the cluster's minor. */}}\n"
        f'{{{{- define "gpushare.schedulerConfigApi" -}}}}{api}{{{{- end -}}}}\n'
        "\n{{/* The kube-scheduler configuration file. */}}\n"
        f'{{{{- define "gpushare.schedulerConfig" -}}}}\n{config.helm}{{{{ end -}}}}\n'
    )


def _default_apis() -> dict[str, list[int]]:
    """Each default configuration API and the minors it is the default of, in order."""
    result: dict[str, list[int]] = {}
    for minor in versions.MINORS:
        result.setdefault(versions.default_api(minor), []).append(minor)
    return result


def _submodel(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _descriptions(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Dotted path of every setting -> its description in the settings model."""
    result: dict[tuple[str, ...], str] = {}
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        result[path] = info.description or ""
        sub = _submodel(info.annotation)
        if sub is not None:
            result.update(_descriptions(sub, path))
    return result


_DESCRIPTIONS = _descriptions(InstallerSettings)
_KEY_LINE = re.compile(r"^( *)([A-Za-z][\w]*):")


def _documented(values: dict[str, Any]) -> list[str]:
    """values.yaml lines: one dump, each settings key preceded by its description from the settings model."""
    lines: list[str] = []
    stack: list[str] = []
    for line in dump(values).splitlines():
        match = _KEY_LINE.match(line)
        if match:
            depth = len(match.group(1)) // 2
            stack = [*stack[:depth], match.group(2)]
            description = _DESCRIPTIONS.get(tuple(stack))
            if description is not None and len(stack) == depth + 1:
                if depth == 0 and lines:
                    lines.append("")
                lines += [f"{match.group(1)}# {text}" for text in textwrap.wrap(description, 110 - len(match.group(1)))]
        lines.append(line)
    return lines


def values_yaml(stack: Stack) -> str:
    header = [
        f"# Values of the {INSTALLER_CHART} chart generated by gpushare {__version__}.",
        "# Structural settings (profile, Kubernetes version, isolation modes, scheduler mode...) are fixed in",
        "# gpushare-settings.yaml: change them there and run `gpushare render --config gpushare-settings.yaml`.",
        "",
    ]
    return "\n".join(header + _documented(stack.ctx.published)) + "\n"


def values_schema(settings: InstallerSettings) -> dict[str, Any]:
    """values.schema.json: the settings schema less the structural fields, units narrowed to the profile's."""
    schema = settings_schema()
    skip = set(STRUCTURAL) | unused_sections(settings)
    properties = {k: v for k, v in schema["properties"].items() if k not in skip}
    properties["gpuMemoryUnit"] = {**properties["gpuMemoryUnit"], "enum": list(settings.profile_info.memory_units)}
    scheduler = dict(schema["$defs"]["SchedulerSettings"])
    scheduler["properties"] = {k: v for k, v in scheduler["properties"].items() if k not in STRUCTURAL_SCHEDULER}
    defs = {**schema["$defs"], "SchedulerSettings": scheduler}
    return {
        "$schema": schema["$schema"],
        "title": f"{INSTALLER_CHART} values",
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "$defs": defs,
    }


def chart_yaml(stack: Stack) -> dict[str, Any]:
    settings = stack.settings
    version = settings.version
    return {
        "apiVersion": "v2",
        "name": INSTALLER_CHART,
        "description": f"GPU sharing on Kubernetes: {components(settings)} (generated by gpushare, profile "
        f"{settings.profile}, scheduler mode {settings.scheduler.mode}).",
        "type": "application",
        "version": CHART_VERSION,
        "appVersion": __version__,
        "kubeVersion": versions.kube_version_constraint(version),
        "annotations": {
            "gpushare.io/profile": settings.profile,
            "gpushare.io/scheduler-mode": settings.scheduler.mode,
            "gpushare.io/kubernetes-version": version.text if version else f"any ({versions.SUPPORTED})",
            **{f"gpushare.io/requires-{k}": v for k, v in stack.requirements.items()},
        },
    }


def readme(stack: Stack) -> str:
    """The chart's README: what it installs and for which cluster, how to install it, and that it is regenerated
    rather than edited (a chart repository or a reviewer reads this first)."""
    settings, chart = stack.settings, chart_yaml(stack)
    annotations = chart["annotations"]
    facts = [f"profile {settings.profile}", f"scheduler mode {settings.scheduler.mode}"]
    facts += [
        f"Kubernetes {annotations['gpushare.io/kubernetes-version']}",
        f"GPU memory unit {settings.gpu_memory_unit}",
    ]
    return (
        f"# {chart['name']}\n\n{chart['description']}\n\n"
        f"Generated by gpushare {chart['appVersion']} ({', '.join(facts)}) from `gpushare-settings.yaml`. "
        "Regenerate it rather than edit it: `gpushare render --config gpushare-settings.yaml -o <directory>` "
        "(gpushare refuses to overwrite a chart changed since it wrote it).\n\n"
        "## Install and use\n\n```text\n" + notes(settings, stack.requirements, chart=".") + "```\n\n## Values\n\n"
        "`values.yaml` documents every value and its default; `values.schema.json` checks what `--set` gives, so "
        "helm refuses a value the product does not allow. The templates also refuse what the settings rules "
        "refuse (a `[GSxxx]` message names the rule: `gpushare rules GSxxx` explains it).\n"
    )


def chart_files(stack: Stack) -> dict[str, str]:
    """Relative path -> text of every file in the chart directory."""
    files = {
        "Chart.yaml": dump(chart_yaml(stack)),
        "values.yaml": values_yaml(stack),
        "values.schema.json": json.dumps(values_schema(stack.settings), indent=2) + "\n",
        "gpushare-settings.yaml": dump(stack.settings.document()),
        ".helmignore": f"control-plane/\ngpushare-settings.yaml\n{output.MARKER}\n",
        "templates/_helpers.tpl": _HELPERS
        + _memory_unit_helper(stack.settings)
        + (cgpu.ENV_HELPER if stack.settings.isolated_modes else "")
        + watch.TEMPLATES_HELPER
        + _config_helpers(stack),
        "templates/NOTES.txt": notes(stack.settings, stack.requirements, helm=True),
        "README.md": readme(stack),
    }
    for path, objects in stack.templates.items():
        text = "".join("---\n" + to_helm(o) for o in objects)
        guard = stack.guard(path)
        if guard is not None:
            preamble = watch.IMAGE_GUARD if path == "watch/watch.yaml" else ""
            text = f"{{{{- if {guard} }}}}\n{preamble}{text}{{{{- end }}}}\n"
        files[f"templates/{path}"] = text
    files.update(controlplane.files(stack))
    return files
