"""Preemption in a dry run: what kube-scheduler does after a pod fits no node, for both engines.

The profile's PostFilter (`plugins.defaultpreemption`) chooses victims on the current state; their deletion is
applied (a victim placed earlier in the same run leaves `placements` for `preempted`), the pod is nominated to the
node and tried again at once, that node first: the victims are deleted with their grace period (0 for the pods a
scheduler test runs without kubelets), and the deletion requeues the pod before anything else arrives. A pod that
still does not fit may preempt again, as kube-scheduler's next cycle would; one whose preemption freed room it
cannot use (the extender refuses it on devices) stays pending, nominated, and the run warns.

The quiet case costs nothing per node: where no bound pod has a lower priority than the pending one, every node
answers "No preemption victims found" or, where its filter said so, "Preemption is not helpful", and the engines
count those from what they already know (`Engine.unresolvable`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from gpushare.placement.framework import Cycle, Outcome, Rejection
from gpushare.placement.model import Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.priorities import DisruptionBudget
from gpushare.placement.result import Assignment, Pending, PlacementResult, Preempted
from gpushare.placement.sampling import Sampler

PANIC_WORKAROUND = (
    "Upgrade kube-scheduler, or give the pod preemptionPolicy: Never (a PriorityClass with it) until the GPU is free."
)
#: One scheduling attempt on the current state (the engine's).
Attempt = Callable[[Pod], Assignment | Pending]


class Engine(Protocol):
    """What preemption asks of an engine."""

    #: Where kube-scheduler's search may stop early (None: the profile has no scores, the search is not modelled).
    sampler: Sampler | None

    def unresolvable(self, pod: Pod, pending: Pending) -> int:
        """How many nodes rejected the pending pod with an UnschedulableAndUnresolvable status."""
        ...

    def evict(self, node: Node, pod: Pod) -> None:
        """Delete a bound pod (its indexes, if any, follow)."""
        ...

    def nominated(self, pod: Pod, name: str) -> Assignment | None:
        """Bind the pod to its nominated node if every filter and the extender pass there (else None)."""
        ...

    def nominations_changed(self, highest: int | None) -> None:
        """Pods were nominated or stopped being: the highest priority among those nominated now (None: none). The
        filters count them on their nodes (`Node.nominated`); the engine's shortcuts must not skip the filters."""
        ...


