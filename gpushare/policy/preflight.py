"""`gpushare preflight`: can these settings be installed on this cluster? Read-only.

Reads the server version, the `kube-system` namespace (the cluster's age), Nodes (labels, capacity, runtime),
pods holding aliyun.com/gpu-mem, the installer's deployed helm release, the device plugin DaemonSets and the
kube-scheduler pod, then runs the same rules as `gpushare validate` with those facts. Only get and list calls
are made. A read that is denied, or a fact the cluster does not show, never passes silently: each check it
leaves undone is reported as not checked, with why and how to supply the fact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import products
from gpushare.errors import InputError
from gpushare.kube import installed
from gpushare.kube.cluster import Cluster, ClusterError
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.kube.nodes import read_node
from gpushare.kube.workloads import read_workload
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import NotChecked, Report, validate
from gpushare.settings.model import InstallerSettings, load_settings

SYSTEM = "kube-system"


@dataclass
class ClusterReading:
    """What preflight read; `denied` names each read that failed and why."""

    version: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    gpu_pods: list[Source] = field(default_factory=list)  # running pods holding aliyun.com/gpu-mem
    units: list[installed.UnitReading] = field(default_factory=list)
    undecided_nodes: list[str] = field(default_factory=list)  # GPU nodes whose numbers do not tell their unit
    release: installed.Release | None = None
    scheduler: str | None = None  # image tag of the kube-scheduler pod found, if any
    region: str | None = None
    created: str | None = None  # kube-system's creationTimestamp
    denied: dict[str, str] = field(default_factory=dict)  # what -> why it could not be read

    @property
    def gpu_pod_keys(self) -> list[str]:
        return [w.key for w in map(read_workload, self.gpu_pods) if w is not None]


def read_facts(kubeconfig: str | None, context: str | None = None) -> ClusterReading:
    cluster = Cluster(kubeconfig, context)
    reading = ClusterReading(str(cluster.call(cluster.version_api.get_code).git_version))

    def attempt(what: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except ClusterError as exc:
            reading.denied[what] = str(exc)
            return None

    reading.nodes = cluster.objects("Node", cluster.core.list_node)
    namespace = attempt("the kube-system Namespace", lambda: cluster.call(lambda: cluster.core.read_namespace(SYSTEM)))
    if namespace is not None:
        created = namespace.metadata.creation_timestamp
        reading.created = created.isoformat() if created is not None else None
    pods = attempt("Pods", lambda: cluster.objects("Pod", cluster.core.list_pod_for_all_namespaces)) or []
    for src in cluster.sources(pods):
        pod = read_workload(src)
        if pod is None or mapping(src.obj.get("status")).get("phase") in ("Succeeded", "Failed"):
            continue
        if pod.gpu_mem:
            reading.gpu_pods.append(src)
        containers = pod.spec.get("containers") or []
        if pod.namespace == "kube-system" and pod.labels.get("component") == "kube-scheduler" and containers:
            reading.scheduler = str(mapping(containers[0]).get("image", "")).rsplit(":", 1)[-1]
    daemonsets = attempt(
        "DaemonSets", lambda: cluster.objects("DaemonSet", cluster.apps.list_daemon_set_for_all_namespaces)
    )
    reading.units += installed.daemonset_units(daemonsets or [])
    secrets = attempt(
        "helm release Secrets",
        lambda: cluster.objects(
            "Secret",
            lambda: cluster.core.list_secret_for_all_namespaces(label_selector=installed.HELM_SECRET_SELECTOR),
        ),
    )
    releases = [r for r in (installed.helm_release(s) for s in secrets or []) if r is not None]
    reading.release = releases[0] if releases else None
    reading.units += [r.unit for r in releases if r.unit is not None]
    node_infos = [n for n in (read_node(Source(obj, "")) for obj in reading.nodes) if n is not None]
    from_nodes, reading.undecided_nodes = installed.node_units(node_infos)
    reading.units += from_nodes
    regions = sorted({n.region for n in node_infos if n.region})
    reading.region = regions[0] if regions else None
    return reading


def _not_checked(settings: InstallerSettings | None, facts: ClusterReading, ctx: ClusterFacts) -> list[NotChecked]:
    """Each check the settings call for whose fact neither the cluster nor a flag gave."""
    if settings is None:
        return []
    compute = settings.compute_allocation
    isolated = bool(settings.isolated_modes)
    small = settings.gpu_memory_unit == products.UNIT_128MIB
    missing = []
    scheduler_hidden = facts.denied.get("Pods") or (
        "no kube-scheduler pod in kube-system (ACK's managed scheduler is not visible)"
    )
    if compute and ctx.scheduler_version is None:
        missing.append(NotChecked("kube-scheduler version", "GC403", scheduler_hidden, "--scheduler-version"))
    if compute and ctx.chart_version is None:
        why = facts.denied.get("helm release Secrets") or f"no deployed {products.INSTALLER_CHART} helm release"
        missing.append(NotChecked(f"{products.INSTALLER_CHART} chart version", "GC402", why, "--chart-version"))
    if (compute or isolated) and ctx.cgpu_version is None:
        why = "the API does not show the cGPU version"
        missing.append(NotChecked("cGPU version", "GC402, GC406, GC407, GC408", why, "--cgpu-version"))
    if isolated and ctx.driver_version is None:
        missing.append(
            NotChecked("NVIDIA driver version", "GC408, GC409", "the API does not show the driver", "--driver-version")
        )
    if (compute or small) and facts.created is None:
        why = facts.denied.get("the kube-system Namespace", "kube-system has no creationTimestamp")
        missing.append(NotChecked("cluster age", "GC412, GC413", why, "read access to the kube-system Namespace"))
    if not facts.units and facts.gpu_pods:
        parts = [f"{what} not readable ({why})" for what, why in facts.denied.items() if what != "Pods"]
        if facts.undecided_nodes:
            parts.append(
                f"nodes {', '.join(facts.undecided_nodes[:3])} report GPU memory that could be {products.UNIT_GIB} or "
                f"{products.UNIT_128MIB} units "
                f"and carry no GPU memory label ({', '.join(installed.GPU_MEMORY_LABELS)})"
            )
        why = "; ".join(parts) or "no device plugin DaemonSet, installer release or GPU node says which"
        missing.append(NotChecked("installed GPU memory unit", "GC411", why, "read access to DaemonSets or Secrets"))
    if "Pods" in facts.denied:
        missing.append(
            NotChecked("running GPU pods", "GC411, GW214", facts.denied["Pods"], "read access to Pods (list)")
        )
    return missing


def preflight(
    settings_doc: dict[str, Any], facts: ClusterReading, where: str = "settings", **flags: str | None
) -> Report:
    """The rules over the settings and the cluster as read, with flags filling in what the cluster cannot say."""
    release = facts.release
    ctx = ClusterFacts(
        kube_version=facts.version,
        region=flags.get("region") or facts.region,
        scheduler_version=flags.get("scheduler_version") or facts.scheduler,
        cgpu_version=flags.get("cgpu_version"),
        driver_version=flags.get("driver_version"),
        docker_version=flags.get("docker_version"),
        chart_version=flags.get("chart_version") or (release.chart_version if release else None),
        scheduler_name=flags.get("scheduler_name") or (release.scheduler_name if release else None),
        cluster_created=facts.created,
        current_units=facts.units,
        gpu_pods=facts.gpu_pod_keys,
        flags=True,
    )
    sources = [Source(settings_doc, where)]
    sources += [Source(n, f"cluster:Node/{n['metadata']['name']}") for n in facts.nodes]
    sources += facts.gpu_pods
    report = validate(sources, ctx)
    try:
        settings = load_settings(settings_doc)
    except InputError:  # already GS100 in the report
        settings = None
    report.not_checked = _not_checked(settings, facts, ctx)
    return report
