"""`gpushare place --semantics upstream` against the real kube-scheduler + the stand-in extender.

The real scheduler breaks ties between equal scores at random, so once it has taken another tied node than the dry
run did, the two fleets differ and later pods may go elsewhere for that reason alone. Each pod is therefore judged
on the state the real run left: the dry run places the pods before it where the real scheduler put them
(`node_order`, pending ones pending) and places this one itself. It must agree on whether the pod fits, on the node
wherever it reports no tie, and on the GPU wherever the node is the same. A scenario in which the dry run reports
no tie at all must also agree pod for pod when placed in one run, with no replay.

Pods are created one at a time, each waited for until it is bound or reported unschedulable. A failure prints the
scenario's seed; `python tests/e2e/differential.py SEED` replays it as YAML.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cluster import ControlPlane, free_port, tail
from differential import Scenario, scenario
from kube import api, gpu_node
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from standin_extender import SETTLE_PREFIX, StandIn
from test_extender_binding import rendered_scheduler

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics, place

pytestmark = pytest.mark.e2e
SCENARIOS = int(os.environ.get("GPUSHARE_DIFFERENTIAL_SCENARIOS", "30"))
NOWHERE = "(pending in the real run)"  # a node_order target that does not exist: the pod stays pending
Outcome = tuple[str, int] | None


def create(core: Any, apps: Any, case: Scenario, standin: StandIn, log: Path) -> None:
    gpu_last = sorted(case.nodes, key=lambda n: bool(_gpu_mem(n)))  # see `settle`
    for node in gpu_last:
        core.create_node({k: v for k, v in node.items() if k != "status"} | {"spec": {}})
        core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
        core.patch_node(node["metadata"]["name"], {"spec": {"taints": node["spec"].get("taints")}})
    settle(core, standin, [n["metadata"]["name"] for n in gpu_last if _gpu_mem(n)], log)
    for node in case.nodes:  # a kubelet's next status report, once every node exists (see `heartbeat`)
        heartbeat(core, node)
    for config_map in case.config_maps:
        core.create_namespaced_config_map("kube-system", config_map)
    for replica_set in case.replica_sets:
        apps.create_namespaced_replica_set("default", replica_set)
    for pod in case.running:
        core.create_namespaced_pod("default", {k: v for k, v in pod.items() if k != "status"})
        core.patch_namespaced_pod_status(pod["metadata"]["name"], "default", {"status": pod["status"]})


def _gpu_mem(node: dict[str, Any]) -> int:
    return int(str((node.get("status") or {}).get("capacity", {}).get("aliyun.com/gpu-mem", 0)))


def settle(core: Any, standin: StandIn, gpu_nodes: list[str], log: Path, timeout: float = 60) -> None:
    """Wait until kube-scheduler's cache holds every node with its status, before the heartbeats.

    Its node informer hands a node's queued events over together, keys in the order they were first queued: under
    a burst n0's heartbeat could be applied before n1.. were even added, and n0 would keep counting an image's
    holders as itself alone (the harness race behind a once-failing 1.20 scenario). A probe pod asking for GPU
    memory and tolerating every taint is offered to each GPU node whose status the scheduler holds; GPU nodes were
    created last, so once all are offered every node before them is in too, and each heartbeat recounts all."""
    if not gpu_nodes:
        return
    name = f"{SETTLE_PREFIX}{uuid.uuid4().hex[:8]}"
    limits = {"aliyun.com/gpu-mem": "1"}
    container = {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"limits": limits}}
    spec = {"schedulerName": "gpushare-scheduler", "tolerations": [{"operator": "Exists"}], "containers": [container]}
    core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": spec})
    deadline = time.monotonic() + timeout
    try:
        while not set(gpu_nodes) <= standin.offered.get(f"default/{name}", set()):
            if time.monotonic() > deadline:
                pytest.fail(f"kube-scheduler never offered {gpu_nodes} to a probe:\n{tail(log)}")
            time.sleep(0.02)
    finally:
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def heartbeat(core: Any, node: dict[str, Any]) -> None:
    """Report the node's status again, as its kubelet does every few minutes. kube-scheduler's cache counts the
    nodes holding an image when a node is added or updated (ImageLocality spreads an image's score by that count),
    so nodes created one by one first see partial counts; a running cluster's periodic updates settle them, and so
    does this one."""
    conditions = [
        dict(c, lastHeartbeatTime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        for c in node["status"]["conditions"]
    ]
    core.patch_node_status(node["metadata"]["name"], {"status": {"conditions": conditions}})


def delete(core: Any, apps: Any, case: Scenario) -> None:
    for pod in [*case.running, *case.pods]:
        with contextlib.suppress(ApiException):  # never created: the scenario stopped early
            core.delete_namespaced_pod(pod["metadata"]["name"], "default", grace_period_seconds=0)
    for replica_set in case.replica_sets:
        apps.delete_namespaced_replica_set(replica_set["metadata"]["name"], "default")
    for config_map in case.config_maps:
        core.delete_namespaced_config_map(config_map["metadata"]["name"], "kube-system")
    for node in case.nodes:
        core.delete_node(node["metadata"]["name"])
    deadline = time.monotonic() + 30
    while core.list_namespaced_pod("default").items and time.monotonic() < deadline:
        time.sleep(0.2)


def outcome(core: Any, name: str, log: Path, timeout: float = 30) -> Outcome:
    """(node, GPU index) once bound, None once kube-scheduler reports it unschedulable."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, "default")
        if pod.spec.node_name:
            return pod.spec.node_name, int((pod.metadata.annotations or {})["ALIYUN_COM_GPU_MEM_IDX"])
        conditions = pod.status.conditions or []
        if any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in conditions):
            return None
        time.sleep(0.05)
    pytest.fail(f"pod {name} neither bound nor unschedulable after {timeout:.0f}s:\n{tail(log)}")


