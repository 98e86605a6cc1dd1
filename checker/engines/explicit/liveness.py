"""Liveness (`trigger ~> goal`) on the explored state graph, with weak fairness.

A spec declares `m.liveness(name, trigger, goal, fair=[action names])`: from
every reachable state where `trigger` holds, every behaviour reaches a state
where `goal` holds (or, for a goal over (before, after), takes such a step).
Behaviours are infinite, as in TLA+: a state may repeat forever (stuttering),
so a state with no successor is a behaviour that stops there. Each *instance*
of a named action is weakly fair (TLA+'s `\\A x: WF_vars(A(x))`): a behaviour
that from some point on has it enabled in every state must take it.

The check, on the whole reachable graph (built here with the BFS kernel, or by the
Spark engine in its executors: `checker/engines/spark/liveness.py`):
1. drop goal states (state goals) or goal transitions (step goals);
2. keep what is reachable from the trigger states that are not goal states;
3. a counterexample is either a state there where no fair instance is enabled
   (the behaviour stutters there fairly: a deadlock is the special case), or a
   strongly connected component with an edge that is fair: each fair instance
   is taken inside it or disabled at one of its states. Weak fairness is
   monotone in the component, so whole components are enough.
The reported lasso has the shortest stem (initial state to trigger state to the
component) and a loop that visits what makes it fair; it is written as ITF
with a `loop` index (`docs/decisions/0006-liveness.md`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from checker.backends.scalar import ScalarMachine, evaluate
from checker.backends.vector import compile_batch, dtype_for
from checker.engines.explicit.successors import Kernel
from checker.engines.report import replay
from checker.engines.result import HOLDS, VIOLATED, CheckResult, Violation
from checker.errors import CheckerError
from checker.lang.expr import Expr
from checker.lang.machine import ActionInstance, LivenessProperty, Machine
from checker.packing import U64
from checker.traces.trace import State, Trace


@dataclass
class StateGraph:
    """Every reachable state and every transition, numbered alike by every engine.

    States are numbered in BFS order, level by level and by fingerprint within a
    level (the order in which every engine keeps its levels); transitions are sorted
    by (source, action). So a search over the graph breaks ties the same way whoever
    built it, and the local and Spark engines report the same lasso."""

    depth: np.ndarray  # BFS depth of each state
    parent: np.ndarray  # canonical BFS parent (-1 for initial states)
    parent_action: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    action: np.ndarray
    init_states: list[tuple[int, ...]]  # level 0, in state-number order

    @property
    def n(self) -> int:
        return len(self.depth)


@dataclass
class Labels:
    """Where one liveness property's predicates hold on a StateGraph."""

    trigger: np.ndarray  # per state
    goal_state: np.ndarray  # per state (all False for a goal over steps)
    goal_edge: np.ndarray  # per transition: the step is, or enters, a goal


def transition_order(src: np.ndarray, action: np.ndarray) -> np.ndarray:
    """The permutation putting transitions in the graph's order: by source, then action."""
    return np.lexsort((action, src))