class Preemption:
    """The PostFilter step of one run, the nominations it made, and the priorities of the pods bound so far (to
    tell the quiet case)."""

    def __init__(
        self,
        profile: Profile,
        nodes: list[Node],
        budgets: Sequence[DisruptionBudget],
        result: PlacementResult,
        engine: Engine,
        attempt: Attempt,
        explain: bool,
    ) -> None:
        self.profile = profile
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes}
        self.budgets = budgets
        self.result = result
        self.engine = engine
        self.attempt = attempt
        self.explain = explain
        #: priority -> bound pods of it (a plain dict: a bind adds to it, and binds are the hot path)
        self.priorities: dict[int, int] = dict(Counter(p.priority for n in nodes for p in n.bound))
        self.nominations: dict[str, tuple[Pod, Node]] = {}
        #: Nodes where victims were deleted since the queue last asked (`take_freed`): the deletions are events.
        self.freed: list[Node] = []
        #: The quiet case's message by (nodes, unresolvable nodes, the pod preempts): a fleet's pending tail asks
        #: the same few again and again.
        self.quiet_posts: dict[tuple[int, int, bool], tuple[Outcome, str]] = {}

    def placed(self, pod: Pod) -> None:
        """A pod was bound: its priority counts, and it is nominated nowhere any more."""
        self.priorities[pod.priority] = self.priorities.get(pod.priority, 0) + 1
        if self.nominations:
            self._nominate(pod, None)

    def _nominate(self, pod: Pod, node: Node | None) -> None:
        """Nominate the pending pod to `node` (None: nowhere), where the filters will count it."""
        held = self.nominations.pop(pod.key, None)
        if held is None and node is None:
            return
        if held is not None:
            held[1].nominated.remove(held[0])
        if node is not None:
            self.nominations[pod.key] = (pod, node)
            node.nominated.append(pod)
        self.engine.nominations_changed(max((p.priority for p, _ in self.nominations.values()), default=None))

    def take_freed(self) -> list[Node]:
        """The nodes where victims were deleted since the last call (the queue retries what they may let bind)."""
        freed, self.freed = self.freed, []
        return freed

    def _quiet(self, pod: Pod) -> bool:
        """No bound pod has a lower priority: nothing to preempt anywhere."""
        return not pod.preempts or not any(p < pod.priority and n for p, n in self.priorities.items())

    def after(self, pod: Pod, pending: Pending) -> Assignment | Pending:
        """PostFilter for a pod that fits no node; the pod's outcome once preemption has done what it does."""
        plugin = self.profile.post_filter
        if plugin is None:
            return pending
        outcome: Assignment | Pending = pending
        held = self.nominations.get(pod.key)
        nominated = held[1].name if held else ""
        evicted: list[Preempted] = []
        while isinstance(outcome, Pending):
            if self._quiet(pod) and not self.explain:  # --explain asks every node, for its answer
                sampler = self.engine.sampler
                cut = None if sampler is None else sampler.hopeless(self.profile, pod)
                hopeless = self.engine.unresolvable(pod, outcome) if cut is None else cut
                key = (outcome.nodes, hopeless, pod.preempts)
                known = self.quiet_posts.get(key)
                if known is None:
                    answer = plugin.without_victims(pod, key[0], key[1])
                    known = self.quiet_posts[key] = (answer, self._post(outcome, answer))
                kept = "" if known[0].clears_nomination else nominated
                outcome = replace(outcome, post_filter=known[1], nominated=kept)
                break
            answer = plugin.post_filter(pod, self.nodes, self._statuses(pod), self._fits, self.budgets)
            chosen = answer.chosen
            if answer.panics:
                self.result.warnings.append(
                    f"pod {pod.key}: kube-scheduler 1.{self.profile.scheduler.minor} panics preempting for it (index "
                    "out of range in pickOneNodeForPreemption: a node where it fits without deleting anything ties "
                    "with another candidate) and exits; restarted, it panics again on this pod, so no later pod is "
                    f"scheduled until {pod.key} is deleted. {PANIC_WORKAROUND}"
                )
                outcome = self._pending(outcome, answer, nominated)
                break
            if chosen is None or not chosen.victims:
                if chosen is not None:  # 1.20-1.21: a node that needs no victim is nominated as it is
                    nominated = chosen.node.name
                elif answer.clears_nomination:
                    nominated = ""
                outcome = self._pending(outcome, answer, nominated)
                break
            for victim in chosen.victims:
                self.engine.evict(chosen.node, victim)
                self.priorities[victim.priority] -= 1
                evicted.append(self._record(victim, chosen.node, pod, answer.tied))
            self.freed.append(chosen.node)
            self._clear_lower(chosen.node, pod)
            nominated = chosen.node.name
            self._nominate(pod, chosen.node)
            outcome = self._next_cycle(pod, chosen.node)
        self._nominate(
            pod, self.by_name[outcome.nominated] if isinstance(outcome, Pending) and outcome.nominated else None
        )
        if evicted and isinstance(outcome, Pending):
            self.result.warnings.append(
                f"pod {pod.key} preempted {', '.join(e.key for e in evicted)} and still does not fit: {outcome.message}"
            )
        return outcome

    def _next_cycle(self, pod: Pod, node: Node) -> Assignment | Pending:
        """The pod's next scheduling cycle once its victims are gone: from 1.22 its nominated node first
        (evaluateNominatedNode), taken unscored if it passes; else every node. Where the node passed the filters
        but not the extender, 1.22-1.31 count the extender's reason for it twice (it failed both passes)."""
        scheduler = self.profile.scheduler
        if not scheduler.prefers_nominated_node:
            return self.attempt(pod)
        if self.engine.sampler is not None and scheduler.nominated_search_resets_start:
            self.engine.sampler.restart()
        found = self.engine.nominated(pod, node.name)
        if found is not None:
            return found
        outcome = self.attempt(pod)
        if isinstance(outcome, Pending) and scheduler.extender_appends_reasons:
            rejected = self.profile.rejection(node, pod, self._cycle_for(pod))
            if rejected is not None and rejected.plugin == self.profile.gpus.name:
                counts = Counter(dict(outcome.reasons))
                counts.update(rejected.reasons)
                outcome = replace(outcome, reasons=tuple(sorted(counts.items())))
        return outcome

    def _clear_lower(self, node: Node, by: Pod) -> None:
        """prepareCandidate: pods nominated to the node with a lower priority than the preemptor lose their
        nomination (their pending records say so)."""
        for key, (pod, where) in list(self.nominations.items()):
            if where is node and pod.priority < by.priority:
                self._nominate(pod, None)
                for i, waiting in enumerate(self.result.pending):
                    if waiting.key == key:
                        self.result.pending[i] = replace(waiting, nominated="")

    def _pending(self, pending: Pending, answer: Outcome, nominated: str) -> Pending:
        explained = answer.by_node if self.explain else ()
        return replace(pending, post_filter=self._post(pending, answer), nominated=nominated, preemption=explained)

    def _post(self, pending: Pending, answer: Outcome) -> str:
        """What PostFilter's answer adds after the filters' message, in the minor's words."""
        filters = pending.filters_message
        return self.profile.scheduler.fit_error(filters, answer.message, answer.error)[len(filters) :]

    def _record(self, victim: Pod, node: Node, by: Pod, tied: int) -> Preempted:
        """A victim leaves the run's placements if the run placed it."""
        placements = self.result.placements
        for i, placed in enumerate(placements):
            if placed.namespace == victim.namespace and placed.name == victim.name:
                del placements[i]
                break
        record = Preempted(victim.namespace, victim.name, node.name, by.key, victim.priority, tied)
        self.result.preempted.append(record)
        return record

    def _cycle_for(self, pod: Pod) -> Cycle | None:
        return cycle_for(self.profile, self.nodes, pod)

    def _statuses(self, pod: Pod) -> list[bool]:
        cut = self._cut_statuses(pod)
        return unresolvable_statuses(self.profile, self.nodes, pod) if cut is None else cut

    def _cut_statuses(self, pod: Pod) -> list[bool] | None:
        """The statuses of the pod's last cycle where kube-scheduler's search stopped early (None: it did not)."""
        sampler = self.engine.sampler
        return None if sampler is None else sampler.unresolvable(self.profile, pod)

    def _fits(self, node: Node, pod: Pod) -> Rejection | None:
        """The framework's filters on the node as it stands (victims taken off), the pod's counts made again."""
        return self.profile.framework_rejection(node, pod, self._cycle_for(pod))


def cycle_for(profile: Profile, nodes: Sequence[Node], pod: Pod) -> Cycle | None:
    """The pod's counts of other pods on the current state, where a rule between pods applies to it."""
    anti = any(p.pod_affinity is not None and p.pod_affinity.required_anti for n in nodes for p in n.bound)
    return profile.prefilter(pod, nodes) if profile.needs_cycle(pod, anti) else None


def unresolvable_statuses(profile: Profile, nodes: Sequence[Node], pod: Pod) -> list[bool]:
    """Whether each node's filter status on the current state (the extender's included) is
    UnschedulableAndUnresolvable."""
    cycle = cycle_for(profile, nodes, pod)
    return [profile.unresolvable(profile.rejection(n, pod, cycle), n, pod) for n in nodes]
