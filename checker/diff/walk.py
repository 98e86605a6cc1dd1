"""The reachable state graph, walked a level at a time with the NumPy kernel.

`checker.graph.explore` walks it with the scalar interpreter, a state at a time, which
is what `ctmc graph` needs (every state's violated properties) and too slow for the
behaviour diff on models of thousands of states. This walk gives the same graph, node
for node and edge for edge: successors of a level come from `Kernel.expand`, sorted
by generation key (parent, then action, the order `explore` visits them), and a state
gets the next id the first time an edge reaches it. `tests/test_diff.py` holds the two
walks equal. A model whose walk meets an evaluation error goes to `explore`, which
says where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.successors import Kernel
from checker.errors import CheckerError
from checker.graph import explore
from checker.lang.machine import Machine
from checker.progress import Progress, Ticker

_BATCH = 1 << 16  # parents expanded at once


class TooManyStates(CheckerError):
    """The model has more reachable states than the walk may store."""


@dataclass(frozen=True)
class Walk:
    """States in BFS order (`states[i]` is node i's slot values), the initial ones first,
    and each transition as (src, dst, action id) in `explore`'s edge order."""

    states: list[tuple[int, ...]]
    initial: int  # nodes 0 .. initial-1 are the initial states
    edges: list[tuple[int, int, int]]


def walk(machine: Machine, max_states: int, max_depth: int | None = None,
         progress: Progress | None = None) -> Walk:
    """The reachable graph of `machine` (see the module docstring); refuses a model with
    more than `max_states` states, as `explore` does."""
    sm = ScalarMachine(machine)
    inits = [s for s in dict.fromkeys(machine.init_states) if sm.within_constraints(s)]
    if not inits:
        raise CheckerError(f"spec {machine.spec_name}: no initial state satisfies the "
                           f"constraints")
    kernel = Kernel(machine)
    layout = kernel.layout
    index: dict[tuple[int, ...], int] = {}
    packed: list[tuple[int, ...]] = []
    edges: list[tuple[int, int, int]] = []
    ticker = Ticker(progress, lambda k: f"graph: {len(packed):,} states found, "
                                        f"{len(edges):,} transitions")

    def add(key: tuple[int, ...]) -> int:
        if len(packed) == max_states:
            raise TooManyStates(f"the model has more than {max_states:,} reachable states")
        index[key] = len(packed)
        packed.append(key)
        return len(packed) - 1

    for state in inits:
        add(layout.pack(state))
    level, depth = range(0, len(packed)), 0
    while len(level) and (max_depth is None or depth < max_depth):
        end = len(packed)
        for first in range(level.start, level.stop, _BATCH):
            last = min(first + _BATCH, level.stop)
            words = [np.array([packed[i][w] for i in range(first, last)], dtype=np.uint64)
                     for w in range(layout.n_words)]
            out = kernel.expand(words, first, check_deadlock=False)
            if out.error is not None or out.guard_error is not None:
                return _scalar(machine, max_states, max_depth, progress)
            order = np.argsort(out.gen, kind="stable")
            gens = out.gen[order].tolist()
            columns = [w[order].tolist() for w in out.words]
            for k, gen in enumerate(gens):
                key = tuple(column[k] for column in columns)
                dst = index.get(key)
                if dst is None:
                    dst = add(key)
                edges.append((gen // kernel.n_actions, dst, gen % kernel.n_actions))
            ticker.tick()
        level, depth = range(end, len(packed)), depth + 1
    return Walk([layout.unpack(key) for key in packed], len(inits), edges)


def _scalar(machine: Machine, max_states: int, max_depth: int | None,
            progress: Progress | None) -> Walk:
    """The scalar walk, for a model whose batch walk met an evaluation error: it raises
    where the error is (or finds none the batch walk thought it saw)."""
    graph = explore(machine, max_states, max_depth, progress)
    initial = sum(1 for n in graph.nodes if n.initial)
    return Walk([n.state for n in graph.nodes], initial,
                [(e.src, e.dst, e.action.id) for e in graph.edges])
