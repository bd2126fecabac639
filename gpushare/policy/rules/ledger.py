"""Rules on a live cluster's GPU-sharing ledger (`gpushare doctor`): what the pods bound to each GPU hold by the
extender's annotations, the device plugin and cGPU installer pods each node needs, the scheduler configuration
the cluster's minor serves, and a unit switch half done. Each rule reads one pod (`gpu-pod`), one node
(`gpu-node`) or the whole ledger (`ledger`); the ledger itself is in the facts (`ClusterFacts.ledger`), read by
`gpushare.kube.ledger`, the one reader of those annotations."""

from __future__ import annotations

from collections.abc import Iterable

from gpushare.domain import deviceplugins, labels, sources, versions
from gpushare.errors import listed
from gpushare.kube.ledger import GpuNode, GpuPod, Ledger, placed_by_scheduler
from gpushare.policy.engine import ClusterFacts, Offence, Rule

_ANN = labels.ANN_PREFIX


def _ledger(ctx: ClusterFacts) -> Ledger:
    assert ctx.ledger is not None  # the ledger rules run where a ledger was read (`doctor`)
    return ctx.ledger


def _placed_by_extender(pod: GpuPod) -> bool:
    return placed_by_scheduler(pod.workload.annotations)


def _index(pod: GpuPod, ctx: ClusterFacts) -> Iterable[Offence]:
    if not _placed_by_extender(pod):
        return  # GL604's
    allocated = _ledger(ctx).grammar == "ack" and labels.ANN_ALLOCATION in pod.workload.annotations
    key = labels.ANN_ALLOCATION if allocated else labels.ANN_IDX
    field = f"metadata.annotations.{key}"
    raw = pod.workload.annotations.get(key)
    node = _ledger(ctx).nodes[pod.node].info
    if pod.indices is None:
        yield field, raw, "the GPU index the extender wrote at bind: without it the pod is counted on no GPU"
    elif node.gpu_count and any(not 0 <= i < node.gpu_count for i in pod.indices):
        yield field, raw, f"GPUs node {pod.node} has (0-{node.gpu_count - 1})"


def _unplaced(pod: GpuPod, ctx: ClusterFacts) -> Iterable[Offence]:
    if _placed_by_extender(pod):
        return
    served = sorted(_ledger(ctx).served)
    if pod.scheduler_name not in served:
        yield "spec.schedulerName", pod.scheduler_name, f"a scheduler GPU sharing serves ({', '.join(served)})"
    else:
        yield (
            "metadata.annotations",
            f"none of {_ANN}* on node {pod.node}",
            "the annotations the extender writes at bind: without them no GPU-sharing scheduler placed the pod (its "
            "spec.nodeName preset, or a scheduler without the extender), and it holds memory on no GPU",
        )


def _assumed(pod: GpuPod, ctx: ClusterFacts) -> Iterable[Offence]:
    ledger = _ledger(ctx)
    if pod.assigned != "false" or pod.assume_ns is None:
        return
    age = (ledger.now_ns - pod.assume_ns) / 1e9
    if age > ledger.assume_timeout:
        yield (
            f"metadata.annotations.{_ANN}ASSIGNED",
            f"false, assumed {age:.0f} s ago",
            f"allocated by the device plugin within {ledger.assume_timeout:.0f} s of the bind",
        )


