"""The layout as docs/development.md draws it: its architecture map lists every package and top-level module once, in
the layers pyproject.toml's import-linter contract enforces (tox's lint runs `lint-imports`), and the figures the
structure promises hold: placement's public face only outside placement/, plugins named in the profiles only, the
semantics' name branched on at most twice, six top-level modules at most, a README a user reads through."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "gpushare"
MAP = re.compile(r"^\| (\d+) \| `(gpushare/[\w/.]+)` \|", re.MULTILINE)


def _map() -> list[tuple[int, str]]:
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index("<!-- architecture map")
    block = text[start : text.index("\n\n", start)]
    return [(int(layer), path) for layer, path in MAP.findall(block)]


def _module(path: str) -> str:
    return path.rstrip("/").removesuffix(".py").replace("/", ".")


def test_the_map_lists_every_package_and_top_level_module_once() -> None:
    listed = [path for _, path in _map()]
    assert len(listed) == len(set(listed))
    present = {f"gpushare/{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {f"gpushare/{p.stem}" for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert set(listed) == present


def test_the_maps_layers_are_the_contracts() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    contract = [{name.strip() for name in layer.split("|")} for layer in layers]
    drawn: dict[int, set[str]] = {}
    for layer, path in _map():
        drawn.setdefault(layer, set()).add(_module(path))
    assert [drawn[layer] for layer in sorted(drawn)] == contract


def _sources(*roots: Path) -> Iterator[tuple[Path, ast.Module]]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.Module) -> Iterator[tuple[str, list[str]]]:
    """(module, names) of each `from ... import` and (module, []) of each `import`, function bodies included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)


def test_outside_placement_only_its_public_face_is_imported() -> None:
    """No module of gpushare outside placement/, nor a benchmark, imports a placement module or a private name."""
    offences = []
    for path, tree in _sources(PACKAGE, REPO / "benchmarks"):
        if (PACKAGE / "placement") in path.parents:
            continue
        for module, names in _imports(tree):
            if module.startswith("gpushare.placement."):
                offences.append(f"{path.relative_to(REPO)}: {module}")
            elif module == "gpushare.placement":
                offences += [f"{path.relative_to(REPO)}: {n}" for n in names if n.startswith("_")]
    assert offences == []


def test_plugins_are_named_in_the_profiles_and_at_most_one_module_besides() -> None:
    """Only pluginsets.py imports plugin modules by name, and `inputs.py` (the default spreading constraints it reads
    from the documents); the fast path knows plugins by their hooks."""
    naming = set()
    for path, tree in _sources(PACKAGE):
        if (PACKAGE / "placement" / "plugins") in path.parents:
            continue
        for module, names in _imports(tree):
            named = module.startswith("gpushare.placement.plugins.") or (
                module == "gpushare.placement.plugins" and names
            )
            if named:
                naming.add(path.relative_to(PACKAGE).as_posix())
    assert naming - {"placement/pluginsets.py"} <= {"placement/inputs.py"}


def test_the_semantics_name_is_branched_on_at_most_twice_in_placement() -> None:
    """Everything that differs between the semantics is a profile's field: the name itself is looked up in two tables
    (the profile each semantics makes, the product it models) and compared nowhere."""
    names = {"ack", "upstream"}
    branches = []
    for path, tree in _sources(PACKAGE / "placement"):
        tables = {
            target.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
            and {k.value for k in node.value.keys if isinstance(k, ast.Constant)} == names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                constants = {c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)}
                if constants & names:
                    branches.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in tables:
                branches.append(f"{path.name}:{node.lineno}")
    assert len(branches) <= 2, branches


def test_gpushare_has_six_top_level_modules_at_most() -> None:
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(modules) <= 6, modules


def test_no_command_module_imports_another() -> None:
    """Each command's module imports what commands share (`fleet`, `arguments`), never another command."""
    shared = {"gpushare.commands", "gpushare.commands.fleet", "gpushare.commands.arguments"}
    for path, tree in _sources(PACKAGE / "commands"):
        for module, names in _imports(tree):
            if module.startswith("gpushare.commands"):
                assert module in shared, f"{path.name}: {module}"
                if module == "gpushare.commands":
                    assert set(names) <= {"fleet", "arguments"}, f"{path.name}: {names}"


def test_the_readme_is_for_users_and_short() -> None:
    """About 450 lines: the model's details per command are in docs/model.md, the CI log in docs/ci.md."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 450
    assert "docs/model.md" in readme
