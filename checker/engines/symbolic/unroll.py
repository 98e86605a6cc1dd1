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
from typing import NamedTuple

import z3

from checker.backends.scalar import ScalarMachine, State
from checker.backends.z3_terms import Z3Encoder
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.errors import EvalError
from checker.lang import expr as E
from checker.lang.expr import BOOL
from checker.lang.machine import ActionInstance, Machine, Property
from checker.progress import Heartbeat, Progress

SEED = 0  # Z3's random seeds: the same model gives the same counterexample


class DecodeError(RuntimeError):
    """A Z3 model that the scalar backend does not confirm: a bug in an encoding."""


def new_solver() -> z3.Solver:
    """A solver with fixed seeds (a `Deadline` sets each check's timeout)."""
    solver = z3.Solver()
    solver.set("random_seed", SEED)
    return solver


# Z3's statistics worth a benchmark's line: work done (rlimit counts it the same on any
# machine), search effort, and the solver's own memory
FIGURES = {"rlimit count": "rlimit", "conflicts": "conflicts", "decisions": "decisions",
           "propagations": "propagations", "num checks": "checks", "max memory": "max_memory_mb"}


def solver_figures(solver: z3.Solver) -> dict[str, float]:
    """The FIGURES of everything `solver` has done so far."""
    stats = solver.statistics()
    return {name: stats.get_key_value(key) for key, name in FIGURES.items()
            if key in stats.keys()}


class Least(NamedTuple):
    """A model of the least path, or, when the deadline stopped the search for it
    (`least` False), of some path of the same length that is just as bad."""

    model: z3.ModelRef
    least: bool


# A position of a path to fix: (constrain, lo, hi), `constrain(c)` meaning "at most c"
Choice = tuple[Callable[[int], z3.BoolRef], int, int]


def _least_in(model: z3.ModelRef, constrain: Callable[[int], z3.BoolRef], lo: int,
              hi: int) -> int:
    """The least c in [lo, hi] whose `constrain(c)` the model satisfies (it must satisfy
    `constrain(hi)`): evaluation only, no solver call."""
    while lo < hi:
        mid = (lo + hi) // 2
        if z3.is_true(model.eval(constrain(mid), model_completion=True)):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class Bad:
    """Why a path ends badly, as found by the scalar backend on the decoded states."""

    kind: str  # "invariant" | "step_invariant" | "error" | "guard_error" | "deadlock"
    name: str  # the property's name, "EvalError" or "Deadlock"
    action: int | None  # for errors: the action instance that fails from the last state


class Unrolling:
    """Z3 state vectors s0, s1, ... of one machine and the formulas over them."""

    def __init__(self, machine: Machine, prefix: str = "s", deadline: Deadline | None = None):
        self.machine = machine
        # checked per action and per property while formulas are built: encoding a big
        # machine takes seconds, and a timeout must not wait for all of it
        self.deadline = deadline or Deadline(None)
        self.enc = Z3Encoder(machine)
        self.prefix = prefix
        self.states: list[list[z3.ExprRef]] = []
        self.scalar = ScalarMachine(machine)
        self._transitions: dict[int, list[z3.BoolRef]] = {}

    def state(self, i: int) -> list[z3.ExprRef]:
        while len(self.states) <= i:
            self.states.append(self.enc.state_vars(f"{self.prefix}{len(self.states)}."))
        return self.states[i]

    # --- states ------------------------------------------------------------------
    def init(self, i: int = 0, upto: int | None = None) -> z3.BoolRef:
        """s_i is one of the initial states that satisfy the constraints (the first
        `upto + 1` of them, if given)."""
        inits = [x for x in self.machine.init_states if self.scalar.within_constraints(x)]
        return z3.Or([self.equals(i, st) for st in inits[:None if upto is None else upto + 1]])

    def equals(self, i: int, state: State) -> z3.BoolRef:
        """s_i is `state`."""
        return z3.And([self._eq(v, x) for v, x in zip(self.state(i), state, strict=True)])

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
        return z3.Or(self.transitions(i)[:None if upto is None else upto + 1])

    def transitions(self, i: int) -> list[z3.BoolRef]:
        """Each action instance's step from s_i to s_{i+1}, by id. Encoded once: the
        least-trace search asks for many prefixes of them."""
        if i not in self._transitions:
            before, after = self.state(i), self.state(i + 1)
            encoded = []
            for a in self.machine.actions:
                self.deadline.check()
                encoded.append(self.enc.transition(a, before, after))
            self._transitions[i] = encoded
        return self._transitions[i]

    def canonical(self, solver: z3.Solver, k: int, progress: Progress | None = None,
                  deadline: Deadline | None = None) -> Least:
        """Of the paths of length k the solver admits (it must answer sat), the one with
        the smallest (initial state, action ids) in lexicographic order. Z3's own choice
        depends on everything the process asked it before; this one does not, and a
        path is fixed by its initial state and actions. Binary search per position."""
        choices = [(lambda upto: self.init(0, upto), 0, self.n_inits() - 1)]
        return self._least(solver, choices + self._action_choices(k), (), progress, deadline)

    def canonical_from_any(self, solver: z3.Solver, k: int,
                           assumptions: Sequence[z3.BoolRef] = (),
                           progress: Progress | None = None,
                           deadline: Deadline | None = None) -> Least:
        """Like `canonical` for paths that may start anywhere (counterexamples to
        induction): the smallest first state, slot by slot in declaration order, then
        the smallest action ids. Small values also make the state easier to read.
        `assumptions` are passed to every check (the lemmas' literals)."""
        first = self.state(0)
        choices = [((lambda upto, v=v: self._at_most(v, upto)), slot.lo, slot.hi)
                   for v, slot in zip(first, self.machine.slots, strict=True)]
        return self._least(solver, choices + self._action_choices(k), assumptions, progress,
                           deadline)

    def _action_choices(self, k: int) -> list[Choice]:
        n = len(self.machine.actions)
        return [(partial(self.step, i), 0, n - 1) for i in range(k)]

    def _at_most(self, v: z3.ExprRef, x: int) -> z3.BoolRef:
        if z3.is_bool(v):
            return z3.BoolVal(True) if x >= 1 else z3.Not(v)
        return self.enc.numbers.le(v, self.enc.numbers.val(x))

    @staticmethod
    def _least(solver: z3.Solver, choices: list[Choice], assumptions: Sequence[z3.BoolRef],
               progress: Progress | None, deadline: Deadline | None) -> Least:
        """Fix each choice in turn to the least value `c` for which `constrain(c)` (a
        monotone "at most c") is still satisfiable (`_LeastSearch`). The deadline
        applies to the queries (an `unknown` taken for `unsat` would make a choice
        wrong); when it passes, the latest model is returned as it is: a violation of
        the same length, just not the least one."""
        search = _LeastSearch(solver, choices, assumptions, deadline or Deadline(None))
        solver.push()
        try:
            with Heartbeat(progress, "choosing the least trace") as beat:
                search.run(beat)
        except OutOfTime:
            return Least(search.model, False)
        finally:
            solver.pop()
        return Least(search.model, True)

    # --- properties ----------------------------------------------------------------
    def state_props(self) -> list[Property]:
        """Invariants, then lemmas: every state property an engine checks."""
        return self.machine.invariants + self.machine.lemmas

    def prop_holds(self, p: Property, i: int) -> z3.BoolRef:
        """Invariant or lemma `p` is defined and true in s_i."""
        self.deadline.check()
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
            self.deadline.check()
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


