"""`ctmc prove --engine pdr`: IC3/PDR through Z3's Spacer, with no lemmas.

The model becomes constrained Horn clauses over one relation `Reach` on the state
vector, with the same semantics as BMC and BFS (`unroll`):

    init(s) and admissible(s)                                   -> Reach(s)
    Reach(s) and no error from s and step(s, s') and admissible(s') -> Reach(s')
    Reach(s) and not (every invariant holds and no action errs in s)  -> Bad
    Reach(s) and step(s, s') and s' within its types and a step invariant fails -> Bad

Spacer answers whether `Bad` is derivable. Its answers are never taken as they are:

- unsat: the invariant Spacer found for `Reach` (its cover at the last level) is checked
  again with a plain solver: the initial states satisfy it, a step from a state that
  satisfies it (and its types and constraints) keeps it, and it implies every property.
  Only then is the model proved, and the invariant printed as spec source a user can
  paste as lemmas (`source`).
- sat: BMC searches depth by depth for the shortest counterexample, the same trace BFS
  finds (decision 0002), within what is left of the deadline.
- unknown or out of time: inconclusive, never proved.

The spec's lemmas are neither assumed nor checked here: PDR needs none (BFS and
k-induction check them). Seeds are facts proved first and conjoined to the clauses'
bodies, so Spacer looks only for what they lack (the re-check checks its invariant
together with them): with `seed` (`--with-spec-lemmas`) the spec's lemmas and
invariants, with `mine` (`--mine`) the clauses of one or two literals that `infer`'s
templates find true in every reachable state (BFS, or random walks for big models).
Only members that hold in every initial state and survive Houdini together, hence hold
in every reachable state, are seeds. Decision 0026 records the encoding, Spacer's
options and what seeds buy.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import z3

from checker.engines.result import ERROR, UNKNOWN
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.bmc import bmc
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.houdini import NO_ERROR, houdini
from checker.engines.symbolic.induction import COUNTEREXAMPLE, PROVED, ProofResult
from checker.engines.symbolic.infer.pipeline import (
    InferOptions,
    ModelViolates,
    reachable_candidates,
)
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.source import (
    SourceWriter,
    Unwritable,
    first_free_number,
    lemma_block,
)
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError
from checker.lang.machine import ActionInstance, Machine, Property, changed_params
from checker.progress import Heartbeat

ENGINE = "pdr"
# Spacer's options (decision 0026): keep the relation's arguments (no inlining or
# slicing), so the invariant is over the state variables a user knows
SPACER_OPTIONS = {"engine": "spacer", "xform.inline_linear": False,
                  "xform.inline_eager": False, "xform.slice": False,
                  "spacer.random_seed": 0}
_NO_DEPTH_LIMIT = 1_000_000  # BMC's depth bound once Spacer has said a bad state is reachable


def pdr(machine: Machine, options: ProveOptions) -> ProofResult:
    """Prove `machine`'s invariants, step invariants and freedom from errors (and
    deadlocks, if asked) with Spacer; see the module docstring."""
    refuse_unchecked(machine, ENGINE)
    deadline = Deadline(options.timeout, options.started)
    stats: dict = {"engine": ENGINE}

    def done(outcome: str, message: str, **more: object) -> ProofResult:
        stats["seconds"] = round(deadline.spent(), 3)
        return ProofResult(outcome, 0, message, stats=stats, **more)  # type: ignore[arg-type]

    try:
        taken = machine.declared_names()  # before the spec's lemmas are set aside
        seeds = Seeds([], False)
        if options.seed or options.mine:
            seeds = proved_seeds(machine, deadline, options.progress, options.seed,
                                 options.mine, options.mine_from)
            stats["seeds"] = seeds.names()
            if options.mine:
                stats["mined_seeds"] = len(seeds.mined)
            if options.mine and options.mine_from is not None:
                stats["mined_at"] = changed_params(machine, options.mine_from)
        machine = dataclasses.replace(machine, lemmas=[])
        deadline.check("encoding the model as Horn clauses")
        u = Unrolling(machine, deadline=deadline)
        seeded = seeds.formula(u)
        fp, reach, bad = horn_clauses(u, options.deadlock, seeded)
        left = deadline.left()
        if left is not None:
            fp.set("timeout", max(1, int(left * 1000)))
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ctmc-pdr-") as scratch:
            events = SpacerEvents(Path(scratch) / "spacer.trace")
            fp.set("spacer.trace_file", str(events.path))
            with Heartbeat(options.progress, events.status):
                try:
                    answer = fp.query(bad)
                except z3.Z3Exception as exc:  # Spacer's timer fired, or Ctrl-C (Z3 took it)
                    if deadline.expired():
                        raise OutOfTime("Spacer's search") from None
                    if "canceled" in str(exc):
                        raise KeyboardInterrupt from None
                    return done(UNKNOWN, f"Spacer gave up: {exc}")
            stats["levels"], stats["lemmas_learned"] = events.level, events.lemmas
        stats["spacer_seconds"] = round(time.perf_counter() - started, 3)
        stats["spacer"] = _figures(fp)
        if answer == z3.unknown:
            why = fp.reason_unknown()
            try:
                deadline.raise_if_stopped(why, "Spacer's search")
            except OutOfTime:
                return done(UNKNOWN, deadline.describe("Spacer's search"))
            return done(UNKNOWN, f"Spacer answered unknown ({why})")
        if answer == z3.sat:  # BMC finds the shortest path to a bad state
            found = bmc(machine, BmcOptions(depth=_NO_DEPTH_LIMIT, deadlock=options.deadlock,
                                            progress=options.progress), deadline)
            if found.outcome == UNKNOWN or found.violation is None:
                return done(UNKNOWN, f"Spacer found a bad state reachable, and BMC did not "
                                     f"find the path to it "
                                     f"({found.stats.get('unknown', 'no violation')})")
            return done(COUNTEREXAMPLE, found.violation.message, violation=found.violation,
                        error=found.outcome == ERROR)
        invariant = z3.substitute_vars(fp.get_cover_delta(-1, reach), *u.state(0))
        with Heartbeat(options.progress, "pdr: checking Spacer's invariant again"):
            failed = recheck(u, z3.And(seeded, invariant), options.deadlock, deadline)
        if failed:
            return done(UNKNOWN, f"Spacer's invariant does not check: {failed}; nothing is "
                                 f"proved (a bug in Z3 or in the encoding)")
        clauses = conjuncts(invariant)
        needed: list[Property] = []
        mined_note = ""
        if seeds.mined:
            try:
                with Heartbeat(options.progress, "pdr: singling out the mined facts the "
                                                 "proof needs"):
                    needed = needed_mined(u, seeds, clauses, options.deadlock, deadline)
            except (OutOfTime, Unsingled) as exc:
                why = "the deadline passed" if isinstance(exc, OutOfTime) else str(exc)
                mined_note = (f"; the mined facts it needs were not singled out ({why}), "
                              f"so the lemmas printed are Spacer's alone")
            else:
                stats["mined_seeds_needed"] = len(needed)
                mined_note = (f"; the lemmas printed are the {len(needed):,} mined facts "
                              f"the proof needs" + (", then Spacer's" if clauses else ""))
        printed = as_lemmas(machine, u, clauses, taken, needed)
        lemmas = printed.source
        stats["invariant_clauses"] = len(clauses)
        stats["unwritable_clauses"] = printed.unwritten
        stats["range_clauses"] = printed.ranges
        note = "" if not printed.unwritten else (
            f"; {printed.unwritten} of them the spec language cannot state (shown as "
            f"comments: the other lemmas alone may not be inductive)")
        if printed.ranges:
            note += (f"; {printed.ranges} only restate slots' ranges, which the spec's "
                     f"types give, and are not printed")
        note += mined_note
        if (seeds.props or seeds.mined) and not clauses:
            return done(PROVED, f"the {seeds.describe()} proved first prove every "
                                f"property: Spacer added nothing (checked again with a "
                                f"plain solver){note}", invariant=lemmas)
        with_seeds = f" on top of the {seeds.describe()} proved first" \
            if seeds.props or seeds.mined else ""
        return done(PROVED, f"Spacer found an inductive invariant of {len(clauses)} "
                            f"clauses{with_seeds}, checked again with a plain solver{note}",
                    invariant=lemmas)
    except OutOfTime as out:
        return done(UNKNOWN, deadline.describe(out.phase))


class SpacerEvents:
    """What Spacer has done so far, read from the event log it writes
    (`spacer.trace_file`): the level it works on and the lemmas it has learned."""

    def __init__(self, path: Path):
        self.path = path
        self.level = 0
        self.lemmas = 0
        self._read = 0
        self._rest = b""

    def status(self) -> str:
        """The progress line, after reading what the log gained since the last call."""
        try:
            with open(self.path, "rb") as log:
                log.seek(self._read)
                chunk = log.read()
        except OSError:  # not written yet
            chunk = b""
        self._read += len(chunk)
        lines = (self._rest + chunk).split(b"\n")
        self._rest = lines.pop()
        for line in lines:
            if line.startswith(b"* LEVEL "):
                self.level = int(line.split()[-1])
            elif line.startswith(b"** add-lemma"):
                self.lemmas += 1
        return f"pdr: Spacer at level {self.level}, {self.lemmas:,} lemmas learned"


class Seeds(NamedTuple):
    """Facts proved of every reachable state, for Spacer to start from."""

    props: list[Property]  # the spec's invariants and lemmas
    no_error: bool  # no action errs
    mined: tuple[Property, ...] = ()  # facts mined from reachable states

    def names(self) -> list[str]:
        """The spec's members (the mined ones are many, and named by number)."""
        return [p.name for p in self.props] + ([NO_ERROR] if self.no_error else [])

    def describe(self) -> str:
        """What the seeds are, for the verdict's message."""
        parts = [f"{len(self.props)} spec lemmas and invariants"] if self.props else []
        if self.mined:
            parts.append(f"{len(self.mined):,} facts mined from reachable states")
        return " and ".join(parts)

    def formula(self, u: Unrolling) -> z3.BoolRef:
        """The seeds over s0."""
        return z3.And([u.prop_holds(p, 0) for p in self.props + list(self.mined)]
                      + ([u.no_error(0)] if self.no_error else []))


