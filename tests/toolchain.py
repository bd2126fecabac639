"""Pinned builds of the real upstream programs the tests run, cached in the user's cache directory.

Each tool is a Go module under tests/e2e/tools/<name>/ whose go.mod pins the version; the build is
an ordinary `go build` of that module's tool package, cached as <cache>/gpushare/bin/<name>-<version>
so a second run costs nothing. `python tests/toolchain.py build [NAME...]` builds them (default: helm, etcd and the
control planes of the selected end-to-end minors); the tests only use what was built.
"""

from __future__ import annotations

import fcntl
import hashlib
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


IN_CI = os.environ.get("CI", "").lower() == "true"


#: End-to-end minors by default: every scheduler configuration API on a real kube-scheduler (1.20: Policy and
#: v1beta1; 1.24: v1beta2 and v1beta3; 1.28: v1beta3 and v1; 1.36: today's v1) and the controllers' minors (the
#: oldest, the middle, the newest). 1.22 and 1.32 left the default set to keep a cold CI run within 55 minutes on two
#: cores (each minor is a build of 5-8 minutes and its tests); `GPUSHARE_E2E_MINORS` (`1.22,1.32` or `all`) selects
#: others; tox, `.ci/run` and the e2e tests all read them here.
DEFAULT_E2E_MINORS = (20, 24, 28, 36)


def selected_minors() -> list[int]:
    """The minors the end-to-end tests run on; a minor the product does not know is a usage error."""
    known = sorted(kubernetes_patches())
    raw = os.environ.get("GPUSHARE_E2E_MINORS", "").strip()
    if not raw:
        return list(DEFAULT_E2E_MINORS)
    if raw == "all":
        return known
    minors = []
    for word in raw.split(","):
        try:
            minor = int(word.strip().split(".")[-1])
        except ValueError:
            minor = -1
        if minor not in known:
            raise ValueError(f"GPUSHARE_E2E_MINORS: {word.strip()!r} is not one of 1.{known[0]}-1.{known[-1]}")
        minors.append(minor)
    return minors


#: Set by `.ci/run`: the Go builds run beside the tests, so a test waits for the tool it needs (or builds it, if
#: the background has not come to it yet: the tool's lock makes either wait for the other).
BUILDS_BESIDE = os.environ.get("GPUSHARE_BUILDS_BESIDE", "") == "1"


def need_tool(tool: Tool) -> Path:
    """For tests: the tool built beforehand by `python tests/toolchain.py build` (tox does it), or beside the tests
    (`.ci/run`: then this waits for it). Missing otherwise, the test skips saying how to build it; under CI=true it
    fails."""
    import pytest

    if tool.path.exists():
        return tool.path
    if BUILDS_BESIDE:
        return tool.ensure()
    message = f"{tool.name} {tool.version} is not built: run `python tests/toolchain.py build` (needs Go)"
    if IN_CI:
        pytest.fail(f"CI=true but {message}")
    pytest.skip(message)


@dataclass(frozen=True)
class Tool:
    name: str
    module: str  # module path whose version go.mod pins
    package: str  # package to build
    dirname: str = ""  # tools module directory under tests/e2e/tools (default: name)
    tags: str = ""  # build tags
    ldflags: str = ""  # extra linker flags (version stamps)
    openapi: bool = False  # k8s.io/kubernetes releases that shipped without their generated OpenAPI code

    @property
    def dir(self) -> Path:
        return TOOLS_DIR / (self.dirname or self.name)

    @property
    def version(self) -> str:
        text = (self.dir / "go.mod").read_text()
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(\S+)", text, re.M)
        if not match:
            raise ToolUnavailable(f"{self.dir}/go.mod does not pin {self.module}")
        return match.group(1)

    @property
    def path(self) -> Path:
        # the version is the pinned module's; a hash of the build options keeps a changed recipe from a stale cache
        digest = hashlib.sha256(f"{self.tags}|{self.ldflags}".encode()).hexdigest()[:8]
        suffix = f"-{digest}" if self.tags or self.ldflags else ""
        return cache_dir() / "bin" / f"{self.name}-{self.version}{suffix}"

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
            tmp = self.path.parent / f"{self.path.name}.tmp"
            env = {**os.environ, "CGO_ENABLED": "0"}
            command = [go, "build", "-trimpath", f"-ldflags=-s -w {self.ldflags}".strip(), "-o", str(tmp)]
            if self.tags:
                command.append(f"-tags={self.tags}")
            workdir = self.dir
            if self.openapi:
                workdir = openapi_workspace(go, self.dir, env)
                env["GOFLAGS"] = "-mod=mod"
            result = subprocess.run([*command, self.package], cwd=workdir, capture_output=True, text=True, env=env)
            if result.returncode != 0:
                raise ToolUnavailable(f"building {self.name} failed:\n{result.stderr[-3000:]}")
            tmp.rename(self.path)
            if log:
                print(f"built {self.name} in {time.monotonic() - started:.0f}s", file=sys.stderr)
        return self.path


