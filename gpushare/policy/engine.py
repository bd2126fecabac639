"""The product's rules as data, evaluated by one engine.

A rule is an entry: a stable ID, a severity, what it applies to (the installer settings, a workload's
pod template, a Node, or the cluster's facts), how to fix it and where the rule comes from. Its
`check` returns the offending (field, value, allowed) triples; the engine turns them into findings.
`gpushare render` refuses error findings on its settings, `gpushare validate` and `gpushare preflight`
report them all: one set of entries (`gpushare.policy.rules`), one voice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gpushare.domain.versionstr import numbers, valid
from gpushare.errors import not_allowed, shown
from gpushare.kube.documents import Source
from gpushare.kube.nodes import NodeInfo
from gpushare.kube.workloads import Workload

if TYPE_CHECKING:  # pydantic's models cost validate 0.1 s to import, for pods that need none of them
    from gpushare.kube.installed import UnitReading
    from gpushare.kube.ledger import Ledger
    from gpushare.settings.model import InstallerSettings

Severity = Literal["error", "warning"]
#: What a rule reads: the installer settings, a workload, a Node manifest, the cluster's facts, or (doctor) a bound
#: GPU pod, a GPU node with what runs on it, or the whole GPU-sharing ledger.
Target = Literal["settings", "workload", "node", "cluster", "gpu-pod", "gpu-node", "ledger"]
Offence = tuple[str, Any, str]


@dataclass(frozen=True)
class ClusterFacts:
    """What is known about the cluster: flags, a live read, and the other objects being validated."""

    region: str | None = None
    kube_version: str | None = None  # as the cluster reports it (may be outside the supported minors)
    scheduler_version: str | None = None
    cgpu_version: str | None = None
    driver_version: str | None = None
    docker_version: str | None = None
    chart_version: str | None = None
    #: The spec.schedulerName gpushare serves (--scheduler-name, or the installed release's); the settings' wins.
    scheduler_name: str | None = None
    #: When the cluster was created (the kube-system namespace's creationTimestamp, ISO 8601), from a live read.
    cluster_created: str | None = None
    settings: InstallerSettings | None = None
    #: The unit of aliyun.com/gpu-mem when no settings name one (`place --gpu-memory-unit`); the settings' wins.
    gpu_memory_unit: str | None = None
    #: Whose GPU-sharing stack serves the pods (`--semantics`): ACK's (`ack`) or the open-source extender and
    #: device plugin (`upstream`), which know no compute share; None: not said (the rules on it do not run).
    semantics: str | None = None
    nodes: Sequence[NodeInfo] = ()
    workloads: Sequence[Workload] = ()
    #: The units installed now, each where it was read (preflight's live read; diff: the settings before).
    current_units: Sequence[UnitReading] = ()
    #: Running pods that hold GPU memory (namespace/name): a change of unit must see none of them run.
    gpu_pods: Sequence[str] = ()
    #: `diff`: (node, mode before, mode after) for each GPU node whose ack.node.gpu.schedule the change sets to
    #: another mode, and the running GPU pods on each node.
    relabelled: Sequence[tuple[str, str, str]] = ()
    gpu_pods_on: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: `doctor`: the cluster's GPU-sharing ledger.
    ledger: Ledger | None = None
    #: What rules work out once per run over the whole input rather than per object (theirs to fill).
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: Findings on these facts name the command line's flags (`--kube-version`), as `validate` and `preflight` do;
    #: otherwise this class's arguments (`kube_version`), as a library caller wrote them.
    flags: bool = False

    def spelled(self, fact: str) -> str:
        """A fact's name as the caller gave it: the rules name facts by their flags."""
        if self.flags or not fact.startswith("--"):
            return fact
        return fact[2:].replace("-", "_")

    @property
    def memory_unit(self) -> str | None:
        """The unit the GPU nodes will report in, when known: what the unit rules check against."""
        return self.settings.gpu_memory_unit if self.settings is not None else self.gpu_memory_unit

    @property
    def kube_minor(self) -> int | None:
        """The cluster's Kubernetes minor, when its version is known and readable."""
        version = self.kube_version
        minor = numbers(version)[1:2] if version and valid(version) else ()
        return minor[0] if minor else None


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    target: Target
    summary: str
    remediation: str
    source: str
    check: Callable[[Any, ClusterFacts], Iterable[Offence]]
    #: What a user choosing this should know beyond the rule itself (`gpushare rules` prints it).
    explanation: str = ""


@dataclass(frozen=True)
class Subject:
    """One thing the rules look at, and where it came from (a file and line, a cluster object, or the flags)."""

    target: Target
    name: str
    source: Source | None
    obj: Any
    #: The path of a finding's field in the object as written (a controller's pod fields sit under its template).
    located: Callable[[str], str] = str


@dataclass(frozen=True)
class Finding:
    rule: Rule
    field: str
    value: Any
    allowed: str
    subject: str = ""
    source: Source | None = None

    @property
    def where(self) -> str:
        return self.source.where if self.source is not None else "flags"

    @property
    def message(self) -> str:
        """An error refuses the value; a warning accepts it and says what is advised."""
        if self.rule.severity == "error":
            return f"{not_allowed(self.field, self.value, self.allowed)} [{self.rule.id}]"
        return f"{self.field}: {shown(self.value)} is accepted; advised: {self.allowed} [{self.rule.id}]"


def evaluate_one(
    target: Any, facts: ClusterFacts, rules: Iterable[Rule], subject: Subject | None = None
) -> list[Finding]:
    name, source, located = (subject.name, subject.source, subject.located) if subject else ("", None, str)
    return [
        Finding(rule, located(field), value, allowed, name, source)
        for rule in rules
        for field, value, allowed in rule.check(target, facts)
    ]


def evaluate(
    subjects: Iterable[Subject], facts: ClusterFacts, rules: Iterable[Rule], tick: Callable[[], None] = lambda: None
) -> list[Finding]:
    """Every finding of every rule on every subject of its target kind, in subject then rule order."""
    by_target: dict[str, list[Rule]] = {}
    for rule in rules:
        by_target.setdefault(rule.target, []).append(rule)
    findings: list[Finding] = []
    for subject in subjects:
        tick()
        findings += evaluate_one(subject.obj, facts, by_target.get(subject.target, ()), subject)
    return findings
