"""What a change of settings does: the rendered stack's difference, the rules that block the change, and, on a
fleet, the running pods that lose their place and the pending pods whose fate changes.

A change is two sides: the settings before and after (a unit, a profile, a Kubernetes minor, isolation modes...),
and what the change does to the GPU nodes themselves (labels such as `ack.node.gpu.schedule` or
`ack.node.gpu.placement`, and the default placement). Each side is rendered for one Kubernetes minor (its own, else
the cluster's) and modelled by the semantics its profile installs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpushare.domain import labels as label_names
from gpushare.domain import products
from gpushare.domain.labels import Placement
from gpushare.domain.minors import scoring_profile
from gpushare.domain.versions import MINORS, default_api, served_apis
from gpushare.errors import InputError
from gpushare.generate.stack import Stack
from gpushare.kube.documents import Objects, Source, from_objects
from gpushare.kube.installed import UnitReading
from gpushare.kube.nodes import NodeInfo, read_node
from gpushare.placement import Semantics
from gpushare.planner.impact import Impact, gpu_node, impact, relabelled
from gpushare.planner.stackdiff import ObjectChange, compare
from gpushare.policy.engine import ClusterFacts, Finding, Subject, evaluate
from gpushare.policy.rules import RULES
from gpushare.settings.load import build_settings
from gpushare.settings.model import InstallerSettings

Label = tuple[str, str | None]


@dataclass(frozen=True)
class Side:
    """One side of a change: the installer settings and the fleet's default placement (ACK semantics)."""

    settings: InstallerSettings
    placement: Placement = "binpack"

    def minor(self, cluster: int) -> int:
        version = self.settings.version
        return version.minor if version is not None else cluster

    def semantics(self, minor: int) -> Semantics:
        """The semantics this side installs: ACK's rules or the open-source extender's, in its unit, for the
        scheduler its mode serves, scored as the minor's kube-scheduler scores (its configuration API, if the
        minor serves it)."""
        api = self.settings.scheduler.config_api
        api = api if api in served_apis(minor) else default_api(minor)
        return Semantics(
            "ack" if self.settings.profile == products.ACK else "upstream",
            self.placement,
            self.settings.gpu_memory_unit,
            scheduler_name=self.settings.served_scheduler_name,
            scheduler=scoring_profile(minor, api),
        )


@dataclass(frozen=True)
class Difference:
    before: Side
    after: Side
    #: The Kubernetes minor each side is rendered and modelled for.
    minors: tuple[int, int]
    labels: tuple[Label, ...]
    #: None: the side after cannot be rendered (a finding says why).
    objects: tuple[ObjectChange, ...] | None
    #: The rules' findings on the side after that the side before does not have: errors block the change.
    findings: tuple[Finding, ...]
    impact: Impact | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def blocked(self) -> bool:
        return any(f.rule.severity == "error" for f in self.findings)


def _side(side: Side | InstallerSettings | Mapping[str, Any] | None) -> Side:
    """A side as given: settings (a model, a document, None for the defaults) with the default placement."""
    return side if isinstance(side, Side) else Side(build_settings(side))


def _gpu_nodes(nodes: Sequence[Source]) -> list[NodeInfo]:
    return [n for n in (gpu_node(s) for s in nodes) if n is not None]


def _modes(nodes: Sequence[NodeInfo]) -> dict[str, str]:
    """Each GPU node's label mode (share where the label is missing, as the placement model reads it)."""
    return {n.name: n.mode or label_names.UNLABELLED_MODE for n in nodes}


def _rendered(settings: InstallerSettings, minor: int) -> list[dict[str, Any]]:
    return Stack(settings.model_copy(update={"kubernetes_version": f"1.{minor}"})).objects()


