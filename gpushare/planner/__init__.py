"""Capacity planning for shared GPUs: the questions `place` alone does not answer.

Each answer is a placement run by the same engine (`gpushare.placement`), so it means what the scheduler would do:
`headroom` (how many more replicas of a template schedule, where, and why not the next) and `pools` (how many nodes
of which pool to add for the pending pods to schedule).
"""

from gpushare.planner.headroom import Headroom, Landing, headroom
from gpushare.planner.pools import Fleet, Pool, Sizing, read_pool, size

__all__ = ["Fleet", "Headroom", "Landing", "Pool", "Sizing", "headroom", "read_pool", "size"]
