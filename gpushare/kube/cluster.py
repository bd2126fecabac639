"""A live cluster, read-only: the kubeconfig client and the reads every command shares.

Only get and list calls are made. Errors become one line: the kubeconfig that would not load, access
denied, or the cluster unreachable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gpushare.domain import labels
from gpushare.errors import GpushareError
from gpushare.kube.documents import Source
from gpushare.kube.ledger import scheduler_configs
from gpushare.kube.shapes import trim

T = TypeVar("T")


class ClusterError(GpushareError):
    """The cluster could not be read: unreachable, or access denied."""


#: Where a pod's ServiceAccount token and the cluster's CA are mounted (kubelet's projected volume).
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_a_pod() -> bool:
    """Running in a pod with its ServiceAccount's token, and no kubeconfig given ($KUBECONFIG, ~/.kube/config): the
    in-cluster configuration, as client-go's `rest.InClusterConfig` reads it, is the one to use."""
    if os.environ.get("KUBECONFIG") or (Path.home() / ".kube" / "config").exists():
        return False
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT / "token").exists()


def _in_cluster() -> Any:
    """An API client on the pod's ServiceAccount (its token re-read as kubelet rotates it)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    loader = config.incluster_config.InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(SERVICE_ACCOUNT / "token"), cert_filename=str(SERVICE_ACCOUNT / "ca.crt")
    )
    loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


class Cluster:
    """A kubeconfig's cluster, and its objects as plain dicts (the way `kubectl get -o yaml` shows them)."""

    def __init__(self, kubeconfig: str | None, context: str | None = None) -> None:
        from kubernetes import client, config

        try:
            if kubeconfig is None and in_a_pod():
                self.api = _in_cluster()
            else:
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


#: Items asked for in one list call: kubectl's own page size.
PAGE = 500
#: Pods that ended hold nothing and wait for nothing.
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Listing:
    """One list call: the kind of its items, their apiVersion, the client method and its fixed arguments, and
    whether the snapshot is useless without it (else it is noted as not read)."""

    kind: str
    api_version: str
    method: str
    api: str = "core"
    args: tuple[tuple[str, Any], ...] = ()
    required: bool = False
    keep: Callable[[dict[str, Any]], bool] = lambda _: True


def _kept_map(obj: dict[str, Any]) -> bool:
    """kube-system's ConfigMaps that matter: the GPUs marked unhealthy, and scheduler configurations (doctor)."""
    if str((obj.get("metadata") or {}).get("name", "")).startswith(labels.UNHEALTHY_CONFIGMAP_PREFIX):
        return True
    return bool(scheduler_configs(Source(obj, "")))


