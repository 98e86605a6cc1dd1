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
first does not change it. With `workers` above one, forked processes share the
goals (`goal_workers`); the verdict and the CTI are the same for any number.

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
from checker.engines.symbolic.goal_workers import ask_in_workers
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.step import (
    ENGINE,
    GoalAnswer,
    InductiveStep,
    goal_names,
    lemmas_used,
)
from checker.engines.symbolic.unroll import solver_figures
from checker.lang.machine import Machine
from checker.progress import Heartbeat

PROVED = "proved"
COUNTEREXAMPLE = "counterexample"
NOT_INDUCTIVE = "not inductive"


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
    invariant: str = ""  # pdr: the inductive invariant it found, as lemmas in spec source


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
    step: InductiveStep | None = None
    figures: list[dict] = []
    workers = min(options.workers, len(goal_names(machine)))
    try:
        t0 = time.perf_counter()
        with Heartbeat(options.progress, f"inductive step (k={k})") as beat:
            if workers > 1:
                answers, figures = ask_in_workers(machine, k, options.deadlock, deadline,
                                                  workers, beat)
            else:
                step = InductiveStep(machine, k, options.deadlock, deadline)
                answers = _ask_in_turn(step, beat)
        stats["step_seconds"] = round(time.perf_counter() - t0, 3)
        stats["seconds_per_goal"] = {a.goal: a.seconds for a in answers}
        stats["workers"] = workers
        failed = next((a for a in answers if a.answer != "unsat"), None)
        say(f"inductive step (k={k}) | {stats['step_seconds']:8.2f} s | "
            f"{'unsat' if failed is None else failed.answer} "
            f"({len(answers)} of {1 + len(machine.lemmas)} goals answered)")
        if failed is not None and failed.answer == "unknown":
            return done(UNKNOWN, f"inductive step: solver answered unknown on the goal of "
                                 f"{failed.goal} ({failed.reason})")
        if failed is not None:
            step = step or InductiveStep(machine, k, options.deadlock, deadline)
            if step.break_any() == z3.unknown:
                return done(UNKNOWN, f"inductive step: solver answered unknown on the goals "
                                     f"together ({step.solver.reason_unknown()})")
            violation, least = step.cti(options.progress)
            if not least:
                stats["trace"] = NOT_LEAST
            return done(NOT_INDUCTIVE, violation.message, violation=violation)
    except OutOfTime as out:
        return done(UNKNOWN, deadline.describe(out.phase))
    finally:
        if step is not None:
            figures.append(solver_figures(step.solver))
        stats["z3"] = {key: sum(f.get(key, 0) for f in figures)
                       for key in sorted({key for f in figures for key in f})}
    used = lemmas_used(machine, {a.goal: a.core for a in answers})
    names = [p.name for p in machine.lemmas]
    return done(PROVED, f"every invariant holds in every reachable state ({k}-induction)",
                lemmas_used=used, lemmas_unused=[n for n in names if n not in used])


def _ask_in_turn(step: InductiveStep, beat: Heartbeat) -> list[GoalAnswer]:
    """Each goal's answer, in order, up to the first that is not unsat."""
    answers = []
    for i, name in enumerate(step.goals, 1):
        beat.set(f"inductive step (k={step.k}) | goal {i} of {len(step.goals)}: {name}")
        answers.append(step.ask(name))
        if answers[-1].answer != "unsat":
            break
    return answers
