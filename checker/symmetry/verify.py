"""Checking a scalarset declaration instead of trusting it (`--check-symmetry`).

A declaration is right when every permutation it allows is an automorphism of
the machine: it maps initial states to initial states, the successors of a
state (per action name) to the successors of the permuted state, and leaves
every invariant, lemma, constraint, step invariant and liveness trigger and
goal unchanged. Invariance under the swaps of neighbouring members implies
invariance under the whole group, so only those are tried, on the initial
states, on reachable states (the first levels of a plain search) and on random
in-type states. Random states whose guards or properties read out of range are
left out there: what such a read gives is not specified, so not symmetric.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from checker.backends.vector import BatchFn, compile_batch, dtype_for
from checker.engines.explicit.successors import Kernel
from checker.errors import SpecError
from checker.lang import expr as E
from checker.lang.expr import Expr
from checker.lang.machine import Machine, Scalarset
from checker.packing import U64
from checker.symmetry.canonical import Canonicalizer
from checker.symmetry.group import Element, SymmetryGroup


@dataclass(frozen=True)
class SymmetryReport:
    """What was checked: how many states of each kind, under how many swaps."""

    scalarsets: tuple[str, ...]
    swaps: int
    reachable: int
    random: int

    def describe(self) -> str:
        return (f"symmetry of {', '.join(self.scalarsets)} checked: {self.swaps} swaps of "
                f"neighbouring members on the initial states, {self.reachable:,} reachable "
                f"and {self.random:,} random in-type states")


def check_symmetry(machine: Machine, reachable: int = 2000, random: int = 2000,
                   seed: int = 0) -> SymmetryReport:
    """Raise SpecError naming what breaks the declared symmetry, or say what held."""
    if not machine.scalarsets:
        raise SpecError(f"spec {machine.spec_name} declares no scalarset to check")
    group = SymmetryGroup(machine)
    kernel = Kernel(machine)
    canon = Canonicalizer(group, kernel.layout)
    checker = _Checker(machine, kernel, canon)
    init = kernel.layout.pack_states(machine.init_states)
    samples = [("an initial state", init),
               ("a reachable state", _reachable(kernel, init, reachable)),
               ("a random in-type state", _random_states(machine, kernel, random, seed))]
    compared = {where: len(words[0]) for where, words in samples}
    for element, sset, members in group.generators():
        swap = _Swap(element, sset, members)
        checker.initial_states(init, swap)
        for where, words in samples:
            compared[where] = min(compared[where], checker.same_behaviour(words, swap, where))
    return SymmetryReport(tuple(s.name for s in machine.scalarsets), len(group.generators()),
                          compared["a reachable state"], compared["a random in-type state"])


_VERIFIED: dict[int, weakref.ref[Machine]] = {}  # machines this process has checked


def refuse_a_wrong_declaration(machine: Machine) -> None:
    """What an engine asks before it stores one state per orbit: a declaration that is
    not a symmetry would merge states that behave differently, so a search could say
    "holds" of a property it never checked, or report a trace that does not replay.
    Asked again of the same machine (a front end's preflight, then the run), it is free."""
    seen = _VERIFIED.get(id(machine))
    if seen is not None and seen() is machine:
        return
    try:
        check_symmetry(machine)
    except SpecError as exc:
        raise SpecError(f"{exc}; correct the declaration, or search every state with "
                        "--no-symmetry") from None
    _VERIFIED[id(machine)] = weakref.ref(machine)


@dataclass(frozen=True)
class _Swap:
    """A generator of the group: one scalarset's two neighbouring members exchanged."""

    element: Element
    sset: Scalarset
    members: str


class _Checker:
    def __init__(self, machine: Machine, kernel: Kernel, canon: Canonicalizer):
        self.machine, self.kernel, self.canon = machine, kernel, canon
        self.name_of = {name: i for i, name in enumerate(machine.action_names())}
        self.action_name = np.array([self.name_of[a.name] for a in machine.actions])
        props = machine.invariants + machine.lemmas
        self.state_preds: list[tuple[str, Expr]] = (
            [(f"invariant {p.name}", p.expr) for p in props]
            + [(f"constraint {p.name}", p.expr) for p in machine.constraints]
            + [(f"liveness {p.name} (trigger)", p.trigger) for p in machine.liveness]
            + [(f"liveness {p.name} (goal)", p.goal) for p in machine.liveness
               if not p.goal_is_step])
        self.step_preds: list[tuple[str, Expr]] = (
            [(f"step invariant {p.name}", p.expr) for p in machine.step_invariants]
            + [(f"liveness {p.name} (goal)", p.goal) for p in machine.liveness
               if p.goal_is_step])
        self._state_fn = _compiled([e for _, e in self.state_preds], "symmetry_states")
        self._step_fn = _compiled([e for _, e in self.step_preds], "symmetry_steps")

    def _evaluate(self, fn: BatchFn | None, count: int, before: list[np.ndarray],
                  after: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each predicate's value and definedness per state: two (count, n) arrays."""
        n = len(before[0])
        if fn is None:
            return np.ones((0, n), dtype=bool), np.ones((0, n), dtype=bool)
        rb = self.kernel.reader(before)
        outs = fn(rb, self.kernel.reader(after) if after is not None else rb)
        rows = np.array([np.broadcast_to(np.asarray(o, dtype=bool), (n,)) for o in outs])
        return rows[:count], rows[count:]

    def _broken(self, swap: _Swap, what: str, where: str, reads: list[Expr]) -> SpecError:
        """One line: which scalarset, what its swap changes, and the variables read
        there that its declaration does not mention but could hold or be indexed by
        its members (the usual mistake)."""
        sset = swap.sset
        mentioned = {v for v, _ in sset.index} | set(sset.values)
        suspects = sorted({self.machine.slots[e.slot].var for e in E.walk(reads)
                           if e.op == "var"} - mentioned)
        suspects = [v for v in suspects if self._could_hold(v, sset)]
        hint = (f"; it reads {', '.join(suspects)}, which the declaration does not mention"
                if suspects else "")
        return SpecError(f"spec {self.machine.spec_name}: scalarset {sset.name} is not a "
                         f"symmetry: swapping its {swap.members} changes {what} in {where}"
                         f"{hint}")

    def _could_hold(self, var: str, sset: Scalarset) -> bool:
        """Whether `var` has an int leaf whose range includes every member, or an array
        axis no other scalarset indexes that is long enough to be indexed by them."""
        info = next(v for v in self.machine.vars if v.name == var)
        taken = {axis for other in self.machine.scalarsets for name, axes in other.index
                 if name == var for axis in axes}
        for path, leaf in info.type.leaves():
            if leaf.sort == E.INT and leaf.lo <= min(sset.members) <= max(sset.members) \
                    <= leaf.hi:
                return True
            indices = [i for i in path if isinstance(i, int)]
            if any(i >= max(sset.members) for axis, i in enumerate(indices)
                   if axis not in taken):
                return True
        return False

    def initial_states(self, init: list[np.ndarray], swap: _Swap) -> None:
        moved = self.canon.permute(init, swap.element)
        known = set(zip(*(w.tolist() for w in init), strict=True))
        for i, state in enumerate(zip(*(w.tolist() for w in moved), strict=True)):
            if state not in known:
                var = self._first_difference(init, moved, i)
                raise self._broken(swap, f"the initial state's {var} into one that is "
                                   "not initial", "the initial states", [])

    def _first_difference(self, a: list[np.ndarray], b: list[np.ndarray], i: int) -> str:
        layout = self.kernel.layout
        before = layout.unpack(tuple(int(w[i]) for w in a))
        after = layout.unpack(tuple(int(w[i]) for w in b))
        j = next(k for k, (x, y) in enumerate(zip(before, after, strict=True)) if x != y)
        return self.machine.slots[j].var

    def same_behaviour(self, words: list[np.ndarray], swap: _Swap, where: str) -> int:
        """Properties, successors per action name and step predicates agree on
        `words` and on their images under `element`; returns how many states were
        compared (those whose guards and properties are defined)."""
        if not len(words[0]):
            return 0
        moved = self.canon.permute(words, swap.element)
        k = len(self.state_preds)
        values, defined = self._evaluate(self._state_fn, k, words)
        moved_values, moved_defined = self._evaluate(self._state_fn, k, moved)
        keep = ~(self.kernel.undefined_guards(words) | self.kernel.undefined_guards(moved))
        keep &= defined.all(axis=0) & moved_defined.all(axis=0)
        differs = (values != moved_values)[:, keep].any(axis=1)
        if differs.any():
            what, expr = self.state_preds[int(np.argmax(differs))]
            raise self._broken(swap, what, where, [expr])
        words, moved = [w[keep] for w in words], [w[keep] for w in moved]
        if not len(words[0]):
            return 0
        plain = self.kernel.expand(words, 0, False, reduce=False)
        image = self.kernel.expand(moved, 0, False, reduce=False)
        A = self.kernel.n_actions
        mapped = self.canon.permute(plain.words, swap.element)
        for name, i in self.name_of.items():
            mine = self.action_name[plain.gen % A] == i
            theirs = self.action_name[image.gen % A] == i
            if not _same_rows(plain.gen[mine] // A, [w[mine] for w in mapped],
                              image.gen[theirs] // A, [w[theirs] for w in image.words]):
                effects = [x for a in self.machine.actions if a.name == name
                           for x in [a.guard, *(e for _, e in a.updates)]]
                raise self._broken(swap, f"the successors of action {name}", where, effects)
        parents = plain.gen // A
        before = [w[parents] for w in words]
        moved_before = [w[parents] for w in moved]
        k = len(self.step_preds)
        values, defined = self._evaluate(self._step_fn, k, before, plain.words)
        moved_values, moved_defined = self._evaluate(self._step_fn, k, moved_before, mapped)
        differs = ((values != moved_values) & defined & moved_defined).any(axis=1)
        if differs.any():
            what, expr = self.step_preds[int(np.argmax(differs))]
            raise self._broken(swap, what, where, [expr])
        return len(words[0])


def _compiled(exprs: list[Expr], name: str) -> BatchFn | None:
    """One batch function giving each predicate's value, then each one's definedness."""
    if not exprs:
        return None
    roots = exprs + [E.defined(e) for e in exprs]
    return compile_batch(roots, dtype_for(roots), name)


def _same_rows(parents_a: np.ndarray, words_a: list[np.ndarray], parents_b: np.ndarray,
               words_b: list[np.ndarray]) -> bool:
    """Whether two multisets of (parent, successor words) rows are equal."""
    if len(parents_a) != len(parents_b):
        return False
    a = np.stack([parents_a.astype(U64), *words_a])
    b = np.stack([parents_b.astype(U64), *words_b])
    return bool((a[:, np.lexsort(a[::-1])] == b[:, np.lexsort(b[::-1])]).all())


def _reachable(kernel: Kernel, init: list[np.ndarray], limit: int) -> list[np.ndarray]:
    """Up to `limit` reachable states, breadth first (a plain search's first levels)."""
    seen = np.sort(kernel.layout.fingerprints(init))
    found, frontier = [init], init
    total = len(init[0])
    while total < limit and len(frontier[0]):
        exp = kernel.expand(frontier, 0, False, reduce=False)
        fps = kernel.layout.fingerprints(exp.words)
        _, first = np.unique(fps, return_index=True)
        first = np.sort(first)  # generation order: the plain search's order
        fresh = first[~np.isin(fps[first], seen)][:limit - total]
        seen = np.union1d(seen, fps[fresh])
        frontier = [w[fresh] for w in exp.words]
        found.append(frontier)
        total += len(fresh)
    return [np.concatenate([f[w] for f in found]) for w in range(kernel.layout.n_words)]


def _random_states(machine: Machine, kernel: Kernel, count: int, seed: int
                   ) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    columns = np.stack([rng.integers(s.lo, s.hi + 1, size=count) for s in machine.slots],
                       axis=1)
    return kernel.layout.pack_batch(columns)