def build_graph(machine: Machine, kernel: Kernel | None = None, batch_size: int = 1 << 16
                ) -> tuple[StateGraph, list[np.ndarray]]:
    """The reachable graph, level by level with the NumPy kernel (constraints prune),
    and each state's packed words."""
    kernel = kernel or Kernel(machine)
    layout, A = kernel.layout, kernel.n_actions
    scalar = ScalarMachine(machine)
    inits = list(dict.fromkeys(s for s in machine.init_states if scalar.within_constraints(s)))
    if not inits:
        raise CheckerError(f"spec {machine.spec_name}: no initial state satisfies the constraints")
    packed = layout.pack_states(inits)
    fps = layout.fingerprints(packed)
    order = np.argsort(fps, kind="stable")
    inits = [inits[i] for i in order]
    words = [w[order] for w in packed]
    known_fp, known_id = fps[order], np.arange(len(inits), dtype=np.int64)
    all_words = [list([w]) for w in words]
    depth = [np.zeros(len(inits), np.int64)]
    parent = [np.full(len(inits), -1, np.int64)]
    paction = [np.full(len(inits), -1, np.int64)]
    src, dst, act = [], [], []
    frontier, first, n = words, 0, len(inits)
    level = 0
    while len(frontier[0]):
        gens: list[np.ndarray] = []
        succ: list[list[np.ndarray]] = [[] for _ in range(layout.n_words)]
        for lo in range(0, len(frontier[0]), batch_size):
            exp = kernel.expand([w[lo:lo + batch_size] for w in frontier], first + lo, False)
            if exp.error is not None or exp.guard_error is not None:
                raise CheckerError(f"spec {machine.spec_name}: an action fails to evaluate; "
                                   "run the safety check (ctmc check) for its trace")
            gens.append(exp.gen)
            for w in range(layout.n_words):
                succ[w].append(exp.words[w])
        gen = np.concatenate(gens)
        sw = [np.concatenate(s) for s in succ]
        sfp = layout.fingerprints(sw)
        pos = np.minimum(np.searchsorted(known_fp, sfp), len(known_fp) - 1)
        hit = known_fp[pos] == sfp
        ids = np.where(hit, known_id[pos], -1)
        new = np.flatnonzero(~hit)
        uniq, first_at, inverse = np.unique(sfp[new], return_index=True, return_inverse=True)
        # the canonical parent of a new state: its smallest generation key
        first_gen = np.full(len(uniq), np.iinfo(np.int64).max)
        np.minimum.at(first_gen, inverse, gen[new])
        ids[new] = n + inverse
        count = len(uniq)
        src.append(gen // A)
        act.append(gen % A)
        dst.append(ids)
        if count:
            pick = new[first_at]
            level_words = [w[pick] for w in sw]
            for w in range(layout.n_words):
                all_words[w].append(level_words[w])
            depth.append(np.full(count, level + 1, np.int64))
            parent.append(first_gen // A)
            paction.append(first_gen % A)
            merged = np.concatenate([known_fp, uniq])
            merged_id = np.concatenate([known_id, np.arange(n, n + count, dtype=np.int64)])
            order = np.argsort(merged, kind="stable")
            known_fp, known_id = merged[order], merged_id[order]
            frontier, first, n = level_words, n, n + count
            level += 1
        else:
            frontier = [np.empty(0, U64)]
    src_all, dst_all, act_all = np.concatenate(src), np.concatenate(dst), np.concatenate(act)
    order = transition_order(src_all, act_all)
    graph = StateGraph(np.concatenate(depth), np.concatenate(parent), np.concatenate(paction),
                       src_all[order], dst_all[order], act_all[order], inits)
    return graph, [np.concatenate(w) for w in all_words]


def evaluate_batch(kernel: Kernel, expr: Expr, before: list[np.ndarray],
                   after: list[np.ndarray] | None = None) -> np.ndarray:
    """A state predicate on packed states, or a step predicate on (before, after)."""
    n = len(before[0])
    fn = compile_batch([expr], dtype_for([expr]), "liveness")
    rb = kernel.reader(before)
    ra = kernel.reader(after) if after is not None else rb
    return np.broadcast_to(np.asarray(fn(rb, ra)[0], dtype=bool), (n,)).copy()


def labels_of(kernel: Kernel, graph: StateGraph, words: list[np.ndarray],
              prop: LivenessProperty) -> Labels:
    """`prop`'s predicates evaluated on the graph's states and transitions."""
    trigger = evaluate_batch(kernel, prop.trigger, words)
    if prop.goal_is_step:
        goal_edge = evaluate_batch(kernel, prop.goal, [w[graph.src] for w in words],
                                   [w[graph.dst] for w in words])
        return Labels(trigger, np.zeros(graph.n, dtype=bool), goal_edge)
    goal_state = evaluate_batch(kernel, prop.goal, words)
    return Labels(trigger, goal_state, goal_state[graph.dst])


@dataclass
class Lasso:
    """A counterexample: a path of action ids from an initial state, and where its loop
    starts (`loop` indexes the path's states; the last step returns there). `stutter`:
    the path ends in a state the behaviour never leaves."""

    init: int
    actions: list[int]
    loop: int
    stutter: bool
    trigger_at: int


def find_lasso(graph: StateGraph, labels: Labels, fair_actions: tuple[int, ...],
               n_actions: int) -> Lasso | None:
    """A fair behaviour from a trigger state that never reaches the goal, or None."""
    n = graph.n
    trigger, goal_state = labels.trigger, labels.goal_state
    keep = ~labels.goal_edge & ~goal_state[graph.src]
    # enabled fair instances per state, in the whole graph
    fair = np.array(sorted(fair_actions), dtype=np.int64)
    fair_col = np.full(n_actions, -1, np.int64)
    fair_col[fair] = np.arange(len(fair))
    enabled = np.zeros((n, len(fair)), dtype=bool)
    is_fair = fair_col[graph.action] >= 0
    enabled[graph.src[is_fair], fair_col[graph.action[is_fair]]] = True
    src, dst, act = graph.src[keep], graph.dst[keep], graph.action[keep]  # still sorted
    starts = np.searchsorted(src, np.arange(n + 1))
    dist, pred, pred_act = _distances(n, src, dst, act, starts,
                                      np.flatnonzero(trigger & ~goal_state), graph.depth)
    reached = dist >= 0
    candidates: list[tuple[int, int, np.ndarray | None]] = []
    for end in np.flatnonzero(reached & ~enabled.any(axis=1)):
        candidates.append((int(dist[end]), int(end), None))
    inside = reached[src] & reached[dst]
    label = strongly_connected(n, src[inside], dst[inside], np.flatnonzero(reached))
    e_src, e_dst, e_act = src[inside], dst[inside], act[inside]
    internal = label[e_src] == label[e_dst]
    n_comp = int(label.max()) + 1 if len(label) and label.max() >= 0 else 0
    has_edge = np.zeros(n_comp, dtype=bool)
    has_edge[label[e_src[internal]]] = True
    taken = np.zeros((n_comp, len(fair)), dtype=bool)
    col = fair_col[e_act[internal]]
    taken[label[e_src[internal]][col >= 0], col[col >= 0]] = True
    disabled = np.zeros((n_comp, len(fair)), dtype=bool)
    nodes = np.flatnonzero(reached)
    for j in range(len(fair)):
        off = nodes[~enabled[nodes, j]]
        disabled[label[off], j] = True
    fair_comps = np.flatnonzero(has_edge & (taken | disabled).all(axis=1))
    for c in fair_comps:
        members = nodes[label[nodes] == c]
        entry = int(members[np.lexsort((members, dist[members]))[0]])
        candidates.append((int(dist[entry]), entry, members))
    if not candidates:
        return None
    d, entry, comp = min(candidates, key=lambda c: (c[0], c[1], c[2] is not None))
    stem: list[int] = []
    s = entry
    while pred[s] >= 0:
        stem.append(int(pred_act[s]))
        s = int(pred[s])
    trigger_state = s
    while graph.parent[s] >= 0:
        stem.append(int(graph.parent_action[s]))
        s = int(graph.parent[s])
    init = s
    stem.reverse()
    trigger_at = int(graph.depth[trigger_state])
    if comp is None:
        return Lasso(init, stem, len(stem), True, trigger_at)
    loop = _loop(entry, frozenset(comp.tolist()), src, dst, act, starts, fair, fair_col,
                 enabled)
    return Lasso(init, stem + loop, len(stem), False, trigger_at)


def _distances(n: int, src: np.ndarray, dst: np.ndarray, act: np.ndarray,
               starts: np.ndarray, sources: np.ndarray,
               depth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shortest stems: each source starts at its BFS depth, every edge adds one; ties go
    to the smaller (predecessor, action). Returns dist (-1: unreached), pred, action."""
    big = np.iinfo(np.int64).max
    dist = np.full(n, big)
    dist[sources] = depth[sources]
    pred = np.full(n, -1, np.int64)
    pred_act = np.full(n, -1, np.int64)
    done = np.zeros(n, dtype=bool)
    d = int(dist[sources].min()) if len(sources) else 0
    while True:
        level = np.flatnonzero((dist == d) & ~done)
        if not len(level):
            if (~done & (dist < big)).any():
                d += 1
                continue
            break
        done[level] = True
        counts = starts[level + 1] - starts[level]
        edges = np.repeat(starts[level] - np.cumsum(counts) + counts, counts) + \
            np.arange(counts.sum())
        targets = dst[edges]
        better = dist[targets] > d + 1
        edges, targets = edges[better], targets[better]
        if len(edges):
            key = src[edges] * (int(act.max()) + 1) + act[edges]
            order = np.lexsort((key, targets))
            targets, edges = targets[order], edges[order]
            first = np.concatenate(([True], targets[1:] != targets[:-1]))
            targets, edges = targets[first], edges[first]
            dist[targets] = d + 1
            pred[targets] = src[edges]
            pred_act[targets] = act[edges]
        d += 1
    dist[dist == big] = -1
    return dist, pred, pred_act


def strongly_connected(n: int, src: np.ndarray, dst: np.ndarray,
                       nodes: np.ndarray) -> np.ndarray:
    """Component label per node (-1 outside `nodes`), by an iterative Tarjan over the
    edges (src sorted)."""
    starts = np.searchsorted(src, np.arange(n + 1)).tolist()
    dst_l = dst.tolist()
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    label = [-1] * n
    stack: list[int] = []
    counter = comps = 0
    for root in nodes.tolist():
        if index[root] >= 0:
            continue
        work = [(root, starts[root])]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            if i < starts[v + 1]:
                work[-1] = (v, i + 1)
                w = dst_l[i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, starts[w]))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work and low[v] < low[work[-1][0]]:
                low[work[-1][0]] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    label[w] = comps
                    if w == v:
                        break
                comps += 1
    return np.array(label, dtype=np.int64)


def _loop(entry: int, comp: frozenset[int], src: np.ndarray, dst: np.ndarray, act: np.ndarray,
          starts: np.ndarray, fair: np.ndarray, fair_col: np.ndarray,
          enabled: np.ndarray) -> list[int]:
    """Actions of a cycle from `entry` through `comp` that is fair: for each fair
    instance, a state of the cycle where it is disabled or a step that takes it."""
    members = sorted(comp)

    def enters(states: set[int]) -> Callable[[int, int], bool]:
        return lambda x, t: t in states

    def takes(j: int) -> Callable[[int, int], bool]:
        return lambda x, t: fair_col[x] == j

    def path(a: int, done: Callable[[int, int], bool]) -> tuple[list[int], list[int]]:
        """Shortest path inside comp from a to a step (x, t) with done(x, t): its
        actions and the states it enters."""
        seen: dict[int, tuple[int, int] | None] = {a: None}
        queue = deque([a])
        while queue:
            s = queue.popleft()
            for e in range(starts[s], starts[s + 1]):
                t, x = int(dst[e]), int(act[e])
                if t not in comp:
                    continue
                if done(x, t):
                    steps, entered = [x], [t]
                    while (back := seen[s]) is not None:
                        entered.append(s)
                        s, y = back
                        steps.append(y)
                    return steps[::-1], entered[::-1]
                if t not in seen:
                    seen[t] = (s, x)
                    queue.append(t)
        raise AssertionError("a strongly connected component is closed under paths")

    actions: list[int] = []
    visited, cur = {entry}, entry
    for j in range(len(fair)):
        disabled_at = {s for s in members if not enabled[s, j]}
        if visited & disabled_at or any(fair_col[x] == j for x in actions):
            continue
        if disabled_at:
            steps, entered = path(cur, enters(disabled_at))
        else:
            steps, entered = path(cur, takes(j))
        actions += steps
        visited.update(entered)
        cur = entered[-1]
    if cur != entry or not actions:
        steps, _ = path(cur, lambda x, t: t == entry)
        actions += steps
    return actions


def lasso_trace(machine: Machine, graph: StateGraph, lasso: Lasso) -> Trace:
    """The lasso as a Trace: its last state is followed by states[loop]."""
    trace = replay(machine, graph.init_states[lasso.init], lasso.actions)
    trace.loop = lasso.loop
    if not lasso.stutter:
        trace.states.pop()
        trace.loop_action = trace.actions.pop()
    return trace


def check_liveness(machine: Machine, result: CheckResult,
                   kernel: Kernel | None = None) -> CheckResult:
    """Every liveness property of `machine`, on the graph rebuilt with the local kernel
    (the safety search's, if given); `result` is the complete safety run that holds,
    whose figures the answer keeps."""
    started = time.perf_counter()
    kernel = kernel or Kernel(machine)
    graph, words = build_graph(machine, kernel)
    return check_graph(machine, graph, lambda prop: labels_of(kernel, graph, words, prop),
                       result, started)


def check_graph(machine: Machine, graph: StateGraph,
                labels: Callable[[LivenessProperty], Labels], result: CheckResult,
                started: float) -> CheckResult:
    """The liveness verdict on an explored graph, whoever built it: the first property
    (in declaration order) with a fair lasso that never reaches its goal, or holds.
    `result` is the complete safety run; its statistics and coverage carry over."""
    stats = dict(result.stats)
    stats.update(liveness_states=graph.n, liveness_edges=len(graph.src))
    engine = result.engine
    for prop in machine.liveness:
        lasso = find_lasso(graph, labels(prop), prop.fair, len(machine.actions))
        if lasso is None:
            continue
        trace = lasso_trace(machine, graph, lasso)
        how = "stays forever in a state where no fair action is enabled" if lasso.stutter \
            else f"loops back to state {lasso.loop}"
        message = (f"{prop.name}: the trigger holds at state {lasso.trigger_at}, and the "
                   f"behaviour {how} without reaching the goal")
        trace.violation = {"kind": "liveness", "name": prop.name, "message": message,
                           "trigger": lasso.trigger_at}
        trace.meta = {"engine": f"{engine}+liveness"}
        stats["liveness_seconds"] = round(time.perf_counter() - started, 3)
        return CheckResult(engine, VIOLATED, Violation("liveness", prop.name, message, trace),
                           stats, result.coverage)
    stats["liveness_seconds"] = round(time.perf_counter() - started, 3)
    return CheckResult(engine, HOLDS, None, stats, result.coverage)


def confirm_lasso(trace: Trace, names: list[str] | None = None) -> list[str]:
    """Names of the liveness properties the lasso `trace` violates: from a state where
    the trigger holds, the goal never holds (on states and steps, the loop included),
    and the loop is fair (each fair instance taken in it or disabled at one of its
    states; a stuttering end: no fair instance enabled there)."""
    machine = trace.machine
    if trace.loop is None:
        return []
    scalar = ScalarMachine(machine)
    states = trace.states
    last = len(states) - 1
    steps: list[tuple[State, ActionInstance, State]] = []
    for i in range(1, len(states)):
        action = trace.actions[i]
        assert action is not None  # only actions[0], before the first state, is None
        steps.append((states[i - 1], action, states[i]))
    loop_states = states[trace.loop:]
    loop_steps = steps[trace.loop:]
    if trace.loop_action is not None:
        loop_steps = loop_steps + [(states[last], trace.loop_action, states[trace.loop])]
    out = []
    for prop in machine.liveness:
        if names is not None and prop.name not in names:
            continue
        fair = [machine.actions[a] for a in prop.fair]
        if trace.loop_action is None:
            fair_ok = not any(scalar.enabled(states[last], a) for a in fair)
        else:
            taken = {a.id for _, a, _ in loop_steps}
            fair_ok = all(a.id in taken or any(not scalar.enabled(s, a) for s in loop_states)
                          for a in fair)
        if not fair_ok:
            continue
        for i in range(trace.loop + 1):
            if not evaluate(prop.trigger, states[i]):
                continue
            if prop.goal_is_step:
                hit = any(evaluate(prop.goal, b, a) for b, _, a in steps[i:] + loop_steps)
            else:
                hit = any(evaluate(prop.goal, s) for s in states[i:])
            if not hit:
                out.append(prop.name)
                break
    return out
