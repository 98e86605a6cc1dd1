"""Explicit-state breadth-first search over batches of packed states.

Level-synchronous: the frontier (sorted by fingerprint) is expanded in chunks
by the NumPy kernel; each chunk's successors are deduplicated on their own and
against the visited set, and at the end of the level the survivors are merged
once more. Memory per visited state: about 6 bytes of fingerprint in the
visited set (`visited.py`) and 2 to 4 of parent and action in the level
records (`records.py`). A big frontier waits for its expansion in a temporary file
(`frontier.py`), and freed heap pages go back to the system between the phases of a
level (`heap.py`), so the peak stays near what the search keeps (decision 0018).
Traces are rebuilt from those records by replaying the actions from the
initial state through the scalar backend, so no old states are kept.

The first violation reported is at the smallest depth, and among equally deep
ones the transition with the smallest (parent fingerprint, action id): the
same on every run and in every engine. When the safety search is complete and
holds, the liveness properties are checked on the explored graph (`liveness.py`).

A level either completes or leaves no trace: its counters join the totals only
when it ends, and an interrupt (Ctrl-C, SIGTERM) or `timeout` stops the search
at the next chunk, back at the last level boundary. With a checkpoint folder the
levels are saved there (`checkpoint.py`) at level boundaries every
`checkpoint_every` seconds and when the search stops, so a resumed run reports
exactly what an uninterrupted one does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.checkpoint import MANIFEST, BackgroundSaves, Checkpoint
from checker.engines.explicit.frontier import SpilledColumns
from checker.engines.explicit.heap import give_back_freed_memory
from checker.engines.explicit.level import Level, expand_frontier, first_bad
from checker.engines.explicit.liveness import check_liveness
from checker.engines.explicit.parallel import Pool, SplitVisited, refuse_too_many_workers
from checker.engines.explicit.records import LevelRecords, action_dtype
from checker.engines.explicit.successors import Kernel
from checker.engines.explicit.visited import LevelDedup, VisitedSet
from checker.engines.identity import search_identity
from checker.engines.report import explain, replay
from checker.engines.result import (
    HOLDS,
    UNKNOWN,
    CheckResult,
    coverage_rows,
    search_stats,
    symmetry_moved,
)
from checker.engines.scope import refuse_unchecked
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.outputs import check_folder_takes_files
from checker.packing import U64, Layout
from checker.symmetry.canonical import Canonicalizer, reduce_by_orbits
from checker.symmetry.concrete import concrete_trace
from checker.symmetry.verify import refuse_a_wrong_declaration
from checker.traces.trace import Trace

ENGINE_VERSION = "bfs-2"
_COUNT_SLICE = 1 << 20  # keys counted per action at a time


@dataclass
class BfsOptions:
    max_depth: int | None = None
    deadlock: bool = True
    progress: Callable[[str], None] | None = None
    checkpoint_dir: str | None = None
    resume: bool = False
    checkpoint_every: float = 5.0  # seconds between saves at level boundaries
    timeout: float | None = None  # seconds; the search then stops, inconclusive
    label: str = ""  # the model's name, recorded in a checkpoint
    symmetry: bool = False  # store one state per orbit of the spec's scalarsets
    batch_size: int = 1 << 16  # parents per chunk: big enough to amortise per-action calls
    dedup_budget: int = 1 << 20  # candidate states kept before filtering against visited
    progress_seconds: float = 2.0
    workers: int = 1  # processes sharing the search by fingerprint (`parallel.py`)
    workers_from: int = 50_000  # frontier size from which starting them pays
    # a level of this many states or more waits for its expansion in a temporary file,
    # not in memory (`frontier.py`); None: never
    spill_from: int | None = 1 << 18
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


class _Stop(Exception):
    """The search stops at a chunk boundary: interrupted, or out of time."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class _StopRequest:
    """Set by a signal handler; the search looks at it between chunks."""

    signalled: bool = False
    deadline: float | None = None

    def check(self) -> None:
        if self.signalled:
            raise _Stop("interrupted")
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            raise _Stop("timeout")


