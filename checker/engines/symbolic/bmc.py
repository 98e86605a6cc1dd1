"""Bounded model checking with Z3: is there a bad path of length <= K?

One incremental solver holds the path s0 -> ... -> sk, extended one step per
depth. At depth k the solver is asked, inside a push/pop, for a path whose last
state or step is bad (an invariant, lemma or step invariant violated, an action
erring, or a deadlock when asked). Depths are tried in order, so the first
violation found is a shortest one, as BFS's is; after an unsat answer "nothing
bad at depth k" is kept as a fact, which also prunes the deeper queries.

A counterexample is decoded into concrete states, each step is attributed to
the smallest action instance the scalar backend confirms, and the trace is
replayed and worded by `report.explain`, exactly like a BFS trace.

`timeout` bounds the whole run: one `Deadline` gives each depth's query what is
left, and running out is `unknown`. Running out while the least trace is chosen
keeps the violation already found (it is real and as short), marked not least.
"""

from __future__ import annotations

import time

import z3

from checker.engines.report import explain, replay
from checker.engines.result import HOLDS, UNKNOWN, CheckResult, Violation
from checker.engines.scope import refuse_unchecked
from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.options import BmcOptions
from checker.engines.symbolic.unroll import Bad, DecodeError, Least, Unrolling, new_solver
from checker.lang.machine import Machine
from checker.progress import Heartbeat

ENGINE = "bmc"
# said of a trace when the timeout stopped the search for the least one (decision 0022)
NOT_LEAST = ("as short as any, but not the least one: the timeout stopped the search for it, "
             "so another run may show another")


def good(u: Unrolling, k: int, deadlock: bool) -> z3.BoolRef:
    """Nothing is wrong at depth k: the step into s_k keeps the step invariants, and
    s_k, if it is explored at all (constraints), keeps every property and lets no
    action err."""
    steps = [u.step_prop_holds(p, k) for p in u.machine.step_invariants] if k else []
    state = [u.prop_holds(p, k) for p in u.state_props()] + [u.no_error(k, deadlock)]
    return z3.And(*steps, z3.Implies(u.explored(k), z3.And(state)))


def bmc(machine: Machine, options: BmcOptions, deadline: Deadline | None = None) -> CheckResult:
    """Search for a violation at depths 0..options.depth; see the module docstring.
    `deadline` (a proof's, when this is its base case) replaces options.timeout."""
    refuse_unchecked(machine, ENGINE)
    deadline = deadline or Deadline(options.timeout, options.started)
    started = time.perf_counter()
    per_depth: list[dict] = []
    phase = "building the initial states"
    try:
        deadline.check(phase)
        u = Unrolling(machine, deadline=deadline)
        solver = new_solver()
        solver.add(u.init(0), u.enc.domain(u.state(0)))
        for k in range(options.depth + 1):
            phase = f"depth {k}"
            deadline.check(phase)
            if k:
                solver.add(u.admissible(k - 1), u.step(k - 1), u.enc.domain(u.state(k)))
            ok = good(u, k, options.deadlock)
            t0 = time.perf_counter()
            solver.push()
            solver.add(z3.Not(ok))
            with Heartbeat(options.progress, f"depth {k:>3} | solving"):
                answer = deadline.solve(solver, phase)
            seconds = time.perf_counter() - t0
            per_depth.append({"depth": k, "seconds": round(seconds, 3), "result": str(answer)})
            if options.progress:
                options.progress(f"depth {k:>3} | {seconds:8.2f} s | {answer}")
            if answer == z3.sat:
                found = u.canonical(solver, k, options.progress, deadline)
                return _counterexample(u, found, k, options.deadlock, per_depth, started)
            if answer == z3.unknown:
                return _unknown(per_depth, started, f"solver answered unknown at depth {k} "
                                                    f"({solver.reason_unknown()})")
            solver.pop()
            solver.add(ok)
    except OutOfTime as out:
        return _unknown(per_depth, started, deadline.describe(out.phase))
    return CheckResult(ENGINE, HOLDS, None, _stats(per_depth, started), complete=False)


def _stats(per_depth: list[dict], started: float) -> dict:
    return {"depth": per_depth[-1]["depth"] if per_depth else -1,
            "seconds": round(time.perf_counter() - started, 3),
            "seconds_per_depth": [d["seconds"] for d in per_depth]}


def _unknown(per_depth: list[dict], started: float, why: str) -> CheckResult:
    stats = _stats(per_depth, started)
    stats["unknown"] = why
    return CheckResult(ENGINE, UNKNOWN, None, stats, complete=False)


def _counterexample(u: Unrolling, found: Least, k: int, deadlock: bool,
                    per_depth: list[dict], started: float) -> CheckResult:
    states = u.decode(found.model, k)
    actions = u.actions_between(states)
    bad = u.classify(states, deadlock)
    if bad is None:
        raise DecodeError(f"Z3 found a bad path of length {k} that the scalar backend "
                          f"finds nothing wrong with; this is a bug in the Z3 encoding")
    outcome, violation = explain_path(u.machine, states, actions, bad, ENGINE)
    stats = _stats(per_depth, started)
    if not found.least:
        stats["trace"] = NOT_LEAST
    return CheckResult(ENGINE, outcome, violation, stats, complete=False)


def explain_path(machine: Machine, states: list, actions: list[int], bad: Bad, engine: str
                 ) -> tuple[str, Violation]:
    """Replay a decoded path through the scalar backend and word its violation as BFS
    does; raises DecodeError if the replay leaves the decoded states."""
    last_step = bad.kind in ("invariant", "step_invariant") and actions
    prefix = actions[:-1] if last_step else actions
    trace = replay(machine, states[0], prefix)
    outcome, violation = explain(machine, trace, bad.kind, bad.name,
                                 actions[-1] if last_step else bad.action, engine)
    if violation.trace.states[:len(states)] != states[:len(violation.trace.states)]:
        raise DecodeError("replaying the decoded actions leaves the states Z3 found; "
                          "this is a bug in the Z3 encoding")
    return outcome, violation
