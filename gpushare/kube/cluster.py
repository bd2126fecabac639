"""A live cluster, read-only: the kubeconfig client and the reads every command shares.

Only get and list calls are made. Errors become one line: the kubeconfig that would not load, access
denied, or the cluster unreachable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gpushare.errors import GpushareError
from gpushare.kube.documents import Source

T = TypeVar("T")


class ClusterError(GpushareError):
    """The cluster could not be read: unreachable, or access denied."""


class Cluster:
    """A kubeconfig's cluster, and its objects as plain dicts (the way `kubectl get -o yaml` shows them)."""

    def __init__(self, kubeconfig: str | None, context: str | None = None) -> None:
        from kubernetes import client, config

        try:
            self.api = config.new_client_from_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError, TypeError) as exc:
            raise ClusterError(f"cannot load kubeconfig {kubeconfig or '(default)'}: {exc}") from None
        self.name = kubeconfig or "kubeconfig"
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.scheduling = client.SchedulingV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)
        self.version_api = client.VersionApi(self.api)

    def objects(self, kind: str, read: Callable[[], Any]) -> list[dict[str, Any]]:
        """The items of one list call, as plain dicts with their kind."""
        result = []
        for item in self.call(read).items:
            obj = self.api.sanitize_for_serialization(item)
            obj.setdefault("kind", kind)
            result.append(obj)
        return result

    def sources(self, objects: list[dict[str, Any]]) -> list[Source]:
        return [Source(o, f"{self.name}:{o['kind']}/{o['metadata'].get('name', '')}") for o in objects]

    def call(self, read: Callable[[], T]) -> T:
        """One read; what goes wrong becomes a ClusterError with a one-line reason."""
        with translated():
            return read()


@contextmanager
def translated() -> Iterator[None]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        yield
    except ApiException as exc:
        what = "access denied" if exc.status in (401, 403) else f"HTTP {exc.status}"
        raise ClusterError(f"reading the cluster failed ({what}): {exc.reason}") from None
    except (HTTPError, OSError) as exc:
        raise ClusterError(f"cluster unreachable: {exc}") from None


@dataclass
class PlacementReading:
    """What a dry run reads of a live cluster: Nodes and kube-system ConfigMaps, bound pods and what kube-scheduler's
    default spreading reads (ReplicaSets, StatefulSets, ReplicationControllers, Services, Namespaces), the server's
    version; `skipped` names what could not be read and why."""

    nodes: list[Source]
    existing: list[Source]
    version: str | None
    skipped: list[str] = field(default_factory=list)


def read_cluster(kubeconfig: str | None, context: str | None = None) -> PlacementReading:
    cluster = Cluster(kubeconfig, context)
    core, apps = cluster.core, cluster.apps
    nodes = cluster.objects("Node", core.list_node)
    maps = cluster.objects("ConfigMap", lambda: core.list_namespaced_config_map("kube-system"))
    pods = cluster.objects("Pod", lambda: core.list_pod_for_all_namespaces(field_selector="spec.nodeName!="))
    reading = PlacementReading(cluster.sources(nodes + maps), cluster.sources(pods), None)
    optional: list[tuple[str, Callable[[], Any]]] = [
        ("ReplicaSet", apps.list_replica_set_for_all_namespaces),
        ("StatefulSet", apps.list_stateful_set_for_all_namespaces),
        ("ReplicationController", core.list_replication_controller_for_all_namespaces),
        ("Service", core.list_service_for_all_namespaces),
        ("Namespace", core.list_namespace),
        ("ResourceQuota", core.list_resource_quota_for_all_namespaces),
        ("PriorityClass", cluster.scheduling.list_priority_class),
        ("PodDisruptionBudget", cluster.policy.list_pod_disruption_budget_for_all_namespaces),
    ]
    for kind, read in optional:
        try:
            reading.existing += cluster.sources(cluster.objects(kind, read))
        except ClusterError as exc:
            reading.skipped.append(f"{kind}s not read ({exc})")
    try:
        reading.version = str(cluster.call(cluster.version_api.get_code).git_version)
    except ClusterError as exc:
        reading.skipped.append(f"server version not read ({exc})")
    return reading
