"""Capacity planning for shared GPUs: the questions `place` alone does not answer.

Each answer is a placement run by the same engine (`gpushare.placement`), so it means what the scheduler would do:
`headroom` (how many more replicas of a template schedule, where, and why not the next).
"""

from gpushare.planner.headroom import Headroom, Landing, headroom

__all__ = ["Headroom", "Landing", "headroom"]
