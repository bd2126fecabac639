"""Rules on Node objects: label values and the cGPU prerequisites of isolated nodes (facts 1, 2, 4)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpushare.domain import cgpu, labels, listandwatch, products, runtimes, sizes, sources
from gpushare.domain.versionstr import at_least
from gpushare.kube import nodes
from gpushare.kube.nodes import NodeInfo
from gpushare.policy.engine import ClusterFacts, Offence, Rule


def _isolated(n: NodeInfo) -> bool:
    return n.mode in labels.ISOLATED_MODES


def _malformed(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    return (p.offence for p in n.problems)


def _label_values(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    allowed = labels.SHARED_MODES + labels.OTHER_MODES
    if n.mode is not None and n.mode not in allowed:
        yield f"metadata.labels.{labels.SCHEDULE_LABEL}", n.mode, f"one of {', '.join(allowed)}"
    placement = n.labels.get(labels.PLACEMENT_LABEL)
    if placement is not None and placement not in labels.PLACEMENTS:
        yield f"metadata.labels.{labels.PLACEMENT_LABEL}", placement, " or ".join(labels.PLACEMENTS)


def _core_capacity(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if n.mode == "core_mem" and n.gpu_count and n.core != 100 * n.gpu_count:
        yield f"status.capacity.{labels.GPU_CORE}", n.core, f"{100 * n.gpu_count} (100 per GPU) on a core_mem node"


def _even_split(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if n.gpu_count and n.gpu_mem % n.gpu_count:
        yield f"status.capacity.{labels.GPU_MEM}", n.gpu_mem, f"a multiple of gpu-count {n.gpu_count}"


def _family(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    instance = n.instance_type
    if _isolated(n) and instance:
        match = re.match(r"^(?:ecs\.)?([a-z]+\d+[a-z]*)", instance)
        if match and match.group(1) not in cgpu.FAMILIES:
            yield (
                "metadata.labels.node.kubernetes.io/instance-type",
                instance,
                f"a cGPU instance family: {', '.join(cgpu.FAMILIES)}",
            )


def _os(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    image = str(n.node_info.get("osImage", ""))
    if _isolated(n) and image and not any(name in image.lower() for name in cgpu.OPERATING_SYSTEMS):
        yield "status.nodeInfo.osImage", image, "CentOS, Ubuntu or Alibaba Cloud Linux for cGPU"


def _docker(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    runtime = str(n.node_info.get("containerRuntimeVersion", ""))
    if _isolated(n) and runtime.startswith("docker://") and not at_least(runtime.split("//", 1)[1], cgpu.MIN_DOCKER):
        yield "status.nodeInfo.containerRuntimeVersion", runtime, f"Docker >= {cgpu.MIN_DOCKER} for cGPU"


def _not_docker(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    """cGPU's Docker floor is written for Docker; a cgpu or core_mem node on another runtime cannot be checked
    against it, and saying nothing would read as a pass."""
    runtime = str(n.node_info.get("containerRuntimeVersion", ""))
    if _isolated(n) and runtime and not runtime.startswith("docker://"):
        yield (
            "status.nodeInfo.containerRuntimeVersion",
            runtime,
            f"Docker (cGPU's prerequisites name Docker >= {cgpu.MIN_DOCKER}; this runtime cannot be checked against "
            "them: confirm with ACK that cGPU supports it)",
        )


def _region(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    region = n.region
    if n.mode == "core_mem" and region and region not in products.COMPUTE_REGIONS:
        yield "metadata.labels.topology.kubernetes.io/region", region, "a region with compute allocation"


def _small_unit(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if n.mode == "core_mem" and ctx.memory_unit == products.UNIT_128MIB:
        yield (
            f"metadata.labels.{labels.SCHEDULE_LABEL}",
            n.mode,
            f"share or cgpu nodes for {products.UNIT_128MIB} units, not core_mem",
        )


def _mode_not_served(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    settings = ctx.settings
    if settings is None or settings.profile != products.ACK or n.mode not in labels.SHARED_MODES:
        return
    if n.mode not in settings.isolation:
        yield (
            f"metadata.labels.{labels.SCHEDULE_LABEL}",
            n.mode,
            f"a mode the settings serve ({', '.join(settings.isolation)}), or {n.mode} added to their isolation",
        )


def _open_source_node(n: NodeInfo, ctx: ClusterFacts) -> bool:
    """A GPU node the open-source device plugin serves: by the settings' profile, else by its node label."""
    key, value = labels.OPEN_SOURCE_NODE_LABEL
    labelled = n.labels.get(key) == value
    if ctx.settings is not None:
        return ctx.settings.profile == products.OPEN_SOURCE and (labelled or n.gpu_mem > 0)
    return labelled


