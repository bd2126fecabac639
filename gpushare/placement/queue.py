"""The scheduling queue both engines share: which pod kube-scheduler takes next, and which pending pods it tries
again after a pod is bound or deleted (scheduling_queue.go).

**Order.** Pods that wait in the active queue together leave it by priority, highest first, then by the time they
entered it (queuesort.PrioritySort): pods that already exist when the run starts (a snapshot's pending pods, a
backlog, pods created while the scheduler was down) wait together, and the queue took them in as the API server
told it of them, in creation order (`metadata.creationTimestamp`; the input's order where it is equal or absent).
Pods still to be created (a workload file, a controller's replicas) arrive one at a time in the input's order, each
scheduled before the next arrives. `QueueMode` chooses: `auto` (pods with a creationTimestamp wait together, before
the others arrive), `together` (every pod), `arrival` (none: the input's order).

**Retries.** A pod that fits nowhere waits in the unschedulable pool until an event may change its answer:
- a pod deleted (preemption's victims): a resource, port, affinity or the extender's rejection may lift, and every
  minor moves such a pod back (1.20 every pod; 1.21-1.31 those rejected by a plugin registered for pod deletions,
  NodeResourcesFit among them; from 1.32 NodeResourcesFit's queueing hint on any bound pod deleted). Room freed on
  a node is the only change a deletion makes, so the dry run retries the pods that now pass the filters on a node
  where victims were deleted (or whose cut search never filtered every node): a pod with preemptionPolicy Never
  binds beside the preemptor, as it does in a real cluster once the victims are gone;
- a pod bound, from 1.33 (SchedulerPopFromBackoffQ): each plugin that rejected the waiting pod says whether the new
  pod could change its answer (queueing hints, on from 1.32): InterPodAffinity when the bound pod matches all the
  waiting pod's required affinity terms, PodTopologySpread when it is in the waiting pod's namespace and one of its
  hard constraints' selectors matches it. Such a pod is retried as soon as the scheduler is idle. Before 1.33 the
  retry waits out a backoff of a second or more, which depends on timing the dry run does not model: pods stay
  pending there.
Pods moved back are retried once the pods waiting together have been taken (they back off for a second first;
a pod arriving alone finds the queue idle), highest priority first, then in the order they failed; a retried pod's
bind or preemption is an event too, and the queue runs until no event moves a pod.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from gpushare.placement.model import Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.preemption import Attempt, Engine, Preemption, cycle_for
from gpushare.placement.priorities import DisruptionBudget
from gpushare.placement.result import Assignment, Pending, PlacementResult

#: Which pods wait in the active queue together (see the module's docstring).
QueueMode = Literal["auto", "together", "arrival"]
QUEUE_MODES: tuple[QueueMode, ...] = ("auto", "together", "arrival")


def arrivals(pods: Sequence[Pod], mode: QueueMode = "auto") -> tuple[list[Pod], list[Pod]]:
    """The pods waiting together, in the order they leave the active queue, and the pods that arrive after them one
    at a time, in the input's order. A pod that names its node is bound as it is created: first, in either."""
    if mode == "arrival":
        return [], list(pods)
    together = [p for p in pods if mode == "together" or p.created]
    arriving = [p for p in pods if mode != "together" and not p.created]
    ranked = sorted(
        range(len(together)),
        key=lambda i: (
            together[i].node is None,
            -together[i].priority,
            not together[i].created,
            together[i].created,
            i,
        ),
    )
    return [together[i] for i in ranked], arriving


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
    mode: QueueMode = "auto",
) -> None:
    """The pods waiting together, then each arriving pod, through the queue (`arrivals`; a replay, `order`, takes
    the input's order), with the retries their binds and preemptions cause. Pods whose node is fixed (replayed by
    `order`, or named in spec.nodeName) are never retried nor preempt. A pod that fits nowhere goes through the
    profile's PostFilter (`preemption`), which may bind it after all."""
    together, arriving = arrivals(pods, "arrival" if order else mode)
    preemption = Preemption(profile, result.nodes, budgets, result, engine, attempt, explain)
    queue = _Queue(profile, result, attempt, order, preemption, engine, any(p.bind_error for p in pods))
    for pod in together:
        tick()
        queue.first(pod)
    queue.drain()
    for pod in arriving:
        tick()
        queue.first(pod)
        queue.drain()


