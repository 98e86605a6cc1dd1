"""What a search is, for resuming it: everything that changes what it explores or reports.

A checkpoint or run directory records this identity when it is created, and a
resume is refused, naming the first differing key, unless the run asking for it
has the same one. Settings that change only speed or memory (batch sizes,
partitions of a new run, workers) are not part of it.
"""

from __future__ import annotations

from typing import Any

from checker.lang.digest import machine_digest
from checker.lang.machine import Machine


def search_identity(machine: Machine, engine: str, label: str, deadlock: bool,
                    max_depth: int | None) -> dict[str, Any]:
    """The identity of a search of `machine` by `engine` (its name and format version)."""
    return {
        "engine": engine,
        "model": label,
        "spec": machine.spec_ref or machine.spec_name,
        "spec_digest": machine_digest(machine),
        "params": machine.params,
        "mutations": list(machine.mutations),
        "invariants": [p.name for p in machine.invariants + machine.lemmas],
        "step_invariants": [p.name for p in machine.step_invariants],
        "liveness": [p.name for p in machine.liveness],
        "deadlock": deadlock,
        "max_depth": max_depth or 0,
    }