def _default_runtime(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if _open_source_node(n, ctx):
        runtime = str(n.node_info.get("containerRuntimeVersion") or "")
        yield (
            "status.nodeInfo.containerRuntimeVersion",
            runtime or "(not reported)",
            runtimes.default_runtime_setup(runtime),
        )


def _mib_list(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if ctx.memory_unit == products.UNIT_MIB and n.gpu_count and _open_source_node(n, ctx):
        size = listandwatch.reply_bytes(n.gpu_count, n.per_gpu)
        if size > listandwatch.KUBELET_RECEIVE_BOUND:
            yield (
                f"status.capacity.{labels.GPU_MEM}",
                n.gpu_mem,
                f"at most {listandwatch.largest_per_gpu(n.gpu_count):,} MiB per GPU over {n.gpu_count} GPU(s) in "
                f"MiB units (its list of {n.gpu_mem:,} devices is {size:,} bytes, over kubelet's "
                f"{listandwatch.KUBELET_RECEIVE_BOUND:,}: the node would report 0)",
            )


def _absurd_memory(n: NodeInfo, ctx: ClusterFacts) -> Iterable[Offence]:
    if n.per_gpu > sizes.gpu_memory_bound(ctx.memory_unit):
        gpus = f"over {n.gpu_count} GPUs" if n.gpu_count else f"with no {labels.GPU_COUNT}: one GPU"
        said = f"{sizes.bound_words(ctx.memory_unit)}; it reports {n.per_gpu:,} a GPU ({gpus})"
        yield f"status.capacity.{labels.GPU_MEM}", n.gpu_mem, said


#: One fact, two rules, one per target: GN309 looks at each Node labelled core_mem, GS118 at the settings'
#: isolation modes; each finding names what to change where it was found. `place` refuses its run by this one.
SMALL_UNIT_RULE = Rule(
    "GN309",
    "error",
    "node",
    f"{products.UNIT_128MIB} units are not supported on core_mem nodes",
    f"Keep {products.UNIT_1GIB} units while core_mem nodes serve compute allocation, or move the workloads to share "
    "nodes.",
    sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
    _small_unit,
    explanation="Checks each Node labelled core_mem against the unit of the settings (validate, preflight) or of "
    "place's --gpu-memory-unit, which it refuses. GS118 checks the same fact on the settings' isolation modes.",
)

RULES: tuple[Rule, ...] = (
    Rule(
        nodes.MALFORMED,
        "error",
        "node",
        "GPU capacity must be whole numbers",
        "Fix the device plugin's report.",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia (capacity reported per node)"),
        _malformed,
    ),
    Rule(
        "GN302",
        "error",
        "node",
        "GPU node labels must be valid values",
        "ack.node.gpu.schedule: share, cgpu, core_mem, default, mps, topology, mig; placement: binpack, spread.",
        sources.ACK_GPU_LABELS,
        _label_values,
    ),
    Rule(
        "GN303",
        "error",
        "node",
        "core_mem nodes report 100 compute per GPU",
        "Re-add the node through a node pool labelled core_mem (kubectl label cannot convert it).",
        sources.section(
            sources.ACK_COMPUTE, "Step 2: Check whether computing power allocation is enabled for the node pool"
        ),
        _core_capacity,
    ),
    Rule(
        "GN304",
        "warning",
        "node",
        "GPU memory should split evenly over the GPUs",
        "Check the device plugin's gpu-count.",
        sources.section(sources.EXTENDER, "pkg/cache/nodeinfo.go (memory per device = capacity / count)"),
        _even_split,
    ),
    Rule(
        "GN305",
        "warning",
        "node",
        "cGPU runs on listed instance families only",
        "Use a listed family.",
        sources.section(sources.CGPU, "Prerequisites"),
        _family,
        explanation=f"{cgpu.LISTS_GROW} {cgpu.ISOLATION_CAVEATS}",
    ),
    Rule(
        "GN306",
        "warning",
        "node",
        "cGPU supports CentOS, Ubuntu and Alibaba Cloud Linux",
        "Use a supported OS.",
        sources.section(sources.CGPU, "Prerequisites"),
        _os,
        explanation=f"{cgpu.LISTS_GROW} {cgpu.ISOLATION_CAVEATS}",
    ),
    Rule(
        "GN307",
        "error",
        "node",
        f"cGPU nodes need Docker >= {cgpu.MIN_DOCKER} (each node's own runtime; GC410: the --docker-version flag)",
        "Upgrade Docker on the node.",
        sources.section(sources.CGPU, "Prerequisites"),
        _docker,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GN308",
        "error",
        "node",
        "core_mem nodes must be in a region with compute allocation",
        "Use a listed region.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _region,
    ),
    SMALL_UNIT_RULE,
    Rule(
        "GN311",
        "warning",
        "node",
        "cGPU's Docker floor cannot be checked on a cgpu or core_mem node that runs another runtime",
        "Confirm with ACK that cGPU supports the node's runtime (its prerequisites name Docker only).",
        sources.section(sources.CGPU, "Prerequisites"),
        _not_docker,
    ),
    Rule(
        "GN310",
        "warning",
        "node",
        "The open-source stack needs the NVIDIA runtime as each GPU node's default runtime (not visible in the API)",
        "Configure it as the finding says on every GPU node: pods asking for aliyun.com/gpu-mem see no GPU without it.",
        sources.section(sources.SELF_MANAGED_GUIDE, "Step 1: Configure the Docker runtime"),
        _default_runtime,
    ),
    Rule(
        "GN313",
        "error",
        "node",
        "A GPU node labelled for a mode the settings do not serve gets no device plugin",
        "Add the node's mode to the settings' isolation, or label the node with a mode they serve.",
        sources.GPUSHARE_CHART,
        _mode_not_served,
    ),
    Rule(
        "GN314",
        "error",
        "node",
        "A node reports more GPU memory per GPU than any GPU holds",
        "Fix the number (a manifest written by hand, or a device plugin's wrong unit): GPU pods are placed on memory "
        "the node does not have.",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia (one device per unit of each GPU's memory)"),
        _absurd_memory,
        explanation="The bound is 1 TiB a GPU in the unit the settings or --gpu-memory-unit name (in MiB units when "
        "neither does, so that no unit's real GPU is flagged). place and capacity model such a node as written "
        "and report this finding.",
    ),
    Rule(
        "GN312",
        "warning",
        "node",
        "MiB units: the node's device list outgrows kubelet's gRPC bound, so it reports aliyun.com/gpu-mem 0",
        f"Serve the node in {products.UNIT_GIB} units (the unit is the whole install's: GS123).",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/nvidia.go (one device per MiB of each GPU)"),
        _mib_list,
        explanation=listandwatch.EXPLANATION,
    ),
)
