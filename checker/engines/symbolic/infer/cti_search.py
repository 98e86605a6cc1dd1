"""Lemmas chosen to rule out counterexamples to induction, from the invariants up.

Houdini starts from every candidate and drops those a counterexample falsifies; with
tens of thousands of candidates each round is a large query that drops a handful.
This search starts from the goals instead (the idea of endive's CTI elimination,
Schultz, Dardik and Tan, 2022), and lets NumPy do the choosing:

1. For each goal not yet known to hold (the invariants', with "no action errs" and
   the step invariants, then each chosen lemma's), Z3 gives a counterexample to
   induction (or `per_goal`, each different): a state satisfying the invariants and
   the lemmas chosen so far, from which a step breaks the goal. (More per goal gave
   more lemmas, not fewer: 996 instead of 827 on `tracker_small` at its BFS sizes.)
2. Every candidate holds in every reachable state, so a candidate false in a CTI's
   first state shows that state unreachable, and adding the candidate rules the CTI
   out. Every candidate is judged on every CTI of the round at once (their literals'
   values, `templates.judge`), and the one ruling out the most is chosen (ties: the
   simplest, first in template order), then the next for those left, until none is.
3. A CTI no candidate rules out gets a clause of its own (`Pool.generalize`): the
   negation of a minimal set of the literals true in its first state that no judged
   state has all of.
   With every reachable state judged, that always exists, since the CTI's first
   state is unreachable, unless no literal tells it apart from one judged (an integer
   of a range wider than `templates.WIDE` has literals for its ends only). It does not
   when the state is one of those judged (random walks judged a sample, and the CTI
   is reachable: an invariant fails for real) or when the clause was withdrawn
   before. Then a CTI of a chosen lemma withdraws that lemma for good (the search
   cannot support it) and every goal is asked again; a CTI of the invariants' goal
   ends the search, and that state is the evidence.
4. No CTI is left: the invariants and the lemmas chosen are inductive together.

A goal that holds keeps holding as lemmas are added (more hypotheses), so it is asked
again only after a withdrawal. Each round adds a lemma or withdraws one for good, so
the search ends. The result is checked again by `prove` before it is called a proof.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import z3

from checker.backends.scalar import State
from checker.backends.vector import slot_reader
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.infer.templates import Candidate, Judge, Pool, judge
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError
from checker.lang.expr import BOOL
from checker.lang.machine import Machine, Property
from checker.progress import Heartbeat

INVARIANTS = "the invariants"
SEEN = "no literal tells it apart from a state the candidates were judged on"
WITHDRAWN = "the clause made from it was withdrawn earlier (its own CTIs could not be ruled out)"
PHASE = "the search for lemmas ruling out counterexamples to induction"


@dataclass
class Stuck:
    """A CTI of the invariants (or of a spec lemma) that no candidate rules out."""
    goal: str  # the goal a step from it breaks: INVARIANTS or the lemma's name
    state: dict[str, str]  # the CTI's first state, slot by slot
    why: str  # why nothing rules it out


@dataclass
class Strengthening:
    chosen: list[Candidate]  # the lemmas standing at the end, in the order chosen
    proves: bool  # no CTI is left: with the invariants they are inductive
    rounds: int = 0
    ctis: int = 0  # counterexamples to induction ruled out
    withdrawn: list[Candidate] = field(default_factory=list)
    stuck: Stuck | None = None


class SearchStopped(OutOfTime):
    """The deadline passed in the search: `chosen` is what stood then, not a proof."""

    def __init__(self, phase: str, chosen: list[Candidate], rounds: int):
        super().__init__(phase)
        self.chosen, self.rounds = chosen, rounds


class _Goals:
    """The solver: one step from a state satisfying the invariants and the chosen
    lemmas (each behind an assumption literal), and the goals asked after it."""

    def __init__(self, machine: Machine, deadline: Deadline, fixed: list[Property]):
        self.machine, self.deadline = machine, deadline
        self.u = u = Unrolling(machine, deadline=deadline)
        self.solver = new_solver()
        self.solver.add(u.admissible(0), u.step(0), u.no_error(0), u.enc.domain(u.state(1)))
        for p in machine.invariants + fixed:
            self.solver.add(u.prop_holds(p, 0))
        self.lits: dict[int, z3.BoolRef] = {}
        self.goal: dict[int | str, z3.BoolRef] = {
            p.name: z3.Implies(u.explored(1), u.prop_holds(p, 1)) for p in fixed}
        self.goal[INVARIANTS] = self._invariants()

    def choose(self, i: int, cand: Candidate) -> None:
        """Candidate `i` becomes a hypothesis (when assumed) and a goal."""
        u, prop = self.u, Property(f"Candidate{i}", cand.expr, cand.source)
        self.lits[i] = z3.Bool(f"chosen:{i}")
        self.solver.add(z3.Implies(self.lits[i], u.prop_holds(prop, 0)))
        self.goal[i] = z3.Implies(u.explored(1), u.prop_holds(prop, 1))

    def _invariants(self) -> z3.BoolRef:
        u, m = self.u, self.machine
        state = [u.prop_holds(p, 1) for p in m.invariants] + [u.no_error(1)]
        steps = [u.step_prop_holds(p, 1) for p in m.step_invariants]
        return z3.And(*steps, z3.Implies(u.explored(1), z3.And(state)))

    def ctis(self, goal: z3.BoolRef, assumed: list[int], most: int) -> list[State]:
        """Up to `most` first states of steps that break `goal`, each different."""
        out: list[State] = []
        self.solver.push()
        try:
            self.solver.add(z3.Not(goal))
            while len(out) < most:
                answer = self.deadline.solve(self.solver, PHASE,
                                             *[self.lits[i] for i in assumed])
                if answer == z3.unknown:
                    raise CheckerError(f"infer: the solver gave up on a goal "
                                       f"({self.solver.reason_unknown()})")
                if answer == z3.unsat:
                    break
                out.append(self.u.decode(self.solver.model(), 0)[0])
                self.solver.add(z3.Not(self.u.equals(0, out[-1])))
        finally:
            self.solver.pop()
        return out


def strengthen(machine: Machine, pool: Pool, cands: list[Candidate], deadline: Deadline,
               progress: Callable[[str], None] | None = None, per_goal: int = 1,
               fixed: list[Property] | None = None) -> Strengthening:
    """Choose lemmas among `cands` (all true in every state `pool` judged), and clauses
    `pool.generalize` makes for the CTIs none of them rules out, until the invariants
    and the lemmas are inductive, or a CTI of the invariants cannot be ruled out. Raises
    OutOfTime when the deadline passes. `cands` grows by the clauses made. `fixed`
    lemmas (the spec's own) are hypotheses and goals from the start, never withdrawn:
    a CTI of one that nothing rules out ends the search like one of the invariants.
    Raises SearchStopped, with the lemmas chosen by then, when the deadline passes."""
    chosen: list[int] = []
    out = Strengthening([], proves=False)
    try:
        return _search(machine, pool, cands, deadline, progress, per_goal, fixed or [],
                       chosen, out)
    except OutOfTime as stop:
        raise SearchStopped(stop.phase, [cands[i] for i in chosen], out.rounds - 1) from None


def _search(machine: Machine, pool: Pool, cands: list[Candidate], deadline: Deadline,
            progress: Callable[[str], None] | None, per_goal: int, fixed: list[Property],
            chosen: list[int], out: Strengthening) -> Strengthening:
    """`strengthen`'s rounds; `chosen` and `out` are filled as they go."""
    say = progress or (lambda line: None)
    goals = _Goals(machine, deadline, fixed)
    bools = {s.index for s in machine.slots if s.leaf.sort == BOOL}
    banned: set[int] = set()
    settled: set[int | str] = set()
    known = {c.clause for c in cands}
    judged = Judge(cands)
    while True:
        out.rounds += 1
        found: list[tuple[int | str, State]] = []  # (goal, first state of a CTI)
        with Heartbeat(progress, lambda: f"cti round {out.rounds:>3} | asking "
                                         f"{1 + len(fixed) + len(chosen) - len(settled):,} "
                                         f"goals, "
                                         f"{len(chosen):,} lemmas chosen"):
            order: list[int | str] = [INVARIANTS, *(p.name for p in fixed), *chosen]
            for goal in order:
                if goal in settled:
                    continue
                states = goals.ctis(goals.goal[goal], chosen, per_goal)
                found += [(goal, s) for s in states]
                if not states:
                    settled.add(goal)
        if not found:
            out.chosen, out.proves = [cands[i] for i in chosen], True
            return out
        rows = np.array([s for _, s in found], dtype=np.int64)
        values = pool.values(slot_reader(rows, bools, np.dtype(np.int64)), len(rows))
        rules_out = ~judged(values)
        rules_out[chosen + sorted(banned)] = False
        left, picked = list(range(len(found))), []
        while left:  # the candidate ruling out the most CTIs left, the first of equals
            scores = rules_out[:, left].sum(axis=1)
            best = int(np.argmax(scores))
            if scores[best] == 0:
                break
            picked.append(best)
            left = [j for j in left if not rules_out[best, j]]
        made, unruled, why = 0, [], {}
        while left:  # no template rules these out: a clause made from the first one
            clause = pool.generalize(values[:, left[0]])
            if clause is None or clause.clause in known:
                why[left[0]] = SEEN if clause is None else WITHDRAWN
                unruled.append(left.pop(0))
                continue
            cands.append(clause)
            judged.add([clause])
            known.add(clause.clause)
            picked.append(len(cands) - 1)
            made += 1
            left = [j for j in left if judge([clause], values[:, [j]])[0, 0]]
        for i in picked:
            chosen.append(i)
            goals.choose(i, cands[i])
        out.ctis += len(found) - len(unruled)
        stuck = next((j for j in unruled if isinstance(found[j][0], str)), None)
        if stuck is not None:
            goal, state = found[stuck]
            out.chosen = [cands[i] for i in chosen]
            out.stuck = Stuck(str(goal), {s.name: s.show(v) for s, v in
                                          zip(machine.slots, state, strict=True)}, why[stuck])
            return out
        withdrawn = sorted({g for g, _ in (found[j] for j in unruled)
                            if isinstance(g, int)}, key=chosen.index)
        for g in withdrawn:
            chosen.remove(g)
            banned.add(g)
            out.withdrawn.append(cands[g])
        if withdrawn:
            settled.clear()
        say(f"cti round {out.rounds:>3} | {len(found):>4} CTIs | {len(picked) - made:>3} "
            f"lemmas from templates, {made:>3} made | {len(withdrawn)} withdrawn | "
            f"{len(chosen):,} chosen")
