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

The step is checked one goal at a time: the invariants' (with "no action errs"
and the step invariants), then each lemma's. Separate queries are each far
easier for Z3 than one query of the whole conjunction (a third of the time on
the lease models, decision 0024), and each unsat answer gives, for free, the
lemmas that goal needed: each lemma hypothesis is guarded by an assumption
literal, so the unsat core names them. The lemmas the proof used are those
reached from the invariants' goal through the cores; with the invariants they
are k-inductive by construction, the others are dead weight for this proof.
A goal that fails stops the step, and the CTI is the least one of the whole
conjunction, as if it had been asked at once: which goal the search reached
first does not change it.

`timeout` bounds the whole proof (decision 0022): one `Deadline` gives every
query what is left of it, base case, each goal and the least-CTI search alike.
Running out is `unknown`; running out while the least CTI is chosen keeps the
CTI found, marked not least.
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
INVARIANTS_GOAL = "the invariants"  # the goal of every invariant, no error, step invariants


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
        with Heartbeat(options.progress, f"inductive step (k={k})") as beat:
            answer, failed = step.check_each_goal(beat)
        stats["step_seconds"] = round(time.perf_counter() - t0, 3)
        stats["seconds_per_goal"] = step.seconds
        say(f"inductive step (k={k}) | {stats['step_seconds']:8.2f} s | {answer} "
            f"({len(step.seconds)} of {len(step.goals)} goals checked)")
        if answer == z3.unknown:
            return done(UNKNOWN, f"inductive step: solver answered unknown on the goal of "
                                 f"{failed} ({step.solver.reason_unknown()})")
        if answer == z3.sat:
            violation, least = step.cti(options.progress)
            if not least:
                stats["trace"] = NOT_LEAST
            return done(NOT_INDUCTIVE, violation.message, violation=violation)
    except OutOfTime as out:
        return done(UNKNOWN, deadline.describe(out.phase))
    finally:
        if step is not None:
            stats["z3"] = solver_figures(step.solver)
    used = step.lemmas_used()
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
        self.goals = [INVARIANTS_GOAL, *self.lits]  # lemma names are the lemmas' goals
        self.cores: dict[str, list[str]] = {}  # goal -> lemmas its unsat core used
        self.seconds: dict[str, float] = {}  # goal -> seconds its query took

    def invariants_goal(self) -> z3.BoolRef:
        u, k = self.u, self.k
        state = [u.prop_holds(p, k) for p in self.machine.invariants]
        state.append(u.no_error(k, self.deadlock))
        steps = [u.step_prop_holds(p, k) for p in self.machine.step_invariants]
        return z3.And(*steps, z3.Implies(u.explored(k), z3.And(state)))

    def lemma_goal(self, name: str) -> z3.BoolRef:
        p = next(p for p in self.machine.lemmas if p.name == name)
        return z3.Implies(self.u.explored(self.k), self.u.prop_holds(p, self.k))

    def check_each_goal(self, beat: Heartbeat | None = None
                        ) -> tuple[z3.CheckSatResult, str | None]:
        """Check the invariants' goal, then each lemma's, in that order: unsat, or the
        first answer that is not, with the goal it came from. Each unsat goal's core
        is kept (`cores`); on sat the solver holds the whole conjunction's negation,
        ready for `cti`."""
        by_lit = {str(lit): name for name, lit in self.lits.items()}
        for i, name in enumerate(self.goals, 1):
            if beat is not None:
                beat.set(f"inductive step (k={self.k}) | goal {i} of {len(self.goals)}: {name}")
            goal = self.invariants_goal() if name == INVARIANTS_GOAL else self.lemma_goal(name)
            t0 = time.perf_counter()
            answer = self.check(goal, f"{STEP_PHASE} (goal {i} of {len(self.goals)}: {name})")
            self.seconds[name] = round(time.perf_counter() - t0, 3)
            if answer == z3.sat:
                self.solver.pop()
                whole = z3.And(self.invariants_goal(), *map(self.lemma_goal, self.lits))
                answer = self.check(whole, f"{STEP_PHASE} (the goals together)")
                if answer == z3.unsat:
                    raise DecodeError(f"Z3 found the goal of {name} false alone but not "
                                      "among the others; this is a bug in Z3")
            if answer != z3.unsat:
                return answer, name
            self.cores[name] = [by_lit[str(lit)] for lit in self.solver.unsat_core()]
        return z3.unsat, None

    def lemmas_used(self) -> list[str]:
        """The lemmas reached from the invariants' goal through the cores, in the
        spec's order (after `check_each_goal` answered unsat)."""
        needed: set[str] = set()
        queue = [INVARIANTS_GOAL]
        while queue:
            for name in self.cores[queue.pop()]:
                if name not in needed:
                    needed.add(name)
                    queue.append(name)
        return [p.name for p in self.machine.lemmas if p.name in needed]

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
