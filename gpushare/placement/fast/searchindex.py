"""The fast engine's index over kube-scheduler's search order, for the pods the score index serves on a fleet whose
search stops early (`sampling`).

Followed node by node, a search costs its whole window (hundreds of nodes at 2,000) and the set the real choice is
drawn from costs the fleet, for every pod. Here each kind of pod's standing on every node (its score group, its key
in the group, its GPU memory left at node level and on one device: what the score index keeps) is held in arrays by
search position, so one pod's search is a few vector operations over them: the window ends where the count of
positions passing the framework's filters reaches `wanted + 1`, the window's groups answer as the score index's
groups do for the whole class, and `View.select` picks the winner from them as on a small fleet. A pod the window
cannot take is told why from the same arrays. The answers are the node-by-node search's (`Sampler.schedule`), which
the tests compare them with.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import NamedTuple, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from gpushare.domain import kubescheduler as ks
from gpushare.domain.labels import GPU_MEM
from gpushare.placement.fast.scoreindex import Entry, GroupKey, ScoreIndex, Spread, View
from gpushare.placement.framework import Rejection
from gpushare.placement.model import Node, Pod
from gpushare.placement.pluginsets import Profile
from gpushare.placement.result import Pending
from gpushare.placement.sampling import Cut, Sampler


class Members(Protocol):
    """A kind of pod's class of nodes (the fast engine's `NodeClass`): those its static filters pass, and why the
    others do not."""

    members: list[Node]
    static_by_node: dict[int, Rejection]


#: Kinds of pods whose arrays are kept at once (each holds a few integers per node).
MAX_KINDS = 64
#: Explicit aliases: a build without numpy's types (mypyc's, `--ignore-missing-imports`) reads them as Any.
Ints: TypeAlias = npt.NDArray[np.int64]
_MOST = np.iinfo(np.int64).max
Mask: TypeAlias = npt.NDArray[np.bool_]


class Window(NamedTuple):
    """One pod's search: the positions it filtered (one range, or two where it went round the end), how many it
    went through, and the framework-feasible nodes of the fleet."""

    spans: tuple[tuple[int, int], ...]
    processed: int
    feasible: int
    complete: bool

    def filtered(self, total: int) -> Mask:
        """The positions filtered, as a mask over all `total`."""
        mask = np.zeros(total, np.bool_)
        for start, end in self.spans:
            mask[start:end] = True
        return mask


class Positions:
    """One kind of pod's view (and spreading selector, if any), node by node in search order: the group it is filed
    under (-1: not a member of the pod's class, or lacking resources for good), its key there, its GPU memory left at
    node level and on one device; for nodes that reject the pod whatever GPU memory it asks, why (`reasons[code]`).
    Kept up to date from the score index's log of binds, after the view and spread."""

    def __init__(
        self,
        profile: Profile,
        index: ScoreIndex,
        view: View,
        spread: Spread | None,
        position: Sequence[int],
        static: dict[int, Rejection],
    ) -> None:
        self.index = index
        self.view = view
        self.spread = spread
        self.position = position
        n = len(position)
        self.group: Ints = np.full(n, -1, np.int64)
        self.key: Ints = np.zeros(n, np.int64)
        self.local: Ints = np.zeros(n, np.int64)
        self.free: Ints = np.zeros(n, np.int64)
        self.room: Ints = np.zeros(n, np.int64)
        #: `free` and `room` where the node is filed in a group, -1 elsewhere: what a search compares with a request
        #: (never negative: a negative one is read as 0, the pod invalid), one comparison instead of three
        self.member_free: Ints = np.full(n, -1, np.int64)
        self.member_room: Ints = np.full(n, -1, np.int64)
        self.code: Ints = np.full(n, -1, np.int64)
        self.lacks: Mask = np.zeros(n, np.bool_)
        self.static: Mask = np.zeros(n, np.bool_)
        #: UnschedulableAndUnresolvable where the node rejects the pod: static filters as their plugins say, Fit (from
        #: 1.34) where a request is beyond what the node can allocate (GPU memory compared per request)
        self.unresolvable: Mask = np.zeros(n, np.bool_)
        self.allocatable: Ints = np.zeros(n, np.int64)
        self.fit_unresolvable = profile.scheduler.fit_unresolvable_beyond_allocatable
        self.one_device = profile.gpus.one_device
        self.keys: list[GroupKey] = []
        self.ids: dict[GroupKey, int] = {}
        self.reasons: list[tuple[str, ...]] = []
        self.codes: dict[tuple[str, ...], int] = {}
        self.seen = len(index.log)
        for node in index.nodes:
            at = position[node.id]
            self.allocatable[at] = node.gpu_mem
            rejected = static.get(node.id)
            if rejected is not None:
                self.static[at] = True
                self.code[at] = self._code(rejected.reasons)
                self.unresolvable[at] = profile.unresolvable(rejected, node, view.pod)
            else:
                self.unresolvable[at] = self.fit_unresolvable and profile.resources.beyond_allocatable(node, view.pod)
                self._file(node.id)

    def _code(self, reasons: tuple[str, ...]) -> int:
        code = self.codes.get(reasons)
        if code is None:
            code = self.codes[reasons] = len(self.reasons)
            self.reasons.append(reasons)
        return code

    def _file(self, node_id: int) -> None:
        at = self.position[node_id]
        entry = self.view.entries.get(node_id)
        if entry is None:
            lack = self.view.lack_of.get(node_id)
            if lack is not None:
                self.group[at] = -1
                self.lacks[at] = True
                self.code[at] = self._code(lack[0])
                self.free[at] = lack[1]
                self.member_free[at] = self.member_room[at] = -1
            return
        group, key, free = entry
        if self.spread is not None:
            placed = self.spread.placed.get(node_id)
            if placed is not None:
                group = placed[0]
        number = self.ids.get(group)
        if number is None:
            number = self.ids[group] = len(self.keys)
            self.keys.append(group)
        self.group[at] = number
        self.key[at] = key
        self.local[at] = self.index.ranking.local(key)
        self.free[at] = self.member_free[at] = free
        self.room[at] = self.member_room[at] = self.index.ranking.room(key)

    def catch_up(self) -> None:
        self.seen, changed = self.index.changed_since(self.seen)
        for node_id in changed:
            self._file(node_id)

    def window(self, r: int, start: int, wanted: int) -> Window:
        """The positions a search from `start` filters: until `wanted` pass the framework's filters (member of the
        class, resources left, GPU memory at node level), the next one that passes ending it uncounted."""
        total = len(self.group)
        feasible = (self.member_free >= r).nonzero()[0]  # the array's own methods: numpy's functions wrap them
        everyone = len(feasible)
        if everyone <= wanted:  # every node filtered
            return Window(((0, total),), total, everyone, True)
        # the one too many: the (wanted + 1)-th feasible position from `start`, round the end if need be
        first = int(feasible.searchsorted(start))
        end = int(feasible[(first + wanted) % everyone])
        if end >= start:
            return Window(((start, end),), end - start, everyone, False)
        return Window(((start, total), (0, end)), total - start + end, everyone, False)

    def found(self, r: int, window: Window) -> list[tuple[GroupKey, Entry]]:
        """The groups with a node in the window that takes a request of r (a member with that much room on one
        device), each with its answer as `Group.entry` gives it: (nodes, the best key, nodes of the best's local
        score). Sliced to the window: a search looks at a third of a large fleet or less."""
        parts = []
        for start, end in window.spans:
            taking = (self.member_room[start:end] >= r).nonzero()[0]
            parts.append(taking + start if start else taking)
        taking = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if not len(taking):
            return []
        groups, keys, local = self.group.take(taking), self.key.take(taking), self.local.take(taking)
        size = len(self.keys)
        counts = np.bincount(groups, minlength=size)
        best = np.empty(size, np.int64)
        best.fill(_MOST)
        np.minimum.at(best, groups, keys)
        # the best's local score, -(key // span), is shared by the nodes tied with it
        tops = -(best // self.index.ranking.span)
        ties = np.bincount(groups[local == tops[groups]], minlength=size)
        listed, bests, tied = counts.tolist(), best.tolist(), ties.tolist()
        return [(self.keys[g], (listed[g], bests[g], tied[g])) for g in range(size) if listed[g]]

    def drawn_from(self, r: int, passing: Mask, feasible: int, wanted: int) -> int:
        """`Sampler.drawn_from` over the arrays: the nodes passing the filters and the extender (`passing`, those
        with room for r) that have at most `feasible - wanted` of them scoring strictly higher, scores normalised
        over all of them: each group's total for its best (the score index's answer for the whole class) shifts
        every node of the group alike."""
        count = int(passing.sum())
        allowed = feasible - wanted
        if count <= 1 or allowed + 1 >= count:
            return count
        found = (self.spread or self.view).feasible(r) or []
        totals = self.view.totals(found, self.spread)
        ranking = self.index.ranking
        offset = np.zeros(len(self.keys), np.int64)
        for (group, (_, best, _)), total in zip(found, totals, strict=True):
            offset[self.ids[group]] = total - ranking.local(best)
        scores = offset[self.group[passing]] + self.local[passing]
        threshold = np.partition(scores, count - allowed - 1)[count - allowed - 1]
        return int((scores >= threshold).sum())

    def why(self, r: int, filtered: Mask) -> tuple[Counter[str], int]:
        """Why no node filtered takes a request of r, per reason as FitError counts them, and how many of them
        said UnschedulableAndUnresolvable: static filters' and lacking resources' own words, then GPU memory at
        node level (Fit) or on one device (the extender)."""
        why: Counter[str] = Counter()
        coded = filtered & (self.code >= 0)
        for code, n in enumerate(np.bincount(self.code[coded], minlength=len(self.reasons)).tolist()):
            for reason in self.reasons[code] if n else ():
                why[reason] += n
        short = filtered & ~self.static & (self.free < r)
        if r and short.any():
            why[f"Insufficient {GPU_MEM}"] += int(short.sum())
        one_device = int((filtered & (self.group >= 0) & (self.free >= r)).sum())
        if one_device:
            why[self.one_device] += one_device
        fit = filtered & (self.lacks | short)
        hopeless = filtered & self.static & self.unresolvable
        if self.fit_unresolvable:
            hopeless |= fit & (self.unresolvable | (self.allocatable < r))
        return why, int(hopeless.sum())


class SearchIndex:
    """Positions per kind of pod, for one run's sampler and score index."""

    def __init__(self, sampler: Sampler, index: ScoreIndex) -> None:
        self.sampler = sampler
        self.index = index
        self.profile = index.profile
        position = [0] * len(sampler.nodes)
        for at, node in enumerate(sampler.order):
            position[node.id] = at
        self.position = position
        self.kinds: OrderedDict[tuple[int, int], tuple[View, Spread | None, Positions]] = OrderedDict()

    @classmethod
    def of(cls, sampler: Sampler | None, index: ScoreIndex | None) -> SearchIndex | None:
        """The index where the search may stop early and the score index's keys fit the arrays' integers."""
        if sampler is None or index is None or not sampler.cuts:
            return None
        weights = sum(weight for _, weight in index.profile.scores)
        if (weights + 1) * ks.MAX_NODE_SCORE * index.ranking.span >= 2**62:
            return None
        return cls(sampler, index)

    def serves(self, pod: Pod) -> bool:
        """The extender's filter is the node's room on one device (as the score index's groups count it)."""
        return not pod.wants_gpu or self.profile.gpus.room_decides(pod)

    def positions(self, pod: Pod, members: Sequence[Node], static: dict[int, Rejection]) -> Positions:
        view, spread = self.index.lookup(pod, members)
        slot = (id(view), id(spread))
        kept = self.kinds.get(slot)
        # the entry holds its view and spread, so their ids name no other while it is kept
        if kept is None or kept[0] is not view or kept[1] is not spread:
            made = Positions(self.profile, self.index, view, spread, self.position, static)
            kept = self.kinds[slot] = (view, spread, made)
            if len(self.kinds) > MAX_KINDS:
                self.kinds.popitem(last=False)
        else:
            self.kinds.move_to_end(slot)
            kept[2].catch_up()
        return kept[2]

    def schedule(self, pod: Pod, cls: Members) -> tuple[Node, int] | Pending | None:
        """`Sampler.schedule` for a pod the score index serves: (node id, nodes the real choice may be drawn from),
        the search's start moved on; the pod pending on what the search filtered; None where the search reached
        every node and none takes the pod (the class's own reasons say why)."""
        sampler = self.sampler
        positions = self.positions(pod, cls.members, cls.static_by_node)
        r = pod.gpu_mem
        window = positions.window(r, sampler.start, sampler.wanted)
        found = positions.found(r, window)
        if window.complete:
            sampler.cut_pending.pop(pod.key, None)
            return self._node(positions.view.select(found, positions.spread)) if found else None
        start = sampler.start
        sampler.moved(window.processed)
        if not found:
            total = len(sampler.order)
            why, hopeless = positions.why(r, window.filtered(total))
            unfiltered = total - window.processed
            if self.profile.scheduler.unfiltered_nodes_unresolvable:
                hopeless += unfiltered
            sampler.cut_pending[pod.key] = Cut(start, hopeless)
            reasons = tuple(sorted(why.items()))
            return Pending(pod.namespace, pod.name, total, reasons, pod.per_gpu, (), unfiltered=unfiltered)
        sampler.cut_pending.pop(pod.key, None)
        chosen, tied = self._node(positions.view.select(found, positions.spread))
        if not sampler.draws:
            return chosen, tied
        passing = positions.member_room >= r
        return chosen, max(tied, positions.drawn_from(r, passing, window.feasible, sampler.wanted))

    def _node(self, chosen: tuple[int, int]) -> tuple[Node, int]:
        return self.index.nodes[chosen[0]], chosen[1]
