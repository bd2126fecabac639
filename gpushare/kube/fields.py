"""A document's fields as the readers take them: leniently, a field of the wrong type read as empty (the rules say
what is wrong with it). Compiled with the model build, which reads a dozen fields of every pod this way: a call into
an uncompiled module cost it a Python call each."""

from __future__ import annotations

from typing import Any, NamedTuple

from gpushare.errors import not_allowed


def mapping(value: Any) -> dict[str, Any]:
    """A field of a document as a mapping: what YAML gave when it is one, else empty (readers stay lenient)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """A field of a document as a list: what YAML gave when it is one, else empty."""
    return value if isinstance(value, list) else []


class Problem(NamedTuple):
    """Why an object cannot be taken as it is: the rule it breaks, the field, the value and what is allowed."""

    rule: str
    field: str
    value: Any
    allowed: str

    @property
    def offence(self) -> tuple[str, Any, str]:
        return self.field, self.value, self.allowed

    @property
    def message(self) -> str:
        return f"{not_allowed(self.field, self.value, self.allowed)} [{self.rule}]"
