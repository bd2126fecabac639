"""Rules on the installer settings (facts sections 2 and 6): what `gpushare render` refuses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpushare.domain import cgpu, labels, listandwatch, products, sources, versions
from gpushare.errors import InputError
from gpushare.policy.engine import ClusterFacts, Offence, Rule

if TYPE_CHECKING:  # the settings model is loaded with the settings these rules read (not to validate pods)
    from gpushare.settings.model import InstallerSettings


#: What fits under kubelet's bound on the device list in MiB units, said by GS123 and GN312.
MIB_LIST_LIMITS = listandwatch.examples()


def _unit(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    units = s.profile_info.memory_units
    if s.gpu_memory_unit not in units:
        yield "gpuMemoryUnit", s.gpu_memory_unit, f"one of {', '.join(units)} for profile {s.profile}"


def _isolation(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    allowed = s.profile_info.isolation_modes
    for mode in s.isolation:
        if mode not in allowed:
            yield "isolation", mode, f"one of {', '.join(allowed)} for profile {s.profile}"
    if len(set(s.isolation)) != len(s.isolation):
        yield "isolation", s.isolation, "each mode at most once"


def _scheduler_mode(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    allowed = s.profile_info.scheduler_modes
    if s.scheduler.mode not in allowed:
        yield "scheduler.mode", s.scheduler.mode, f"one of {', '.join(allowed)} for profile {s.profile}"


def _compute_profile(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.compute_allocation and not s.profile_info.compute_allocation:
        yield "computeAllocation", True, f"false for profile {s.profile} (compute allocation is an ACK Pro feature)"


def _compute_core_mem(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.profile_info.compute_allocation and s.compute_allocation != ("core_mem" in s.isolation):
        if s.compute_allocation:
            yield "isolation", s.isolation, "core_mem among the modes when computeAllocation is true"
        else:
            yield "computeAllocation", False, "true when core_mem nodes are served"


def _compute_managed(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.compute_allocation and s.scheduler.mode != products.MANAGED:
        yield "scheduler.mode", s.scheduler.mode, "managed when computeAllocation is true (ACK Pro's scheduler)"


def _compute_region(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.compute_allocation and s.region is not None and s.region not in products.COMPUTE_REGIONS:
        yield "region", s.region, f"a region with compute allocation: {', '.join(products.COMPUTE_REGIONS)}"


def _region_typo(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.region is not None and s.region not in products.REGIONS and products.close_regions(s.region):
        yield "region", s.region, f"an Alibaba Cloud region ID: {' or '.join(products.close_regions(s.region))}?"


def _region_unknown(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.region is not None and s.region not in products.REGIONS and not products.close_regions(s.region):
        yield (
            "region",
            s.region,
            f"a region gpushare knows ({', '.join(products.REGIONS[:3])}, ...): check the spelling; for a newer "
            "region, the image repositories are read as registry-<region>.ack.aliyuncs.com",
        )


def _compute_region_unknown(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.compute_allocation and s.region is None and ctx.region is None:  # a live read may know it
        yield "region", None, "the cluster's region, so compute-allocation support can be checked"


def _config_api_served(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    version = s.version
    if s.scheduler.mode == products.MANAGED or s.scheduler.config_api == "auto":
        return
    if version is None:
        yield (
            "scheduler.configApi",
            s.scheduler.config_api,
            "auto when kubernetesVersion is unset (the chart then picks the API from the cluster's version)",
        )
        return
    try:
        versions.choose_api(s.scheduler.config_api, version.minor)
    except InputError as exc:
        yield exc.field, exc.value, exc.allowed


def _config_api_deprecated(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    version = s.version
    api = s.scheduler.config_api
    if s.scheduler.mode == products.MANAGED or version is None or api == "auto":
        return
    if api in versions.served_apis(version.minor) and versions.is_deprecated(api, version.minor):
        yield (
            "scheduler.configApi",
            api,
            f"{versions.default_api(version.minor)} (not deprecated in 1.{version.minor})",
        )


def _config_api_managed(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.scheduler.mode == products.MANAGED and s.scheduler.config_api != "auto":
        yield "scheduler.configApi", s.scheduler.config_api, "auto with scheduler.mode managed (ACK runs the scheduler)"


def _small_unit_cgpu(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.gpu_memory_unit == products.UNIT_128MIB and "cgpu" in s.isolation:
        yield (
            "isolation",
            s.isolation,
            f"share nodes for {products.UNIT_128MIB} units (cgpu nodes still hold at most 16 pods per GPU)",
        )


def _small_unit_autoscaling(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.gpu_memory_unit == products.UNIT_128MIB:
        yield (
            "gpuMemoryUnit",
            s.gpu_memory_unit,
            f"{products.UNIT_1GIB} if node autoscaling must add nodes for pending GPU pods",
        )


def _unknown_patch(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    version = s.version
    if version is not None and versions.newer_than_known(version):
        newest = versions.KubeVersion(version.minor).full
        yield (
            "kubernetesVersion",
            s.kubernetes_version,
            f"a released patch: the newest 1.{version.minor} gpushare knows is {newest}; the kube-scheduler image "
            f"{version.full} must exist",
        )


def _policy_secondary(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    version = s.version
    if (
        s.scheduler.mode == products.SECONDARY
        and s.scheduler.config_api == versions.POLICY
        and version is not None
        and version.minor > versions.POLICY_SCHEDULER_NAME_UNTIL
    ):
        yield (
            "scheduler.configApi",
            s.scheduler.config_api,
            f"{versions.default_api(version.minor)} for a secondary scheduler on 1.{version.minor} "
            "(a Policy scheduler is always default-scheduler there)",
        )


def _control_plane_version(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.scheduler.mode == products.CONTROL_PLANE and s.version is None:
        yield (
            "kubernetesVersion",
            None,
            f"the control plane's version ({versions.SUPPORTED} or v1.X.Y): control-plane files are written for one "
            "version",
        )


def _compute_policy(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.compute_allocation and s.cgpu.policy == cgpu.NATIVE:
        allowed = ", ".join(str(p) for p in cgpu.COMPUTE_POLICIES)
        yield "cgpu.policy", s.cgpu.policy, f"a policy that isolates compute ({allowed}): 5 isolates memory only"


def _compute_average(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    policy = s.cgpu.policy
    if s.compute_allocation and policy in cgpu.EVEN:
        share = "1/max_inst of the GPU" if policy == cgpu.AVERAGE else "an even share with the other active ones"
        yield (
            "cgpu.policy",
            policy,
            f"3 (fixed) or 2 (weighted): under {policy} ({cgpu.POLICIES[policy]}) every container gets {share}, "
            "not its percentage",
        )


def _small_unit_core_mem(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.gpu_memory_unit == products.UNIT_128MIB and "core_mem" in s.isolation:
        yield (
            "isolation",
            s.isolation,
            f"share (or cgpu) nodes for {products.UNIT_128MIB} units: core_mem is not supported",
        )


def _small_unit_plugin(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    from gpushare.settings.model import is_open_source_plugin  # loaded already: `s` is one of its models

    small = s.gpu_memory_unit == products.UNIT_128MIB
    if s.profile == products.ACK and small and is_open_source_plugin(s.device_plugin.image):
        yield (
            "devicePlugin.image.repository",
            s.device_plugin.image.repository,
            f"ACK's own device plugin image for {products.UNIT_128MIB} units (--device-plugin-image-repository, or "
            f"unset for the chart to ask at install; the open-source plugin knows {products.UNIT_GIB} and "
            f"{products.UNIT_MIB} only and would report {products.UNIT_GIB})",
        )


def _mib_list(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.gpu_memory_unit == products.UNIT_MIB:
        yield (
            "gpuMemoryUnit",
            s.gpu_memory_unit,
            f"{products.UNIT_GIB} units where a node has more GPU memory than {MIB_LIST_LIMITS} MiB (GPUs x "
            "MiB each): the device plugin lists one device per MiB and kubelet refuses a list over "
            f"{listandwatch.KUBELET_RECEIVE_BOUND:,} bytes, leaving aliyun.com/gpu-mem at 0",
        )


def _compute_plugin(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    from gpushare.settings.model import is_open_source_plugin  # loaded already: `s` is one of its models

    if s.profile == products.ACK and s.compute_allocation and is_open_source_plugin(s.device_plugin.image):
        yield (
            "devicePlugin.image.repository",
            s.device_plugin.image.repository,
            f"ACK's own device plugin image for compute allocation (--device-plugin-image-repository, or unset for "
            f"the chart to ask at install; the open-source plugin reports no {labels.GPU_CORE} capacity)",
        )


def _ack_without_ack_scheduler(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    if s.profile == products.ACK and s.scheduler.mode != products.MANAGED:
        for mode in s.isolated_modes:
            yield (
                "isolation",
                mode,
                f"share with scheduler.mode {s.scheduler.mode}: the open-source extender it installs knows no "
                "cGPU pod cap or compute allocation (use scheduler.mode managed on ACK Pro)",
            )


def _loads(s: InstallerSettings, ctx: ClusterFacts) -> Iterable[Offence]:
    return ()  # the findings come from load_settings' own error (gpushare.validation)


#: A settings document that does not load (unknown key, wrong type): reported, never a traceback.
DOCUMENT_RULE = Rule(
    "GS100",
    "error",
    "settings",
    "The settings document must match its schema",
    "See schemas/installer-settings.schema.json.",
    sources.GPUSHARE,
    _loads,
)

RULES: tuple[Rule, ...] = (
    DOCUMENT_RULE,
    Rule(
        "GS101",
        "error",
        "settings",
        "GPU memory unit must be one the profile supports",
        f"Use {products.UNIT_1GIB} or {products.UNIT_128MIB} with profile ack, "
        f"{products.UNIT_GIB} or {products.UNIT_MIB} with open-source.",
        sources.section(sources.ACK_MEMORY_UNIT, "Prerequisites"),
        _unit,
    ),
    Rule(
        "GS102",
        "error",
        "settings",
        "Isolation modes must be ones the profile supports",
        "The open-source device plugin shares without isolation: use isolation [share].",
        sources.section(sources.ACK_OVERVIEW, "Related concepts: memory isolation"),
        _isolation,
    ),
    Rule(
        "GS103",
        "error",
        "settings",
        "Scheduler mode must be one the profile supports",
        "managed needs ACK Pro; elsewhere use secondary or control-plane.",
        sources.section(sources.ACK_OVERVIEW, "Usage notes (ACK Pro only) and billing (cloud-native AI suite)"),
        _scheduler_mode,
    ),
    Rule(
        "GS104",
        "error",
        "settings",
        "Compute allocation needs the ack profile",
        "Drop computeAllocation or use profile ack on ACK Pro.",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _compute_profile,
    ),
    Rule(
        "GS105",
        "error",
        "settings",
        "Compute allocation and core_mem nodes go together",
        "Set computeAllocation: true together with isolation core_mem.",
        sources.section(sources.ACK_COMPUTE, "Step 1: Create a node pool that supports computing power allocation"),
        _compute_core_mem,
    ),
    Rule(
        "GS106",
        "error",
        "settings",
        "Compute allocation needs ACK Pro's managed scheduler",
        "Use scheduler.mode managed on ACK Pro.",
        sources.section(sources.ACK_COMPUTE, "Prerequisites"),
        _compute_managed,
    ),
    Rule(
        "GS107",
        "error",
        "settings",
        "Compute allocation is offered in some regions only",
        "Use a cluster in a listed region or disable computeAllocation.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _compute_region,
    ),
    Rule(
        "GS108",
        "warning",
        "settings",
        "Region unknown: compute-allocation support not checked",
        "Pass --region so the region list can be checked.",
        sources.section(sources.ACK_COMPUTE, "Limits"),
        _compute_region_unknown,
    ),
    Rule(
        "GS109",
        "error",
        "settings",
        "Scheduler configuration API must be served by the target Kubernetes minor",
        "Use --scheduler-config-api auto, or one the minor serves.",
        sources.SCHEDULER_CONFIG,
        _config_api_served,
    ),
    Rule(
        "GS110",
        "warning",
        "settings",
        "Scheduler configuration API is deprecated in the target minor",
        "Use the minor's newest API (auto).",
        sources.SCHEDULER_CONFIG,
        _config_api_deprecated,
    ),
    Rule(
        "GS111",
        "warning",
        "settings",
        "Scheduler configuration API is ignored in managed mode",
        "Leave scheduler.configApi at auto.",
        sources.SCHEDULER_CONFIG,
        _config_api_managed,
    ),
    Rule(
        "GS112",
        "warning",
        "settings",
        f"{products.UNIT_128MIB} units on cgpu nodes still cap a GPU at 16 pods",
        "Serve share nodes for fine-grained units, or plan for 16 pods per GPU.",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _small_unit_cgpu,
    ),
    Rule(
        "GS113",
        "warning",
        "settings",
        f"Node autoscaling does not scale out for {products.UNIT_128MIB} requests",
        f"Keep {products.UNIT_1GIB} units in autoscaled node pools.",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _small_unit_autoscaling,
    ),
    Rule(
        "GS115",
        "error",
        "settings",
        "A secondary scheduler cannot use the Policy file from 1.22",
        "Use a KubeSchedulerConfiguration API (auto).",
        sources.SCHEDULER_1_22,
        _policy_secondary,
    ),
    Rule(
        "GS114",
        "error",
        "settings",
        "control-plane mode needs the control plane's Kubernetes version",
        "Pass --kube-version with the version kubeadm runs.",
        sources.GPUSHARE_CONTROL_PLANE,
        _control_plane_version,
    ),
    Rule(
        "GS116",
        "error",
        "settings",
        "Compute allocation needs a cGPU policy that isolates compute (not 5)",
        "Set cgpu.policy to 3 (fixed) for fixed percentages, or 2 (weighted).",
        sources.section(sources.CGPU, "cGPU compute scheduling examples"),
        _compute_policy,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GS117",
        "warning",
        "settings",
        "cGPU policies 0, 1 and 4 split a GPU evenly, not by each container's gpu-core.percentage",
        "Use cgpu.policy 3 (fixed) for the percentages pods ask for.",
        sources.section(sources.CGPU, "cGPU compute scheduling examples"),
        _compute_average,
        explanation=cgpu.ISOLATION_CAVEATS,
    ),
    Rule(
        "GS118",
        "error",
        "settings",
        f"{products.UNIT_128MIB} units are not supported with isolation core_mem",
        f"Serve share nodes (documented) or cgpu nodes (16 pods per GPU) with {products.UNIT_128MIB} units.",
        sources.section(sources.ACK_MEMORY_UNIT, "Precautions"),
        _small_unit_core_mem,
        explanation="Checks the settings' isolation modes. GN309 checks the same fact on each Node labelled "
        "core_mem: one fact, a rule per target, so each finding names what to change where it was found.",
    ),
    Rule(
        "GS119",
        "error",
        "settings",
        f"{products.UNIT_128MIB} units on ACK need ACK's device plugin image",
        f"Leave devicePlugin.image unset (the chart then asks for ACK's plugin image at install: "
        f"{products.ACK_PLUGIN_LOOKUP} shows it), set it to that image, or use {products.UNIT_1GIB} units.",
        sources.section(sources.DEVICE_PLUGIN, "cmd/nvidia/main.go (--memory-unit: GiB or MiB)"),
        _small_unit_plugin,
    ),
    Rule(
        "GS120",
        "error",
        "settings",
        "cgpu and core_mem need ACK's scheduler: the open-source extender does not serve them",
        "Use scheduler.mode managed on ACK Pro, or serve share nodes only.",
        sources.section(sources.EXTENDER, "no cGPU cap, multi-GPU or compute allocation"),
        _ack_without_ack_scheduler,
    ),
    Rule(
        "GS121",
        "warning",
        "settings",
        "Kubernetes patch newer than the newest gpushare knows",
        "Check the release exists (its kube-scheduler image is pulled by that tag), or name a known patch.",
        sources.GPUSHARE_VERSIONS,
        _unknown_patch,
    ),
    Rule(
        "GS122",
        "error",
        "settings",
        "Compute allocation on ACK needs ACK's device plugin image",
        f"Leave devicePlugin.image unset (the chart then asks for ACK's plugin image at install: "
        f"{products.ACK_PLUGIN_LOOKUP} shows it), or set it to that image.",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/const.go (registers gpu-mem and gpu-count only)"),
        _compute_plugin,
    ),
    Rule(
        "GS123",
        "warning",
        "settings",
        "MiB units: a node's device list must fit kubelet's gRPC bound",
        f"Use {products.UNIT_GIB} units where a node has more GPU memory than the finding lists (validate names such "
        "nodes: GN312).",
        sources.section(sources.DEVICE_PLUGIN, "pkg/gpu/nvidia/nvidia.go (one device per MiB of each GPU)"),
        _mib_list,
        explanation=listandwatch.EXPLANATION,
    ),
    Rule(
        "GS124",
        "error",
        "settings",
        "The region must be an Alibaba Cloud region ID, not a misspelling of one",
        "Correct the region: it names the image registry (registry-<region>.ack.aliyuncs.com) and the compute "
        "allocation check.",
        sources.REGIONS,
        _region_typo,
    ),
    Rule(
        "GS125",
        "warning",
        "settings",
        "A region gpushare does not know",
        "Check the region ID; a region newer than gpushare's list is taken as written.",
        sources.REGIONS,
        _region_unknown,
    ),
)