# Mined seeds are clauses of at most this many literals: on log_driven_tiny the
# three-literal ones more than double the pool Houdini must prove (decision 0026)
MINED_LITERALS = 2


def proved_seeds(machine: Machine, deadline: Deadline,
                 progress: Callable[[str], None] | None, spec: bool, mine: bool,
                 mine_from: Machine | None = None) -> Seeds:
    """The members that hold in every reachable state as far as 1-induction shows:
    those true in every initial state that survive Houdini together (each then holds
    wherever the others do, after any step from a state where no action errs, the
    only steps there are). The members: the spec's invariants, "no action errs", the
    spec's lemmas if `spec`, facts mined from reachable states if `mine`. Nothing here
    is assumed: a member that fails initially or after a step is left out."""
    pool = initial_pool(machine, deadline, progress, spec, mine, mine_from)
    # a few dozen spec lemmas go fastest asked one at a time; thousands of facts, not
    alive, _ = houdini(pool.machine, pool.others, deadline, progress,
                       one_at_a_time=not pool.mined)
    initial = pool.initial
    no_error = NO_ERROR in alive and initial.breaking(initial.u.no_error(0)) is None
    holding = pool.machine.invariants + pool.others
    return Seeds([p for p in holding if p.name in alive and p.name not in pool.mined],
                 no_error,
                 tuple(p for p in holding if p.name in alive and p.name in pool.mined))


