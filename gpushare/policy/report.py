"""Validation findings for people (grouped by object), pipelines (versioned JSON) and code scanning (SARIF 2.1.0)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TextIO

from gpushare.domain import kinds
from gpushare.domain.kinds import VERSION as __version__
from gpushare.errors import counted, shown
from gpushare.policy.engine import Finding, Rule
from gpushare.policy.validate import Report


def finding_lines(findings: Iterable[Finding]) -> list[str]:
    """Findings grouped by object, each with its fix: validate's text, which place and capacity print too."""
    lines: list[str] = []
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.where, finding.subject), []).append(finding)
    for (where, subject), found in groups.items():
        lines.append(f"{where}  {subject}")
        for f in found:
            lines.append(f"  {f.rule.severity:<7} {f.rule.id}  {f.field}: {shown(f.value)}: expected {f.allowed}")
            lines.append(f"          fix: {f.rule.remediation}")
    return lines


def to_text(report: Report) -> str:
    lines = finding_lines(report.findings)
    lines += [item.message for item in report.not_checked]
    lines.append(
        f"{counted(report.objects, 'object')}, {counted(report.errors, 'error')}, "
        f"{counted(report.warnings, 'warning')}"
        + (f", {counted(len(report.ignored), 'object')} of kinds no rule checks" if report.ignored else "")
        + (f", {counted(len(report.not_checked), 'check')} not made" if report.not_checked else "")
    )
    return "\n".join(lines) + "\n"


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule.id,
        "severity": f.rule.severity,
        "object": f.subject,
        "location": f.where,
        "field": f.field,
        "value": f.value if isinstance(f.value, (str, int, float, bool)) or f.value is None else str(f.value),
        "expected": f.allowed,
        "message": f.message,
        "remediation": f.rule.remediation,
    }


def to_dict(report: Report) -> dict[str, Any]:
    """kind ValidationReport (schemas/validation-report.schema.json)."""
    return {
        "apiVersion": kinds.API_VERSION,
        "kind": kinds.VALIDATION_REPORT,
        "summary": {
            "objects": report.objects,
            "errors": report.errors,
            "warnings": report.warnings,
            "ignored": len(report.ignored),
            "notChecked": len(report.not_checked),
        },
        "findings": [finding_dict(f) for f in report.findings],
        "ignored": report.ignored,
        "notChecked": [
            {"check": n.what, "rules": n.rules, "why": n.why, "supply": n.supply, "message": n.message}
            for n in report.not_checked
        ],
    }


def rule_dict(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "severity": rule.severity,
        "target": rule.target,
        "summary": rule.summary,
        "remediation": rule.remediation,
        "source": rule.source,
        "explanation": rule.explanation,
    }


def to_sarif(report: Report, rules: Iterable[Rule]) -> dict[str, Any]:
    """SARIF 2.1.0: one run, the rules as the tool's rules, each finding a result at its file and line."""
    results = []
    for f in report.findings:
        result: dict[str, Any] = {
            "ruleId": f.rule.id,
            "level": "error" if f.rule.severity == "error" else "warning",
            "message": {"text": f"{f.subject}: {f.message}. {f.rule.remediation}"},
        }
        if f.source is not None and f.source.line is not None:
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.source.file},
                        "region": {"startLine": f.source.line},
                    }
                }
            ]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpushare",
                        "version": __version__,
                        "informationUri": "https://gpushare.io",
                        "rules": [
                            {
                                "id": r.id,
                                "shortDescription": {"text": r.summary},
                                "fullDescription": {"text": f"{r.summary}. {r.explanation}".strip()},
                                "help": {"text": r.remediation},
                                "defaultConfiguration": {"level": "error" if r.severity == "error" else "warning"},
                                "properties": {"target": r.target, "source": r.source},
                            }
                            for r in rules
                        ],
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [
                            {"level": "warning", "message": {"text": n.message}} for n in report.not_checked
                        ],
                    }
                ],
            }
        ],
    }


def write(report: Report, form: str, out: TextIO) -> None:
    """The findings in the form asked for: text for people, JSON for pipelines, SARIF for code scanning."""
    from gpushare import output
    from gpushare.policy.rules import RULES

    if form == "json":
        out.write(output.dumps(to_dict(report)) + "\n")
    elif form == "sarif":
        out.write(output.dumps(to_sarif(report, RULES)) + "\n")
    else:
        out.write(to_text(report))
