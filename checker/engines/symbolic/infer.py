"""Lemma inference: templates, filtered by reachable states, then a Houdini fixpoint.

1. *Candidates* come from templates over the machine's slots: comparisons
   (`<`, `<=`, `==`) between integer slots whose ranges overlap (array
   elements of the same kind included), each alone and under a guard "enum slot
   = member" or "bool slot is true/false".
2. *Filtering*: every candidate that some reachable state falsifies is dropped.
   States come from the BFS engine (each level, through `BfsOptions.on_level`)
   or, for models too big to exhaust, from seeded random walks. Candidates are
   evaluated in batches by the NumPy backend.
3. *Houdini* (Flanagan and Leino): assume every remaining candidate and the
   invariants in s0, take one step, and ask Z3 for a successor falsifying one.
   The falsified ones are dropped and the query repeated until none is: the
   survivors are then mutually inductive, hence true in every reachable state
   (they all hold initially). Invariants take part as candidates that may fall:
   if one does, the candidates cannot prove it.

A reachable-state filter is cheap and removes most candidates; Houdini is what
turns "true so far" into "inductive". The survivors that a proof needs are then
found by `prove`'s unsat cores and printed as spec source.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import z3

from checker.backends.scalar import ScalarMachine
from checker.backends.vector import compile_batch, dtype_for, slot_reader
from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import UNKNOWN
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.induction import PROVED, ProofResult, ProveOptions, prove
from checker.engines.symbolic.source import lemma_block
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError, EvalError
from checker.lang import expr as E
from checker.lang.expr import BOOL, INT, EnumType, Expr
from checker.lang.machine import Machine, Property, Slot
from checker.progress import Heartbeat, Progress, Ticker

GROUP = 64  # candidates compiled and evaluated together (bounds memory per level)
FILTER_PHASE = "the reachable-state filter"
PRUNE_PHASE = "dropping implied lemmas"


@dataclass(frozen=True)
class Candidate:
    expr: Expr
    source: str  # the predicate as spec source, over the state `s`


@dataclass
class InferOptions:
    max_states: int = 2_000_000  # more reachable states than this: use random walks
    walks: int = 2000
    walk_steps: int = 60
    seed: int = 0
    timeout: float | None = None  # seconds for the whole search; None: no limit
    started: float | None = None  # time.perf_counter() the timeout counts from; None: the call
    progress: Callable[[str], None] | None = None
    spec_lemmas: bool = False  # start Houdini from the spec's own lemmas too


@dataclass
class InferResult:
    candidates: int
    after_states: int
    survivors: list[Candidate]
    states: int  # reachable states the candidates were tested on
    sampled: bool  # True if the states came from random walks, not every reachable one
    proves: bool  # the invariants are inductive together with the survivors
    needed: list[Candidate] = field(default_factory=list)  # a minimal set the proof needs
    others: list[Candidate] = field(default_factory=list)  # survivors it does not need
    implied: int = 0  # survivors dropped because the others (and the invariants) imply them
    dropped_invariants: list[str] = field(default_factory=list)
    houdini_rounds: int = 0
    spec_lemmas_used: list[str] = field(default_factory=list)  # with spec_lemmas
    spec_lemmas_dropped: list[str] = field(default_factory=list)  # not inductive with the rest
    unknown: str | None = None  # why the search stopped before its end (the timeout)
    alive_note: str = ""  # when stopped: what is known of `survivors`, the candidates alive
    unfiltered: bool = False  # stopped in the reachable-state filter: `survivors` is raw
    stats: dict = field(default_factory=dict)


# --- templates ------------------------------------------------------------------------

def _ref(slot: Slot) -> str:
    return f"s.{slot.name}"


def _var(slot: Slot) -> Expr:
    return E.var(slot.index, slot.leaf.sort, slot.lo, slot.hi)


def candidates(machine: Machine) -> list[Candidate]:
    """Every template instance over the machine's slots, in a fixed order."""
    ints = [s for s in machine.slots if s.leaf.sort == INT]
    comparisons: list[Candidate] = []
    for i, a in enumerate(ints):
        for b in ints[i + 1:]:
            if a.hi < b.lo or b.hi < a.lo:
                continue  # never comparable: different kinds of number
            va, vb = _var(a), _var(b)
            for expr, text in ((E.lt(va, vb), f"{_ref(a)} < {_ref(b)}"),
                               (E.le(va, vb), f"{_ref(a)} <= {_ref(b)}"),
                               (E.eq(va, vb), f"{_ref(a)} == {_ref(b)}"),
                               (E.lt(vb, va), f"{_ref(b)} < {_ref(a)}"),
                               (E.le(vb, va), f"{_ref(b)} <= {_ref(a)}")):
                if not expr.is_const:
                    comparisons.append(Candidate(expr, text))
    for a in ints:  # against the slot's own bounds: sentinels, room left in a buffer
        va = _var(a)
        for expr, text in ((E.eq(va, a.lo), f"{_ref(a)} == {a.lo}"),
                           (E.lt(a.lo, va), f"{_ref(a)} > {a.lo}"),
                           (E.lt(va, a.hi), f"{_ref(a)} < {a.hi}")):
            if not expr.is_const:
                comparisons.append(Candidate(expr, text))
    guards: list[tuple[Expr, str]] = []
    for s in machine.slots:
        if isinstance(s.leaf.sort, EnumType):
            for member in s.leaf.sort:
                guards.append((E.eq(_var(s), member), f"{_ref(s)} == {s.leaf.sort.name}."
                                                      f"{member.member}"))
        elif s.leaf.sort == BOOL:
            guards.append((_var(s), _ref(s)))
            guards.append((E.Not(_var(s)), f"Not({_ref(s)})"))
    out = list(comparisons)
    for g, gtext in guards:
        out += [Candidate(E.Implies(g, c.expr), f"Implies({gtext}, {c.source})")
                for c in comparisons]
    return out


