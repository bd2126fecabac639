"""Dry-run placement as a library: where would these pods land, what stays pending, and why.

The steps read like kube-scheduler's: filter, score, select, bind (one module per plugin under `plugins`, a profile
per semantics in `pluginsets`), run by a reference engine of plain loops and a fast one with indexes (`reference`,
`fast`) through one scheduling queue (`queue`, `preemption`), over a model (`model`) built from Kubernetes documents
(`inputs`). Everything outside this package asks through the names below, and a `Simulation` above all: `place`,
`inspect`, the planner's answers and `doctor` alike, so that no answer can drift from what `place` does.
"""

from typing import TYPE_CHECKING

from gpushare import helptext
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.minors import scoring_profile
from gpushare.domain.sizes import MAX_PODS
from gpushare.placement import framework as _framework
from gpushare.placement.framework import GROUPED, LOCAL, SPREAD, USAGE, Plugin, Rejection
from gpushare.placement.model import Gpu, Node, Pod, Semantics, SemanticsName
from gpushare.placement.pluginsets import Profile, profile
from gpushare.placement.queue import QUEUE_MODES, QueueMode
from gpushare.placement.result import Assignment, Invalid, NotServed, Pending, PlacementResult, Preempted, Sampled
from gpushare.placement.simulation import EngineName, Fit, Mark, Simulation, Status, place, place_files

if TYPE_CHECKING:
    from gpushare.placement.plot import MAX_NODES, RUNNING, UNHEALTHY, draw_gpu, frame_grid, plot_target, write_plot
    from gpushare.placement.report import (
        NEVER_RUNS,
        binding,
        inspect_text,
        pending_dict,
        preempted_dict,
        summary,
        to_dict,
        to_text,
        write,
        write_comparison,
    )

#: The presentation's names, imported on first use (a library run that prints nothing loads neither).
_PRESENTATION = {
    **dict.fromkeys(
        ("MAX_NODES", "RUNNING", "UNHEALTHY", "draw_gpu", "frame_grid", "plot_target", "write_plot"),
        "gpushare.placement.plot",
    ),
    **dict.fromkeys(
        (
            "NEVER_RUNS",
            "binding",
            "inspect_text",
            "pending_dict",
            "preempted_dict",
            "summary",
            "to_dict",
            "to_text",
            "write",
            "write_comparison",
        ),
        "gpushare.placement.report",
    ),
}


__getattr__, __dir__ = helptext.lazy(__name__, _PRESENTATION)


__all__ = [
    "GROUPED",
    "LOCAL",
    "MAX_NODES",
    "MAX_PODS",
    "NEVER_RUNS",
    "QUEUE_MODES",
    "RUNNING",
    "SPREAD",
    "UNHEALTHY",
    "USAGE",
    "Assignment",
    "EngineName",
    "Fit",
    "Gpu",
    "Invalid",
    "Mark",
    "Node",
    "NotServed",
    "Pending",
    "PlacementResult",
    "Plugin",
    "Pod",
    "Preempted",
    "Profile",
    "QueueMode",
    "Rejection",
    "Sampled",
    "ScoringProfile",
    "Semantics",
    "SemanticsName",
    "Simulation",
    "Status",
    "binding",
    "compiled",
    "draw_gpu",
    "engine_build",
    "frame_grid",
    "inspect_text",
    "pending_dict",
    "place",
    "place_files",
    "plot_target",
    "preempted_dict",
    "profile",
    "scoring_profile",
    "summary",
    "to_dict",
    "to_text",
    "write",
    "write_comparison",
    "write_plot",
]

globals().update({name: helptext.restored(globals()[name]) for name in __all__ if name in globals()})


def compiled() -> bool:
    """Whether the engine runs compiled by mypyc (a wheel built where a C compiler worked; see setup.py) or as
    Python source (an editable install, or no compiler): the same results, two to four times the speed compiled."""
    return not str(_framework.__file__).endswith(".py")


def engine_build() -> str:
    """How the engine runs, in the words `gpushare --version` and the benchmarks print."""
    return "compiled by mypyc" if compiled() else "Python source"
