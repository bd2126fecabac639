"""A defragmentation plan from `gpushare capacity` carried out on the real kube-scheduler + the stand-in extender:
busy pods go through the real scheduler and some are deleted (memory left scattered), pending pods are created and
seen unschedulable, then each move is done as the plan says a user does it: the pod created again with a required
node affinity on its target's hostname (it must bind there, on the GPU the plan names), then the original deleted.
After each deletion the pods the plan says bind do, on the node it says; the pods it leaves pending stay so."""

from __future__ import annotations

import contextlib
import copy
import random
import time
from typing import Any

import pytest
from differential import Scenario
from kube import gpu_node
from kubernetes.client.exceptions import ApiException
from test_capacity_real import as_running, replica
from test_differential import create, delete, outcome, scheduler  # noqa: F401  (the fixture, by its name)

from gpushare.domain.minors import scoring_profile
from gpushare.kube.documents import from_objects
from gpushare.placement import Semantics
from gpushare.planner.defrag import Defrag, defragment

pytestmark = pytest.mark.e2e


def pinned(pod: dict[str, Any], name: str, node: str) -> dict[str, Any]:
    made = copy.deepcopy(pod)
    made["metadata"] = {"name": name, "namespace": "default"}
    made.pop("status", None)
    made["spec"].pop("nodeName", None)  # the running pod's: the copy goes through the scheduler
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    required = {"nodeSelectorTerms": [term]}
    made["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return made


def bound_to(core: Any, name: str, timeout: float = 30) -> str | None:
    """The node the pod is bound to within `timeout` seconds (the queue's backoff is at most 10 s), else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = core.read_namespaced_pod(name, "default").spec.node_name
        if node:
            return str(node)
        time.sleep(0.1)
    return None


def gone(core: Any, name: str) -> None:
    core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_pod(name, "default")
        except ApiException:
            return
        time.sleep(0.05)
    pytest.fail(f"pod {name} not deleted after 30 s")


def plan_for(
    nodes: list[Any], running: list[Any], semantics: Semantics, rng: random.Random
) -> tuple[list[Any], Defrag] | None:
    """Pending pods of a size tried in turn (each left pending as the fleet is: no tie decides where the others
    land), and the first plan whose moves bind one with no step contested (where a deletion frees room more than one
    pending pod could take, kube-scheduler's backoff decides which: the plan says so, and the test could not know
    which to expect). None: no size gives one."""
    largest = max(
        int(n["status"]["capacity"]["aliyun.com/gpu-mem"]) // int(n["status"]["capacity"]["aliyun.com/gpu-count"])
        for n in nodes
    )
    for size in rng.sample(range(2, largest + 1), largest - 1):
        pending = [replica(f"want{i}", size + i) for i in range(rng.randint(1, 2))]
        answer = defragment(from_objects(nodes, "n"), from_objects(running, "e"), from_objects(pending, "p"), semantics)
        steps = answer.plan.steps
        if len(answer.pending) == len(pending) and any(s.bound for s in steps) and not any(s.contested for s in steps):
            return pending, answer
    return None


@pytest.mark.parametrize("seed", range(4))
def test_a_plan_carried_out_binds_what_it_says(cluster: Any, scheduler: Any, seed: int) -> None:  # noqa: F811
    core, apps, log, standin = scheduler
    rng = random.Random(seed)
    case = Scenario(seed=seed)
    for i in range(rng.randint(2, 3)):
        node, status = gpu_node(f"d{seed}-n{i}", rng.choice([1, 2]), rng.choice([16, 24]))
        case.nodes.append({**node, "spec": {}, **status})
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    create(core, apps, case, standin, log)
    made: list[str] = []
    try:
        held = []  # busy pods created until the fleet is full (three refused in a row), each kept where it bound
        refused = k = 0
        while refused < 3:
            pod = replica(f"busy{k}", rng.randint(2, 8))
            k += 1
            core.create_namespaced_pod("default", pod)
            made.append(pod["metadata"]["name"])
            if outcome(core, pod["metadata"]["name"], log) is None:
                refused += 1
                gone(core, pod["metadata"]["name"])
            else:
                refused = 0
                held.append(pod)
        running = [as_running(core, pod) for pod in held]
        where = {
            p["metadata"]["name"]: (p["spec"]["nodeName"], p["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"])
            for p in running
        }
        found = None
        while found is None:  # pods deleted one by one (never a GPU's last) until the memory left free fragments
            left = [p for p in running if list(where.values()).count(where[p["metadata"]["name"]]) > 1]
            assert left, "every GPU holds one pod and no plan has moves"
            victim = rng.choice(left)
            gone(core, victim["metadata"]["name"])
            running.remove(victim)
            del where[victim["metadata"]["name"]]
            found = plan_for(case.nodes, running, semantics, rng)
        pending, answer = found
        for pod in pending:
            core.create_namespaced_pod("default", pod)
            made.append(pod["metadata"]["name"])
            assert outcome(core, pod["metadata"]["name"], log) is None, (seed, pod["metadata"]["name"])
        docs = {f"default/{p['metadata']['name']}": p for p in running}
        for i, step in enumerate(answer.plan.steps):
            move = step.move
            name = f"{docs[move.pod]['metadata']['name']}-m{i}"
            core.create_namespaced_pod("default", pinned(docs[move.pod], name, move.target.node))
            made.append(name)
            assert outcome(core, name, log) == (move.target.node, move.target.gpus[0]), (seed, i, move)
            gone(core, docs[move.pod]["metadata"]["name"])
            for key, node in step.bound:
                assert bound_to(core, key.split("/")[1]) == node, (seed, i, key)
        for key in answer.plan.still_pending:
            assert bound_to(core, key.split("/")[1], timeout=3) is None, (seed, key)
    finally:
        for name in made:
            with contextlib.suppress(ApiException):
                core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        delete(core, apps, case)
