"""Lemma inference: candidates mined from the reachable states, then lemmas chosen
among them (and made from the states) until the invariants are inductive.

1. *Candidates* (`templates`): every literal over the machine's slots and every
   clause of a one-slot guard and a literal, judged against every reachable state
   the BFS engine enumerates (each level, through `BfsOptions.on_level`), or, for
   models too big to exhaust, the states of seeded random walks. Judging is by
   literal, in packed bits, so millions of clauses cost little.
2. *Search*. By default (`cti_search`) from the invariants up: counterexamples to
   induction are asked of Z3, and the candidate ruling out the most is chosen, until
   none is left; a CTI no candidate rules out gets a clause of its own, made from the
   literals true there that no reachable state has all of. With `search="houdini"`,
   the classic fixpoint over every candidate (`houdini`).
3. *Check and shrink*: `prove` (1-induction) checks the lemmas found, apart from the
   search; the lemmas its unsat cores used are kept, and, when they are few, deletion
   passes make the set minimal.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import z3

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.explicit.successors import Kernel
from checker.engines.result import UNKNOWN
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.houdini import NO_ERROR, HoudiniStopped, houdini
from checker.engines.symbolic.induction import PROVED, ProofResult, prove
from checker.engines.symbolic.infer.cti_search import SearchStopped, Stuck, strengthen
from checker.engines.symbolic.infer.orbits import close_under_symmetry
from checker.engines.symbolic.infer.templates import Candidate, Pool
from checker.engines.symbolic.options import ProveOptions
from checker.engines.symbolic.source import first_free_number, lemma_block
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError
from checker.lang.machine import Machine, Property
from checker.progress import Progress, Ticker

FILTER_PHASE = "the reachable-state filter"
PRUNE_PHASE = "dropping implied lemmas"
SEARCHES = ("cti", "houdini")
PREFIX = "Inferred"  # the lemmas found are Inferred0, 1, ... (see InferResult.first)
MINIMISE_AT = 40  # more lemmas than this used by the proof: not made minimal (too slow)
PRUNE_AT = 1000  # Houdini survivors tried for implication by the others, weakest first


@dataclass
class InferOptions:
    max_states: int = 2_000_000  # more reachable states than this: use random walks
    walks: int = 2000
    walk_steps: int = 60
    seed: int = 0
    timeout: float | None = None  # seconds for the whole search; None: no limit
    started: float | None = None  # time.perf_counter() the timeout counts from; None: the call
    progress: Callable[[str], None] | None = None
    spec_lemmas: bool = False  # start from the spec's own lemmas too
    search: str = "cti"  # "cti": from the invariants up; "houdini": the classic fixpoint
    workers: int = 1  # processes sharing the goals of the proof that checks the result


@dataclass
class InferResult:
    candidates: int
    after_states: int
    survivors: list[Candidate]
    states: int  # reachable states the candidates were tested on
    sampled: bool  # True if the states came from random walks, not every reachable one
    proves: bool  # the invariants are inductive together with the survivors
    needed: list[Candidate] = field(default_factory=list)  # the lemmas the proof needs
    others: list[Candidate] = field(default_factory=list)  # survivors it does not need
    minimal: bool = False  # `needed` is minimal: without any one the proof fails
    implied: int = 0  # survivors dropped because the others (and the invariants) imply them
    dropped_invariants: list[str] = field(default_factory=list)
    search: str = "cti"
    rounds: int = 0  # CTI rounds, or Houdini rounds
    made: int = 0  # cti: clauses made from CTIs no template ruled out
    stuck: Stuck | None = None  # cti: a CTI of the invariants nothing ruled out
    spec_lemmas_used: list[str] = field(default_factory=list)  # with spec_lemmas
    spec_lemmas_dropped: list[str] = field(default_factory=list)  # not inductive with the rest
    unknown: str | None = None  # why the search stopped before its end (the timeout)
    alive_note: str = ""  # when stopped: what is known of `survivors`, the candidates alive
    unfiltered: int = 0  # stopped in the reachable-state filter: candidates not yet falsified
    first: int = 0  # the lemmas are Inferred<first>, ...: past every name the spec has
    stats: dict = field(default_factory=dict)


class ModelViolates(CheckerError):
    """The reachable-state filter's BFS found a property violated: there is nothing
    to infer (`name`: the property)."""

    def __init__(self, name: str):
        super().__init__(f"infer: the model violates {name} (see `ctmc check`); lemmas "
                         f"are inferred for models that hold")
        self.name = name


class FilterStopped(OutOfTime):
    """The deadline passed in the reachable-state filter: `alive` candidates (a count:
    they are not built) hold in the `states` seen."""

    def __init__(self, phase: str, alive: int, states: int):
        super().__init__(phase)
        self.alive, self.states = alive, states


# --- candidates judged by reachable states --------------------------------------------

@dataclass
class Reachable:
    """The template candidates that hold in every state seen."""

    total: int  # candidates from templates
    kept: list[Candidate]
    states: int
    sampled: bool  # states from random walks, not every reachable one
    pool: Pool  # the literals, and (kept) their values in every state seen


def reachable_candidates(machine: Machine, options: InferOptions,
                         deadline: Deadline | None = None, source: Machine | None = None,
                         orbits: bool = False) -> Reachable:
    """Template candidates, minus those some reachable state falsifies: every BFS
    level, or seeded random walks when there are more than `max_states` states. Raises
    FilterStopped when the deadline passes.

    The states are `source`'s if given: a machine with the same slots at smaller
    ranges (the proof's member counts with a short clock, say), whose BFS fits where
    `machine`'s does not; `machine`'s own random walks are then judged too, since they
    reach values `source` cannot. With `orbits`, a spec with scalarsets is searched
    one state per orbit and the pool closed under its symmetry (`orbits.py`)."""
    deadline = deadline or Deadline(options.timeout, options.started)
    deadline.check(FILTER_PHASE)
    say = options.progress or (lambda line: None)
    source = source or machine
    if [s.name for s in source.slots] != [s.name for s in machine.slots]:
        raise ValueError("the machine mined must have the slots of the one judged")
    by_orbits = orbits and bool(source.scalarsets)
    pool = Pool(machine, keep=options.search == "cti")
    if by_orbits and pool.keep:
        raise ValueError("a pool judged on orbit representatives cannot generalize")
    say(f"{len(pool.literals):,} literals, {pool.total:,} candidates from templates")

    class _TooBig(Exception):
        pass

    def on_level(read: Callable[[int], np.ndarray], n: int) -> None:
        if pool.states + n > options.max_states:
            raise _TooBig
        pool.see_all(read, n, lambda: deadline.check(FILTER_PHASE))

    sampled = False
    try:
        try:
            result = check(source, BfsOptions(deadlock=False, on_level=on_level,
                                              symmetry=by_orbits, progress=options.progress,
                                              timeout=deadline.left()))
            if result.outcome == UNKNOWN:  # the BFS's own stop at what was left of it
                raise OutOfTime(FILTER_PHASE)
            if result.violation is not None:
                raise ModelViolates(result.violation.name)
            if by_orbits:
                close_under_symmetry(pool, source)
                say(f"{pool.not_falsified():,} candidates hold in every image of "
                    f"{pool.states:,} orbits' representatives")
        except _TooBig:
            sampled = True
            pool = Pool(machine, keep=options.search == "cti")
            say(f"more than {options.max_states:,} reachable states: {options.walks:,} "
                "random walks instead")
            read, n = _walk_states(source, options, deadline)
            pool.see_all(read, n, lambda: deadline.check(FILTER_PHASE))
        if source is not machine:
            sampled = True
            say(f"and {options.walks:,} random walks at the full sizes")
            read, n = _walk_states(machine, options, deadline)
            pool.see_all(read, n, lambda: deadline.check(FILTER_PHASE))
    except OutOfTime as out:
        raise FilterStopped(out.phase, pool.not_falsified(), pool.states) from None
    kept = pool.candidates()
    say(f"{len(kept):,} candidates hold in {pool.states:,} "
        f"{'sampled' if sampled else 'reachable'} states")
    return Reachable(pool.total, kept, pool.states, sampled, pool)


def as_properties(kept: list[Candidate], first: int = 0) -> list[Property]:
    """Candidates as the lemmas Houdini and `prove` work on, named Inferred<first>,
    and on (`InferResult.first`: no name of the spec's)."""
    return [Property(f"{PREFIX}{i}", c.expr, c.source) for i, c in enumerate(kept, first)]


def _walk_states(machine: Machine, options: InferOptions, deadline: Deadline
                 ) -> tuple[Callable[[int], np.ndarray], int]:
    """The distinct states of `options.walks` seeded random walks of `walk_steps`
    steps, all taken together a step at a time by the explicit engine's kernel (each
    walk moves to one of its state's successors, drawn uniformly; a walk with none
    ends): a reader of their slots, and how many there are."""
    rng = np.random.default_rng(options.seed)
    kernel = Kernel(machine)
    scalar = ScalarMachine(machine)
    inits = kernel.layout.pack_states([s for s in machine.init_states
                                       if scalar.within_constraints(s)])
    walkers = [w[rng.integers(len(inits[0]), size=options.walks)] for w in inits]
    seen = [list(inits)]
    ticker = Ticker(options.progress, lambda n: f"random walks: step {n:,} of "
                                                f"{options.walk_steps:,}")
    for _ in range(options.walk_steps):
        deadline.check(FILTER_PHASE)
        ticker.tick()
        exp = kernel.expand(walkers, 0, False)
        if not len(exp.gen):
            break
        parent = exp.gen // kernel.n_actions  # the walk each successor continues
        order = np.argsort(parent, kind="stable")
        counts = np.bincount(parent, minlength=len(walkers[0]))
        going = np.flatnonzero(counts)
        starts = np.concatenate(([0], np.cumsum(counts)))[going]
        chosen = order[starts + (rng.random(len(going)) * counts[going]).astype(np.int64)]
        walkers = [w[chosen] for w in exp.words]
        seen.append(walkers)
    words = [np.concatenate(column) for column in zip(*seen, strict=True)]
    _, first = np.unique(kernel.layout.fingerprints(words), return_index=True)
    words = [w[np.sort(first)] for w in words]
    return kernel.reader(words), len(words[0])


# --- the whole pipeline ---------------------------------------------------------------

def infer(machine: Machine, options: InferOptions) -> InferResult:
    """Candidates -> the search -> `prove` checks the lemmas found -> the ones the proof
    needs, and the rest. `options.timeout` bounds all of it (one `Deadline`); running
    out leaves `unknown` set and `proves` False, with what was established by then."""
    refuse_unchecked(machine, "infer")
    if options.search not in SEARCHES:
        raise CheckerError(f"infer: unknown search {options.search!r} "
                           f"(one of {', '.join(SEARCHES)})")
    deadline = Deadline(options.timeout, options.started)
    out = InferResult(0, 0, [], 0, False, proves=False, search=options.search,
                      first=first_free_number(PREFIX, machine.declared_names()))
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
    prove_options = ProveOptions(k=1, progress=options.progress, workers=options.workers)
    if options.spec_lemmas and machine.lemmas:
        enough = _prove(machine, prove_options, deadline, "the proof with the spec's lemmas")
        if enough.outcome == PROVED:  # nothing is missing: no search needed
            say("the spec's lemmas already prove every invariant")
            out.proves, out.spec_lemmas_used = True, enough.lemmas_used
            return
    try:
        found = reachable_candidates(machine, options, deadline)
    except FilterStopped as stop:
        out.unfiltered = stop.alive
        out.alive_note = (f"true in the {stop.states:,} state{'s' if stop.states != 1 else ''}"
                          f" seen so far (the filter had not finished), not yet checked for "
                          f"induction")
        raise
    out.candidates, out.after_states = found.total, len(found.kept)
    out.states, out.sampled = found.states, found.sampled
    own = list(machine.lemmas) if options.spec_lemmas else []
    t0 = time.perf_counter()
    if options.search == "houdini":
        found_lemmas = _by_houdini(machine, found.kept, own, options, deadline, out)
    else:
        found_lemmas = _by_ctis(machine, found, own, options, deadline, out)
    out.stats["search_seconds"] = round(time.perf_counter() - t0, 3)
    if found_lemmas is None:
        return
    own_alive = [p for p in own if p.name not in out.spec_lemmas_dropped]
    inferred = as_properties(found_lemmas, out.first)
    lemmas = own_alive + inferred
    proof = _prove(dataclasses.replace(machine, lemmas=lemmas), prove_options, deadline,
                   "the proof with the lemmas found")
    if proof.outcome != PROVED:
        if not out.dropped_invariants:
            out.dropped_invariants = [f"the invariants (the proof that checks the lemmas "
                                      f"found says: {proof.message})"]
        return
    needed = proof.lemmas_used
    if len(needed) <= MINIMISE_AT:
        needed = minimal_proof(machine, lemmas, needed, prove_options, deadline)
        out.minimal = True
    out.proves = True
    out.spec_lemmas_used = [p.name for p in own_alive if p.name in needed]
    out.needed = [c for p, c in zip(inferred, found_lemmas, strict=True) if p.name in needed]
    out.others = [c for p, c in zip(inferred, found_lemmas, strict=True)
                  if p.name not in needed]


def _by_ctis(machine: Machine, found: Reachable, own: list[Property],
             options: InferOptions, deadline: Deadline,
             out: InferResult) -> list[Candidate] | None:
    """The lemmas the CTI search chose, or None when it could not rule a CTI out."""
    cands = list(found.kept)
    try:
        result = strengthen(machine, found.pool, cands, deadline, options.progress,
                            fixed=own)
    except SearchStopped as stop:
        out.survivors, out.rounds = stop.chosen, stop.rounds
        out.made = len(cands) - len(found.kept)
        out.alive_note = (f"chosen in {stop.rounds} rounds of counterexamples to induction, "
                          f"true in every state seen, not yet inductive with the invariants")
        raise
    out.rounds, out.made = result.rounds, len(cands) - len(found.kept)
    out.survivors = result.chosen
    if not result.proves:
        out.stuck = result.stuck
        out.dropped_invariants = [result.stuck.goal] if result.stuck else []
        return None
    out.alive_note = (f"chosen in {result.rounds} rounds, after which Z3 found no "
                      f"counterexample to induction; the proof that checks them had not "
                      f"finished")
    return result.chosen


def _by_houdini(machine: Machine, kept: list[Candidate], own: list[Property],
                options: InferOptions, deadline: Deadline,
                out: InferResult) -> list[Candidate] | None:
    """Houdini's survivors without those the others imply, or None when an invariant
    fell (the candidates cannot prove it)."""
    inferred = as_properties(kept, out.first)
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
    survivors = [(p, c) for p, c in zip(inferred, kept, strict=True) if p.name in alive]
    own_alive = [p for p in own if p.name in alive]
    out.survivors, out.rounds = [c for _, c in survivors], rounds
    out.alive_note = (f"inductive after {rounds} Houdini rounds; whether they prove the "
                      f"invariants is not known")
    out.dropped_invariants = [n for n in [p.name for p in machine.invariants
                                          + machine.step_invariants] + [NO_ERROR]
                              if n not in alive]
    out.spec_lemmas_dropped = [p.name for p in own if p.name not in alive]
    independent = drop_implied(machine, survivors, own_alive, options.progress, deadline)
    out.survivors = [c for _, c in independent]
    out.implied = len(survivors) - len(independent)
    return None if out.dropped_invariants else out.survivors


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
    inequalities before equalities), so `x == y` stays and `x <= y` goes. Only the
    first PRUNE_AT are tried, so pruning stays a small part of the run; the rest stay
    (they are inductive all the same)."""
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
    order = sorted(cands, key=lambda pc: (_strength(pc[1].source), pc[1].source))
    for p, _ in order[:PRUNE_AT]:
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


def as_source(cands: list[Candidate], first: int = 0) -> str:
    """Lemmas as spec source to paste into a build function (`m` is the builder),
    numbered from `first`."""
    return "\n".join(lemma_block(f"{PREFIX}{i}", "Inferred by ctmc infer.",
                                 f"    return {c.source}\n")
                     for i, c in enumerate(cands, first))
