"""What the user must do after installing: which node labels to set and how a pod asks for a share.

One text for the chart's NOTES.txt and for `render --format manifests` (printed to stderr).
"""

from __future__ import annotations

import textwrap

import jinja2

from gpushare.domain import cgpu, labels, products
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.domain.versionstr import valid
from gpushare.settings.model import InstallerSettings

# Jinja with [[ ]] delimiters, so Helm's {{ }} can pass through into NOTES.txt untouched.
_ENV = jinja2.Environment(
    variable_start_string="[[",
    variable_end_string="]]",
    block_start_string="[%",
    block_end_string="%]",
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
    undefined=jinja2.StrictUndefined,
)

_TEXT = _ENV.from_string(
    """gpushare [[ profile ]] stack: [[ components ]].
[[ cluster ]]
[% if install and not plugin_at_install %]

Install the chart:
     helm install [[ release ]] [[ chart ]] -n [[ namespace ]][% if namespace != 'kube-system' %] --create-namespace[% endif %]

[% endif %]
[% if install and pinned %]
   The chart is for the Kubernetes minor of [[ pinned ]] only (Chart.yaml kubeVersion): `helm template` and
   `helm lint` need --kube-version [[ pinned ]], since without a cluster helm checks its own default version.
[% endif %]
[% if plugin_at_install %]

0. Give the device plugin image when installing: [[ need ]] ACK's own device plugin, whose image
   gpushare does not know (it is not public; your cluster runs it). Read it with
     [[ plugin_lookup ]]
   then install with it:
     helm install [[ release ]] [[ chart ]] -n [[ namespace ]] \\
       --set devicePlugin.image.repository=<repository> --set devicePlugin.image.tag=<tag>
[% endif %]

1. Label the GPU nodes that share GPUs:
[% if profile == 'open-source' %]
     kubectl label node <node> [[ os_label ]]
   Every such node runs the NVIDIA container runtime as its default runtime ("default-runtime": "nvidia" in
   /etc/docker/daemon.json, or default_runtime_name = "nvidia" in containerd's config): pods asking for
   [[ gpu_mem ]] carry no nvidia.com/gpu, so without it they see no GPU. `gpushare preflight` lists each
   node's runtime.
[% else %]
[% for m in isolation if m != 'core_mem' %]
     kubectl label node <node> [[ schedule_label ]]=[[ m ]]
[% endfor %]
[% if 'core_mem' in isolation %]
   core_mem (compute isolation) cannot be added to an existing node with kubectl label: create a node pool
   whose node label is [[ schedule_label ]]=core_mem and add the nodes through it (remove a node from the
   cluster and re-add it through that node pool).
[% endif %]
[% if mode == 'managed' %]
   GPU choice per node: binpack (the default) fills one GPU before the next;
     kubectl label node <node> [[ placement_label ]]=spread   # spreads pods over the node's GPUs
[% endif %]
[% endif %]

2. A pod asks for a share of one GPU (unit: [[ unit ]]):
[% if mode == 'secondary' %]
     spec.schedulerName: [[ scheduler_name ]]
[% endif %]
     resources.limits:
       [[ gpu_mem ]]: [[ example_units ]]   # [[ example_meaning ]]
[% if compute %]
       [[ gpu_core ]]: 30   # 30% of one GPU's compute; a multiple of 5 in 5..100, core_mem nodes only
[% endif %]
[% if profile == 'ack' and mode == 'managed' %]
   Several GPUs on one node: pod label [[ gpu_count ]]: "M" with [[ gpu_mem ]] a multiple of M.
[% endif %]
[% if isolated %]

[[ cgpu_paragraph ]]
Upgrading cGPU is a cold upgrade: the installer DaemonSet updates OnDelete; on each node stop all running
containers (ACK's steps: docker stop on every container, not only those using cGPU), then delete that node's
installer pod. A rolling update under running containers is unsafe.
[% endif %]
[% if mode == 'secondary' %]

The scheduler extender serves filter and bind without authentication on every interface of its pod; the
NetworkPolicy rendered beside it admits nobody else. On a CNI without NetworkPolicy support every pod can
call bind: use one that enforces NetworkPolicy.
[% elif mode == 'control-plane' %]

The scheduler extender serves filter and bind without authentication on port [[ extender_port ]] of each
control-plane node's own network (the static pod uses the host network, where no NetworkPolicy applies):
block that port from outside the node, as control-plane/README.md says.
[% endif %]
[% if mode == 'control-plane' %]

3. Change the kube-scheduler static pod on each control-plane node as control-plane/README.md says
   (files written beside this chart or manifest). Nothing was applied to the control plane.
[% endif %]

Changing the memory unit later: delete every pod requesting [[ gpu_mem ]] first, then reinstall.
[% for what, value in requirements.items() %]

Requires [[ what ]]: [[ value ]].
[% endfor %]
"""
)

#: The example request in the notes: 2 GiB, in the settings' unit.
EXAMPLE_MIB = 2048


def components(settings: InstallerSettings) -> str:
    """What the stack holds, in the words the notes and Chart.yaml use: only what is rendered."""
    held = ["device plugin"]
    if settings.isolated_modes:
        held.append(f"cGPU installer ({', '.join(settings.isolated_modes)})")
    if settings.scheduler.mode != products.MANAGED:
        held.append(f"scheduler extender ({settings.scheduler.mode})")
    return ", ".join(held)