class _Queue:
    """The unschedulable pool and the pods moved back from it, for one run."""

    def __init__(
        self,
        profile: Profile,
        result: PlacementResult,
        attempt: Attempt,
        order: Mapping[str, str],
        preemption: Preemption,
        engine: Engine,
        bind_errors: bool,
    ) -> None:
        self.profile = profile
        self.result = result
        self.order = order
        self.nodes = result.nodes
        self.preemption = preemption
        self.engine = engine
        self.retries = profile.retries_at_once
        self.liftable = profile.liftable
        #: The pods that fit nowhere (the unschedulable pool), by key in the order they failed, each with its record;
        #: and those of them a bind may help (`_liftable`), the few a bind's hints are asked about.
        self.waiting: dict[str, tuple[Pod, Pending]] = {}
        self.liftable_keys: dict[str, None] = {}
        #: Pods an event moved back, to retry: a heap by priority, then the order they were moved.
        self.moved: list[tuple[int, int, Pod]] = []
        self.moves = 0
        self.attempt = attempt
        self.post_filter = profile.post_filter is not None
        # a run without PostFilter and without a pod whose bind fails pays nothing per attempt
        self.cycle: Callable[[Pod], Assignment | Pending] = self._cycle if self.post_filter or bind_errors else attempt

    def _fixed(self, pod: Pod) -> bool:
        return pod.key in self.order or pod.node is not None

    def _cycle(self, pod: Pod) -> Assignment | Pending:
        """The scheduling cycle (PostFilter where the filters leave no node), then the binding cycle's failure."""
        outcome = self.attempt(pod)
        if isinstance(outcome, Pending) and self.post_filter and not self._fixed(pod):
            outcome = self.preemption.after(pod, outcome)
        if isinstance(outcome, Assignment):
            if pod.bind_error and not self._fixed(pod):  # the bind fails: the pod holds nothing, retried for ever
                self.engine.evict(self.preemption.by_name[outcome.node], pod)
                return Pending(pod.namespace, pod.name, len(self.nodes), (), pod.per_gpu, error=pod.bind_error)
            if self.post_filter:
                self.preemption.placed(pod)
        return outcome

    def first(self, pod: Pod) -> None:
        """A pod's first scheduling cycle."""
        outcome = self.cycle(pod)
        if isinstance(outcome, Pending):
            self.result.pending.append(outcome)
            if not self._fixed(pod) and not outcome.error:
                self._wait(pod, outcome)
        else:
            self.result.placements.append(outcome)
            self._bound(pod)
        self._deleted()

    def drain(self) -> None:
        """Retry the pods moved back, highest priority first, until no event moves one."""
        while self.moved:
            _, _, pod = heapq.heappop(self.moved)
            outcome = self.cycle(pod)
            pending = self.result.pending
            # its record, by name: preemption may have replaced it (a nomination cleared)
            position = next(i for i, p in enumerate(pending) if p.namespace == pod.namespace and p.name == pod.name)
            if isinstance(outcome, Pending):
                pending[position] = outcome
                self._wait(pod, outcome)
            else:
                del pending[position]
                self.result.placements.append(outcome)
                self._bound(pod)
            self._deleted()

    def _wait(self, pod: Pod, why: Pending) -> None:
        self.waiting[pod.key] = (pod, why)
        if _liftable(why, self.liftable):
            self.liftable_keys[pod.key] = None

    def _move(self, keys: list[str]) -> None:
        for key in keys:
            pod, _ = self.waiting.pop(key)
            self.liftable_keys.pop(key, None)
            self.moves += 1
            heapq.heappush(self.moved, (-pod.priority, self.moves, pod))

    def _bound(self, pod: Pod) -> None:
        """From 1.33, the waiting pods a plugin's queueing hint says `pod`'s bind may help (among those a bind may
        help at all: a fleet's pending tail rejected for room is not asked at every bind)."""
        if self.retries and self.liftable_keys:
            waiting = self.waiting
            self._move([k for k in self.liftable_keys if worth_retrying(self.profile, *waiting[k], pod)])

    def _deleted(self) -> None:
        """The waiting pods that the victims' deletion in the last cycle may let bind: those now passing the filters
        on a node where victims were deleted (the nominated preemptor counted), or whose search was cut. Pods alike
        (the same fit and priority, no rule between pods) are asked once."""
        freed = self.preemption.take_freed()
        if not freed or not self.waiting:
            return
        profile, nodes = self.profile, self.nodes
        known: dict[tuple[object, ...], bool] = {}

        def helped(pod: Pod, why: Pending) -> bool:
            if why.unfiltered > 0:
                return True
            cycle = cycle_for(profile, nodes, pod)
            alike = (pod.fit_key, pod.priority) if cycle is None else None
            if alike is not None and alike in known:
                return known[alike]
            fits = any(profile.rejection(node, pod, cycle) is None for node in freed)
            if alike is not None:
                known[alike] = fits
            return fits

        self._move([key for key, (pod, why) in self.waiting.items() if helped(pod, why)])