@dataclass
class RealRun:
    """Each pod's outcome when the scheduler first decided it, and after the scheduler went quiet (from 1.33 a
    pending pod that a later bind may have freed is retried at once, and may be bound by then)."""

    first: dict[str, Outcome]
    final: dict[str, Outcome]


def run_real(core: Any, apps: Any, case: Scenario, log: Path, standin: StandIn) -> RealRun:
    create(core, apps, case, standin, log)
    first: dict[str, Outcome] = {}
    try:
        for pod in case.pods:
            core.create_namespaced_pod("default", pod)
            first[pod["metadata"]["name"]] = outcome(core, pod["metadata"]["name"], log)
        final = _settled(core, list(first), standin) if any(o is None for o in first.values()) else dict(first)
    finally:
        delete(core, apps, case)
    return RealRun(first, final)


def _settled(
    core: Any, names: list[str], standin: StandIn, quiet: float = 1.0, limit: float = 10
) -> dict[str, Outcome]:
    """Every pod's outcome once the stand-in has bound nothing for `quiet` seconds."""
    deadline = time.monotonic() + limit
    seen, since = len(standin.calls), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(0.05)
        if len(standin.calls) != seen:
            seen, since = len(standin.calls), time.monotonic()
    final: dict[str, Outcome] = {}
    for name in names:
        pod = core.read_namespaced_pod(name, "default")
        annotations = pod.metadata.annotations or {}
        final[name] = (pod.spec.node_name, int(annotations["ALIYUN_COM_GPU_MEM_IDX"])) if pod.spec.node_name else None
    return final


