"""The inductive step's solver: k hypothesis states, then the goal state s_k, and its
goals asked one at a time (decision 0024).

Every hypothesis state satisfies the invariants and "no action errs" (and, after the
first, each step keeps the step invariants); each lemma hypothesis is guarded by an
assumption literal, so an unsat goal's core names the lemmas it needed. The goals are
the invariants' (with "no action errs" and the step invariants) and each lemma's, in
the spec's order; `prove` asks them here, or shares them among processes
(`goal_workers`), each with its own `InductiveStep`.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import z3

from checker.engines.result import Violation
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.unroll import DecodeError, Unrolling, new_solver
from checker.lang.machine import Machine
from checker.progress import Progress
from checker.traces.trace import Trace

ENGINE = "prove"
CTI_KIND = "cti"  # the violation kind of a counterexample-to-induction trace
STEP_PHASE = "the inductive step"
INVARIANTS_GOAL = "the invariants"  # the goal of every invariant, no error, step invariants


class GoalAnswer(NamedTuple):
    """What one goal's query answered ("unsat", "sat" or "unknown", as Z3 words it),
    the lemmas its unsat core used, its seconds, and why Z3 gave up (unknown)."""
    goal: str
    answer: str
    core: list[str]
    seconds: float
    reason: str = ""


def goal_names(machine: Machine) -> list[str]:
    """The step's goals in the order they are asked: the invariants', then each
    lemma's (a lemma's goal is named by the lemma)."""
    return [INVARIANTS_GOAL, *(p.name for p in machine.lemmas)]


def lemmas_used(machine: Machine, cores: dict[str, list[str]]) -> list[str]:
    """The lemmas reached from the invariants' goal through each goal's unsat core
    (`cores`: every goal, all unsat), in the spec's order. With the invariants they are
    k-inductive by construction; the others are dead weight for this proof."""
    needed: set[str] = set()
    queue = [INVARIANTS_GOAL]
    while queue:
        for name in cores[queue.pop()]:
            if name not in needed:
                needed.add(name)
                queue.append(name)
    return [p.name for p in machine.lemmas if p.name in needed]


class InductiveStep:
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
        self.goals = goal_names(machine)
        self.by_lit = {str(lit): name for name, lit in self.lits.items()}

    def invariants_goal(self) -> z3.BoolRef:
        u, k = self.u, self.k
        state = [u.prop_holds(p, k) for p in self.machine.invariants]
        state.append(u.no_error(k, self.deadlock))
        steps = [u.step_prop_holds(p, k) for p in self.machine.step_invariants]
        return z3.And(*steps, z3.Implies(u.explored(k), z3.And(state)))

    def lemma_goal(self, name: str) -> z3.BoolRef:
        p = next(p for p in self.machine.lemmas if p.name == name)
        return z3.Implies(self.u.explored(self.k), self.u.prop_holds(p, self.k))

    def ask(self, name: str) -> GoalAnswer:
        """Ask goal `name`: is there a path whose hypotheses hold and whose end breaks
        it? Unsat comes with the lemmas its core used. The solver is left as it was:
        a CTI is asked of the whole conjunction (`break_any`), not of this goal."""
        i = self.goals.index(name) + 1
        goal = self.invariants_goal() if name == INVARIANTS_GOAL else self.lemma_goal(name)
        t0 = time.perf_counter()
        answer = self.check(goal, f"{STEP_PHASE} (goal {i} of {len(self.goals)}: {name})")
        seconds = round(time.perf_counter() - t0, 3)
        core, reason = [], ""
        if answer == z3.unsat:
            core = [self.by_lit[str(lit)] for lit in self.solver.unsat_core()]
        elif answer == z3.sat:
            self.solver.pop()
        else:
            reason = self.solver.reason_unknown()
        return GoalAnswer(name, str(answer), core, seconds, reason)

    def break_any(self) -> z3.CheckSatResult:
        """After a goal was sat: ask for a path breaking any goal, which the solver
        keeps for `cti`, so the CTI is the least of the whole conjunction whichever
        goal was asked first."""
        whole = z3.And(self.invariants_goal(), *map(self.lemma_goal, self.lits))
        answer = self.check(whole, f"{STEP_PHASE} (the goals together)")
        if answer == z3.unsat:
            raise DecodeError("Z3 found a goal of the inductive step false alone but not "
                              "among the others; this is a bug in Z3")
        return answer

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
