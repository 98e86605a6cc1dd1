"""The shortest behaviour one design allows and another does not, over shared variables.

Each design is a reachable state graph (`side.write_graph`). A behaviour is compared by
what both designs can see: the values of the variables both declare. As in TLA+
refinement, a step that changes none of them is stuttering, which the other design
matches by standing still, and the other design may take any number of such steps of
its own in between. So the search follows, for each state of design A, the set of
design B's states that could have produced the same shared history (a subset
construction, closed under B's stuttering steps); the first A step after which that
set is empty is the step B cannot take. The search is breadth-first over A's edges in
their stored order, so the behaviour is a shortest one and the same every run.

`budget` bounds the (state, set) pairs visited: past it the answer is undecided,
never "no new behaviour".
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from checker.progress import Progress, Ticker

Graph = dict[str, Any]  # the JSON document `side.write_graph` writes


@dataclass(frozen=True)
class Difference:
    """A behaviour of A that B does not have: A's states `path` (node ids), the edge
    index taken before each (None first), cut at `path[-1]`, the first state B cannot
    reach with the same shared history."""

    path: list[int]
    edges: list[int | None]
    changed: list[str]  # the shared variables the last step changes ([] at state 0)


@dataclass(frozen=True)
class Comparison:
    """The outcome of one direction: a difference, none (`searched` pairs, all of them),
    or undecided (the budget ran out)."""

    difference: Difference | None
    searched: int
    decided: bool


def shared_variables(a: Graph, b: Graph) -> list[str]:
    """The variables both designs declare, in A's order."""
    theirs = set(b["vars"])
    return [v for v in a["vars"] if v in theirs]


def compare(a: Graph, b: Graph, shared: list[str], budget: int,
            progress: Progress | None = None) -> Comparison:
    """The shortest behaviour of A that B does not allow (see the module docstring);
    `progress` hears how far the search is, every two seconds."""
    key_a, key_b = _keys(a, shared), _keys(b, shared)
    by_key: dict[str, list[int]] = {}
    for node in b["initial"]:
        by_key.setdefault(key_b[node], []).append(node)
    succ_b: list[list[int]] = [[] for _ in key_b]
    for src, dst, *_ in b["edges"]:
        succ_b[src].append(dst)
    out_a: list[list[int]] = [[] for _ in key_a]
    for index, (src, *_rest) in enumerate(a["edges"]):
        out_a[src].append(index)

    def closed(states: set[int]) -> frozenset[int]:
        """`states` and every state B reaches from them by stuttering steps."""
        todo = list(states)
        while todo:
            s = todo.pop()
            for t in succ_b[s]:
                if t not in states and key_b[t] == key_b[s]:
                    states.add(t)
                    todo.append(t)
        return frozenset(states)

    parent: dict[tuple[int, frozenset[int]], tuple[tuple[int, frozenset[int]], int] | None] = {}
    queue: deque[tuple[int, frozenset[int]]] = deque()
    ticker = Ticker(progress, lambda k: f"diff, behaviours: {len(parent):,} pairs of a state "
                                        f"and the other design's matching states")
    for node in a["initial"]:
        matched = closed(set(by_key.get(key_a[node], [])))
        if not matched:
            return Comparison(Difference([node], [None], []), len(parent), True)
        if (node, matched) not in parent:
            parent[(node, matched)] = None
            queue.append((node, matched))
    while queue:
        ticker.tick()
        here = queue.popleft()
        node, matched = here
        for index in out_a[node]:
            dst = a["edges"][index][1]
            if key_a[dst] == key_a[node]:  # stuttering over the shared variables
                after = matched
            else:
                after = closed({t for s in matched for t in succ_b[s] if key_b[t] == key_a[dst]})
            if not after:
                path, edges = _path(parent, here)
                return Comparison(Difference(path + [dst], edges + [index],
                                             _changed(a, shared, node, dst)),
                                  len(parent), True)
            step = (dst, after)
            if step not in parent:
                if len(parent) >= budget:
                    return Comparison(None, len(parent), False)
                parent[step] = (here, index)
                queue.append(step)
    return Comparison(None, len(parent), True)


def _keys(graph: Graph, shared: list[str]) -> list[tuple[str, ...]]:
    """Each state's values of the shared variables, comparable across the two graphs
    (each distinct value is written out once)."""
    where = [graph["vars"].index(v) for v in shared]
    texts = [[json.dumps(value, sort_keys=True) for value in graph["values"][v]]
             for v in shared]
    return [tuple(text[row[j]] for text, j in zip(texts, where, strict=True))
            for row in graph["states"]]


def state_values(graph: Graph, node: int) -> dict[str, Any]:
    """Node `node`'s variables and their (ITF) values."""
    row = graph["states"][node]
    return {v: graph["values"][v][row[j]] for j, v in enumerate(graph["vars"])}


def _path(parent: dict, here: tuple[int, frozenset[int]]) -> tuple[list[int], list[int | None]]:
    nodes: list[int] = []
    edges: list[int | None] = []
    step: tuple[int, frozenset[int]] | None = here
    while step is not None:
        nodes.append(step[0])
        link = parent[step]
        edges.append(None if link is None else link[1])
        step = None if link is None else link[0]
    return nodes[::-1], edges[::-1]


def _changed(graph: Graph, shared: list[str], src: int, dst: int) -> list[str]:
    before, after = graph["states"][src], graph["states"][dst]
    return [v for v in shared
            if before[graph["vars"].index(v)] != after[graph["vars"].index(v)]]


def trace_document(graph: Graph, difference: Difference, other: str,
                   provenance: dict[str, Any]) -> dict[str, Any]:
    """The difference as an ITF trace of A's spec: its last step (or its initial state)
    is the one `other` cannot take, marked as the trace's violation."""
    states = []
    for i, (node, edge) in enumerate(zip(difference.path, difference.edges, strict=True)):
        action, params = (None, {}) if edge is None else graph["actions"][graph["edges"][edge][2]]
        states.append({"#meta": {"index": i, "action": action, "params": params},
                       **state_values(graph, node)})
    step = len(states) - 1
    if step == 0:
        message = f"{other} has no initial state with these values of the shared variables"
    else:
        message = (f"{other} cannot take step {step}: after the same history of the shared "
                   f"variables, none of its steps changes {', '.join(difference.changed)} "
                   f"this way")
    meta = dict(graph["#meta"])
    meta["violation"] = {"kind": "new behaviour", "name": f"not in {other}",
                         "message": message}
    meta.update(provenance)
    return {"#meta": meta, "vars": graph["vars"], "states": states}
