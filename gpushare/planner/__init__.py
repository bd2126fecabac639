"""Capacity planning for shared GPUs: the questions `place` alone does not answer.

Each answer is a placement run by the same engine (`gpushare.placement`), so it means what the scheduler would do:
`headroom` (how many more replicas of a template schedule, where, and why not the next), `pools` (how many nodes
of which pool to add for the pending pods to schedule) and `defrag` (why a pending pod does not fit while memory is
free, and which moves of running pods would make room: `make_room`); and `diff`, what a change of settings or node
labels does to the rendered stack, to the rules and to the fleet.
"""

from gpushare.planner.change import Difference, Side, diff
from gpushare.planner.defrag import Defrag, Fragmentation, Move, Plan, Step, make_room
from gpushare.planner.headroom import Headroom, Landing, headroom
from gpushare.planner.pools import Blend, Fleet, Pool, Sizing, read_pool, size, size_all, size_mix

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
