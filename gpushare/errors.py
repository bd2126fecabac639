"""Errors a user can act on: each names the field, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: How much of a value a message quotes: enough to recognise it, never a whole file.
QUOTE_LIMIT = 120


def listed(names: Sequence[str], most: int = 5) -> str:
    """Names as a message lists them: the first `most`, then how many more, so a fleet-sized list stays one line."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def counted(n: int, word: str) -> str:
    """`n word` as English counts it: 1 error, 2 errors, 5 Pods, 2 PriorityClasses."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}es" if word.endswith(("s", "x", "ch", "sh")) else f"{n} {word}s"


def shown(value: Any) -> str:
    """A value as a message quotes it: `unset` for None, repr otherwise, cut to QUOTE_LIMIT characters."""
    if value is None:
        return "unset"
    text = repr(value)
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 3] + "..."


def not_allowed(field: str, value: Any, allowed: str) -> str:
    """The sentence every refusal speaks (settings, flags, a rule's finding, a malformed object), so a user reads
    one form whichever part of gpushare refused."""
    return f"{field}: {shown(value)} is not allowed; expected {allowed}"


class GpushareError(Exception):
    """Base of every error the library raises on purpose."""


class MissingDependency(GpushareError):
    """A feature needs an optional package that is not installed: the message names the feature and the command
    that installs it. The CLI exits 2 before any work, as for bad input."""

    def __init__(self, feature: str, package: str, install: str) -> None:
        self.feature, self.package, self.install = feature, package, install
        super().__init__(f"{feature} needs {package}, which is not installed: {install}")


class InputError(GpushareError):
    """Bad settings or arguments: the CLI prints the one-line message and exits 2, writing nothing."""

    def __init__(self, field: str, value: Any, allowed: str, where: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(prefix + not_allowed(field, value, allowed))