class InitialPool(NamedTuple):
    """Houdini's pool for the seeds: the members true in every initial state."""

    initial: InitialStates
    machine: Machine  # its invariants those true initially, and no lemmas
    others: list[Property]  # the other members true initially
    mined: set[str]  # the names of the mined facts among them


def initial_pool(machine: Machine, deadline: Deadline, progress: Callable[[str], None] | None,
                 spec: bool, mine: bool, mine_from: Machine | None = None) -> InitialPool:
    """The spec's invariants, its lemmas if `spec` and the facts mined from reachable
    states (of `mine_from`, if given) if `mine`, those true in every initial state (see
    `proved_seeds`)."""
    initial = InitialStates(Unrolling(machine, deadline=deadline), deadline)
    mined = mined_facts(machine, deadline, progress, mine_from) if mine else []
    with Heartbeat(progress, "pdr: checking the seeds in the initial states"):
        holding = initial.holding(machine.invariants + (machine.lemmas if spec else []) +
                                  mined)
    named = {p.name for p in machine.invariants}
    return InitialPool(initial, dataclasses.replace(
        machine, invariants=[p for p in holding if p.name in named], lemmas=[]),
        [p for p in holding if p.name not in named], {p.name for p in mined})


class InitialStates:
    """Which facts hold in every initial state (within the constraints)."""

    def __init__(self, u: Unrolling, deadline: Deadline):
        self.u, self.deadline = u, deadline
        self.solver = new_solver()
        self.solver.add(u.init(0), u.admissible(0))

    def breaking(self, term: z3.BoolRef) -> z3.ModelRef | None:
        """An initial state where `term` (over s0) is false, or None if there is none."""
        self.solver.push()
        self.solver.add(z3.Not(term))
        answer = self.deadline.solve(self.solver, "checking the seeds in the initial states")
        model = self.solver.model() if answer == z3.sat else None
        reason = self.solver.reason_unknown() if answer == z3.unknown else ""
        self.solver.pop()
        if answer == z3.unknown:
            raise CheckerError(f"the solver gave up checking the seeds in the initial "
                               f"states ({reason})")
        return model

    def holding(self, members: list[Property]) -> list[Property]:
        """The members true in every initial state: each initial state Z3 finds breaking
        their conjunction drops every member false there, until none does."""
        terms = {p.name: self.u.prop_holds(p, 0) for p in members}
        alive = list(members)
        while alive:
            model = self.breaking(z3.And([terms[p.name] for p in alive]))
            if model is None:
                break
            alive = [p for p in alive
                     if not z3.is_false(model.eval(terms[p.name], model_completion=True))]
        return alive


