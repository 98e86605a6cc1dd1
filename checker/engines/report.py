"""Turning a located violation into the trace and message every engine reports.

An engine finds *where* a violation is (the canonical path, the kind, the
property, the action taken last); this module replays that path through the
scalar backend and words the result, so all engines report alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from checker.backends.scalar import ScalarMachine
from checker.engines.result import ERROR, VIOLATED, Violation
from checker.errors import EvalError
from checker.lang.machine import Machine
from checker.traces.trace import Trace, failing


def replay(machine: Machine, init_state: tuple[int, ...], action_ids: Sequence[int]) -> Trace:
    """The trace from `init_state` taking the action instances `action_ids` in order."""
    scalar = ScalarMachine(machine)
    states = [init_state]
    steps: list = [None]
    for a in action_ids:
        action = machine.actions[a]
        states.append(scalar.apply(states[-1], action))
        steps.append(action)
    return Trace(machine, states, steps)


def explain(machine: Machine, trace: Trace, kind: str, prop: str, action_id: int | None,
            engine: str) -> tuple[str, Violation]:
    """Complete `trace` (ending at the violating transition's source, or at the violating
    state) and word the violation; returns (outcome, violation)."""
    scalar = ScalarMachine(machine)
    name, outcome = prop, VIOLATED
    fails: dict = {}  # the action that fails at the trace's end, if one does
    if action_id is not None and kind != "guard_error":
        action = machine.actions[action_id]
        try:
            nxt = scalar.apply(trace.states[-1], action)
        except EvalError as exc:
            kind, name, message, outcome = "error", "EvalError", str(exc), ERROR
            fails = failing(action)
        else:
            trace.states.append(nxt)
            trace.actions.append(action)
            if kind == "error":  # an invariant read out of range in the new state
                message = _property_error(scalar, nxt)
                name, outcome = "EvalError", ERROR
            else:
                message = f"{name} is violated after {action.label}"
    elif kind == "guard_error":
        action = machine.actions[action_id]  # type: ignore[index]
        try:
            scalar.enabled(trace.states[-1], action)
            message = f"guard of {action.label} reads out of range"
        except EvalError as exc:
            message = str(exc)
        kind, name, outcome = "error", "EvalError", ERROR
        fails = failing(action)
    elif kind == "deadlock":
        message = "no action is enabled (deadlock)"
    elif kind == "error":
        message = _property_error(scalar, trace.states[-1])
        name, outcome = "EvalError", ERROR
    else:
        message = f"{name} is violated in the initial state" if not len(trace) \
            else f"{name} is violated"
    trace.violation = {"kind": kind, "name": name, "message": message, **(
        {"action": fails} if fails else {})}
    trace.meta = {"engine": engine}
    return outcome, Violation(kind, name, message, trace)


def _property_error(scalar: ScalarMachine, state: tuple[int, ...]) -> str:
    try:
        scalar.violated_invariants(state)
    except EvalError as exc:
        return str(exc)
    return "a property reads an array out of range"
