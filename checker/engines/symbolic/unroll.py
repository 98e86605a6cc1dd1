"""The pieces every Z3 engine conjoins: states, steps, properties, errors, decoding.

BMC, k-induction and Houdini all reason about a path of states s0..sk. This
module builds the formulas about such a path from the `Z3Encoder` terms and
turns a Z3 model of one back into concrete states and action instances, so
each engine only decides which pieces to assert and when.

Semantics follow the explicit-state engines exactly (decisions 0002, 0003):

- a step is one enabled action instance: its guard, every updated slot equal to
  its update and every other slot unchanged (the frame condition);
- every state lies within its slot types; states outside a constraint are not
  explored, so a path's states satisfy the constraints, while a step invariant
  is judged on every transition, as in BFS;
- reading out of range or assigning outside a type is an *error* of the state
  the action starts from. Z3's terms are total, so errors are a property like
  any other ("no error from this state") rather than blocked steps: a path whose
  states are error-free has exactly the scalar backend's transitions.

Decoding never trusts a model's choice of action: for each step it takes the
smallest action id that the scalar backend says leads from one decoded state to
the next, and raises if none does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import z3

from checker.backends.scalar import ScalarMachine, State
from checker.backends.z3_terms import Z3Encoder
from checker.errors import EvalError
from checker.lang import expr as E
from checker.lang.expr import BOOL
from checker.lang.machine import ActionInstance, Machine, Property
from checker.progress import Heartbeat, Progress

SEED = 0  # Z3's random seeds: the same model gives the same counterexample


class DecodeError(RuntimeError):
    """A Z3 model that the scalar backend does not confirm: a bug in an encoding."""


NO_TIMEOUT = 4294967295  # Z3's default: no per-check timeout


def new_solver(timeout_ms: int | None = None) -> z3.Solver:
    """A solver with fixed seeds (and an optional per-check timeout)."""
    solver = z3.Solver()
    solver.set("random_seed", SEED)
    if timeout_ms:
        solver.set("timeout", int(timeout_ms))
    return solver


@dataclass(frozen=True)
class Bad:
    """Why a path ends badly, as found by the scalar backend on the decoded states."""

    kind: str  # "invariant" | "step_invariant" | "error" | "guard_error" | "deadlock"
    name: str  # the property's name, "EvalError" or "Deadlock"
    action: int | None  # for errors: the action instance that fails from the last state


class Unrolling:
    """Z3 state vectors s0, s1, ... of one machine and the formulas over them."""

    def __init__(self, machine: Machine, prefix: str = "s"):
        self.machine = machine
        self.enc = Z3Encoder(machine)
        self.prefix = prefix
        self.states: list[list[z3.ExprRef]] = []
        self.scalar = ScalarMachine(machine)

    def state(self, i: int) -> list[z3.ExprRef]:
        while len(self.states) <= i:
            self.states.append(self.enc.state_vars(f"{self.prefix}{len(self.states)}."))
        return self.states[i]

    # --- states ------------------------------------------------------------------
    def init(self, i: int = 0, upto: int | None = None) -> z3.BoolRef:
        """s_i is one of the initial states that satisfy the constraints (the first
        `upto + 1` of them, if given)."""
        s = self.state(i)
        inits = [x for x in self.machine.init_states if self.scalar.within_constraints(x)]
        return z3.Or([z3.And([self._eq(v, x) for v, x in zip(s, st, strict=True)])
                      for st in inits[:None if upto is None else upto + 1]])

    def n_inits(self) -> int:
        return sum(1 for x in self.machine.init_states if self.scalar.within_constraints(x))

    def explored(self, i: int) -> z3.BoolRef:
        """s_i satisfies the constraints: BFS would explore it (and check it) at all."""
        return z3.And([self._holds(p.expr, self.state(i)) for p in self.machine.constraints])

    def admissible(self, i: int) -> z3.BoolRef:
        """s_i is within its types and satisfies the constraints (explored at all)."""
        return z3.And(self.enc.domain(self.state(i)), self.explored(i))

    def step(self, i: int, upto: int | None = None) -> z3.BoolRef:
        """Some action instance (with id <= `upto`, if given) leads from s_i to s_{i+1}."""
        before, after = self.state(i), self.state(i + 1)
        actions = self.machine.actions[:None if upto is None else upto + 1]
        return z3.Or([self.enc.transition(a, before, after) for a in actions])

    def canonical(self, solver: z3.Solver, k: int,
                  progress: Progress | None = None) -> z3.ModelRef:
        """Of the paths of length k the solver admits (it must answer sat), the one with
        the smallest (initial state, action ids) in lexicographic order. Z3's own choice
        depends on everything the process asked it before; this one does not, and a
        path is fixed by its initial state and actions. Binary search per position."""
        choices = [(lambda upto: self.init(0, upto), 0, self.n_inits() - 1)]
        return self._least(solver, choices + self._action_choices(k), progress=progress)

    def canonical_from_any(self, solver: z3.Solver, k: int,
                           assumptions: Sequence[z3.BoolRef] = (),
                           progress: Progress | None = None) -> z3.ModelRef:
        """Like `canonical` for paths that may start anywhere (counterexamples to
        induction): the smallest first state, slot by slot in declaration order, then
        the smallest action ids. Small values also make the state easier to read.
        `assumptions` are passed to every check (the lemmas' literals)."""
        first = self.state(0)
        choices = [((lambda upto, v=v: self._at_most(v, upto)), slot.lo, slot.hi)
                   for v, slot in zip(first, self.machine.slots, strict=True)]
        return self._least(solver, choices + self._action_choices(k), assumptions, progress)

    def _action_choices(self, k: int) -> list[tuple[Callable[[int], z3.BoolRef], int, int]]:
        n = len(self.machine.actions)
        return [(partial(self.step, i), 0, n - 1) for i in range(k)]

    def _at_most(self, v: z3.ExprRef, x: int) -> z3.BoolRef:
        if z3.is_bool(v):
            return z3.BoolVal(True) if x >= 1 else z3.Not(v)
        return self.enc.numbers.le(v, self.enc.numbers.val(x))

    @staticmethod
    def _least(solver: z3.Solver, choices: list[tuple[Callable[[int], z3.BoolRef], int, int]],
               assumptions: Sequence[z3.BoolRef] = (),
               progress: Progress | None = None) -> z3.ModelRef:
        """Fix each choice in turn to the least value `c` for which `constrain(c)` (a
        monotone "at most c") is still satisfiable, by binary search on [lo, hi]. A
        violation exists once we get here, so the search runs without the caller's
        timeout: an `unknown` taken for `unsat` would make the choice wrong."""
        solver.set("timeout", NO_TIMEOUT)
        solver.push()
        with Heartbeat(progress, "choosing the least trace") as beat:
            for number, (constrain, lo, hi) in enumerate(choices, 1):
                beat.set(f"choosing the least trace: choice {number} of {len(choices)}")
                first = lo
                while lo < hi:
                    mid = (lo + hi) // 2
                    solver.push()
                    solver.add(constrain(mid))
                    answer = solver.check(*assumptions)
                    solver.pop()
                    if answer == z3.unknown:
                        raise DecodeError(f"the solver gave up while choosing the canonical "
                                          f"path ({solver.reason_unknown()})")
                    if answer == z3.sat:
                        hi = mid
                    else:
                        lo = mid + 1
                solver.add(constrain(lo), z3.Not(constrain(lo - 1)) if lo > first
                           else z3.BoolVal(True))
            answer = solver.check(*assumptions)
        model = solver.model() if answer == z3.sat else None
        solver.pop()
        if model is None:
            raise DecodeError("the solver lost the counterexample while choosing the "
                              "canonical one (a timeout?)")
        return model

    # --- properties ----------------------------------------------------------------
    def state_props(self) -> list[Property]:
        """Invariants, then lemmas: every state property an engine checks."""
        return self.machine.invariants + self.machine.lemmas

    def prop_holds(self, p: Property, i: int) -> z3.BoolRef:
        """Invariant or lemma `p` is defined and true in s_i."""
        return self._holds(p.expr, self.state(i))

    def step_prop_holds(self, p: Property, i: int) -> z3.BoolRef:
        """Step invariant `p` is defined and true on the step s_{i-1} -> s_i."""
        return self._holds(p.expr, self.state(i - 1), self.state(i))

    def no_error(self, i: int, deadlock: bool = False) -> z3.BoolRef:
        """No action instance errs from s_i (and, if asked, some action is enabled)."""
        s = self.state(i)
        errs: list[z3.BoolRef] = []
        guards: list[z3.BoolRef] = []
        for a in self.machine.actions:
            guard = self.enc.term(a.guard, s)
            guards.append(guard)
            gdef = E.defined(a.guard)
            if not (gdef.is_const and gdef.value):
                errs.append(z3.Not(self.enc.term(gdef, s)))
            effect = self._effect_errors(a, s)
            if effect is not None:
                errs.append(z3.And(guard, effect))
        out = [z3.Not(z3.Or(errs))] if errs else []
        if deadlock:
            out.append(z3.Or(guards))
        return z3.And(out)

    def _effect_errors(self, a: ActionInstance, s: list[z3.ExprRef]) -> z3.BoolRef | None:
        """Some update, write check, or check on the successor fails (BFS's per-action
        checks, see `successors.Kernel`)."""
        m = self.machine
        updates = dict(a.updates)
        after = [self.enc.term(updates[j], s) if j in updates else v for j, v in enumerate(s)]
        checks: list[E.Expr] = []
        for slot, e in a.updates:
            checks.append(E.defined(e))
            if e.sort == E.INT:
                checks.append(E.And(E.le(m.slots[slot].lo, e), E.le(e, m.slots[slot].hi)))
        checks += [check.cond for check in a.write_checks]
        live = [c for c in checks if not (c.is_const and c.value)]
        terms = [self.enc.term(c, s) for c in live]
        for p in m.step_invariants:
            d = E.defined(p.expr)
            if not (d.is_const and d.value):
                terms.append(self.enc.term(d, s, after))
        if not terms:
            return None
        return z3.Not(z3.And(terms))

    def _holds(self, e: E.Expr, before: Sequence[z3.ExprRef],
               after: Sequence[z3.ExprRef] | None = None) -> z3.BoolRef:
        d = E.defined(e)
        value = self.enc.term(e, before, after)
        if d.is_const and d.value:
            return value
        return z3.And(self.enc.term(d, before, after), value)

    def _eq(self, v: z3.ExprRef, x: int) -> z3.BoolRef:
        return v == z3.BoolVal(bool(x)) if z3.is_bool(v) else v == self.enc.numbers.val(x)

    # --- decoding ----------------------------------------------------------------------
    def decode(self, model: z3.ModelRef, k: int) -> list[State]:
        """The concrete states s0..sk of a model."""
        out = []
        for i in range(k + 1):
            values = []
            for v, slot in zip(self.state(i), self.machine.slots, strict=True):
                x = model.eval(v, model_completion=True)
                values.append(int(z3.is_true(x)) if slot.leaf.sort == BOOL else x.as_long())
            out.append(tuple(values))
        return out

    def actions_between(self, states: list[State]) -> list[int]:
        """The canonical action instance of each step: the smallest id that leads there."""
        out = []
        for i in range(len(states) - 1):
            out.append(self.action_between(states[i], states[i + 1], i))
        return out

    def action_between(self, before: State, after: State, i: int) -> int:
        for a in self.machine.actions:
            try:
                if self.scalar.enabled(before, a) and self.scalar.apply(before, a) == after:
                    return a.id
            except EvalError:
                continue
        raise DecodeError(f"Z3 and the scalar backend disagree: no action instance leads "
                          f"from step {i}'s state to the next ({self.machine.spec_name}); "
                          f"this is a bug in the Z3 encoding")

    def classify(self, states: list[State], deadlock: bool = False) -> Bad | None:
        """What is wrong at the end of a decoded path, by the scalar backend: the last
        step's step invariants, the last state's invariants and lemmas, errors of the
        actions from it, deadlock."""
        sc, last = self.scalar, states[-1]
        if len(states) > 1:
            try:
                broken = sc.violated_step_invariants(states[-2], last)
            except EvalError:
                return Bad("error", "EvalError", None)
            if broken:
                return Bad("step_invariant", broken[0], None)
        if not sc.within_constraints(last):
            return None
        try:
            broken = sc.violated_invariants(last)
        except EvalError:
            return Bad("error", "EvalError", None)
        if broken:
            return Bad("invariant", broken[0], None)
        enabled = False
        for a in self.machine.actions:
            try:
                on = sc.enabled(last, a)
            except EvalError:
                return Bad("guard_error", "EvalError", a.id)
            if not on:
                continue
            enabled = True
            try:
                nxt = sc.apply(last, a)
                sc.violated_step_invariants(last, nxt)
            except EvalError:
                return Bad("error", "EvalError", a.id)
        if deadlock and not enabled:
            return Bad("deadlock", "Deadlock", None)
        return None