def _findings(
    side: Side, minor: int, nodes: Sequence[Source], fleet: ClusterFacts
) -> list[tuple[tuple[str, str, str], Finding]]:
    """Every settings, cluster and node rule on one side, each keyed by what it says (rule, subject, field)."""
    settings = side.settings
    infos = [n for n in (read_node(s) for s in nodes) if n is not None]
    facts = replace(fleet, region=settings.region, kube_version=f"1.{minor}", settings=settings, nodes=infos)
    subjects = [Subject("settings", "InstallerSettings", None, settings), Subject("cluster", "cluster", None, facts)]
    subjects += [Subject("node", f"Node/{n.name}", n.source, n) for n in infos]
    found = evaluate(subjects, facts, RULES)
    found.sort(key=lambda f: f.rule.severity != "error")  # errors first, each kind in the engine's order
    return [((f.rule.id, f.subject, f.field), f) for f in found]


def diff(
    before: Side | InstallerSettings | Mapping[str, Any] | None,
    after: Side | InstallerSettings | Mapping[str, Any] | None,
    *,
    labels: Sequence[Label] = (),
    nodes: Objects = (),
    existing: Objects = (),
    pending: Objects = (),
    cluster_minor: int | None = None,
    said: str = "after",
) -> Difference:
    """The change from `before` to `after` (each a Side, or settings: a model, a document, None for the
    defaults), with `labels` set on every GPU node; the fleet as plain objects or Sources. One that changes nothing is
    refused as an InputError (`said` names the side after in its message). Without `nodes` no fleet is read, so
    the rules that need running pods cannot fire: a note says so."""
    before, after = _side(before), _side(after)
    nodes, existing, pending = (
        from_objects(o, name) for o, name in ((nodes, "nodes"), (existing, "existing"), (pending, "pending"))
    )
    cluster = cluster_minor if cluster_minor is not None else MINORS[-1]
    minors = (before.minor(cluster), after.minor(cluster))
    notes = []
    unset = [name for name, side in (("before", before), ("after", after)) if side.settings.version is None]
    if unset:
        whose = "the cluster's" if cluster_minor is not None else "the newest gpushare models"
        notes.append(f"rendered for Kubernetes 1.{cluster} ({whose}) where no version is set ({', '.join(unset)})")
    nodes_after = relabelled(nodes, labels)
    gpu_before, gpu_after = _gpu_nodes(nodes), _gpu_nodes(nodes_after)
    same_nodes = [(n.name, n.labels) for n in gpu_before] == [(n.name, n.labels) for n in gpu_after]
    same = before.settings.document() == after.settings.document() and before.placement == after.placement
    if same and minors[0] == minors[1] and (same_nodes if nodes else not labels):
        raise InputError(
            said,
            "the same as before",
            "a change: the settings after, the Kubernetes minor, the GPU nodes' labels or the placement must differ",
        )
    if after.settings.plugin_at_install:
        notes.append(
            "the device plugin's image is left to the install after the change (the chart asks for it): its "
            "fields show empty"
        )
    objects: tuple[ObjectChange, ...] | None = None
    try:
        objects = tuple(compare(_rendered(before.settings, minors[0]), _rendered(after.settings, minors[1])))
    except InputError as exc:
        notes.append(f"the stack is not compared: {exc}")
    found: Impact | None = None
    fleet_before = ClusterFacts()
    fleet_after = ClusterFacts(current_units=[UnitReading(before.settings.gpu_memory_unit, "the settings before")])
    if nodes:
        semantics = (before.semantics(minors[0]), after.semantics(minors[1]))
        found = impact(nodes, existing, pending, *semantics, before.settings.gpu_memory_unit, nodes_after)
        modes, modes_after = _modes(gpu_before), _modes(gpu_after)
        changed = [(n, m, modes_after[n]) for n, m in modes.items() if modes_after.get(n, m) != m]
        fleet_after = replace(fleet_after, gpu_pods=list(found.holding), relabelled=changed, gpu_pods_on=found.on_node)
    else:
        notes.append(
            "no fleet read (--nodes or --kubeconfig): running pods, what they hold and what changes for them are "
            "not checked"
        )
    old = dict(_findings(before, minors[0], nodes, fleet_before))
    new = [f for key, f in _findings(after, minors[1], nodes_after, fleet_after) if key not in old]
    return Difference(before, after, minors, tuple(labels), objects, tuple(new), found, tuple(notes))