def _bound(pod: dict[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _waiting(pod: dict[str, Any]) -> bool:
    return not _bound(pod) and (pod.get("status") or {}).get("phase") not in _FINISHED


#: What gpushare reads of a live cluster, the one table of it: each file of a snapshot (`gpushare.live.snapshot`)
#: and the list calls that fill it, in the order they are made. A fleet command's `--kubeconfig` reads the first two
#: (`read_cluster`); `doctor` its Nodes, bound Pods, ConfigMaps and DaemonSets.
READS: dict[str, tuple[Listing, ...]] = {
    "nodes.json": (Listing("Node", "v1", "list_node", required=True),),
    "existing.json": (
        Listing(
            "Pod", "v1", "list_pod_for_all_namespaces", args=(("field_selector", "spec.nodeName!="),), required=True
        ),
        Listing(
            "ConfigMap",
            "v1",
            "list_namespaced_config_map",
            args=(("namespace", "kube-system"),),
            keep=_kept_map,
        ),
        Listing("ReplicaSet", "apps/v1", "list_replica_set_for_all_namespaces", api="apps"),
        Listing("StatefulSet", "apps/v1", "list_stateful_set_for_all_namespaces", api="apps"),
        Listing("ReplicationController", "v1", "list_replication_controller_for_all_namespaces"),
        Listing("Service", "v1", "list_service_for_all_namespaces"),
        Listing("Namespace", "v1", "list_namespace"),
        Listing("ResourceQuota", "v1", "list_resource_quota_for_all_namespaces"),
        Listing("PriorityClass", "scheduling.k8s.io/v1", "list_priority_class", api="scheduling"),
        Listing("PodDisruptionBudget", "policy/v1", "list_pod_disruption_budget_for_all_namespaces", api="policy"),
    ),
    "pending.json": (
        Listing(
            "Pod", "v1", "list_pod_for_all_namespaces", args=(("field_selector", "spec.nodeName="),), keep=_waiting
        ),
    ),
    "daemonsets.json": (Listing("DaemonSet", "apps/v1", "list_daemon_set_for_all_namespaces", api="apps"),),
}


def pages(
    cluster: Cluster, listing: Listing, page: int, versions: list[str] | None = None
) -> Iterator[list[dict[str, Any]]]:
    """The items of one list call, a page at a time (`limit`/`continue`), each with its kind and apiVersion.
    `versions` is given the list's resourceVersion (every page of one list shares it): where a watch starts."""
    method = getattr(getattr(cluster, listing.api), listing.method)
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = dict(listing.args)
        kwargs["limit"] = page
        if token:
            kwargs["_continue"] = token
        with translated():
            response = method(**kwargs, _preload_content=False)
            body = json.loads(response.data)
        items = body.get("items") or []
        for item in items:
            item["kind"], item["apiVersion"] = listing.kind, listing.api_version
        meta = body.get("metadata") or {}
        if versions is not None and not token:
            versions.append(str(meta.get("resourceVersion") or ""))
        yield items
        token = meta.get("continue") or None
        if not token:
            return


class Expired(ClusterError):
    """A watch's resourceVersion is too old for the API server (410 Gone): list again, then watch from there."""


#: The list calls `gpushare watch` keeps current: the snapshot's (`READS`), but the pods in one watch (bound and
#: unbound alike: a pod the scheduler binds moves between the snapshot's two pod lists, which two watches would
#: report in either order).
WATCHES: tuple[Listing, ...] = (
    READS["nodes.json"][0],
    Listing("Pod", "v1", "list_pod_for_all_namespaces", required=True),
    *(listing for listing in READS["existing.json"] if listing.kind != "Pod"),
    *READS["daemonsets.json"],
)


def _raw_watch() -> Any:
    """The kubernetes client's watch, its events' objects left as the server's JSON (no model classes: the
    watcher reads plain dicts as the lists give them, and a 1,000-event-per-second churn spends nothing on models).
    Its handling of the server's ERROR events (410 Gone raised) is kept."""
    from kubernetes import watch

    raw: Any = watch.Watch()  # type: ignore[no-untyped-call]
    raw.get_return_type = lambda _func: None
    return raw


def watch_events(
    cluster: Cluster, listing: Listing, version: str, timeout: int, stopper: Callable[[Any], None] = lambda _: None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """One watch of a list call from `version`, for at most `timeout` seconds (the server ends it): its events as
    (type, object), BOOKMARKs included (their object carries only the resourceVersion). An expired version raises
    Expired; what else goes wrong, a ClusterError. `stopper` is handed the watch, to `stop()` it from another thread."""
    from kubernetes.client.exceptions import ApiException

    raw = _raw_watch()
    stopper(raw)
    method = getattr(getattr(cluster, listing.api), listing.method)
    kwargs: dict[str, Any] = dict(listing.args)
    try:
        with translated():
            try:
                for event in raw.stream(
                    method,
                    resource_version=version,
                    timeout_seconds=timeout,
                    allow_watch_bookmarks=True,
                    _request_timeout=(10, timeout + 30),
                    **kwargs,
                ):
                    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                        continue
                    obj = event["object"]
                    obj.setdefault("kind", listing.kind)
                    obj.setdefault("apiVersion", listing.api_version)
                    yield str(event.get("type") or ""), obj
            except ApiException as exc:
                if exc.status == 410:
                    raise Expired(f"watching {listing.kind}s: {exc.reason}") from None
                raise
    finally:
        raw.stop()


@dataclass
class PlacementReading:
    """What a dry run reads of a live cluster (`READS`' nodes.json and existing.json): Nodes, bound pods, kube-system's
    unhealthy-GPU and scheduler ConfigMaps, and what placement reads besides (controllers, Services, Namespaces,
    quotas, classes, budgets), each trimmed to what gpushare reads; the server's version; `skipped` names what could
    not be read and why."""

    nodes: list[Source]
    existing: list[Source]
    version: str | None
    skipped: list[str] = field(default_factory=list)


def read_cluster(kubeconfig: str | None, context: str | None = None, page: int = PAGE) -> PlacementReading:
    cluster = Cluster(kubeconfig, context)
    reading = PlacementReading([], [], None)
    for name, into in (("nodes.json", reading.nodes), ("existing.json", reading.existing)):
        for listing in READS[name]:
            started = False
            try:
                for items in pages(cluster, listing, page):
                    started = True
                    into += cluster.sources([trim(item) for item in items if listing.keep(item)])
            except ClusterError as exc:
                if started:  # a list cut midway would leave a part of it: a fleet read half is no fleet
                    raise ClusterError(f"listing {listing.kind}s was cut midway, read it again: {exc}") from None
                if listing.required:
                    raise
                reading.skipped.append(f"{listing.kind}s not read ({exc})")
    try:
        reading.version = str(cluster.call(cluster.version_api.get_code).git_version)
    except ClusterError as exc:
        reading.skipped.append(f"server version not read ({exc})")
    return reading