class _LeastSearch:
    """The lexicographically least values of `choices`, each fixed in turn given those
    before it, on a solver that has just answered sat.

    Queries are few because most least values are the choice's lowest (`lo`):

    - the latest model bounds every search from above, so a value it already takes
      costs no query, and a run of choices it leaves at `lo` costs none;
    - a run the model does not leave at `lo` is asked for whole: how many choices
      from here can all take `lo`, by galloping (1, 2, 4, ... more) then bisection;
      the one after the run cannot, and its value is found by binary search.

    The latest model always satisfies every choice fixed so far (it came from the last
    sat query, which asked for what was then fixed), so it is the answer at the end,
    or, if the deadline stops the search, a path just as bad."""

    def __init__(self, solver: z3.Solver, choices: list[Choice],
                 assumptions: Sequence[z3.BoolRef], deadline: Deadline):
        self.solver, self.choices = solver, choices
        self.assumptions, self.deadline = assumptions, deadline
        self.model = solver.model()

    def run(self, beat: Heartbeat) -> None:
        i, n = 0, len(self.choices)
        while i < n:
            beat.set(f"choosing the least trace: choice {i + 1} of {n}")
            run = self._run_at_lowest(i)
            for j in range(i, i + run):
                self._fix(j, self.choices[j][1])
            i += run
            if i < n:  # choice i cannot take its lowest value
                self._fix(i, self._least_value(i))
                i += 1

    def _ask(self, *constraints: z3.BoolRef) -> bool:
        """Can the path satisfy `constraints` too? A yes moves to its model."""
        self.solver.push()
        self.solver.add(*constraints)
        try:
            answer = self.deadline.solve(self.solver, "the search for the least trace",
                                         *self.assumptions)
            if answer == z3.sat:
                self.model = self.solver.model()
        finally:
            self.solver.pop()
        if answer == z3.unknown:
            raise DecodeError(f"the solver gave up while choosing the canonical path "
                              f"({self.solver.reason_unknown()})")
        return answer == z3.sat

    def _lowest(self, i: int, j: int) -> list[z3.BoolRef]:
        """Choices i..j-1 at their lowest values."""
        return [constrain(lo) for constrain, lo, _ in self.choices[i:j]]

    def _model_run(self, i: int) -> int:
        """How many choices from i the latest model has at their lowest values."""
        j = i
        while j < len(self.choices) and z3.is_true(self.model.eval(
                self.choices[j][0](self.choices[j][1]), model_completion=True)):
            j += 1
        return j - i

    def _run_at_lowest(self, i: int) -> int:
        """The longest run of choices from i that can all take their lowest values."""
        n = len(self.choices) - i
        good, bad, step = self._model_run(i), None, 1
        while good < n and bad is None:
            size = min(good + step, n)
            if self._ask(*self._lowest(i, i + size)):
                good, step = max(size, self._model_run(i)), step * 2
            else:
                bad = size
        while bad is not None and bad - good > 1:
            mid = (good + bad) // 2
            if self._ask(*self._lowest(i, i + mid)):
                good = max(mid, self._model_run(i))
            else:
                bad = mid
        return good

    def _least_value(self, i: int) -> int:
        """The least value of choice i, which is above its lowest: binary search, from
        above by the latest model."""
        constrain, lo, hi = self.choices[i]
        lo, hi = lo + 1, _least_in(self.model, constrain, lo, hi)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._ask(constrain(mid)):
                hi = _least_in(self.model, constrain, lo, mid)
            else:
                lo = mid + 1
        return lo

    def _fix(self, i: int, value: int) -> None:
        constrain, lo, _ = self.choices[i]
        self.solver.add(constrain(value))
        if value > lo:
            self.solver.add(z3.Not(constrain(value - 1)))