HELM = Tool("helm", "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm")
#: Fake kubelets: nodes it manages turn Ready and their pods Running, as its stages say (kwok_stages).
KWOK = Tool("kwok", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok")
ETCD = Tool("etcd", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3")
#: kubelet's own device-plugin client reading a device list from kubelet's own stub plugin (tests/e2e/tools/devicelist)
DEVICELIST = Tool("devicelist", "k8s.io/kubernetes", ".")
#: A real Prometheus scraping `gpushare watch`, and promtool checking the chart's rules and the exposition (one
#: tools module; v0.316.0 is Prometheus 3.16.0, stamped so `--version` says so; no UI assets: the API serves).
#: Built with upstream's own `remove_all_sd` tag (plugins/*.go): static targets only, without the cloud service
#: discoveries' SDKs, which are most of the build.
_PROMETHEUS_STAMP = "-X github.com/prometheus/common/version.Version=3.16.0"
PROMETHEUS = Tool(
    "prometheus",
    "github.com/prometheus/prometheus",
    "github.com/prometheus/prometheus/cmd/prometheus",
    tags="remove_all_sd",
    ldflags=_PROMETHEUS_STAMP,
)
PROMTOOL = Tool(
    "promtool",
    "github.com/prometheus/prometheus",
    "github.com/prometheus/prometheus/cmd/promtool",
    dirname="prometheus",
    tags="remove_all_sd",
    ldflags=_PROMETHEUS_STAMP,
)


def kubernetes_patches() -> dict[int, int]:
    """LATEST_PATCH of gpushare/domain/versions.py, read as a literal (so building the tools needs nothing but the
    standard library): the newest patch of each minor, the release the tests build."""
    import ast

    source = (TOOLS_DIR.parents[2] / "gpushare" / "domain" / "versions.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "LATEST_PATCH" and node.value:
            return dict(ast.literal_eval(node.value))
    raise ToolUnavailable("gpushare/domain/versions.py has no LATEST_PATCH table")


def kubernetes_release(minor: int) -> str:
    """The pinned k8s.io/kubernetes release of a minor."""
    return f"v1.{minor}.{kubernetes_patches()[minor]}"


def kube(program: str, minor: int) -> Tool:
    """kube-apiserver or kube-scheduler of a minor, from tests/e2e/tools/k8s-v1.X.Y."""
    release = kubernetes_release(minor)
    # providerless: without the in-tree cloud providers, which the tests never use and which double the build
    # the version a release build stamps, so the server reports v1.X.Y (helm checks kubeVersion against it)
    stamps = " ".join(
        f"-X {package}.{var}={value}"
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var, value in (
            ("gitVersion", release),
            ("gitMajor", "1"),
            ("gitMinor", str(minor)),
            ("gitTreeState", "clean"),
            ("buildDate", "2024-01-01T00:00:00Z"),
        )
    )
    return Tool(
        program,
        "k8s.io/kubernetes",
        f"k8s.io/kubernetes/cmd/{program}",
        f"k8s-{release}",
        tags="providerless",
        ldflags=stamps,
        openapi=minor < 24,
    )


#: The minors whose end-to-end tests run Kubernetes' own controllers (DaemonSets and Deployments on kwok's nodes):
#: the oldest, one in the middle, the newest. Their tools modules pin kube-controller-manager too (another minor's
#: may not be served whole: k8s.io/kube-controller-manager v0.22.17 is not), and only they build it.
CONTROLLER_MINORS: tuple[int, ...] = (20, 28, 36)


def control_plane_tools(minor: int) -> dict[str, Tool]:
    tools = {
        "etcd": ETCD,
        "kube-apiserver": kube("kube-apiserver", minor),
        "kube-scheduler": kube("kube-scheduler", minor),
    }
    if minor in CONTROLLER_MINORS:
        tools["kube-controller-manager"] = kube("kube-controller-manager", minor)
    return tools


TOOLS: dict[str, Tool] = {t.name: t for t in (HELM, ETCD, DEVICELIST, KWOK, PROMTOOL, PROMETHEUS)}
#: kwok's own "fast" stages, from its pinned module: a node turns Ready, a pod Running (and Succeeded when its
#: containers would end), a deleted pod goes.
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)


def kwok_stages() -> Path:
    """kwok's stages in one file beside its binary, copied from the pinned module when kwok is built (the tests
    read them there, without Go)."""
    path = KWOK.path.with_name(f"{KWOK.path.name}-stages.yaml")
    if path.exists():
        return path
    go = shutil.which("go")
    if go is None:
        raise ToolUnavailable("kwok's stages come from its module: building them needs Go")
    import json

    found = subprocess.run([go, "list", "-m", "-json", KWOK.module], cwd=KWOK.dir, capture_output=True, text=True)
    if found.returncode != 0:
        raise ToolUnavailable(f"kwok's module is not at hand:\n{found.stderr[-2000:]}")
    root = Path(json.loads(found.stdout)["Dir"]) / "kustomize" / "stage"
    text = "\n---\n".join((root / rel).read_text() for rel in KWOK_STAGES)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.rename(path)
    return path


_STAGING = re.compile(r"^\s*(?:replace\s+)?(k8s\.io/[\w.-]+)\s+=>\s+\./staging/src/k8s\.io/[\w.-]+\s*$", re.M)
_TOOLS_GO = """//go:build tools

// Package tools pins the Kubernetes programs the end-to-end tests build; it is never compiled.
package tools

import (
\t_ "k8s.io/kubernetes/cmd/kube-apiserver"
\t_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
"""


def openapi_workspace(go: str, tools: Path, env: dict[str, str]) -> Path:
    """A build workspace for a k8s.io/kubernetes release whose module lacks pkg/generated/openapi (before 1.24).

    Kubernetes generated that file at build time then (build/root/Makefile.generated_files); this does the
    same: a writable copy of the release, openapi-gen (k8s.io/kube-openapi at the version the release pins)
    over every package tagged `+k8s:openapi-gen=`, and a copy of the tools module that replaces
    k8s.io/kubernetes with the copy. Cached: a second build reuses it.
    """
    import json

    workspace = cache_dir() / "src" / tools.name
    module = workspace / "module"
    done = workspace / ".done"
    if done.exists():
        return module
    shutil.rmtree(workspace, ignore_errors=True)
    module.mkdir(parents=True)
    for name in ("go.mod", "go.sum", "tools.go"):
        shutil.copy(tools / name, module / name)

    def go_json(*args: str) -> list[dict[str, str]]:
        out = subprocess.run([go, *args], cwd=module, capture_output=True, text=True, env=env, check=True).stdout
        return [json.loads("{" + chunk) for chunk in out.strip().lstrip("{").split("\n{") if chunk.strip()]

    # download the build list first: `go list -m` gives a module's directory only once it is in the cache
    subprocess.run([go, "mod", "download"], cwd=module, env=env, check=True, capture_output=True)
    mods = {m["Path"]: m for m in go_json("list", "-m", "-json", "all") if "Path" in m}
    source = workspace / "kubernetes"
    shutil.copytree(mods["k8s.io/kubernetes"]["Dir"], source)
    for root, dirs, files in os.walk(source):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    os.chmod(source, 0o755)
    with open(module / "go.mod", "a") as handle:
        handle.write(f"\nreplace k8s.io/kubernetes => {source}\n")
    generator = workspace / "openapi-gen"
    subprocess.run(
        [go, "build", "-o", str(generator), "k8s.io/kube-openapi/cmd/openapi-gen"],
        cwd=module,
        env={**env, "GOFLAGS": "-mod=mod"},
        check=True,
        capture_output=True,
    )
    skip = ("k8s.io/code-generator", "k8s.io/sample-apiserver")
    roots = [("k8s.io/kubernetes", source)] + [
        (path, Path(m["Dir"]))
        for path, m in mods.items()
        if path.startswith("k8s.io/")
        and m.get("Dir")
        and path not in skip
        and (m.get("Replace") or {}).get("Path", "").startswith("k8s.io/")
    ]
    packages: set[str] = set()
    for path, root in roots:
        for directory, _, files in os.walk(root):
            if "/vendor" in directory or "/testdata" in directory or "/_" in directory:
                continue
            for name in files:
                if name.endswith(".go") and "+k8s:openapi-gen=" in (Path(directory) / name).read_text(errors="ignore"):
                    relative = os.path.relpath(directory, root)
                    packages.add(path if relative == "." else f"{path}/{relative}")
                    break
    output = workspace / "generated"
    result = subprocess.run(
        [
            str(generator),
            "-i",
            ",".join(sorted(packages)),
            "-p",
            "k8s.io/kubernetes/pkg/generated/openapi",
            "-O",
            "zz_generated.openapi",
            "-o",
            str(output),
            "-r",
            "/dev/null",
            "-h",
            str(source / "hack" / "boilerplate" / "boilerplate.generatego.txt"),
        ],
        cwd=module,
        env={**env, "GOFLAGS": "-mod=mod"},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise ToolUnavailable(f"openapi-gen failed for {tools.name}:\n{result.stderr[-3000:]}")
    shutil.copy(
        output / "k8s.io/kubernetes/pkg/generated/openapi/zz_generated.openapi.go",
        source / "pkg" / "generated" / "openapi" / "zz_generated.openapi.go",
    )
    done.touch()
    return module


def _available(go: str, module: str, release: str) -> str | None:
    """`release`, or the nearest earlier patch of it when the module proxy lacks that one (it has gaps);
    None when it has none (then the module must be one the tools never import)."""
    major_minor, patch = release.rsplit(".", 1)
    for candidate in range(int(patch), -1, -1):
        version = f"{major_minor}.{candidate}"
        result = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True)
        if result.returncode == 0 and '"Error"' not in result.stdout:
            if candidate != int(patch):
                print(f"{module} {release} is not available; pinning {version}", file=sys.stderr)
            return version
    print(f"{module}: no {major_minor}.x release is available; left unpinned", file=sys.stderr)
    return None


def pin_kubernetes(version: str, go_line: str = "1.20") -> Path:
    """Write tests/e2e/tools/k8s-<version>/ (go.mod with a replace per staging module, tools.go) and tidy it.

    k8s.io/kubernetes replaces its staging modules with local paths; a module that depends on it must
    map each to the published v0.X.Y release instead.
    """
    go = shutil.which("go")
    if go is None:
        raise ToolUnavailable("pinning needs Go")
    info = subprocess.run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{version}"], capture_output=True, text=True, check=True
    )
    import json

    gomod = Path(json.loads(info.stdout)["GoMod"]).read_text()
    staging = sorted(set(_STAGING.findall(gomod)))
    release = "v0." + version.split(".", 1)[1]
    directory = TOOLS_DIR / f"k8s-{version}"
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        f"module gpushare.local/tools/k8s-{version}",
        "",
        f"go {go_line}",
        "",
        f"require k8s.io/kubernetes {version}",
        "",
        "replace (",
    ]
    pins = {module: _available(go, module, release) for module in staging}
    lines += [f"\t{module} => {module} {pin}" for module, pin in pins.items() if pin]
    lines += [")", ""]
    (directory / "go.mod").write_text("\n".join(lines))
    minor = int(version.split(".")[1])
    controllers = '\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n' if minor in CONTROLLER_MINORS else ""
    (directory / "tools.go").write_text(_TOOLS_GO.format(controllers=controllers))
    subprocess.run([go, "mod", "tidy"], cwd=directory, check=True, env={**os.environ, "GOFLAGS": "-mod=mod"})
    return directory


