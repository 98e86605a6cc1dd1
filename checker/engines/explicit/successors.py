"""Successors of a batch of packed states, computed with whole-batch NumPy code.

This is the kernel both the local BFS and the Spark engine run. For every
action instance it evaluates the guard on the whole batch, then the updates,
range checks, step invariants and constraints on the enabled lanes only, and
writes successor words by clearing and setting the changed slots' bits.

Step invariants and constraints are specialised per action at build time: the
after-state's variables are replaced by the action's update expressions, so a
property over (before, after) becomes one over `before` alone, and a property
an action cannot affect folds to TRUE and costs nothing.

Every transition carries a generation key `parent_index * n_actions + action`.
Frontiers are sorted by fingerprint, so the smallest key among a state's
generators names its canonical predecessor: smallest parent fingerprint, then
smallest action id. Engines pick counterexamples by the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from checker.backends.vector import BatchFn, Reader, compile_batch, dtype_for
from checker.lang import expr as E
from checker.lang.expr import BOOL, Expr
from checker.lang.machine import ActionInstance, Machine
from checker.packing import U64, Layout, SlotField
from checker.progress import Ticker

_ALL = (1 << 64) - 1  # a uint64's bits, for masks built as Python ints
_REBUILD_SLICE = 1 << 20  # keys `successors_of` groups by action at a time
_WINDOW_BITS = 18  # parents per window `successors_of` reads at once: 2 MB a word


@dataclass
class _ActionProgram:
    """Compiled effects of one action instance and what each output means."""

    action: ActionInstance
    fn: BatchFn
    update_slots: list[int]
    n_checks: int  # outputs after the updates that must be TRUE, else an evaluation error
    step_props: list[int]  # step invariant index for each following output
    n_constraints: int
    roots: list[Expr]
    dtype: np.dtype
    _updates_fn: BatchFn | None = None

    def updates(self) -> BatchFn:
        """The updates alone, compiled on first use: a rebuild of successors already
        checked (`Kernel.successors_of`) need not evaluate the checks again."""
        if self._updates_fn is None:
            self._updates_fn = compile_batch(self.roots[:len(self.update_slots)], self.dtype,
                                             f"updates_{self.action.id}")
        return self._updates_fn


@dataclass
class Expansion:
    """Successors of one batch, in generation order, plus what was observed."""

    words: list[np.ndarray]
    gen: np.ndarray  # int64 generation keys
    enabled: np.ndarray  # per action instance: lanes where its guard held
    deadlocked: np.ndarray  # parent lanes with no enabled action
    step_violation: tuple[int, int] | None = None  # (gen key, step invariant index), smallest
    error: int | None = None  # smallest gen key whose evaluation failed
    guard_error: int | None = None  # smallest parent lane whose guard read out of range
    moved: int = 0  # successors the canonical form mapped to another state of their orbit


class Kernel:
    """A Machine compiled for batches of packed states."""

    def __init__(self, machine: Machine, progress: Callable[[str], None] | None = None):
        """`progress` hears how far compiling is, when a big machine takes a while."""
        self.machine = machine
        self.layout = Layout(machine)
        self.n_actions = len(machine.actions)
        # maps a batch's successor words to their orbit representatives, when the
        # engine reduces by symmetry (`checker.symmetry`)
        self.canonical: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
        self.bool_slots = {s.index for s in machine.slots if s.leaf.sort == BOOL}
        guards = [a.guard for a in machine.actions]
        guard_defs = [E.defined(g) for g in guards]
        self._guard_def_idx = [i for i, d in enumerate(guard_defs) if not d.is_const]
        ticker = Ticker(progress, lambda k: f"compiling {machine.spec_name} for NumPy: {k:,} "
                                            f"of {2 * len(machine.actions):,} steps")
        programs_roots = []
        for a in machine.actions:
            programs_roots.append(self._effect_roots(a))
            ticker.tick()
        props = machine.invariants + machine.lemmas
        inv_roots = [p.expr for p in props] + [E.defined(p.expr) for p in props]
        all_roots = guards + guard_defs + inv_roots + [r for roots, _ in programs_roots
                                                       for r in roots]
        self.dtype = dtype_for(all_roots)
        self._guards = compile_batch(guards + [guard_defs[i] for i in self._guard_def_idx],
                                     self.dtype, "guards")
        self._programs = []
        for a, (roots, meta) in zip(machine.actions, programs_roots, strict=True):
            self._programs.append(
                _ActionProgram(a, compile_batch(roots, self.dtype, f"effects_{a.id}"), *meta,
                               roots, self.dtype))
            ticker.tick()
        self.property_names = [p.name for p in props]
        self._invariants = compile_batch(inv_roots, self.dtype, "invariants")

    # -- building ----------------------------------------------------------
    def _effect_roots(self, a: ActionInstance
                      ) -> tuple[list[Expr], tuple[list[int], int, list[int], int]]:
        m = self.machine
        updates = dict(a.updates)
        base = {s.index: E.var(s.index, s.leaf.sort, s.lo, s.hi) for s in m.slots}

        def after(v: Expr) -> Expr | None:
            if v.frame == 1:
                return updates.get(v.slot, base[v.slot])
            return None

        def successor(v: Expr) -> Expr | None:
            return updates.get(v.slot) if v.frame == 0 else None

        checks: list[Expr] = []
        for slot, e in a.updates:
            s = m.slots[slot]
            checks.append(E.defined(e))
            if e.sort == E.INT:  # bool and enum expressions stay in range by construction
                checks.append(E.And(E.le(s.lo, e), E.le(e, s.hi)))
        checks += [check.cond for check in a.write_checks]
        steps = [E.substitute(p.expr, after) for p in m.step_invariants]
        constraints = [E.substitute(p.expr, successor) for p in m.constraints]
        checks += [E.defined(x) for x in steps + constraints]
        checks = [c for c in checks if not (c.is_const and c.value)]
        live_steps = [(i, x) for i, x in enumerate(steps) if not (x.is_const and x.value)]
        roots = ([e for _, e in a.updates] + checks + [x for _, x in live_steps] + constraints)
        meta = ([slot for slot, _ in a.updates], len(checks), [i for i, _ in live_steps],
                len(constraints))
        return roots, meta

    # -- evaluation -----------------------------------------------------------
    def reader(self, words: list[np.ndarray]) -> Reader:
        cache: dict[int, np.ndarray] = {}
        layout, bools, dtype = self.layout, self.bool_slots, self.dtype

        def read(j: int) -> np.ndarray:
            got = cache.get(j)
            if got is None:
                raw = layout.raw_slot(words, j)
                if j in bools:
                    got = raw.astype(bool)
                else:
                    got = raw.astype(dtype)
                    lo = layout.fields[j].lo
                    if lo:
                        got += dtype.type(lo)
                cache[j] = got
            return got

        return read

    def violated_properties(self, words: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Per state: index of the first violated invariant/lemma (-1 if none), and
        whether evaluating some property read out of range."""
        n = len(words[0])
        k = len(self.property_names)
        if k == 0:
            return np.full(n, -1), np.zeros(n, dtype=bool)
        read = self.reader(words)
        outs = self._invariants(read, read)
        first = np.full(n, -1, dtype=np.int64)
        undefined = np.zeros(n, dtype=bool)
        for i in range(k - 1, -1, -1):
            ok = np.broadcast_to(outs[i], (n,))
            first[~ok] = i
            undefined |= ~np.broadcast_to(outs[k + i], (n,))
        return first, undefined

    def undefined_guards(self, words: list[np.ndarray]) -> np.ndarray:
        """Per state: whether some action's guard reads out of range there."""
        n = len(words[0])
        read = self.reader(words)
        outs = self._guards(read, read)
        bad = np.zeros(n, dtype=bool)
        for pos in range(len(self._guard_def_idx)):
            bad |= ~np.broadcast_to(outs[self.n_actions + pos], (n,))
        return bad

    def expand(self, words: list[np.ndarray], first_parent: int,
               check_deadlock: bool, tick: Callable[[], None] | None = None,
               reduce: bool = True) -> Expansion:
        """Successors of the batch `words`, whose first state is parent number
        `first_parent`, as orbit representatives if `canonical` is set and `reduce`;
        `tick` is called after each action (a machine with thousands of actions spends
        seconds in one batch)."""
        n = len(words[0])
        read = self.reader(words)
        outs = self._guards(read, read)
        A = self.n_actions
        guard_vals = outs[:A]
        succ_words: list[list[np.ndarray]] = [[] for _ in range(self.layout.n_words)]
        gens: list[np.ndarray] = []
        enabled = np.zeros(A, dtype=np.int64)
        any_enabled = np.zeros(n, dtype=bool) if check_deadlock else None
        result = Expansion([], np.empty(0, np.int64), enabled, np.empty(0, np.int64))
        for pos, i in enumerate(self._guard_def_idx):
            bad = ~np.broadcast_to(outs[A + pos], (n,))
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                key = (first_parent + lane) * A + i
                result.guard_error = key if result.guard_error is None else \
                    min(result.guard_error, key)
        for prog, g in zip(self._programs, guard_vals, strict=True):
            if isinstance(g, bool | np.bool_):
                if not g:
                    continue
                idx = np.arange(n)
            else:
                idx = np.flatnonzero(g)
            if any_enabled is not None:
                any_enabled[idx] = True
            enabled[prog.action.id] = len(idx)
            if tick is not None:
                tick()
            if len(idx) == 0:
                continue
            self._apply(prog, words, read, idx, first_parent, result, succ_words, gens)
        if any_enabled is not None:
            result.deadlocked = np.flatnonzero(~any_enabled) + first_parent
        result.words = [np.concatenate(ws) if ws else np.empty(0, U64) for ws in succ_words]
        if self.canonical is not None and reduce and len(result.words[0]):
            canonical = self.canonical(result.words)
            result.moved = int(np.logical_or.reduce(
                [a != b for a, b in zip(canonical, result.words, strict=True)]).sum())
            result.words = canonical
        result.gen = np.concatenate(gens) if gens else np.empty(0, np.int64)
        return result

    def _successor_words(self, prog: _ActionProgram, parents: list[np.ndarray],
                         updates: list) -> list[np.ndarray]:
        """The words of `parents` (gathered: changed in place) after `prog`'s `updates`
        (one value or array per updated slot): per word, the bits the updates clear,
        constant updates' bits (folded into one scalar), and the computed values, each
        shifted into place and or-ed in."""
        layout = self.layout
        clear = [0] * layout.n_words
        const = [0] * layout.n_words
        varied: list[list[tuple[SlotField, np.ndarray]]] = [[] for _ in range(layout.n_words)]
        for slot, value in zip(prog.update_slots, updates, strict=True):
            f = layout.fields[slot]
            if not f.bits:
                continue
            clear[f.word] |= f.mask << f.offset
            if np.ndim(value) == 0:
                const[f.word] |= ((int(value) - f.lo) & f.mask) << f.offset
            else:
                varied[f.word].append((f, value))
        for w, acc in enumerate(parents):
            if clear[w]:
                acc &= U64(~clear[w] & _ALL)
            if const[w]:
                acc |= U64(const[w])
            for f, value in varied[w]:
                part = value.astype(U64)
                if f.lo:
                    part -= U64(f.lo & _ALL)  # modulo 2**64: right for negative bounds too
                if f.offset:
                    part <<= U64(f.offset)
                acc |= part
        return parents

    def successors_of(self, frontier: list[np.ndarray], keys: np.ndarray, batch_size: int,
                      between: Callable[[], None] | None = None) -> list[np.ndarray]:
        """The successors named by generation keys (transitions `expand` gave from
        `frontier`, numbered from its first state), in the keys' order, as orbit
        representatives if `canonical` is set. A search may keep only the keys of a
        level's candidates and rebuild the survivors here, one action per state,
        instead of holding every candidate's words while it deduplicates.

        The keys are taken one window of parents at a time, so only that part of the
        frontier is read at once; `between` is called before each window and after
        the last (a frontier in a file gives back the pages read there)."""
        A = self.n_actions
        window = (keys // A) >> _WINDOW_BITS
        ends = np.cumsum(np.bincount(window)).tolist()
        if len(ends) <= 1 << 16:
            window = window.astype(np.uint16)  # small integers: sorted by radix
        by_window = np.argsort(window, kind="stable")
        del window
        if len(keys) < 1 << 32:
            by_window = by_window.astype(np.uint32)
        out = [np.empty(len(keys), dtype=U64) for _ in range(self.layout.n_words)]
        # slices of a window's keys at a time, each grouped by action: few calls per
        # action, and no temporary the size of the whole level
        step = max(batch_size, _REBUILD_SLICE)
        start = 0
        for end in ends:
            if between is not None:
                between()
            for first in range(start, end, step):
                at_keys = by_window[first:min(first + step, end)]
                part = keys[at_keys]
                actions = (part % A).astype(np.uint16 if A <= 1 << 16 else np.uint32)
                order = np.argsort(actions, kind="stable")  # a radix sort of small integers
                counts = np.bincount(actions, minlength=A)
                at = 0
                for a in np.flatnonzero(counts).tolist():
                    prog = self._programs[a]
                    group = order[at:at + counts[a]]
                    at += counts[a]
                    for lo in range(0, len(group), batch_size):
                        rows = group[lo:lo + batch_size]
                        parents = [w[part[rows] // A] for w in frontier]
                        read = self.reader(parents)
                        updates = prog.updates()(read, read)
                        words = self._successor_words(prog, parents, updates)
                        if self.canonical is not None:
                            words = self.canonical(words)
                        for column, w in zip(out, words, strict=True):
                            column[at_keys[rows]] = w
            start = end
        if between is not None:
            between()
        return out

    def _apply(self, prog: _ActionProgram, words: list[np.ndarray], read: Reader,
               idx: np.ndarray, first_parent: int, result: Expansion,
               succ_words: list[list[np.ndarray]], gens: list[np.ndarray]) -> None:
        m = len(idx)
        if 2 * m > len(words[0]):
            # most lanes are enabled: evaluate on the whole batch and keep the enabled
            # lanes' results, instead of gathering every slot the action reads
            outs = [o if np.ndim(o) == 0 else o[idx] for o in prog.fn(read, read)]
        else:
            cache: dict[int, np.ndarray] = {}

            def sub(j: int) -> np.ndarray:
                got = cache.get(j)
                if got is None:
                    got = read(j)[idx]
                    cache[j] = got
                return got

            outs = prog.fn(sub, sub)
        k_upd = len(prog.update_slots)
        A = self.n_actions
        gen = (idx.astype(np.int64) + first_parent) * A + prog.action.id
        keep = np.ones(m, dtype=bool)
        pos = k_upd
        if prog.n_checks:
            ok = np.ones(m, dtype=bool)
            for c in outs[pos:pos + prog.n_checks]:
                ok &= np.broadcast_to(c, (m,))
            if not ok.all():
                bad_key = int(gen[~ok].min())
                result.error = bad_key if result.error is None else min(result.error, bad_key)
                keep &= ok
            pos += prog.n_checks
        for prop in prog.step_props:
            holds = np.broadcast_to(outs[pos], (m,))
            pos += 1
            bad = keep & ~holds
            if bad.any():
                key = int(gen[bad].min())
                if result.step_violation is None or key < result.step_violation[0]:
                    result.step_violation = (key, prop)
        for c in outs[pos:pos + prog.n_constraints]:
            keep &= np.broadcast_to(c, (m,))
        if not keep.all():
            sel = np.flatnonzero(keep)
            gen = gen[sel]
            outs = [o if np.ndim(o) == 0 else o[sel] for o in outs[:k_upd]]
        else:
            sel = None
        base_idx = idx if sel is None else idx[sel]
        new_words = self._successor_words(prog, [w[base_idx] for w in words], outs[:k_upd])
        for w in range(self.layout.n_words):
            succ_words[w].append(new_words[w])
        gens.append(gen)
