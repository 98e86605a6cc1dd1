"""One representative per orbit, computed on whole batches of packed states.

Two methods, chosen per scalarset (docs/decisions/0016-scalarset-canonical-form.md):

* **Sorting members by signature** for a *simple* scalarset of 4 or more members
  (fewer are cheaper to search): one whose variables
  no other scalarset names, none of them both indexed by its members and holding
  them. A member's signature is its own indexed fields followed by, for every slot
  holding members, whether that slot holds it. Two members with equal signatures
  are unreferenced and have equal data, so swapping them changes nothing; the
  state rebuilt with members in signature order therefore depends only on the
  orbit. Cost per state: a sort of k signatures and one pass per moved field.
* **The smallest image** for the others: every group element's image, compared
  as packed words (word 0 first), keeping the least. Cost per state: one pass per
  moved field for each of the k! elements.
* **Refinement** (`refine.py`) for the others instead, where their elements number
  more than MAX_ELEMENTS: members ordered by what the state says of them, and only
  look-alike members tried in every order.

Simple scalarsets are sorted first, then the smallest image is taken over the
elements that permute only the others: since the two kinds touch disjoint
variables, the result is still one state per orbit. No Python loop per state.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from checker.lang.machine import Machine, Scalarset
from checker.packing import U64, Layout
from checker.symmetry.group import MAX_ELEMENTS, Element, SymmetryGroup
from checker.symmetry.refine import Refinement
from checker.symmetry.signatures import least, member_cells, pack_keys, stable_ranks

if TYPE_CHECKING:
    from checker.engines.explicit.successors import Kernel

SORT_FROM = 4  # members: below, trying all k! images is cheaper (bench/canonical_form.py)
MAX_PLANS = 50_000  # compiled elements kept


@dataclass(frozen=True)
class _Move:
    """Destination field at `offset` of word `word` takes source slot `src`'s raw
    value, renamed by `table` (indexed by raw value, giving the new raw value) if any."""

    word: int
    offset: np.uint64
    src: int
    table: np.ndarray | None


_Plan = tuple[list[np.uint64], list[_Move]]  # bits each word keeps, fields it rewrites


def reduce_by_orbits(kernel: Kernel) -> Canonicalizer:
    """Have `kernel` map every batch of successors to its orbits' representatives, by the
    one canonical form every engine uses (the local BFS, Spark's driver and executors),
    and return that form."""
    canon = Canonicalizer(SymmetryGroup(kernel.machine), kernel.layout)
    kernel.canonical = canon.canonical
    return canon


class Canonicalizer:
    """Maps packed states to their orbit's representative."""

    def __init__(self, group: SymmetryGroup, layout: Layout, method: str = "auto"):
        """`method`: "auto" sorts the simple scalarsets of SORT_FROM members or more,
        "sort" every simple one, "search" none (the last two to compare the methods)."""
        self.group = group
        self.layout = layout
        least = {"auto": SORT_FROM, "sort": 0, "search": None}[method]
        simple = [s for s in group.scalarsets if least is not None
                  and len(s.members) >= least and _is_simple(s, group.scalarsets)]
        self._sorts = [_SignatureSort(s, group.machine, layout) for s in simple]
        self._sorted = [i for i, s in enumerate(group.scalarsets) if s in simple]
        self._plans: dict[tuple[tuple[int, ...], ...], _Plan] = {}
        self._others = [i for i in range(len(group.scalarsets)) if i not in self._sorted]
        many = math.prod(math.factorial(len(group.scalarsets[i].members)) for i in self._others)
        self._refine = Refinement(group, layout, self._others, self.images) \
            if many > MAX_ELEMENTS and method != "search" else None

    @functools.cached_property
    def _searched(self) -> list[Element]:
        """The elements the smallest image tries (besides the identity): those moving
        only the scalarsets neither sorted nor refined; listed when first needed, so
        moving states by one element (`permute`, as `--check-symmetry` does) never
        needs them."""
        if self._refine is not None or not self._others:
            return []
        return self.group.elements_permuting(self._others)[1:]

    @property
    def method(self) -> str:
        """How representatives are chosen, for the record of a run."""
        parts = [f"{s.sset.name} by sorted signature" for s in self._sorts]
        if self._refine is not None:
            parts.append(self._refine.method)
        elif self._searched:
            parts.append(f"smallest of {len(self._searched) + 1} images")
        return "; ".join(parts)

    def canonical(self, words: list[np.ndarray]) -> list[np.ndarray]:
        """The representative of each state of the batch."""
        if not len(words[0]):
            return words
        words = self._sort_all(words)
        if self._refine is not None:
            return self._refine.canonical(words)
        return least(itertools.chain([words], self.images(words, self._searched)))

    def element_to_representative(self, words: list[np.ndarray]) -> Element:
        """For a batch of one state: a group element mapping it to its representative
        (used to lift a counterexample, never per search state): the sorted scalarsets'
        order, then the first of the searched or refined elements that reaches it."""
        target = self.canonical(words)
        perms = list(self.group.identity.perms)
        for i, sort in zip(self._sorted, self._sorts, strict=True):
            perms[i] = sort.ranks(words)
        if self._refine is not None:
            tried = list(self._refine.candidates(self._sort_all(words)))
        else:
            tried = [e.perms for e in [self.group.identity, *self._searched]]
        for others in tried:
            # the sorted scalarsets' order, then the others' element (they commute)
            whole = self.group.element(tuple(perms[i] if i in self._sorted else others[i]
                                             for i in range(len(perms))))
            if all((a == b).all() for a, b in zip(self.permute(words, whole), target,
                                                   strict=True)):
                return whole
        raise AssertionError("a representative lies outside its orbit")

    def _sort_all(self, words: list[np.ndarray]) -> list[np.ndarray]:
        """The batch with every sorted scalarset's members in signature order."""
        for sort in self._sorts:
            words = sort.apply(words)
        return words

    def images(self, words: list[np.ndarray], elements: list[Element]
               ) -> Iterator[list[np.ndarray]]:
        """The batch's image under each of `elements`, in turn."""
        raw = self._raw(words, elements)
        for e in elements:
            yield self._image(words, raw, e)

    def permute(self, words: list[np.ndarray], element: Element) -> list[np.ndarray]:
        """Every state of the batch moved by one group element."""
        if element.perms == self.group.identity.perms:
            return [w.copy() for w in words]
        return self._image(words, self._raw(words, [element]), element)

    # -- the smallest image --------------------------------------------------------
    def _plan(self, element: Element) -> _Plan:
        plan = self._plans.get(element.perms)
        if plan is None:
            if len(self._plans) >= MAX_PLANS:  # refinement builds elements per state
                self._plans.clear()
            plan = self._plans[element.perms] = _compile(element, self.layout)
        return plan

    def _raw(self, words: list[np.ndarray], elements: list[Element]) -> dict[int, np.ndarray]:
        """Each source field the elements move, extracted once per batch."""
        raw = {}
        for e in elements:
            for mv in self._plan(e)[1]:
                if mv.src not in raw:
                    raw[mv.src] = self.layout.raw_slot(words, mv.src)
        return raw

    def _image(self, words: list[np.ndarray], raw: dict[int, np.ndarray],
               element: Element) -> list[np.ndarray]:
        keep, moves = self._plan(element)
        image = [w & kw for w, kw in zip(words, keep, strict=True)]
        for mv in moves:
            v = raw[mv.src]
            if mv.table is not None:
                v = mv.table[v]
            image[mv.word] |= v << mv.offset
        return image


def _compile(element: Element, layout: Layout) -> _Plan:
    keep = [(1 << 64) - 1] * layout.n_words
    moves = []
    for j, s in enumerate(element.src):
        f = layout.fields[j]
        table = element.tables.get(j)
        if (s == j and table is None) or not f.bits:
            continue
        keep[f.word] &= ~(f.mask << f.offset)
        raw_table = None if table is None else (table - f.lo).astype(U64)
        moves.append(_Move(f.word, U64(f.offset), int(s), raw_table))
    return [U64(k) for k in keep], moves


def _is_simple(sset: Scalarset, everyone: list[Scalarset]) -> bool:
    """No other scalarset names its variables, none is both indexed and valued by it,
    and none is indexed by it on two axes."""
    indexed = {v for v, _ in sset.index}
    others = {v for s in everyone if s is not sset for v in [*(x for x, _ in s.index),
                                                             *s.values]}
    return (not ((indexed | set(sset.values)) & others) and not indexed & set(sset.values)
            and all(len(axes) == 1 for _, axes in sset.index))


class _SignatureSort:
    """Rebuilds states with one simple scalarset's members in signature order.

    Works on one column of raw values per (member, field): members are ranked by
    comparing signatures pairwise (k is small, so k^2 whole-array comparisons beat
    a per-row sort), then each output position picks its member's fields.
    """

    def __init__(self, sset: Scalarset, machine: Machine, layout: Layout):
        self.sset = sset
        self.layout = layout
        # cells[f][i]: the slot of member i's f-th own field, in one order for all members
        self.cells = [row for _, row in member_cells(sset, machine, layout)]
        self.value_slots = [s.index for s in machine.slots
                            if s.var in sset.values and layout.fields[s.index].bits]
        self.members = np.array(sset.members, dtype=np.int64)
        # raw value -> the member position it names, or -1 (per value slot)
        self.positions: list[np.ndarray] = []
        for index in self.value_slots:
            f = layout.fields[index]
            table = np.full(f.mask + 1, -1, dtype=np.int64)
            for i, m in enumerate(sset.members):
                if 0 <= m - f.lo <= f.mask:
                    table[m - f.lo] = i
            self.positions.append(table)
        keep = [(1 << 64) - 1] * layout.n_words
        for index in [s for row in self.cells for s in row] + self.value_slots:
            f = layout.fields[index]
            keep[f.word] &= ~(f.mask << f.offset)
        self.keep = [U64(x) for x in keep]

    def _rank(self, words: list[np.ndarray]
              ) -> tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray]]:
        """Each member's own fields and where it is held, and its position in signature
        order (ties kept in member order), per state of the batch."""
        k, fields = len(self.members), self.layout.fields
        own = [[self.layout.raw_slot(words, s) for s in row] for row in self.cells]
        held = [table[self.layout.raw_slot(words, s)] for s, table in zip(self.value_slots,
                                                               self.positions, strict=True)]
        keys = [_signature(own, held, [fields[row[0]].bits for row in self.cells], i)
                for i in range(k)]
        return own, held, stable_ranks(keys, len(words[0]))

    def ranks(self, words: list[np.ndarray]) -> tuple[int, ...]:
        """For a batch of one state: the position each member moves to."""
        return tuple(int(r[0]) for r in self._rank(words)[2])

    def apply(self, words: list[np.ndarray]) -> list[np.ndarray]:
        k, fields = len(self.members), self.layout.fields
        own, held, rank = self._rank(words)
        source = np.zeros((k, len(words[0])), dtype=np.int64)  # source[p]: member at p
        for i, r in enumerate(rank):
            np.put_along_axis(source, r[None, :], i, axis=0)
        out = [w & kw for w, kw in zip(words, self.keep, strict=True)]
        for row, columns in zip(self.cells, own, strict=True):
            for p, slot in enumerate(row):
                self._write(out, slot, np.choose(source[p], columns))
        ranks = np.stack(rank)
        for slot, position in zip(self.value_slots, held, strict=True):
            is_member = position >= 0
            renamed = self.members[np.take_along_axis(
                ranks, np.maximum(position, 0)[None, :], axis=0)[0]]
            old = self.layout.unpack_slot(words, slot)
            self._write(out, slot, (np.where(is_member, renamed, old)
                                    - fields[slot].lo).astype(U64))
        return out

    def _write(self, words: list[np.ndarray], slot: int, raw: np.ndarray) -> None:
        f = self.layout.fields[slot]
        words[f.word] |= raw << U64(f.offset)


def _signature(own: list[list[np.ndarray]], held: list[np.ndarray], bits: list[int],
               member: int) -> list[np.ndarray]:
    """Member `member`'s signature: its own fields, then one bit per slot holding
    members (set where it holds this one)."""
    return pack_keys([(columns[member], b) for columns, b in zip(own, bits, strict=True)]
                     + [((position == member).astype(U64), 1) for position in held])
