"""Every rendered object, for every valid combination of settings, accepted by the real kube-apiserver of the minor
it targets: a server-side dry run (dryRun=All) with strict field validation, so an unknown or misspelt field fails
as it would for `kubectl apply --dry-run=server`. kubernetes-validate bundles the schemas of 1.20-1.28 only; this is
what checks the newer minors (and the older ones again, against the real API rather than its published schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kube
import pytest
from cluster import ControlPlane
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from gpushare import render
from gpushare.generate.matrix import combos

pytestmark = pytest.mark.e2e


def _dry_run(dynamic: DynamicClient, obj: dict[str, Any]) -> dict[str, Any]:
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    # the client has no parameter for fieldValidation: both query parameters go in the path
    path = f"{resource.path(namespace=namespace)}?dryRun=All&fieldValidation=Strict"
    return dict(dynamic.request("post", path, body=obj).to_dict())


def test_every_rendered_object_passes_a_strict_server_side_dry_run(cluster: ControlPlane, tmp_path: Path) -> None:
    dynamic = kube.dynamic(cluster.kubeconfig, tmp_path / "discovery.json")
    checked = 0
    for doc in combos((f"1.{cluster.minor}",)):
        if doc["scheduler"]["mode"] == "control-plane":
            continue  # files for kubeadm's static pod: no object the API holds (the scheduler test starts them)
        for obj in render(doc, format="manifests").objects:
            try:
                _dry_run(dynamic, obj)
            except ApiException as exc:
                raise AssertionError(
                    f"1.{cluster.minor} refuses {obj['kind']}/{obj['metadata']['name']} of {doc}: {exc.body}"
                ) from None
            checked += 1
    assert checked > 20, "the matrix rendered too few objects to mean anything"


#: Server-side field validation (`fieldValidation=Strict`) is on by default from 1.25 (beta; GA in 1.27). Before, the
#: apiserver drops an unknown field silently, which is why kubernetes-validate checks those minors' objects.
STRICT_FROM = 25


def test_a_misspelt_field_is_refused(cluster: ControlPlane, tmp_path: Path) -> None:
    """The check can fail: strict validation names an unknown field (older servers drop it, as said above)."""
    dynamic = kube.dynamic(cluster.kubeconfig, tmp_path / "discovery.json")
    doc = {"profile": "open-source", "kubernetesVersion": f"1.{cluster.minor}"}
    (daemonset,) = [o for o in render(doc, format="manifests").objects if o["kind"] == "DaemonSet"]
    daemonset["spec"]["template"]["spec"]["nodeSelectr"] = {"a": "b"}
    if cluster.minor < STRICT_FROM:
        accepted = _dry_run(dynamic, daemonset)
        assert "nodeSelectr" not in accepted["spec"]["template"]["spec"]
        return
    with pytest.raises(ApiException) as refused:
        _dry_run(dynamic, daemonset)
    assert "nodeSelectr" in str(refused.value.body)
