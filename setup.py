"""The build: the placement engine's modules, and the rules `validate` runs on every object, compiled to C with
mypyc where a C compiler is at hand.

The engine is pure Python and runs as such; compiled, its hot loops (filter, score, select, bind over groups of
nodes) run two to four times as fast, which is what `place` spends its time on at fleet scale; `validate`'s
rules, which run on every object, about a third faster. The compiled modules are the same source, type-checked by
mypy in `tox`; the tests run on the compiled build (tox installs a wheel).

Where no compiler works (or `GPUSHARE_COMPILE=0`), every extension is optional and the wheel holds the Python
modules alone: the same results, slower. An editable install is never compiled. `gpushare --version` says which
engine runs. Everything else is configured in pyproject.toml.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

#: The modules `place` spends its time in, compiled together (they call one another natively): the engine, and
#: the model it is built from; and the rules `validate` runs on every workload and Node, with their engine.
COMPILED = [
    "gpushare/placement/fast/segmenttree.py",
    "gpushare/placement/fast/engine.py",
    "gpushare/placement/framework.py",
    "gpushare/placement/model.py",
    "gpushare/placement/preemption.py",
    "gpushare/placement/priorities.py",
    "gpushare/placement/pluginsets.py",
    "gpushare/placement/plugins/__init__.py",
    "gpushare/placement/plugins/ackgpu.py",
    "gpushare/placement/plugins/defaultpreemption.py",
    "gpushare/placement/plugins/extender.py",
    "gpushare/placement/plugins/imagelocality.py",
    "gpushare/placement/plugins/interpodaffinity.py",
    "gpushare/placement/plugins/nodeaffinity.py",
    "gpushare/placement/plugins/nodepreferavoidpods.py",
    "gpushare/placement/plugins/noderesources.py",
    "gpushare/placement/plugins/nodeports.py",
    "gpushare/placement/plugins/nodeunschedulable.py",
    "gpushare/placement/plugins/podtopologyspread.py",
    "gpushare/placement/plugins/tainttoleration.py",
    "gpushare/placement/queue.py",
    "gpushare/placement/result.py",
    "gpushare/placement/sampling.py",
    "gpushare/placement/fast/scoreindex.py",
    "gpushare/placement/fast/searchindex.py",
    "gpushare/domain/kubescheduler.py",
    "gpushare/kube/podspec.py",
    "gpushare/placement/inputs.py",
    "gpushare/kube/workloads.py",
    "gpushare/kube/fields.py",
    "gpushare/kube/nodes.py",
    "gpushare/kube/ledger.py",
    "gpushare/domain/quantity.py",
    "gpushare/policy/engine.py",
    "gpushare/policy/rules/workloads.py",
    "gpushare/policy/rules/nodes.py",
]


#: How mypyc's build type-checks the compiled modules: mypy's defaults, not the project's strict settings (tox checks
#: those), and no plugin (pydantic's is the project's). The lint environment runs the same check
#: (tests/mypyc_check.py), since a failure here only falls back to the Python engine, silently.
MYPYC_CHECK = ["--config-file", "", "--ignore-missing-imports"]


def _extensions() -> list[object]:
    # Only a build compiles (pip runs this file for the metadata first, twice). An editable install runs the source
    # tree: a compiled module there would shadow every later edit of its source.
    building = any(command in sys.argv for command in ("bdist_wheel", "build", "build_ext", "install"))
    editable = any(command in sys.argv for command in ("editable_wheel", "develop"))
    if os.environ.get("GPUSHARE_COMPILE") == "0" or editable or not building:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # a build without the build requirements (setup.py run by hand): pure Python
        return []
    try:
        # mypy's defaults, not the project's strict settings (tox checks those): the build's mypy may be newer, and
        # the build environment lacks the dependencies' types, which strictness would count as errors
        # one C file a module, so the compiler's work can be shared between cores (`_ParallelBuildExt`)
        args = [*MYPYC_CHECK, *COMPILED]
        extensions = mypycify(args, opt_level="3", multi_file=True)
    except BaseException as exc:  # mypyc stops with SystemExit on a type error
        print(f"gpushare: building the pure Python engine (mypyc: {exc})", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # no compiler: the wheel keeps the Python modules, which run the same
    return extensions


class _ParallelBuildExt(build_ext):
    """Compiles an extension's C files on every core. mypyc puts the engine in one extension of some twenty C
    files; compiled one after another they are most of a wheel's build (two and a half minutes on two cores, one
    of them idle), and pip and tox build that wheel on every fresh install."""

    def build_extension(self, ext: Any) -> None:
        serial = self.compiler.compile

        def compile_each(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            if len(sources) < 2:
                return serial(sources, *args, **kwargs)
            with ThreadPoolExecutor(max_workers=_cores()) as pool:
                return list(pool.map(lambda source: serial([source], *args, **kwargs)[0], sources))

        self.compiler.compile = compile_each
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = serial


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


setup(ext_modules=_extensions(), cmdclass={"build_ext": _ParallelBuildExt})
