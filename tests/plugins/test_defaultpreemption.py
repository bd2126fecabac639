"""DefaultPreemption (framework/plugins/defaultpreemption, framework/preemption): which pods a higher-priority pod
deletes, where it goes after, and what a pending pod's message says of preemption in each minor. Whole runs through
both engines; the candidate choice (pickOneNodeForPreemption) as a table, after upstream's TestSelectBestCandidate.
The real scheduler judges the same classes in tests/e2e/test_preemption.py."""

from __future__ import annotations

from typing import Any

import pytest
from plugintables import node, pod

from gpushare.domain.minors import scoring_profile
from gpushare.placement import Semantics, place
from gpushare.placement.model import Node, Pod
from gpushare.placement.plugins.defaultpreemption import Candidate, pick

Obj = dict[str, Any]
CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    | ({"preemptionPolicy": "Never"} if name == "never" else {})
    for name, value in (("low", 10), ("mid", 100), ("high", 1000), ("never", 1000))
]


def gpu_node(name: str = "n0", gpus: int = 2, per_gpu: int = 16, **extra: Any) -> Obj:
    return node(name, gpus=gpus, per_gpu=per_gpu, **extra)


def running(
    name: str, index: int, units: int, priority_class: str | None = "low", start: int = 0, on: str = "n0", **extra: Any
) -> Obj:
    """A pod the extender placed on GPU `index` of `on`, started at second `start`."""
    obj = gpu_pod(name, units, priority_class, on=on, **extra)
    obj["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": str(index), "ALIYUN_COM_GPU_MEM_POD": str(units)}
    obj["status"] = {"phase": "Running", "startTime": f"2026-01-01T00:00:{start:02d}Z"}
    return obj


def gpu_pod(name: str, units: int, priority_class: str | None = "high", **extra: Any) -> Obj:
    limits = {"aliyun.com/gpu-mem": str(units)}
    spec = {"priorityClassName": priority_class} if priority_class else {}
    return pod(name, containers=[{"image": "pause", "resources": {"limits": limits}}], **spec, **extra)


def run(nodes: list[Obj], pods: list[Obj], existing: list[Obj], minor: int = 28, engine: str = "fast") -> Any:
    semantics = Semantics(
        "upstream", gpu_memory_unit="GiB", scheduler=scoring_profile(minor), scheduler_name="default-scheduler"
    )
    return place(nodes, pods, existing=[*CLASSES, *existing], semantics=semantics, engine=engine)  # type: ignore[arg-type]


ENGINES = pytest.mark.parametrize("engine", ["fast", "reference"])


@ENGINES
def test_the_victims_are_the_least_important_pods_that_free_enough(engine: str) -> None:
    """Four 8 GiB pods fill two 16 GiB GPUs; a 16 GiB pod of higher priority: all four are taken off, then put back
    the earliest started first while the pod still fits at node level: the last two started are the victims, both
    on GPU 1, so the pod takes GPU 1."""
    pods = [running("a", 0, 8, start=1), running("b", 0, 8, start=2), running("c", 1, 8, start=3)]
    pods.append(running("d", 1, 8, start=4))
    result = run([gpu_node()], [gpu_pod("high", 16)], pods, engine=engine)
    assert [(v.name, v.node, v.by) for v in result.preempted] == [
        ("c", "n0", "default/high"),
        ("d", "n0", "default/high"),
    ]
    assert [(a.name, a.node, a.gpus) for a in result.placements] == [("high", "n0", ((1, 16),))]


@ENGINES
def test_victims_on_two_devices_free_no_single_one_and_the_pod_stays_nominated(engine: str) -> None:
    """The two victims run on different GPUs: the node has room, no device has: the extender refuses the pod, which
    stays pending, nominated; preempting again finds no victim (the pod fits the node without deleting more)."""
    pods = [running("a", 0, 8, start=1), running("c", 1, 8, start=2), running("b", 0, 8, start=3)]
    pods.append(running("d", 1, 8, start=4))
    result = run([gpu_node()], [gpu_pod("high", 16)], pods, engine=engine)
    assert sorted(v.name for v in result.preempted) == ["b", "d"]
    (pending,) = result.pending
    assert pending.nominated == "n0"
    assert pending.message == (
        # 1.28: evaluated on its nominated node first, then on every node: the extender's reason counts twice
        "0/1 nodes are available: 2 Insufficient GPU Memory in one device. "
        'preemption: expected at least one victim pod on node "n0".'
    )
    assert any("preempted default/b, default/d and still does not fit" in w for w in result.warnings)


@ENGINES
def test_budget_violators_are_put_back_first(engine: str) -> None:
    """c is under a budget that allows no disruption: it is put back before the others, so the victims change."""
    pods = [running("a", 0, 8, start=1), running("b", 0, 8, start=2)]
    pods += [running("c", 1, 8, start=3, labels={"app": "keep"}), running("d", 1, 8, start=4)]
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "keep"}}},
        "status": {"disruptionsAllowed": 0},
    }
    result = run([gpu_node()], [gpu_pod("high", 16)], [*pods, budget], engine=engine)
    assert sorted(v.name for v in result.preempted) == ["b", "d"]


@ENGINES
def test_a_victim_the_run_placed_leaves_the_placements(engine: str) -> None:
    result = run([gpu_node(gpus=1)], [gpu_pod("first", 12, "low"), gpu_pod("second", 12)], [], engine=engine)
    assert [(a.name, a.node) for a in result.placements] == [("second", "n0")]
    assert [(v.name, v.by, v.priority) for v in result.preempted] == [("first", "default/second", 10)]