# --- filtering by reachable states ---------------------------------------------------

class _Filter:
    """Candidates still true in every state seen so far. Compiling and judging a group
    of candidates is the unit of work the deadline interrupts."""

    def __init__(self, machine: Machine, cands: list[Candidate],
                 deadline: Deadline | None = None):
        self.cands = cands
        self.deadline = deadline or Deadline(None)
        self.alive = np.ones(len(cands), dtype=bool)
        self.groups = [list(range(lo, min(lo + GROUP, len(cands))))
                       for lo in range(0, len(cands), GROUP)]
        self._fns: dict[int, Callable] = {}
        self._bools = {s.index for s in machine.slots if s.leaf.sort == BOOL}
        self.states = 0

    def see(self, read: Callable[[int], np.ndarray], n: int) -> list[int]:
        """Judge n states (slot j read by `read(j)`); returns the candidates that fell."""
        self.states += n
        fell = []
        for g, members in enumerate(self.groups):
            live = [i for i in members if self.alive[i]]
            if not live:
                continue
            self.deadline.check()
            fn = self._fns.get(g)
            if fn is None:
                exprs = [self.cands[i].expr for i in members]
                fn = self._fns[g] = compile_batch(exprs, dtype_for(exprs), f"cands_{g}")
            outs = fn(read, read)
            for i, out in zip(members, outs, strict=True):
                if self.alive[i] and not np.all(out):
                    self.alive[i] = False
                    fell.append(i)
        return fell

    def see_rows(self, states: list[tuple[int, ...]] | np.ndarray) -> list[int]:
        """Judge concrete states, one per row."""
        rows = np.asarray(states, dtype=np.int64)
        return self.see(slot_reader(rows, self._bools, np.dtype(np.int64)), len(rows))


class FilterStopped(OutOfTime):
    """The deadline passed in the reachable-state filter: `alive` hold in the states seen."""

    def __init__(self, phase: str, alive: list[Candidate], states: int):
        super().__init__(phase)
        self.alive, self.states = alive, states


class HoudiniStopped(OutOfTime):
    """The deadline passed in Houdini round `rounds + 1`: `alive` (names) still stand."""

    def __init__(self, phase: str, alive: list[str], rounds: int):
        super().__init__(phase)
        self.alive, self.rounds = alive, rounds