@dataclass
class _Search:
    machine: Machine
    kernel: Kernel
    options: BfsOptions
    stop: _StopRequest
    # all of it here, or once the worker processes start, their count of it
    visited: VisitedSet | SplitVisited = field(default_factory=VisitedSet)
    pool: Pool | None = None
    records: LevelRecords = field(default_factory=lambda: LevelRecords(1))
    # the states to expand next (none held here while workers hold them, `parallel.py`),
    # and how many there are
    frontier: list[np.ndarray] = field(default_factory=list)
    queued: int = 0
    spilled: SpilledColumns | None = None  # where the frontier lives when in a file
    init_states: list[tuple[int, ...]] = field(default_factory=list)
    generated: int = 0
    enabled: np.ndarray | None = None
    new_states: np.ndarray | None = None
    seconds_before: float = 0.0  # time spent in earlier runs of a resumed search
    checkpoint: Checkpoint | None = None
    saves: BackgroundSaves | None = None
    unsaved: list[np.ndarray] = field(default_factory=list)  # fingerprints of unsaved levels
    last_save: float = 0.0
    complete: bool = False  # the frontier was expanded and gave nothing new
    canon: Canonicalizer | None = None  # set when the search stores one state per orbit
    moved: int | None = 0  # successors mapped to another representative (None: not known)
    resumed: str = ""  # what a resumed search found to go on from

    @property
    def depth(self) -> int:
        return len(self.records) - 1


SAVE_RESERVE = 32 << 20  # bytes: a save decodes and writes a level a slice at a time


def preflight(machine: Machine, options: BfsOptions) -> None:
    """Refuse bad input before anything is written: a property BFS cannot check under
    these options, a checkpoint folder it may not take, or one of another search."""
    refuse_unchecked(machine, "bfs", options.max_depth)
    Layout(machine)  # every variable fits a 64-bit word
    refuse_too_many_workers(options.workers)
    if reduces_by_symmetry(machine, options):
        refuse_a_wrong_declaration(machine)
    if options.checkpoint_dir and options.resume:
        Checkpoint.check_identity(options.checkpoint_dir, _identity(machine, options))
    elif options.checkpoint_dir:
        folder = Checkpoint.check_new(options.checkpoint_dir)
        check_folder_takes_files(folder, "--checkpoint")


def _identity(machine: Machine, options: BfsOptions) -> dict:
    identity = search_identity(machine, ENGINE_VERSION, options.label, options.deadlock,
                               options.max_depth)
    if reduces_by_symmetry(machine, options):
        identity["symmetry"] = [s.name for s in machine.scalarsets]
    return identity


def reduces_by_symmetry(machine: Machine, options: BfsOptions) -> bool:
    """Whether the safety search stores one state per orbit: asked for, and declared.
    Liveness is then still checked on the full graph (a fair cycle of orbits need not
    lift to a fair cycle of states under per-instance fairness; decision 0016)."""
    return options.symmetry and bool(machine.scalarsets)