@ENGINES
def test_a_nominated_pod_holds_its_room_for_pods_of_no_higher_priority(engine: str) -> None:
    """After the failed preemption above, the nominated pod (priority 1000) counts on n0 at node level for a pod of
    priority 1000 or less, not for a higher one (RunFilterPluginsWithNominatedPods)."""
    pods = [running("a", 0, 8, start=1), running("c", 1, 8, start=2), running("b", 0, 8, start=3)]
    pods.append(running("d", 1, 8, start=4))
    later = gpu_pod("later", 8, "never")
    result = run([gpu_node()], [gpu_pod("high", 16), later], pods, engine=engine)
    message = {p.name: p.message for p in result.pending}["later"]
    assert message.startswith("0/1 nodes are available: 1 Insufficient aliyun.com/gpu-mem.")
    critical = gpu_pod("critical", 8, "system-cluster-critical")
    result = run([gpu_node()], [gpu_pod("high", 16), critical], pods, engine=engine)
    assert [a.name for a in result.placements] == ["critical"]


# (minor, what a pod that fits no node and preempts no one has after the filters' message)
QUIET = [
    (20, ""),
    (22, ""),
    (24, " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not "
     "helpful for scheduling."),
    (28, " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not "
     "helpful for scheduling.."),
    (29, " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not "
     "helpful for scheduling."),
    (34, " no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for "
     "incoming pod, 1 Preemption is not helpful for scheduling."),
]  # fmt: skip


@pytest.mark.parametrize(("minor", "suffix"), QUIET)
def test_the_preemption_words_of_each_minor(minor: int, suffix: str) -> None:
    """One node full (preemption may help, but finds no lower priority), one tainted (it cannot)."""
    tainted = gpu_node("n1", taints=[{"key": "busy", "value": "yes", "effect": "NoSchedule"}])
    result = run([gpu_node(gpus=1), tainted], [gpu_pod("p", 16, "low")], [running("a", 0, 16, "high")], minor)
    (pending,) = result.pending
    assert pending.message == pending.filters_message + suffix
    assert pending.nominated == ""


@pytest.mark.parametrize(
    ("minor", "suffix"),
    [(22, ""), (24, " preemption: not eligible due to preemptionPolicy=Never."),
     (28, " preemption: not eligible due to preemptionPolicy=Never.."),
     (36, " no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.")],
)  # fmt: skip
def test_a_pod_that_never_preempts_says_so(minor: int, suffix: str) -> None:
    result = run([gpu_node(gpus=1)], [gpu_pod("p", 16, "never")], [running("a", 0, 16)], minor)
    (pending,) = result.pending
    assert not result.preempted and pending.message == pending.filters_message + suffix


@pytest.mark.parametrize(("minor", "answer"), [(33, "No preemption victims found"), (34, "Preemption is not helpful")])
def test_a_request_beyond_the_node_is_unresolvable_from_1_34(minor: int, answer: str) -> None:
    big = gpu_pod("big", 4)
    big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64"}
    result = run([gpu_node(gpus=1)], [big], [], minor)
    assert f"1 {answer}" in result.pending[0].message


@ENGINES
def test_before_1_22_a_node_needing_no_victim_is_nominated_and_a_tie_with_one_panics(engine: str) -> None:
    """n0: the pod fits the node once lower pods are off and again with all back (the extender refused it on
    devices): 1.20 takes that as a candidate with no victim, nominates n0 and deletes nothing. With a second
    candidate tied on budget violations, pickOneNodeForPreemption reads the first victim of each: it panics."""
    pods = [running("a", 0, 10, start=1), running("b", 1, 10, start=2)]
    result = run([gpu_node()], [gpu_pod("high", 12)], pods, 20, engine)
    assert not result.preempted and result.pending[0].nominated == "n0"
    other = [running("c", 0, 16, on="n1", start=3)]
    result = run([gpu_node(), gpu_node("n1", gpus=1)], [gpu_pod("high", 12)], pods + other, 20, engine)
    assert not result.preempted and any("panics preempting" in w for w in result.warnings)
    result = run([gpu_node(), gpu_node("n1", gpus=1)], [gpu_pod("high", 12)], pods + other, 22, engine)
    assert [v.name for v in result.preempted] == ["c"]


def _candidate(name: str, victims: list[tuple[int, str]], violations: int = 0) -> Candidate:
    pods = tuple(Pod("default", f"{name}-{i}", priority=p, started=s) for i, (p, s) in enumerate(victims))
    holder = Node(name, {}, (), False, 0, 0, 0, 0, [], "share", "binpack")
    return Candidate(holder, pods, violations)


# TestSelectBestCandidate-like: (name, candidates, the node chosen, tied)
PICKS = [
    ("fewest budget violations", [_candidate("n1", [(10, "1")], 1), _candidate("n2", [(100, "1")], 0)], "n2", 1),
    ("lowest highest priority", [_candidate("n1", [(100, "1")]), _candidate("n2", [(10, "1"), (10, "2")])], "n2", 1),
    (
        "smallest sum, victims counted",
        [_candidate("n1", [(10, "1"), (5, "2")]), _candidate("n2", [(10, "1")])],
        "n2",
        1,
    ),
    ("latest start of the top victims", [_candidate("n1", [(10, "05")]), _candidate("n2", [(10, "09")])], "n2", 1),
    ("a tie", [_candidate("n2", [(10, "1")]), _candidate("n1", [(10, "1")])], "n1", 2),
]


@pytest.mark.parametrize(("name", "candidates", "chosen", "tied"), PICKS, ids=[p[0] for p in PICKS])
def test_pick_one_node_for_preemption(name: str, candidates: list[Candidate], chosen: str, tied: int) -> None:
    best, ties = pick(candidates)
    assert (best.node.name, ties) == (chosen, tied)
