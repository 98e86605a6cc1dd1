"""Random simulation: seeded random walks through a spec.

Exhaustive search stops scaling long before a spec stops being interesting;
random walks reach deep states cheaply and find many bugs first. Walks are
reproducible from the seed alone, so a violation found once is found again
and its trace replays.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

from checker.backends.scalar import ScalarMachine, State
from checker.engines.result import ERROR, HOLDS, VIOLATED, CheckResult, Violation
from checker.errors import EvalError
from checker.lang.machine import ActionInstance, Machine
from checker.traces.trace import Trace

ENGINE = "simulate"
PROGRESS_SECONDS = 1.0

# a walk: the action taken into each state (None for the initial state) and the state
Walk = list[tuple[ActionInstance | None, State]]


class _Found(Exception):
    """A violation: its kind, property name, message and the walk that shows it."""

    def __init__(self, kind: str, name: str, message: str, walk: Walk):
        super().__init__(message)
        self.kind, self.name, self.message, self.walk = kind, name, message, walk


def simulate(machine: Machine, *, seed: int = 0, steps: int = 100, runs: int = 10,
             deadlock: bool = True, progress: Callable[[str], None] | None = None
             ) -> CheckResult:
    """Up to `runs` random walks of up to `steps` steps; stops at the first violation."""
    sim = _Simulation(machine, random.Random(seed), deadlock, progress)
    found = sim.explore(runs, steps)
    seconds = time.monotonic() - sim.started
    result = CheckResult(
        engine=ENGINE,
        outcome=HOLDS,
        stats={"runs": sim.runs, "steps": sim.steps, "distinct_states": len(sim.seen),
               "seconds": round(seconds, 3),
               "steps_per_second": round(sim.steps / seconds) if seconds > 0 else 0},
        coverage=[{"action": name, "taken": sim.taken[name]} for name in machine.action_names()],
        complete=False,  # random walks never show that no violation exists
    )
    if found is not None:
        trace = Trace(machine, [s for _, s in found.walk], [a for a, _ in found.walk],
                      violation={"kind": found.kind, "name": found.name,
                                 "message": found.message},
                      meta={"engine": ENGINE, "seed": seed, "run": max(sim.runs - 1, 0)})
        result.outcome = ERROR if found.kind == "error" else VIOLATED
        result.violation = Violation(found.kind, found.name, found.message, trace)
    return result


class _Simulation:
    """The walks of one `simulate` call and what they have seen so far."""

    def __init__(self, machine: Machine, rng: random.Random, deadlock: bool,
                 progress: Callable[[str], None] | None):
        self.machine = machine
        self.scalar = ScalarMachine(machine)
        self.rng = rng
        self.deadlock = deadlock
        self.progress = progress
        self.taken: Counter[str] = Counter()
        self.seen: set[State] = set()
        self.runs = self.steps = 0
        self.started = self.last_report = time.monotonic()

    def explore(self, runs: int, steps: int) -> _Found | None:
        """Walk until `runs` walks are done or one shows a violation, which is returned."""
        walk: Walk = []
        try:
            inits = [s for s in self.machine.init_states if self._allowed([], None, s)]
            for run in range(runs if inits else 0):
                self.runs = run + 1
                walk = [(None, self.rng.choice(inits))]
                self._check_state(walk)
                for _ in range(steps):
                    if not self._step(walk):
                        break
                    self._report(runs)
        except _Found as found:
            return found
        except EvalError as exc:
            return _Found("error", "EvalError", str(exc), walk)
        return None

    def _step(self, walk: Walk) -> bool:
        """Extend `walk` by a random step within the constraints; False ends the run."""
        state = walk[-1][1]
        successors = self.scalar.successors(state)
        if not successors:
            if self.deadlock:
                raise _Found("deadlock", "Deadlock", "no action is enabled (deadlock)", walk)
            return False
        allowed = [(a, s) for a, s in successors if self._allowed(walk, a, s)]
        if not allowed:
            return False
        action, nxt = self.rng.choice(allowed)
        walk.append((action, nxt))
        self.taken[action.name] += 1
        self.steps += 1
        self._check_state(walk)
        broken = self.scalar.violated_step_invariants(state, nxt)
        if broken:
            raise _Found("step_invariant", broken[0], _violated(broken[0], action), walk)
        return True

    def _allowed(self, walk: Walk, action: ActionInstance | None, state: State) -> bool:
        """Whether `state`, reached from `walk` by `action`, is within the constraints."""
        try:
            return self.scalar.within_constraints(state)
        except EvalError as exc:
            raise _Found("error", "EvalError", str(exc), [*walk, (action, state)]) from None

    def _check_state(self, walk: Walk) -> None:
        action, state = walk[-1]
        self.seen.add(state)
        broken = self.scalar.violated_invariants(state)
        if broken:
            raise _Found("invariant", broken[0], _violated(broken[0], action), walk)

    def _report(self, runs: int) -> None:
        now = time.monotonic()
        if self.progress is None or now - self.last_report < PROGRESS_SECONDS:
            return
        self.last_report = now
        self.progress(f"simulate: run {self.runs}/{runs}, {self.steps} steps, "
                      f"{len(self.seen)} distinct states, "
                      f"{self.steps / (now - self.started):.0f} steps/s")


def _violated(name: str, action: ActionInstance | None) -> str:
    """The message the BFS engine gives for the same violation."""
    return f"{name} is violated " + (f"after {action.label}" if action else "in the initial state")