def dry_run(
    case: Scenario,
    pods: list[dict[str, Any]],
    semantics: Semantics,
    order: dict[str, str] | None = None,
    existing: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Any:
    return place(
        [*case.nodes, *case.config_maps],
        pods,
        existing=[*case.running, *case.replica_sets, *existing],
        semantics=semantics,
        node_order=order,
    )


def judge(case: Scenario, real: RealRun, semantics: Semantics) -> tuple[list[str], int]:
    """Each pod on the real run's state; then, when the dry run reports no tie, the whole run. (failures, ties)

    Where the minor retries pending pods at once (1.33 on) and the real run did retry one, the pods after it are
    judged in the whole run only: when exactly the retry came between them depends on the real queue's timing."""
    failures, ties = [], 0
    names = [p["metadata"]["name"] for p in case.pods]
    retries = semantics.scheduler.retries_at_once
    outcomes = real.final if retries else real.first
    retried = [n for n in names if retries and real.first[n] is None and real.final[n] is not None]
    last = names.index(retried[0]) if retried else len(names) - 1
    for k, name in enumerate(names[: last + 1]):
        order = {f"default/{n}": (real.first[n] or (NOWHERE, 0))[0] for n in names[:k]}
        result = dry_run(case, case.pods[: k + 1], semantics, order)
        mine = next((a for a in result.placements if a.name == name), None)
        got = real.first[name]
        if (got is None) != (mine is None):
            pending = next((p.message for p in result.pending if p.name == name), "")
            failures.append(
                f"seed {case.seed} {name}: real {got}, gpushare {mine and (mine.node, mine.gpus)} {pending}"
            )
        elif got is not None and mine is not None:
            ties += mine.tied_with > 1
            if mine.tied_with == 1 and got[0] != mine.node:
                failures.append(f"seed {case.seed} {name}: real node {got[0]}, gpushare {mine.node} (no tie)")
            elif got[0] == mine.node and got[1] != mine.gpus[0][0]:
                failures.append(f"seed {case.seed} {name}: on {got[0]} real GPU {got[1]}, gpushare {mine.gpus}")
    whole = dry_run(case, case.pods, semantics)
    if all(a.tied_with == 1 for a in whole.placements):
        placed = {a.name: (a.node, a.gpus[0][0]) for a in whole.placements}
        for name in names:
            if placed.get(name) != outcomes[name]:
                failures.append(
                    f"seed {case.seed} {name}: one run without replay: real {outcomes[name]}, "
                    f"gpushare {placed.get(name)}"
                )
    return failures, ties


@contextlib.contextmanager
def running_scheduler(cluster: ControlPlane, workdir: Path) -> Iterator[tuple[Any, Any, Path, StandIn]]:
    """The real kube-scheduler on the rendered configuration, the stand-in extender behind it;
    (core, apps, log, stand-in)."""
    port = free_port()
    standin = StandIn(cluster.kubeconfig)
    server = standin.serve(port)
    process, sport = cluster.start_scheduler(rendered_scheduler(cluster, workdir, port), name="gpushare-scheduler")
    # on a loaded machine start-up can take long; the probe below then waits for synced caches
    cluster.wait_http(process, f"https://127.0.0.1:{sport}/healthz", cert=False, timeout=180)
    core = api(cluster.kubeconfig)
    apps = client.AppsV1Api(core.api_client)
    try:
        # a pod no node can take: once it is reported unschedulable the scheduler is running on synced caches, so
        # the scenarios' nodes reach it one event at a time, as in a running cluster, not in its start-up list
        (probe,) = _pods(1)
        probe["metadata"]["name"] = "probe"
        core.create_namespaced_pod("default", probe)
        assert outcome(core, "probe", process.log, timeout=120) is None
        core.delete_namespaced_pod("probe", "default", grace_period_seconds=0)
        yield core, apps, process.log, standin
    finally:
        server.shutdown()
        process.stop()
    if standin.errors:
        pytest.fail(f"stand-in errors: {standin.errors[:5]}")


@pytest.fixture
def scheduler(cluster: ControlPlane, tmp_path: Path) -> Iterator[tuple[Any, Any, Path, StandIn]]:
    with running_scheduler(cluster, tmp_path) as running:
        yield running


def test_place_agrees_with_the_real_scheduler(cluster: ControlPlane, scheduler: Any) -> None:
    core, apps, log, standin = scheduler
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    failures: list[str] = []
    compared = ties = 0
    for seed in range(SCENARIOS):
        case = scenario(seed)
        real = run_real(core, apps, case, log, standin)
        found, tied = judge(case, real, semantics)
        failures += found
        ties += tied
        compared += len(real.first)
    assert compared >= SCENARIOS * 4
    assert not failures, f"{len(failures)} of {compared} pods differ ({ties} placed among ties):\n" + "\n".join(
        failures[:40]
    )


def _identical_nodes(count: int, cpu: str = "8") -> Scenario:
    case = Scenario(seed=-1)
    for i in range(count):
        node, status = gpu_node(f"n{i}", 2, 16, cpu=cpu, memory="32Gi")
        case.nodes.append({**node, "spec": {}, **status})
    return case


def _pods(count: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{k}", "namespace": "default"},
            "spec": {
                "schedulerName": "gpushare-scheduler",
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"limits": {"aliyun.com/gpu-mem": "2"}},
                    }
                ],
            },
        }
        for k in range(count)
    ]


