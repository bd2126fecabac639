"""Argument types shared by more than one command, checked as the API server would check the value, so that a typo
is refused at the flag instead of silently matching nothing."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

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