def check(machine: Machine, options: BfsOptions | None = None) -> CheckResult:
    """Exhaustive BFS of `machine`, then its liveness properties; see the module docstring."""
    options = options or BfsOptions()
    refuse_unchecked(machine, "bfs", options.max_depth)
    started = time.perf_counter()
    kernel = Kernel(machine, options.progress)
    A = kernel.n_actions
    stop = _StopRequest(deadline=None if options.timeout is None else started + options.timeout)
    search = _Search(machine, kernel, options, stop, records=LevelRecords(A),
                     enabled=np.zeros(A, dtype=np.int64),
                     new_states=np.zeros(A, dtype=np.int64), last_save=started)
    if reduces_by_symmetry(machine, options):
        refuse_a_wrong_declaration(machine)
        search.canon = reduce_by_orbits(kernel)
    if options.checkpoint_dir:
        _take_checkpoint(search)
    # memory held back so that a search that runs out of it can still save its levels
    reserve = np.empty(SAVE_RESERVE, dtype=np.uint8) if search.checkpoint else None
    out_of_memory = False
    try:
        with _signals_stop(stop):
            result = _run(search, started)
    except MemoryError:  # the level's buffers are freed once this block is left
        out_of_memory = True
    except BaseException:
        if search.saves is not None:  # a save in flight finishes; what stopped us matters
            with contextlib.suppress(BaseException):
                search.saves.wait()
        raise
    finally:
        if search.pool is not None:  # its processes end with the search, however it ends
            search.pool.close()
    if out_of_memory:
        del reserve  # now the save's
        raise CheckerError(_out_of_memory(search, started))
    if result.outcome == HOLDS and result.complete and machine.liveness:
        kernel.canonical = None  # the liveness graph keeps every state
        result = check_liveness(machine, result, kernel)
    return result


def _run(search: _Search, started: float) -> CheckResult:
    options = search.options
    if search.depth < 0:
        found = _initial_level(search)
        if found is not None:
            return _report(search, found, started)
    try:
        while not search.complete:
            if options.max_depth is not None and search.depth >= options.max_depth:
                _save(search, started)
                return _finish(search, started, complete=False)
            found = _expand_level(search, started)
            if found is not None:
                _await_saves(search)
                return _report(search, found, started)
            if search.complete:
                break
            if time.perf_counter() - search.last_save >= options.checkpoint_every:
                _save(search, started, background=True)
    except _Stop as stopped:
        _save(search, started)
        if stopped.reason == "interrupted":
            raise KeyboardInterrupt from None
        return _finish(search, started, complete=False, unknown=(
            f"stopped by the timeout after {options.timeout:g} s, at the end of depth "
            f"{search.depth}: not every state was explored"))
    _save(search, started)
    if search.stop.signalled:  # asked to stop while the last level was being merged
        raise KeyboardInterrupt
    return _finish(search, started, complete=True)


@contextlib.contextmanager
def _signals_stop(stop: _StopRequest) -> Iterator[None]:
    """While searching, Ctrl-C and SIGTERM ask the search to stop at the next chunk;
    a second one stops it at once (the last checkpoint is then what remains)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if stop.signalled:
            raise KeyboardInterrupt
        stop.signalled = True

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _out_of_memory(search: _Search, started: float) -> str:
    """What to tell a user whose search ran out of memory, after saving what it can:
    the search is at a level boundary (a level allocates before it commits, and only
    the visited set, which a checkpoint does not hold, grows after)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    saved = search.checkpoint
    if saved is not None and search.saves is not None:
        for _ in range(2):  # a save in flight may have run out of memory with the level:
            try:            # now that the level's buffers are free, it is tried again
                search.saves.retry()
                _save(search, started)
                break
            except (MemoryError, CheckerError):  # the previous checkpoint is intact
                continue
    if saved is None:
        keep = "; with --checkpoint DIR the levels explored so far are kept"
    elif saved.levels:
        keep = (f"; the checkpoint in {saved.path} holds levels 0-{saved.levels - 1}: resume "
                f"it with --resume {saved.path} on a machine with more memory")
    else:
        keep = f"; the checkpoint in {saved.path} holds no level yet"
    return (f"out of memory at depth {search.depth + 1} after {len(search.visited):,} distinct "
            f"states (peak memory {peak:,.0f} MB){keep}; the Spark engine (--engine spark) "
            "spreads the states over executors and disk, or lower the model's bounds")


# -- checkpoints ------------------------------------------------------------------