@dataclass
class Reachable:
    """The template candidates that hold in every state seen."""

    total: int  # candidates from templates
    kept: list[Candidate]
    states: int
    sampled: bool  # states from random walks, not every reachable one


def reachable_candidates(machine: Machine, options: InferOptions,
                         deadline: Deadline | None = None) -> Reachable:
    """Template candidates, minus those some reachable state falsifies: every BFS
    level, or seeded random walks when there are more than `max_states` states. Raises
    FilterStopped when the deadline passes."""
    deadline = deadline or Deadline(options.timeout, options.started)
    deadline.check(FILTER_PHASE)
    cands = candidates(machine)
    filt = _Filter(machine, cands, deadline)
    try:
        return _filter(machine, options, deadline, cands, filt)
    except FilterStopped:
        raise
    except OutOfTime as out:
        raise FilterStopped(out.phase, [c for c, a in zip(cands, filt.alive, strict=True) if a],
                            filt.states) from None


def _filter(machine: Machine, options: InferOptions, deadline: Deadline,
            cands: list[Candidate], filt: _Filter) -> Reachable:
    say = options.progress or (lambda line: None)
    say(f"{len(cands):,} candidates from templates")

    class _TooBig(Exception):
        pass

    def on_level(read: Callable[[int], np.ndarray], n: int) -> None:
        if filt.states + n > options.max_states:
            raise _TooBig
        filt.see(read, n)

    sampled = False
    try:
        deadline.check(FILTER_PHASE)
        result = check(machine, BfsOptions(deadlock=False, on_level=on_level,
                                           progress=options.progress, timeout=deadline.left()))
        if result.outcome == UNKNOWN:  # the BFS's own stop at what was left of the deadline
            raise OutOfTime(FILTER_PHASE)
        if result.violation is not None:
            raise CheckerError(f"infer: the model violates {result.violation.name} "
                               f"(see `ctmc check`); lemmas are inferred for models that hold")
    except _TooBig:
        sampled = True
        filt = _Filter(machine, cands, deadline)
        say(f"more than {options.max_states:,} reachable states: {options.walks:,} random "
            "walks instead")
        try:
            filt.see_rows(_walk_states(machine, options, deadline))
        except OutOfTime as out:  # no walk state judged yet: only the templates are known
            raise FilterStopped(out.phase, list(cands), 0) from None
    say(f"{int(filt.alive.sum()):,} candidates hold in {filt.states:,} "
        f"{'sampled' if sampled else 'reachable'} states")
    kept = [c for c, a in zip(cands, filt.alive, strict=True) if a]
    return Reachable(len(cands), kept, filt.states, sampled)


def as_properties(kept: list[Candidate]) -> list[Property]:
    """Candidates as the lemmas Houdini and `prove` work on, named Inferred0, 1, ..."""
    return [Property(f"Inferred{i}", c.expr, c.source) for i, c in enumerate(kept)]


def _walk_states(machine: Machine, options: InferOptions, deadline: Deadline) -> np.ndarray:
    """States of seeded random walks, as an (n, slots) array."""
    rng = random.Random(options.seed)
    scalar = ScalarMachine(machine)
    inits = [s for s in machine.init_states if scalar.within_constraints(s)]
    seen: dict[tuple[int, ...], None] = {}
    ticker = Ticker(options.progress, lambda n: f"random walks: {n:,} of {options.walks:,}")
    for _ in range(options.walks):
        deadline.check(FILTER_PHASE)
        ticker.tick()
        state = rng.choice(inits)
        seen.setdefault(state, None)
        for _ in range(options.walk_steps):
            succ = [t for _, t in scalar.successors(state) if scalar.within_constraints(t)]
            if not succ:
                break
            state = rng.choice(succ)
            seen.setdefault(state, None)
    return np.array(list(seen), dtype=np.int64)


# --- Houdini --------------------------------------------------------------------------

NO_ERROR = "(no action errs)"
EXPANSION = 2000  # states run from each Houdini counterexample's first state


