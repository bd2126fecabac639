"""`gpushare place --semantics upstream` against the real kube-scheduler + the stand-in extender, scenario by
scenario: the same pending set, the same node wherever gpushare reports no tie, the same GPU on the same node.

Pods are created one at a time, each waited for until it is bound or reported unschedulable. A failure prints
the scenario's seed; `python tests/e2e/differential.py SEED` replays it as YAML.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import pytest
from cluster import ControlPlane, free_port, tail
from differential import Scenario, scenario
from kube import api
from kubernetes.client.exceptions import ApiException
from standin_extender import StandIn
from test_extender_binding import rendered_scheduler

from gpushare.placement import Semantics, place

pytestmark = pytest.mark.e2e
SCENARIOS = int(os.environ.get("GPUSHARE_DIFFERENTIAL_SCENARIOS", "30"))


def create(core: Any, case: Scenario) -> None:
    for node in case.nodes:
        core.create_node({k: v for k, v in node.items() if k != "status"} | {"spec": {}})
        core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
        core.patch_node(node["metadata"]["name"], {"spec": {"taints": node["spec"].get("taints")}})
    for config_map in case.config_maps:
        core.create_namespaced_config_map("kube-system", config_map)
    for pod in case.running:
        core.create_namespaced_pod("default", {k: v for k, v in pod.items() if k != "status"})
        core.patch_namespaced_pod_status(pod["metadata"]["name"], "default", {"status": pod["status"]})


def delete(core: Any, case: Scenario) -> None:
    for pod in [*case.running, *case.pods]:
        with contextlib.suppress(ApiException):  # never created: the scenario stopped early
            core.delete_namespaced_pod(pod["metadata"]["name"], "default", grace_period_seconds=0)
    for config_map in case.config_maps:
        core.delete_namespaced_config_map(config_map["metadata"]["name"], "kube-system")
    for node in case.nodes:
        core.delete_node(node["metadata"]["name"])
    deadline = time.monotonic() + 30
    while core.list_namespaced_pod("default").items and time.monotonic() < deadline:
        time.sleep(0.2)


class ModelDiffers(AssertionError):
    """gpushare placed a pod where the real scheduler did not (the only failure the xfail below expects)."""


def outcome(core: Any, name: str, log: Path, timeout: float = 30) -> tuple[str, int] | None:
    """(node, GPU index) once bound, None once kube-scheduler reports it unschedulable."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, "default")
        if pod.spec.node_name:
            return pod.spec.node_name, int((pod.metadata.annotations or {})["ALIYUN_COM_GPU_MEM_IDX"])
        conditions = pod.status.conditions or []
        if any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in conditions):
            return None
        time.sleep(0.1)
    pytest.fail(f"pod {name} neither bound nor unschedulable after {timeout:.0f}s:\n{tail(log)}")


@pytest.mark.xfail(
    strict=True,
    raises=ModelDiffers,
    reason="kube-scheduler's node scoring (LeastAllocated, BalancedAllocation, taints, spread) is not modelled yet: "
    "upstream semantics still binpacks nodes",
)
def test_place_agrees_with_the_real_scheduler(cluster: ControlPlane, tmp_path: Path) -> None:
    core = api(cluster.kubeconfig)
    port = free_port()
    standin = StandIn(cluster.kubeconfig)
    server = standin.serve(port)
    process, _ = cluster.start_scheduler(rendered_scheduler(cluster, tmp_path, port), name="gpushare-scheduler")
    failures = []
    compared = ties = 0
    try:
        for seed in range(SCENARIOS):
            case = scenario(seed)
            create(core, case)
            real: dict[str, tuple[str, int] | None] = {}
            try:
                for pod in case.pods:
                    core.create_namespaced_pod("default", pod)
                    real[pod["metadata"]["name"]] = outcome(core, pod["metadata"]["name"], process.log)
            finally:
                delete(core, case)
            model = place(
                [*case.nodes, *case.config_maps],
                case.pods,
                existing=case.running,
                semantics=Semantics("upstream", gpu_memory_unit="GiB"),
            )
            placed = {a.name: a for a in model.placements}
            for name, got in real.items():
                mine = placed.get(name)
                compared += 1
                if (got is None) != (mine is None):
                    failures.append(f"seed {seed} {name}: real {got}, gpushare {mine and (mine.node, mine.gpus)}")
                elif got is not None and mine is not None:
                    ties += mine.tied_with > 1
                    if mine.tied_with <= 1 and got[0] != mine.node:
                        failures.append(f"seed {seed} {name}: real node {got[0]}, gpushare {mine.node} (no tie)")
                    elif got[0] == mine.node and got[1] != mine.gpus[0][0]:
                        failures.append(f"seed {seed} {name}: on {got[0]} real GPU {got[1]}, gpushare {mine.gpus}")
    finally:
        server.shutdown()
    if not process.alive():  # harness failures are failures, never the expected one
        pytest.fail(f"kube-scheduler exited:\n{tail(process.log)}")
    if compared < SCENARIOS * 4 or standin.errors:
        pytest.fail(f"only {compared} pods compared; stand-in errors: {standin.errors[:5]}")
    if failures:
        report = "\n".join(failures[:40])
        raise ModelDiffers(f"{len(failures)} of {compared} pods differ ({ties} placed among ties):\n{report}")
