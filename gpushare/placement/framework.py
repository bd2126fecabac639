"""The scheduling framework, as kube-scheduler runs it for one pod: PreFilter, Filter, Score, select, PostFilter.

A plugin (`Plugin`) answers a filter with the reasons a node does not fit (none: it fits) and a score with each
feasible node's normalised score; its module under `gpushare.placement.plugins` holds everything it does, including
what the fast path's indexes read of it (its hooks, below: a plugin that declares none is run node by node). A
profile (`gpushare.placement.pluginsets`) lists which plugins run, in which order and with which weights; the
functions here run them: the first failing filter rejects a node, so a pending pod's message reads like the
scheduler's (schedule_one.go findNodesThatFitPod), and the weighted scores are summed and the highest total wins
(prioritizeNodes, selectHost). Both engines call these, so they cannot disagree on what fits or which node wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from mypy_extensions import mypyc_attr

from gpushare.domain.kubescheduler import MAX_NODE_SCORE
from gpushare.kube.podspec import SpreadConstraint
from gpushare.placement.model import Node, Pod

#: `Plugin.score_hook` values: how the score index holds a plugin's score.
LOCAL = "local"
USAGE = "usage"
GROUPED = "grouped"
#: PodTopologySpread's: matching pods counted per node and domain (the index's `Spread`, through the plugin's
#: `spread_*` methods).
SPREAD = "spread"


#: Reasons a report puts numbers to (`report.shortfall`): NodeResourcesFit's for a node at its pod count, and the
#: GPU checks' opening for GPUs without the room (`... in one device`, `... in N devices`).
TOO_MANY_PODS = "Too many pods"
GPU_SHORT = "Insufficient GPU Memory in"


class Rejection(NamedTuple):
    """A node a pod does not fit: the filter plugin that said so, and its reasons."""

    plugin: str
    reasons: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.plugin}: {'; '.join(self.reasons)}"


@dataclass
class Cycle:
    """One pod's PreFilter state (framework.CycleState): what each plugin with a PreFilter counted, by its name."""

    states: dict[str, Any] = field(default_factory=dict)


@mypyc_attr(allow_interpreted_subclasses=True)  # a library's own plugin subclasses it, compiled or not
class Plugin:
    """A scheduler plugin: a filter, a score, or both. The base passes everything; a plugin overrides what it does.

    `static`: its filter reads only a node's labels, taints and spec, so the fast engine classes nodes by it once per
    kind of pod. `prefilter` counts what the pod's rules between pods are checked against (`Cycle`); `needs_cycle`
    says whether that count can reject a node for this pod at all (else the engines skip it)."""

    # class variables, set in a plugin's class body: compiled by mypyc, a plain class attribute becomes an instance
    # slot that the compiled engine reads, and an interpreted subclass's own value in its class body is never seen
    name: ClassVar[str] = ""
    static: ClassVar[bool] = False

    def needs_cycle(self, pod: Pod, anti_affinity_bound: bool) -> bool:
        return False

    def prefilter(self, pod: Pod, nodes: Sequence[Node]) -> Any:
        return None

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        return []

    def score(self, pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]) -> list[int] | None:
        """Each feasible node's score, normalised to 0..100; None when the plugin skips the pod."""
        return None

    def unresolvable(self, reasons: Sequence[str], node: Node, pod: Pod) -> bool:
        """The filter's status code is UnschedulableAndUnresolvable: removing pods from the node cannot make the pod
        fit, so preemption does not try it. A filter that reads only the node's labels, taints and spec is such a
        one (NodeUnschedulable, TaintToleration, NodeAffinity); one that reads what is in use is not, unless it says
        otherwise."""
        return self.static

    #: Reasons of this filter whose status is UnschedulableAndUnresolvable whatever the node (counted per reason
    #: where the fast path knows no node's rejection one by one).
    unresolvable_reasons: ClassVar[frozenset[str]] = frozenset()
    #: Reasons of this filter a bind elsewhere may lift (the scheduling queue retries such a pod: `hint`).
    liftable: ClassVar[frozenset[str]] = frozenset()

    def hint(self, waiting: Pod, reasons: set[str], bound: Pod) -> bool:
        """The queueing hint: whether `bound` having been bound may let this filter pass for `waiting`, which it
        rejected for `reasons`."""
        return False

    # --- what the fast path's indexes read of the plugin (`gpushare.placement.fast`) --------------------------------
    # The indexes find the node the plugins would choose without asking every node. They know a plugin only by these
    # hooks: a filter whose `indexed` says no, or a score plugin whose `score_hook` is None, is run node by node by
    # the fast engine too (then `--explain` names it), so a new plugin is right before it is fast.

    def indexed(self, pod: Pod) -> bool:
        """A filter that reads what is in use (a dynamic one): the score index stands in for it for `pod` (it cannot
        reject a node for this pod, or the index holds what it checks)."""
        return False

    def score_hook(self) -> str | None:
        """How the score index holds this plugin's score: `LOCAL`, `USAGE`, `GROUPED`, `SPREAD`; None: it does not."""
        return None

    def scores_alike(self, pods: Sequence[Pod], nodes: Sequence[Node]) -> bool:
        """The plugin gives every node the same score for each of `pods` on these nodes (the index leaves it out)."""
        return False

    def prepare(self, nodes: Sequence[Node]) -> object:
        """What the fleet tells the plugin once, for `pod_key` (the images some node holds...)."""
        return None

    def pod_key(self, pod: Pod, prepared: object) -> object:
        """What of the pod this plugin's score reads: pods with equal keys score alike on every node, and share the
        index's groups."""
        return None

    def node_score(self, node: Node, pod: Pod) -> int:
        """`LOCAL` and `USAGE`: the node's score, needing no normalisation over the feasible nodes (`LOCAL`: from
        what no bind changes; `USAGE`: read again after each bind to the node)."""
        return 0

    def raw_score(self, node: Node, pod: Pod) -> int:
        """`GROUPED`: the node's raw score from its labels, taints and spec; `normalize` scales the feasible nodes'."""
        return 0

    def normalize(self, raws: list[int]) -> list[int]:
        return raws

    # `SPREAD`: the soft constraints' counts, kept by the index per selector (`fast.scoreindex.Spread`)

    def spread_included(self, node: Node, pod: Pod, constraint: SpreadConstraint) -> bool:
        """Whether the node's pods count towards the constraint's domains (the node inclusion policies)."""
        return True

    def spread_weights(self, keys: Sequence[str], hosts: int, domains: Sequence[int]) -> list[float]:
        """Each constraint's weight, from the feasible hosts and the domains among them."""
        return [1.0] * len(keys)

    def spread_raw(
        self,
        constraints: Sequence[SpreadConstraint],
        values: Sequence[str | None],
        counts: Sequence[int],
        weights: Sequence[float],
    ) -> int:
        """A node's raw score from its topology values and the matching pods counted in its domains."""
        return 0

    def spread_normalize(self, raw: list[int], ignored: list[bool]) -> list[int]:
        return raw