def houdini(machine: Machine, props: list[Property], deadline: Deadline | None,
            progress: Callable[[str], None] | None,
            expand: int = EXPANSION) -> tuple[set[str], int]:
    """The largest subset of `props` that is inductive with one step, with the
    invariants, the step invariants and "no action errs" as members that may fall
    like any candidate: returns (surviving names, rounds).

    Each counterexample Z3 returns has a first state satisfying every member still
    alive. Every state reachable from it then satisfies the greatest inductive
    subset, so whatever falls in any of them (up to `expand` states, run by the
    scalar backend and judged in NumPy batches) is dropped in the same round: the
    result is the same fixpoint, in fewer solver calls. Raises HoudiniStopped, with
    the members still alive, when the deadline passes."""
    deadline = deadline or Deadline(None)
    deadline.check("Houdini")
    u = Unrolling(machine, deadline=deadline)
    solver = new_solver()
    solver.add(u.admissible(0), u.step(0), u.enc.domain(u.state(1)))
    pool = machine.invariants + props
    pre = {p.name: u.prop_holds(p, 0) for p in pool}
    post = {p.name: u.prop_holds(p, 1) for p in pool}
    pre[NO_ERROR], post[NO_ERROR] = u.no_error(0), u.no_error(1)
    steps = {p.name: u.step_prop_holds(p, 1) for p in machine.step_invariants}
    lits = {name: z3.Bool(f"cand:{name}") for name in pre}
    for name, term in pre.items():
        solver.add(z3.Implies(lits[name], term))
    explored = u.explored(1)
    concrete = _Concrete(machine, pool)
    alive = list(steps) + list(pre)
    rounds = 0
    try:
        while True:
            rounds += 1
            goal = z3.And(*[steps[n] for n in alive if n in steps],
                          z3.Implies(explored, z3.And([post[n] for n in alive if n in post])))
            solver.push()
            solver.add(z3.Not(goal))
            with Heartbeat(progress, f"houdini round {rounds:>3} | solving, "
                                     f"{len(alive):,} alive"):
                answer = deadline.solve(solver, f"Houdini round {rounds}",
                                        *[lits[n] for n in alive if n in lits])
            if answer == z3.unknown:
                raise CheckerError(f"infer: the solver gave up during Houdini "
                                   f"({solver.reason_unknown()})")
            if answer == z3.unsat:
                solver.pop()
                return set(alive), rounds
            model = solver.model()
            on = z3.is_true(model.eval(explored, model_completion=True))
            fell = {n for n in alive if z3.is_false(model.eval(
                steps[n] if n in steps else post[n], model_completion=True))
                and (n in steps or on)}
            solver.pop()
            start = u.decode(model, 0)[0]
            fell |= concrete.falls_from(start, set(alive) - fell, expand, deadline)
            alive = [n for n in alive if n not in fell]
            if progress:
                named = ", ".join(sorted(n for n in fell if not n.startswith("Inferred")))
                progress(f"houdini round {rounds:>3} | dropped {len(fell):>5} | "
                         f"{len(alive):>5} left" + (f" | fell: {named}" if named else ""))
    except OutOfTime as out:  # what fell in the unfinished round has not been dropped
        raise HoudiniStopped(out.phase, alive, rounds - 1) from None


class _Concrete:
    """Runs the states reachable from one state and says which members fall there."""

    def __init__(self, machine: Machine, pool: list[Property]):
        self.scalar = ScalarMachine(machine)
        self.actions = machine.actions
        self.names = [p.name for p in pool]
        self.filter = _Filter(machine, [Candidate(p.expr, p.name) for p in pool])

    def falls_from(self, start: tuple[int, ...], alive: set[str], budget: int,
                   deadline: Deadline) -> set[str]:
        """Members of `alive` some state (or step) reachable from `start` falsifies,
        exploring breadth-first up to `budget` states (fewer when the deadline passes:
        what fell so far is as true). `start` must satisfy all of `alive`."""
        fell: set[str] = set()
        self.filter.alive[:] = [n in alive for n in self.names]
        seen, frontier = {start}, [start]
        while frontier and len(seen) < budget and not deadline.expired():
            level = []
            for state in frontier:
                for action in self.actions:
                    try:
                        nxt = self.scalar.step(state, action)
                        if nxt is None:
                            continue
                        fell.update(n for n in self.scalar.violated_step_invariants(state, nxt)
                                    if n in alive)
                        if nxt not in seen and self.scalar.within_constraints(nxt):
                            seen.add(nxt)
                            level.append(nxt)
                    except EvalError:
                        fell.add(NO_ERROR)  # an action or property errs from a reachable state
            if level:
                fell.update(self.names[i] for i in self.filter.see_rows(level))
            frontier = level
        return fell & alive