def _take_checkpoint(search: _Search) -> None:
    """Create the checkpoint folder, or open it and restore the search from it."""
    options = search.options
    identity = _identity(search.machine, options)
    assert options.checkpoint_dir is not None
    if not options.resume:
        search.checkpoint = Checkpoint.create(options.checkpoint_dir, identity)
        search.saves = BackgroundSaves(search.checkpoint)
        return
    search.checkpoint, saved = Checkpoint.open(options.checkpoint_dir, identity,
                                               action_dtype(search.kernel.n_actions))
    search.saves = BackgroundSaves(search.checkpoint)
    if saved is None:  # nothing durable yet: start over in the same folder, and say so
        search.resumed = (f"nothing: {search.checkpoint.path} has no {MANIFEST} (no save "
                          "finished, or it was deleted); started from the initial states")
        if options.progress:
            options.progress(f"checkpoint: resumed {search.resumed}")
        return
    search.resumed = f"from level {len(saved.fps) - 1} of {search.checkpoint.path}"
    layout = search.kernel.layout
    if not np.array_equal(layout.fingerprints(saved.frontier), saved.fps[-1]):
        raise CheckerError(f"{search.checkpoint.path}: the saved frontier does not match "
                           f"level {len(saved.fps) - 1}'s fingerprints")
    counters = (saved.enabled.shape, saved.new_states.shape)
    if counters != ((search.kernel.n_actions,),) * 2 or saved.generated < 0 \
            or (saved.enabled < 0).any() or (saved.new_states < 0).any():
        raise CheckerError(f"{search.checkpoint.path / MANIFEST}: its counters do not fit "
                           f"the spec's {search.kernel.n_actions} action instances")
    search.visited = VisitedSet(np.concatenate(saved.fps))
    for parents, actions in zip(saved.parents, saved.actions, strict=True):
        search.records.append_parents(parents, actions)
    search.frontier, search.queued = saved.frontier, len(saved.fps[-1])
    search.init_states = saved.init_states
    search.generated, search.enabled, search.new_states = (saved.generated, saved.enabled,
                                                           saved.new_states)
    search.moved = saved.moved
    search.seconds_before = saved.seconds
    search.complete = saved.complete


def _save(search: _Search, started: float, background: bool = False) -> None:
    """Make the levels explored so far durable, with the totals up to them. In the
    background, a save asked for while the last one still runs waits for the next one."""
    checkpoint, saves = search.checkpoint, search.saves
    if checkpoint is None or saves is None:
        return
    if background and saves.busy:
        return
    _await_saves(search)
    first = search.depth + 1 - len(search.unsaved)
    layout = search.kernel.layout
    assert search.enabled is not None and search.new_states is not None
    steps = [search.records.steps(d, action_dtype(search.kernel.n_actions))
             for d in range(first, search.depth + 1)]
    args = (first, search.unsaved, steps, None if layout.exact else list(search.frontier),
            {"init_states": search.init_states, "generated": search.generated,
             **({} if search.moved is None else {"moved": search.moved}),
             "enabled": search.enabled.tolist(), "new_states": search.new_states.tolist(),
             "seconds": time.perf_counter() - started + search.seconds_before,
             "complete": search.complete})
    search.unsaved = []
    search.last_save = time.perf_counter()
    if search.options.progress:
        search.options.progress(f"checkpoint: levels 0-{search.depth} to {checkpoint.path}"
                                + (" (in the background)" if background else ""))
    saves.start(*args, here=not background)
    if not background:
        _await_saves(search)


def _await_saves(search: _Search) -> None:
    """Wait for the save in flight, if any; a failed write is one line."""
    if search.saves is None or search.checkpoint is None:
        return
    try:
        search.saves.wait()
    except OSError as exc:
        raise CheckerError(f"cannot write the checkpoint in {search.checkpoint.path}: "
                           f"{exc.strerror or exc}") from None


# -- levels -------------------------------------------------------------------

