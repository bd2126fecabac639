"""`gpushare capacity` against the real kube-scheduler + the stand-in extender: the headroom it reports for a
template is what the real scheduler gives when the replicas are created one by one: N bound, the next one
unschedulable. The busy pods go first through the real scheduler and are read back as running (ties it breaks at
random decide where they land); from there identical replicas fill each GPU the same whatever ties it breaks, so
the count is a fact of the fleet as it is, not of the order."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from cluster import tail
from differential import Scenario
from kube import gpu_node
from test_differential import create, delete, outcome, scheduler  # noqa: F401  (the fixture, by its name)

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics
from gpushare.planner import headroom

pytestmark = pytest.mark.e2e


def replica(name: str, mem: int) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"limits": {"aliyun.com/gpu-mem": str(mem)}, "requests": {"cpu": "1"}},
    }
    spec = {"schedulerName": "gpushare-scheduler", "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def as_running(core: Any, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the cluster lists it once bound: the node the real scheduler chose, the extender's annotations."""
    real = core.read_namespaced_pod(pod["metadata"]["name"], "default")
    meta = {**pod["metadata"], "annotations": dict(real.metadata.annotations or {})}
    spec = {**pod["spec"], "nodeName": real.spec.node_name}
    return {**pod, "metadata": meta, "spec": spec, "status": {"phase": "Running"}}


@pytest.mark.parametrize("seed", range(5))
def test_headroom_is_what_the_real_scheduler_binds(cluster: Any, scheduler: Any, seed: int) -> None:  # noqa: F811
    core, apps, log, standin = scheduler
    rng = random.Random(seed)
    case = Scenario(seed=seed)
    for i in range(rng.randint(2, 4)):
        node, status = gpu_node(f"n{i}", rng.choice([1, 2, 4]), rng.choice([8, 16, 24]), cpu=rng.choice(["4", "32"]))
        case.nodes.append({**node, "spec": {}, **status})
    busy = [replica(f"busy{k}", rng.randint(1, 10)) for k in range(rng.randint(0, 3))]
    template = replica("serve", rng.randint(3, 9))
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    create(core, apps, case, standin, log)
    made: list[str] = []
    try:
        running = []  # the busy pods where the real scheduler put them (its ties are its own): the cluster as it is
        for pod in busy:
            core.create_namespaced_pod("default", pod)
            made.append(pod["metadata"]["name"])
            outcome(core, pod["metadata"]["name"], log)
            running.append(as_running(core, pod))
        (answer,) = headroom(case.nodes, [template], existing=running, semantics=semantics)
        assert answer.blocked_by is not None
        for k in range(answer.more + 1):
            name = f"serve-{k}"
            core.create_namespaced_pod("default", {**template, "metadata": {"name": name, "namespace": "default"}})
            made.append(name)
            landed = outcome(core, name, log)
            assert (landed is not None) == (k < answer.more), (seed, k, answer.more, landed)
    finally:
        case.pods = [{"metadata": {"name": n}} for n in made]
        delete(core, apps, case)


def _settled_outcome(core: Any, name: str, log: Any) -> bool:
    """True once the pod is bound, False once kube-scheduler reports it unschedulable (a pod with no GPU carries
    no index annotation for `outcome` to read)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, "default")
        if pod.spec.node_name:
            return True
        if any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in pod.status.conditions or []):
            return False
        time.sleep(0.05)
    pytest.fail(f"pod {name} neither bound nor unschedulable:\n{tail(log)}")


def test_a_cpu_only_templates_headroom_is_what_the_real_scheduler_binds(cluster: Any, scheduler: Any) -> None:  # noqa: F811
    """A template without GPU memory, as cluster-capacity answers it: each node holds what its free cpu and its pod
    slots allow (a GPU node of 4 cpu, a cpu node of 7 cpu and 4 pod slots, one taken by a busy pod)."""
    core, apps, log, standin = scheduler
    case = Scenario(seed=100)
    for node, status in (gpu_node("c0", 1, 16, cpu="4"), gpu_node("c1", 0, 0, cpu="7", pods=4)):
        case.nodes.append({**node, "spec": {}, **status})
    container = {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "1500m"}}}
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"schedulerName": "gpushare-scheduler", "containers": [container]},
    }
    busy = {**template, "metadata": {"name": "busy", "namespace": "default"}}
    busy = {**busy, "spec": {**template["spec"], "nodeName": "c1"}}
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    create(core, apps, case, standin, log)
    made = ["busy"]
    try:
        core.create_namespaced_pod("default", busy)
        (answer,) = headroom(
            case.nodes, [template], existing=[{**busy, "status": {"phase": "Running"}}], semantics=semantics
        )
        assert answer.more == 2 + 3 and answer.blocked_by is not None  # 4 // 1.5 on c0; 3 slots left on c1
        for k in range(answer.more + 1):
            name = f"web-{k}"
            core.create_namespaced_pod("default", {**template, "metadata": {"name": name, "namespace": "default"}})
            made.append(name)
            assert _settled_outcome(core, name, log) == (k < answer.more), (k, answer.more)
    finally:
        case.pods = [{"metadata": {"name": n}} for n in made]
        delete(core, apps, case)
