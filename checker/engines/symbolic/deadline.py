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
_GAVE_UP_ON_TIME = ("timeout", "canceled")  # Z3's reason_unknown when its timer fired


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
        if answer == z3.unknown and (self.expired()
                                     or solver.reason_unknown() in _GAVE_UP_ON_TIME):
            raise self.out_of_time(phase)
        return answer

    def out_of_time(self, phase: str) -> OutOfTime:
        """The exception to raise for running out in `phase` (noted in `ran_out`)."""
        self.ran_out = True
        return OutOfTime(phase)

    def describe(self, phase: str) -> str:
        """The verdict's explanation when the limit passed during `phase`."""
        return f"timeout ({self.seconds:g} s) during {phase}"
