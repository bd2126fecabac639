"""Rules on what the cluster runs: versions, region and drivers (facts section 2), from flags or a live read."""

from __future__ import annotations

from collections.abc import Iterable

from gpushare.domain import cgpu, labels, products, sources
from gpushare.domain.versionstr import at_least, numbers, valid
from gpushare.errors import counted, listed
from gpushare.policy.engine import ClusterFacts, Offence, Rule


def uses_compute(ctx: ClusterFacts) -> bool:
    return bool((ctx.settings is not None and ctx.settings.compute_allocation) or any(w.core for w in ctx.workloads))


def _versions_readable(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    for name in (
        "kube_version",
        "scheduler_version",
        "cgpu_version",
        "driver_version",
        "docker_version",
        "chart_version",
    ):
        value = getattr(ctx, name)
        if value is not None and not valid(value):
            yield "--" + name.replace("_", "-"), value, "a version such as 1.2.3"


def _compute_minimums(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    if not uses_compute(ctx):
        return
    for flag, value, minimum in (
        ("--kube-version", ctx.kube_version, products.MIN_KUBE_COMPUTE),
        ("--chart-version", ctx.chart_version, products.MIN_CHART_COMPUTE),
        ("--cgpu-version", ctx.cgpu_version, products.MIN_CGPU_COMPUTE),
    ):
        if value and valid(value) and not at_least(value, minimum):
            yield flag, value, f">= {minimum} for compute allocation"


def _scheduler(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    if not (uses_compute(ctx) and ctx.scheduler_version and valid(ctx.scheduler_version)):
        return
    version = ctx.scheduler_version
    minor = numbers(ctx.kube_version or version)[1:2]
    minimum = products.ACK_MIN_SCHEDULER_FOR_COMPUTE.get(minor[0]) if minor else None
    if minimum and not at_least(version, minimum):
        yield "--scheduler-version", version, f"at least {minimum} on ACK 1.{minor[0]} for compute allocation"


def _undocumented_scheduler(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    """Past the newest minor ACK's table names, GC403 cannot decide: say so rather than guess a minimum."""
    minor, table = ctx.kube_minor, products.ACK_MIN_SCHEDULER_FOR_COMPUTE
    if uses_compute(ctx) and minor is not None and minor > max(table):
        documented = ", ".join(f"1.{m}: {v}" for m, v in table.items())
        yield (
            "--kube-version",
            ctx.kube_version,
            f"a minor whose minimum kube-scheduler ACK documents for compute allocation ({documented}); ACK names "
            f"none for 1.{minor}, so GC403 is not checked: see ACK's kube-scheduler release notes",
        )


def _region(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    settings_say_so = ctx.settings is not None and ctx.settings.compute_allocation and ctx.settings.region == ctx.region
    if settings_say_so:
        return  # GS107 reports it on the settings document
    if uses_compute(ctx) and ctx.region and ctx.region not in products.COMPUTE_REGIONS:
        yield "--region", ctx.region, f"a region with compute allocation: {', '.join(products.COMPUTE_REGIONS)}"


def _small_unit(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    small = ctx.memory_unit == products.UNIT_128MIB
    version = ctx.kube_version
    if small and version and valid(version) and not at_least(version, products.MIN_ACK_SMALL_UNIT):
        yield "--kube-version", ctx.kube_version, f">= {products.MIN_ACK_SMALL_UNIT} for {products.UNIT_128MIB} units"


def _deadlock(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    version = ctx.cgpu_version
    if version and valid(version) and not at_least(version, cgpu.MIN_RELEASE):
        yield "--cgpu-version", version, f">= {cgpu.MIN_RELEASE} ({cgpu.DEADLOCK} and earlier can deadlock the kernel)"


def _old_cgpu(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    """Above the document's floor but below the FAQ's advice (the floor itself is GC406's)."""
    version = ctx.cgpu_version
    if version and valid(version) and at_least(version, cgpu.MIN_RELEASE) and not at_least(version, cgpu.RECOMMENDED):
        yield "--cgpu-version", version, f">= {cgpu.RECOMMENDED}, which ACK's cGPU FAQ recommends"


def _driver_compat(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    release, driver = ctx.cgpu_version, ctx.driver_version
    if not (release and driver and valid(release) and valid(driver)):
        return
    series = numbers(driver)[0]
    for low, high, (first, last), caps in cgpu.DRIVERS:
        if numbers(low) <= numbers(release) <= numbers(high):
            too_new = series in caps and not at_least(caps[series], driver)
            if not first <= series <= last or too_new or (caps and first == 460 and series not in (460, *caps)):
                limits = ", ".join(f"{s} <= {v}" for s, v in caps.items())
                yield (
                    "--driver-version",
                    driver,
                    f"a driver cGPU {release} supports (series {first}-{last}" + (f"; {limits})" if limits else ")"),
                )
            return


def installs_cgpu(ctx: ClusterFacts) -> bool:
    """The driver and Docker floors are cGPU's prerequisites (seed 004): they hold where the settings serve cgpu or
    core_mem nodes on ACK, or where no settings say (the flags alone: the user asks about cGPU)."""
    settings = ctx.settings
    return settings is None or (settings.profile == products.ACK and bool(settings.isolated_modes))


def _driver(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    if not installs_cgpu(ctx):
        return
    if ctx.driver_version and valid(ctx.driver_version) and not at_least(ctx.driver_version, cgpu.MIN_DRIVER):
        yield "--driver-version", ctx.driver_version, f">= {cgpu.MIN_DRIVER} for cGPU"


def _docker(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    if not installs_cgpu(ctx):
        return
    if ctx.docker_version and valid(ctx.docker_version) and not at_least(ctx.docker_version, cgpu.MIN_DOCKER):
        yield "--docker-version", ctx.docker_version, f">= {cgpu.MIN_DOCKER} for cGPU"


def _unit_switch(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    """From a live read (preflight): the units installed now, each where it was read, and the pods holding GPU
    memory. `GiB` and `1GiB` are one unit; any witness of another unit is a switch."""
    readings, pods = ctx.current_units, list(ctx.gpu_pods)
    if ctx.settings is None or not pods:
        return
    wanted = products.MIB_PER_UNIT[ctx.settings.gpu_memory_unit]
    other = [r for r in readings if r.mib != wanted]
    if other:
        installed = "; ".join(f"{r.unit} ({r.where})" for r in other)
        yield (
            "gpuMemoryUnit",
            ctx.settings.gpu_memory_unit,
            f"the unit installed now, {installed}, while pods hold GPU memory "
            f"(delete them first, then reinstall): {listed(pods, 20)}",
        )


def _relabelled(ctx: ClusterFacts) -> list[tuple[str, str, str]]:
    """From `gpushare diff`: (node, mode before, mode after) for each GPU node whose ack.node.gpu.schedule the
    change sets to another mode."""
    return list(ctx.relabelled)


def _core_mem_by_label(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    nodes = [node for node, _, after in _relabelled(ctx) if after == "core_mem"]
    if nodes:
        yield (
            f"metadata.labels.{labels.SCHEDULE_LABEL}",
            "core_mem",
            f"another mode on nodes that exist ({listed(nodes, 20)}): core_mem comes with a node pool created "
            "with the label",
        )


def _mode_under_pods(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    on = ctx.gpu_pods_on
    busy = [
        f"{node} ({before} -> {after}, {counted(len(on[node]), 'GPU pod')})"
        for node, before, after in _relabelled(ctx)
        if on.get(node)
    ]
    if busy:
        yield (
            f"metadata.labels.{labels.SCHEDULE_LABEL}",
            listed(busy, 5),
            "no GPU pod running on a node whose mode changes (each keeps the share and isolation it started with "
            "until created again)",
        )


def _created_before(ctx: ClusterFacts, day: str) -> bool:
    return bool(ctx.cluster_created) and str(ctx.cluster_created)[:10] < day


def _restart_for_small_unit(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    small = ctx.memory_unit == products.UNIT_128MIB
    if small and _created_before(ctx, products.SMALL_UNIT_RESTART_BEFORE):
        yield (
            "cluster created",
            ctx.cluster_created,
            f"a scheduler restart first: clusters created before {products.SMALL_UNIT_RESTART_BEFORE} need one "
            f"for {products.UNIT_128MIB} units (submit a ticket)",
        )


def _upgrade_for_compute(ctx: ClusterFacts, _: ClusterFacts) -> Iterable[Offence]:
    known = ctx.scheduler_version is not None and valid(ctx.scheduler_version)  # then GC403 decides
    if uses_compute(ctx) and not known and _created_before(ctx, products.COMPUTE_UPGRADE_BEFORE):
        yield (
            "cluster created",
            ctx.cluster_created,
            f"the new scheduler: clusters created before {products.COMPUTE_UPGRADE_BEFORE} do not get it by "
            "themselves (a ticket for the preview, the old component deleted, the latest installed; GC403 checks the "
            "version when it is known)",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "GC401",
        "error",
        "cluster",
        "Versions must be readable",
        "Pass versions like 1.2.3.",
        sources.GPUSHARE_FACTS,
        _versions_readable,
    ),
    Rule(
        "GC402",
        "error",
        "cluster",
        "Compute allocation needs Kubernetes >= 1.20, chart >= 1.2.0, cGPU >= 1.0.5",
        f"Upgrade the cluster or cGPU; a {products.INSTALLER_CHART} chart below {products.MIN_CHART_COMPUTE} is the "
        "old memory-only one: delete it (console: Applications > Helm), then install the latest.",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _compute_minimums,
    ),
    Rule(
        "GC403",
        "error",
        "cluster",
        "Compute allocation needs ACK's minimum kube-scheduler for the version",
        "Upgrade the scheduler (clusters created before 2022-03-01 need it).",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _scheduler,
    ),
    Rule(
        "GC414",
        "warning",
        "cluster",
        "ACK documents no minimum kube-scheduler for compute allocation on this minor",
        "Check the kube-scheduler release notes of ACK for GPU compute allocation on your minor.",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _undocumented_scheduler,
    ),
    Rule(
        "GC404",
        "error",
        "cluster",
        "Compute allocation is offered in some regions only",
        "Use a listed region.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _region,
    ),
    Rule(
        "GC405",
        "error",
        "cluster",
        f"{products.UNIT_128MIB} units need ACK Pro >= {products.MIN_ACK_SMALL_UNIT}",
        "Upgrade the cluster.",
        sources.section(sources.ACK_MEMORY_UNIT, "Prerequisites"),
        _small_unit,
    ),
    Rule(
        "GC406",
        "error",
        "cluster",
        "cGPU must be >= 1.5.8 (1.5.7 and earlier can deadlock the kernel)",
        "Install cGPU >= 1.5.8.",
        sources.section(sources.CGPU, "Prerequisites"),
        _deadlock,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GC407",
        "warning",
        "cluster",
        "cGPU 1.5.8 or 1.5.9: above the documented floor, below the 1.5.10 ACK's cGPU FAQ recommends",
        "Upgrade cGPU to >= 1.5.10.",
        sources.CGPU_FAQ,
        _old_cgpu,
    ),
    Rule(
        "GC408",
        "warning",
        "cluster",
        "The NVIDIA driver is outside the cGPU release's row of ACK's FAQ compatibility table",
        "Pick a driver from the FAQ's row for the release, or upgrade cGPU (the documented floor is GC409's).",
        sources.CGPU_FAQ,
        _driver_compat,
    ),
    Rule(
        "GC409",
        "error",
        "cluster",
        "cGPU needs NVIDIA driver >= 418.87.01",
        "Upgrade the driver.",
        sources.section(sources.CGPU, "Prerequisites"),
        _driver,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GC410",
        "error",
        "cluster",
        f"cGPU needs Docker >= {cgpu.MIN_DOCKER} (the --docker-version flag, for every node; GN307: each node's own)",
        "Upgrade Docker.",
        sources.section(sources.CGPU, "Prerequisites"),
        _docker,
    ),
    Rule(
        "GC411",
        "error",
        "cluster",
        "No memory-unit switch while pods hold GPU memory",
        "Delete every pod requesting aliyun.com/gpu-mem, uninstall, reinstall with the new unit.",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _unit_switch,
    ),
    Rule(
        "GC415",
        "error",
        "cluster",
        "core_mem cannot be given to an existing node by relabelling it",
        "Remove the node and add it again through a node pool labelled ack.node.gpu.schedule=core_mem.",
        sources.section(
            sources.ACK_COMPUTE, "Step 2: Check whether computing power allocation is enabled for the node pool"
        ),
        _core_mem_by_label,
    ),
    Rule(
        "GC416",
        "warning",
        "cluster",
        "A node's GPU mode changes under running GPU pods",
        "Drain the node's GPU pods (or create them again) after relabelling, so they start under the new mode.",
        sources.section(
            sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/allocate.go (a container's GPU environment is set when it starts)"
        ),
        _mode_under_pods,
    ),
    Rule(
        "GC412",
        "warning",
        "cluster",
        f"Clusters created before {products.SMALL_UNIT_RESTART_BEFORE} need a scheduler restart for "
        f"{products.UNIT_128MIB} units",
        "Submit a ticket to have the scheduler restarted before switching (unless done since).",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _restart_for_small_unit,
    ),
    Rule(
        "GC413",
        "warning",
        "cluster",
        "Clusters created before 2022-03-01 need the new scheduler for compute allocation",
        "Submit a ticket to join the preview of the latest shared GPU scheduling, delete the old "
        f"{products.INSTALLER_CHART} (console: Applications > Helm), then install the latest (unless done since; pass "
        "--scheduler-version to check).",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _upgrade_for_compute,
    ),
)
