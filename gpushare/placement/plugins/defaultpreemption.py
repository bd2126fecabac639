"""DefaultPreemption (framework/plugins/defaultpreemption, framework/preemption): the PostFilter that runs when a
pod fits no node, and deletes lower-priority pods so it fits next time.

On every node whose filter status preemption may lift (Unschedulable, not UnschedulableAndUnresolvable), the pods
of lower priority are taken off; if the framework's filters then pass (the extender is not asked: the rendered
configuration gives it no preemptVerb), each is put back in turn, the most important first (PodDisruptionBudget
violators before the others), and those the pod cannot live with are the node's victims. Among the nodes with
victims the one chosen has the fewest budget violations, then the lowest-priority most important victim, the
smallest sum of priorities, the fewest victims, the latest start of its most important victims; kube-scheduler
breaks a remaining tie at random (Go map order), the dry run by node name and reports the tie.

The victims are deleted and the pod is nominated to the node; the next attempt tries that node first (from 1.22).
The open-source extender judges that attempt on devices: where the victims freed memory on several GPUs but no one
of them has enough, it refuses the pod, which stays pending, nominated, its victims gone.

Where nothing can be preempted, the scheduler's message says why per node ("No preemption victims found for
incoming pod", "Preemption is not helpful for scheduling", or the filter that still fails without the victims),
joined to the filters' message in the words of each minor (`suffix`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.placement.framework import Candidate, Outcome, Rejection
from gpushare.placement.model import Node, Pod
from gpushare.placement.priorities import DisruptionBudget

NAME = "DefaultPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
#: DynamicResources' PostFilter (on by default from 1.34) runs first and says this for a pod without claims.
NO_CLAIMS = "no new claims to deallocate"
#: A start time later than any written one: kube-scheduler takes time.Now() for a pod that has none.
_NOW = "\uffff"
#: minSumPrioritiesScoreFunc adds MaxInt32 + 1 to each victim's priority, so the sum also counts the victims.
_INT32_SPAN = 2**31

#: Whether a pod fits a node on the framework's filters alone (no extender), the pods there as they are now.
Fits = Callable[[Node, Pod], Rejection | None]


def importance(pod: Pod) -> tuple[int, str]:
    """util.MoreImportantPod as a sort key: higher priority first, then the earlier start."""
    return -pod.priority, pod.started or _NOW


class DefaultPreemption:
    name = NAME

    def __init__(self, scheduler: ScoringProfile) -> None:
        self.scheduler = scheduler

    def post_filter(
        self,
        pod: Pod,
        nodes: Sequence[Node],
        unresolvable: Sequence[bool],
        fits: Fits,
        budgets: Sequence[DisruptionBudget],
    ) -> Outcome:
        """Preempt for `pod`, which every node rejected on the current state (`unresolvable`, in node order: whether
        each node's rejection was UnschedulableAndUnresolvable)."""
        if not pod.preempts:
            return Outcome(None, 0, self._message(NEVER))
        answers: dict[str, str] = {}
        reasons: Counter[str] = Counter()
        candidates: list[Candidate] = []
        errors: list[str] = []
        for node, hopeless in zip(nodes, unresolvable, strict=True):
            if hopeless:
                answers[node.name] = NOT_HELPFUL
                reasons[NOT_HELPFUL] += 1
                continue
            found = self.select_victims(node, pod, fits, budgets)
            if isinstance(found, Candidate):
                candidates.append(found)
                answers[node.name] = "victims " + ", ".join(v.key for v in found.victims)
            elif found is None and self.scheduler.takes_victimless_candidates:
                candidates.append(Candidate(node, (), 0))
                answers[node.name] = "no victims needed"
            elif found is None:
                error = f'expected at least one victim pod on node "{node.name}"'
                errors.append(error)
                answers[node.name] = error
            else:
                answers[node.name] = "; ".join(found)
                reasons.update(found)
        by_node = tuple((n.name, answers[n.name]) for n in nodes)
        if not candidates:
            if errors:
                text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
                return Outcome(None, 0, f"preemption: {text}", error=True, by_node=by_node)
            tried = any(a != NOT_HELPFUL for a in answers.values())
            return self._fit_error(len(nodes), reasons, by_node, tried)
        if self.scheduler.takes_victimless_candidates and len(candidates) > 1:
            fewest = min(c.violations for c in candidates)
            first = [c for c in candidates if c.violations == fewest]
            if len(first) > 1 and any(not c.victims for c in first):
                return Outcome(None, 0, "", panics=True, by_node=by_node)
        chosen, tied = pick(candidates)
        return Outcome(chosen, tied, "", by_node=by_node)

    def without_victims(self, pod: Pod, nodes: int, unresolvable: int) -> Outcome:
        """PostFilter where no node holds a pod of lower priority than `pod`: of the `nodes` rejecting it,
        `unresolvable` are not worth trying, and the others have no victims (the engines count these without
        asking every node again)."""
        if not pod.preempts:
            return Outcome(None, 0, self._message(NEVER))
        reasons = Counter({NOT_HELPFUL: unresolvable, NO_VICTIMS: nodes - unresolvable})
        return self._fit_error(nodes, reasons, tried=unresolvable < nodes)

    def _fit_error(
        self, nodes: int, reasons: Counter[str], by_node: tuple[tuple[str, str], ...] = (), tried: bool = True
    ) -> Outcome:
        """No candidate: preemption's own FitError over every node. kube-scheduler clears the pod's nomination
        (before 1.24 only where no node was `tried`)."""
        if not nodes:  # no node at all: the scheduler stops before PostFilter
            return Outcome(None, 0, "")
        parts = sorted(f"{count} {reason}" for reason, count in reasons.items() if count)
        fit_error = f"0/{nodes} nodes are available: {', '.join(parts)}."
        clears = not tried or self.scheduler.clears_nomination_without_candidates
        return Outcome(None, 0, self._message(fit_error), clears_nomination=clears, by_node=by_node)

    def _message(self, text: str) -> str:
        """The PostFilter status message: DefaultPreemption's own, after DynamicResources' where that runs (an error
        status is DefaultPreemption's alone: RunPostFilterPlugins returns it as it comes)."""
        own = f"preemption: {text}"
        return f"{NO_CLAIMS}, {own}" if self.scheduler.dra_post_filter else own

    def select_victims(
        self, node: Node, pod: Pod, fits: Fits, budgets: Sequence[DisruptionBudget]
    ) -> Candidate | list[str] | None:
        """SelectVictimsOnNode: the node's victims; else why the pod does not fit even without them (reasons), or
        None where it fits with no victim at all (kube-scheduler then reports an error for the node). The node is
        left as it was."""
        lower = [p for p in node.bound if p.priority < pod.priority]
        if not lower:
            return [NO_VICTIMS]
        held = {id(p): gpus for p, gpus in zip(node.bound, node.held, strict=True) if p.priority < pod.priority}
        for victim in lower:
            node.remove_pod(victim)
        off = list(lower)  # taken off the node now
        try:
            rejected = fits(node, pod)
            if rejected is not None:
                return list(rejected.reasons)
            lower.sort(key=importance)
            violating, others = _split_by_budgets(lower, budgets)
            victims: list[Pod] = []
            for group in (violating, others):
                for pod_back in group:
                    node.add_pod(pod_back, held[id(pod_back)])
                    if fits(node, pod) is None:
                        off.remove(pod_back)
                    else:
                        node.remove_pod(pod_back)
                        victims.append(pod_back)
            if not victims:
                return None
            violations = sum(1 for v in victims if any(v is p for p in violating))
            if self.scheduler.sorts_victims:
                victims.sort(key=importance)
            return Candidate(node, tuple(victims), violations)
        finally:
            for pod_back in off:
                node.add_pod(pod_back, held[id(pod_back)])


def _split_by_budgets(pods: Sequence[Pod], budgets: Sequence[DisruptionBudget]) -> tuple[list[Pod], list[Pod]]:
    """filterPodsWithPDBViolation: in order, each pod a budget covers takes one of its allowed disruptions; a pod
    that takes a budget below zero violates it."""
    allowed = [b.allowed for b in budgets]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        violated = False
        for i, budget in enumerate(budgets):
            if budget.covers(pod.namespace, pod.label_map, pod.name):
                allowed[i] -= 1
                violated = violated or allowed[i] < 0
        (violating if violated else others).append(pod)
    return violating, others


def pick(candidates: Sequence[Candidate]) -> tuple[Candidate, int]:
    """pickOneNodeForPreemption: each criterion in turn keeps the best candidates until one is left."""

    def earliest_start(c: Candidate) -> str:
        top = max((v.priority for v in c.victims), default=0)
        return min((v.started or _NOW for v in c.victims if v.priority == top), default=_NOW)

    criteria: tuple[Callable[[Candidate], object], ...] = (
        lambda c: -c.violations,
        lambda c: -c.victims[0].priority if c.victims else _INT32_SPAN,
        lambda c: -sum(v.priority + _INT32_SPAN for v in c.victims),
        lambda c: -len(c.victims),
        earliest_start,
    )
    remaining = list(candidates)
    for criterion in criteria:
        best = max(criterion(c) for c in remaining)  # type: ignore[type-var]
        remaining = [c for c in remaining if criterion(c) == best]
        if len(remaining) == 1:
            return remaining[0], 1
    return min(remaining, key=lambda c: c.node.name), len(remaining)
