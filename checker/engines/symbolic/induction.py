"""k-induction with Z3: prove that the invariants hold in every reachable state.

Let P be the conjunction of every invariant and lemma, "no action errs from
here" (decision 0003), and, on each step, every step invariant.

- *Base case*: no path of length < k from an initial state breaks P; this is
  `bmc` to depth k-1, so a failure is a real, shortest counterexample.
- *Inductive step*: every path s0 -> ... -> sk whose first k states satisfy P
  (and whose inner steps keep the step invariants) also satisfies P at sk and
  on its last step. If Z3 finds a path that does not, its first state satisfies
  every invariant and lemma but need not be reachable: the path is a
  counterexample to induction (CTI), written as a trace and labelled
  unreachable-or-unknown. A stronger lemma or a larger k may remove it; `bmc`
  tells whether a real violation exists.

When the step holds, the lemmas it needed are found by unsat cores: each lemma
hypothesis is guarded by an assumption literal, the invariants' goal gives a
core of lemmas, each of those lemmas' own goals gives more, up to a fixpoint.
The needed set with the invariants is k-inductive by construction; the other
lemmas are dead weight for this proof.

`timeout` bounds the whole proof (decision 0022): one `Deadline` gives every
query what is left of it, base case, step and cores alike. Running out is
`unknown`, even after the step held (the proof's report would lack its lemmas);
running out while the least CTI is chosen keeps the CTI found, marked not least.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from checker.engines.result import ERROR, UNKNOWN, Violation
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.bmc import NOT_LEAST, bmc
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.unroll import DecodeError, Unrolling, new_solver, solver_figures
from checker.lang.machine import Machine
from checker.progress import Heartbeat, Progress
from checker.traces.trace import Trace

ENGINE = "prove"
PROVED = "proved"
COUNTEREXAMPLE = "counterexample"
NOT_INDUCTIVE = "not inductive"
CTI_KIND = "cti"  # the violation kind of a counterexample-to-induction trace
STEP_PHASE = "the inductive step"
CORE_PHASE = "the unsat cores (which lemmas the proof used)"


@dataclass
class ProofResult:
    outcome: str  # PROVED | COUNTEREXAMPLE | NOT_INDUCTIVE | UNKNOWN
    k: int
    message: str
    violation: Violation | None = None  # the real trace, or the CTI
    error: bool = False  # the real trace ends in an evaluation error (a spec bug)
    lemmas_used: list[str] = field(default_factory=list)
    lemmas_unused: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


def prove(machine: Machine, options: ProveOptions,
          deadline: Deadline | None = None) -> ProofResult:
    """Base case by BMC, then the inductive step; see the module docstring. `deadline`
    (infer's, when it proves) replaces options.timeout."""
    refuse_unchecked(machine, ENGINE)
    deadline = deadline or Deadline(options.timeout, options.started)
    k = options.k
    say = options.progress or (lambda line: None)
    stats: dict = {"k": k}

    def done(outcome: str, message: str, **more: Any) -> ProofResult:
        stats["seconds"] = round(deadline.spent(), 3)
        return ProofResult(outcome, k, message, stats=stats, **more)

    base = bmc(machine, BmcOptions(depth=k - 1, deadlock=options.deadlock,
                                   progress=options.progress), deadline)
    stats["base_seconds"] = base.stats["seconds"]
    if base.outcome == UNKNOWN:
        return done(UNKNOWN, f"base case: {base.stats['unknown']}")
    if base.violation is not None:
        if "trace" in base.stats:
            stats["trace"] = base.stats["trace"]
        return done(COUNTEREXAMPLE, base.violation.message, violation=base.violation,
                    error=base.outcome == ERROR)
    step: _Step | None = None
    try:
        step = _Step(machine, k, options.deadlock, deadline)
        t0 = time.perf_counter()
        with Heartbeat(options.progress, f"inductive step (k={k}) | solving"):
            answer = step.check(step.whole_goal(), "the inductive step")
        stats["step_seconds"] = round(time.perf_counter() - t0, 3)
        say(f"inductive step (k={k}) | {stats['step_seconds']:8.2f} s | {answer}")
        if answer == z3.unknown:
            return done(UNKNOWN, f"inductive step: solver answered unknown "
                                 f"({step.solver.reason_unknown()})")
        if answer == z3.sat:
            violation, least = step.cti(options.progress)
            if not least:
                stats["trace"] = NOT_LEAST
            return done(NOT_INDUCTIVE, violation.message, violation=violation)
        t0 = time.perf_counter()
        with Heartbeat(options.progress, "unsat core: which lemmas the proof needs") as beat:
            used = step.needed_lemmas(beat)
        stats["core_seconds"] = round(time.perf_counter() - t0, 3)
        say(f"unsat core | {stats['core_seconds']:8.2f} s | {len(used or [])} lemmas needed")
        if used is None:
            return done(UNKNOWN, "unsat core: solver answered unknown")
    except OutOfTime as out:
        held = " (the inductive step held; the lemmas it used were not yet known)" \
            if out.phase == CORE_PHASE else ""
        return done(UNKNOWN, deadline.describe(out.phase) + held)
    finally:
        if step is not None:
            stats["z3"] = solver_figures(step.solver)
    names = [p.name for p in machine.lemmas]
    return done(PROVED, f"every invariant holds in every reachable state ({k}-induction)",
                lemmas_used=used, lemmas_unused=[n for n in names if n not in used])


class _Step:
    """The inductive step's solver: k hypothesis states, then the goal state s_k."""

    def __init__(self, machine: Machine, k: int, deadlock: bool, deadline: Deadline):
        self.machine, self.k, self.deadlock = machine, k, deadlock
        self.deadline = deadline
        self.u = u = Unrolling(machine, deadline=deadline)
        self.solver = s = new_solver()
        s.set("core.minimize", True)
        self.lits = {p.name: z3.Bool(f"lemma:{p.name}") for p in machine.lemmas}
        for i in range(k):
            deadline.check(STEP_PHASE)
            s.add(u.admissible(i), u.step(i), u.no_error(i, deadlock))
            for p in machine.invariants:
                s.add(u.prop_holds(p, i))
            for p in machine.lemmas:
                s.add(z3.Implies(self.lits[p.name], u.prop_holds(p, i)))
            if i:
                s.add(*[u.step_prop_holds(p, i) for p in machine.step_invariants])
        s.add(u.enc.domain(u.state(k)))

    def invariants_goal(self) -> z3.BoolRef:
        u, k = self.u, self.k
        state = [u.prop_holds(p, k) for p in self.machine.invariants]
        state.append(u.no_error(k, self.deadlock))
        steps = [u.step_prop_holds(p, k) for p in self.machine.step_invariants]
        return z3.And(*steps, z3.Implies(u.explored(k), z3.And(state)))

    def lemma_goal(self, name: str) -> z3.BoolRef:
        p = next(p for p in self.machine.lemmas if p.name == name)
        return z3.Implies(self.u.explored(self.k), self.u.prop_holds(p, self.k))

    def whole_goal(self) -> z3.BoolRef:
        return z3.And(self.invariants_goal(), *[self.lemma_goal(n) for n in self.lits])

    def check(self, goal: z3.BoolRef, phase: str) -> z3.CheckSatResult:
        """Is there a path whose hypotheses hold and whose end breaks `goal`? On sat the
        solver keeps the query (its model is the CTI)."""
        self.deadline.check(phase)
        self.solver.push()
        self.solver.add(z3.Not(goal))
        try:
            answer = self.deadline.solve(self.solver, phase, *self.lits.values())
        except OutOfTime:
            self.solver.pop()
            raise
        if answer != z3.sat:
            self.solver.pop()
        return answer

    def needed_lemmas(self, beat: Heartbeat | None = None) -> list[str] | None:
        """Lemmas the proof needs: the closure of unsat cores from the invariants' goal."""
        by_lit = {str(lit): name for name, lit in self.lits.items()}
        needed: set[str] = set()
        queue: list[z3.BoolRef] = [self.invariants_goal()]
        while queue:
            if beat is not None:
                beat.set(f"unsat core: {len(needed)} lemmas needed so far, {len(queue)} goals "
                         "to check")
            answer = self.check(queue.pop(), CORE_PHASE)
            if answer != z3.unsat:
                return None
            for lit in self.solver.unsat_core():
                name = by_lit[str(lit)]
                if name not in needed:
                    needed.add(name)
                    queue.append(self.lemma_goal(name))
        return [p.name for p in self.machine.lemmas if p.name in needed]

    def cti(self, progress: Progress | None = None) -> tuple[Violation, bool]:
        """The least counterexample to induction (`Unrolling.canonical_from_any`), as a
        checked trace: the same one however the process got here; with False when the
        deadline stopped the search for the least one (this one is a CTI all the same)."""
        u, k = self.u, self.k
        model, least = u.canonical_from_any(self.solver, k, list(self.lits.values()), progress,
                                            self.deadline)
        states = u.decode(model, k)
        actions = u.actions_between(states)
        bad = u.classify(states, self.deadlock)
        if bad is None:
            raise DecodeError("Z3 found a counterexample to induction that the scalar "
                              "backend finds nothing wrong with; this is a bug in the Z3 "
                              "encoding")
        machine = self.machine
        steps = [None] + [machine.actions[a] for a in actions]
        if bad.action is not None:
            what = f"{machine.actions[bad.action].label} errs from state {k}"
        elif bad.kind == "step_invariant":
            what = f"{bad.name} fails on step {k} ({steps[-1].label})"  # type: ignore[union-attr]
        else:
            what = f"{bad.name} fails in state {k}"
        hyp = "state 0 satisfies" if k == 1 else f"states 0..{k - 1} satisfy"
        message = (f"{hyp} every invariant and lemma, but {what}; state 0 "
                   f"may be unreachable (unreachable-or-unknown)")
        trace = Trace(machine, states, steps,
                      violation={"kind": CTI_KIND, "name": bad.name, "message": message},
                      meta={"engine": ENGINE, "k": k,
                            "start": "any state satisfying the invariants and lemmas"})
        return Violation(CTI_KIND, bad.name, message, trace), least
