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
k-induction check them). With `seed` (`--with-spec-lemmas`), the spec's lemmas and
invariants that hold initially and survive Houdini together, hence hold in every
reachable state, are conjoined to the clauses' bodies: Spacer then looks only for what
they lack, and the re-check checks its invariant together with them. Decision 0026
records the encoding and Spacer's options.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import z3

from checker.engines.result import ERROR, UNKNOWN
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.bmc import bmc
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.houdini import NO_ERROR, houdini
from checker.engines.symbolic.induction import COUNTEREXAMPLE, PROVED, ProofResult
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.source import SourceWriter, Unwritable, lemma_block
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.lang.machine import Machine, Property
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
        seeds = proved_seeds(machine, deadline, options.progress) if options.seed \
            else Seeds([], False)
        if options.seed:
            stats["seeds"] = seeds.names()
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
            if deadline.expired() or why in ("timeout", "canceled"):
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
        failed = recheck(u, z3.And(seeded, invariant), options.deadlock, deadline)
        if failed:
            return done(UNKNOWN, f"Spacer's invariant does not check: {failed}; nothing is "
                                 f"proved (a bug in Z3 or in the encoding)")
        clauses = conjuncts(invariant)
        lemmas, unwritten = as_lemmas(machine, u, clauses)
        stats["invariant_clauses"] = len(clauses)
        stats["unwritable_clauses"] = unwritten
        note = "" if not unwritten else (
            f"; {unwritten} of them the spec language cannot state (shown as comments: "
            f"the other lemmas alone may not be inductive)")
        if options.seed and not clauses:
            return done(PROVED, f"the {len(seeds.props)} spec lemmas and invariants proved "
                                f"first prove every property: Spacer added nothing (checked "
                                f"again with a plain solver)")
        with_seeds = "" if not options.seed else (
            f" on top of the {len(seeds.props)} spec lemmas and invariants proved first")
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

    props: list[Property]  # spec invariants and lemmas
    no_error: bool  # no action errs

    def names(self) -> list[str]:
        return [p.name for p in self.props] + ([NO_ERROR] if self.no_error else [])

    def formula(self, u: Unrolling) -> z3.BoolRef:
        """The seeds over s0."""
        return z3.And([u.prop_holds(p, 0) for p in self.props]
                      + ([u.no_error(0)] if self.no_error else []))


def proved_seeds(machine: Machine, deadline: Deadline,
                 progress: Callable[[str], None] | None) -> Seeds:
    """The spec's lemmas and invariants, and "no action errs", that hold in every
    reachable state as far as 1-induction shows: those true in every initial state
    that survive Houdini together (each then holds wherever the others do, after any
    step from a state where no action errs, the only steps there are). Nothing here
    is assumed: a member that fails initially or after a step is left out."""
    u = Unrolling(machine, deadline=deadline)
    initial = new_solver()
    initial.add(u.init(0), u.admissible(0))

    def initially(term: z3.BoolRef) -> bool:
        initial.push()
        initial.add(z3.Not(term))
        answer = deadline.solve(initial, "checking the seeds in the initial states")
        initial.pop()
        return answer == z3.unsat

    holding = [p for p in machine.invariants + machine.lemmas
               if initially(u.prop_holds(p, 0))]
    named = {p.name for p in machine.invariants}
    invariants = [p for p in holding if p.name in named]
    lemmas = [p for p in holding if p.name not in named]
    alive, _ = houdini(dataclasses.replace(machine, invariants=invariants, lemmas=[]),
                       lemmas, deadline, progress, one_at_a_time=True)
    return Seeds([p for p in holding if p.name in alive],
                 NO_ERROR in alive and initially(u.no_error(0)))


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
    properties, or "" when it is: initiation, consecution, safety, each one query."""
    s, t = u.state(0), u.state(1)
    after = z3.substitute(invariant, *zip(s, t, strict=True))
    state = z3.And(invariant, u.admissible(0))
    steps = [u.step_prop_holds(p, 1) for p in u.machine.step_invariants]
    queries = [
        ("an initial state violates it", [u.init(0), u.admissible(0), z3.Not(invariant)]),
        ("a step leaves it", [state, u.no_error(0), u.step(0), u.admissible(1),
                              z3.Not(after)]),
        ("it allows a bad state", [state, z3.Not(safe_state(u, deadlock))]),
    ]
    if steps:
        queries.append(("it allows a bad step", [state, u.step(0), u.enc.domain(t),
                                                 z3.Not(z3.And(steps))]))
    for why, query in queries:
        solver = new_solver()
        solver.add(*query)
        answer = deadline.solve(solver, "checking Spacer's invariant")
        if answer != z3.unsat:
            return f"{why} (the solver says {answer})"
    return ""


def conjuncts(formula: z3.BoolRef) -> list[z3.BoolRef]:
    """The top-level clauses of a conjunction (the formula itself if it is none)."""
    if z3.is_and(formula):
        return [c for child in formula.children() for c in conjuncts(child)]
    return [] if z3.is_true(formula) else [formula]


def as_lemmas(machine: Machine, u: Unrolling, clauses: list[z3.BoolRef]) -> tuple[str, int]:
    """The invariant's clauses as lemmas to paste into the spec's build function, and
    how many the spec language cannot state (each shown in Z3's syntax, as a comment)."""
    writer = SourceWriter(machine, u.state(0))
    blocks = []
    unwritten = 0
    for i, clause in enumerate(clauses):
        try:
            body = f"    return {writer.clause(clause)}\n"
        except Unwritable:
            unwritten += 1
            body = ("    # not in the spec language; in Z3's syntax:\n"
                    + "".join(f"    #   {line}\n" for line in str(clause).splitlines())
                    + "    return True\n")
        blocks.append(lemma_block(f"Pdr{i}", "Found by ctmc prove --engine pdr.", body))
    used = sorted({name for name in ("And", "Or", "Not", "Implies")
                   if any(f"{name}(" in block for block in blocks)})
    needs = f"# the spec module needs: from checker.lang import {', '.join(used)}\n" \
        if used else ""
    return needs + "\n".join(blocks), unwritten


def _figures(fp: z3.Fixedpoint) -> dict[str, float]:
    stats = fp.statistics()
    return {key: stats.get_key_value(key) for key in stats.keys()
            if key.startswith("SPACER") and key.split()[-1] in ("lemmas", "depth",
                                                                  "inductive", "queries")}
