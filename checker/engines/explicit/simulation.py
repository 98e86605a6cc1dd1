"""Random simulation: seeded random walks through a spec.

Exhaustive search stops scaling long before a spec stops being interesting;
random walks reach deep states cheaply and find many bugs first. Walks are
reproducible from the seed alone, so a violation found once is found again
and its trace replays.

Liveness is checked on the behaviours the walks sample, as TLC's simulation
mode does: when a walk comes back to a state it visited, or stops in a state
with no successor (a behaviour that stutters there), the lasso it closes is
confirmed against every liveness property (`liveness.confirm_lasso`: trigger,
no goal, fair loop), and a lasso that violates one is the counterexample.
Walks never show that no violation exists: the verdict is at best "no
violation found".
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from checker.backends.scalar import ScalarMachine, State
from checker.engines.explicit.liveness import confirm_lasso
from checker.engines.result import ERROR, HOLDS, UNKNOWN, VIOLATED, CheckResult, Violation
from checker.engines.scope import refuse_unchecked
from checker.errors import EvalError
from checker.lang.machine import ActionInstance, Machine
from checker.traces.trace import Trace, failing

ENGINE = "simulate"
PROGRESS_SECONDS = 1.0

# a walk: the action taken into each state (None for the initial state) and the state
Walk = list[tuple[ActionInstance | None, State]]


@dataclass
class SimulationOptions:
    seed: int = 0
    steps: int = 100  # the length of each walk
    runs: int = 10  # the number of walks
    deadlock: bool = True
    timeout: float | None = None  # seconds; the walks then stop, inconclusive
    progress: Callable[[str], None] | None = None


class _Found(Exception):
    """A violation: its kind, property name, message and the walk that shows it; a
    lasso also says where its loop starts and the action closing it (None: it stutters);
    an evaluation error of an action, that action's id."""

    def __init__(self, kind: str, name: str, message: str, walk: Walk,
                 loop: int | None = None, loop_action: ActionInstance | None = None,
                 action: int | None = None):
        super().__init__(message)
        self.kind, self.name, self.message, self.walk = kind, name, message, walk
        self.loop, self.loop_action, self.action = loop, loop_action, action


class _OutOfTime(Exception):
    """The timeout passed: the walks stop where they are."""


def simulate(machine: Machine, options: SimulationOptions | None = None) -> CheckResult:
    """Up to `runs` random walks of up to `steps` steps; stops at the first violation."""
    options = options or SimulationOptions()
    refuse_unchecked(machine, ENGINE)
    sim = _Simulation(machine, random.Random(options.seed), options)
    found = sim.explore(options.runs, options.steps)
    seconds = time.monotonic() - sim.started
    result = CheckResult(
        engine=ENGINE,
        outcome=HOLDS,
        stats={"runs": sim.runs, "steps": sim.steps, "distinct_states": len(sim.seen),
               "lassos_checked": sim.lassos, "seconds": round(seconds, 3),
               "steps_per_second": round(sim.steps / seconds) if seconds > 0 else 0},
        coverage=[{"action": name, "taken": sim.taken[name]} for name in machine.action_names()],
        complete=False,  # random walks never show that no violation exists
    )
    if sim.out_of_time:
        result.outcome = UNKNOWN
        result.stats["unknown"] = (f"stopped by the timeout after {options.timeout:g} s, in "
                                   f"walk {sim.runs} of {options.runs}")
    if found is not None:
        fails = {} if found.action is None else {
            "action": failing(machine.actions[found.action])}
        trace = Trace(machine, [s for _, s in found.walk], [a for a, _ in found.walk],
                      violation={"kind": found.kind, "name": found.name,
                                 "message": found.message, **fails},
                      meta={"engine": ENGINE, "seed": options.seed,
                            "run": max(sim.runs - 1, 0)},
                      loop=found.loop, loop_action=found.loop_action)
        result.outcome = ERROR if found.kind == "error" else VIOLATED
        result.violation = Violation(found.kind, found.name, found.message, trace)
    return result


class _Simulation:
    """The walks of one `simulate` call and what they have seen so far."""

    def __init__(self, machine: Machine, rng: random.Random, options: SimulationOptions):
        self.machine = machine
        self.scalar = ScalarMachine(machine)
        self.rng = rng
        self.deadlock = options.deadlock
        self.progress = options.progress
        self.taken: Counter[str] = Counter()
        self.seen: set[State] = set()
        self.runs = self.steps = self.lassos = 0
        self.started = self.last_report = time.monotonic()
        self.deadline = None if options.timeout is None else self.started + options.timeout
        self.out_of_time = False
        self.checked_loops: set[tuple[int, int]] = set()  # (loop start, end) this walk
        self.positions: dict[State, int] = {}  # first index of each state of this walk

    def explore(self, runs: int, steps: int) -> _Found | None:
        """Walk until `runs` walks are done or one shows a violation, which is returned."""
        walk: Walk = []
        try:
            inits = [s for s in self.machine.init_states if self._allowed([], None, s)]
            for run in range(runs if inits else 0):
                self.runs = run + 1
                walk = [(None, self.rng.choice(inits))]
                self.checked_loops.clear()
                self.positions = {walk[0][1]: 0}
                self._check_state(walk)
                for _ in range(steps):
                    if not self._step(walk):
                        break
                    self._report(runs)
        except _Found as found:
            return found
        except _OutOfTime:
            self.out_of_time = True
        except EvalError as exc:  # an action fails to evaluate at the walk's end
            return _Found("error", "EvalError", str(exc), walk, action=exc.action)
        return None

    def _step(self, walk: Walk) -> bool:
        """Extend `walk` by a random step within the constraints; False ends the run."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _OutOfTime
        state = walk[-1][1]
        successors = self.scalar.successors(state)
        if not successors:
            if self.deadlock:
                raise _Found("deadlock", "Deadlock", "no action is enabled (deadlock)", walk)
            self._check_lasso(walk, len(walk) - 1, None)
            return False
        allowed = [(a, s) for a, s in successors if self._allowed(walk, a, s)]
        if not allowed:
            self._check_lasso(walk, len(walk) - 1, None)
            return False
        action, nxt = self.rng.choice(allowed)
        earlier = self.positions.setdefault(nxt, len(walk))
        walk.append((action, nxt))
        self.taken[action.name] += 1
        self.steps += 1
        self._check_state(walk)
        broken = self.scalar.violated_step_invariants(state, nxt)
        if broken:
            raise _Found("step_invariant", broken[0], _violated(broken[0], action), walk)
        if earlier < len(walk) - 1:  # back in a state this walk visited
            self._check_lasso(walk[:-1], earlier, action)
        return True

    def _check_lasso(self, walk: Walk, loop: int, closing: ActionInstance | None) -> None:
        """The behaviour that follows `walk` and then loops back to walk[loop] by `closing`
        forever (None: stays in the last state): report it if it violates a liveness
        property. Each loop of a walk is checked once."""
        if not self.machine.liveness or (loop, len(walk)) in self.checked_loops:
            return
        self.checked_loops.add((loop, len(walk)))
        self.lassos += 1
        trace = Trace(self.machine, [s for _, s in walk], [a for a, _ in walk], loop=loop,
                      loop_action=closing)
        violated = confirm_lasso(trace)
        if violated:
            how = "stays forever in its last state" if closing is None else \
                f"loops back to state {loop}"
            raise _Found("liveness", violated[0], f"{violated[0]}: the behaviour {how} "
                         "without reaching the goal", walk, loop, closing)

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
