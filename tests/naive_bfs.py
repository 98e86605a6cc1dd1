"""A dead-simple reference BFS, used as an oracle for the real engines.

It steps concrete states with the scalar backend (`ScalarMachine`), keeps visited states
in a Python dict and explores level by level with a deque. No packing, no hashing, no
batching: whatever the fast engines do, this must agree with them on distinct-state
counts, diameter and the length of the shortest counterexample.

Semantics (the ones the engines are held to):
* initial states that violate a constraint are dropped; so are successors that do;
* `distinct` counts every kept state, `diameter` is the largest BFS depth reached
  (a counter 0..N has diameter N);
* invariants and lemmas are checked on every kept state; step invariants on every
  transition from a kept state, also into states seen before and into states the
  constraints discard (as TLC checks implied actions; decision 0005);
* `generated` counts the transitions into kept states;
* a deadlock is a kept state with no enabled action instance (only if `deadlock`);
* the reported violation is one of minimal trace length (number of steps), found by
  finishing the level in which the first one shows up.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from checker.backends.scalar import ScalarMachine
from checker.lang.machine import Machine

State = tuple[int, ...]


@dataclass
class NaiveViolation:
    kind: str  # "invariant" | "step_invariant" | "deadlock"
    name: str
    states: list[State]  # from an initial state to the bad one (or the deadlocked one)

    def __len__(self) -> int:
        """Number of steps, as `Trace.__len__`."""
        return len(self.states) - 1


@dataclass
class NaiveResult:
    distinct: int
    diameter: int
    generated: int  # transitions into kept states, including re-visits
    violation: NaiveViolation | None = None
    complete: bool = True
    levels: list[int] = field(default_factory=list)  # distinct states per depth

    @property
    def outcome(self) -> str:
        """In the model files' words: `holds` or `violates NAME`."""
        return "holds" if self.violation is None else f"violates {self.violation.name}"


def naive_bfs(machine: Machine, *, deadlock: bool = False, max_depth: int | None = None,
              check: bool = True, max_states: int | None = None) -> NaiveResult:
    """Explore `machine` breadth-first; `check=False` ignores all properties."""
    sm = ScalarMachine(machine)
    parent: dict[State, State | None] = {}
    depth_of: dict[State, int] = {}
    found: list[tuple[int, NaiveViolation]] = []

    def path(state: State) -> list[State]:
        out = [state]
        while (p := parent[out[-1]]) is not None:
            out.append(p)
        return out[::-1]

    def bad_state(state: State) -> None:
        if check:
            names = sm.violated_invariants(state)
            if names:
                found.append((depth_of[state], NaiveViolation("invariant", names[0], path(state))))

    frontier: deque[State] = deque()
    for init in machine.init_states:
        if init in parent or not sm.within_constraints(init):
            continue
        parent[init] = None
        depth_of[init] = 0
        frontier.append(init)
        bad_state(init)
    levels = [len(frontier)]
    generated = 0
    depth = 0
    complete = True
    while frontier and not found:
        if max_depth is not None and depth >= max_depth:
            complete = False
            break
        nxt: deque[State] = deque()
        for state in frontier:
            succs = sm.successors(state)
            if deadlock and not succs:
                found.append((depth, NaiveViolation("deadlock", "Deadlock", path(state))))
            for _action, succ in succs:
                if check:  # on every transition, even into a state the constraints discard
                    names = sm.violated_step_invariants(state, succ)
                    if names:
                        trace = path(state) + [succ]
                        found.append((depth + 1, NaiveViolation("step_invariant", names[0], trace)))
                if not sm.within_constraints(succ):
                    continue
                generated += 1
                if succ in parent:
                    continue
                parent[succ] = state
                depth_of[succ] = depth + 1
                nxt.append(succ)
                bad_state(succ)
                if max_states is not None and len(parent) > max_states:
                    raise RuntimeError(f"more than {max_states} states")
        if nxt:
            depth += 1
            levels.append(len(nxt))
        frontier = nxt
    violation = min(found, key=lambda f: f[0])[1] if found else None
    return NaiveResult(distinct=len(parent), diameter=depth, generated=generated,
                       violation=violation, complete=complete and violation is None,
                       levels=levels)