def _double(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    info = node.info
    if not info.gpu_count:
        return
    per_gpu = info.gpu_mem // info.gpu_count
    for index, pods in sorted(node.held().items()):
        total = sum(units for _, units in pods)
        if total > per_gpu and len(pods) > 1:
            held = " + ".join(f"{p.key} ({units})" for p, units in pods)
            yield f"GPU {index}", f"{held} = {total}", f"at most {per_gpu} units on one GPU"


def _capacity(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    info = node.info
    if node.shares and info.gpu_mem <= 0:
        yield (
            f"status.capacity.{labels.GPU_MEM}",
            info.gpu_mem,
            "the GPU memory the device plugin reports (0: no plugin reports it, or kubelet refused its list)",
        )


def _no_plugin(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    if node.shares and not node.plugins:
        yield "pods", "no device plugin pod running", f"a running device plugin pod on a node labelled {_label(node)}"


def _label(node: GpuNode) -> str:
    if node.info.mode:
        return f"{labels.SCHEDULE_LABEL}={node.info.mode}"
    return "=".join(labels.OPEN_SOURCE_NODE_LABEL)


def _stray_plugin(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    if node.plugins and not node.shares:
        yield (
            f"metadata.labels.{labels.SCHEDULE_LABEL}",
            node.info.mode,
            f"a mode that shares ({', '.join(labels.SHARED_MODES)}) or {'='.join(labels.OPEN_SOURCE_NODE_LABEL)} "
            f"where a device plugin runs ({listed(node.plugins, 3)})",
        )


def _two_plugins(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    if len(node.device_plugins) > 1:
        found = "; ".join(f"{pod} ({plugin})" for plugin, pod in node.device_plugins)
        yield "pods", found, deviceplugins.fix({plugin for plugin, _ in node.device_plugins})


def _no_installer(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    if node.info.mode in labels.ISOLATED_MODES and not node.installers:
        yield "pods", "no cGPU installer pod running", f"a running cGPU installer pod on a {node.info.mode} node"


def _both_resources(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    whole = node.info.other.get("nvidia.com/gpu", 0)
    if whole > 0 and node.info.gpu_mem > 0:
        yield (
            "status.allocatable.nvidia.com/gpu",
            whole,
            f"0 on a node sharing its GPUs ({labels.GPU_MEM} {node.info.gpu_mem}): a pod asking a whole GPU would be "
            "given one the shared pods use",
        )


def _before_isolation(node: GpuNode, ctx: ClusterFacts) -> Iterable[Offence]:
    if node.info.mode not in labels.ISOLATED_MODES or not node.installed:
        return
    early = [p.key for p in node.pods if p.started and p.started < node.installed]
    if early:
        yield (
            "pods",
            f"{listed(early, 5)} started before the cGPU installer ({node.installed})",
            f"GPU pods started under the {node.info.mode} mode's isolation: created again after the installer ran",
        )


def _scheduler_config(ledger: Ledger, ctx: ClusterFacts) -> Iterable[Offence]:
    minor = ctx.kube_minor
    if minor is None:
        return
    served = versions.served_apis(minor)
    for where, kind, api_version in ledger.scheduler_configs:
        api = versions.POLICY if kind == "Policy" else api_version.rpartition("/")[2]
        if api not in served:
            yield where, f"{kind} {api_version or api}", f"an API Kubernetes 1.{minor} serves: {', '.join(served)}"


def _unit_split(ledger: Ledger, ctx: ClusterFacts) -> Iterable[Offence]:
    holding = [p.key for p in ledger.pods]
    mibs = {r.mib for r in [*ledger.plugin_units, *ledger.node_units] if r.mib is not None}
    if holding and len(mibs) > 1:
        said = "; ".join(f"{r.unit} ({r.where})" for r in [*ledger.plugin_units, *ledger.node_units])
        yield (
            "gpuMemoryUnit",
            said,
            f"one unit everywhere while pods hold GPU memory (delete them, then reinstall): {listed(holding, 10)}",
        )


_EXTENDER = sources.section(sources.EXTENDER, "pkg/cache/nodeinfo.go, pkg/utils/pod.go (the bind's annotations)")

RULES: tuple[Rule, ...] = (
    Rule(
        "GL601",
        "error",
        "gpu-pod",
        "A pod the extender placed names no GPU of its node in its index annotation",
        "Delete the pod so its controller creates it again through the scheduler; until then its memory is counted "
        "on no GPU and the next pods are given it.",
        _EXTENDER,
        _index,
    ),
    Rule(
        "GL602",
        "error",
        "gpu-node",
        "Pods on one GPU hold more memory than it has (double allocation)",
        "Delete the pods the finding names, last assumed first, until the GPU holds no more than its memory.",
        _EXTENDER,
        _double,
    ),
    Rule(
        "GL603",
        "warning",
        "gpu-pod",
        "A pod assumed by the extender was never allocated by the device plugin",
        "Delete the pod: the device plugin allocates the oldest assumed pod of equal request first, so a stale one "
        "can hand its GPU to a newer pod.",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/podmanager.go (getCandidatePods, oldest first)"),
        _assumed,
    ),
    Rule(
        "GL604",
        "error",
        "gpu-pod",
        "A pod holds GPU memory that no GPU-sharing scheduler placed",
        "Create it again without spec.nodeName and with the schedulerName GPU sharing serves.",
        sources.section(sources.EXTENDER, "pkg/cache (pods with an index only); kube-scheduler (unassigned pods only)"),
        _unplaced,
    ),
    Rule(
        "GL605",
        "error",
        "gpu-node",
        "A node labelled to share GPUs reports no GPU memory",
        "Check its device plugin pod's log (a list of MiB devices too long for kubelet reports 0: GN312).",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/nvidia.go (the devices it lists)"),
        _capacity,
    ),
    Rule(
        "GL606",
        "error",
        "gpu-node",
        "A node labelled to share GPUs runs no device plugin pod",
        "Check the device plugin DaemonSet's node selector and tolerations against the node.",
        sources.GPUSHARE_CHART,
        _no_plugin,
    ),
    Rule(
        "GL607",
        "warning",
        "gpu-node",
        "A device plugin pod runs on a node not labelled to share GPUs",
        "Label the node for the mode it serves, or keep the plugin off it.",
        sources.GPUSHARE_CHART,
        _stray_plugin,
    ),
    Rule(
        "GL608",
        "error",
        "gpu-node",
        "A cgpu or core_mem node runs no cGPU installer pod",
        "Serve the node's mode in the settings' isolation so the installer DaemonSet selects it.",
        sources.section(sources.CGPU, "Install the cGPU service"),
        _no_installer,
    ),
    Rule(
        "GL609",
        "error",
        "gpu-node",
        "A node sharing GPUs also advertises whole GPUs (nvidia.com/gpu)",
        "Keep the NVIDIA device plugin off GPU-sharing nodes (ack.node.gpu.schedule=default for whole GPUs).",
        sources.ACK_GPU_LABELS,
        _both_resources,
    ),
    Rule(
        "GL612",
        "warning",
        "gpu-node",
        "GPU pods on a cgpu or core_mem node started before its cGPU installer (a mode change under running pods)",
        "Create those pods again: the device plugin set up their GPU share, without isolation, when they started.",
        sources.section(
            sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/allocate.go (a container's GPU environment is set when it starts)"
        ),
        _before_isolation,
    ),
    Rule(
        "GL613",
        "error",
        "gpu-node",
        "Two device plugins advertise GPUs on one node",
        "Keep one device plugin per node: this chart's takes the place of ACK's ack-ai-installer (uninstall one); "
        "NVIDIA's and HAMi's stay off GPU-sharing nodes (their DaemonSets' node selectors).",
        f"{sources.section(sources.DEVICE_PLUGIN, 'device-plugin-ds.yaml')}; {sources.EXTENDER} issue 55 (the "
        "NVIDIA and gpushare plugins: same cluster, never the same node)",
        _two_plugins,
        explanation=f"Each running pod on a GPU node is known by its images, owner and labels "
        f"(gpushare.domain.deviceplugins): {deviceplugins.CHART}, "
        + ", ".join(name for name, _ in deviceplugins.FAMILIES)
        + ". Two of them advertise the node's GPUs twice: a pod may be given a GPU the shared pods use, or the "
        "last plugin to register takes the resource over.",
    ),
    Rule(
        "GL610",
        "error",
        "ledger",
        "A scheduler configuration the cluster's minor does not serve",
        "Render the stack again for the cluster's minor (gpushare render --kube-version) and upgrade it.",
        sources.SCHEDULER_CONFIG,
        _scheduler_config,
    ),
    Rule(
        "GL611",
        "error",
        "ledger",
        "A memory-unit switch half done while pods hold GPU memory",
        "Delete every pod requesting aliyun.com/gpu-mem, uninstall, reinstall with one unit.",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _unit_split,
    ),
)
