"""The GPU-sharing ledger of a cluster, as `doctor` checks it: each node's GPUs and what the pods bound there hold
on each (the extender's annotations), which device plugin and cGPU installer pods run where, and the cluster's
scheduler configuration and installed unit.

The ledger is the extender's own: a bound pod that asks `aliyun.com/gpu-mem` holds `ALIYUN_COM_GPU_MEM_POD` units
on each GPU `ALIYUN_COM_GPU_MEM_IDX` names (the extender's cache, pkg/cache/nodeinfo.go, rebuilt from these
annotations when it restarts), so what the annotations say is what the next bind sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpushare.domain import labels
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.kube.installed import UnitReading, daemonset_units, node_units
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.kube.workloads import Workload, read_workload

#: How long a pod may stay assumed (`ALIYUN_COM_GPU_MEM_ASSIGNED=false`) before doctor reports it: the kubelet asks
#: the device plugin to allocate within seconds of the bind. Neither the extender nor the plugin expires one.
ASSUME_TIMEOUT = 300.0
#: Pods that ended hold nothing.
_FINISHED = ("Succeeded", "Failed")
#: A device plugin's container: it takes `--memory-unit=` (upstream-plugin cmd/nvidia/main.go), or runs its image.
_PLUGIN_IMAGE = re.compile(r"gpushare-(device-)?plugin|k8s-gpushare-plugin")
_CGPU_IMAGE = re.compile(r"cgpu-installer|cgpu-install")


@dataclass
class GpuPod:
    """A bound pod that asks GPU memory, as the ledger reads it."""

    workload: Workload
    node: str
    #: The GPU indices its annotation names (None: no annotation, or one that is no list of indices).
    indices: tuple[int, ...] | None
    #: Units it holds on each of them (`ALIYUN_COM_GPU_MEM_POD`, else its request shared over its GPUs).
    per_gpu: int
    assigned: str | None
    assume_ns: int | None
    #: When it started (status.startTime, else its creation), as the API writes times (RFC 3339, UTC).
    started: str = ""

    @property
    def key(self) -> str:
        return self.workload.key

    @property
    def scheduler_name(self) -> str:
        return str(self.workload.spec.get("schedulerName") or "default-scheduler")


@dataclass
class GpuNode:
    """A node that reports GPU memory or is labelled to share GPUs, with the pods and agents on it."""

    info: NodeInfo
    pods: list[GpuPod] = field(default_factory=list)
    #: Running pods of device plugin DaemonSets, and of cGPU installer DaemonSets (namespace/name).
    plugins: list[str] = field(default_factory=list)
    installers: list[str] = field(default_factory=list)
    #: When the first running cGPU installer pod here was created (RFC 3339), "" without one.
    installed: str = ""

    @property
    def mode(self) -> str | None:
        return self.info.mode

    @property
    def shares(self) -> bool:
        """Labelled to share GPUs: an ACK mode that shares, or the open-source plugin's `gpushare=true`."""
        key, value = labels.OPEN_SOURCE_NODE_LABEL
        return self.info.mode in labels.SHARED_MODES or self.info.labels.get(key) == value

    def held(self) -> dict[int, list[GpuPod]]:
        """The pods each GPU index holds, by their annotations."""
        found: dict[int, list[GpuPod]] = {}
        for pod in self.pods:
            for index in pod.indices or ():
                found.setdefault(index, []).append(pod)
        return found


@dataclass
class Ledger:
    nodes: dict[str, GpuNode]
    pods: list[GpuPod]
    #: The spec.schedulerName values a GPU-sharing scheduler serves (the extender's secondary scheduler, or the
    #: default scheduler ACK's extends).
    served: frozenset[str]
    now_ns: int
    assume_timeout: float = ASSUME_TIMEOUT
    #: Scheduler configurations found in ConfigMaps: (where, kind, apiVersion).
    scheduler_configs: list[tuple[str, str, str]] = field(default_factory=list)
    #: The unit each device plugin DaemonSet passes, and the units the nodes' numbers give.
    plugin_units: list[UnitReading] = field(default_factory=list)
    node_units: list[UnitReading] = field(default_factory=list)


def _int(text: Any) -> int | None:
    return int(str(text)) if text is not None and re.fullmatch(r"\d+", str(text)) else None


def _indices(text: Any) -> tuple[int, ...] | None:
    words = str(text or "").split(",")
    return tuple(int(w) for w in words) if text is not None and all(re.fullmatch(r"\d+", w) for w in words) else None