def mined_facts(machine: Machine, deadline: Deadline,
                progress: Callable[[str], None] | None,
                source: Machine | None = None) -> list[Property]:
    """`infer`'s template clauses of at most MINED_LITERALS literals true in every
    state the reachable-state filter sees: `source`'s (same slots, smaller ranges) and
    `machine`'s random walks, if `source` is given; one state per orbit, the pool closed
    under the symmetry, if the spec has scalarsets. None if the filter finds a property
    violated: Spacer then finds the path to it."""
    try:
        found = reachable_candidates(
            dataclasses.replace(machine, lemmas=[]), InferOptions(progress=progress,
                                                                  search="houdini"),
            deadline, source and dataclasses.replace(source, lemmas=[]), orbits=True)
    except ModelViolates as bad:
        if progress:
            progress(f"pdr: mining found {bad.name} violated; Spacer goes on unseeded")
        return []
    kept = [c for c in found.kept if len(c.clause) <= MINED_LITERALS]
    first = first_free_number("Mined", machine.declared_names())
    return [Property(f"Mined{first + i}", c.expr, c.source) for i, c in enumerate(kept)]


class Unsingled(Exception):
    """The mined facts a proof needs could not be singled out (the proof stands: it was
    checked with every seed)."""


def needed_mined(u: Unrolling, seeds: Seeds, clauses: list[z3.BoolRef], deadlock: bool,
                 deadline: Deadline) -> list[Property]:
    """The mined seeds that, with the spec's own seeds, make Spacer's `clauses` an
    inductive invariant that implies the properties: the unsat cores of the re-check's
    queries (safety, each action's step over Spacer's clauses and the spec's seeds)
    with the mined seeds as assumptions, then of each needed seed's own step, until no
    core names a new one. Checked again with a plain solver; raises Unsingled if that
    fails, or if Z3 answers unknown."""
    mined = list(seeds.mined)
    own = Seeds(seeds.props, seeds.no_error)
    t = u.state(1)
    lits = {p.name: z3.Bool(f"seed:{p.name}") for p in mined}
    by_lit = {str(lit): name for name, lit in lits.items()}
    solver = new_solver()
    solver.add(own.formula(u), *clauses, u.admissible(0))
    for p in mined:
        solver.add(z3.Implies(lits[p.name], u.prop_holds(p, 0)))

    def core(query: list[z3.BoolRef]) -> set[str]:
        solver.push()
        solver.add(*query)
        answer = deadline.solve(solver, "singling out the mined facts the proof needs",
                                *lits.values())
        used = {by_lit[str(lit)] for lit in solver.unsat_core()} if answer == z3.unsat \
            else None
        solver.pop()
        if used is None:
            raise Unsingled(f"a query the re-check answered unsat is {answer} with the "
                            f"mined facts as assumptions")
        return used

    needed = core([z3.Not(safe_state(u, deadlock))])
    steps = [u.step_prop_holds(p, 1) for p in u.machine.step_invariants]
    if steps:
        needed |= core([u.step(0), u.enc.domain(t), z3.Not(z3.And(steps))])
    by_name = {p.name: p for p in mined}
    # the spec's own seeds were proved with every mined one: their steps are goals too
    goals = conjuncts(own.formula(u)) + list(clauses) \
        + [u.prop_holds(by_name[n], 0) for n in sorted(needed)]
    while goals:
        found: set[str] = set()
        for _, step, after in steps_changing(u, goals):
            found |= core([u.no_error(0), step, u.admissible(1), z3.Not(after)])
        fresh = found - needed
        needed |= fresh
        goals = [u.prop_holds(by_name[n], 0) for n in sorted(fresh)]
    kept = [p for p in mined if p.name in needed]
    proof = z3.And(own.formula(u), *[u.prop_holds(p, 0) for p in kept], *clauses)
    failed = recheck(u, proof, deadlock, deadline)
    if failed:
        raise Unsingled(f"the mined facts the cores name, with Spacer's clauses, do not "
                        f"check: {failed}")
    return kept


