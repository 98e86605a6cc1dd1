"""Candidate lemmas: clauses of one or two literals over the state's slots, judged
against the states the explicit engine enumerates.

A *literal* says something of one slot (`x == c`, `x != c`, `x < c`, `c <= x` for
each constant c of its range, an enum member or not, a boolean or its negation), or
compares two integer slots the spec relates and whose ranges overlap (`x < y`,
`x <= y`, `x == y`, `x != y`, both ways round; `relations.py` says which). A
candidate is one literal, or a clause `Implies(g, c)`: a one-slot guard g and any
literal c over other slots. The guards are the one-slot literals, so the clauses are
every disjunction of a one-slot literal with any literal: "position 1 of the log is
present only if its entry's write is flushed", "a set bucket holds a ts of at least
1", "a replica's LAI is at least its applied index" are all of that shape.

Judging is by literal: each batch of states evaluates every literal once (NumPy,
compiled by the vector backend), packs each literal's values into bits, and a
clause `Implies(g, c)` falls if some state has g and not c, found with one AND per
guard over the packed rows of the conclusions still alive. Millions of clauses
thus cost a few bit operations per state, not a compiled expression each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from checker.backends.vector import compile_batch, dtype_for
from checker.engines.symbolic.infer.relations import related_pairs
from checker.lang import expr as E
from checker.lang.expr import BOOL, INT, EnumType, Expr
from checker.lang.machine import Machine, Slot

Reader = Callable[[int], np.ndarray]
GROUP = 256  # literals compiled into one batch function
CHUNK = 1 << 14  # states judged together: bounds the (literals, states) matrix
WIDE = 8  # an int slot with a wider range gets constants only near its ends


# What a literal says, before any negation: ("bool", slot), ("enum", slot, member),
# ("eq", slot, c), ("lt", slot, c) for `slot < c`, ("eq2", a, b) with a < b, and
# ("lt2", a, b) for `a < b`; `orbits.py` renames literals by these.
Shape = tuple[str | int, ...]


@dataclass(frozen=True)
class Literal:
    expr: Expr
    source: str  # spec source over the state `s`
    slots: frozenset[int]
    shape: Shape
    positive: bool  # the shape as said, or its negation


@dataclass(frozen=True)
class Candidate:
    """A candidate lemma: the disjunction of `clause`'s literals (indices into the
    pool's literals), written as an implication."""
    expr: Expr
    source: str
    clause: tuple[int, ...] = ()


def _ref(slot: Slot) -> str:
    return f"s.{slot.name}"


def _var(slot: Slot) -> Expr:
    return E.var(slot.index, slot.leaf.sort, slot.lo, slot.hi)


def _constants(slot: Slot) -> list[int]:
    if slot.hi - slot.lo <= WIDE:
        return list(range(slot.lo, slot.hi + 1))
    return sorted({slot.lo, slot.lo + 1, slot.hi - 1, slot.hi})


def literals(machine: Machine) -> tuple[list[Literal], list[int]]:
    """Every literal, in a fixed order (one-slot literals first), and the index of each
    literal's negation."""
    pairs: list[tuple[Literal, Literal]] = []  # (literal, its negation)

    def add(expr: Expr, text: str, neg_text: str, slots: frozenset[int], shape: Shape) -> None:
        if expr.is_const:
            return
        pairs.append((Literal(expr, text, slots, shape, positive=True),
                      Literal(E.Not(expr), neg_text, slots, shape, positive=False)))

    for s in machine.slots:
        one, v, ref = frozenset({s.index}), _var(s), _ref(s)
        if s.leaf.sort == BOOL:
            add(v, ref, f"Not({ref})", one, ("bool", s.index))
        elif isinstance(s.leaf.sort, EnumType):
            for member in s.leaf.sort:
                name = f"{s.leaf.sort.name}.{member.member}"
                add(E.eq(v, member), f"{ref} == {name}", f"{ref} != {name}", one,
                    ("enum", s.index, member.member))
        elif s.leaf.sort == INT:
            for c in _constants(s):
                add(E.eq(v, c), f"{ref} == {c}", f"{ref} != {c}", one, ("eq", s.index, c))
                if c > s.lo:
                    add(E.lt(v, c), f"{ref} < {c}", f"{ref} >= {c}", one, ("lt", s.index, c))
    for i, j in sorted(related_pairs(machine)):
        a, b = machine.slots[i], machine.slots[j]
        if a.hi < b.lo or b.hi < a.lo:
            continue  # never comparable: different kinds of number
        two, va, vb, ra, rb = frozenset({i, j}), _var(a), _var(b), _ref(a), _ref(b)
        add(E.lt(va, vb), f"{ra} < {rb}", f"{ra} >= {rb}", two, ("lt2", i, j))
        add(E.lt(vb, va), f"{rb} < {ra}", f"{rb} >= {ra}", two, ("lt2", j, i))
        add(E.eq(va, vb), f"{ra} == {rb}", f"{ra} != {rb}", two, ("eq2", i, j))
    out: list[Literal] = []
    negation: list[int] = []
    for lit, neg in pairs:
        out += [lit, neg]
        negation += [len(out) - 1, len(out) - 2]
    return out, negation


