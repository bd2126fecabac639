"""Read a live cluster's nodes, pods and unhealthy-GPU ConfigMaps with the kubernetes client (read-only)."""

from __future__ import annotations

from typing import Any

from gpushare.errors import GpushareError
from gpushare.kube.documents import Source


class ClusterError(GpushareError):
    """The cluster could not be read: unreachable, or access denied."""


def read_cluster(kubeconfig: str | None, context: str | None = None) -> tuple[list[Source], list[Source]]:
    """(nodes + kube-system ConfigMaps, pods) as plain objects, the way `kubectl get -o yaml` shows them."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, TypeError) as exc:
        raise ClusterError(f"cannot load kubeconfig {kubeconfig or '(default)'}: {exc}") from None
    core = client.CoreV1Api(api_client)

    def plain(items: Any, kind: str) -> list[dict[str, Any]]:
        result = []
        for item in items:
            obj = api_client.sanitize_for_serialization(item)
            obj.setdefault("kind", kind)
            result.append(obj)
        return result

    try:
        nodes = plain(core.list_node().items, "Node")
        maps = plain(core.list_namespaced_config_map("kube-system").items, "ConfigMap")
        pods = plain(core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=").items, "Pod")
    except ApiException as exc:
        what = "access denied" if exc.status in (401, 403) else f"HTTP {exc.status}"
        raise ClusterError(f"reading the cluster failed ({what}): {exc.reason}") from None
    except (HTTPError, OSError) as exc:
        raise ClusterError(f"cluster unreachable: {exc}") from None
    where = kubeconfig or "kubeconfig"
    return (
        [Source(o, f"{where}:Node/{o['metadata']['name']}") for o in nodes + maps],
        [Source(o, f"{where}:Pod/{o['metadata']['name']}") for o in pods],
    )
