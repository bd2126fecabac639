"""Preemption: `gpushare place --semantics upstream` against the real kube-scheduler + the stand-in extender.

Each scenario (tests/e2e/preemption.py) runs on the real stack: nodes, PriorityClasses, running pods with start
times and the extender's annotations, PodDisruptionBudgets with their status; then each new pod is created and
waited for until it is bound, or is pending and nothing has changed for a few seconds (a preemptor is retried after
a backoff of a second once its victims are gone). The dry run places the same pods in one run. They must agree on
which pods were deleted, on each new pod's node and GPU or on its staying pending, its nominated node and its
message, word for word. Where the dry run reports a tie (of scores, or between preemption candidates), the real
scheduler chose at random: the scenario is judged up to that pod.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cluster import ControlPlane, tail
from kube import dynamic
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from preemption import Case, classes, scenario
from test_differential import create, delete, running_scheduler

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics, place

pytestmark = pytest.mark.e2e
CASES = int(os.environ.get("GPUSHARE_PREEMPTION_SCENARIOS", "16"))
QUIET = 4.0  # seconds without change before a pending pod counts as settled (backoff: 1 s, then 2 s)
# ... and a nominated one: its preemption deleted victims, and the retry their deletion brings (the message it ends
# with) can take longer than QUIET on a loaded machine (seen once in a cold CI run, Go builds beside it)
NOMINATED_QUIET = 12.0


@dataclass(frozen=True)
class Seen:
    node: str  # "" while pending
    gpu: int | None
    nominated: str
    message: str


def _seen(core: Any, name: str) -> Seen:
    pod = core.read_namespaced_pod(name, "default")
    annotations = pod.metadata.annotations or {}
    index = annotations.get("ALIYUN_COM_GPU_MEM_IDX")
    condition = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
    return Seen(
        pod.spec.node_name or "",
        int(index) if pod.spec.node_name and index is not None else None,
        pod.status.nominated_node_name or "",
        (condition.message or "") if condition is not None and condition.status == "False" else "",
    )


def _settled(core: Any, name: str, log: Any, limit: float = 60) -> Seen:
    """The pod once bound, or pending with nothing changing (its state, the pods in the namespace) for QUIET s
    (NOMINATED_QUIET s where it has a nominated node)."""
    deadline = time.monotonic() + limit
    last: tuple[Seen, frozenset[str]] | None = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        seen = _seen(core, name)
        if seen.node:
            return seen
        state = (seen, frozenset(p.metadata.name for p in core.list_namespaced_pod("default").items))
        if state != last:
            last, since = state, time.monotonic()
        elif seen.message and time.monotonic() - since >= (NOMINATED_QUIET if seen.nominated else QUIET):
            return seen
        time.sleep(0.1)
    pytest.fail(f"pod {name} never settled:\n{_panic(log) or tail(log)}")


def _budgets(cluster: ControlPlane, tmp: Path) -> Any:
    """The PodDisruptionBudget resource of the minor (policy/v1beta1 before 1.21), through the dynamic client."""
    version = "policy/v1beta1" if cluster.minor < 21 else "policy/v1"
    return dynamic(cluster.kubeconfig, tmp / "discovery").resources.get(api_version=version, kind="PodDisruptionBudget")


def run_real(
    core: Any, apps: Any, case: Case, log: Path, standin: Any, budgets: Any, panics_at: str = ""
) -> tuple[dict[str, Seen], set[str]]:
    """Each new pod's settled state, and the running pods deleted meanwhile; at the pod `panics_at` the scheduler
    is expected to die of a panic, and the run stops there."""
    create(core, apps, case, standin, log)
    seen: dict[str, Seen] = {}
    try:
        for budget in case.budgets:
            body = {k: v for k, v in budget.items() if k != "status"} | {"apiVersion": budgets.group_version}
            budgets.create(body=body, namespace="default")
            budgets.status.patch(
                body={"status": budget["status"]},
                name=budget["metadata"]["name"],
                namespace="default",
                content_type="application/merge-patch+json",
            )
        time.sleep(0.5)  # the scheduler's budget informer
        for pod in case.pods:
            name = pod["metadata"]["name"]
            core.create_namespaced_pod("default", pod)
            if name == panics_at:
                deadline = time.monotonic() + 30
                while "pickOneNodeForPreemption" not in _panic(log):
                    if time.monotonic() > deadline:
                        pytest.fail(f"the dry run says kube-scheduler panics at {name}; it did not:\n{tail(log)}")
                    time.sleep(0.2)
                break
            seen[name] = _settled(core, name, log)
        left = {p.metadata.name for p in core.list_namespaced_pod("default").items}
        deleted = {p["metadata"]["name"] for p in case.running + case.pods} - left
    finally:
        for budget in case.budgets:
            with contextlib.suppress(ApiException):
                budgets.delete(name=budget["metadata"]["name"], namespace="default")
        delete(core, apps, case)
    return seen, deleted


def judge(case: Case, seen: dict[str, Seen], deleted: set[str], result: Any) -> list[str]:
    """The real run against the dry run's `result`, pod by pod up to the first tie (or the panic)."""
    placed = {a.name: a for a in result.placements}
    pending = {p.name: p for p in result.pending}
    preempted = {p.name: p for p in result.preempted}
    failures = []
    for pod in case.pods:
        name = pod["metadata"]["name"]
        if name not in seen:  # the scheduler died on an earlier pod
            return failures
        real = seen[name]
        mine = placed.get(name)
        if name in preempted:  # placed, then preempted by a later pod: where it ran is what can be compared
            if real.node != preempted[name].node:
                failures.append(f"seed {case.seed} {name}: real {real}, gpushare on {preempted[name].node}, preempted")
            continue
        by_me = [v for v in preempted.values() if v.by == f"default/{name}"]
        if (mine is not None and mine.tied_with > 1) or any(v.tied_with > 1 for v in by_me):
            return failures  # the real scheduler chose among equals at random: the rest depends on its choice
        if mine is not None:
            if (real.node, real.gpu) != (mine.node, mine.gpus[0][0] if mine.gpus else None):
                failures.append(f"seed {case.seed} {name}: real {real}, gpushare {mine.node} {mine.gpus}")
            continue
        mine_pending = pending.get(name)
        if mine_pending is None:
            failures.append(f"seed {case.seed} {name}: real {real}, gpushare neither placed nor pending")
        elif real.node or (real.nominated, real.message) != (mine_pending.nominated, mine_pending.message):
            failures.append(
                f"seed {case.seed} {name}: real {real}, gpushare pending nominated "
                f"{mine_pending.nominated!r} {mine_pending.message!r}"
            )
    if set(preempted) != deleted:
        failures.append(f"seed {case.seed}: real deleted {sorted(deleted)}, gpushare preempted {sorted(preempted)}")
    return failures


