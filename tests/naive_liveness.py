"""A dead-simple liveness oracle, independent of `checker.engines.explicit.liveness`.

Python sets over the scalar backend, no SCC library: a trigger state that is not a
goal state starts a search of the graph without goal states and goal steps; a state
in it where no fair action instance is enabled is a fair stuttering end; otherwise a
state s lies on a fair cycle when the set C of states both reachable from s and
reaching s has an edge and, for every fair instance, C takes it on an inner edge or
has a state where it is disabled. The result is the shortest stem: the fewest steps
from an initial state, through a trigger state, to such a state.
"""

from __future__ import annotations

from collections import deque

from checker.backends.scalar import ScalarMachine, evaluate
from checker.lang.machine import LivenessProperty, Machine

State = tuple[int, ...]


def naive_liveness(machine: Machine, prop: LivenessProperty) -> int | None:
    """The shortest stem of a counterexample to `prop`, or None if it holds."""
    sm = ScalarMachine(machine)
    succ: dict[State, list[tuple[int, State]]] = {}
    depth: dict[State, int] = {}
    queue = deque()
    for s in machine.init_states:
        if s not in depth and sm.within_constraints(s):
            depth[s] = 0
            queue.append(s)
    while queue:
        s = queue.popleft()
        succ[s] = [(a.id, t) for a, t in sm.successors(s) if sm.within_constraints(t)]
        for _, t in succ[s]:
            if t not in depth:
                depth[t] = depth[s] + 1
                queue.append(t)
    goal_state = {s: not prop.goal_is_step and bool(evaluate(prop.goal, s)) for s in succ}

    def reduced(s: State) -> list[tuple[int, State]]:
        if goal_state[s]:
            return []
        return [(a, t) for a, t in succ[s] if not goal_state[t] and not (
            prop.goal_is_step and evaluate(prop.goal, s, t))]

    def enabled(s: State, a: int) -> bool:
        return any(x == a for x, _ in succ[s])

    def reach(start: State, edges) -> set[State]:
        seen, todo = {start}, [start]
        while todo:
            for _, t in edges(todo.pop()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen

    preds: dict[State, list[tuple[int, State]]] = {s: [] for s in succ}
    for s in succ:
        for a, t in reduced(s):
            preds[t].append((a, s))

    memo: dict[State, bool] = {}

    def bad(s: State) -> bool:
        if s not in memo:
            memo[s] = is_bad(s)
        return memo[s]

    def is_bad(s: State) -> bool:
        if not any(enabled(s, a) for a in prop.fair):
            return True
        comp = reach(s, reduced) & reach(s, lambda x: preds[x])
        inner = [(a, t) for x in comp for a, t in reduced(x) if t in comp]
        if not inner:
            return False
        return all(any(a == f for a, _ in inner) or any(not enabled(x, f) for x in comp)
                   for f in prop.fair)

    best: int | None = None
    for t in succ:
        if goal_state[t] or not evaluate(prop.trigger, t):
            continue
        dist = {t: depth[t]}
        queue = deque([t])
        while queue:
            s = queue.popleft()
            if bad(s) and (best is None or dist[s] < best):
                best = dist[s]
            for _, u in reduced(s):
                if u not in dist:
                    dist[u] = dist[s] + 1
                    queue.append(u)
    return best
