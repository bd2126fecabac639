"""What a dry run answers: where each pod lands, what stays pending and why, what was invalid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from gpushare.placement.framework import Rejection
from gpushare.placement.model import Node, Semantics
from gpushare.policy.engine import Finding


@dataclass(frozen=True)
class PodRef:
    """The pod a line of the result is about."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Assignment(PodRef):
    """A pod bound to a node, with the GPUs the extender's bind chose: what the pod's annotations would hold."""

    node: str
    gpus: tuple[tuple[int, int], ...]  # (GPU index, memory units) for each GPU the pod got
    core: int = 0
    #: Nodes that shared the best score (1: no tie). The real scheduler picks among tied nodes at random.
    tied_with: int = 1


@dataclass(frozen=True)
class Pending(PodRef):
    """A pod no node took, with kube-scheduler's reasons counted per node as its PodScheduled condition says."""

    nodes: int  # nodes considered
    reasons: tuple[tuple[str, int], ...]  # (reason, number of nodes), sorted by reason
    per_gpu: int = 0  # memory units it asks on each GPU (what fragmentation is measured against)
    #: With explain: each node and the filter plugin that rejected the pod there.
    by_node: tuple[tuple[str, Rejection], ...] = ()
    #: What PostFilter (preemption) adds to the message, in the words of the modelled minor ("" where nothing).
    post_filter: str = ""
    #: The node preemption nominated it to (status.nominatedNodeName), "" if none.
    nominated: str = ""
    #: With explain: each node's preemption answer (its victims, or why none).
    preemption: tuple[tuple[str, str], ...] = ()
    #: Nodes kube-scheduler never filtered for it: the search stopped once it had found enough nodes passing its
    #: own filters, and the extender rejected all of those (`gpushare.placement.sampling`).
    unfiltered: int = 0
    #: The binding cycle's error where the filters passed but the bind fails (the pod's condition then holds it).
    error: str = ""
    #: What it asks of a node, as NodeResourcesFit counts it: cpu (millicores), memory (bytes), aliyun.com/gpu-mem
    #: (units) and extended resources; the words a report puts numbers to its reasons with (`report.shortfall`).
    requests: tuple[tuple[str, int], ...] = ()

    @property
    def filters_message(self) -> str:
        """The filters' part of kube-scheduler's FitError text: `0/N nodes are available: ...`."""
        if not self.reasons:
            return f"0/{self.nodes} nodes are available."
        parts = sorted(f"{count} {reason}" for reason, count in self.reasons)
        return f"0/{self.nodes} nodes are available: {', '.join(parts)}."

    @property
    def message(self) -> str:
        """kube-scheduler's FitError text, as the pod's PodScheduled condition holds it (a failed bind's error)."""
        return self.error or self.filters_message + self.post_filter


@dataclass(frozen=True)
class Preempted(PodRef):
    """A pod deleted by preemption (DefaultPreemption) to make room for `by`."""

    node: str
    by: str
    priority: int
    #: Nodes whose victims preemption could not tell apart (1: none); kube-scheduler picks among them at random.
    tied_with: int = 1


@dataclass(frozen=True)
class NotServed(PodRef):
    """A GPU pod that names another scheduler: the extender never sees it, so gpushare does not place it."""

    scheduler_name: str
    served: str
    source: str = ""

    @property
    def reason(self) -> str:
        return (
            f"spec.schedulerName {self.scheduler_name} is not {self.served}: the gpushare extender never sees this "
            "pod; another scheduler would bind it without a GPU device, and it would start without a GPU [GW214]"
        )


@dataclass(frozen=True)
class Invalid(PodRef):
    """A pod the API server or the extender would refuse as written: never placed, the reason names the field."""

    reason: str
    source: str = ""


@dataclass
class PlacementResult:
    """One dry run's answers under one semantics, with the nodes' final state for reports and planners."""

    semantics: Semantics
    placements: list[Assignment] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    invalid: list[Invalid] = field(default_factory=list)
    not_served: list[NotServed] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # final state, input order
    preempted: list[Preempted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: kube-scheduler's scores chose the nodes (the open-source stack; ACK's node order is no score).
    scored: bool = False
    #: With `place --runs K`: each pod's outcome over K more runs with the nodes listed in other orders and ties
    #: broken at random (`Sampled`); 0 runs: none sampled.
    sampled_runs: int = 0
    sampled: list[Sampled] = field(default_factory=list)
    #: What `validate` calls errors in the inputs, though the API server takes them: pods that can never run or
    #: bind (a byte suffix on gpu-mem, 0 of it, more than any GPU holds...) and nodes of absurd size, each still
    #: modelled as kube-scheduler would treat it (`gpushare.policy.neverruns`). A command that shows them exits 1.
    findings: list[Finding] = field(default_factory=list)


class Sampled(NamedTuple):
    """One pod over sampled runs: the node the dry run gave it ("": pending there), in how many runs it landed
    there, on another node, or stayed pending, and its likeliest outcome (the node most runs gave it, "": pending)
    with how many runs gave it."""

    namespace: str
    name: str
    node: str
    same: int
    elsewhere: int
    pending: int
    likely: str
    likely_runs: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
