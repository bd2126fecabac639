"""docs/facts.md and the rules in the code name the same rule IDs, both ways, and the tests it cites exist.

Every rule of `gpushare.policy.rules.RULES` appears in an `enforced by` cell of the traceability table, and every
rule ID written anywhere in the table's file is a rule the code has; every `test_file.py::test_name` it cites is a
test function in that file under tests/.
"""

from __future__ import annotations

import re

from helpers import REPO

from gpushare.policy.rules import RULES

FACTS = REPO / "docs" / "facts.md"
RULE_ID = re.compile(r"\bG[SWNCL]\d{3}\b")
ENFORCED_BY = "enforced by"


def cells(line: str) -> list[str]:
    """The cells of one Markdown table row (`\\|` inside a cell is not a separator)."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]


def enforced_by_cells(text: str) -> list[str]:
    """The `enforced by` cell of every data row of every table whose header has that column."""
    found: list[str] = []
    column: int | None = None
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            column = None  # a table ends at the first line that is not a row
            continue
        row = cells(line)
        if column is None:
            headers = [cell.lower() for cell in row]
            column = headers.index(ENFORCED_BY) if ENFORCED_BY in headers else None
        elif not all(re.fullmatch(r":?-+:?", cell) for cell in row) and column < len(row):
            found.append(row[column])
    return found


def code_ids() -> set[str]:
    return {rule.id for rule in RULES}


def test_every_rule_in_the_code_is_in_the_table() -> None:
    cited = {rule for cell in enforced_by_cells(FACTS.read_text()) for rule in RULE_ID.findall(cell)}
    missing = sorted(code_ids() - cited)
    assert not missing, f"rules in the code that no `enforced by` cell of {FACTS.name} names: {', '.join(missing)}"


def test_every_rule_id_in_the_table_is_in_the_code() -> None:
    written = set(RULE_ID.findall(FACTS.read_text()))
    unknown = sorted(written - code_ids())
    assert not unknown, f"rule IDs in {FACTS.name} that are not rules in the code: {', '.join(unknown)}"


CITED_TEST = re.compile(r"\b(test_\w+\.py)::(test_\w+)")


def test_every_cited_test_exists() -> None:
    """A row that cites a test renamed or deleted since would vouch for nothing."""
    tests = REPO / "tests"
    missing = []
    for file, name in sorted(set(CITED_TEST.findall(FACTS.read_text()))):
        found = [p for p in tests.rglob(file) if re.search(rf"^(?:async )?def {name}\b", p.read_text(), re.M)]
        if not found:
            missing.append(f"{file}::{name}")
    assert not missing, f"tests {FACTS.name} cites that do not exist: {', '.join(missing)}"
