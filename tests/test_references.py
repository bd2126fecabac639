"""What the documents and docstrings point at exists: a module path, a dotted module, a name in a module.

docs/ and the README cite the code that enforces a fact (`placement/plugins/ackgpu.py` `GpuNodeMode`), and
docstrings send a reader to the module that holds the rest (`gpushare.kube.podspec`). A rename that leaves them
behind sends the reader nowhere; these tests fail on each such pointer.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from helpers import REPO

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: `dir/file.py`, optionally followed by the names it defines: `dir/file.py` `Name`, `other`
PATH = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py)`((?:,? `[A-Za-z_][A-Za-z0-9_]*`)*)")
DOTTED = re.compile(r"`(gpushare(?:\.[a-z_][a-z0-9_]*)+)`")
ROOTS = ("gpushare", "tests", "benchmarks", "")
#: The chart's named templates (`gpushare.fullname`) are spelled like modules; they are defined in _helpers.tpl.
TEMPLATES = set(
    re.findall(r'define "([^"]+)"', (REPO / "charts" / "ack-ai-installer" / "templates" / "_helpers.tpl").read_text())
)


def resolve(path: str) -> Path | None:
    """The file a path names from a root of the repository; a bare file name, the one file of that name."""
    for root in ROOTS:
        for base in (REPO / root, REPO / root / "gpushare"):
            candidate = base / path
            if candidate.is_file():
                return candidate
    if "/" not in path:
        found = [f for root in ROOTS[:-1] for f in (REPO / root).rglob(path)]
        return found[0] if len(found) == 1 else None
    return None


def defined(module: Path) -> set[str]:
    """Names a module defines at any depth: functions, classes, and assigned names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def path_pointers() -> list[tuple[str, str, list[str]]]:
    found = []
    for document in DOCUMENTS:
        for match in PATH.finditer(document.read_text()):
            found.append((document.name, match.group(1), re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", match.group(2))))
    return found


def dotted_pointers() -> list[tuple[str, str]]:
    found = []
    for source in [*DOCUMENTS, *sorted((REPO / "gpushare").rglob("*.py"))]:
        for match in DOTTED.finditer(source.read_text()):
            found.append((str(source.relative_to(REPO)), match.group(1)))
    return sorted(set(found))


@pytest.mark.parametrize(("document", "path", "names"), path_pointers())
def test_a_cited_file_exists_and_defines_the_names_cited(document: str, path: str, names: list[str]) -> None:
    module = resolve(path)
    assert module is not None, f"{document} cites {path}, which is no file of the repository"
    missing = sorted(set(names) - defined(module)) if module.suffix == ".py" else []
    assert not missing, f"{document} cites {', '.join(missing)} in {path}, which defines no such name"


@pytest.mark.parametrize(("where", "dotted"), dotted_pointers())
def test_a_dotted_name_is_a_module_or_one_of_its_names(where: str, dotted: str) -> None:
    if dotted in TEMPLATES:
        return
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        target: object = module
        for name in rest:
            assert hasattr(target, name), f"{where} names {dotted}: {'.'.join(parts[:cut])} has no {name}"
            target = getattr(target, name)
        return
    pytest.fail(f"{where} names {dotted}, which is no module")