def test_preemption_agrees_with_the_real_scheduler(cluster: ControlPlane, tmp_path: Path) -> None:
    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(cluster.minor))
    budgets = _budgets(cluster, tmp_path)
    failures: list[str] = []
    preempted = pending = panics = 0
    (tmp_path / "scheduler-0").mkdir()
    running = running_scheduler(cluster, tmp_path / "scheduler-0")
    core, apps, log, standin = running.__enter__()
    scheduling = client.SchedulingV1Api(core.api_client)
    for priority_class in classes():
        scheduling.create_priority_class(priority_class)
    try:
        for seed in range(CASES):
            case = scenario(seed)
            existing = [*classes(), *case.running, *case.budgets]
            result = place(case.nodes, case.pods, existing=existing, semantics=semantics)
            panics_at = next((w.split()[1].split("/")[1].rstrip(":") for w in result.warnings if " panics " in w), "")
            seen, deleted = run_real(core, apps, case, log, standin, budgets, panics_at)
            failures += judge(case, seen, deleted, result)
            preempted += len(deleted)
            pending += sum(1 for s in seen.values() if not s.node)
            if panics_at:  # the scheduler is gone: a new one for the next scenarios
                panics += 1
                running.__exit__(None, None, None)
                (tmp_path / f"scheduler-{seed + 1}").mkdir()
                running = running_scheduler(cluster, tmp_path / f"scheduler-{seed + 1}")
                core, apps, log, standin = running.__enter__()
    finally:
        for priority_class in classes():
            with contextlib.suppress(ApiException):
                scheduling.delete_priority_class(priority_class["metadata"]["name"])
        running.__exit__(None, None, None)
    print(f"1.{cluster.minor}: {CASES} scenarios, {preempted} pods preempted, {pending} left pending, {panics} panics")
    assert preempted and pending, f"the scenarios must preempt and leave pods pending: {preempted}, {pending}"
    assert not failures, "\n".join(failures)


def _panic(log: Path) -> str:
    """The scheduler's panic, if it died of one (its goroutine dump would hide it from a tail)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    start = next((i for i, line in enumerate(lines) if line.startswith("panic:")), None)
    return "" if start is None else "\n".join(lines[max(0, start - 5) : start + 12])
