"""The GPU-sharing ledger: what a bound pod holds on which GPU, read from the annotations the GPU-sharing scheduler
wrote at bind, with the grammar of the programs that read them back; and the ledger of a whole cluster, as `doctor`
checks it (each node's GPUs and their pods, which device plugin and cGPU installer pods run where, the scheduler
configuration and the installed unit).

The one reader of those annotations (`held`, `assumption`): the dry run charges a running pod by it (its model,
`gpushare.placement.inputs`), `doctor` counts each GPU by it, and `snapshot` keeps what it needs. Two grammars:

- `upstream`, the open-source extender's: `ALIYUN_COM_GPU_MEM_IDX` read by Go's strconv.Atoi (one index; a list, a
  space or a sign-less error names no device, and the pod counts on no GPU), `ALIYUN_COM_GPU_MEM_POD` by Atoi too
  (an error reads 0, a negative value 0): upstream-extender pkg/utils/pod.go GetGPUIDFromAnnotation,
  GetGPUMemoryFromPodAnnotation, pkg/cache/nodeinfo.go (an index the node has no device for counts nowhere); the
  device plugin reads the index and its assume time alike (upstream-plugin pkg/gpu/nvidia/podutils.go).
- `ack`, ACK's scheduler framework plugin: its allocation, JSON of container index -> GPU index -> units (the
  units of all containers on a GPU summed), else the extender's annotations as a pod the old extender placed: a
  POD share Atoi reads without error on the device its index names. As Koordinator reads back what ACK's scheduler
  writes (apis/extension/ack GetPodResourceFromV2, GetPodResourceFromV1, and the transformer that turns them into
  device allocations, reading each GPU index by Atoi); `kubectl inspect gpushare` reads the allocation first too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import yaml

from gpushare.domain import deviceplugins, labels
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.kube.workloads import Workload, read_workload

if TYPE_CHECKING:  # the unit readers load with the ledger's reading, not with every model of a pod
    from gpushare.kube.installed import UnitReading

#: Which program's reading of the annotations: the open-source extender's, or ACK's scheduler's.
Grammar = Literal["upstream", "ack"]
#: What a bound pod holds: (GPU index, units) per GPU, in index order; None: it names no GPU.
Held = tuple[tuple[int, int], ...]

_INT64 = 2**63


def go_atoi(text: object) -> tuple[int, bool]:
    """Go's strconv.Atoi: (value, ok). An optional sign and decimal digits, nothing else (no spaces, no list), within
    a 64-bit int; a syntax error reads 0, a value beyond the range the nearest bound (Atoi's range error), both not
    ok. Callers that ignore the error (`s, _ := strconv.Atoi(value)`) take the value as it is."""
    value = str(text)
    # plain digits, a fleet's every bound pod, skip the pattern
    if not (value.isascii() and value.isdigit()) and not re.fullmatch(r"[+-]?[0-9]+", value):
        return 0, False
    negative = value.startswith("-")
    if len(value.lstrip("+-0")) > 19:  # beyond any int64 (and long enough for Python to refuse to convert)
        return (-_INT64 if negative else _INT64 - 1), False
    number = int(value)
    if number >= _INT64:
        return _INT64 - 1, False
    if number < -_INT64:
        return -_INT64, False
    return number, True


def held(annotations: Mapping[str, Any], grammar: Grammar) -> Held | None:
    """The GPUs a bound pod holds and the units on each, as the grammar's program reads its annotations back."""
    if grammar == "ack":
        read, allocated = _allocation(annotations.get(labels.ANN_ALLOCATION))
        return allocated if read else _ack_v1(annotations)
    raw = annotations.get(labels.ANN_IDX)
    if raw is None:
        return None
    index, ok = go_atoi(raw)
    if not ok or index < 0:
        return None
    share = annotations.get(labels.ANN_POD_MEM)
    units = max(0, go_atoi(share)[0]) if share is not None else 0
    return ((index, units),)


def _allocation(raw: Any) -> tuple[bool, Held | None]:
    """ACK's allocation annotation, JSON of container index -> GPU index -> units (GetPodResourceFromV2): (read,
    what it holds). Not read (missing, empty, not JSON of that shape: a container key or a unit that is no integer):
    the extender's annotations are read instead. Read with a GPU index Atoi refuses: the pod holds none."""
    if not isinstance(raw, str) or not raw:
        return False, None
    try:
        doc = json.loads(raw)
    except ValueError:
        return False, None
    if not isinstance(doc, dict) or not all(go_atoi(k)[1] and isinstance(v, dict) for k, v in doc.items()):
        return False, None
    if not all(isinstance(u, int) and not isinstance(u, bool) for v in doc.values() for u in v.values()):
        return False, None
    units: dict[int, int] = {}
    for devices in doc.values():
        for device, amount in devices.items():
            index, ok = go_atoi(device)
            if not ok:
                return True, None
            units[index] = units.get(index, 0) + max(0, amount)
    return True, tuple(sorted(units.items())) or None


def _ack_v1(annotations: Mapping[str, Any]) -> Held | None:
    """A pod the old extender placed, as ACK's scheduler reads it back (GetPodResourceFromV1): its POD share, which
    Atoi must read, on the device its index names (read by Atoi when the allocation is used)."""
    share, device = annotations.get(labels.ANN_POD_MEM), annotations.get(labels.ANN_IDX)
    if not share or not device:
        return None
    units, ok = go_atoi(share)
    index, index_ok = go_atoi(device)
    if not ok or not index_ok:
        return None
    return ((index, max(0, units)),)  # a negative share gives no device memory back (Koordinator keeps it as read)


def assumption(annotations: Mapping[str, Any], grammar: Grammar) -> tuple[str | None, int | None]:
    """(the assigned flag, the assume time in ns) the device plugin reads: a pod is assumed and not yet allocated
    while the flag is "false"; the time is read by ParseUint (anything else: none)."""
    keys = (labels.ANN_ASSIGNED, labels.ANN_ASSUME_TIME)
    if grammar == "ack" and labels.ANN_ACK_ASSIGNED in annotations:
        keys = (labels.ANN_ACK_ASSIGNED, labels.ANN_ACK_ASSUME_TIME)
    assigned, assumed = (annotations.get(k) for k in keys)
    text = str(assumed) if assumed is not None else ""
    time = int(text) if text.isascii() and text.isdigit() and int(text) < 2**64 else None
    return (None if assigned is None else str(assigned)), time


def placed_by_scheduler(annotations: Mapping[str, Any]) -> bool:
    """Whether a GPU-sharing scheduler annotated the pod at bind (the extender's or ACK's annotations)."""
    return any(str(k).startswith((labels.ANN_PREFIX, labels.ACK_PREFIX)) for k in annotations)


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
    #: The GPUs its annotations name and the units it holds on each (`held`; None: it names none).
    devices: Held | None
    assigned: str | None
    assume_ns: int | None
    #: When it started (status.startTime, else its creation), as the API writes times (RFC 3339, UTC).
    started: str = ""

    @property
    def key(self) -> str:
        return self.workload.key

    @property
    def indices(self) -> tuple[int, ...] | None:
        return None if self.devices is None else tuple(index for index, _ in self.devices)

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
    #: Running pods of any GPU device plugin (gpushare's, ACK's, NVIDIA's, HAMi's): (which plugin, namespace/name).
    device_plugins: list[tuple[str, str]] = field(default_factory=list)

    @property
    def mode(self) -> str | None:
        return self.info.mode

    @property
    def shares(self) -> bool:
        """Labelled to share GPUs: an ACK mode that shares, or the open-source plugin's `gpushare=true`."""
        key, value = labels.OPEN_SOURCE_NODE_LABEL
        return self.info.mode in labels.SHARED_MODES or self.info.labels.get(key) == value

    def held(self) -> dict[int, list[tuple[GpuPod, int]]]:
        """The pods each GPU index holds, with their units there, by their annotations."""
        found: dict[int, list[tuple[GpuPod, int]]] = {}
        for pod in self.pods:
            for index, units in pod.devices or ():
                found.setdefault(index, []).append((pod, units))
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
    #: Whose reading of the annotations (`held`).
    grammar: Grammar = "ack"
    #: The input holds kube-system's pods or DaemonSets: where the plugins and installers run can be told (a
    #: namespace's pods alone cannot say a node runs none).
    agents_read: bool = True
    #: The pods no node holds yet (no spec.nodeName) that have not ended: what doctor asks the never-run rules of.
    waiting: list[Workload] = field(default_factory=list)


def gpu_pod(work: Workload, node: str, grammar: Grammar) -> GpuPod:
    notes = work.annotations
    assigned, assume = assumption(notes, grammar)
    started = str(
        mapping(work.source.obj.get("status")).get("startTime")
        or mapping(work.source.obj.get("metadata")).get("creationTimestamp")
        or ""
    )
    return GpuPod(work, node, held(notes, grammar), assigned, assume, started)


def _agent(ds: dict[str, Any]) -> str | None:
    """ "plugin" for a device plugin DaemonSet, "installer" for a cGPU installer one, else None."""
    spec = mapping(mapping(mapping(ds.get("spec")).get("template")).get("spec"))
    images = " ".join(str(mapping(c).get("image", "")) for c in spec.get("containers") or [])
    from gpushare.kube.installed import daemonset_units

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
    sources: Iterable[Source],
    served: Sequence[str],
    now_ns: int,
    assume_timeout: float = ASSUME_TIMEOUT,
    grammar: Grammar = "ack",
) -> Ledger:
    """The ledger of the objects read (a snapshot's files, or a live read): Nodes, Pods, DaemonSets, ConfigMaps."""
    from gpushare.kube.installed import daemonset_units, node_units

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
    held, waiting = [], []
    for work in pods:
        named = str(work.spec.get("nodeName") or "")
        node = nodes.get(named)
        if node is None:
            if not named:
                waiting.append(work)
            continue
        owner = work.controller
        role = agents.get((work.namespace, owner[2])) if owner is not None and owner[1] == "DaemonSet" else None
        running = mapping(work.source.obj.get("status")).get("phase") == "Running"
        plugin = (
            deviceplugins.family(
                " ".join(work.pod.images), owner[2] if owner else "", {str(k): str(v) for k, v in work.labels.items()}
            )
            if running
            else None
        )
        if plugin is not None:
            node.device_plugins.append((plugin, work.key))
        if role == "plugin" and running:
            node.plugins.append(work.key)
        elif role == "installer" and running:
            node.installers.append(work.key)
            created = str(mapping(work.source.obj.get("metadata")).get("creationTimestamp") or "")
            node.installed = min(filter(None, (node.installed, created)), default="")
        if work.gpu_mem > 0:
            pod = gpu_pod(work, node.info.name, grammar)
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
        grammar,
        agents_read=bool(daemonsets) or any(p.namespace == "kube-system" for p in pods),
        waiting=waiting,
    )
