"""`prove --workers N`: the inductive step's goals shared among N forked processes.

Each worker builds its own `InductiveStep` (a Z3 context is not shared between
processes) and asks its share of the goals in order, sending each answer as it
comes. The shares are fixed, goal i to worker i mod N, not taken from a queue: a
goal's unsat core depends on what its solver was asked before, so for a given N the
lemmas reported as used are the same every run. The first goal that is not unsat
ends the others; the coordinator then asks for the CTI itself, of the whole
conjunction, as one process would (decision 0024), so the CTI does not depend on N.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from typing import Any

from checker.engines.symbolic.deadline import Deadline, OutOfTime
from checker.engines.symbolic.step import STEP_PHASE, GoalAnswer, InductiveStep, goal_names
from checker.engines.symbolic.unroll import solver_figures
from checker.engines.worker import how_it_ended, start_worker
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.progress import Heartbeat

_POLL_SECONDS = 0.2
_LATE_SECONDS = 5.0  # past the deadline, workers have this long to say they stopped


def ask_in_workers(machine: Machine, k: int, deadlock: bool, deadline: Deadline, n: int,
                   beat: Heartbeat | None = None) -> tuple[list[GoalAnswer], list[dict]]:
    """The goals' answers in goal order (every goal's, or, once one is not unsat, those
    in by then, that one among them: the workers are then stopped) and each worker's
    Z3 figures. OutOfTime if the deadline passed in a worker; CheckerError, one line,
    if a worker failed or died."""
    names = goal_names(machine)
    context = multiprocessing.get_context("fork")
    processes, channels = [], []
    for w in range(n):
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_work, name=f"ctmc-prove-{w + 1}", daemon=True,
                                  args=(machine, k, deadlock, deadline, names[w::n], send,
                                        os.getpid()))
        process.start()
        send.close()
        processes.append(process)
        channels.append(receive)
    answers: dict[str, GoalAnswer] = {}
    asking: dict[int, str] = {}
    figures: list[dict] = []
    try:
        working = set(range(n))
        while working:
            wait_for([channels[w] for w in working] + [processes[w].sentinel for w in working],
                     _POLL_SECONDS)
            for w in sorted(working):
                while w in working and channels[w].poll():
                    kind, what = _receive(channels[w], processes[w], w, n)
                    if kind == "asking":
                        asking[w] = what
                    elif kind == "answer":
                        answers[what.goal] = what
                        asking.pop(w, None)
                        if what.answer != "unsat":
                            return [answers[g] for g in names if g in answers], figures
                    elif kind == "done":
                        figures.append(what)
                        working.discard(w)
                    elif kind == "out of time":
                        raise deadline.out_of_time(what)
                    else:
                        raise CheckerError(f"prove worker {w + 1} of {n} failed: {what}")
                if w in working and not processes[w].is_alive() and not channels[w].poll():
                    raise CheckerError(_died(processes[w], w, n))
            left = deadline.left()
            if left is not None and left < -_LATE_SECONDS:  # a worker did not stop on time
                raise deadline.out_of_time(f"{STEP_PHASE} (workers asking "
                                f"{', '.join(asking[w] for w in sorted(asking))})")
            if beat is not None:
                beat.set(f"inductive step (k={k}) | {len(answers)} of {len(names)} goals "
                         f"answered | asking {', '.join(asking[w] for w in sorted(asking))}")
    finally:
        for process in processes:
            if process.exitcode is None:
                process.kill()
        for process in processes:
            process.join()
        for channel in channels:
            channel.close()
    return [answers[g] for g in names], figures


def _receive(channel: Connection, process: Any, w: int, n: int) -> tuple[str, Any]:
    try:
        kind, what = channel.recv()
    except EOFError:
        raise CheckerError(_died(process, w, n)) from None
    return kind, what


def _died(process: Any, w: int, n: int) -> str:
    return (f"prove worker {w + 1} of {n} (pid {process.pid}) {how_it_ended(process)} "
            f"before it answered; "
            f"run it again, with fewer --workers if memory is short")


def _work(machine: Machine, k: int, deadlock: bool, deadline: Deadline, names: list[str],
          out: Connection, coordinator: int) -> None:
    """A worker's life: build the step, ask its goals, say each answer. Whatever goes
    wrong is told to the coordinator, never printed."""
    start_worker(coordinator)
    try:
        step = InductiveStep(machine, k, deadlock, deadline)
        for name in names:
            out.send(("asking", name))
            answer = step.ask(name)
            out.send(("answer", answer))
            if answer.answer != "unsat":
                break
        last: tuple[str, Any] = ("done", solver_figures(step.solver))
    except OutOfTime as out_of_time:
        last = ("out of time", out_of_time.phase)
    except MemoryError:
        last = ("failed", "out of memory")
    except BaseException as exc:  # noqa: BLE001 - reported by the coordinator
        last = ("failed", f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):  # the coordinator may be gone: so are we
        out.send(last)
        out.close()
    os._exit(0)
