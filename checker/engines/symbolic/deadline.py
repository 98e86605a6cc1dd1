"""One wall-clock limit for a whole command, shared by every Z3 query in it.

`--timeout` bounds what the user waits for, not each query: a proof's base case
(every BMC depth), inductive step, unsat-core closure and least-CTI search, and
infer's Houdini rounds and pruning, all draw on the same budget (decision 0022).
Before each query the solver is given what is left (`solve`); work Python does
between queries (building formulas, decoding) asks `check` at its seams. Either
raises `OutOfTime` once the limit has passed, and the engine turns that into an
inconclusive verdict, never a proof.
"""

from __future__ import annotations

import time

import z3

NO_TIMEOUT = 4294967295  # Z3's default: no per-check timeout
_TIMER_SLACK = 0.05  # seconds: Z3's timer is set in whole milliseconds, rounded down


class OutOfTime(Exception):
    """The deadline passed during `phase` (words such as "the inductive step")."""

    def __init__(self, phase: str):
        super().__init__(phase)
        self.phase = phase


class Deadline:
    """`seconds` after `started` (a `time.perf_counter()`; default now), or no limit
    (None). A command passes its own start, so loading the model counts too."""

    def __init__(self, seconds: float | None, started: float | None = None):
        self.seconds = seconds
        self.started = time.perf_counter() if started is None else started
        self._at = None if seconds is None else self.started + seconds
        self.ran_out = False  # an OutOfTime was raised: whatever stopped, stopped for time
        self.phase = "the start"  # the last phase named, for checks that name none

    def left(self) -> float | None:
        """Seconds left (0 or less once passed); None without a limit."""
        return None if self._at is None else self._at - time.perf_counter()

    def spent(self) -> float:
        return time.perf_counter() - self.started

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def check(self, phase: str | None = None) -> None:
        """Raise OutOfTime if the limit has passed. Without `phase`, the time is charged
        to the last phase named (formula building deep in an encoding asks this way)."""
        if phase is not None:
            self.phase = phase
        if self.expired():
            raise self.out_of_time(self.phase)

    def solve(self, solver: z3.Solver, phase: str,
              *assumptions: z3.BoolRef) -> z3.CheckSatResult:
        """`solver.check(*assumptions)` within what is left; OutOfTime if nothing is left
        before it or Z3 gave up because its timer fired. Another `unknown` (an
        incomplete theory, say) is returned for the caller to word."""
        self.phase = phase
        left = self.left()
        if left is not None and left <= 0:
            raise self.out_of_time(phase)
        solver.set("timeout", NO_TIMEOUT if left is None else max(1, int(left * 1000)))
        answer = solver.check(*assumptions)
        if answer == z3.unknown:
            self.raise_if_stopped(solver.reason_unknown(), phase)
        return answer

    def raise_if_stopped(self, reason: str, phase: str) -> None:
        """For Z3's `unknown` because of `reason`: OutOfTime if the limit has passed (or
        all but); KeyboardInterrupt if Z3 was canceled with time to spare, which is
        Ctrl-C (Z3 takes SIGINT during a check, cancels it, and Python never sees the
        signal). Any other reason returns, for the caller to word."""
        left = self.left()
        if left is not None and left <= _TIMER_SLACK:
            raise self.out_of_time(phase)
        if reason == "canceled":
            raise KeyboardInterrupt
        if reason == "timeout" and left is not None:  # its timer, set from our limit
            raise self.out_of_time(phase)

    def out_of_time(self, phase: str) -> OutOfTime:
        """The exception to raise for running out in `phase` (noted in `ran_out`)."""
        self.ran_out = True
        return OutOfTime(phase)

    def describe(self, phase: str) -> str:
        """The verdict's explanation when the limit passed during `phase`."""
        return f"timeout ({self.seconds:g} s) during {phase}"
