"""What every engine returns, so the CLI and the gate treat engines alike."""

from __future__ import annotations

import resource
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker.lang.machine import Machine
from checker.packing import collision_probability
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


def symmetry_moved(moved: int, generated: int) -> dict[str, Any]:
    """What the symmetry reduction did: the successors its canonical form mapped to
    another state of their orbit. None at all means the reduced search explored the
    full search's very states (every state it met was its own representative), so the
    reduction only cost the canonical form's time: a search says so."""
    figures: dict[str, Any] = {"symmetry_moved": moved}
    if generated and not moved:
        figures["symmetry_note"] = ("no state had another representative: the reduction "
                                    "saved nothing here; --no-symmetry is faster")
    return figures


def search_stats(distinct: int, generated: int, diameter: int, seconds: float,
                 layout: Any, action_instances: int) -> dict[str, Any]:
    """The figures every explicit-state search reports, whatever engine ran it."""
    return {
        "distinct_states": distinct,
        "generated": generated,
        "diameter": diameter,
        "seconds": round(seconds, 3),
        "states_per_second": round(distinct / seconds) if seconds > 0 else 0,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "state_bits": layout.bits,
        "fingerprint": "exact" if layout.exact else "hashed",
        "collision_probability": 0.0 if layout.exact else collision_probability(
            distinct, generated),
        "action_instances": action_instances,
    }


def coverage_rows(machine: Machine, enabled: np.ndarray | Sequence[int],
                  new_states: np.ndarray | Sequence[int]) -> list[dict[str, Any]]:
    """Per action instance: how often it was enabled and how many new states it made."""
    return [{"action": a.label, "name": a.name, "enabled": int(enabled[a.id]),
             "new_states": int(new_states[a.id])} for a in machine.actions]