def test_repeated_runs_fixed_outcomes_and_ties(cluster: ControlPlane, scheduler: Any) -> None:
    """The same small cases, five times each: what every run does the dry run does; where runs differ, it reports
    a tie. 4 GPU pods on 4 empty identical nodes land on 4 different nodes; a node whose cpu is mostly requested
    by another pod is avoided."""
    core, apps, log, standin = scheduler
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    spread = _identical_nodes(4)
    spread.pods = _pods(4)
    loaded = _identical_nodes(3)
    loaded.running = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "heavy", "namespace": "default"},
            "spec": {
                "nodeName": "n0",
                "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "6"}}}
                ],
            },
            "status": {"phase": "Running"},
        }
    ]
    loaded.pods = _pods(2)
    for case, distinct in ((spread, 4), (loaded, None)):
        real_runs = [run_real(core, apps, case, log, standin) for _ in range(5)]
        runs = [r.first for r in real_runs]
        names = [p["metadata"]["name"] for p in case.pods]
        for real in real_runs:  # every run, pod by pod on its own history: agrees wherever gpushare reports no tie
            assert all(real.first[name] is not None for name in names), real
            failures, _ = judge(case, real, semantics)
            assert not failures, failures
        for k, name in enumerate(names):  # runs with the same history before a pod but another choice for it: a tie
            by_history: dict[tuple[Any, ...], set[str]] = {}
            for run in runs:
                by_history.setdefault(tuple(run[n] for n in names[:k]), set()).add(run[name][0])  # type: ignore[index]
            for history, chosen in by_history.items():
                if len(chosen) > 1:
                    order = {f"default/{n}": node for n, (node, _) in zip(names[:k], history, strict=True)}
                    replay = dry_run(case, case.pods[: k + 1], semantics, order)
                    (mine,) = [a for a in replay.placements if a.name == name]
                    assert mine.tied_with >= len(chosen), f"{name}: real runs chose {sorted(chosen)}, gpushare {mine}"
        model = dry_run(case, case.pods, semantics)
        if distinct:  # the fixed outcome: every run, and the dry run, use that many different nodes
            assert all(len({o[0] for o in run.values() if o}) == distinct for run in runs)
            assert len({a.node for a in model.placements}) == distinct
        else:  # the loaded node is never chosen, by any run nor by the dry run
            assert all("n0" not in {o[0] for o in run.values() if o} for run in runs)
            assert "n0" not in {a.node for a in model.placements}