class Pool:
    """The candidates still true in every state judged so far: the literals that held
    everywhere (`units`) and the clauses `Implies(guard, conclusion)` (`clauses`,
    one row per guard, one column per literal). With `keep`, it also keeps every
    literal's value in every state judged (a bit each), the oracle `generalize` asks."""

    def __init__(self, machine: Machine, keep: bool = False):
        self.literals, negation = literals(machine)
        self.negation = np.array(negation, dtype=np.int64)
        self.guards = np.array([i for i, lit in enumerate(self.literals) if len(lit.slots) == 1],
                               dtype=np.int64)
        n = len(self.literals)
        self.units = np.ones(n, dtype=bool)
        self.clauses = np.ones((len(self.guards), n), dtype=bool)
        only = np.array([next(iter(lit.slots)) if len(lit.slots) == 1 else -1
                         for lit in self.literals], dtype=np.int64)
        self.clauses &= only[self.guards][:, None] != only[None, :]  # no one-slot clause:
        # it is a conjunction of that slot's literals, which are candidates already
        self._fns = [compile_batch([lit.expr for lit in self.literals[lo:lo + GROUP]],
                                   dtype_for([lit.expr for lit in self.literals[lo:lo + GROUP]]),
                                   f"literals_{lo}")
                     for lo in range(0, n, GROUP)]
        self.states = 0
        self.keep = keep
        self._kept: list[np.ndarray] = []  # packed literal values, a batch each
        self._reached: np.ndarray | None = None
        self._counts = np.zeros(0, dtype=np.int64)  # judged states each literal holds in

    @property
    def total(self) -> int:
        return int(len(self.literals) + self.clauses.size)

    def values(self, read: Reader, n: int) -> np.ndarray:
        """Every literal's value in n states (slot j read by `read(j)`): (literals, n)."""
        out = np.empty((len(self.literals), n), dtype=bool)
        for g, fn in enumerate(self._fns):
            for k, value in enumerate(fn(read, read)):
                out[g * GROUP + k] = value
        return out

    def see_all(self, read: Reader, n: int, check: Callable[[], None] = lambda: None) -> None:
        """`see` n states (slot j read by `read(j)`), CHUNK at a time."""
        for lo in range(0, n, CHUNK):
            part = slice(lo, min(n, lo + CHUNK))
            self.see(self.values(_sliced(read, part), part.stop - lo), check)

    def see(self, values: np.ndarray, check: Callable[[], None] = lambda: None) -> None:
        """Drop every candidate one of these states (columns of `values`) falsifies;
        `check` is called between guards (the deadline's seam)."""
        self.states += values.shape[1]
        self.units &= values.all(axis=1)
        packed_false = np.packbits(~values, axis=1)
        packed = np.packbits(values, axis=1)
        if self.keep:  # padding bits are 0: no literal holds there, so no cube matches
            self._kept.append(packed)
            self._reached = None
        for row, g in enumerate(self.guards):
            alive = np.flatnonzero(self.clauses[row])
            if not len(alive):
                continue
            check()
            broken = (packed_false[alive] & packed[g]).any(axis=1)
            self.clauses[row, alive[broken]] = False

    def not_falsified(self) -> int:
        """How many candidates no state seen so far falsifies, counted from the bits
        alone (a clause and its contrapositive counted apart): building each one's
        expression can take minutes on a pool of millions, past any deadline."""
        count = int(self.units.sum())
        holds = ~self.units[self.negation[self.guards]]  # guards some state has
        for lo in range(0, len(self.guards), 1024):
            rows = self.clauses[lo:lo + 1024][holds[lo:lo + 1024]]
            count += int((rows & ~self.units).sum())
        return count

    def candidates(self) -> list[Candidate]:
        """The surviving candidates, in order: literals, then clauses by guard. A clause
        is left out when a literal alone already says it (its conclusion, or its guard's
        negation, holds everywhere) or when it is another clause written the other way
        round (`Implies(g, c)` is `Implies(Not(c), Not(g))`)."""
        neg = self.negation
        out = [self.clause((int(j),)) for j in np.flatnonzero(self.units)]
        seen: set[tuple[int, int]] = set()
        for row, g in enumerate(self.guards):
            if self.units[neg[g]]:
                continue  # the guard never holds
            for c in np.flatnonzero(self.clauses[row] & ~self.units):
                key = (min(int(neg[g]), int(c)), max(int(neg[g]), int(c)))
                if key not in seen:
                    seen.add(key)
                    out.append(self.clause((int(neg[g]), int(c))))
        return out

    def clause(self, lits: tuple[int, ...]) -> Candidate:
        """The disjunction of these literals, written `Implies(And(not the first ones),
        the last)`."""
        last = self.literals[lits[-1]]
        if len(lits) == 1:
            return Candidate(last.expr, last.source, lits)
        negated = [self.literals[int(self.negation[j])] for j in lits[:-1]]
        text = negated[0].source if len(negated) == 1 else \
            f"And({', '.join(n.source for n in negated)})"
        return Candidate(E.Implies(E.And(*[n.expr for n in negated]), last.expr),
                         f"Implies({text}, {last.source})", lits)

    def generalize(self, state_values: np.ndarray) -> Candidate | None:
        """A clause false in one state (`state_values`: every literal's value there) and
        true in every state judged: the negation of a small set of the literals true
        there that no judged state has all of (chosen greedily, each ruling out the most
        judged states still matching, then made minimal). None if some judged state has
        all of them (the state was judged: it is reachable)."""
        reached = self._reached_bits()
        cube = np.flatnonzero(state_values)
        counts = self._counts[cube].copy()
        chosen: list[int] = []
        columns = np.arange(reached.shape[1])  # the bytes some matching state is in
        match = np.full(len(columns), 0xFF, dtype=np.uint8)
        while len(columns):
            counts[np.isin(cube, chosen)] = np.iinfo(np.int64).max
            best = int(cube[int(np.argmin(counts))])
            if best in chosen:
                return None  # every literal of the state chosen: a judged state is it
            chosen.append(best)
            match &= reached[best, columns]
            keep = match != 0
            columns, match = columns[keep], match[keep]
            if len(columns):
                rows = reached[np.ix_(cube, columns)] & match
                counts = np.bitwise_count(rows).sum(axis=1, dtype=np.int64)
        for j in list(chosen):  # minimal: without any one, some judged state matches
            rest = [k for k in chosen if k != j]
            if rest and not np.bitwise_and.reduce(reached[rest], axis=0).any():
                chosen = rest
        return self.clause(tuple(sorted(int(self.negation[j]) for j in chosen)))

    def _reached_bits(self) -> np.ndarray:
        if not self.keep:
            raise ValueError("generalize needs a pool that keeps the states it judged")
        if self._reached is None:
            self._reached = np.concatenate(self._kept, axis=1) if self._kept else \
                np.zeros((len(self.literals), 0), dtype=np.uint8)
            self._kept = [self._reached]
            self._counts = np.bitwise_count(self._reached).sum(axis=1, dtype=np.int64)
        return self._reached


