"""The local BFS in several processes, each owning the visited states of one share of
the fingerprints (`ctmc check --workers N`); decision 0014 says why it is built so.

The coordinator (the searching process, `bfs.py`) keeps the parent and action
records, the counters and the checkpoint; the visited set is the workers', and so is
the frontier, unless a checkpoint or `on_level` needs the coordinator to hold it too.
Each worker holds the visited states it owns, and the frontier states it owns with
their indices in the whole (fingerprint-sorted) frontier. For each level:

1. each worker expands its frontier states chunk by chunk (`level.expand_frontier`),
   turning generation keys into the whole frontier's (`parent_index * n_actions +
   action`, as one process makes them), and splits the successors by owner with
   whole-array operations: its own go to its `LevelDedup`, the others' down a pipe as
   raw array bytes, which a thread per peer reads, so no two workers wait on each other;
2. each owner collapses what it gets against its part of the visited set, checks the
   invariants on its new states, and learns where they fall in the whole level from
   its peers' new fingerprints (a binary search each);
3. it sends the coordinator its `Level` summary, then its states' generation keys with
   their places (and the states themselves only when the coordinator keeps a frontier:
   for a checkpoint or `on_level`; else the workers' copies are the only ones);
4. the coordinator joins the summaries into the `Level` a single process computes,
   which `bfs._settle` judges; only if the level joins the search does it tell the
   workers to go on, and put the owners' keys (and states) in place while they do.

Ownership: a hashed fingerprint is uniform, and its owner holds one range of the
64-bit space. An exact fingerprint is the packed state itself; such states crowd into
a few narrow ranges that move from level to level, so they are owned by range of
`fp * odd constant` (Fibonacci hashing).

Processes are forked (they inherit the compiled kernel, the visited set and frontier
so far; nothing is pickled), ignore Ctrl-C and SIGTERM (the coordinator stops at a
level boundary and kills them), die with the coordinator (Linux's parent-death
signal, and in any case at their next read or write), and are always killed and
reaped by `close`. A worker that fails or dies is one `CheckerError` line, never a
hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import pickle
import queue
import resource
import struct
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait as wait_for
from typing import TYPE_CHECKING, Any

import numpy as np

from checker.engines.explicit.heap import give_back_freed_memory
from checker.engines.explicit.level import Level, expand_frontier, first_bad
from checker.engines.explicit.successors import Expansion, Kernel
from checker.engines.explicit.visited import LevelDedup, VisitedSet
from checker.engines.worker import how_it_ended, start_worker
from checker.errors import CheckerError
from checker.packing import U64, fingerprint_ranges

if TYPE_CHECKING:
    from checker.engines.explicit.bfs import BfsOptions

_PIPE_BYTES = 1 << 20  # fewer wake-ups than the default 64 KiB; the usual maximum
_POLL_SECONDS = 0.2  # how often the coordinator looks at the stop request
_EXIT_OUT_OF_MEMORY = 75  # a worker whose sending thread ran out of memory mid-message
_LAST_WORDS_SECONDS = 6.0  # a worker's last word reaches the coordinator within this (tell)


def owners(fps: np.ndarray, n: int, exact: bool) -> np.ndarray:
    """The worker (0..n-1) owning each fingerprint: the range its fingerprint (exact
    ones spread first) falls in, of n equal ranges."""
    return fingerprint_ranges(fps, n, exact).astype(np.uint8 if n <= 1 << 8 else np.uint16)


def keeps_states(options: BfsOptions) -> bool:
    """Whether the coordinator holds the frontier's states while workers search: only
    to save them in a checkpoint or to show them to `on_level`."""
    return options.checkpoint_dir is not None or options.on_level is not None


class SplitVisited:
    """The coordinator's view of the visited set its workers hold between them: the
    search counts each level here once the owners have added it to their parts."""

    def __init__(self, count: int, nbytes: int):
        self.count = count
        self.measured = (nbytes, count)  # (the workers' bytes, when they held `count`)

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        """As last measured, scaled to the states added since."""
        measured, at = self.measured
        return measured * self.count // at if at else 0


class _Channel:
    """One direction of a pipe carrying messages: a pickled header (a tag, small
    metadata, the arrays' types and lengths), then each array's raw bytes."""

    def __init__(self, fd: int, writing: bool):
        if writing:
            with contextlib.suppress(OSError, AttributeError):  # Linux only; a hint
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self.file = os.fdopen(fd, "wb" if writing else "rb", buffering=0)

    def fileno(self) -> int:
        return self.file.fileno()

    def send(self, tag: str, meta: Any = None, arrays: Sequence[np.ndarray] = ()) -> None:
        arrays = [np.ascontiguousarray(a) for a in arrays]
        head = pickle.dumps((tag, meta, [(a.dtype.str, len(a)) for a in arrays]))
        self._write(memoryview(struct.pack("<Q", len(head)) + head))
        for a in arrays:
            if len(a):
                self._write(a.data.cast("B"))

    def recv(self) -> tuple[str, Any, list[np.ndarray]]:
        """The next message; EOFError when the other end is closed."""
        size = bytearray(8)
        self._read(memoryview(size))
        head = bytearray(struct.unpack("<Q", size)[0])
        self._read(memoryview(head))
        tag, meta, specs = pickle.loads(head)
        arrays = [np.empty(n, dtype=np.dtype(dtype)) for dtype, n in specs]
        for a in arrays:
            if len(a):
                self._read(a.data.cast("B"))
        return tag, meta, arrays

    def _write(self, view: memoryview) -> None:
        while len(view):
            view = view[self.file.write(view) or 0:]

    def _read(self, view: memoryview) -> None:
        while len(view):
            got = self.file.readinto(view)
            if not got:
                raise EOFError
            view = view[got:]

    def close(self) -> None:
        self.file.close()


_SPARE_FDS = 64  # descriptors left for files, sockets and the interpreter itself


def pipe_fds(workers: int) -> int:
    """File descriptors the coordinator opens for `workers`: a command and a result pipe
    each, and a pipe from every worker to every other, two ends a pipe."""
    return 2 * (2 * workers + workers * (workers - 1))


def refuse_too_many_workers(workers: int) -> None:
    """Refuse, in one line, more workers than this process has descriptors for their
    pipes (`ulimit -n`), rather than fail with "Too many open files" at the first big
    level."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if workers < 2 or limit == resource.RLIM_INFINITY or pipe_fds(workers) + _SPARE_FDS <= limit:
        return
    most = max(n for n in range(1, workers) if n == 1 or pipe_fds(n) + _SPARE_FDS <= limit)
    raise CheckerError(f"--workers {workers}: their pipes need {pipe_fds(workers):,} open "
                       f"files, and this process may open {limit:,} (ulimit -n); use at most "
                       f"{most} workers, or raise the limit")


class Pool:
    """`options.workers` processes sharing the search (see the module docstring)."""

    def __init__(self, kernel: Kernel, visited: VisitedSet, frontier: list[np.ndarray],
                 options: BfsOptions):
        """Fork the workers; each keeps the part of `visited` and of `frontier` it owns,
        and starts expanding the latter at once."""
        n = options.workers
        refuse_too_many_workers(n)
        self.kernel, self.n = kernel, n
        self.checkpoint = options.checkpoint_dir  # named in the line a dead worker gives
        self.keeps_states = keeps_states(options)
        context = multiprocessing.get_context("fork")
        self.done = context.Array("q", n, lock=False)  # parents each has expanded this level
        commands = [os.pipe() for _ in range(n)]
        results = [os.pipe() for _ in range(n)]
        peers = {(v, w): os.pipe() for v in range(n) for w in range(n) if v != w}  # v to w
        every = [fd for pair in [*commands, *results, *peers.values()] for fd in pair]
        self.processes: list[Any] = []
        try:
            for w in range(n):
                ends = _Ends(commands[w][0], results[w][1],
                             {v: peers[v, w][0] for v in range(n) if v != w},
                             {v: peers[w, v][1] for v in range(n) if v != w})
                process = context.Process(
                    target=_work, name=f"ctmc-bfs-worker-{w + 1}", daemon=True,
                    args=(_Worker(w, kernel, visited, frontier, options, ends, self.done),
                          every, os.getpid()))
                process.start()
                self.processes.append(process)
        except BaseException:  # e.g. no memory for one more process
            for process in self.processes:
                process.kill()
                process.join()
            for fd in every:
                os.close(fd)
            raise
        mine = {w for _, w in commands} | {r for r, _ in results}
        for fd in set(every) - mine:  # the workers' ends
            os.close(fd)
        self.commands = [_Channel(w, True) for _, w in commands]
        self.results = [_Channel(r, False) for r, _ in results]
        self.visited = SplitVisited(len(visited), visited.nbytes)

    def expand(self, waiting: Callable[[int], None]) -> Level:
        """The level the workers are expanding, as `bfs._expand_here` computes it, but
        for its new states, which `Level.fetch` gives. `waiting` is called with the
        parents expanded so far every few tenths of a second; whatever it raises (a stop
        request) ends the pool with the level, as does a failed worker."""
        try:
            at = len(self.visited)
            level = Level(np.zeros(self.kernel.n_actions, dtype=np.int64))
            measured = 0
            for summary, nbytes in self._gather("level", waiting):
                level.join(summary)
                measured += nbytes
            self.visited.measured = (measured, at)
            level.fetch = self._fetch
            return level
        except BaseException:
            self.close()
            raise

    def _fetch(self, more: bool) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """The level's new states in fingerprint order: fingerprints, generation keys and
        words, or the keys alone (empty fingerprints, no words) when the coordinator keeps
        no frontier (`keeps_states`); the workers go on to the next level first if
        `more`."""
        try:
            if more:
                for w, channel in enumerate(self.commands):
                    self.done[w] = 0
                    try:
                        channel.send("go")
                    except BrokenPipeError:
                        raise self._lost(w) from None
            shares = self._gather("states", lambda done: None)
        except BaseException:
            self.close()
            raise
        layout = self.kernel.layout
        total = sum(len(arrays[0]) for arrays in shares)
        gen = np.empty(total, dtype=np.result_type(np.uint32, *(a[1] for a in shares)))
        fps, words = np.empty(0, dtype=U64), []
        outs = [gen]  # what each worker sends after the places (`_Worker.level`)
        if self.keeps_states:
            fps = np.empty(total, dtype=U64)
            words = [fps] if layout.exact else [np.empty(total, dtype=U64)
                                                for _ in range(layout.n_words)]
            outs += [fps] if layout.exact else [fps, *words]
        for ranks, *columns in shares:  # each owner's states go to their places
            for out, column in zip(outs, columns, strict=True):
                out[ranks] = column
        return fps, gen, words

    def _gather(self, tag: str, waiting: Callable[[int], None]) -> list[Any]:
        """Every worker's next message (a `tag` message), in worker order."""
        got: dict[int, Any] = {}
        results = {channel.fileno(): w for w, channel in enumerate(self.results)}
        deaths = {p.sentinel: w for w, p in enumerate(self.processes)}
        while len(got) < self.n:
            awaited = [fd for fd, w in results.items() if w not in got]
            for ready in wait_for([*awaited, *deaths], _POLL_SECONDS):
                w = results[ready] if ready in results else deaths[ready]
                if w not in got:  # its message, its failure, or the end of its pipe
                    got[w] = self._receive(w, tag)
                if ready in deaths:  # even after its message: its part of the set is lost
                    raise self._lost(w)
            waiting(sum(self.done))
        return [got[w] for w in range(self.n)]

    def _receive(self, w: int, tag: str) -> Any:
        try:
            got, meta, arrays = self.results[w].recv()
        except EOFError:
            raise self._lost(w) from None
        if got == "out of memory":
            raise MemoryError
        if got == "failed":
            raise CheckerError(f"BFS worker {w + 1} of {self.n} failed: {meta}")
        assert got == tag, (got, tag)
        return meta if tag == "level" else arrays

    def _lost(self, w: int) -> BaseException:
        """What to raise for worker `w` gone mid-level. A worker that ran out of memory or
        failed tells us, then ends, and its end ends the others (their pipes close), so
        the first to end need not be the cause: until every worker has ended (or had
        time to say why), what any of them told, `w` included, is looked for first, then
        an exit that means out of memory."""
        unread = dict(enumerate(self.results))
        deadline = time.monotonic() + _LAST_WORDS_SECONDS
        while True:
            ended = all(p.exitcode is not None for p in self.processes)
            for v, channel in list(unread.items()):
                try:
                    while wait_for([channel.fileno()], 0):
                        got, meta, _ = channel.recv()
                        if got == "out of memory":
                            return MemoryError()
                        if got == "failed":
                            return CheckerError(f"BFS worker {v + 1} of {self.n} failed: "
                                                f"{meta}")
                except (EOFError, OSError):
                    del unread[v]
            if any(p.exitcode == _EXIT_OUT_OF_MEMORY for p in self.processes):
                return MemoryError()
            if ended or not unread or time.monotonic() > deadline:
                return CheckerError(self._died(w))
            wait_for([p.sentinel for p in self.processes if p.exitcode is None]
                     + [c.fileno() for c in unread.values()], _POLL_SECONDS)

    def _died(self, w: int) -> str:
        process = self.processes[w]
        how = how_it_ended(process)
        then = (f"to go on from the last checkpoint, run the same command with --resume "
                f"{self.checkpoint}" if self.checkpoint else
                "run it again (with --checkpoint DIR, a run stopped this way resumes with "
                "--resume DIR)")
        return (f"BFS worker {w + 1} of {self.n} (pid {process.pid}) {how} during a level; "
                f"the search stopped: {then}, with fewer --workers if memory is short")

    def peaks_mb(self) -> list[float]:
        """Each live worker's peak resident memory so far (Linux's VmHWM), in MB; 0 for
        one whose peak cannot be read."""
        peaks = []
        for process in self.processes:
            try:
                with open(f"/proc/{process.pid}/status") as f:
                    kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
            except (OSError, StopIteration, ValueError, IndexError):
                kb = 0
            peaks.append(round(kb / 1024, 1))
        return peaks

    def close(self) -> None:
        """Kill every worker and reap it; the pool is then unusable. Idempotent."""
        for process in self.processes:
            if process.exitcode is None:
                process.kill()
        for process in self.processes:
            process.join()
        for channel in [*self.commands, *self.results]:
            with contextlib.suppress(OSError):
                channel.close()
        self.processes, self.commands, self.results = [], [], []


class _Ends:
    """A worker's pipe ends: commands in, results out, and one pipe from and one to
    each peer."""

    def __init__(self, commands: int, results: int, inbound: dict[int, int],
                 outbound: dict[int, int]):
        self.commands, self.results = commands, results
        self.inbound, self.outbound = inbound, outbound

    def fds(self) -> set[int]:
        return {self.commands, self.results, *self.inbound.values(), *self.outbound.values()}


def _work(worker: _Worker, every: list[int], coordinator: int) -> None:
    """A worker process's life: serve levels until the coordinator goes. Whatever goes
    wrong is told to the coordinator, never printed."""
    start_worker(coordinator)
    for fd in set(every) - worker.ends.fds():  # else a dead peer's pipe would never close
        os.close(fd)
    try:
        worker.serve()
    except (EOFError, BrokenPipeError):  # the coordinator or a peer is gone: so are we,
        if worker.receiving_ran_out.is_set():  # after a receiving thread, out of memory,
            worker.tell("out of memory")  # closed a peer's pipe (the peer's end)
    except MemoryError:
        worker.tell("out of memory")
    except BaseException as exc:  # noqa: BLE001 - reported by the coordinator
        worker.tell("failed", f"{type(exc).__name__}: {exc}")
    os._exit(0)


class _Worker:
    """One worker: its part of the visited set and of the frontier (with each state's
    index in the whole frontier), and its pipes. Built before the fork, it refers to
    the coordinator's visited set and frontier; `serve` (after it) takes its parts."""

    def __init__(self, index: int, kernel: Kernel, visited: VisitedSet,
                 frontier: list[np.ndarray], options: BfsOptions, ends: _Ends, done: Any):
        self.index, self.kernel, self.ends, self.done = index, kernel, ends, done
        self.n = options.workers
        self.deadlock, self.batch_size = options.deadlock, options.batch_size
        self.budget = options.dedup_budget
        self.sends_states = keeps_states(options)
        self.inherited: list[Any] = [visited, frontier]
        self.visited = VisitedSet()
        self.words: list[np.ndarray] = []
        self.ranks = np.empty(0, dtype=np.int64)
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()  # to the coordinator, in order
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()  # (peer, message) from peers
        self.receiving_ran_out = threading.Event()  # a receiving thread had no memory
        self.sender: threading.Thread | None = None
        self.peers: dict[int, _Channel] = {}
        self.ended: set[int] = set()  # peers done routing this level's successors
        self.early: dict[int, np.ndarray] = {}  # peers' new fingerprints of this level

    def tell(self, tag: str, meta: Any = None) -> None:
        """A last word to the coordinator, after what is queued for it."""
        self.outbox.put((tag, meta, []))
        self.outbox.put(None)
        if self.sender is not None:
            self.sender.join(5.0)

    def serve(self) -> None:
        """Take this worker's parts, then expand a level each time the coordinator says
        "go"; its pipe's end (EOFError) ends the worker."""
        self.sender = threading.Thread(
            target=_send_all, args=(_Channel(self.ends.results, True), self.outbox),
            daemon=True, name="ctmc-bfs-send")
        self.sender.start()
        layout = self.kernel.layout
        visited, frontier = self.inherited
        self.inherited.clear()
        known = visited.to_array()
        self.visited = VisitedSet(known[owners(known, self.n, layout.exact) == self.index])
        own = owners(layout.fingerprints(frontier), self.n, layout.exact) == self.index
        self.ranks = np.flatnonzero(own)
        self.words = [w[own] for w in frontier]
        del known, own, visited, frontier
        for v, fd in self.ends.inbound.items():
            threading.Thread(target=_receive, args=(v, _Channel(fd, False), self.inbox,
                                                    self.receiving_ran_out),
                             daemon=True, name="ctmc-bfs-receive").start()
        self.peers = {v: _Channel(fd, True) for v, fd in self.ends.outbound.items()}
        commands = _Channel(self.ends.commands, False)
        while True:
            self.level()
            commands.recv()  # "go"

    def level(self) -> None:
        """Expand this worker's states into the next level's: route successors to their
        owners, deduplicate those it owns, find where they go in the whole level, and
        queue the summary and the states for the coordinator."""
        kernel, layout, n = self.kernel, self.kernel.layout, self.n
        exact = layout.exact
        A = kernel.n_actions
        dedup = LevelDedup(self.visited, layout.n_words, layout.bits if exact else None,
                           self.budget)
        level = Level(np.zeros(A, dtype=np.int64))

        def rekey(exp: Expansion) -> None:  # ranks grow with the index: minima stay minima
            exp.gen = _rekey(exp.gen, self.ranks, A)
            exp.deadlocked = self.ranks[exp.deadlocked]
            if exp.guard_error is not None:
                exp.guard_error = int(_rekey(np.array([exp.guard_error]), self.ranks, A)[0])
            if exp.error is not None:
                exp.error = int(_rekey(np.array([exp.error]), self.ranks, A)[0])
            if exp.step_violation is not None:
                key, prop = exp.step_violation
                exp.step_violation = (int(_rekey(np.array([key]), self.ranks, A)[0]), prop)

        def route(exp: Expansion) -> None:  # collapsed first: fewer rows to split and send
            fps, gen, words = dedup.distinct(layout.fingerprints(exp.words), exp.gen,
                                             exp.words)
            owner = owners(fps, n, exact)
            for v in range(n):
                rows = np.flatnonzero(owner == v)  # a gather is cheaper than a mask here
                part = [fps[rows], gen[rows], *(w[rows] for w in words)]
                if not len(part[0]):
                    continue
                if v == self.index:
                    dedup.add_distinct(part[0], part[1], part[2:])
                else:
                    self.peers[v].send("part", None, part)

        def between(done: int) -> None:
            self.done[self.index] = done
            self._take(dedup, block=False)

        expand_frontier(kernel, self.words, 0, self.deadlock, self.batch_size, level, route,
                        between, rekey=rekey)
        self.done[self.index] = len(self.words[0])
        for channel in self.peers.values():
            channel.send("end")
        self._take(dedup, block=True)
        # expanded: this share of the frontier is not read again, and its memory and the
        # expansion's go back before the level's arrays are made
        self.words, self.ranks = [], np.empty(0, dtype=np.int64)
        give_back_freed_memory()
        fps, gen, words = dedup.result()
        level.count = len(fps)
        level.bad = first_bad(kernel, words, gen, self.batch_size)
        for channel in self.peers.values():  # where each owner's states fall
            channel.send("fps", None, [fps])
        while len(self.early) < n - 1:
            v, message = _next_message(self.inbox)
            self.early[v] = message[2][0]
        places = np.arange(len(fps), dtype=np.int64)
        for theirs in self.early.values():
            if not len(theirs) or not len(fps) or theirs[0] > fps[-1]:
                continue
            places += len(theirs) if theirs[-1] < fps[0] else np.searchsorted(theirs, fps)
        self.early.clear()
        self.ended.clear()
        self.outbox.put(("level", (level.summary(), self.visited.nbytes), []))
        states = [fps, *([] if exact else words)] if self.sends_states else []
        self.outbox.put(("states", None, [places, gen, *states]))
        give_back_freed_memory()  # before the visited set grows, as in one process
        self.visited.add_sorted(fps)
        self.ranks, self.words = places, words

    def _take(self, dedup: LevelDedup, block: bool) -> None:
        """Deduplicate the successors peers sent: until each has said "end" (`block`),
        or while any are waiting. A peer's new fingerprints are kept for `level`."""
        while len(self.ended) < self.n - 1:
            try:
                v, message = _next_message(self.inbox, block)
            except queue.Empty:
                return
            tag, _, arrays = message
            if tag == "end":
                self.ended.add(v)
            elif tag == "fps":
                self.early[v] = arrays[0]
            else:
                dedup.add_distinct(arrays[0], arrays[1], arrays[2:])


def _rekey(keys: np.ndarray, ranks: np.ndarray, n_actions: int) -> np.ndarray:
    """Generation keys over a worker's own states as keys over the whole frontier."""
    parents = keys // n_actions
    return ranks[parents] * n_actions + (keys - parents * n_actions)


def _send_all(channel: _Channel, outbox: queue.SimpleQueue) -> None:
    """Write what the worker queues for the coordinator, in order; None: stop. Out of
    memory mid-message, the worker ends with a status that says so (the coordinator
    reports it as running out of memory), since what it wrote of the message cannot be
    taken back."""
    try:
        while (message := outbox.get()) is not None:
            channel.send(*message)
    except OSError:
        pass
    except MemoryError:
        os._exit(_EXIT_OUT_OF_MEMORY)


_NO_MEMORY = "no memory to receive"  # what a receiving thread hands on when it ran out


def _receive(peer: int, channel: _Channel, inbox: queue.SimpleQueue,
             ran_out: threading.Event) -> None:
    """Hand each message from one peer to the worker's main thread; None: it is gone."""
    try:
        while True:
            inbox.put((peer, channel.recv()))
    except (EOFError, OSError):
        inbox.put((peer, None))
    except MemoryError:  # the main thread reports it, as its own running out
        ran_out.set()  # even if the peer, its pipe closed, ends it first
        inbox.put((peer, _NO_MEMORY))


def _next_message(inbox: queue.SimpleQueue, block: bool = True) -> tuple[int, Any]:
    """The next (peer, message) a receiving thread handed on (queue.Empty when none
    waits and not `block`); a peer gone is EOFError, a receive out of memory MemoryError."""
    peer, message = inbox.get(block)
    if message is None:
        raise EOFError
    if message is _NO_MEMORY:
        raise MemoryError
    return peer, message