# --- the whole pipeline ---------------------------------------------------------------

def infer(machine: Machine, options: InferOptions) -> InferResult:
    """Candidates -> reachable-state filter -> Houdini -> drop what the others imply ->
    the minimal set a proof needs, and the rest. `options.timeout` bounds all of it
    (one `Deadline`); running out leaves `unknown` set and `proves` False, with what
    was established by then: the Houdini survivors, once Houdini has finished."""
    refuse_unchecked(machine, "infer")
    deadline = Deadline(options.timeout, options.started)
    out = InferResult(0, 0, [], 0, False, proves=False)
    try:
        _infer(machine, options, deadline, out)
    except OutOfTime as stopped:
        out.proves = False
        out.unknown = deadline.describe(stopped.phase)
    out.stats["seconds"] = round(deadline.spent(), 3)
    return out


def _infer(machine: Machine, options: InferOptions, deadline: Deadline,
           out: InferResult) -> None:
    """`infer`'s stages, filling `out` as each one finishes."""
    say = options.progress or (lambda line: None)
    prove_options = ProveOptions(k=1, progress=options.progress)
    if options.spec_lemmas and machine.lemmas:
        enough = _prove(machine, prove_options, deadline, "the proof with the spec's lemmas")
        if enough.outcome == PROVED:  # nothing is missing: no search needed
            say("the spec's lemmas already prove every invariant")
            out.proves, out.spec_lemmas_used = True, enough.lemmas_used
            return
    try:
        found = reachable_candidates(machine, options, deadline)
    except FilterStopped as stop:
        out.survivors = stop.alive
        out.alive_note = (f"true in the {stop.states:,} state{'s' if stop.states != 1 else ''}"
                          f" seen so far (the filter had not finished), not yet checked for "
                          f"induction")
        out.unfiltered = True
        raise
    out.candidates, out.after_states = found.total, len(found.kept)
    out.states, out.sampled = found.states, found.sampled
    kept = found.kept
    own = list(machine.lemmas) if options.spec_lemmas else []
    inferred = as_properties(kept)
    t0 = time.perf_counter()
    try:
        alive, rounds = houdini(machine, own + inferred, deadline, options.progress)
    except HoudiniStopped as stop:
        standing = set(stop.alive)
        out.survivors = [c for p, c in zip(inferred, kept, strict=True) if p.name in standing]
        out.alive_note = (f"true in every state seen and not yet dropped after "
                          f"{stop.rounds} Houdini rounds; not known to be inductive")
        raise
    except OutOfTime:
        out.survivors = kept
        out.alive_note = "true in every state seen; Houdini had not yet started"
        raise
    out.stats["houdini_seconds"] = round(time.perf_counter() - t0, 3)
    survivors = [(p, c) for p, c in zip(inferred, kept, strict=True) if p.name in alive]
    own_alive = [p for p in own if p.name in alive]
    out.survivors, out.houdini_rounds = [c for _, c in survivors], rounds
    out.alive_note = (f"inductive after {rounds} Houdini rounds; whether they prove the "
                      f"invariants is not known")
    out.dropped_invariants = [n for n in [p.name for p in machine.invariants
                                          + machine.step_invariants] + [NO_ERROR]
                              if n not in alive]
    out.spec_lemmas_dropped = [p.name for p in own if p.name not in alive]
    independent = drop_implied(machine, survivors, own_alive, options.progress, deadline)
    out.survivors = [c for _, c in independent]
    out.implied = len(survivors) - len(independent)
    if out.dropped_invariants:
        return
    lemmas = own_alive + [p for p, _ in independent]
    proof = _prove(dataclasses.replace(machine, lemmas=lemmas), prove_options, deadline,
                   "the proof with the lemmas found")
    if proof.outcome != PROVED:
        return
    needed = minimal_proof(machine, lemmas, proof.lemmas_used, prove_options, deadline)
    out.proves = True
    out.spec_lemmas_used = [p.name for p in own_alive if p.name in needed]
    out.needed = [c for p, c in independent if p.name in needed]
    out.others = [c for p, c in independent if p.name not in needed]


