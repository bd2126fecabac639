"""The type check mypyc's build runs on the compiled modules (setup.py's MYPYC_CHECK on its COMPILED list), with
the dependencies installed: where it fails, `pip install .` quietly installs the Python engine (its errors are
only in pip's verbose log), as happened when a pydantic field's default was one mypy reads only with the plugin.
tox's lint environment runs it: `python tests/mypyc_check.py`."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from mypy import api

SETUP = Path(__file__).resolve().parent.parent / "setup.py"


def _literal(name: str) -> list[str]:
    for node in ast.walk(ast.parse(SETUP.read_text())):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == name:
            value = node.value
            assert value is not None
            return list(ast.literal_eval(value))
    raise SystemExit(f"setup.py has no {name} list")


def main() -> int:
    out, err, status = api.run([*_literal("MYPYC_CHECK"), *_literal("COMPILED")])
    sys.stdout.write(out)
    sys.stderr.write(err)
    if status:
        print("mypyc's type check fails: the wheel would hold the Python engine", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
