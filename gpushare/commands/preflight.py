"""`gpushare preflight`: can these settings be installed on this cluster? The cluster read (read-only: its version,
nodes, GPU pods, installed unit, scheduler) and every rule run on the settings against it."""

from __future__ import annotations

import argparse
import sys

from gpushare.commands.arguments import add_facts, facts_of
from gpushare.policy import report as reporting
from gpushare.policy.preflight import preflight, read_facts
from gpushare.settings.load import load_config


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--kubeconfig", default=None, metavar="FILE", help="kubeconfig (default: the usual)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--config", required=True, metavar="FILE", help="settings document to install")
    add_facts(p)


def main(args: argparse.Namespace) -> int:
    facts = {k: v for k, v in facts_of(args).items() if k != "kube_version"}
    document = load_config(args.config)
    live = read_facts(args.kubeconfig, args.context)
    report = preflight(document, live, args.config, **facts)
    reporting.write(report, args.output, sys.stdout)
    return int(report.exit_code(args.strict))