def _prove(machine: Machine, options: ProveOptions, deadline: Deadline,
           phase: str) -> ProofResult:
    """`prove` within the deadline, which it running out raises (as OutOfTime(phase))."""
    result = prove(machine, options, deadline)
    if result.outcome == UNKNOWN and deadline.ran_out:
        raise OutOfTime(phase)
    return result


def drop_implied(machine: Machine, cands: list[tuple[Property, Candidate]],
                 facts: list[Property], progress: Progress | None,
                 deadline: Deadline | None = None) -> list[tuple[Property, Candidate]]:
    """`cands` without those the others imply, with the invariants and `facts`, in every
    explored state (Z3 decides). Weaker forms are tried first (implications and
    inequalities before equalities), so `x == y` stays and `x <= y` goes."""
    if not cands:
        return []
    deadline = deadline or Deadline(None)
    deadline.check(PRUNE_PHASE)
    u = Unrolling(machine, deadline=deadline)
    solver = new_solver()
    solver.add(u.enc.domain(u.state(0)), u.explored(0))
    for p in machine.invariants + facts:
        solver.add(u.prop_holds(p, 0))
    holds = {p.name: z3.Bool(f"holds:{p.name}") for p, _ in cands}
    fails = {p.name: z3.Bool(f"fails:{p.name}") for p, _ in cands}
    for p, _ in cands:
        term = u.prop_holds(p, 0)
        solver.add(z3.Implies(holds[p.name], term), z3.Implies(fails[p.name], z3.Not(term)))
    alive = {p.name for p, _ in cands}
    ticker = Ticker(progress, lambda n: f"dropping implied lemmas: {n:,} of {len(cands):,} "
                                        f"tried, {len(alive):,} left")
    for p, _ in sorted(cands, key=lambda pc: (_strength(pc[1].source), pc[1].source)):
        ticker.tick()
        others = [holds[n] for n in alive if n != p.name]
        if deadline.solve(solver, PRUNE_PHASE, *others, fails[p.name]) == z3.unsat:
            alive.discard(p.name)  # the others imply it
    return [(p, c) for p, c in cands if p.name in alive]


def _strength(source: str) -> int:
    """0 for an implication, 1 for an inequality, 2 for an equality: weaker goes first."""
    if source.startswith("Implies("):
        return 0
    return 2 if " == " in source else 1


def minimal_proof(machine: Machine, lemmas: list[Property], core: list[str],
                  options: ProveOptions, deadline: Deadline | None = None) -> list[str]:
    """A minimal subset of `core` (lemmas an inductive proof used) that still proves the
    invariants: without any one of those left, the proof fails. Removing a lemma also
    removes a goal (it must be preserved), so a removal can make another one
    unnecessary: deletion passes repeat until none removes anything."""
    needed = list(core)
    deadline = deadline or Deadline(options.timeout, options.started)
    say = options.progress or (lambda line: None)
    quiet = dataclasses.replace(options, progress=None)
    by_name = {p.name: p for p in lemmas}
    passes = 0
    changed = True
    while changed:
        changed, passes = False, passes + 1
        for name in list(needed):
            trial = [by_name[n] for n in needed if n != name]
            if _prove(dataclasses.replace(machine, lemmas=trial), quiet, deadline,
                      "minimising the proof").outcome == PROVED:
                needed.remove(name)
                changed = True
            say(f"minimising the proof: pass {passes}, {len(needed):,} lemmas needed")
    return needed


def as_source(cands: list[Candidate], prefix: str = "Inferred", first: int = 0) -> str:
    """Lemmas as spec source to paste into a build function (`m` is the builder),
    numbered from `first`."""
    return "\n".join(lemma_block(f"{prefix}{i}", "Inferred by ctmc infer.",
                                 f"    return {c.source}\n")
                     for i, c in enumerate(cands, first))
