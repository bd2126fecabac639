"""What a cluster has installed now, read from its objects: the GPU memory unit and the helm release.

The unit switch guard (GC411) must not depend on one DaemonSet name: a release may call its plugin anything, a
cluster may run two plugins, and reading DaemonSets may be denied. So the unit is read from three witnesses,
each naming where it was read: device plugin containers (`--memory-unit=`), the deployed helm release's values
(`gpuMemoryUnit`), and what the nodes report (aliyun.com/gpu-mem per GPU against the GPU's memory in MiB from
ACK's `aliyun.accelerator/nvidia_mem` or NVIDIA GPU feature discovery's `nvidia.com/gpu.memory`).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpushare.domain.products import INSTALLER_CHART, MIB_PER_UNIT, UNIT_128MIB, UNIT_GIB, UNIT_MIB, served_scheduler
from gpushare.errors import listed
from gpushare.kube.fields import mapping
from gpushare.kube.nodes import NodeInfo

#: Node labels that give one GPU's memory in MiB ("16160MiB" on ACK, "16384" from GPU feature discovery).
GPU_MEMORY_LABELS: tuple[str, ...] = ("aliyun.accelerator/nvidia_mem", "nvidia.com/gpu.memory")
#: Helm 3 keeps each release revision in a Secret with these labels (helm pkg/storage/driver/secrets.go).
HELM_SECRET_SELECTOR = "owner=helm,status=deployed"
#: The device plugin's flag (upstream-plugin cmd/nvidia/main.go); ACK's plugin takes the same.
_UNIT_FLAG = re.compile(r"^--memory-unit=(\S+)$")
#: Per-GPU readings a unit can give without a memory label: below 32 only GiB (a 4 GiB GPU is 32 x 128MiB),
#: from 2048 only MiB (no GPU reaches 2048 GiB); in between GiB and 128MiB overlap.
_GIB_BELOW, _MIB_FROM = 32, 2048


@dataclass(frozen=True)
class UnitReading:
    """One witness of the installed unit: the unit as written there, and where it was read."""

    unit: str
    where: str

    @property
    def mib(self) -> int | None:
        """MiB in one unit; `1GiB` and `GiB` are the same unit. None: a word no plugin knows."""
        return MIB_PER_UNIT.get(self.unit)


@dataclass(frozen=True)
class Release:
    """A deployed helm release of the installer chart, with its effective values (chart defaults + overrides)."""

    name: str
    namespace: str
    chart: str
    chart_version: str
    values: dict[str, Any]

    @property
    def where(self) -> str:
        return f"helm release {self.namespace}/{self.name} ({self.chart} {self.chart_version})"

    @property
    def unit(self) -> UnitReading | None:
        unit = self.values.get("gpuMemoryUnit")
        return UnitReading(str(unit), f"{self.where} values") if unit else None

    @property
    def scheduler_name(self) -> str:
        scheduler = mapping(self.values.get("scheduler"))
        return served_scheduler(str(scheduler.get("mode")), str(scheduler.get("name") or "") or None)


def daemonset_units(daemonsets: Iterable[dict[str, Any]]) -> list[UnitReading]:
    """Every container, of every DaemonSet, that passes --memory-unit: the device plugins, whatever their names."""
    found = []
    for ds in daemonsets:
        meta = mapping(ds.get("metadata"))
        where = f"DaemonSet {meta.get('namespace', '')}/{meta.get('name', '')}"
        pod_spec = mapping(mapping(mapping(ds.get("spec")).get("template")).get("spec"))
        for container in pod_spec.get("containers") or []:
            for arg in [*(mapping(container).get("command") or []), *(mapping(container).get("args") or [])]:
                match = _UNIT_FLAG.match(str(arg))
                if match:
                    found.append(UnitReading(match.group(1), where))
    return found


def _gpu_mib(node: NodeInfo) -> int | None:
    for label in GPU_MEMORY_LABELS:
        match = re.match(r"^(\d+)(MiB)?$", node.labels.get(label, ""))
        if match:
            return int(match.group(1))
    return None


def node_unit(node: NodeInfo) -> str | None:
    """The unit a node's device plugin reports in, or None when its numbers cannot tell.

    A plugin reports floor(GPU MiB / MiB per unit) per GPU (upstream-plugin nvidia.go), so with the GPU's memory
    known the unit is the one that gives the reported number; without it only the unambiguous ranges count."""
    if not node.gpu_mem or not node.gpu_count:
        return None
    per_gpu = node.gpu_mem // node.gpu_count
    mib = _gpu_mib(node)
    if mib is not None:
        for unit in (UNIT_GIB, UNIT_128MIB, UNIT_MIB):
            if abs(mib // MIB_PER_UNIT[unit] - per_gpu) <= max(1, per_gpu // 100):
                return unit
        return None
    if per_gpu < _GIB_BELOW:
        return UNIT_GIB
    return UNIT_MIB if per_gpu >= _MIB_FROM else None


def node_units(nodes: Iterable[NodeInfo]) -> tuple[list[UnitReading], list[str]]:
    """The units the GPU nodes report, one reading per unit (naming up to three nodes), and the nodes that
    could not tell."""
    by_unit: dict[str, list[str]] = {}
    unknown = []
    for node in nodes:
        if not node.gpu_mem:
            continue
        unit = node_unit(node)
        if unit is None:
            unknown.append(node.name)
        else:
            by_unit.setdefault(unit, []).append(node.name)
    readings = []
    for unit, names in by_unit.items():
        shown = listed(names, 3)
        readings.append(UnitReading(unit, f"aliyun.com/gpu-mem capacity of nodes {shown}"))
    return readings, unknown


def _merged(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    result = dict(defaults)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merged(result[key], value)
        else:
            result[key] = value
    return result


def helm_release(secret: dict[str, Any]) -> Release | None:
    """A helm 3 release Secret of the installer chart, decoded; None for other charts or an unreadable payload.

    The payload is base64 of gzip'd JSON (helm pkg/storage/driver/util.go), inside the Secret's own base64."""
    raw = mapping(secret.get("data")).get("release")
    if not isinstance(raw, str):
        return None
    try:
        payload = base64.b64decode(base64.b64decode(raw))
        if payload[:3] == b"\x1f\x8b\x08":
            payload = gzip.decompress(payload)
        release = json.loads(payload)
    except (binascii.Error, OSError, EOFError, ValueError):
        return None
    chart = mapping(mapping(release).get("chart"))
    meta = mapping(chart.get("metadata"))
    if meta.get("name") != INSTALLER_CHART:
        return None
    values = _merged(mapping(chart.get("values")), mapping(release.get("config")))
    return Release(
        str(release.get("name", "")),
        str(release.get("namespace", "")),
        str(meta.get("name")),
        str(meta.get("version", "")),
        values,
    )
