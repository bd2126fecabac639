"""Pinned builds of the real upstream programs the tests run, cached in the user's cache directory.

Each tool is a Go module under tests/e2e/tools/<name>/ whose go.mod pins the version; the build is
an ordinary `go build` of that module's tool package, cached as <cache>/gpushare/bin/<name>-<version>
so a second run costs nothing. `python tests/toolchain.py build [NAME...]` builds them all.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS_DIR = Path(__file__).parent / "e2e" / "tools"


def cache_dir() -> Path:
    base = os.environ.get("GPUSHARE_CACHE")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpushare"


class ToolUnavailable(RuntimeError):
    """Go is missing, or the build failed: the message says what to install or what broke."""


@dataclass(frozen=True)
class Tool:
    name: str
    module: str  # module path whose version go.mod pins
    package: str  # package to build

    @property
    def dir(self) -> Path:
        return TOOLS_DIR / self.name

    @property
    def version(self) -> str:
        text = (self.dir / "go.mod").read_text()
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(\S+)", text, re.M)
        if not match:
            raise ToolUnavailable(f"{self.dir}/go.mod does not pin {self.module}")
        return match.group(1)

    @property
    def path(self) -> Path:
        return cache_dir() / "bin" / f"{self.name}-{self.version}"

    def ensure(self, log: bool = True) -> Path:
        """The built binary, building it first when the cache lacks it."""
        if self.path.exists():
            return self.path
        go = shutil.which("go")
        if go is None:
            raise ToolUnavailable(f"{self.name} needs Go to build (install Go >= 1.22, e.g. `apt-get install golang`)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / f".{self.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.path.exists():
                return self.path
            started = time.monotonic()
            if log:
                print(f"building {self.name} {self.version} (go build {self.package})...", file=sys.stderr)
            tmp = self.path.with_suffix(".tmp")
            result = subprocess.run(
                [go, "build", "-trimpath", "-o", str(tmp), self.package],
                cwd=self.dir,
                capture_output=True,
                text=True,
                env={**os.environ, "CGO_ENABLED": "0"},
            )
            if result.returncode != 0:
                raise ToolUnavailable(f"building {self.name} failed:\n{result.stderr[-3000:]}")
            tmp.rename(self.path)
            if log:
                print(f"built {self.name} in {time.monotonic() - started:.0f}s", file=sys.stderr)
        return self.path


HELM = Tool("helm", "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm")
TOOLS: dict[str, Tool] = {t.name: t for t in (HELM,)}


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "build":
        print("usage: python tests/toolchain.py build [NAME...]", file=sys.stderr)
        return 2
    names = argv[1:] or list(TOOLS)
    for name in names:
        started = time.monotonic()
        path = TOOLS[name].ensure()
        print(f"{name}: {path} ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
