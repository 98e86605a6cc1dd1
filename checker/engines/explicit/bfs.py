"""Explicit-state breadth-first search over batches of packed states.

Level-synchronous: the frontier (sorted by fingerprint) is expanded in chunks
by the NumPy kernel; each chunk's successors are deduplicated on their own and
against the visited set, and at the end of the level the survivors are merged
once more. Memory per visited state: 8 bytes of fingerprint in the visited
set, plus 4 bytes of parent index and 2 of action id in the level records.
Traces are rebuilt from those records by replaying the actions from the
initial state through the scalar backend, so no old states are kept.

The first violation reported is at the smallest depth, and among equally deep
ones the transition with the smallest (parent fingerprint, action id): the
same on every run and in every engine.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.successors import Kernel
from checker.engines.explicit.visited import LevelDedup, VisitedSet
from checker.engines.report import explain, replay
from checker.engines.result import HOLDS, CheckResult, coverage_rows, search_stats
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.packing import U64
from checker.traces.trace import Trace

ENGINE_VERSION = "bfs-1"


@dataclass
class BfsOptions:
    max_depth: int | None = None
    deadlock: bool = True
    progress: Callable[[str], None] | None = None
    checkpoint_dir: str | None = None
    resume: bool = False
    batch_size: int = 1 << 16  # parents per chunk: big enough to amortise per-action calls
    dedup_budget: int = 1 << 20  # candidate states kept before filtering against visited
    checkpoint_seconds: float = 300.0
    progress_seconds: float = 2.0
    # called with (slot reader, count) for each level's new states, e.g. to test
    # candidate lemmas on every reachable state (`infer`)
    on_level: Callable[[Callable[[int], np.ndarray], int], None] | None = None


@dataclass
class _Found:
    """A violation located by (depth of the trace end, generation key)."""

    kind: str
    depth: int  # depth of the parent state (the state itself for deadlock/guard errors)
    parent: int  # index of the parent in its level
    action: int | None  # action id taken from the parent, if the trace ends with a step
    prop: str = ""


@dataclass
class _Search:
    machine: Machine
    kernel: Kernel
    options: BfsOptions
    visited: VisitedSet = field(default_factory=VisitedSet)
    parents: list[np.ndarray] = field(default_factory=list)  # per level: uint32 parent index
    actions: list[np.ndarray] = field(default_factory=list)  # per level: uint16 action id
    frontier: list[np.ndarray] = field(default_factory=list)
    init_states: list[tuple[int, ...]] = field(default_factory=list)
    generated: int = 0
    enabled: np.ndarray | None = None
    new_states: np.ndarray | None = None
    seconds_before: float = 0.0  # time spent in earlier runs of a resumed search

    @property
    def depth(self) -> int:
        return len(self.parents) - 1


def check(machine: Machine, options: BfsOptions | None = None) -> CheckResult:
    """Exhaustive BFS of `machine`; see the module docstring for the guarantees."""
    options = options or BfsOptions()
    started = time.perf_counter()
    kernel = Kernel(machine)
    search = _Search(machine, kernel, options)
    A = kernel.n_actions
    search.enabled = np.zeros(A, dtype=np.int64)
    search.new_states = np.zeros(A, dtype=np.int64)
    if options.resume and options.checkpoint_dir:
        _load_checkpoint(search, options.checkpoint_dir)
    else:
        found = _initial_level(search)
        if found is not None:
            return _report(search, found, started)
    last_checkpoint = time.perf_counter()
    try:
        while len(search.frontier[0]):
            if options.max_depth is not None and search.depth >= options.max_depth:
                return _finish(search, started, complete=False)
            found = _expand_level(search, started)
            if found is not None:
                return _report(search, found, started)
            if options.checkpoint_dir and \
                    time.perf_counter() - last_checkpoint >= options.checkpoint_seconds:
                _save_checkpoint(search, options.checkpoint_dir, started)
                last_checkpoint = time.perf_counter()
    except KeyboardInterrupt:
        if options.checkpoint_dir:
            _save_checkpoint(search, options.checkpoint_dir, started)
        raise
    if options.checkpoint_dir:
        _save_checkpoint(search, options.checkpoint_dir, started)
    return _finish(search, started, complete=True)


# -- levels -------------------------------------------------------------------

def _initial_level(search: _Search) -> _Found | None:
    m, kernel = search.machine, search.kernel
    scalar = ScalarMachine(m)
    states = [s for s in m.init_states if scalar.within_constraints(s)]
    if not states:
        raise CheckerError(f"spec {m.spec_name}: no initial state satisfies the constraints")
    packed = np.array([kernel.layout.pack(s) for s in states], dtype=U64).reshape(len(states), -1)
    words = [packed[:, w].copy() for w in range(kernel.layout.n_words)]
    fps = kernel.layout.fingerprints(words)
    order = np.argsort(fps, kind="stable")
    fps, words = fps[order], [w[order] for w in words]
    keep = np.concatenate(([True], fps[1:] != fps[:-1]))
    fps, words = fps[keep], [w[keep] for w in words]
    search.init_states = [states[i] for i in order[keep]]
    search.visited = VisitedSet(fps)
    search.parents = [np.zeros(len(fps), dtype=np.uint32)]
    search.actions = [np.zeros(len(fps), dtype=np.uint16)]
    search.frontier = words
    if search.options.on_level:
        search.options.on_level(kernel.reader(words), len(fps))
    return _check_new_states(search, words, depth=0)


def _check_new_states(search: _Search, words: list[np.ndarray], depth: int,
                      keys: np.ndarray | None = None) -> _Found | None:
    """Invariants on the states just added at `depth`.

    Among violating states the one with the smallest generation key (`keys`)
    is reported; initial states have no key and go by fingerprint order.
    """
    step = search.options.batch_size
    bad: list[tuple[int, int, bool]] = []  # (index, first violated property, undefined)
    for lo in range(0, len(words[0]), step):
        first, undefined = search.kernel.violated_properties([w[lo:lo + step] for w in words])
        for i in np.flatnonzero((first >= 0) | undefined):
            bad.append((lo + int(i), int(first[i]), bool(undefined[i])))
    if not bad:
        return None
    index, prop, undefined = min(bad, key=lambda b: int(keys[b[0]]) if keys is not None
                                 else b[0])
    if undefined:
        return _Found("error", depth, index, None, "")
    return _Found("invariant", depth, index, None, search.kernel.property_names[prop])


def _expand_level(search: _Search, started: float) -> _Found | None:
    kernel, options = search.kernel, search.options
    frontier = search.frontier
    n = len(frontier[0])
    A = kernel.n_actions
    depth = search.depth
    layout = kernel.layout
    dedup = LevelDedup(search.visited, layout.n_words, layout.bits if layout.exact else None,
                       options.dedup_budget)
    best_error: int | None = None
    best_step: tuple[int, int] | None = None
    deadlock: int | None = None
    guard_error: int | None = None
    last_progress = time.perf_counter()
    for lo in range(0, n, options.batch_size):
        hi = min(n, lo + options.batch_size)
        exp = kernel.expand([w[lo:hi] for w in frontier], lo, options.deadlock)
        search.enabled += exp.enabled
        search.generated += len(exp.gen)
        if exp.guard_error is not None:
            guard_error = exp.guard_error if guard_error is None else min(guard_error,
                                                                          exp.guard_error)
        if len(exp.deadlocked) and deadlock is None:
            deadlock = int(exp.deadlocked[0])
        if exp.error is not None:
            best_error = exp.error if best_error is None else min(best_error, exp.error)
        if exp.step_violation is not None and (best_step is None
                                               or exp.step_violation[0] < best_step[0]):
            best_step = exp.step_violation
        if len(exp.gen):
            dedup.add(layout.fingerprints(exp.words), exp.gen, exp.words)
        now = time.perf_counter()
        if options.progress and now - last_progress >= options.progress_seconds:
            last_progress = now
            options.progress(_progress_line(search, started, f"{hi:,}/{n:,} expanded"))
    if guard_error is not None:
        return _Found("guard_error", depth, guard_error // A, guard_error % A)
    if deadlock is not None:
        return _Found("deadlock", depth, deadlock, None, "Deadlock")
    new_fp, new_gen, new_words = dedup.result()
    del dedup
    parent = (new_gen // A).astype(np.uint32)
    action = (new_gen % A).astype(np.uint16)
    found_state = _check_new_states(search, new_words, depth + 1, new_gen) if len(new_fp) \
        else None
    candidates: list[tuple[int, _Found]] = []
    if best_error is not None:
        candidates.append((best_error, _Found("error", depth, best_error // A, best_error % A)))
    if best_step is not None:
        key, prop = best_step
        name = search.machine.step_invariants[prop].name
        candidates.append((key, _Found("step_invariant", depth, key // A, key % A, name)))
    if found_state is not None:
        key = int(new_gen[found_state.parent])
        candidates.append((key, _Found(found_state.kind, depth, key // A, key % A,
                                       found_state.prop)))
    if candidates:
        candidates.sort(key=lambda c: (c[0], c[1].kind != "error"))
        return candidates[0][1]
    search.frontier = new_words
    if not len(new_fp):
        return None  # the search is complete; an empty level does not add to the diameter
    search.new_states += np.bincount(action, minlength=A)
    search.visited.add_sorted(new_fp)
    search.parents.append(parent)
    search.actions.append(action)
    if options.on_level:
        options.on_level(kernel.reader(new_words), len(new_fp))
    if options.progress:
        options.progress(_progress_line(search, started, f"{len(new_fp):,} new"))
    return None


# -- results -------------------------------------------------------------------

def _progress_line(search: _Search, started: float, note: str) -> str:
    elapsed = time.perf_counter() - started + search.seconds_before
    rate = len(search.visited) / elapsed if elapsed > 0 else 0.0
    return (f"depth {search.depth:>3} | distinct {len(search.visited):>12,} | "
            f"queue {len(search.frontier[0]):>10,} | {rate:>11,.0f} states/s | {note}")


def _stats(search: _Search, started: float) -> dict:
    distinct = len(search.visited)
    record_bytes = search.visited.nbytes + sum(p.nbytes + a.nbytes
                                               for p, a in zip(search.parents, search.actions,
                                                               strict=True))
    stats = search_stats(distinct, search.generated, search.depth,
                         time.perf_counter() - started + search.seconds_before,
                         search.kernel.layout, search.kernel.n_actions)
    stats["bytes_per_state"] = round(record_bytes / distinct, 2) if distinct else 0.0
    return stats


def _coverage(search: _Search) -> list[dict]:
    assert search.enabled is not None and search.new_states is not None
    return coverage_rows(search.machine, search.enabled, search.new_states)


def _finish(search: _Search, started: float, complete: bool) -> CheckResult:
    return CheckResult("bfs", HOLDS, None, _stats(search, started), _coverage(search),
                       complete=complete)


def _path(search: _Search, depth: int, index: int) -> Trace:
    """Replay the canonical path to state `index` of level `depth`."""
    acts: list[int] = []
    for d in range(depth, 0, -1):
        acts.append(int(search.actions[d][index]))
        index = int(search.parents[d][index])
    return replay(search.machine, search.init_states[index], acts[::-1])


def _report(search: _Search, found: _Found, started: float) -> CheckResult:
    trace = _path(search, found.depth, found.parent)
    outcome, violation = explain(search.machine, trace, found.kind, found.prop, found.action,
                                 "bfs")
    return CheckResult("bfs", outcome, violation, _stats(search, started), _coverage(search))


# -- checkpoints -----------------------------------------------------------------

def _identity(machine: Machine) -> dict:
    return {"engine": ENGINE_VERSION, "spec": machine.spec_ref or machine.spec_name,
            "params": machine.params, "mutations": list(machine.mutations),
            "invariants": [p.name for p in machine.invariants + machine.lemmas],
            "step_invariants": [p.name for p in machine.step_invariants],
            "slots": len(machine.slots), "actions": len(machine.actions)}


def _save_checkpoint(search: _Search, directory: str, started: float) -> None:
    """Write the search at a level boundary; atomic: a crash keeps the previous one."""
    tmp = directory.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    sizes = [len(p) for p in search.parents]
    np.save(os.path.join(tmp, "visited.npy"), search.visited.to_array())
    np.save(os.path.join(tmp, "parents.npy"), np.concatenate(search.parents))
    np.save(os.path.join(tmp, "actions.npy"), np.concatenate(search.actions))
    np.save(os.path.join(tmp, "frontier.npy"), np.stack(search.frontier))
    np.save(os.path.join(tmp, "coverage.npy"), np.stack([search.enabled, search.new_states]))
    meta = {"identity": _identity(search.machine), "level_sizes": sizes,
            "generated": search.generated, "init_states": search.init_states,
            "seconds": time.perf_counter() - started + search.seconds_before}
    with open(os.path.join(tmp, "meta.json"), "w") as f:
        json.dump(meta, f)
    old = directory.rstrip("/") + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(directory):
        os.replace(directory, old)
    os.replace(tmp, directory)
    shutil.rmtree(old, ignore_errors=True)


def _load_checkpoint(search: _Search, directory: str) -> None:
    try:
        with open(os.path.join(directory, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as exc:
        raise CheckerError(f"cannot resume from {directory}: {exc}") from None
    if meta.get("identity") != json.loads(json.dumps(_identity(search.machine))):
        raise CheckerError(f"cannot resume from {directory}: it was written for another "
                           "model, parameters or engine version")
    search.visited = VisitedSet(np.load(os.path.join(directory, "visited.npy")))
    bounds = np.cumsum([0] + meta["level_sizes"])
    parents = np.load(os.path.join(directory, "parents.npy"))
    actions = np.load(os.path.join(directory, "actions.npy"))
    search.parents = [parents[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    search.actions = [actions[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    search.frontier = list(np.load(os.path.join(directory, "frontier.npy")))
    search.enabled, search.new_states = np.load(os.path.join(directory, "coverage.npy"))
    search.generated = meta["generated"]
    search.init_states = [tuple(s) for s in meta["init_states"]]
    search.seconds_before = meta["seconds"]
