"""Capacity planning for shared GPUs: the questions `place` alone does not answer.

Each answer is a placement run by the same simulation (`gpushare.placement.Simulation`), so it means what the
scheduler would do: `headroom` (how many more replicas of a template schedule, where, and why not the next), `pools`
(how many nodes of which pool to add for the pending pods to schedule) and `defrag` (why a pending pod does not fit
while memory is free, and which moves of running pods would make room: `make_room`); and `diff`, what a change of
settings or node labels does to the rendered stack, to the rules and to the fleet.

The names below are imported on first use (PEP 562): a fleet question does not load the chart generator and the
settings model `diff` needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpushare import helptext

if TYPE_CHECKING:
    from gpushare.planner.change import Difference, Side, diff
    from gpushare.planner.defrag import Defrag, Fragmentation, Move, Plan, Step, make_room
    from gpushare.planner.headroom import Headroom, Landing, headroom
    from gpushare.planner.pools import Blend, Fleet, Pool, Sizing, read_pool, size, size_all, size_mix

#: Moves searched for one pending pod at most (`make_room`): beyond this a node is better added than the GPUs
#: shuffled. Here, not in `defrag`: `capacity` names it in its help without loading the search.
MAX_MOVES = 8

#: Public name -> the module that defines it.
_PUBLIC = {
    **dict.fromkeys(("Difference", "Side", "diff"), "gpushare.planner.change"),
    **dict.fromkeys(("Defrag", "Fragmentation", "Move", "Plan", "Step", "make_room"), "gpushare.planner.defrag"),
    **dict.fromkeys(("Headroom", "Landing", "headroom"), "gpushare.planner.headroom"),
    **dict.fromkeys(
        ("Blend", "Fleet", "Pool", "Sizing", "read_pool", "size", "size_all", "size_mix"), "gpushare.planner.pools"
    ),
}


__getattr__, __dir__ = helptext.lazy(__name__, _PUBLIC)


__all__ = [
    "Blend",
    "Defrag",
    "Difference",
    "Fleet",
    "Fragmentation",
    "Headroom",
    "Landing",
    "Move",
    "Plan",
    "Pool",
    "Side",
    "Sizing",
    "Step",
    "diff",
    "headroom",
    "make_room",
    "read_pool",
    "size",
    "size_all",
    "size_mix",
]