def _initial_level(search: _Search) -> _Found | None:
    m, kernel = search.machine, search.kernel
    scalar = ScalarMachine(m)
    states = [s for s in m.init_states if scalar.within_constraints(s)]
    if not states:
        raise CheckerError(f"spec {m.spec_name}: no initial state satisfies the constraints")
    words = kernel.layout.pack_states(states)
    if search.canon is not None:
        words = search.canon.canonical(words)
        states = [kernel.layout.unpack(tuple(int(w[i]) for w in words))
                  for i in range(len(states))]
    fps = kernel.layout.fingerprints(words)
    order = np.argsort(fps, kind="stable")
    fps, words = fps[order], [w[order] for w in words]
    keep = np.concatenate(([True], fps[1:] != fps[:-1]))
    fps, words = fps[keep], [w[keep] for w in words]
    search.init_states = [states[i] for i in order[keep]]
    search.visited = VisitedSet(fps)
    search.records.append(np.zeros(len(fps), dtype=np.int64))
    search.frontier, search.queued = words, len(fps)
    if search.checkpoint is not None:
        search.unsaved.append(fps)
    if search.options.on_level:
        search.options.on_level(kernel.reader(words), len(fps))
    bad = first_bad(kernel, words, None, search.options.batch_size)
    if bad is None:
        return None
    index, prop, undefined = bad
    if undefined:
        return _Found("error", 0, index, None, "")
    return _Found("invariant", 0, index, None, kernel.property_names[prop])


def _expand_level(search: _Search, started: float) -> _Found | None:
    """Expand the frontier into the next level: in this process, or in worker processes
    once a frontier is big enough to pay for starting them (then for every later level,
    as they hold the visited set). Either way the same `Level` comes back, and
    `_settle` decides what it means."""
    options = search.options
    if search.pool is None and options.workers > 1 \
            and search.queued >= options.workers_from:
        assert isinstance(search.visited, VisitedSet)
        _await_saves(search)  # no other thread may run while the workers fork
        search.pool = Pool(search.kernel, search.visited, search.frontier, options)
        search.visited = search.pool.visited
    if search.pool is None:
        level = _expand_here(search, started)
    else:
        n = search.queued
        last_progress = time.perf_counter()

        def waiting(done: int) -> None:  # every few tenths of a second while workers work
            nonlocal last_progress
            search.stop.check()
            now = time.perf_counter()
            if options.progress and now - last_progress >= options.progress_seconds:
                last_progress = now
                options.progress(_progress_line(search, started, f"{done:,}/{n:,} expanded "
                                                f"by {options.workers} workers"))

        level = search.pool.expand(waiting)
    return _settle(search, level, started)


def _expand_here(search: _Search, started: float) -> Level:
    """The next level, computed in this process; the stop request is looked at between
    chunks, so a stopped level leaves no trace."""
    kernel, options = search.kernel, search.options
    assert isinstance(search.visited, VisitedSet)
    layout = kernel.layout
    n = search.queued
    # no words held: the survivors are rebuilt from their keys (exact fingerprints are
    # the words)
    dedup = LevelDedup(search.visited, 0, layout.bits if layout.exact else None,
                       options.dedup_budget)
    level = Level(np.zeros(kernel.n_actions, dtype=np.int64))
    last_progress = time.perf_counter()
    done = 0

    def tick() -> None:  # inside a batch too: a machine with many actions is slow per batch
        nonlocal last_progress
        now = time.perf_counter()
        if options.progress and now - last_progress >= options.progress_seconds:
            last_progress = now
            options.progress(_progress_line(search, started, f"{done:,}/{n:,} expanded"))

    def between(lo: int) -> None:
        nonlocal done
        search.stop.check()
        done = lo
        tick()
        if search.spilled is not None:
            search.spilled.release()

    expand_frontier(kernel, search.frontier, 0, options.deadlock, options.batch_size, level,
                    lambda exp: dedup.add(layout.fingerprints(exp.words), exp.gen, []),
                    between, tick)
    if level.guard_error is None and level.deadlock is None:  # else no state is needed
        give_back_freed_memory()  # the expansion's, before the level's arrays
        level.fps, level.gen, level.words = dedup.result()
        if not layout.exact:  # the fingerprints are the rebuilt words': none held meanwhile
            level.fps = np.empty(0, dtype=U64)
            level.words = _rebuild_words(search, level.gen)
            level.fps = layout.fingerprints(level.words)
        level.count = len(level.fps)
        level.bad = first_bad(kernel, level.words, level.gen, options.batch_size)
    return level


