"""The scheduling queue both engines share: pods in order, and from kube-scheduler 1.33 the retry of pending pods
that a bind may have made schedulable.

A pending pod waits in kube-scheduler's unschedulable queue. When a pod is bound, each plugin that rejected a
waiting pod says whether the new pod could change its answer (queueing hints, on from 1.32): InterPodAffinity when
the bound pod matches all the waiting pod's required affinity terms, PodTopologySpread when it is in the waiting
pod's namespace and one of its hard constraints' selectors matches it. From 1.33 (SchedulerPopFromBackoffQ) such a
pod is popped from the backoff queue as soon as the scheduler is idle, so in a run where pods arrive one at a time
it is retried before the next new pod: the dry run does the same. Before 1.33 the retry waits out a backoff of a
second or more, which depends on timing the dry run does not model; pods stay pending there. Other rejections
(resources, taints, node affinity, the extender's GPU choice) cannot be lifted by a bind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence

from gpushare.placement.model import Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.preemption import Attempt, Engine, Preemption
from gpushare.placement.priorities import DisruptionBudget
from gpushare.placement.result import Assignment, Pending, PlacementResult


def _liftable(why: Pending, liftable: frozenset[str]) -> bool:
    """Rejected by a plugin a bind can satisfy (pod affinity, hard spreading: `Plugin.liftable`), or by the extender
    on the nodes a cut search filtered (the next search starts elsewhere): the pod waits for binds."""
    return why.unfiltered > 0 or any(reason in liftable for reason, _ in why.reasons)


def worth_retrying(profile: Profile, waiting: Pod, why: Pending, bound: Pod) -> bool:
    """The queueing hints of the plugins that rejected `waiting`, for `bound` having been added. An extender's
    rejection requeues the pod on any event (kube-scheduler puts ExtenderName among its unschedulable plugins)."""
    if why.unfiltered > 0:
        return True
    return profile.hint(waiting, {reason for reason, _ in why.reasons}, bound)


def drive(
    pods: Sequence[Pod],
    attempt: Attempt,
    profile: Profile,
    result: PlacementResult,
    tick: Callable[[], None],
    order: Mapping[str, str],
    engine: Engine,
    budgets: Sequence[DisruptionBudget],
    explain: bool,
) -> None:
    """Each pod in order, then, where the minor retries at once, the waiting pods each bind may have freed (in the
    order they arrived; a retried pod's own bind is an event too). Pods whose node is fixed (replayed by `order`,
    or named in spec.nodeName) are never retried nor preempt. A pod that fits nowhere goes through the profile's
    PostFilter (`preemption`), which may bind it after all."""
    retries = profile.retries_at_once
    liftable = profile.liftable

    def fixed(pod: Pod) -> bool:
        return pod.key in order or pod.node is not None

    preemption = Preemption(profile, result.nodes, budgets, result, engine, attempt, explain)
    post_filter = preemption.after if profile.post_filter is not None else None
    placed = preemption.placed

    def with_post_filter(pod: Pod) -> Assignment | Pending:
        outcome = attempt(pod)
        if isinstance(outcome, Pending) and post_filter is not None and not fixed(pod):
            outcome = post_filter(pod, outcome)
        if isinstance(outcome, Assignment):
            placed(pod)
        return outcome

    cycle = attempt if post_filter is None else with_post_filter  # a profile without PostFilter pays nothing

    waiting: list[tuple[Pod, Pending]] = []
    for pod in pods:
        tick()
        outcome = cycle(pod)
        if isinstance(outcome, Pending):
            result.pending.append(outcome)
            if retries and not fixed(pod) and _liftable(outcome, liftable):
                waiting.append((pod, outcome))
            continue
        result.placements.append(outcome)
        if retries and waiting:
            _retry(profile, pod, waiting, cycle, result)


def _retry(
    profile: Profile, bound: Pod, waiting: list[tuple[Pod, Pending]], attempt: Attempt, result: PlacementResult
) -> None:
    """Retry, in arrival order, the waiting pods each bind may have freed; a pod still pending keeps its place."""
    events = deque([bound])
    while events and waiting:
        added = events.popleft()
        still: list[tuple[Pod, Pending]] = []
        for pod, before in waiting:
            if not worth_retrying(profile, pod, before, added):
                still.append((pod, before))
                continue
            outcome = attempt(pod)
            position = next(i for i, p in enumerate(result.pending) if p is before)  # not ==: records may be equal
            if isinstance(outcome, Pending):
                result.pending[position] = outcome
                if _liftable(outcome, profile.liftable):
                    still.append((pod, outcome))
            else:
                del result.pending[position]
                result.placements.append(outcome)
                events.append(pod)
        waiting[:] = still
