"""One BFS level's work, shared by the single-process search and its worker processes.

Expanding a frontier (or a contiguous slice of it) chunk by chunk, folding what each
chunk's expansion observed into a `Level`, and locating the first violating new
state are written once here: `bfs.py` runs them on the whole frontier, `parallel.py`
on one slice per worker, and both join their `Level`s with the same rules. Every
location is a generation key `parent_index * n_actions + action` over the whole
frontier, so the smallest one is the same however the work was split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from checker.engines.explicit.successors import Expansion, Kernel
from checker.packing import U64


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _first(a: tuple | None, b: tuple | None) -> tuple | None:
    """The located item with the smaller key (its first element)."""
    return b if a is None else a if b is None or a[0] <= b[0] else b


@dataclass
class Level:
    """What expanding a frontier found, before it joins the search: counters, the
    smallest location of each kind of violation, and the new states (sorted)."""

    enabled: np.ndarray  # per action instance: parents where its guard held
    generated: int = 0
    guard_error: int | None = None  # smallest key whose guard read out of range
    deadlock: int | None = None  # smallest index of a parent with no enabled action
    error: int | None = None  # smallest key whose update or check failed
    step: tuple[int, int] | None = None  # (smallest key breaking a step invariant, its index)
    bad: tuple[int, int, bool] | None = None  # new state: see `first_bad`
    count: int = 0  # new states
    moved: int = 0  # successors mapped to another representative (under symmetry)
    # the new states, sorted by fingerprint (if `fetch` is set: empty until it gives them)
    fps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=U64))
    gen: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    words: list[np.ndarray] = field(default_factory=list)
    # the worker processes' new states, asked for only when they join the search; called
    # with whether the workers are to go on with the next level meanwhile
    fetch: Callable[[bool], tuple[np.ndarray, np.ndarray, list[np.ndarray]]] | None = None

    def observe(self, exp: Expansion) -> None:
        """Fold in one chunk's expansion."""
        self.enabled += exp.enabled
        self.generated += len(exp.gen)
        self.guard_error = _min(self.guard_error, exp.guard_error)
        if len(exp.deadlocked):
            self.deadlock = _min(self.deadlock, int(exp.deadlocked[0]))
        self.error = _min(self.error, exp.error)
        self.step = _first(self.step, exp.step_violation)
        self.moved += exp.moved

    def summary(self) -> tuple:
        """Everything but the new states (what a worker sends besides its arrays)."""
        return (self.enabled, self.generated, self.guard_error, self.deadlock, self.error,
                self.step, self.bad, self.count, self.moved)

    def join(self, summary: tuple) -> None:
        """Fold in another share's `summary()`."""
        enabled, generated, guard_error, deadlock, error, step, bad, count, moved = summary
        self.moved += moved
        self.enabled += enabled
        self.generated += generated
        self.guard_error = _min(self.guard_error, guard_error)
        self.deadlock = _min(self.deadlock, deadlock)
        self.error = _min(self.error, error)
        self.step = _first(self.step, step)
        self.bad = _first(self.bad, bad)
        self.count += count


def expand_frontier(kernel: Kernel, words: list[np.ndarray], offset: int, deadlock: bool,
                    batch_size: int, level: Level, add: Callable[[Expansion], None],
                    between: Callable[[int], None],
                    tick: Callable[[], None] | None = None,
                    rekey: Callable[[Expansion], None] | None = None) -> None:
    """Expand `words` (frontier states `offset`... onwards) in chunks of `batch_size`
    parents into `level`; `add` takes each chunk's successors, `between` is called with
    the number of parents done before each chunk (to stop, report or receive there),
    and `rekey` turns a chunk's keys into the whole frontier's, when `words` are not
    one contiguous slice of it."""
    n = len(words[0])
    for lo in range(0, n, batch_size):
        between(lo)
        exp = kernel.expand([w[lo:lo + batch_size] for w in words], offset + lo, deadlock, tick)
        if rekey is not None:
            rekey(exp)
        level.observe(exp)
        if len(exp.gen):
            add(exp)


def first_bad(kernel: Kernel, words: list[np.ndarray], keys: np.ndarray | None,
              batch_size: int) -> tuple[int, int, bool] | None:
    """Among `words` (new states), the one violating a property with the smallest key
    (`keys`; the index when None, for initial states): (its key, the first property it
    violates, whether evaluating some property read out of range), or None."""
    best: tuple[int, int, bool] | None = None
    for lo in range(0, len(words[0]) if words else 0, batch_size):
        first, undefined = kernel.violated_properties([w[lo:lo + batch_size] for w in words])
        bad = np.flatnonzero((first >= 0) | undefined)
        if not len(bad):
            continue
        located = bad + lo if keys is None else keys[bad + lo]
        i = int(np.argmin(located))
        best = _first(best, (int(located[i]), int(first[bad[i]]), bool(undefined[bad[i]])))
    return best
