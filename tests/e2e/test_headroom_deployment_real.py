"""Headroom proven as a user would: a real Deployment scaled by kube-controller-manager's controllers, its replicas
placed by the real kube-scheduler behind the stand-in extender. `gpushare capacity`'s N more for the Deployment's
template: scaled to N, every replica binds; to N + 1, exactly one stays pending, with the message the answer gives."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cluster import ControlPlane
from differential import Scenario
from kube import gpu_node
from kubernetes.client.exceptions import ApiException
from test_capacity_real import as_running, replica
from test_differential import create, delete, outcome, scheduler  # noqa: F401  (the fixture, by its name)
from toolchain import CONTROLLER_MINORS

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics
from gpushare.planner import headroom

pytestmark = pytest.mark.e2e
#: Only these minors build kube-controller-manager (tests/toolchain.py).
MINORS = CONTROLLER_MINORS


@pytest.fixture(scope="module")
def controllers(cluster: ControlPlane) -> Iterator[ControlPlane]:
    cluster.start_controllers()
    yield cluster


def deployment(name: str, mem: int, replicas: int) -> dict[str, Any]:
    pod = replica(name, mem)
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod["spec"]},
        },
    }


def replicas(core: Any, name: str) -> tuple[list[str], list[Any]]:
    """The Deployment's pods: the nodes of those bound, and those kube-scheduler reported unschedulable."""
    pods = [p for p in core.list_namespaced_pod("default", label_selector=f"app={name}").items]
    bound = [p.spec.node_name for p in pods if p.spec.node_name]
    refused = [
        p
        for p in pods
        if not p.spec.node_name
        and any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in p.status.conditions or [])
    ]
    return bound, refused


def scaled(
    core: Any, apps: Any, name: str, count: int, pending: int, timeout: float = 60
) -> tuple[list[str], list[Any]]:
    """Scale to `count` and wait until `count - pending` replicas are bound and `pending` reported unschedulable."""
    apps.patch_namespaced_deployment_scale(name, "default", {"spec": {"replicas": count}})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bound, refused = replicas(core, name)
        if len(bound) == count - pending and len(refused) == pending:
            time.sleep(2)  # and it stays so: no other replica binds or is created
            again = replicas(core, name)
            if (len(again[0]), len(again[1])) == (count - pending, pending):
                return again
        time.sleep(0.2)
    return replicas(core, name)


@pytest.mark.parametrize("seed", range(3))
def test_scaling_a_deployment_to_the_headroom_binds_all_and_one_more_stays_pending(
    controllers: ControlPlane,
    scheduler: Any,  # noqa: F811
    seed: int,
) -> None:
    core, apps, log, standin = scheduler
    rng = random.Random(seed)
    case = Scenario(seed=seed)
    for i in range(rng.randint(2, 3)):
        node, status = gpu_node(f"h{seed}-{i}", rng.choice([1, 2]), rng.choice([16, 24]))
        case.nodes.append({**node, "spec": {}, **status})
    busy = [replica(f"hbusy{seed}-{k}", rng.randint(2, 10)) for k in range(rng.randint(1, 3))]
    name = f"serve{seed}"
    template = deployment(name, rng.randint(5, 9), 0)
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(controllers.minor))
    create(core, apps, case, standin, log)
    try:
        running = []
        for pod in busy:
            core.create_namespaced_pod("default", pod)
            outcome(core, pod["metadata"]["name"], log)
            running.append(as_running(core, pod))
        (answer,) = headroom(case.nodes, [template], existing=running, semantics=semantics)
        assert answer.more > 0 and answer.blocked_by is not None
        apps.create_namespaced_deployment("default", template)
        bound, refused = scaled(core, apps, name, answer.more, 0)
        assert (len(bound), refused) == (answer.more, []), (seed, answer.more, bound)
        bound, refused = scaled(core, apps, name, answer.more + 1, 1)
        assert len(bound) == answer.more and len(refused) == 1, (seed, answer.more, len(bound), len(refused))
        (condition,) = [c for c in refused[0].status.conditions if c.type == "PodScheduled"]
        assert condition.message == answer.blocked_by.message, (seed, condition.message, answer.blocked_by.message)
    finally:
        # no kubelet confirms a graceful deletion here: the Deployment and its ReplicaSet go first, orphaning the
        # pods, which then go at once
        with contextlib.suppress(ApiException):
            apps.delete_namespaced_deployment(name, "default", propagation_policy="Orphan")
        for owned in apps.list_namespaced_replica_set("default", label_selector=f"app={name}").items:
            apps.delete_namespaced_replica_set(owned.metadata.name, "default", propagation_policy="Orphan")
        for pod in core.list_namespaced_pod("default", label_selector=f"app={name}").items:
            core.delete_namespaced_pod(pod.metadata.name, "default", grace_period_seconds=0)
        case.pods = busy
        delete(core, apps, case)