def horn_clauses(u: Unrolling, deadlock: bool, seeded: z3.BoolRef
                 ) -> tuple[z3.Fixedpoint, z3.FuncDeclRef, z3.BoolRef]:
    """The model as Horn clauses (see the module docstring): the solver, `Reach`, `Bad`.
    `seeded` (over s0) holds in every reachable state: it joins every body that has
    `Reach(s)`."""
    s, t = u.state(0), u.state(1)
    reach = z3.Function("Reach", *[v.sort() for v in s], z3.BoolSort())
    bad = z3.Bool("Bad")
    fp = z3.Fixedpoint()
    fp.set(**SPACER_OPTIONS)
    fp.register_relation(reach, bad.decl())
    fp.declare_var(*s, *t)
    fp.rule(reach(*s), [u.init(0), u.admissible(0)])
    fp.rule(reach(*t), [reach(*s), seeded, u.no_error(0), u.step(0), u.admissible(1)])
    fp.rule(bad, [reach(*s), seeded, z3.Not(safe_state(u, deadlock))])
    steps = [u.step_prop_holds(p, 1) for p in u.machine.step_invariants]
    if steps:
        fp.rule(bad, [reach(*s), seeded, u.step(0), u.enc.domain(t),
                      z3.Not(z3.And(steps))])
    return fp, reach, bad


def safe_state(u: Unrolling, deadlock: bool) -> z3.BoolRef:
    """Every invariant holds in s0 and no action errs there (and one is enabled)."""
    return z3.And([u.prop_holds(p, 0) for p in u.machine.invariants]
                  + [u.no_error(0, deadlock)])


def recheck(u: Unrolling, invariant: z3.BoolRef, deadlock: bool,
            deadline: Deadline) -> str:
    """Why `invariant` (over s0) is not an inductive invariant that implies the
    properties, or "" when it is: initiation, safety, and consecution asked action by
    action over the clauses the action can change (those reading a slot it writes: the
    rest read the same values after it), one query each."""
    t = u.state(1)
    state = z3.And(invariant, u.admissible(0))
    steps = [u.step_prop_holds(p, 1) for p in u.machine.step_invariants]
    failed = _fails(deadline, "an initial state violates it",
                    [u.init(0), u.admissible(0), z3.Not(invariant)])
    stepping = new_solver()  # one solver: the 25,000 clauses of a seeded run, once
    stepping.add(state, u.no_error(0), u.admissible(1))
    for action, step, after in [] if failed else steps_changing(u, conjuncts(invariant)):
        failed = _fails(deadline, f"a step leaves it ({action.label})",
                        [step, z3.Not(after)], stepping)
        if failed:
            break
    failed = failed or _fails(deadline, "it allows a bad state",
                              [state, z3.Not(safe_state(u, deadlock))])
    if steps:
        failed = failed or _fails(deadline, "it allows a bad step",
                                  [state, u.step(0), u.enc.domain(t), z3.Not(z3.And(steps))])
    return failed


