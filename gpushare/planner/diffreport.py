"""`gpushare diff`'s answer as text for people and as JSON (kind ChangeReport) for pipelines."""

from __future__ import annotations

from typing import Any, TextIO

from gpushare import output
from gpushare.domain import kinds
from gpushare.errors import counted, shown
from gpushare.planner.change import Difference
from gpushare.planner.stackdiff import ABSENT, FieldChange, field_changes
from gpushare.policy.report import finding_dict

_MARK = {"added": "+", "removed": "-", "changed": "~"}


def _field_dict(f: FieldChange) -> dict[str, Any]:
    found: dict[str, Any] = {"path": f.path}
    if f.before is not ABSENT:
        found["before"] = f.before
    if f.after is not ABSENT:
        found["after"] = f.after
    return found


def settings_changes(d: Difference) -> list[FieldChange]:
    """The settings fields the change sets differently (every default spelled out on both sides)."""
    return field_changes(d.before.settings.document(), d.after.settings.document())


def to_dict(d: Difference) -> dict[str, Any]:
    """kind ChangeReport (schemas/change-report.schema.json)."""
    impact = d.impact
    fleet = None
    if impact is not None:
        fleet = {
            "holding": list(impact.holding),
            "displaced": [
                {"pod": x.key, "node": x.node, "why": x.why, "lands": x.lands, "pending_reason": x.pending_why}
                for x in impact.displaced
            ],
            "pending": [
                {
                    "pod": o.key,
                    "before": o.before,
                    "after": o.after,
                    "changed": o.changed,
                    "why_before": o.why_before,
                    "why_after": o.why_after,
                }
                for o in impact.pending
            ],
        }
    return {
        "apiVersion": kinds.API_VERSION,
        "kind": kinds.CHANGE_REPORT,
        "settings": [_field_dict(f) for f in settings_changes(d)],
        "kubernetes": {"before": f"1.{d.minors[0]}", "after": f"1.{d.minors[1]}"},
        "placement": {"before": d.before.placement, "after": d.after.placement},
        "labels": [{"key": k, "value": v} for k, v in d.labels],
        "objects": [
            {
                "change": o.change,
                "apiVersion": o.api_version,
                "kind": o.kind,
                "namespace": o.namespace,
                "name": o.name,
                "fields": [_field_dict(f) for f in o.fields],
            }
            for o in d.objects or ()
        ]
        if d.objects is not None
        else None,
        "findings": [finding_dict(f) for f in d.findings],
        "blocked": d.blocked,
        "fleet": fleet,
        "notes": list(d.notes),
    }


def _value(value: Any) -> str:
    return "(none)" if value is ABSENT else shown(value)


def _field_line(f: FieldChange) -> str:
    return f"    {f.path}: {_value(f.before)} -> {_value(f.after)}"


def to_text(d: Difference, unified: bool = False) -> str:
    lines = ["CHANGE"]
    lines += [_field_line(f) for f in settings_changes(d)]
    if d.minors[0] != d.minors[1]:
        lines.append(f"    Kubernetes: 1.{d.minors[0]} -> 1.{d.minors[1]}")
    if d.before.placement != d.after.placement:
        lines.append(f"    placement: {d.before.placement} -> {d.after.placement}")
    for key, value in d.labels:
        lines.append(
            f"    every GPU node: {key}={value}" if value is not None else f"    every GPU node: {key} removed"
        )
    if d.objects is None:
        lines += ["", "STACK (not compared: the side after cannot be rendered)"]
    elif d.objects:
        lines += ["", f"STACK ({counted(len(d.objects), 'object')} differ)"]
    else:
        lines += ["", "STACK (no object differs)"]
    for o in d.objects or ():
        lines.append(f"{_MARK[o.change]} {o.title} {o.change}")
        if unified and o.change == "changed":
            lines += [f"    {line}" for line in o.lines]
        elif o.change == "changed":
            lines += [_field_line(f) for f in o.fields]
    errors = [f for f in d.findings if f.rule.severity == "error"]
    lines += ["", "RULES (what the change introduces; errors block it)" if d.findings else "RULES (nothing new)"]
    lines += [f"{f.rule.severity:<8} {f.subject or 'settings'}: {f.message}" for f in d.findings]
    if d.impact is not None:
        impact = d.impact
        lines += [
            "",
            f"FLEET ({counted(len(impact.holding), 'running GPU pod')}, {counted(len(impact.pending), 'pending pod')})",
        ]
        if impact.displaced:
            lines.append(f"running pods whose place no longer holds: {len(impact.displaced)}")
        for x in impact.displaced:
            then = f"would land on {x.lands}" if x.lands else f"would stay pending: {x.pending_why}"
            lines.append(f"  {x.key} on {x.node}: {x.why}; {then}")
        changed = [p for p in impact.pending if p.changed]
        if changed:
            lines.append(f"pending pods whose outcome changes: {len(changed)}")
        for p in changed:
            was = p.before or "not placed"
            now = p.after or f"pending ({p.why_after})"
            lines.append(f"  {p.key}: {was} -> {now}")
        same = len(impact.pending) - len(changed)
        if same:
            lines.append(f"pending pods whose outcome stays: {same}")
        if not impact.displaced:
            lines.append("every running GPU pod keeps its place")
    lines += ["", *d.notes] if d.notes else []
    verdict = (
        f"the change is blocked: {counted(len(errors), 'error')} ({', '.join(sorted({f.rule.id for f in errors}))})"
        if errors
        else "no rule blocks the change"
    )
    lines += ["", verdict]
    return "\n".join(lines) + "\n"


def write(d: Difference, form: str, out: TextIO, unified: bool = False) -> None:
    if form == "json":
        out.write(output.dumps(to_dict(d)) + "\n")
    else:
        out.write(to_text(d, unified))
