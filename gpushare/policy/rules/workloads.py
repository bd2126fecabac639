"""Rules on workloads' pod templates (facts sections 2 and 3)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gpushare.domain import cgpu, labels, products, sizes, sources, versions
from gpushare.kube import workloads
from gpushare.kube.fields import mapping
from gpushare.kube.workloads import Workload
from gpushare.policy.engine import ClusterFacts, Offence, Rule

CORE = workloads.CORE_FIELD
MEM = workloads.MEM_FIELD


def _found_on_reading(rule: str) -> Callable[[Workload, ClusterFacts], Iterable[Offence]]:
    """Rules the workload reader checks itself (so `place` refuses a pod with the same ID): report its problems."""

    def check(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
        return p.problems_of(rule)

    return check


def _core_nodes(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    if not p.core or ctx.semantics == "upstream":  # no compute share at all there: GW219
        return
    wanted = p.node_selector.get(labels.SCHEDULE_LABEL)
    if wanted is not None and wanted != "core_mem":
        yield f"spec.nodeSelector.{labels.SCHEDULE_LABEL}", wanted, "core_mem for a pod that asks for GPU compute"
    elif ctx.nodes and not any(n.mode == "core_mem" for n in ctx.nodes):
        yield CORE, p.core, "no compute request: no node in the inventory is labelled core_mem"


def served_scheduler(ctx: ClusterFacts) -> str | None:
    """The schedulerName GPU pods must use, when the settings or the cluster say which it is."""
    return ctx.settings.served_scheduler_name if ctx.settings is not None else ctx.scheduler_name


def _scheduler_name(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    served = served_scheduler(ctx)
    named = str(p.spec.get("schedulerName") or products.DEFAULT_SCHEDULER_NAME)
    if p.gpu_mem and served and named != served:
        yield "spec.schedulerName", named, f"{served}, the scheduler that calls the gpushare extender"


def _removed_api(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    minor = ctx.kube_minor
    api_version = str(p.source.obj.get("apiVersion") or "")
    instead = versions.unserved_workload_api(api_version, p.kind, minor) if minor is not None else None
    if instead:
        yield "apiVersion", api_version, instead


def _named_once(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    found = ctx.memo.get("unnamed")
    if found is None:  # worked out once per run, over every workload read
        found = ctx.memo["unnamed"] = {id(u.source): u for u in workloads.unnamed(w.source for w in ctx.workloads)}
    offence = found.get(id(p.source))
    if offence is not None:
        yield "metadata.name", mapping(offence.source.obj.get("metadata")).get("name"), offence.allowed


def largest_gpu(ctx: ClusterFacts) -> int:
    """The largest GPU in the inventory, worked out once per run rather than once per pod."""
    cached = ctx.memo.get("largest_gpu")
    if cached is None:
        cached = ctx.memo["largest_gpu"] = max((n.per_gpu for n in ctx.nodes if n.gpu_mem), default=0)
    return int(cached)


def _too_big(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    if not p.gpu_mem or p.pod.suffixed:  # a byte suffix's billions of units: GW218 says why
        return
    raw = p.gpu_count_label
    share = p.gpu_mem // int(str(raw)) if raw is not None and str(raw).isdigit() and int(str(raw)) > 0 else p.gpu_mem
    if ctx.nodes:
        largest = largest_gpu(ctx)
        if share > largest:
            yield MEM, p.gpu_mem, f"at most {largest} per GPU: no GPU in the inventory is larger"
    elif share > sizes.gpu_memory_bound(ctx.memory_unit):
        yield MEM, p.gpu_mem, sizes.bound_words(ctx.memory_unit)


def _compute_upstream(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    if ctx.semantics == "upstream" and p.core:
        yield (
            CORE,
            p.core,
            f"no {labels.GPU_CORE} with the open-source stack: its device plugin advertises none, so every node is "
            "Insufficient and the pod stays pending (compute shares are ACK's)",
        )


def _replicas(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    if p.replicas is not None and p.replicas > sizes.MAX_PODS:
        field = "spec.parallelism" if p.kind in ("Job", "CronJob") else "spec.replicas"
        yield (
            field,
            p.replicas,
            f"at most {sizes.MAX_PODS:,}: what one dry run models (Kubernetes' largest tested clusters run 150,000 "
            "pods in all)",
        )


def _mixed_on_node(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    node = p.pinned_node
    if not node or not p.gpu_mem:
        return
    for other in ctx.workloads:
        if other is not p and other.pinned_node == node and other.gpu_mem and bool(other.core) != bool(p.core):
            if p.core:  # report once, on the compute pod
                yield "spec.nodeName", node, f"a node without memory-only GPU pods (also pinned: {other.name})"
            return


def _label_values(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    selector = p.node_selector
    mode = selector.get(labels.SCHEDULE_LABEL)
    allowed = labels.SHARED_MODES + labels.OTHER_MODES
    if mode is not None and mode not in allowed:
        yield f"spec.nodeSelector.{labels.SCHEDULE_LABEL}", mode, f"one of {', '.join(allowed)}"
    placement = selector.get(labels.PLACEMENT_LABEL)
    if placement is not None and placement not in labels.PLACEMENTS:
        yield f"spec.nodeSelector.{labels.PLACEMENT_LABEL}", placement, " or ".join(labels.PLACEMENTS)


_MEM_LIST = re.compile(r"^\d+(,\d+)*$")


def _cgpu_env(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    for container, name, value in p.env:
        field = f"containers[{container}].env.{name}"
        if name in ("ALIYUN_COM_GPU_MEM_CONTAINER", "ALIYUN_COM_GPU_MEM_DEV"):
            if value is not None and not _MEM_LIST.match(str(value).strip()):
                yield field, value, "GiB per GPU as a number or a comma list (3, or 3,1 where the last value repeats)"
        elif (
            name == "ALIYUN_COM_GPU_SCHD_WEIGHT"
            and value is not None
            and (not str(value).isdigit() or int(str(value)) < 1)
        ):
            yield field, value, "a whole number >= 1 (above 1 selects weighted preemptive scheduling)"


def _cgpu_values(p: Workload) -> dict[str, dict[str, list[int]]]:
    """Per container, the well-formed cGPU memory lists it sets (GW210 reports the others)."""
    found: dict[str, dict[str, list[int]]] = {}
    for container, name, value in p.env:
        cgpu_memory = name in ("ALIYUN_COM_GPU_MEM_CONTAINER", "ALIYUN_COM_GPU_MEM_DEV")
        if cgpu_memory and value is not None and _MEM_LIST.match(str(value).strip()):
            found.setdefault(container, {})[name] = [int(v) for v in str(value).strip().split(",")]
    return found


def _cgpu_disabled(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    """Seed 004: `0`, a list whose first value is 0, or `1,0,...,0` leave the container without isolation."""
    for container, values in _cgpu_values(p).items():
        numbers = values.get("ALIYUN_COM_GPU_MEM_CONTAINER")
        if numbers and (numbers[0] == 0 or (len(numbers) > 1 and numbers[0] == 1 and not any(numbers[1:]))):
            value = ",".join(map(str, numbers))
            field = f"containers[{container}].env.ALIYUN_COM_GPU_MEM_CONTAINER"
            yield field, value, "a memory size: this value turns cGPU isolation off"


def _cgpu_above_device(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    """CONTAINER above DEV on some GPU (each list's last value repeats), or DEV without CONTAINER (isolation off)."""
    named = {(container, name) for container, name, _ in p.env}
    for container, values in _cgpu_values(p).items():
        visible, device = values.get("ALIYUN_COM_GPU_MEM_CONTAINER"), values.get("ALIYUN_COM_GPU_MEM_DEV")
        if device and (container, "ALIYUN_COM_GPU_MEM_CONTAINER") not in named:  # a malformed one is GW210's
            yield (
                f"containers[{container}].env.ALIYUN_COM_GPU_MEM_DEV",
                ",".join(map(str, device)),
                "set together with ALIYUN_COM_GPU_MEM_CONTAINER: alone it leaves cGPU isolation off",
            )
        elif visible and device:
            width = max(len(visible), len(device))
            per_gpu = [(visible[min(i, len(visible) - 1)], device[min(i, len(device) - 1)]) for i in range(width)]
            if any(v > d for v, d in per_gpu):
                yield (
                    f"containers[{container}].env.ALIYUN_COM_GPU_MEM_CONTAINER",
                    ",".join(map(str, visible)),
                    (f"at most ALIYUN_COM_GPU_MEM_DEV ({','.join(map(str, device))}) on every GPU"),
                )


def _cgpu_weight(p: Workload, ctx: ClusterFacts) -> Iterable[Offence]:
    for container, name, value in p.env:
        if name == "ALIYUN_COM_GPU_SCHD_WEIGHT" and str(value).isdigit() and int(str(value)) > 1:
            yield (
                f"containers[{container}].env.{name}",
                value,
                ("1, unless this container should override the node's cGPU policy with weighted preemptive scheduling"),
            )


RULES: tuple[Rule, ...] = (
    Rule(
        workloads.MALFORMED,
        "error",
        "workload",
        "GPU resources must be whole, non-negative numbers, requests equal to limits",
        "Write aliyun.com/gpu-mem and gpu-core.percentage as integers in limits; fix the field named as the API "
        "server would take it.",
        "Kubernetes: extended resources (requests equal limits, whole numbers)",
        _found_on_reading(workloads.MALFORMED),
        explanation="The pod spec as read: quantities, container entries, replicas, nodeName; a field the API server "
        "would refuse is named with what it takes, and place leaves that pod out as invalid.",
    ),
    Rule(
        workloads.CORE_STEP,
        "error",
        "workload",
        "Compute (gpu-core.percentage) is a multiple of 5 from 5 to 100",
        "Round the compute share to a multiple of 5.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _found_on_reading(workloads.CORE_STEP),
    ),
    Rule(
        workloads.CORE_NEEDS_MEM,
        "error",
        "workload",
        "A compute request needs a GPU memory request",
        "Add aliyun.com/gpu-mem.",
        sources.section(sources.ACK_COMPUTE, "Step 3: Use computing power allocation"),
        _found_on_reading(workloads.CORE_NEEDS_MEM),
    ),
    Rule(
        workloads.GPU_COUNT,
        "error",
        "workload",
        "aliyun.com/gpu-count is a positive integer dividing the memory request",
        "Make gpu-mem a multiple of the GPU count.",
        sources.ACK_MULTI_GPU,
        _found_on_reading(workloads.GPU_COUNT),
    ),
    Rule(
        workloads.MULTI_WITH_CORE,
        "error",
        "workload",
        "Multi-GPU pods cannot request compute",
        "Drop gpu-core.percentage or the gpu-count label.",
        sources.ACK_MULTI_GPU,
        _found_on_reading(workloads.MULTI_WITH_CORE),
    ),
    Rule(
        workloads.NO_DEVICE,
        "error",
        "workload",
        "A pod that names aliyun.com/gpu-mem asks more than 0 over its containers",
        "Drop aliyun.com/gpu-mem from a pod that needs no GPU (init containers included), or ask at least 1.",
        f"{sources.EXTENDER}, pkg/cache/nodeinfo.go allocateGPUID (binds only a request above 0); kube-scheduler "
        "HTTPExtender.IsInterested (any container or init container naming a managed resource)",
        _found_on_reading(workloads.NO_DEVICE),
        explanation="kube-scheduler asks the extender about every pod whose containers or init containers name "
        "aliyun.com/gpu-mem, whatever the amount; the open-source extender's bind looks for a device only for a "
        "request above 0, so a pod asking 0 (or asking only in an init container, which the extender does not "
        "count) fails to bind with HTTP 500 on every retry and never runs. `place --semantics upstream` leaves such "
        "a pod pending as kube-scheduler does: with the bind's error where a node passes the filters, else with the "
        "filters' message (an init container's gpu-mem counts at node level); place, capacity and doctor report "
        "this finding too and exit 1.",
    ),
    Rule(
        workloads.SUFFIXED,
        "error",
        "workload",
        "aliyun.com/gpu-mem counts units: written without a byte suffix",
        "Write the number of units: `aliyun.com/gpu-mem: 4` asks 4 units (4 GiB in 1GiB units, 512 MiB in 128MiB).",
        sources.section(sources.ACK_OVERVIEW, "aliyun.com/gpu-mem counts GPU memory in units"),
        _found_on_reading(workloads.SUFFIXED),
        explanation="The API server takes `4Gi` for an extended resource (it is a whole number: 4,294,967,296), so "
        "the pod is valid and asks for billions of units; it stays pending with Insufficient aliyun.com/gpu-mem "
        "for ever (place models it so, and reports this finding).",
    ),
    Rule(
        "GW206",
        "error",
        "workload",
        "Compute requests run on core_mem nodes only",
        "Select ack.node.gpu.schedule=core_mem nodes (add a labelled node pool).",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _core_nodes,
    ),
    Rule(
        "GW207",
        "error",
        "workload",
        "A pod cannot ask one GPU for more memory than any GPU has",
        "Lower the request, or split it with aliyun.com/gpu-count.",
        sources.section(sources.EXTENDER, "pkg/cache/nodeinfo.go Assume (one device must hold the request)"),
        _too_big,
    ),
    Rule(
        "GW208",
        "error",
        "workload",
        "Memory-only and compute GPU pods never share a node",
        "Pin them to different nodes.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _mixed_on_node,
    ),
    Rule(
        "GW209",
        "error",
        "workload",
        "GPU node labels in selectors must be valid values",
        "Use share, cgpu, core_mem (or default, mps, topology, mig); binpack or spread.",
        sources.ACK_GPU_LABELS,
        _label_values,
    ),
    Rule(
        "GW210",
        "error",
        "workload",
        "cGPU environment variables follow cGPU's syntax",
        "ALIYUN_COM_GPU_MEM_CONTAINER/_DEV: 3 or 3,1; ALIYUN_COM_GPU_SCHD_WEIGHT: an integer >= 1.",
        sources.section(sources.CGPU, "Run the cGPU service"),
        _cgpu_env,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GW211",
        "warning",
        "workload",
        "This cGPU memory setting turns isolation off",
        "Set the visible memory in GiB, or remove the variable.",
        sources.section(sources.CGPU, "Run the cGPU service"),
        _cgpu_disabled,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GW212",
        "warning",
        "workload",
        "cGPU visible memory above the device's, or the device's without the container's",
        "Set ALIYUN_COM_GPU_MEM_CONTAINER at most ALIYUN_COM_GPU_MEM_DEV on each GPU, and always with it.",
        sources.section(sources.CGPU, "Run the cGPU service"),
        _cgpu_above_device,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GW213",
        "warning",
        "workload",
        "ALIYUN_COM_GPU_SCHD_WEIGHT above 1 overrides the node's cGPU policy",
        "Leave the weight at 1 unless this container should get weighted preemptive scheduling.",
        sources.section(sources.CGPU, "cGPU compute scheduling examples"),
        _cgpu_weight,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GW214",
        "error",
        "workload",
        "A GPU pod must name the scheduler that calls the gpushare extender",
        "Set spec.schedulerName to the gpushare scheduler's name (the settings' scheduler.name in secondary mode); "
        "another scheduler binds the pod without a GPU device and it starts without a GPU.",
        sources.section(sources.EXTENDER, "config/ (the extender is called only by the scheduler configured with it)"),
        _scheduler_name,
    ),
    Rule(
        "GW215",
        "error",
        "workload",
        "A workload's API must be one the cluster's Kubernetes minor serves",
        "Write the API the message names (kubectl convert, or edit apiVersion and the fields it changed).",
        sources.KUBE_API_MIGRATION,
        _removed_api,
    ),
    Rule(
        "GW219",
        "error",
        "workload",
        "The open-source stack serves no compute share (aliyun.com/gpu-core.percentage)",
        "Drop aliyun.com/gpu-core.percentage (cGPU's weights need ACK), or run the pod on ACK.",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia (the resources it advertises: gpu-mem, gpu-count)"),
        _compute_upstream,
        explanation="Checked where the stack is said to be the open-source one (validate --semantics upstream, "
        "place and capacity with --semantics upstream).",
    ),
    Rule(
        "GW220",
        "error",
        "workload",
        "A workload asks more pods than any fleet runs",
        "Ask the replicas the fleet is meant to run; a dry run models at most 5,000,000 pods.",
        sources.KUBE_SCALABILITY,
        _replicas,
    ),
    Rule(
        "GW216",
        "error",
        "workload",
        "A workload has a name, and only one object has it in its kind and namespace",
        "Name the object, or rename or remove the second: kubectl would apply it over the first, and `gpushare "
        "place` refuses both.",
        sources.KUBE_OBJECT_NAMES,
        _named_once,
    ),
)