def _fails(deadline: Deadline, why: str, query: list[z3.BoolRef],
           solver: z3.Solver | None = None) -> str:
    """`why`, with the solver's answer, unless `query` (added to `solver`, a new one if
    none) is unsat ("" then)."""
    solver = solver or new_solver()
    solver.push()
    solver.add(*query)
    answer = deadline.solve(solver, "checking Spacer's invariant")
    solver.pop()
    return "" if answer == z3.unsat else f"{why} (the solver says {answer})"


def steps_changing(u: Unrolling, goals: list[z3.BoolRef]
                   ) -> Iterator[tuple[ActionInstance, z3.BoolRef, z3.BoolRef]]:
    """Each action instance whose step can change a goal (over s0): the action, its
    step from s0 to s1, and the goals it can change, over s1. A goal reading no slot
    the action writes reads the same values after it, so it is left out."""
    s, t = u.state(0), u.state(1)
    slot_of = {v.get_id(): j for j, v in enumerate(s)}
    reads = [_slots(goal, slot_of) for goal in goals]
    for action, step in zip(u.machine.actions, u.transitions(0), strict=True):
        changed = [g for g, r in zip(goals, reads, strict=True)
                   if not r.isdisjoint(action.writes)]
        if changed:
            yield action, step, z3.substitute(z3.And(changed), *zip(s, t, strict=True))


def _slots(term: z3.ExprRef, slot_of: dict[int, int]) -> set[int]:
    """The state slots `term` mentions (`slot_of`: a state variable's id to its slot)."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [term]
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if node.get_id() in slot_of:
            found.add(slot_of[node.get_id()])
        stack.extend(node.children())
    return found


def conjuncts(formula: z3.BoolRef) -> list[z3.BoolRef]:
    """The top-level clauses of a conjunction (the formula itself if it is none)."""
    if z3.is_and(formula):
        return [c for child in formula.children() for c in conjuncts(child)]
    return [] if z3.is_true(formula) else [formula]


class Lemmas(NamedTuple):
    """Spacer's invariant as spec source, and what of it is not there as a lemma."""

    source: str
    unwritten: int  # clauses the spec language cannot state (shown as comments)
    ranges: int  # clauses that only restate slots' ranges (the spec's types): left out


def as_lemmas(machine: Machine, u: Unrolling, clauses: list[z3.BoolRef],
              taken: list[str], mined: list[Property]) -> Lemmas:
    """The invariant's clauses as lemmas to paste into the spec's build function, after
    the `mined` facts it needs, numbered past the names in `taken`."""
    writer = SourceWriter(machine, u.state(0))
    blocks = [lemma_block(p.name, "Mined from reachable states, proved by Houdini; found "
                                  "by ctmc prove --engine pdr --mine.", f"    return {p.doc}\n")
              for p in mined]
    unwritten = ranges = 0
    number = first_free_number("Pdr", taken)
    for clause in clauses:
        try:
            text = writer.clause(clause)
        except Unwritable:
            unwritten += 1
            body = ("    # not in the spec language; in Z3's syntax:\n"
                    + "".join(f"    #   {line}\n" for line in str(clause).splitlines())
                    + "    return True\n")
        else:
            if text == "True":  # e.g. an enum code at most its last member's
                ranges += 1
                continue
            body = f"    return {text}\n"
        blocks.append(lemma_block(f"Pdr{number}", "Found by ctmc prove --engine pdr.", body))
        number += 1
    used = sorted({name for name in ("And", "Or", "Not", "Implies")
                   if any(f"{name}(" in block for block in blocks)})
    needs = f"# the spec module needs: from checker.lang import {', '.join(used)}\n" \
        if used else ""
    return Lemmas(needs + "\n".join(blocks), unwritten, ranges)


def _figures(fp: z3.Fixedpoint) -> dict[str, float]:
    stats = fp.statistics()
    return {key: stats.get_key_value(key) for key in stats.keys()
            if key.startswith("SPACER") and key.split()[-1] in ("lemmas", "depth",
                                                                  "inductive", "queries")}
