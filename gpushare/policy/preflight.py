"""`gpushare preflight`: can these settings be installed on this cluster? Read-only.

Reads the server version, Nodes (labels, capacity, region and instance-type labels), pods holding
aliyun.com/gpu-mem, the device plugin installed now (its memory unit) and the scheduler in use, then
runs the same rules as `gpushare validate` with those facts. Only get and list calls are made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpushare.domain import labels
from gpushare.kube.cluster import ClusterError
from gpushare.kube.documents import Source
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
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, TypeError) as exc:
        raise ClusterError(f"cannot load kubeconfig {kubeconfig or '(default)'}: {exc}") from None
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    plain = api_client.sanitize_for_serialization
    notes: list[str] = []
    try:
        version = client.VersionApi(api_client).get_code().git_version
        nodes = [plain(n) | {"kind": "Node"} for n in core.list_node().items]
        pods = core.list_pod_for_all_namespaces().items
    except ApiException as exc:
        what = "access denied" if exc.status in (401, 403) else f"HTTP {exc.status}"
        raise ClusterError(f"reading the cluster failed ({what}): {exc.reason}") from None
    except (HTTPError, OSError) as exc:
        raise ClusterError(f"cluster unreachable: {exc}") from None
    holding = []
    scheduler = None
    for pod in (plain(p) for p in pods):
        meta, spec = pod.get("metadata", {}), pod.get("spec", {})
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        containers = spec.get("containers") or []
        if any(labels.GPU_MEM in (c.get("resources", {}).get("limits") or {}) for c in containers):
            holding.append(f"{meta.get('namespace')}/{meta.get('name')}")
        if meta.get("namespace") == "kube-system" and (meta.get("labels") or {}).get("component") == "kube-scheduler":
            scheduler = str(containers[0].get("image", "")).rsplit(":", 1)[-1] if containers else None
    current = None
    try:
        for ds in (plain(d) for d in apps.list_namespaced_daemon_set("kube-system").items):
            if not str(ds["metadata"].get("name", "")).startswith("gpushare-device-plugin"):
                continue
            for container in ds["spec"]["template"]["spec"].get("containers") or []:
                for arg in (container.get("command") or []) + (container.get("args") or []):
                    match = re.match(r"--memory-unit=(\S+)", str(arg))
                    if match:
                        current = match.group(1)
    except ApiException as exc:
        notes.append(f"could not read DaemonSets in kube-system ({exc.status}): the installed unit is unknown")
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