def _rebuild_words(search: _Search, keys: np.ndarray) -> list[np.ndarray]:
    """The words of the new states named by generation keys, rebuilt from their parents
    one window of them at a time (`Kernel.successors_of`); between windows the pages
    read from a frontier in a file, and the window's freed memory, go back."""

    def between() -> None:
        if search.spilled is not None:
            search.spilled.release()
        give_back_freed_memory()

    give_back_freed_memory()  # the level's candidates, before its words
    return search.kernel.successors_of(search.frontier, keys, search.options.batch_size,
                                       between)


def _settle(search: _Search, level: Level, started: float) -> _Found | None:
    """The level ends: its counters join the totals, and either the violation with the
    smallest generation key is returned (guard errors, then deadlocks, first), or its new
    states become the next level (none: the search is complete)."""
    A = search.kernel.n_actions
    depth = search.depth

    def count_level() -> None:
        assert search.enabled is not None  # narrowing does not reach into a closure
        search.enabled += level.enabled
        search.generated += level.generated
        if search.moved is not None:
            search.moved += level.moved

    if level.guard_error is not None:
        count_level()
        return _Found("guard_error", depth, level.guard_error // A, level.guard_error % A)
    if level.deadlock is not None:
        count_level()
        return _Found("deadlock", depth, level.deadlock, None, "Deadlock")
    candidates: list[tuple[int, _Found]] = []
    if level.error is not None:
        key = level.error
        candidates.append((key, _Found("error", depth, key // A, key % A)))
    if level.step is not None:
        key, prop = level.step
        name = search.machine.step_invariants[prop].name
        candidates.append((key, _Found("step_invariant", depth, key // A, key % A, name)))
    if level.bad is not None:
        key, prop, undefined = level.bad
        candidates.append((key, _Found("error", depth, key // A, key % A) if undefined else
                           _Found("invariant", depth, key // A, key % A,
                                  search.kernel.property_names[prop])))
    if candidates:
        count_level()
        candidates.sort(key=lambda c: (c[0], c[1].kind != "error"))
        return candidates[0][1]
    if not level.count:
        count_level()
        search.complete = True  # an empty level does not add to the diameter
        return None
    options = search.options
    if level.fetch is not None:  # the workers go on meanwhile, unless this is the last level
        level.fps, level.gen, level.words = level.fetch(
            options.max_depth is None or depth + 1 < options.max_depth)
    give_back_freed_memory()  # the rebuild's and the checks', before the commit's
    fps = _commit_level(search, level)
    count_level()
    # last: the old frontier is gone by now, and if memory runs out here a checkpoint
    # still saves the whole level (a resumed search rebuilds the set from the levels)
    give_back_freed_memory()
    if isinstance(search.visited, VisitedSet):
        search.visited.add_sorted(fps)
    else:  # the workers added the level to their parts
        search.visited.count += level.count
    if options.on_level:
        options.on_level(search.kernel.reader(search.frontier), level.count)
    if options.progress:
        options.progress(_progress_line(search, started, f"{level.count:,} new"))
    return None


def _commit_level(search: _Search, level: Level) -> np.ndarray:
    """Append a level of new states (sorted by fingerprint, with their canonical
    generation keys): where every level after the initial one (`_initial_level`)
    writes its parent and action records, and makes them the frontier (in a file, if
    the level is big and the search runs in this process). The level lets go of its
    arrays (its caller still refers to it), so that words moved to a file are freed;
    returns the fingerprints, to add to the visited set (none when the workers hold
    the states and the coordinator keeps only their keys)."""
    assert search.new_states is not None
    fps, gen, words = level.fps, level.gen, level.words
    level.fps, level.gen, level.words = np.empty(0, dtype=U64), np.empty(0, dtype=np.int64), []
    spill_from = search.options.spill_from
    spilled = None
    if search.pool is None and spill_from is not None and len(fps) >= spill_from:
        try:
            spilled = SpilledColumns(words)
        except OSError:  # no room for it in the temporary folder: it stays in memory
            pass
        else:
            words = spilled.columns
    A = search.kernel.n_actions
    new_states = sum((np.bincount(gen[lo:lo + _COUNT_SLICE] % A, minlength=A)
                      for lo in range(0, len(gen), _COUNT_SLICE)), np.zeros(A, dtype=np.int64))
    search.records.append(gen)
    # nothing below allocates: the level joins the search whole, or not at all
    search.spilled = spilled
    search.frontier, search.queued = words, level.count
    search.new_states += new_states
    if search.checkpoint is not None:
        search.unsaved.append(fps)
    return fps


# -- results -------------------------------------------------------------------

def _progress_line(search: _Search, started: float, note: str) -> str:
    elapsed = time.perf_counter() - started + search.seconds_before
    rate = len(search.visited) / elapsed if elapsed > 0 else 0.0
    return (f"depth {search.depth:>3} | distinct {len(search.visited):>12,} | "
            f"queue {search.queued:>10,} | {rate:>11,.0f} states/s | {note}")


def _stats(search: _Search, started: float) -> dict:
    distinct = len(search.visited)
    record_bytes = search.visited.nbytes + search.records.nbytes
    stats = search_stats(distinct, search.generated, search.depth,
                         time.perf_counter() - started + search.seconds_before,
                         search.kernel.layout, search.kernel.n_actions)
    stats["bytes_per_state"] = round(record_bytes / distinct, 2) if distinct else 0.0
    # the processes that shared the search: workers start only at a level big enough
    stats["workers"] = 1 if search.pool is None else search.pool.n
    if search.pool is not None:  # memory is the whole process tree's
        workers = search.pool.peaks_mb()
        stats["peak_rss_mb_workers"] = workers
        stats["peak_rss_mb"] = round(stats["peak_rss_mb"] + sum(workers), 1)
    if search.resumed:
        stats["resumed"] = search.resumed
    if search.canon is not None:
        stats["symmetry"] = (f"{search.canon.group.size:,} permutations of "
                             f"{', '.join(s.name for s in search.machine.scalarsets)}; one "
                             f"state per orbit ({search.canon.method})")
        if search.moved is not None:  # unknown after resuming an older checkpoint
            stats.update(symmetry_moved(search.moved, search.generated))
    return stats


def _coverage(search: _Search) -> list[dict]:
    assert search.enabled is not None and search.new_states is not None
    return coverage_rows(search.machine, search.enabled, search.new_states)


def _finish(search: _Search, started: float, complete: bool,
            unknown: str | None = None) -> CheckResult:
    """Holds (to the depth bound, if `complete` is False), or inconclusive (`unknown`:
    why the search stopped early)."""
    stats = _stats(search, started)
    if unknown is not None:
        stats["unknown"] = unknown
    return CheckResult("bfs", HOLDS if unknown is None else UNKNOWN, None, stats,
                       _coverage(search), complete=complete)


def _path(search: _Search, depth: int, index: int) -> Trace:
    """Replay the canonical path to state `index` of level `depth`."""
    acts: list[int] = []
    for d in range(depth, 0, -1):
        index, action = search.records.step(d, index)
        acts.append(action)
    if search.canon is not None:
        return concrete_trace(search.kernel, search.canon, search.init_states[index],
                              acts[::-1])
    return replay(search.machine, search.init_states[index], acts[::-1])


def _report(search: _Search, found: _Found, started: float) -> CheckResult:
    trace = _path(search, found.depth, found.parent)
    outcome, violation = explain(search.machine, trace, found.kind, found.prop, found.action,
                                 "bfs")
    return CheckResult("bfs", outcome, violation, _stats(search, started), _coverage(search))
