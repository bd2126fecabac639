"""`gpushare rules`: the rules as data, each with its ID, severity, target, summary, source, fix and reasons."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from gpushare.domain import kinds
from gpushare.errors import InputError
from gpushare.policy import report as reporting
from gpushare.policy.rules import RULES

#: A rule's fix and reasons hang under its ID line.
_HANGING = textwrap.TextWrapper(110, initial_indent=" " * 7, subsequent_indent=" " * 12, break_on_hyphens=False)


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="rules to show (default: every rule), e.g. GS119")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


def main(args: argparse.Namespace) -> int:
    known = {r.id: r for r in RULES}
    wanted_ids = [i.upper() for i in args.ids]
    for rule_id in wanted_ids:
        if rule_id not in known:
            raise InputError("ID", rule_id, f"a rule ID from `gpushare rules`, e.g. {RULES[0].id}")
    chosen = [known[i] for i in dict.fromkeys(wanted_ids)] or list(RULES)
    if args.output == "json":
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
