"""`gpushare validate`: the product's rules over settings documents, workloads, Nodes and cluster facts.

Inputs are plain YAML (files, directories, stdin) sorted into subjects; every rule whose target
matches runs on each; findings carry the object, file and line, rule ID, severity and remediation.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TextIO

from gpushare.domain import kinds, products
from gpushare.domain.versions import parse_kube_version
from gpushare.errors import InputError
from gpushare.kube.documents import Objects, Source, from_objects, read_paths
from gpushare.kube.nodes import read_node
from gpushare.kube.workloads import read_workload
from gpushare.policy.engine import ClusterFacts, Finding, Subject, evaluate, evaluate_one
from gpushare.policy.rules import RULES
from gpushare.policy.rules.settings import DOCUMENT_RULE
from gpushare.progress import progress

if TYPE_CHECKING:  # pydantic's models are loaded with the first settings document (0.1 s; pods need none)
    from gpushare.settings.model import InstallerSettings


@dataclass(frozen=True)
class NotChecked:
    """A check that could not be made: the fact it needs, the rules it feeds, why it is missing, how to supply it."""

    what: str
    rules: str
    why: str
    supply: str

    @property
    def message(self) -> str:
        return f"not checked: {self.what} ({self.rules}): {self.why}; supply it with {self.supply}"


@dataclass
class Report:
    """Findings of one validation run, and what was looked at."""

    findings: list[Finding]
    objects: int
    ignored: list[str] = field(default_factory=list)  # where: kind of objects no rule looks at
    not_checked: list[NotChecked] = field(default_factory=list)  # preflight: checks whose facts were missing

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.rule.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.rule.severity == "warning")

    def exit_code(self, strict: bool = False) -> int:
        return 1 if self.errors or (strict and self.warnings) else 0


def _settings_subject(src: Source) -> tuple[Subject | None, Finding | None]:
    """A settings document; one that does not load is itself an error finding (GS100)."""
    from gpushare.settings.model import load_settings

    try:
        model = load_settings(src.obj)
    except InputError as exc:
        return None, Finding(DOCUMENT_RULE, exc.field, exc.value, exc.allowed, "InstallerSettings", src)
    return Subject("settings", "InstallerSettings", src, model), None


def subjects_of(sources: Iterable[Source]) -> tuple[list[Subject], list[Finding], list[str]]:
    """Sort documents into rule subjects; unloadable settings become findings, other kinds are listed as ignored."""
    subjects: list[Subject] = []
    findings: list[Finding] = []
    ignored: list[str] = []
    for src in sources:
        kind = src.obj.get("kind")
        if kind == kinds.INSTALLER_SETTINGS:
            subject, finding = _settings_subject(src)
            if subject:
                subjects.append(subject)
            if finding:
                findings.append(finding)
            continue
        pod = read_workload(src)
        if pod is not None:
            subjects.append(Subject("workload", f"{pod.kind}/{pod.namespace}/{pod.name}", src, pod, pod.located))
            continue
        node = read_node(src)
        if node is not None:
            subjects.append(Subject("node", f"Node/{node.name}", src, node))
            continue
        ignored.append(f"{src.where}: {kind or '(no kind)'}")
    return subjects, findings, ignored


def validate(objects: Objects, context: ClusterFacts | None = None, show_progress: bool = False) -> Report:
    """Run every rule on the objects (dicts as `yaml.safe_load` gives them, a `kubectl get -o yaml` List, or
    Sources with file:line), with the defaults `gpushare validate` has: GPU pods must name the scheduler `place`
    serves for the semantics (`ClusterFacts.scheduler_name`, default default-scheduler; gpushare-scheduler with
    `semantics="upstream"`), unless settings name it. `show_progress` draws a bar on a terminal's stderr for runs
    longer than two seconds."""
    sources = from_objects(objects, "objects")
    subjects, findings, ignored = subjects_of(sources)
    ctx = context or ClusterFacts()
    if ctx.semantics is not None and ctx.semantics not in products.SEMANTICS_PRODUCTS:
        raise InputError(ctx.spelled("--semantics"), ctx.semantics, " or ".join(products.SEMANTICS_PRODUCTS))
    if ctx.scheduler_name is None:  # as the command's default: a pipeline passes the pods the command refuses
        ctx = replace(ctx, scheduler_name=products.default_served(ctx.semantics))
    settings = next((s.obj for s in subjects if s.target == "settings"), None)
    if ctx.kube_version is not None:
        try:
            version = parse_kube_version(ctx.kube_version, "--kube-version")
        except InputError:
            version = None
        if version is not None:
            subjects = [
                replace(s, obj=s.obj.model_copy(update={"kubernetes_version": version.text}))
                if s.target == "settings" and s.obj.kubernetes_version is None
                else s
                for s in subjects
            ]
    if settings is not None and ctx.region is None and settings.region:
        ctx = replace(ctx, region=settings.region)
    ctx = replace(
        ctx,
        settings=ctx.settings or settings,
        nodes=[s.obj for s in subjects if s.target == "node"] or list(ctx.nodes),
        workloads=[s.obj for s in subjects if s.target == "workload"],
    )
    subjects.append(Subject("cluster", "cluster", None, ctx, ctx.spelled))
    with progress(len(subjects), "objects", show_progress) as tick:
        findings += evaluate(subjects, ctx, RULES, tick)
    return Report(findings, len(sources), ignored)


def read_inputs(paths: list[str], stdin: TextIO | None = None, show_progress: bool = False) -> list[Source]:
    return read_paths(paths, stdin or sys.stdin, show_progress)


def enforce(settings: InstallerSettings, where: str | None = None) -> list[Finding]:
    """The settings rules on the generator's settings: raise the first error as an InputError, return warnings."""
    version = settings.version
    facts = ClusterFacts(region=settings.region, kube_version=version.full if version else None, settings=settings)
    findings = evaluate_one(settings, facts, [r for r in RULES if r.target == "settings"])
    for finding in findings:
        if finding.rule.severity == "error":
            raise InputError(finding.field, finding.value, f"{finding.allowed} [{finding.rule.id}]", where)
    return findings


__all__ = ["NotChecked", "Report", "enforce", "read_inputs", "validate"]
