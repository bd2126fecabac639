"""Dry-run placement: where would these pods land, what stays pending, and why.

The steps read like kube-scheduler's: filter, score, select, bind (`plugins`), run by a reference engine
of plain loops and a fast one with indexes (`reference`, `engine`), over a model (`model`) built from
Kubernetes documents (`inputs`); `run` ties them together, `report` and `plot` present the result, and `command`
is `gpushare place` and `inspect`.
"""

from gpushare import helptext
from gpushare.domain.kubescheduler import ScoringProfile
from gpushare.domain.scoringprofiles import scoring_profile
from gpushare.placement import engine as _engine
from gpushare.placement.model import Semantics
from gpushare.placement.result import Assignment, Invalid, NotServed, Pending, PlacementResult
from gpushare.placement.run import place, place_files

helptext.restore(Assignment, Invalid, NotServed, Pending, PlacementResult, ScoringProfile, Semantics)

__all__ = [
    "Assignment",
    "Invalid",
    "NotServed",
    "Pending",
    "PlacementResult",
    "ScoringProfile",
    "Semantics",
    "compiled",
    "engine_build",
    "place",
    "place_files",
    "scoring_profile",
]


def compiled() -> bool:
    """Whether the engine runs compiled by mypyc (a wheel built where a C compiler worked; see setup.py) or as
    Python source (an editable install, or no compiler): the same results, two to four times the speed compiled."""
    return not str(_engine.__file__).endswith(".py")


def engine_build() -> str:
    """How the engine runs, in the words `gpushare --version` and the benchmarks print."""
    return "compiled by mypyc" if compiled() else "Python source"
