"""Houdini (Flanagan and Leino, 2001): the largest subset of the candidates that is
inductive together, found by dropping whatever a counterexample falsifies.

Every candidate and the invariants are assumed in s0; after one step Z3 is asked for
a successor falsifying one, action by action. The falsified ones are dropped and the
queries repeated until none is: the survivors are then mutually inductive, hence true
in every reachable state. Invariants take part as members that may fall: if one does, the
candidates cannot prove it. `infer --search houdini` uses it (the default search,
`infer.cti_search`, starts from the invariants instead and scales with what the proof
needs, not with the number of candidates), and so does `prove --engine pdr
--with-spec-lemmas`, to prove the spec's lemmas it seeds Spacer with.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import z3

from checker.backends.scalar import ScalarMachine
from checker.backends.vector import compile_batch, dtype_for, slot_reader
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError, EvalError
from checker.lang.expr import BOOL, slots_read
from checker.lang.machine import Machine, Property
from checker.progress import Heartbeat
from checker.symmetry.group import SymmetryGroup

GROUP = 64  # members compiled and evaluated together


class HoudiniStopped(OutOfTime):
    """The deadline passed in Houdini round `rounds + 1`: `alive` (names) still stand."""

    def __init__(self, phase: str, alive: list[str], rounds: int):
        super().__init__(phase)
        self.alive, self.rounds = alive, rounds


NO_ERROR = "(no action errs)"
EXPANSION = 2000  # states run from each Houdini counterexample's first state
JUDGED = 4096  # states judged together
MOVED = 8  # images of that state under the spec's symmetry, whose successors are judged too


def houdini(machine: Machine, props: list[Property], deadline: Deadline | None,
            progress: Callable[[str], None] | None,
            expand: int = EXPANSION, one_at_a_time: bool = False) -> tuple[set[str], int]:
    """The largest subset of `props` that is inductive with one step, with the
    invariants, the step invariants and "no action errs" as members that may fall
    like any candidate: returns (surviving names, rounds), a round per counterexample.

    Queries go action instance by action instance, in turn: is there a step of this
    one, from a state where every member alive holds, that breaks a member? Only
    members reading a slot the action writes can break (the others read the same
    values after the step), so each query is one action's relation and a fraction of
    the members, where a query over the whole step relation and every member is one
    hard disjunction: on 25,000 mined candidates of log_driven_tiny, 51 s against
    263 s, measured side by side (decision 0026). The search ends when every action
    in a row has answered unsat, the pool unchanged since.

    Each counterexample Z3 returns has a first state satisfying every member still
    alive. Every state reachable from it then satisfies the greatest inductive
    subset, so whatever falls in any of them (up to `expand` states, run by the
    scalar backend and judged in NumPy batches) is dropped in the same round: the
    result is the same fixpoint, in fewer solver calls. So is whatever falls from the
    first state's images under the spec's symmetry (scalarsets) that satisfy every
    member alive, as any such state does: where the first state broke a fact about
    member 2, its image with members 2 and 5 swapped breaks the same fact about 5,
    so a round drops most of an orbit, not one fact of it. Raises HoudiniStopped,
    with the members still alive, when the deadline passes.

    `one_at_a_time` asks, within each action, each member's query in turn, as `prove`
    asks its goals (decision 0024): more queries, each far easier, which pays for a
    few dozen members that mostly hold (the spec lemmas seeding PDR)."""
    deadline = deadline or Deadline(None)
    deadline.check("Houdini")
    u = Unrolling(machine, deadline=deadline)
    solver = new_solver()
    solver.add(u.admissible(0), u.enc.domain(u.state(1)))
    pool = machine.invariants + props
    pre = {p.name: u.prop_holds(p, 0) for p in pool}
    post = {p.name: u.prop_holds(p, 1) for p in pool}
    pre[NO_ERROR], post[NO_ERROR] = u.no_error(0), u.no_error(1)
    steps = {p.name: u.step_prop_holds(p, 1) for p in machine.step_invariants}
    lits = {name: z3.Bool(f"cand:{name}") for name in pre}
    for name, term in pre.items():
        solver.add(z3.Implies(lits[name], term))
    reads = {p.name: slots_read(p.expr) for p in pool}
    transitions = u.transitions(0)
    writes = [a.writes for a in machine.actions]
    explored = u.explored(1)
    concrete = _Concrete(machine, pool)
    alive = list(steps) + list(pre)
    own = {p.name for p in machine.invariants} | set(steps) | {NO_ERROR}
    rounds = 0

    def breakable(action: int) -> list[str]:
        """The members alive a step of `action` could break."""
        return [n for n in alive if n in steps or n == NO_ERROR
                or not reads[n].isdisjoint(writes[action])]

    def goal(names: list[str]) -> z3.BoolRef:
        return z3.And(*[steps[n] for n in names if n in steps],
                      z3.Implies(explored, z3.And([post[n] for n in names if n in post])))

    def ask(action: int, names: list[str]) -> z3.ModelRef | None:
        """A step of `action` from a state where every member alive holds that breaks
        one of `names`, or None if there is none."""
        solver.push()
        solver.add(transitions[action], z3.Not(goal(names)))
        which = f"{len(alive):,} alive" if len(names) > 1 else f"asking {names[0]}"
        with Heartbeat(progress, f"houdini round {rounds + 1:>3} | action "
                                 f"{action + 1} of {len(transitions)} | solving, {which}"):
            answer = deadline.solve(solver, f"Houdini round {rounds + 1}",
                                    *[lits[n] for n in alive if n in lits])
        if answer == z3.unknown:
            raise CheckerError(f"the solver gave up during Houdini "
                               f"({solver.reason_unknown()})")
        model = solver.model() if answer == z3.sat else None
        solver.pop()
        return model

    def counterexample(action: int) -> z3.ModelRef | None:
        names = breakable(action)
        if not names:
            return None
        for asked in [[n] for n in names] if one_at_a_time else [names]:
            model = ask(action, asked)
            if model is not None:
                return model
        return None

    action, quiet = 0, 0  # quiet: actions in a row that answered unsat
    try:
        while quiet < len(transitions):
            model = counterexample(action)
            if model is None:
                quiet += 1
                action = (action + 1) % len(transitions)
                continue
            rounds += 1
            quiet = 0
            on = z3.is_true(model.eval(explored, model_completion=True))
            fell = {n for n in alive if z3.is_false(model.eval(
                steps[n] if n in steps else post[n], model_completion=True))
                and (n in steps or on)}
            start = u.decode(model, 0)[0]
            fell |= concrete.falls_around(start, set(alive) - fell, expand, deadline)
            alive = [n for n in alive if n not in fell]
            if progress:
                named = _fell_line(fell, own)
                progress(f"houdini round {rounds:>3} | dropped {len(fell):>5} | "
                         f"{len(alive):>5} left" + (f" | fell: {named}" if named else ""))
        return set(alive), rounds
    except OutOfTime as out:  # what fell in the unfinished round has not been dropped
        raise HoudiniStopped(out.phase, alive, rounds) from None


SHOWN = 5  # candidates named in a round's progress line


def _fell_line(fell: set[str], own: set[str]) -> str:
    """The members that fell, for a progress line: every one of the machine's own (an
    invariant falling means the candidates cannot prove it), then a few candidates."""
    mine = sorted(fell & own)
    others = sorted(fell - own)
    more = f" and {len(others) - SHOWN:,} more" if len(others) > SHOWN else ""
    return ", ".join(mine + others[:SHOWN]) + more


class _Concrete:
    """Runs the states reachable from one state and says which members fall there."""

    def __init__(self, machine: Machine, pool: list[Property]):
        self.scalar = ScalarMachine(machine)
        self.actions = machine.actions
        self.names = [p.name for p in pool]
        self.filter = _Filter(machine, pool)
        self.group = SymmetryGroup(machine) if machine.scalarsets else None
        self.rng = np.random.default_rng(0)  # the same images, hence rounds, every run

    def falls_around(self, start: tuple[int, ...], alive: set[str], budget: int,
                     deadline: Deadline) -> set[str]:
        """`falls_from` from `start`, then from the successors of MOVED random images
        of it under the symmetry, those images that satisfy every member of `alive`
        still standing (any state that does is as good a start), judged together."""
        fell = self.falls_from(start, alive, budget, deadline)
        left = alive - fell
        self.filter.alive[:] = [n in left for n in self.names]
        images = [m for m in self._images(start) if self.scalar.within_constraints(m)] \
            if budget else []
        broken = self.filter.breaking(images) if images else []
        successors = []
        for image, bad in zip(images, broken, strict=True):
            if bad:
                continue
            broke: set[str] = set()
            after, erred = self._successors(image, left, broke)
            if not erred:  # an action erring there: no start Z3 could have had
                fell |= broke
                successors += after
        if successors:
            fell.update(self.names[i] for i in self.filter.see_rows(successors))
        return fell & alive

    def _successors(self, state: tuple[int, ...], alive: set[str], fell: set[str]
                    ) -> tuple[list[tuple[int, ...]], bool]:
        """`state`'s successors within the constraints, and whether an action (or a step
        property) errs there; the step members of `alive` a step breaks join `fell`."""
        after, erred = [], False
        for action in self.actions:
            try:
                nxt = self.scalar.step(state, action)
                if nxt is None:
                    continue
                fell.update(n for n in self.scalar.violated_step_invariants(state, nxt)
                            if n in alive)
                if self.scalar.within_constraints(nxt):
                    after.append(nxt)
            except EvalError:
                erred = True
        return after, erred

    def _images(self, state: tuple[int, ...]) -> list[tuple[int, ...]]:
        if self.group is None:
            return []
        sizes = [len(s.members) for s in self.group.scalarsets]
        elements = [self.group.element(tuple(tuple(int(i) for i in self.rng.permutation(n))
                                             for n in sizes)) for _ in range(MOVED)]
        return [self.group.apply(e, state) for e in elements]

    def falls_from(self, start: tuple[int, ...], alive: set[str], budget: int,
                   deadline: Deadline) -> set[str]:
        """Members of `alive` some state (or step) reachable from `start` falsifies,
        exploring breadth-first up to `budget` states (fewer when the deadline passes:
        what fell so far is as true). `start` must satisfy all of `alive`. States are
        judged JUDGED at a time, not level by level: where a clock ticks, levels hold a
        few states each, and a call costs the same for one state as for thousands."""
        fell: set[str] = set()
        self.filter.alive[:] = [n in alive for n in self.names]
        seen, frontier, unjudged = {start}, [start], []
        while frontier and len(seen) < budget and not deadline.expired():
            level = []
            for state in frontier:
                after, erred = self._successors(state, alive, fell)
                if erred:  # an action or property errs in a reachable state
                    fell.add(NO_ERROR)
                for nxt in after:
                    if nxt not in seen:
                        seen.add(nxt)
                        level.append(nxt)
            unjudged += level
            if len(unjudged) >= JUDGED:
                fell.update(self.names[i] for i in self.filter.see_rows(unjudged))
                unjudged = []
            frontier = level
        if unjudged:
            fell.update(self.names[i] for i in self.filter.see_rows(unjudged))
        return fell & alive


class _Filter:
    """Properties still true in every state seen so far, each compiled on its own (a
    pool member need not be a clause of literals)."""

    def __init__(self, machine: Machine, props: list[Property]):
        self.props = props
        self.alive = np.ones(len(props), dtype=bool)
        self.groups = [list(range(lo, min(lo + GROUP, len(props))))
                       for lo in range(0, len(props), GROUP)]
        self._fns: dict[int, Callable] = {}
        self._bools = {s.index for s in machine.slots if s.leaf.sort == BOOL}
        self.states = 0

    def _compiled(self, g: int) -> Callable:
        fn = self._fns.get(g)
        if fn is None:
            exprs = [self.props[i].expr for i in self.groups[g]]
            fn = self._fns[g] = compile_batch(exprs, dtype_for(exprs), f"cands_{g}")
        return fn

    def see(self, read: Callable[[int], np.ndarray], n: int) -> list[int]:
        """Judge n states (slot j read by `read(j)`); returns the candidates that fell."""
        self.states += n
        fell = []
        for g, members in enumerate(self.groups):
            live = [i for i in members if self.alive[i]]
            if not live:
                continue
            outs = self._compiled(g)(read, read)
            for i, out in zip(members, outs, strict=True):
                if self.alive[i] and not np.all(out):
                    self.alive[i] = False
                    fell.append(i)
        return fell

    def breaking(self, states: list[tuple[int, ...]]) -> list[bool]:
        """Whether each state falsifies a member alive (none is dropped)."""
        rows = np.asarray(states, dtype=np.int64)
        read = slot_reader(rows, self._bools, np.dtype(np.int64))
        bad = np.zeros(len(rows), dtype=bool)
        for g, members in enumerate(self.groups):
            live = [k for k, i in enumerate(members) if self.alive[i]]
            if live:
                outs = self._compiled(g)(read, read)
                for k in live:
                    bad |= ~np.broadcast_to(np.asarray(outs[k], dtype=bool), bad.shape)
        return bad.tolist()

    def see_rows(self, states: list[tuple[int, ...]]) -> list[int]:
        """Judge concrete states, one per row; returns the members that fell."""
        rows = np.asarray(states, dtype=np.int64)
        return self.see(slot_reader(rows, self._bools, np.dtype(np.int64)), len(rows))
