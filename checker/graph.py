"""The explored state graph of a small model, for drawing: `ctmc graph`.

`explore` walks every reachable state breadth-first with the scalar backend, under
the engines' semantics (`tests/naive_bfs.py`): initial states and successors outside
the constraints are dropped, and every enabled action instance of a kept state is
one transition, into a new state or one seen before. So a complete graph has as many
nodes as BFS reports `distinct_states` and as many edges as it reports `generated`
(transitions into kept states).
The fast engines keep fingerprints, not edges, hence this second walk; it keeps
every state in memory and refuses models beyond `max_states`
(`docs/decisions/0010-state-graph.md`).

`to_networkx` turns the graph into a MultiDiGraph with scalar attributes only, so
GraphML takes it as is; `write_dot` draws it for Graphviz without pydot or
pygraphviz. Both writers replace the output file only once it is whole
(`checker.outputs`, whose `check_writable` a caller runs before exploring).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from checker.backends.scalar import ScalarMachine
from checker.errors import CheckerError
from checker.lang.machine import ActionInstance, Machine
from checker.outputs import MARK, replace_text
from checker.progress import Progress, Ticker
from checker.views import Rendered, render, show

State = tuple[int, ...]


@dataclass
class Node:
    """A reachable state, at the depth BFS first finds it."""

    state: State
    depth: int
    violates: tuple[str, ...]  # invariants and lemmas, in the machine's order
    on_path: bool = False

    @property
    def initial(self) -> bool:
        return self.depth == 0


@dataclass
class Edge:
    """One transition: action instance `action` from node `src` to node `dst`."""

    src: int
    dst: int
    action: ActionInstance
    violates: tuple[str, ...]  # step invariants
    on_path: bool = False


@dataclass
class StateGraph:
    """Nodes in BFS order (initial states first, in the machine's order); edges in
    the order their sources were expanded, then in action order."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    index: dict[State, int] = field(default_factory=dict)  # state -> its node's position


def explore(machine: Machine, max_states: int, max_depth: int | None = None,
            progress: Progress | None = None) -> StateGraph:
    """Every state reachable within `max_depth` steps and every transition between
    them; refuses, as soon as it finds one state too many, a model with more than
    `max_states`. Evaluation errors propagate as the scalar backend raises them.
    `progress` hears how far the walk is, every two seconds."""
    sm = ScalarMachine(machine)
    graph = StateGraph()
    ticker = Ticker(progress, lambda k: f"graph: {k:,} states expanded, "
                                        f"{len(graph.nodes):,} found, "
                                        f"{len(graph.edges):,} transitions")

    def add(state: State, depth: int) -> int:
        if len(graph.nodes) == max_states:
            raise CheckerError(f"the model has more than {max_states:,} reachable states "
                               f"(--max-states {max_states:,}); raise --max-states or "
                               f"shrink the model")
        graph.index[state] = len(graph.nodes)
        graph.nodes.append(Node(state, depth, tuple(sm.violated_invariants(state))))
        return len(graph.nodes) - 1

    for init in machine.init_states:
        if init not in graph.index and sm.within_constraints(init):
            add(init, 0)
    if not graph.nodes:  # as the engines refuse it
        raise CheckerError(f"spec {machine.spec_name}: no initial state satisfies the "
                           f"constraints")
    src = 0
    while src < len(graph.nodes):  # the list is the queue: it grows while it is read
        node = graph.nodes[src]
        if max_depth is None or node.depth < max_depth:
            for action, succ in sm.successors(node.state):
                if not sm.within_constraints(succ):
                    continue
                dst = graph.index.get(succ)
                if dst is None:
                    dst = add(succ, node.depth + 1)
                violates = tuple(sm.violated_step_invariants(node.state, succ))
                graph.edges.append(Edge(src, dst, action, violates))
        src += 1
        ticker.tick()
    return graph


def mark_path(graph: StateGraph, states: Sequence[State],
              actions: Sequence[ActionInstance | None] | None = None) -> bool:
    """Mark a counterexample's states and steps (`Trace.states`, `Trace.actions`).
    Without `actions`, every transition between two consecutive states is marked,
    since the states alone cannot tell parallel ones apart. Returns False when the
    last step leaves the graph: a step invariant is judged on every transition, also
    into a state the constraints discard (decision 0005), and that state is no node."""
    path = []
    for k, state in enumerate(states):
        if state in graph.index:
            path.append(graph.index[state])
        elif k != len(states) - 1 or k == 0:
            raise CheckerError(f"step {k} of the counterexample is not in the explored "
                               f"graph (cut by a depth bound, or a trace of another model)")
    for i in path:
        graph.nodes[i].on_path = True
    ids = [None] * len(path) if actions is None else \
        [None if a is None else a.id for a in actions]
    steps = {(path[k - 1], path[k], ids[k]) for k in range(1, len(path))}
    for edge in graph.edges:
        if (edge.src, edge.dst, None if actions is None else edge.action.id) in steps:
            edge.on_path = True
    return len(path) == len(states)


def to_networkx(graph: StateGraph, machine: Machine,
                label: Literal["view", "raw"] = "view") -> nx.MultiDiGraph:
    """Nodes `s0`, `s1`, ... in BFS order and one edge per transition, with str, int
    and bool attributes only. `label="view"` draws the spec's protocol view when it
    declares one; otherwise, and with `raw`, a node's label is its variables."""
    g = nx.MultiDiGraph()
    for i, node in enumerate(graph.nodes):
        decoded = machine.decode(node.state)
        text = _view_text(render(machine.view, decoded)) \
            if label == "view" and machine.view is not None \
            else "\n".join(f"{name} = {show(value)}" for name, value in decoded.items())
        g.add_node(f"s{i}", label=text, depth=node.depth, initial=node.initial,
                   violates=", ".join(node.violates), on_path=node.on_path)
    for edge in graph.edges:
        g.add_edge(f"s{edge.src}", f"s{edge.dst}", action=edge.action.name,
                   label=edge.action.label, violates=", ".join(edge.violates),
                   on_path=edge.on_path)
    return g


def _view_text(view: Rendered) -> str:
    """Each lane's tables, one line a row: `title first-cell: column=cell, ...`."""
    lines = [view.note] if view.note else []
    for lane in (*view.lanes, ""):
        rows = [f"  {table.title} {show(row[0])}: "
                + ", ".join(f"{column}={show(cell)}"
                            for column, cell in zip(table.columns[1:], row[1:], strict=False))
                for table in view.tables.get(lane, []) for row in table.rows]
        if rows:
            lines += [lane or "whole system", *rows]
    return "\n".join(lines)


# -- files ----------------------------------------------------------------------------

INITIAL = {"peripheries": "2"}
VIOLATING = {"style": "filled", "fillcolor": "#ffc9c9", "color": "red"}
ON_PATH = {"color": "blue", "fontcolor": "blue", "penwidth": "2.5"}


def write_dot(g: nx.MultiDiGraph, path: str | os.PathLike) -> None:
    """`dot_text(g)` written to `path` (atomically; only over a file ctmc wrote)."""
    replace_text(path, dot_text(g))


def dot_text(g: nx.MultiDiGraph) -> str:
    """Graphviz DOT: initial states with a double border, violating states and steps in
    red, the counterexample in thick blue; node labels left-aligned, line by line."""
    lines = [f"// {MARK}", "digraph states {",
             '  node [shape=box, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    for name, a in g.nodes(data=True):
        text = [f"{name} (depth {a['depth']})", *a["label"].splitlines()]
        style = {**(INITIAL if a["initial"] else {}), **(ON_PATH if a["on_path"] else {})}
        if a["violates"]:
            text.append(f"violates {a['violates']}")
            style |= VIOLATING
        lines.append(f"  {_quote(name)} [label={_text(text, left=True)}{_attrs(style)}];")
    for src, dst, a in g.edges(data=True):
        text = [a["label"]]
        style = ON_PATH if a["on_path"] else {}
        if a["violates"]:
            text.append(f"violates {a['violates']}")
            style = {**style, "color": "red", "fontcolor": "red"}
        lines.append(f"  {_quote(src)} -> {_quote(dst)} [label={_text(text, left=False)}"
                     f"{_attrs(style)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graphml(g: nx.MultiDiGraph, path: str | os.PathLike) -> None:
    """`graphml_text(g)` written to `path` (atomically; only over a file ctmc wrote)."""
    replace_text(path, graphml_text(g))


def graphml_text(g: nx.MultiDiGraph) -> str:
    """GraphML through networkx: every attribute keeps its type (string, int, boolean)."""
    out = io.BytesIO()
    nx.write_graphml(g, out)
    declaration, _, rest = out.getvalue().decode("utf-8").partition("\n")
    return f"{declaration}\n<!-- {MARK} -->\n{rest}"


def _quote(text: str) -> str:
    return '"' + _escape(text) + '"'


def _text(lines: list[str], left: bool) -> str:
    """A DOT string of `lines`: left-aligned (each ended by `\\l`) or centred (`\\n`
    between them)."""
    escaped = [_escape(line) for line in lines]
    return '"' + ("".join(line + "\\l" for line in escaped) if left
                  else "\\n".join(escaped)) + '"'


def _escape(text: str) -> str:
    """A backslash or a quote as DOT reads them literally inside a quoted string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _attrs(attrs: dict[str, str]) -> str:
    return "".join(f", {key}={_quote(value)}" for key, value in attrs.items())

