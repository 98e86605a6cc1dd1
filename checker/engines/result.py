"""What every engine returns, so the CLI and the gate treat engines alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.traces.trace import Trace

HOLDS = "holds"
VIOLATED = "violated"
ERROR = "error"  # a reachable evaluation error: out-of-range read, value outside its type
UNKNOWN = "unknown"  # a solver gave up (timeout): neither a violation nor a proof


@dataclass
class Violation:
    kind: str  # "invariant" | "step_invariant" | "deadlock" | "error"
    name: str  # the property's name, "Deadlock", or "EvalError"
    message: str
    trace: Trace


@dataclass
class CheckResult:
    engine: str
    outcome: str  # HOLDS | VIOLATED | ERROR | UNKNOWN
    violation: Violation | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True  # False when a depth bound or interruption cut exploration

    @property
    def expectation(self) -> str:
        """The outcome in the model files' words: `holds` or `violates NAME`."""
        if self.outcome in (HOLDS, UNKNOWN):
            return self.outcome
        assert self.violation is not None
        return f"violates {self.violation.name}"
