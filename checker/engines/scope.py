"""What an engine can check, and refusing a model that asks for more.

An engine never says "holds" about a property it did not check. `CHECKS` says
which kinds of property each engine checks, and each engine calls
`refuse_unchecked` on entry: a model naming a property of another kind is refused
with one line, before any work, whoever called the engine (the CLI, the gate, a
bench script, the Python API).
"""

from __future__ import annotations

from checker.errors import CheckerError
from checker.lang.machine import Machine

INVARIANT, STEP_INVARIANT, LIVENESS = "invariant", "step invariant", "liveness"
SAFETY = frozenset({INVARIANT, STEP_INVARIANT})
ALL = SAFETY | {LIVENESS}
# Simulation checks liveness on the lassos its walks close; the Z3 engines reason
# about states and steps, not infinite behaviours.
CHECKS: dict[str, frozenset[str]] = {"bfs": ALL, "spark": ALL, "simulate": ALL,
                                     "bmc": SAFETY, "prove": SAFETY, "pdr": SAFETY,
                                     "infer": SAFETY}


def named_properties(machine: Machine) -> list[tuple[str, str]]:
    """(kind, name) of every property `machine` asks to check; lemmas are invariants."""
    return ([(INVARIANT, p.name) for p in machine.invariants + machine.lemmas]
            + [(STEP_INVARIANT, p.name) for p in machine.step_invariants]
            + [(LIVENESS, p.name) for p in machine.liveness])


def refuse_unchecked(machine: Machine, engine: str, depth_bound: int | None = None) -> None:
    """Refuse `machine` if it names a property `engine` does not check; liveness also
    needs the whole state graph, so a depth bound rules it out."""
    for kind, name in named_properties(machine):
        if kind not in CHECKS[engine]:
            raise CheckerError(
                f"{engine} does not check {kind} properties, and the model names {name}: "
                f"check it with `ctmc check` (bfs or spark), or leave it out of the model's "
                f"invariants")
        if kind == LIVENESS and depth_bound:
            raise CheckerError(
                f"liveness property {name} needs the whole state graph, but the search is "
                f"bounded to depth {depth_bound}: drop the bound (max_depth 0), or leave "
                f"{name} out of the model's invariants")
