"""What several commands share of their flags: argument types, checked as the API server would check the value, so
that a typo is refused at the flag instead of silently matching nothing; the cluster facts the rules check against
(`validate`, `preflight`); the output forms."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from gpushare.domain import products
from gpushare.errors import shown


def scheduler_name(text: str) -> str:
    """A schedulerName as Kubernetes validates it (a DNS subdomain), so a typo or '' is refused, not served."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a scheduler name (lowercase DNS subdomain)")
    return text


def whole(flag: str, least: int, most: int) -> Callable[[str], int]:
    """A whole number from `least` to `most`, refused in one line naming the flag (argparse's own words would name
    a Python type): `1e3`, `²` and `-1` alike."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: expected a whole number from {least} to {most}")
        return value

    return read


def seconds(flag: str) -> Callable[[str], float]:
    """A duration in seconds, more than 0."""

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 < value < 1e9:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: expected seconds, more than 0")
        return value

    return read


#: The schedulerName `place` serves by default (its default semantics, ack, and that profile's scheduler mode): the
#: rules call GPU pods naming another one not served (GW214), as `place` does.
DEFAULT_SERVED = products.default_served("ack")

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
    f"default: {DEFAULT_SERVED}, as `place` serves by default; {products.default_served('upstream')} with "
    "--semantics upstream, the open-source stack's secondary scheduler)",
}


def add_ledger_reading(p: argparse.ArgumentParser, served: tuple[str, ...], assume_timeout: float) -> None:
    """How doctor reads the ledger (`doctor`, and `watch`'s doctor pass): the schedulerNames GPU sharing serves, and
    how long a pod may stay assumed and never allocated."""
    p.add_argument(
        "--scheduler-name",
        action="append",
        type=scheduler_name,
        metavar="NAME",
        help=f"a spec.schedulerName GPU sharing serves (repeatable; default: {', '.join(served)})",
    )
    p.add_argument(
        "--assume-timeout",
        type=seconds("--assume-timeout"),
        default=assume_timeout,
        metavar="SECONDS",
        help=f"a pod assumed by the extender this long and never allocated is reported (default {assume_timeout:g})",
    )


def add_facts(p: argparse.ArgumentParser) -> None:
    """The cluster facts' flags, and the form findings are reported in (`validate`, `preflight`)."""
    facts = p.add_argument_group("cluster facts (what the rules check against)")
    for flag, text in FACT_FLAGS.items():
        kind = scheduler_name if flag == "scheduler-name" else str
        facts.add_argument(f"--{flag}", metavar="VALUE", help=text, type=kind)
    add_findings_output(p)


def facts_of(args: argparse.Namespace) -> dict[str, str | None]:
    """The cluster facts given, by their ClusterFacts names."""
    return {flag.replace("-", "_"): getattr(args, flag.replace("-", "_")) for flag in FACT_FLAGS}


def add_findings_output(p: argparse.ArgumentParser) -> None:
    """How findings are reported, and what ends the command in failure (`validate`, `preflight`, `doctor`)."""
    p.add_argument("-o", "--output", choices=("text", "json", "sarif"), default="text", help="output form")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    add_quiet(p)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar (shown on a terminal after 2 s)")
