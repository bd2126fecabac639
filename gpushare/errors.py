"""Errors a user can act on: each names the field, the value and what is allowed."""

from __future__ import annotations

from typing import Any


class GpushareError(Exception):
    """Base of every error the library raises on purpose."""


class InputError(GpushareError):
    """Bad settings or arguments: the CLI prints the one-line message and exits 2, writing nothing."""

    def __init__(self, field: str, value: Any, allowed: str, where: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{field}: {value!r} is not allowed; expected {allowed}")
