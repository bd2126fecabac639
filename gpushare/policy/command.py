"""`gpushare validate`, `preflight` and `rules`: their flags (the cluster facts the rules check against) and
their reports, as text for people, JSON for pipelines and SARIF for code-scanning tools."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from gpushare import jsontext
from gpushare.arguments import scheduler_name
from gpushare.domain import kinds, profiles
from gpushare.errors import InputError
from gpushare.policy import report as reporting
from gpushare.policy.engine import ClusterFacts
from gpushare.policy.rules import RULES
from gpushare.policy.validate import Report, read_inputs, validate
from gpushare.progress import wanted

#: What `place` serves by default (its default semantics, ack, and that profile's scheduler mode).
DEFAULT_SERVED = profiles.served_scheduler(profiles.PROFILES[profiles.ACK].default_scheduler_mode)

#: The cluster facts the rules check against, each a flag of validate and preflight.
FACT_FLAGS: dict[str, str] = {
    "region": "Alibaba Cloud region (compute allocation is offered in some)",
    "kube-version": "Kubernetes version of the cluster",
    "scheduler-version": "kube-scheduler version (ACK: e.g. 1.24.3-ack-2.0)",
    "cgpu-version": "cGPU version installed on the nodes",
    "driver-version": "NVIDIA driver version",
    "docker-version": "Docker version on the GPU nodes",
    "chart-version": "ack-ai-installer chart version installed",
    "scheduler-name": "spec.schedulerName gpushare serves (the settings' wins when a settings document is given; "
    f"default: {DEFAULT_SERVED}, as `place` serves by default; {profiles.SECONDARY_SCHEDULER_NAME} for the "
    "open-source stack's secondary scheduler)",
}


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    if command == "rules":
        p.add_argument("ids", nargs="*", metavar="ID", help="rules to show (default: every rule), e.g. GS119")
        p.add_argument("-o", "--output", choices=("text", "json"), default="text")
        return
    if command == "preflight":
        p.add_argument("--kubeconfig", default=None, metavar="FILE", help="kubeconfig (default: the usual)")
        p.add_argument("--context", help="kubeconfig context")
        p.add_argument("--config", required=True, metavar="FILE", help="settings document to install")
    else:
        p.add_argument("paths", nargs="+", help="files, directories or - (stdin)")
    facts = p.add_argument_group("cluster facts (what the rules check against)")
    for flag, text in FACT_FLAGS.items():
        kind = scheduler_name if flag == "scheduler-name" else str
        facts.add_argument(f"--{flag}", metavar="VALUE", help=text, type=kind)
    p.add_argument("-o", "--output", choices=("text", "json", "sarif"), default="text", help="output form")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")


def main(args: argparse.Namespace) -> int:
    if args.command == "rules":
        return _rules(args.output, args.ids)
    facts = {flag.replace("-", "_"): getattr(args, flag.replace("-", "_")) for flag in FACT_FLAGS}
    if args.command == "preflight":  # pydantic's settings models load for preflight, not for validating pods
        from gpushare.policy.preflight import preflight, read_facts
        from gpushare.settings.load import load_config

        document = load_config(args.config)
        live = read_facts(args.kubeconfig, args.context)
        report = preflight(document, live, args.config, **{k: v for k, v in facts.items() if k != "kube_version"})
    else:
        sources = read_inputs(args.paths, show_progress=wanted(args.quiet))
        if not sources:  # a CI gate fed by a failed `kubectl get > file` must not pass
            raise InputError("paths", ", ".join(args.paths), "files that hold Kubernetes objects (these hold none)")
        # the scheduler `place` serves by default, so both commands call the same GPU pods not served (GW214)
        facts["scheduler_name"] = facts["scheduler_name"] or DEFAULT_SERVED
        report = validate(sources, ClusterFacts(**facts, flags=True), wanted(args.quiet))
    return write_report(report, args.output, args.strict)


def write_report(report: Report, output: str, strict: bool = False) -> int:
    """The findings in the form asked for (text, json, sarif), and the exit code they give."""
    if output == "json":
        print(jsontext.dumps(reporting.to_dict(report)))
    elif output == "sarif":
        print(jsontext.dumps(reporting.to_sarif(report, RULES)))
    else:
        sys.stdout.write(reporting.to_text(report))
    return int(report.exit_code(strict))


#: `rules` text: a rule's fix and reasons hang under its ID line.
_HANGING = textwrap.TextWrapper(110, initial_indent=" " * 7, subsequent_indent=" " * 12, break_on_hyphens=False)


def _rules(output: str, ids: list[str]) -> int:
    known = {r.id: r for r in RULES}
    wanted_ids = [i.upper() for i in ids]
    for rule_id in wanted_ids:
        if rule_id not in known:
            raise InputError("ID", rule_id, f"a rule ID from `gpushare rules`, e.g. {RULES[0].id}")
    chosen = [known[i] for i in dict.fromkeys(wanted_ids)] or list(RULES)
    if output == "json":
        doc: dict[str, Any] = {
            "apiVersion": kinds.API_VERSION,
            "kind": kinds.RULE_LIST,
            "rules": [reporting.rule_dict(r) for r in chosen],
        }
        print(json.dumps(doc, indent=2))
        return 0
    for rule in chosen:
        print(f"{rule.id}  {rule.severity:<7}  {rule.target:<8}  {rule.summary}  [{rule.source}]")
        for label, text in (("fix", rule.remediation), ("why", rule.explanation)):
            if text:
                print(_HANGING.fill(f"{label}: {text}"))
    return 0