def main(argv: list[str]) -> int:
    if argv[:1] == ["pin-kubernetes"] and len(argv) >= 2:
        for version in argv[1:]:
            print(pin_kubernetes(version))
        return 0
    if argv[:1] == ["minors"]:
        print(" ".join(f"1.{m}" for m in selected_minors()))
        return 0
    if not argv or argv[0] != "build":
        print("usage: python tests/toolchain.py build [NAME...] | minors | pin-kubernetes vX.Y.Z...", file=sys.stderr)
        return 2
    if not argv[1:] and BUILDS_BESIDE:  # tox's own step, with .ci/run's builds running beside: nothing to do
        print("toolchain: the Go builds run beside the tests; each test waits for what it needs", file=sys.stderr)
        return 0
    # default: helm, etcd, devicelist and the control plane of every selected end-to-end minor
    names = argv[1:] or [*TOOLS, *(f"1.{m}" for m in selected_minors())]
    minors = sorted(kubernetes_patches())
    for name in names:
        if name not in TOOLS and name not in (f"1.{m}" for m in minors):
            raise ValueError(f"build: {name!r} is not one of {', '.join(TOOLS)} or 1.{minors[0]}-1.{minors[-1]}")
    for name in names:
        # a minor (1.X) names its control plane
        tools = list(control_plane_tools(int(name.split(".")[1])).values()) if name.startswith("1.") else [TOOLS[name]]
        for tool in tools:
            started = time.monotonic()
            path = tool.ensure()
            if tool is KWOK:
                kwok_stages()
            print(f"{tool.name} {tool.version}: {path} ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ValueError as exc:  # a name or GPUSHARE_E2E_MINORS naming nothing built here: a usage error
        print(f"toolchain: {exc}", file=sys.stderr)
        sys.exit(2)
    except ToolUnavailable as exc:  # no Go, or a build that failed: what to install, or the build's own output
        print(f"toolchain: {exc}", file=sys.stderr)
        sys.exit(1)
