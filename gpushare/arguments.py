"""Argument types shared by more than one command, checked as the API server would check the value, so that a typo
is refused at the flag instead of silently matching nothing."""

from __future__ import annotations

import argparse
import re

from gpushare.errors import shown


def scheduler_name(text: str) -> str:
    """A schedulerName as Kubernetes validates it (a DNS subdomain), so a typo or '' is refused, not served."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a scheduler name (lowercase DNS subdomain)")
    return text
