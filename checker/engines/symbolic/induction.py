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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from checker.engines.result import ERROR, UNKNOWN, Violation
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.bmc import bmc
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.unroll import DecodeError, Unrolling, new_solver
from checker.lang.machine import Machine
from checker.progress import Heartbeat, Progress
from checker.traces.trace import Trace

ENGINE = "prove"
PROVED = "proved"
COUNTEREXAMPLE = "counterexample"
NOT_INDUCTIVE = "not inductive"
CTI_KIND = "cti"  # the violation kind of a counterexample-to-induction trace


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


def prove(machine: Machine, options: ProveOptions) -> ProofResult:
    """Base case by BMC, then the inductive step; see the module docstring."""
    refuse_unchecked(machine, ENGINE)
    started = time.perf_counter()
    k = options.k
    say = options.progress or (lambda line: None)
    base = bmc(machine, BmcOptions(depth=k - 1, deadlock=options.deadlock,
                                   timeout=options.timeout, progress=options.progress))
    stats = {"k": k, "base_seconds": base.stats["seconds"]}
    if base.outcome == UNKNOWN:
        return ProofResult(UNKNOWN, k, f"base case: {base.stats['unknown']}", stats=stats)
    if base.violation is not None:
        return ProofResult(COUNTEREXAMPLE, k, base.violation.message, base.violation,
                           error=base.outcome == ERROR, stats=stats)
    step = _Step(machine, k, options.deadlock)
    if options.timeout is not None:
        left = options.timeout - (time.perf_counter() - started)
        if left <= 0:
            return ProofResult(UNKNOWN, k, "timeout before the inductive step", stats=stats)
        step.solver.set("timeout", max(1, int(left * 1000)))
    t0 = time.perf_counter()
    with Heartbeat(options.progress, f"inductive step (k={k}) | solving"):
        answer = step.check(step.whole_goal())
    stats["step_seconds"] = round(time.perf_counter() - t0, 3)
    say(f"inductive step (k={k}) | {stats['step_seconds']:8.2f} s | {answer}")
    if answer == z3.unknown:
        return ProofResult(UNKNOWN, k, f"inductive step: solver answered unknown "
                                       f"({step.solver.reason_unknown()})", stats=stats)
    if answer == z3.sat:
        violation = step.cti(options.progress)
        stats["seconds"] = round(time.perf_counter() - started, 3)
        return ProofResult(NOT_INDUCTIVE, k, violation.message, violation, stats=stats)
    t0 = time.perf_counter()
    with Heartbeat(options.progress, "unsat core: which lemmas the proof needs") as beat:
        used = step.needed_lemmas(beat)
    stats["core_seconds"] = round(time.perf_counter() - t0, 3)
    say(f"unsat core | {stats['core_seconds']:8.2f} s | {len(used or [])} lemmas needed")
    stats["seconds"] = round(time.perf_counter() - started, 3)
    if used is None:
        return ProofResult(UNKNOWN, k, "unsat core: solver answered unknown", stats=stats)
    names = [p.name for p in machine.lemmas]
    return ProofResult(PROVED, k, f"every invariant holds in every reachable state "
                                  f"({k}-induction)", lemmas_used=used,
                       lemmas_unused=[n for n in names if n not in used], stats=stats)


class _Step:
    """The inductive step's solver: k hypothesis states, then the goal state s_k."""

    def __init__(self, machine: Machine, k: int, deadlock: bool):
        self.machine, self.k, self.deadlock = machine, k, deadlock
        self.u = u = Unrolling(machine)
        self.solver = s = new_solver()
        s.set("core.minimize", True)
        self.lits = {p.name: z3.Bool(f"lemma:{p.name}") for p in machine.lemmas}
        for i in range(k):
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

    def check(self, goal: z3.BoolRef) -> z3.CheckSatResult:
        self.solver.push()
        self.solver.add(z3.Not(goal))
        answer = self.solver.check(*self.lits.values())
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
            answer = self.check(queue.pop())
            if answer != z3.unsat:
                return None
            for lit in self.solver.unsat_core():
                name = by_lit[str(lit)]
                if name not in needed:
                    needed.add(name)
                    queue.append(self.lemma_goal(name))
        return [p.name for p in self.machine.lemmas if p.name in needed]

    def cti(self, progress: Progress | None = None) -> Violation:
        """The least counterexample to induction (`Unrolling.canonical_from_any`), as a
        checked trace: the same one however the process got here."""
        u, k = self.u, self.k
        model = u.canonical_from_any(self.solver, k, list(self.lits.values()), progress)
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
        return Violation(CTI_KIND, bad.name, message, trace)