def _gpu_pod(name: str, units: int | None, **spec: Any) -> dict[str, Any]:
    """A pod of the served scheduler; `units` None: no aliyun.com/gpu-mem at all."""
    limits = {} if units is None else {"aliyun.com/gpu-mem": str(units)}
    container = {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"limits": limits}}
    body = {"schedulerName": "gpushare-scheduler", "containers": [container], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": body}


def _bound(core: Any, name: str, timeout: float = 30) -> tuple[str, str | None]:
    """(node, GPU index annotation or None) once the pod has a node."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, "default")
        if pod.spec.node_name:
            return pod.spec.node_name, (pod.metadata.annotations or {}).get("ALIYUN_COM_GPU_MEM_IDX")
        time.sleep(0.05)
    pytest.fail(f"pod {name} not bound after {timeout:.0f}s")


def _gone(core: Any, name: str, timeout: float = 30) -> None:
    """Wait until the pod no longer exists (grace period 0 and no kubelet: the API server removes it at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_pod(name, "default")
        except ApiException as missing:
            if missing.status == 404:
                return
            raise
        time.sleep(0.05)
    pytest.fail(f"pod {name} still exists after {timeout:.0f}s")


def test_pods_the_scheduler_never_binds_or_never_sees(cluster: ControlPlane, scheduler: Any) -> None:
    """The classes the random scenarios cannot hold, on the real API server and kube-scheduler with the stand-in:
    a pod naming aliyun.com/gpu-mem but asking 0 is sent to the extender and its bind fails (never bound; the dry
    run leaves it pending with the bind's error, GW217); a pod created with spec.nodeName is bound at creation and
    holds no device, so the next pod's best fit is the same GPU it would take on an empty node; a pod past its
    namespace's ResourceQuota is refused at creation with the message the dry run gives."""
    core, apps, log, standin = scheduler
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    case = _identical_nodes(1)
    create(core, apps, case, standin, log)
    quota_name = "gpu"
    try:
        # asks 0: kube-scheduler asks the extender, whose bind refuses; the pod is retried and never bound
        zero = _gpu_pod("zero", 0)
        core.create_namespaced_pod("default", zero)
        deadline = time.monotonic() + 20
        while ("bind", "default/zero") not in standin.calls:  # when it is retried differs by minor (1.22: a minute)
            if time.monotonic() > deadline:
                pytest.fail(f"the extender was never asked to bind a pod asking 0:\n{tail(log)}")
            time.sleep(0.1)
        time.sleep(2)
        unbound = core.read_namespaced_pod("zero", "default")
        assert not unbound.spec.node_name
        model = dry_run(case, [zero], semantics)
        (pending,) = model.pending
        assert [f.rule.id for f in model.findings] == ["GW217"] and not model.invalid
        # the condition the dry run gives, but for the extender's address (the stand-in's here)
        quoted = pending.message
        expected = re.escape(quoted).replace(re.escape("<the extender's urlPrefix>"), "http://127.0.0.1:[0-9]+/[a-z-]+")
        (condition,) = [c for c in unbound.status.conditions or [] if c.type == "PodScheduled"]
        assert re.fullmatch(expected, condition.message), (condition.message, quoted)
        core.delete_namespaced_pod("zero", "default", grace_period_seconds=0)

        # spec.nodeName at creation: no annotation, no device; the next pod takes GPU 0 as on an empty node
        preset = _gpu_pod("preset", 10, nodeName="n0")
        core.create_namespaced_pod("default", preset)
        assert _bound(core, "preset") == ("n0", None)
        after = _gpu_pod("after", 4)
        core.create_namespaced_pod("default", after)
        node, index = _bound(core, "after")
        model = dry_run(case, [preset, after], semantics)
        mine = {a.name: (a.node, a.gpus) for a in model.placements}
        assert mine["preset"] == ("n0", ()) and mine["after"] == (node, ((int(str(index)), 4),))

        # ResourceQuota: the controller's status, then a pod that would pass it is refused at creation
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": quota_name, "namespace": "default"},
            "spec": {"hard": {"requests.aliyun.com/gpu-mem": "16"}},
        }
        core.create_namespaced_resource_quota("default", quota)
        used = {"requests.aliyun.com/gpu-mem": "14"}
        status = {"status": {"hard": quota["spec"]["hard"], "used": used}}
        core.patch_namespaced_resource_quota_status(quota_name, "default", status)
        quota["status"] = status["status"]
        over = _gpu_pod("over", 4)
        deadline, body = time.monotonic() + 45, ""  # past the plugin's 30 s cache of a namespace without quotas
        while "exceeded quota" not in body:  # until the admission plugin's cache holds the status just written
            if time.monotonic() > deadline:
                pytest.fail(f"the pod past the quota was not refused for it: {body}")
            try:
                core.create_namespaced_pod("default", over)
            except ApiException as refused:
                assert refused.status == 403
                body = str(json.loads(refused.body)["message"])
            else:  # admitted before the quota was seen (the plugin caches a namespace's quota list for a while)
                core.delete_namespaced_pod("over", "default", grace_period_seconds=0)
                _gone(core, "over")
            time.sleep(0.2)
        (invalid,) = dry_run(case, [over], semantics, existing=[quota]).invalid
        assert invalid.reason == body
    finally:
        with contextlib.suppress(ApiException):
            core.delete_namespaced_resource_quota(quota_name, "default")
        delete(core, apps, case)
