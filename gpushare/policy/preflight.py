"""`gpushare preflight`: can these settings be installed on this cluster? Read-only.

Reads the server version, Nodes (labels, capacity, region and instance-type labels), pods holding
aliyun.com/gpu-mem, the device plugin installed now (its memory unit) and the scheduler in use, then
runs the same rules as `gpushare validate` with those facts. Only get and list calls are made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpushare.kube.cluster import Cluster, ClusterError
from gpushare.kube.documents import Source, mapping
from gpushare.kube.workloads import read_workload
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.validate import Report, validate


@dataclass
class ClusterReading:
    version: str
    nodes: list[dict[str, Any]]
    gpu_pods: list[str]
    current_unit: str | None
    scheduler: str | None  # image tag of the kube-scheduler found, if any
    region: str | None
    notes: list[str] = field(default_factory=list)


def read_facts(kubeconfig: str | None, context: str | None = None) -> ClusterReading:
    cluster = Cluster(kubeconfig, context)
    notes: list[str] = []
    version = cluster.call(cluster.version_api.get_code).git_version
    nodes = cluster.objects("Node", cluster.core.list_node)
    pods = cluster.sources(cluster.objects("Pod", cluster.core.list_pod_for_all_namespaces))
    holding = []
    scheduler = None
    for src in pods:
        pod = read_workload(src)
        if pod is None or mapping(src.obj.get("status")).get("phase") in ("Succeeded", "Failed"):
            continue
        if pod.gpu_mem:
            holding.append(pod.key)
        containers = pod.spec.get("containers") or []
        if pod.namespace == "kube-system" and pod.labels.get("component") == "kube-scheduler" and containers:
            scheduler = str(mapping(containers[0]).get("image", "")).rsplit(":", 1)[-1]
    current = None
    try:
        daemonsets = cluster.objects("DaemonSet", cluster.apps.list_daemon_set_for_all_namespaces)
    except ClusterError as exc:
        daemonsets = []
        notes.append(f"could not read DaemonSets ({exc}): the installed unit is unknown")
    for ds in daemonsets:  # the device plugin, whatever its release named it: the one that takes --memory-unit
        for container in mapping(mapping(mapping(ds.get("spec")).get("template")).get("spec")).get("containers") or []:
            for arg in (container.get("command") or []) + (container.get("args") or []):
                match = re.match(r"--memory-unit=(\S+)", str(arg))
                if match:
                    current = match.group(1)
    regions = {n["metadata"].get("labels", {}).get("topology.kubernetes.io/region") for n in nodes} - {None}
    return ClusterReading(version, nodes, holding, current, scheduler, sorted(regions)[0] if regions else None, notes)


def preflight(
    settings_doc: dict[str, Any], facts: ClusterReading, where: str = "settings", **flags: str | None
) -> Report:
    """The rules over the settings and the cluster as read, with flags filling in what the cluster cannot say."""
    ctx = ClusterFacts(
        kube_version=facts.version,
        region=flags.get("region") or facts.region,
        scheduler_version=flags.get("scheduler_version") or facts.scheduler,
        cgpu_version=flags.get("cgpu_version"),
        driver_version=flags.get("driver_version"),
        docker_version=flags.get("docker_version"),
        chart_version=flags.get("chart_version"),
        extra={"current_unit": facts.current_unit, "gpu_pods": facts.gpu_pods},
    )
    sources = [Source(settings_doc, where)] + [Source(n, f"cluster:Node/{n['metadata']['name']}") for n in facts.nodes]
    return validate(sources, ctx)