#: For which cluster each (profile, scheduler mode) is, and how to render for the others: the notes' second line.
_CLUSTERS = {
    (products.ACK, products.MANAGED): "For an ACK Pro cluster: ACK's managed kube-scheduler schedules the shares "
    "itself, so no scheduler is installed; the chart takes the place of ACK's own ack-ai-installer component "
    "(one or the other on a node, never both: `gpushare doctor` says where both run).",
    (products.ACK, products.SECONDARY): "For an ACK cluster, with a second kube-scheduler that calls the extender "
    "(pods opt in by spec.schedulerName).",
    (products.ACK, products.CONTROL_PLANE): "For an ACK cluster whose kube-scheduler you configure (control-plane "
    "files to apply).",
    (products.OPEN_SOURCE, products.SECONDARY): "For any cluster (self-managed or another provider's): the "
    "open-source extender beside a second kube-scheduler (pods opt in by spec.schedulerName).",
    (products.OPEN_SOURCE, products.CONTROL_PLANE): "For a cluster whose control plane you run (kubeadm): the "
    "open-source extender, called by the cluster's own kube-scheduler (control-plane files to apply).",
}
#: How to render for the other clusters, by profile.
_OTHERS = {
    products.ACK: "Other clusters: --profile open-source (the open-source extender and device plugin, a second "
    "scheduler), or --scheduler-mode control-plane for a kubeadm control plane.",
    products.OPEN_SOURCE: "ACK clusters: --profile ack (ACK's device plugin and cGPU; its managed scheduler by "
    "default).",
}


def cluster(settings: InstallerSettings) -> str:
    """For which cluster these settings render, and how to render for the others."""
    return f"{_CLUSTERS[(settings.profile, settings.scheduler.mode)]} {_OTHERS[settings.profile]}"


def example(unit: str) -> tuple[int, str]:
    """(units, what they mean) for the example request."""
    units = EXAMPLE_MIB // MIB_PER_UNIT[unit]
    size = f"{EXAMPLE_MIB // 1024} GiB"
    return units, size if MIB_PER_UNIT[unit] in (1, 1024) else f"{units} x {unit.replace('MiB', ' MiB')} = {size}"


def notes(
    settings: InstallerSettings,
    requirements: dict[str, str] | None = None,
    helm: bool = False,
    chart: str | None = None,
) -> str:
    """The notes for these settings; `helm`: as NOTES.txt, reading the values a user may set at install time;
    `chart`: where a chart was written, for the install command (None: manifests, or the chart being read)."""
    unit: str = settings.gpu_memory_unit
    units, meaning = example(unit)
    scheduler_name = settings.scheduler.name
    example_units, example_meaning = str(units), meaning
    if helm:
        unit, scheduler_name = "{{ .Values.gpuMemoryUnit }}", "{{ .Values.scheduler.name }}"
        pairs = [(u, example(u)) for u in settings.profile_info.memory_units]
        example_units = "{{ get (dict " + " ".join(f'"{u}" "{n}"' for u, (n, _) in pairs) + ") .Values.gpuMemoryUnit }}"
        example_meaning = (
            "{{ get (dict " + " ".join(f'"{u}" "{m}"' for u, (_, m) in pairs) + ") .Values.gpuMemoryUnit }}"
        )
    return (
        _TEXT.render(
            profile=settings.profile,
            components=components(settings),
            cluster="\n".join(textwrap.wrap(cluster(settings), 110)),
            isolated=settings.isolated_modes,
            mode=settings.scheduler.mode,
            isolation=settings.isolation,
            os_label="=".join(labels.OPEN_SOURCE_NODE_LABEL),
            schedule_label=labels.SCHEDULE_LABEL,
            placement_label=labels.PLACEMENT_LABEL,
            unit=unit,
            scheduler_name=scheduler_name,
            extender_port=settings.extender.port,
            gpu_mem=labels.GPU_MEM,
            gpu_core=labels.GPU_CORE,
            gpu_count=labels.GPU_COUNT,
            compute=settings.compute_allocation,
            example_units=example_units,
            example_meaning=example_meaning,
            requirements=requirements or {},
            cgpu_paragraph=_cgpu_paragraph(settings),
            plugin_at_install=not helm and settings.plugin_at_install,
            install=not helm and chart is not None,
            pinned=settings.version.full if settings.version is not None else "",
            need=settings.ack_plugin_need,
            plugin_lookup=products.ACK_PLUGIN_LOOKUP,
            release=settings.release_name,
            chart=chart or "<chart directory>",
            namespace=settings.namespace,
        ).rstrip()
        + "\n"
    )


def _cgpu_paragraph(settings: InstallerSettings) -> str:
    tag = settings.cgpu.image.tag
    drivers = cgpu.driver_range(tag) if valid(tag) else None
    text = (
        f"cGPU ({', '.join(settings.isolated_modes)} nodes). {cgpu.ISOLATION_CAVEATS} The cGPU {tag} image needs "
        f"NVIDIA driver >= {cgpu.MIN_DRIVER}"
        + (f" (ACK's cGPU FAQ lists {drivers} for it)." if drivers else ".")
        + " The installer writes cgpu.policy to every GPU of the node; unset, cGPU keeps its own default policy "
        "(ACK's documents name none)"
        + (
            f"; compute allocation wants {cgpu.FIXED} (fixed) for the percentages pods ask for."
            if settings.compute_allocation
            else "."
        )
    )
    return textwrap.fill(text, 112)


__all__ = ["notes"]
