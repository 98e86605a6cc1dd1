"""One representative per orbit for scalarsets the sort cannot handle, without the group.

The scalarsets whose members index each other or are named by another scalarset
(`canonical._is_simple` says no) cannot be rebuilt by sorting alone: a member's
data holds other members' names. When trying every element of their group would
cost more than MAX_ELEMENTS images per state, they are *refined* as graph
canonicalisers do, on whole batches, one scalarset at a time (fewest members first):

1. Each member gets a *colour*: what the state says about it with the names of the
   members not yet arranged erased (its own cells, a held member written as "a
   member" or "itself", and which slots of arranged variables hold it). Renaming
   members moves colours with them, so ordering members by colour is a choice the
   orbit makes, not the state.
2. The state is rebuilt with the scalarset's members in colour order (ties in
   member order).
3. Members of equal colour (a *block*) may still differ in how they are named
   elsewhere. A block whose neighbouring swaps all leave the state unchanged is
   inert: every permutation of it does. Every permutation of the other blocks is
   tried, and each image goes on to the next scalarset, whose colours may now read
   this one's names. The representative is the least state reached.

Every state of an orbit reaches the same set of states (the permutations that order
members by colour, composed with those of tied members, at each step), so the least
is a function of the orbit; it is one of the state's images, so it lies in the
orbit. Exact, however weak the colour: the colour only decides how few images are
tried. Lanes are grouped by their colour order and blocks, and each group is handled
with the elements it needs, built on demand.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from checker.errors import CheckerError
from checker.packing import U64, Layout
from checker.symmetry.group import Element, SymmetryGroup
from checker.symmetry.signatures import least, member_cells, pack_keys, stable_ranks

MAX_TIE_IMAGES = 40_320  # 8!: the most images of one state the tied blocks may need

Images = Callable[[list[np.ndarray], list[Element]], Iterator[list[np.ndarray]]]
Perms = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class _Block:
    """Positions lo..hi-1 of a scalarset hold members of equal colour."""

    lo: int
    hi: int


class Refinement:
    """The canonical form of the scalarsets at positions `which` of `group`, jointly.

    They are arranged one after another, fewest members first: once a scalarset's
    members are in place their names mean something, so the next one's colours may
    read them (a client's colour then says which server it waits for)."""

    def __init__(self, group: SymmetryGroup, layout: Layout, which: list[int],
                 images: Images):
        """`images(words, elements)` yields the batch's image under each element."""
        self.group, self.images = group, images
        self.stages: list[_Colouring] = []
        for i in sorted(which, key=lambda i: (len(group.scalarsets[i].members), i)):
            self.stages.append(_Colouring(i, group, layout,
                                          arranged={c.which for c in self.stages}))

    @property
    def method(self) -> str:
        names = ", ".join(self.group.scalarsets[c.which].name for c in self.stages)
        return f"{names} by refined signature (tied members tried)"

    def canonical(self, words: list[np.ndarray]) -> list[np.ndarray]:
        """The representative of each state of the batch."""
        return self._canon(words, 0)

    def candidates(self, words: list[np.ndarray], stage: int = 0) -> Iterator[Perms]:
        """For a batch of one state: every element (as permutations) whose image the
        representative was chosen among."""
        if stage == len(self.stages):
            yield self.group.identity.perms
            return
        colouring = self.stages[stage]
        rank, ties = colouring.order(words)
        perm = tuple(int(r) for r in rank[:, 0])
        ordered = self._arrange(words, colouring.which, perm)
        active = [b for b in _blocks(ties, 0) if not self._inert(ordered, colouring.which, b)[0]]
        for shuffle in _shuffles(active, colouring.k):
            image = self._arrange(ordered, colouring.which, shuffle)
            whole = tuple(shuffle[p] for p in perm)
            for later in self.candidates(image, stage + 1):
                yield tuple(whole if i == colouring.which else q for i, q in enumerate(later))

    def _canon(self, words: list[np.ndarray], stage: int) -> list[np.ndarray]:
        """Per lane, the least image over the arrangements of stages `stage` on."""
        if stage == len(self.stages):
            return words
        colouring = self.stages[stage]
        rank, ties = colouring.order(words)
        out = [w.copy() for w in words]
        for lanes in _groups(np.concatenate([rank, ties])):
            first = int(lanes[0])
            perm = tuple(int(r) for r in rank[:, first])
            ordered = self._arrange([w[lanes] for w in words], colouring.which, perm)
            best = self._least(ordered, _blocks(ties, first), stage)
            for o, b in zip(out, best, strict=True):
                o[lanes] = b
        return out

    def _least(self, ordered: list[np.ndarray], blocks: list[_Block], stage: int
               ) -> list[np.ndarray]:
        """Per lane of `ordered` (this stage's members in colour order), its least image
        under the permutations of the blocks not inert there, each arranged further by
        the later stages."""
        which = self.stages[stage].which
        if not blocks:
            return self._canon(ordered, stage + 1)
        inert = np.stack([self._inert(ordered, which, b) for b in blocks])
        out = [w.copy() for w in ordered]
        for lanes in _groups(inert):
            active = [b for b, still in zip(blocks, inert[:, lanes[0]], strict=True)
                      if not still]
            sub = [w[lanes] for w in ordered]
            count = math.prod(math.factorial(b.hi - b.lo) for b in active)
            if count > MAX_TIE_IMAGES:
                raise CheckerError(
                    f"symmetry: a state's canonical form would try {count:,} arrangements "
                    f"of {self.group.scalarsets[which].name} (more than "
                    f"{MAX_TIE_IMAGES:,}): its members look alike but are named apart; "
                    "run with --no-symmetry")
            elements = [self._element(which, shuffle)
                        for shuffle in _shuffles(active, self.stages[stage].k)]
            best = least(self._canon(image, stage + 1) for image in self.images(sub, elements))
            for o, b in zip(out, best, strict=True):
                o[lanes] = b
        return out

    def _inert(self, ordered: list[np.ndarray], which: int, block: _Block) -> np.ndarray:
        """Per lane: every swap of neighbours in `block` leaves the state unchanged (so
        every permutation of the block does)."""
        swaps = []
        for p in range(block.lo, block.hi - 1):
            perm = list(range(len(self.group.scalarsets[which].members)))
            perm[p], perm[p + 1] = p + 1, p
            swaps.append(self._element(which, tuple(perm)))
        still = np.ones(len(ordered[0]), dtype=bool)
        for image in self.images(ordered, swaps):
            still &= np.logical_and.reduce([a == b for a, b in zip(image, ordered,
                                                                    strict=True)])
        return still

    def _element(self, which: int, perm: tuple[int, ...]) -> Element:
        """The element permuting scalarset `which` by `perm`, the others not at all."""
        return self.group.element(tuple(perm if i == which else tuple(range(len(s.members)))
                                        for i, s in enumerate(self.group.scalarsets)))

    def _arrange(self, words: list[np.ndarray], which: int, perm: tuple[int, ...]
                 ) -> list[np.ndarray]:
        return next(self.images(words, [self._element(which, perm)]))


def _blocks(ties: np.ndarray, lane: int) -> list[_Block]:
    """Lane `lane`'s runs of two or more members of equal colour (`ties[p]`: positions
    p and p + 1 hold equal colours)."""
    blocks, lo = [], 0
    k = len(ties) + 1
    for p in range(k):
        if p == k - 1 or not ties[p, lane]:
            if p > lo:
                blocks.append(_Block(lo, p + 1))
            lo = p + 1
    return blocks


def _shuffles(blocks: list[_Block], k: int) -> Iterator[tuple[int, ...]]:
    """Every product of permutations within `blocks` of k positions, identity first."""
    within = [[(b, p) for p in itertools.permutations(range(b.lo, b.hi))] for b in blocks]
    for combo in itertools.product(*within):
        perm = list(range(k))
        for block, images in combo:
            perm[block.lo:block.hi] = images
        yield tuple(perm)


class _Colouring:
    """A member's colour in one refined scalarset: what the state says about it with
    the names of the members not yet arranged erased, as uint64 keys per member.

    Its cells: the slots of variables it indexes on one axis, where every other
    scalarset indexing them is arranged already. A value there that names a member
    of a scalarset not yet arranged becomes "a member", or "itself" where it names
    this member. Then one bit per slot holding its members, in variables indexed by
    arranged scalarsets only: whether it holds this one. Everything else is left
    out: a weaker colour costs images, never correctness."""

    def __init__(self, which: int, group: SymmetryGroup, layout: Layout, arranged: set[int]):
        everyone = group.scalarsets
        self.which, self.sset, self.layout = which, everyone[which], layout
        sset, self.k = self.sset, len(self.sset.members)
        machine = group.machine
        indexers = {v: {i for i, s in enumerate(everyone) if v in dict(s.index)}
                    for v in {v for s in everyone for v, _ in s.index}}
        self.cells = member_cells(sset, machine, layout,
                                  lambda var: indexers[var] - {which} <= arranged)
        # per variable: the values that name members of scalarsets not yet arranged
        self.unnamed = {v: sorted({m for i, s in enumerate(everyone)
                                   if v in s.values and i not in arranged for m in s.members})
                        for v in {v for s in everyone for v in s.values}}
        self.held = [s.index for s in machine.slots
                     if s.var in sset.values and indexers.get(s.var, set()) <= arranged
                     and layout.fields[s.index].bits]

    def order(self, words: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Each member's position in colour order ((k, n): ties in member order), and
        whether positions p and p + 1 hold equal colours ((k - 1, n))."""
        keys = self.colours(words)
        rank = np.stack(stable_ranks(keys, len(words[0])))
        member_at = np.argsort(rank, axis=0)  # member_at[p]: the member at position p
        ties = np.empty((self.k - 1, len(words[0])), dtype=bool)
        for p in range(self.k - 1):
            ties[p] = np.logical_and.reduce([
                np.choose(member_at[p], [key[w] for key in keys]) ==
                np.choose(member_at[p + 1], [key[w] for key in keys])
                for w in range(len(keys[0]))])
        return rank, ties

    def colours(self, words: list[np.ndarray]) -> list[list[np.ndarray]]:
        """Each member's colour keys, comparable across members and across states."""
        fields: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(self.k)]
        for var, row in self.cells:
            f = self.layout.fields[row[0]]
            bits = int(f.mask + 2).bit_length()
            for i, slot in enumerate(row):
                raw = self.layout.raw_slot(words, slot)
                if self.unnamed.get(var):
                    value = raw.astype(np.int64) + f.lo
                    raw = np.where(np.isin(value, self.unnamed[var]), U64(f.mask + 1), raw)
                    if var in self.sset.values:
                        raw = np.where(value == self.sset.members[i], U64(f.mask + 2), raw)
                fields[i].append((raw.astype(U64), bits))
        for slot in self.held:
            value = self.layout.unpack_slot(words, slot)
            for i, m in enumerate(self.sset.members):
                fields[i].append(((value == m).astype(U64), 1))
        if not fields[0]:
            return [[np.zeros(len(words[0]), dtype=U64)] for _ in range(self.k)]
        return [pack_keys(f) for f in fields]


def _groups(keys: np.ndarray) -> list[np.ndarray]:
    """The lanes (columns of `keys`, small non-negative integers) grouped by equal
    columns, each group's lanes ascending, groups in the order of their first lane."""
    rows = np.ascontiguousarray(keys.T.astype(np.uint8))
    if rows.shape[1] == 0:
        return [np.arange(len(rows))]
    _, first, inverse = np.unique(rows.view(f"V{rows.shape[1]}").ravel(), return_index=True,
                                  return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    cuts = np.flatnonzero(np.diff(inverse.ravel()[order])) + 1
    groups = np.split(order, cuts)
    return [groups[g] for g in np.argsort(first, kind="stable")]