def gpu_pod(work: Workload, node: str) -> GpuPod:
    notes = work.annotations
    indices = _indices(notes.get(labels.ANN_IDX))
    share = _int(notes.get(labels.ANN_POD_MEM))
    spans = max(len(indices), 1) if indices else max(work.gpu_count, 1)
    per_gpu = share if share is not None else work.gpu_mem // spans
    assume = _int(notes.get(f"{labels.ANN_PREFIX}ASSUME_TIME"))
    assigned = notes.get(f"{labels.ANN_PREFIX}ASSIGNED")
    started = str(
        mapping(work.source.obj.get("status")).get("startTime")
        or mapping(work.source.obj.get("metadata")).get("creationTimestamp")
        or ""
    )
    return GpuPod(work, node, indices, per_gpu, None if assigned is None else str(assigned), assume, started)


def _agent(ds: dict[str, Any]) -> str | None:
    """ "plugin" for a device plugin DaemonSet, "installer" for a cGPU installer one, else None."""
    spec = mapping(mapping(mapping(ds.get("spec")).get("template")).get("spec"))
    images = " ".join(str(mapping(c).get("image", "")) for c in spec.get("containers") or [])
    if daemonset_units([ds]) or _PLUGIN_IMAGE.search(images):
        return "plugin"
    name = str(mapping(ds.get("metadata")).get("name", ""))
    if _CGPU_IMAGE.search(images) or "cgpu-installer" in name:
        return "installer"
    return None


def scheduler_configs(src: Source) -> list[tuple[str, str, str]]:
    """The scheduler configurations a ConfigMap holds (a KubeSchedulerConfiguration, or a Policy file)."""
    found = []
    meta = mapping(src.obj.get("metadata"))
    for key, text in mapping(src.obj.get("data")).items():
        if "KubeSchedulerConfiguration" not in str(text) and "Policy" not in str(text):
            continue
        try:
            doc = yaml.safe_load(str(text))
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and doc.get("kind") in ("KubeSchedulerConfiguration", "Policy"):
            where = f"ConfigMap {meta.get('namespace', '')}/{meta.get('name', '')} {key}"
            found.append((where, str(doc.get("kind")), str(doc.get("apiVersion", ""))))
    return found


def read_ledger(
    sources: Iterable[Source], served: Sequence[str], now_ns: int, assume_timeout: float = ASSUME_TIMEOUT
) -> Ledger:
    """The ledger of the objects read (a snapshot's files, or a live read): Nodes, Pods, DaemonSets, ConfigMaps."""
    infos: list[NodeInfo] = []
    agents: dict[tuple[str, str], str] = {}
    pods: list[Workload] = []
    configs: list[tuple[str, str, str]] = []
    daemonsets = []
    for src in sources:
        kind = src.kind
        if kind == "Node":
            info = read_node(src)
            if info is not None:
                infos.append(info)
        elif kind == "Pod":
            work = read_workload(src)
            phase = mapping(src.obj.get("status")).get("phase")
            if work is not None and phase not in _FINISHED:
                pods.append(work)
        elif kind == "DaemonSet":
            daemonsets.append(src.obj)
            role = _agent(src.obj)
            meta = mapping(src.obj.get("metadata"))
            if role:
                agents[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = role
        elif kind == "ConfigMap":
            configs += scheduler_configs(src)
    key, value = labels.OPEN_SOURCE_NODE_LABEL
    nodes = {
        n.name: GpuNode(n)
        for n in infos
        if n.gpu_mem > 0 or n.mode in labels.SHARED_MODES or n.labels.get(key) == value
    }
    held = []
    for work in pods:
        node = nodes.get(str(work.spec.get("nodeName") or ""))
        if node is None:
            continue
        owner = work.controller
        role = agents.get((work.namespace, owner[2])) if owner is not None and owner[1] == "DaemonSet" else None
        running = mapping(work.source.obj.get("status")).get("phase") == "Running"
        if role == "plugin" and running:
            node.plugins.append(work.key)
        elif role == "installer" and running:
            node.installers.append(work.key)
            created = str(mapping(work.source.obj.get("metadata")).get("creationTimestamp") or "")
            node.installed = min(filter(None, (node.installed, created)), default="")
        if work.gpu_mem > 0:
            pod = gpu_pod(work, node.info.name)
            node.pods.append(pod)
            held.append(pod)
    readings, _ = node_units(infos)
    return Ledger(
        nodes,
        held,
        frozenset(served),
        now_ns,
        assume_timeout,
        configs,
        daemonset_units(daemonsets),
        readings,
    )