def _sliced(read: Reader, part: slice) -> Reader:
    return lambda j: read(j)[part]


class Judge:
    """Judges candidates on states from their literals' values: their clauses as one
    index array (a row each, padded with a literal false everywhere), built once and
    grown as candidates are added, since a search judges the same ones every round."""

    def __init__(self, cands: list[Candidate]):
        self.index = np.zeros((0, 1), dtype=np.int64)
        self.add(cands)

    def add(self, cands: list[Candidate]) -> None:
        width = max([self.index.shape[1], *(len(c.clause) for c in cands)])
        rows = np.full((len(cands), width), -1, dtype=np.int64)
        for i, c in enumerate(cands):
            rows[i, :len(c.clause)] = c.clause
        if width > self.index.shape[1]:
            pad = np.full((len(self.index), width - self.index.shape[1]), -1, dtype=np.int64)
            self.index = np.hstack([self.index, pad])
        self.index = np.vstack([self.index, rows])

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Each candidate's value in each state (`values`: literals x states): a
        (candidates, states) boolean array."""
        padded = np.vstack([values, np.zeros((1, values.shape[1]), dtype=bool)])
        return np.asarray(padded[self.index].any(axis=1))  # -1: the padding row


def judge(cands: list[Candidate], values: np.ndarray) -> np.ndarray:
    """Each candidate's value in each state, from the literals' `values` (literals, n):
    a (candidates, n) boolean array."""
    return Judge(cands)(values)