def default_normalize(scores: list[int], reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore: scale to 0..100 by the highest score (reversed: 100 minus that)."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else scores
    scaled = [MAX_NODE_SCORE * s // top for s in scores]
    return [MAX_NODE_SCORE - s for s in scaled] if reverse else scaled


def first_rejection(filters: Sequence[Plugin], node: Node, pod: Pod, cycle: Cycle | None = None) -> Rejection | None:
    """The first filter in order that rejects the node (None: it fits)."""
    for plugin in filters:
        reasons = plugin.filter(node, pod, cycle)
        if reasons:
            return Rejection(plugin.name, tuple(reasons))
    return None


def prefilter(plugins: Sequence[Plugin], pod: Pod, nodes: Sequence[Node]) -> Cycle:
    """Every PreFilter of the profile, over every node and its bound pods."""
    cycle = Cycle()
    for plugin in plugins:
        state = plugin.prefilter(pod, nodes)
        if state is not None:
            cycle.states[plugin.name] = state
    return cycle


def prioritize(
    scores: Sequence[tuple[Plugin, int]], pod: Pod, feasible: Sequence[Node], all_nodes: Sequence[Node]
) -> list[int]:
    """Each feasible node's total: every score plugin's normalised score times its weight, summed."""
    totals = [0] * len(feasible)
    for plugin, weight in scores:
        found = plugin.score(pod, feasible, all_nodes)
        if found is None:
            continue
        for i, score in enumerate(found):
            totals[i] += score * weight
    return totals


def tie_break(node: Node) -> tuple[int, str]:
    """Among nodes tied on score: the one with the most GPU memory free on one device, then the first by name."""
    return -node.room, node.name


#: Picks one of the nodes tied on the best score (a sampled run's random choice).
Pick = Callable[[list[Node]], Node]


def select(feasible: Sequence[Node], totals: Sequence[int], pick: Pick | None = None) -> tuple[Node, int]:
    """selectHost: a node with the highest total, and how many nodes shared it. kube-scheduler picks among tied
    nodes at random; the dry run takes the first by `tie_break`, so the choice is repeatable and the fast engine
    finds it by bisection (`pick`: a sampled run's choice instead)."""
    best = max(totals)
    tied = [n for n, t in zip(feasible, totals, strict=True) if t == best]
    return (min(tied, key=tie_break) if pick is None else pick(tied)), len(tied)


def choose(
    scores: Sequence[tuple[Plugin, int]],
    pod: Pod,
    feasible: Sequence[Node],
    all_nodes: Sequence[Node],
    pick: Pick | None = None,
) -> tuple[Node, int]:
    """The node kube-scheduler binds the pod to, and the number of nodes tied with it. A single feasible node is
    taken without scoring, as the scheduler does."""
    if len(feasible) == 1:
        return feasible[0], 1
    return select(feasible, prioritize(scores, pod, feasible, all_nodes), pick)


# --- PostFilter ---------------------------------------------------------------------------------------------------


class Candidate(NamedTuple):
    node: Node
    victims: tuple[Pod, ...]  # in the order they were found: budget violators first, each group most important first
    violations: int  # victims whose deletion goes past a PodDisruptionBudget


class Outcome(NamedTuple):
    """What PostFilter did for a pod that fits no node."""

    chosen: Candidate | None
    tied: int  # candidates the choice could not tell apart (kube-scheduler picks among them at random)
    #: The status message (what the FitError's text gets), "" if none; its code was an error (`error`), which 1.24
    #: does not write into the pod's message.
    message: str
    error: bool = False
    #: kube-scheduler clears the pod's nominatedNodeName (a FitError with no candidate); else it leaves it.
    clears_nomination: bool = False
    #: Each node's answer for `--explain`: its victims, or why it has none.
    by_node: tuple[tuple[str, str], ...] = ()
    #: kube-scheduler 1.20-1.21 panics choosing among candidates one of which has no victim (pickOneNodeForPreemption
    #: reads the first victim of each candidate tied on budget violations): it exits, and again on every restart.
    panics: bool = False
